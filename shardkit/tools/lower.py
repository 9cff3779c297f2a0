"""shardkit-lower: lowers a Python function with the given shardings and prints its StableHLO.

``shardkit-lower TARGET --mesh x=4,y=2 --arg 16x8xf32:x,_ --arg 8x4xf32 [--out x,y] [--partitioner gspmd]
[-p PIPELINE] [-o OUT] [--report] [--target tpu-v5e:4x4] [--hardware h100]``, for lit tests of the lowering path
(``--report``: compile and print the communication report instead; ``--target``: compile for that machine,
compile-only, and print its communication and memory reports; ``--hardware``: add the modelled time on that
hardware profile, by default a TPU target's own). ``TARGET`` is ``package.module:function`` or
``path/to/file.py:function``. An argument is ``SHAPExDTYPE`` (``f32`` alone for a scalar) with an optional
``:SPEC``, one entry per dimension: an axis, ``x+y`` for several, ``_`` for none, ``?`` for unconstrained.
``--out`` (repeatable, one per output) gives output shardings the same way. Mistakes are one-line errors
with exit code 1.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from shardkit.tools.main import ToolMain


def _arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shardkit-lower",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", help="package.module:function or path/to/file.py:function")
    parser.add_argument("--mesh", default="", help="axes and sizes, e.g. x=4,y=2 (default: no mesh)")
    parser.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="SHAPExDTYPE[:SPEC]",
        help="one per positional argument, e.g. 16x8xf32:x,_",
    )
    parser.add_argument("--out", action="append", default=[], metavar="SPEC", help="output sharding, e.g. x,y")
    parser.add_argument("--partitioner", choices=("shardy", "gspmd"), default="shardy")
    parser.add_argument("-p", "--pass-pipeline", default="", metavar="PIPELINE", help="passes to run afterwards")
    parser.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    parser.add_argument("--report", action="store_true", help="compile and print the communication report instead")
    parser.add_argument(
        "--target",
        dest="compile_target",
        metavar="MACHINE",
        help="compile for this machine (tpu-v5e:16x16, tpu-v5p:8x16x16, cpu:256) and print its reports",
    )
    parser.add_argument(
        "--hardware",
        metavar="PROFILE",
        help="with --report or --target: model each collective's and the step's time on this hardware profile "
        "(tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e, h100, h200; default for a TPU target: its own)",
    )
    return parser


def load_function(target: str) -> Callable:
    """``module:function`` or ``file.py:function``."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"target '{target}' must be module:function or file.py:function")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location("_shardkit_lower_target", where)
        if spec is None:
            raise ValueError(f"cannot load '{where}'")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except FileNotFoundError:
            raise ValueError(f"cannot load '{where}': no such file") from None
    else:
        module = importlib.import_module(where)
    if not callable(getattr(module, name, None)):
        raise ValueError(f"'{where}' has no function '{name}'")  # noqa: TRY004  (a user's typo, not a type)
    return getattr(module, name)


def parse_mesh(text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    pairs = [p.split("=") for p in text.split(",") if p.strip()]
    if any(len(p) != 2 or not p[1].strip().isdigit() for p in pairs):
        raise ValueError(f"--mesh '{text}' must look like x=4,y=2")
    return tuple(int(s) for _, s in pairs), tuple(n.strip() for n, _ in pairs)


def parse_spec(text: str) -> Any:
    from shardkit import UNCONSTRAINED, P

    entries: list[Any] = []
    for entry in text.split(","):
        entry = entry.strip()
        if entry in ("_", ""):
            entries.append(None)
        elif entry == "?":
            entries.append(UNCONSTRAINED)
        else:
            axes = tuple(a.strip() for a in entry.split("+"))
            entries.append(axes[0] if len(axes) == 1 else axes)
    return P(*entries)


def parse_arg(text: str) -> tuple[tuple[int, ...], np.dtype, Any]:
    """``16x8xf32:x,_`` -> ((16, 8), float32, P('x', None)); the spec is None when absent."""
    shaped, _, spec = text.partition(":")
    *dims, dtype = shaped.split("x")
    from shardkit.dialects.dtypes import BY_HLO, BY_MLIR

    element = BY_MLIR.get(dtype) or BY_HLO.get(dtype)
    if element is None or not all(d.isdigit() for d in dims):
        raise ValueError(
            f"--arg '{text}' must look like 16x8xf32[:SPEC] (dtypes: MLIR's or XLA's names: f32, bf16, i8, u8, i1, ...)"
        )
    return tuple(map(int, dims)), element.dtype, parse_spec(spec) if spec else None


class LowerMain(ToolMain):
    """The tool as an object, so tests drive it in-process."""

    def __init__(
        self, argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
    ):
        super().__init__(_arg_parser(), argv, stdin=None, stdout=stdout, stderr=stderr)

    def run(self) -> int:
        from shardkit.inspect.memory import OutOfMemoryError

        try:
            text = self.lower()
        except OutOfMemoryError as e:
            return self.does_not_fit(e.report)
        except (ValueError, TypeError, ImportError) as e:
            return self.error(str(e))
        if self.args.output == "-":
            self.stdout.write(text)
        else:
            with open(self.args.output, "w", encoding="utf-8") as out:
                out.write(text)
        return 0

    def lower(self) -> str:
        args = self.args
        shape, names = parse_mesh(args.mesh)
        if args.compile_target is None:
            ensure_cpu_devices(math.prod(shape))
        import shardkit as sk

        fn = load_function(args.target)
        if not names:
            mesh = None
        elif args.compile_target is not None:  # the target's devices, not this process's
            mesh = sk.AbstractMesh(shape, names)
        else:
            mesh = sk.make_mesh(shape, names, devices=sk.devices()[: math.prod(shape)])

        def sharding(spec: Any) -> Any:
            if spec is None:
                return None
            if mesh is None:
                raise ValueError(f"sharding {spec} needs a --mesh")
            return sk.NamedSharding(mesh, spec)

        structs = []
        for text in args.arg:
            dims, dtype, spec = parse_arg(text)
            structs.append(sk.ShapeDtypeStruct(dims, dtype, sharding=sharding(spec)))
        outs = [sharding(parse_spec(o)) for o in args.out]
        out_shardings = None if not outs else outs[0] if len(outs) == 1 else tuple(outs)
        lowered = sk.jit(fn, out_shardings=out_shardings, partitioner=args.partitioner).lower(*structs)
        if args.pass_pipeline:
            lowered = lowered.run_passes(args.pass_pipeline)
        if args.compile_target is None and not args.report:
            if args.hardware is not None:
                raise ValueError("--hardware times a compiled program: add --report or --target")
            return lowered.as_text() + "\n"
        from shardkit.executor.targets import profile_name

        compiled = lowered.compile(target=args.compile_target)
        report = compiled.communication()
        hardware = args.hardware or profile_name(compiled.target)
        text = str(report)
        if args.compile_target is not None:
            text += f"\n{compiled.memory()}"
        if hardware is not None:
            text += f"\n{report.time(hardware)}"
        return text


def ensure_cpu_devices(count: int) -> int:
    """Asks jax for ``count`` (at least 8) virtual CPU devices and returns how many it was asked for, or 0 when
    its backend had already started. A fresh process has one CPU device; a mesh needs as many as it has
    positions. This only works before jax starts its backend, which is the case when a tool runs as a command."""
    import jax

    try:
        if count > 1:
            jax.config.update("jax_num_cpu_devices", max(count, 8))
            return max(count, 8)
    except RuntimeError:
        pass
    return 0


def main() -> None:
    """Console entry point of ``shardkit-lower``."""
    sys.exit(LowerMain().run())


if __name__ == "__main__":
    main()
