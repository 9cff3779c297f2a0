"""shardkit-report: compiles a sharded StableHLO module and prints what it communicates.

``shardkit-report FILE.mlir [--mesh data=4,model=2] [--plan] [--table] [--json] [--image OUT.png|.svg]``.

- default: compiles the module with XLA for the first devices of this machine (as many as its partitions)
  and prints the communication report of the partitioned program;
- ``--plan``: prints Shardy's plan (the collectives Shardy inserts, before XLA) instead of compiling;
- ``--table``: prints the per-value sharding table after Shardy propagation instead;
- ``--json``: the same as JSON; ``--image``: also draws the report (needs ``shardkit[viz]``).

Groups are named by the module's ``sdy.mesh`` (logical order, ``device_ids`` respected); ``--mesh`` names them
for a GSPMD module, which has none. Problems are one-line errors with exit code 1, never a traceback; a
malformed module gets the parser's ``file:line:col: error: ...``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from jax.errors import JaxRuntimeError
from jaxlib.mlir import ir

from shardkit.tools.lower import ensure_cpu_devices, parse_mesh
from shardkit.tools.main import ToolMain


def _arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shardkit-report",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", help="a sharded StableHLO .mlir file, or - for stdin")
    parser.add_argument("--mesh", default="", help="axis names and sizes, e.g. data=4,model=2 (default: the module's)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--plan", action="store_true", help="Shardy's plan before XLA instead of compiling")
    mode.add_argument("--table", action="store_true", help="the per-value sharding table after propagation")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--image", "--png", metavar="PATH", help="also draw the report (.png or .svg)")
    return parser


class ReportMain(ToolMain):
    """The tool as an object, so tests drive it in-process: ``ReportMain(["m.mlir", "--plan"]).run()``."""

    def __init__(
        self,
        argv: Sequence[str] | None = None,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ):
        super().__init__(_arg_parser(), argv, stdin=stdin, stdout=stdout, stderr=stderr)

    def run(self) -> int:
        args = self.args
        if args.image and args.table:
            return self.error("--image draws the communication report; it does not apply to --table")
        from shardkit.dialects import context
        from shardkit.tools import source

        name = "<stdin>" if args.input == "-" else args.input
        try:
            text = source.decode(source.read(args.input, self.stdin), name)
        except OSError as e:
            return self.error(f"could not open input file '{args.input}': {e.strerror}")
        except source.InputError as e:
            return self.error(str(e))
        module, found = source.parse(context(), source.chunks(text, split=False)[0], name)
        for diag in found:
            self.stderr.write(f"{diag}\n")
        if module is None:
            return 1
        try:
            out = self.report(module, name)
        except (ValueError, TypeError, ImportError) as e:
            return self.error(str(e))
        except JaxRuntimeError as e:
            return self.error(f"XLA could not compile the module: {str(e).splitlines()[0]}")
        self.stdout.write(out)
        return 0

    def report(self, module: ir.Module, name: str) -> str:
        """The requested view as text; sources in the module itself (parsed as ``-``) are named ``name``."""
        from shardkit import inspect

        args = self.args
        mesh, devices = self.mesh_and_devices(module)
        if args.table:
            from shardkit.dialects import copy_module
            from shardkit.passes import run_pipeline

            propagated = copy_module(module)
            run_pipeline(propagated, "propagate")
            table = inspect.sharding_table(propagated, mesh)
            table = dataclasses.replace(table, rows=_named(table.rows, name))
            return table.to_json() + "\n" if args.json else str(table)
        if args.plan:
            result = inspect.shardy_report(module, mesh, devices)
        else:
            result = inspect.xla_report(compile_module(module, devices).hlo_modules()[0], devices, mesh)
        result = dataclasses.replace(result, collectives=_named(result.collectives, name))
        if args.image:
            result.save_image(args.image)
        return result.to_json() + "\n" if args.json else str(result)

    def mesh_and_devices(self, module: ir.Module) -> tuple[Any, list[Any]]:
        """The mesh that names the groups and the devices the partitions run on (the first of this machine)."""
        from shardkit.dialects import ir as irx

        own = next((m for m in irx.meshes(module).values() if m.axes), None)
        if self.args.mesh:
            sizes, names = parse_mesh(self.args.mesh)
        elif own is not None:
            sizes, names = tuple(s for _, s in own.axes), tuple(n for n, _ in own.axes)
        else:
            sizes, names = (), ()
        count = irx.module_int(module, irx.NUM_PARTITIONS) or 1
        count = max(count, math.prod(sizes) if names else 1)
        ensure_cpu_devices(count)
        import shardkit as sk

        if len(sk.devices()) < count:
            raise ValueError(f"the module runs on {count} devices but this machine has {len(sk.devices())}")
        devices = sk.devices()[:count]
        if not names:
            return None, devices
        if math.prod(sizes) != count:
            raise ValueError(
                f"--mesh {self.args.mesh} has {math.prod(sizes)} devices but the module has {count} partitions"
            )
        if own is not None and not self.args.mesh:
            return sk.Mesh.from_sdy(own, devices), devices
        return sk.Mesh(_grid(devices, sizes), names), devices


def _named(items: tuple, name: str) -> tuple:
    """The MLIR parser names a string buffer ``-``; locations in the input file get its name instead."""
    return tuple(
        dataclasses.replace(i, source=name + i.source[1:]) if (i.source or "").startswith("-:") else i for i in items
    )


def _grid(devices: list[Any], sizes: tuple[int, ...]) -> Any:
    import numpy as np

    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    return grid.reshape(sizes)


def compile_module(module: ir.Module, devices: Sequence[Any]) -> Any:
    """XLA's loaded executable of a foreign module for ``devices`` (partition ``p`` on ``devices[p]``)."""
    import shardkit as sk

    return sk.load(module, devices=devices).compile().executable


def main() -> None:
    """Console entry point of ``shardkit-report``."""
    sys.exit(ReportMain().run())


if __name__ == "__main__":
    main()
