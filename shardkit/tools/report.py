"""shardkit-report: compiles a sharded StableHLO module and prints what it communicates.

``shardkit-report FILE [--mesh data=4,model=2] [--plan] [--table] [--explain] [--json] [--image OUT.png|.svg]
[--target tpu-v5e:4x4] [--hardware h100] [--html OUT.html]``, ``shardkit-report --diff A.mlir B.mlir [--plan] [--json]
[--html OUT.html]`` and ``shardkit-report FILE.mlir --autoshard --target tpu-v5e:4x4 [--explain] [--json] [--image
OUT.png] [--html OUT.html]``.

``FILE`` is MLIR text or bytecode, XLA's HLO text, or a serialized ``jax.export`` artifact.

- default: compiles the module with XLA for the first devices of this machine (as many as its partitions;
  virtual CPU devices where it has fewer) and prints the communication report of the partitioned program;
- ``--plan``: prints Shardy's plan (the collectives Shardy inserts, before XLA) instead of compiling;
- ``--table``: prints the per-value sharding table after Shardy propagation instead;
- ``--explain``: why each collective (of XLA's program, or with ``--plan`` of Shardy's) is there: the two
  shardings that meet and the arguments, results and constraints (with their lines) they came from;
- ``--diff A B``: what changed from program A to program B: value shardings, collectives added, removed or
  resized, bytes per device per mesh axis (XLA's programs; with ``--plan`` Shardy's plans);
- ``--target MACHINE``: compiles for a machine not at hand (``tpu-v5p:8x16x16``, ``cpu:256``; docs/targets.md)
  and prints its communication and memory per device (a program that does not fit: the memory report, exit 1);
- ``--hardware PROFILE``: adds each collective's and the step's modelled time on that hardware (by default a
  TPU target's own; docs/performance_model.md);
- ``--autoshard`` (with ``--target``): searches the mesh and the shardings of the module's open arguments for the
  target (``sk.autoshard``, docs/autoshard.md) and prints the plan and its table of candidates (``--explain``:
  why the winner beats the runner-up; ``--image``: the table as a picture);
- ``--json``: the same as JSON; ``--image``: also draws the report (needs ``shardkit[viz]``);
- ``--html OUT.html``: also writes the report page (one self-contained file: the mesh, every value's sharding and
  tiles, the collectives and why, the modelled step, memory per device; a plan's candidates; a diff's two programs);
- ``--trace OUT.json``: also writes the modelled step as a Chrome/Perfetto trace (with ``--hardware`` or a TPU
  ``--target``); ``--model-explorer DIR``: also writes Shardy's plan of the module and its node data for Model
  Explorer (docs/inspect.md).

Groups are named by the module's ``sdy.mesh`` (logical order, ``device_ids`` respected); ``--mesh`` names them
for a GSPMD module, which has none. Problems are one-line errors with exit code 1, never a traceback; a
malformed module gets the parser's ``file:line:col: error: ...``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import pathlib
import sys
from collections.abc import Callable, Sequence
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
    parser.add_argument(
        "input",
        nargs="+",
        help="a sharded StableHLO .mlir file, or - for stdin (two with --diff); with --maxtext, MaxText's config and "
        "its KEY=VALUE overrides",
    )
    parser.add_argument(
        "--maxtext",
        action="store_true",
        help="INPUT is MaxText's config (base.yml, tpu/v5e/16b.sh) and KEY=VALUE overrides: report MaxText's own "
        "train step (docs/maxtext.md)",
    )
    parser.add_argument("--mesh", default="", help="axis names and sizes, e.g. data=4,model=2 (default: the module's)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--plan", action="store_true", help="Shardy's plan before XLA instead of compiling")
    mode.add_argument("--table", action="store_true", help="the per-value sharding table after propagation")
    parser.add_argument("--explain", action="store_true", help="why each collective is there")
    parser.add_argument("--diff", action="store_true", help="compare two programs: INPUT is A.mlir B.mlir")
    parser.add_argument("--target", metavar="MACHINE", help="compile for this machine: tpu-v5e:16x16, cpu:256, ...")
    parser.add_argument("--hardware", metavar="PROFILE", help="add the modelled time on this hardware profile")
    parser.add_argument(
        "--autoshard", action="store_true", help="search the open arguments' shardings for --target (docs/autoshard.md)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--image", "--png", metavar="PATH", help="also draw the report (.png or .svg)")
    parser.add_argument("--html", metavar="PATH", help="also write the report page (docs/inspect.md)")
    parser.add_argument("--trace", metavar="PATH", help="also write the modelled step as a Perfetto trace (JSON)")
    parser.add_argument("--model-explorer", metavar="DIR", help="also write the plan and node data for Model Explorer")
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
        self.compiled: Any = None  # the last program compiled for --target

    def run(self) -> int:
        from shardkit.executor.targets import profile_name

        args = self.args
        if (args.image or args.html) and args.table:
            flag = "--image" if args.image else "--html"
            return self.error(f"{flag} draws the communication report; it does not apply to --table")
        if args.maxtext:
            return self.maxtext()
        if len(args.input) != (2 if args.diff else 1):
            wanted = "two inputs (A.mlir B.mlir)" if args.diff else "one input (two only with --diff)"
            return self.error(f"expected {wanted}, got {len(args.input)}: {' '.join(args.input)}")
        if args.diff and (args.table or args.explain or args.image):
            return self.error("--diff compares two programs; --table, --explain and --image do not apply to it")
        if args.explain and args.table:
            return self.error("--explain explains the communication report; it does not apply to --table")
        if (args.target or args.hardware) and (args.table or args.plan):
            return self.error("--target and --hardware compile the module; they do not apply to --plan or --table")
        if args.target and args.mesh:
            return self.error("--mesh names groups on this machine's devices; with --target the module's mesh does")
        if (args.trace or args.model_explorer) and (args.table or args.diff or args.autoshard):
            return self.error("--trace and --model-explorer export one program: not with --table, --diff, --autoshard")
        if args.trace and (args.plan or not (args.hardware or profile_name(args.target))):
            return self.error("--trace writes the modelled step of XLA's program: give --hardware or a TPU --target")
        if args.autoshard and not args.target:
            return self.error("--autoshard searches for a machine: give --target, e.g. --target tpu-v5e:4x4")
        if args.autoshard and (args.plan or args.table or args.diff or args.mesh):
            return self.error("--autoshard makes its own plan; --plan, --table, --diff and --mesh do not apply to it")
        modules = []
        for path in args.input:
            loaded = self.load(path)
            if isinstance(loaded, int):
                return loaded
            modules.append(loaded)

        if args.autoshard:
            return self.answer(lambda: self.autoshard(*modules[0]), "the module")
        return self.answer(lambda: self.diff(*modules) if args.diff else self.report(*modules[0]), "the module")

    def answer(self, produce: Callable[[], str], what: str) -> int:
        """Writes what ``produce`` makes, or says in one line why it could not be made (exit 1); ``what`` is what
        XLA compiles."""
        from shardkit.inspect import OutOfMemoryError

        try:
            out = produce()
        except OutOfMemoryError as e:
            return self.does_not_fit(e.report, self.args.json)
        except (ValueError, TypeError, ImportError) as e:
            return self.error(str(e))
        except JaxRuntimeError as e:
            return self.error(f"XLA could not compile {what}: {str(e).splitlines()[0]}")
        except OSError as e:  # --html, --image, --trace, --model-explorer: where it cannot write
            return self.error(f"could not write '{e.filename}': {e.strerror}")
        self.stdout.write(out)
        return 0

    def maxtext(self) -> int:
        """``--maxtext``: MaxText's own train step built from its config (``shardkit.maxtext``), lowered in
        MaxText's contexts, compiled for ``--target`` (this machine's devices without), and reported as a module
        is, with MaxText's count of its work at the modelled step (TFLOP/s per chip, MFU)."""
        from shardkit import maxtext

        args = self.args
        for flag, given in (("--diff", args.diff), ("--table", args.table), ("--mesh", args.mesh)):
            if given:
                return self.error(f"{flag} does not apply to --maxtext: MaxText builds its own mesh and step")
        if args.autoshard or args.trace or args.model_explorer or args.image:
            return self.error(
                "--maxtext reports MaxText's step: --autoshard, --trace, --model-explorer and --image "
                "take a module file (write it with Lowered.as_text())"
            )
        return self.answer(lambda: self.maxtext_report(maxtext.train_step), "MaxText's step")

    def maxtext_report(self, train_step: Callable[..., Any]) -> str:
        """The views of MaxText's step (``--maxtext``), as ``report`` gives a module's."""
        from shardkit.executor.targets import profile_name

        args = self.args
        config, overrides = args.input[0], args.input[1:]
        step = train_step(config, *overrides, target=args.target)
        lowered = step.lower()
        if args.plan:
            result = lowered.communication()
            views: dict[str, Any] = {"communication": result.explain() if args.explain else result}
        else:
            compiled = step.compile(lowered)
            result = compiled.communication()
            views = {"communication": result.explain() if args.explain else result}
            if args.target:
                views["memory"] = compiled.memory()
            hardware = args.hardware or profile_name(args.target)
            if hardware:
                views["time"] = result.time(hardware)
                if views["time"].refused is None and profile_name(args.target):
                    views["performance"] = step.performance(compiled, views["time"])
        if args.html:
            self.write_page(result, pathlib.Path(config).name, views)
        return _json(views) + "\n" if args.json else "\n".join(map(str, views.values()))

    def load(self, path: str) -> tuple[ir.Module, str] | int:
        """The parsed module and its name, or the exit code after reporting why it could not be read."""
        from shardkit.dialects import context
        from shardkit.tools import source

        name = "<stdin>" if path == "-" else path
        try:
            data = source.read(path, self.stdin)
        except OSError as e:
            return self.error(f"could not open input file '{path}': {e.strerror}")
        try:
            text = source.decode(data, name)
        except source.InputError as e:  # a serialized jax.export artifact, read as sk.load reads one
            import shardkit as sk
            from shardkit.lowering.load import LoadError

            try:
                return sk.load(data).compiler_ir(), name
            except LoadError:
                return self.error(f"{e}, nor a serialized jax.export artifact")
        whole = source.chunks(text, split=False)[0]
        module, found = source.parse(context(), whole, name, None if path == "-" else path)
        for diag in found:
            self.stderr.write(f"{diag}\n")
        return 1 if module is None else (module, name)

    def autoshard(self, module: ir.Module, name: str) -> str:
        """The plan ``sk.autoshard`` makes of the module for ``--target``: its summary and table of candidates."""
        from shardkit.autosharding.api import autoshard_module

        args = self.args
        plan = autoshard_module(module, target=args.target, hardware=args.hardware)
        table = plan.table()
        if args.image:
            table.save_image(args.image)
        if args.html:
            plan.to_html(args.html)
        if args.json:
            views = {"table": table.to_dict()}
            if args.explain:
                views["explanation"] = plan.explain().to_dict()
            import json

            return json.dumps(views, indent=2) + "\n"
        out = str(plan) + "\n" + str(table)
        return out + ("\n" + str(plan.explain()) if args.explain else "")

    def communication(self, module: ir.Module, name: str) -> Any:
        """XLA's report of the module compiled for this machine, or with ``--plan`` Shardy's plan."""
        from shardkit import inspect

        if self.args.target:
            import shardkit as sk

            self.compiled = sk.load(module).compile(target=self.args.target)  # its memory report is printed too
            result = self.compiled.communication()
            return dataclasses.replace(result, collectives=_named(result.collectives, name))
        mesh, devices = self.mesh_and_devices(module)
        if self.args.plan:
            result = inspect.shardy_report(module, mesh, devices)
        else:
            executable = compile_module(module, devices)
            result = inspect.xla_report(executable.hlo_modules()[0], devices, mesh, module)
        return dataclasses.replace(result, collectives=_named(result.collectives, name))

    def diff(self, a: tuple[ir.Module, str], b: tuple[ir.Module, str]) -> str:
        from shardkit import inspect

        found = inspect.diff(self.communication(*a), self.communication(*b))
        if self.args.html:
            found.to_html(self.args.html, names=(a[1], b[1]), hardware=self.args.hardware)
        return found.to_json() + "\n" if self.args.json else str(found)

    def report(self, module: ir.Module, name: str) -> str:
        """The requested view as text; sources in the module itself (parsed as ``-``) are named ``name``."""
        from shardkit import inspect
        from shardkit.executor.targets import profile_name

        args = self.args
        if args.table:
            mesh, _ = self.mesh_and_devices(module)
            from shardkit.dialects import copy_module
            from shardkit.passes import run_pipeline

            propagated = copy_module(module)
            run_pipeline(propagated, "propagate")
            table = inspect.sharding_table(propagated, mesh)
            table = dataclasses.replace(table, rows=_named(table.rows, name))
            return table.to_json() + "\n" if args.json else str(table)
        result = self.communication(module, name)
        hardware = args.hardware or profile_name(args.target)
        views = {"communication": result.explain() if args.explain else result}
        if args.target:
            views["memory"] = self.compiled.memory()
        if hardware:
            views["time"] = result.time(hardware)
        if args.image:
            views["communication"].save_image(args.image)
        if args.html:
            self.write_page(result, name, views)
        if args.trace:
            views["time"].save_trace(args.trace)
        if args.model_explorer:
            from shardkit.inspect import model_explorer

            model_explorer.export(result, args.model_explorer, pathlib.Path(name).stem)
        if args.json:
            return (views["communication"].to_json() if len(views) == 1 else _json(views)) + "\n"
        return "\n".join(map(str, views.values()))

    def write_page(self, result: Any, name: str, views: dict[str, Any]) -> None:
        """``--html``: the page of the program ``report`` printed (its explanation when made, memory and step when
        compiled for a target or timed)."""
        from shardkit.inspect import page

        explanation = views["communication"] if self.args.explain else None
        data = page.program(
            result,
            name=name,
            explanation=explanation,
            memory=views.get("memory"),
            step=views.get("time"),
            performance=views.get("performance"),
        )
        stage = "Shardy's plan" if self.args.plan else f"XLA's program for {self.args.target or 'this machine'}"
        page.program_page("program", [data], f"{name}: {stage}").save(self.args.html)

    def mesh_and_devices(self, module: ir.Module) -> tuple[Any, list[Any]]:
        """The mesh that names the groups and the devices the partitions run on (the first of this machine)."""
        from shardkit.dialects import irx

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

        # more partitions than this process has devices (jax had started): the virtual devices of cpu:N
        devices = (
            sk.devices()[:count] if count <= len(sk.devices()) else list(sk.executor.target(f"cpu:{count}").devices)
        )
        if not names:
            return None, devices
        if math.prod(sizes) != count:
            raise ValueError(
                f"--mesh {self.args.mesh} has {math.prod(sizes)} devices but the module has {count} partitions"
            )
        if own is not None and not self.args.mesh:
            return sk.Mesh.from_sdy(own, devices), devices
        return sk.Mesh(_grid(devices, sizes), names), devices


def _json(views: dict[str, Any]) -> str:
    """Several reports as one JSON object, one key per report."""
    import json

    return json.dumps({k: json.loads(v.to_json()) for k, v in views.items()}, indent=2)


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
