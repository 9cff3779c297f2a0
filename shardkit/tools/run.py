"""shardkit-run: runs a sharded StableHLO module on the local devices and prints and saves its outputs.

``shardkit-run FILE [--args A.npy B.npz ...] [--random-inputs SEED | --zero-inputs] [--mesh x=4,y=2]
[-p PIPELINE] [-o OUT.npz]``. ``FILE`` is anything ``shardkit.load`` reads: MLIR text or bytecode, a StableHLO
portable artifact, or a serialized ``jax.export.Exported``. Inputs come from ``.npy`` files (one array each)
and ``.npz`` files (their arrays in order), or are made with the right shapes. Each output is printed as
``result[0]: float32[8,2] sharding={devices=[4,2]<=[8]} sum=... crc32=...`` and saved under that name with
``-o``. Mistakes (a missing file, an unparsable module, inputs of the wrong shape or dtype, a module without
``@main``) are one-line errors with exit code 1.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from shardkit.tools.lower import ensure_cpu_devices, parse_mesh
from shardkit.tools.main import ToolMain


def _arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shardkit-run",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "input", help="module file: .mlir text or bytecode, StableHLO artifact, XLA's HLO text, jax.export bytes"
    )
    parser.add_argument("--args", nargs="+", default=[], metavar="FILE", help="inputs: .npy or .npz files, in order")
    made = parser.add_mutually_exclusive_group()
    made.add_argument("--random-inputs", type=int, metavar="SEED", help="random inputs of the right shapes")
    made.add_argument("--zero-inputs", action="store_true", help="all-zero inputs of the right shapes")
    parser.add_argument("--mesh", default="", help="bind the module's mesh to a mesh of these axes, e.g. x=4,y=2")
    parser.add_argument("-p", "--pass-pipeline", default=None, metavar="PIPELINE", help="passes to run first")
    parser.add_argument("--entry", default=None, metavar="NAME", help="the function to run (default: @main)")
    parser.add_argument(
        "--allow-unregistered-dialect",
        action="store_true",
        help="drop (and name) the attributes of dialects XLA does not know, e.g. tt-mlir's #ttcore...",
    )
    parser.add_argument(
        "--module", type=int, default=None, metavar="INDEX", help="which of the file's top-level modules to run"
    )
    parser.add_argument("-o", dest="output", default=None, metavar="OUT.npz", help="save the outputs here")
    return parser


class RunError(Exception):
    """A mistake in the tool's input, reported as one line."""


class RunMain(ToolMain):
    """The tool as an object, so tests drive it in-process: ``RunMain(["f.mlir", "--zero-inputs"]).run()``."""

    def __init__(
        self, argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
    ):
        super().__init__(_arg_parser(), argv, stdin=None, stdout=stdout, stderr=stderr)

    def run(self) -> int:
        import jax

        try:
            # The module's types are the truth here, not jax's defaults: 64-bit arguments stay 64-bit (for this
            # run only: a test or a caller driving the tool in-process keeps its own setting).
            with jax.enable_x64(True):
                self._run()
        except (RunError, ValueError, TypeError, jax.errors.JaxRuntimeError) as e:
            message = " ".join(str(e).split("\n")[0].split())
            return self.error(message)
        return 0

    def _run(self) -> None:
        args = self.args
        shape, names = parse_mesh(args.mesh)
        from shardkit.lowering import load_module

        where = dict(entry=args.entry, module=args.module, allow_unregistered=args.allow_unregistered_dialect)
        needed = load_module.partitions(Path(args.input), **where)
        made = ensure_cpu_devices(max(8, math.prod(shape), needed))
        if made > 8:  # the module needs more than the default: say so, it is not what a bare jax process has
            self.stderr.write(f"{self.prog}: made {made} virtual CPU devices for the module's {needed} partitions\n")
        import jax

        import shardkit as sk
        from shardkit.dialects import irx
        from shardkit.dialects.sdy import symbol_ref

        mesh = sk.make_mesh(shape, names, devices=sk.devices()[: math.prod(shape)]) if names else None
        with warnings.catch_warnings(record=True) as dropped:
            warnings.simplefilter("always")
            lowered = sk.load(Path(args.input), mesh=mesh, **where)
        for w in dropped:
            self.stderr.write(f"{self.prog}: {w.message}\n")
        avals, tree = jax.tree_util.tree_flatten(lowered.in_avals)
        leaves = self._inputs(avals)
        compiled = lowered.compile(passes=args.pass_pipeline)
        call_args, call_kwargs = jax.tree_util.tree_unflatten(tree, leaves)
        outputs = compiled(*call_args, **call_kwargs)
        meshes = {mesh.axes: name for name, mesh in irx.meshes(lowered.compiler_ir()).items()}
        saved = {}
        for path, out in jax.tree_util.tree_flatten_with_path(outputs)[0]:
            name = "result" + jax.tree_util.keystr(path)
            host = np.asarray(out)
            dims = ",".join(map(str, host.shape))
            sharding = repr(out.sharding.to_hlo(host.ndim))
            if out.sharding.spec is not None:  # as the module's mesh says it, too
                symbol = meshes.get(out.sharding.mesh.shape_tuple)
                on = symbol_ref(symbol) if symbol else f"mesh {out.sharding.mesh.to_sdy().body}"
                sharding += f" = {out.sharding.spec} on {on}"
            total = host.astype(np.float64).sum() if host.dtype.kind in "biuf" else host.sum()
            crc = zlib.crc32(np.ascontiguousarray(host).tobytes())
            self.stdout.write(
                f"{name}: {host.dtype.name}[{dims}] sharding={sharding} sum={total:.6g} crc32={crc:08x}\n"
            )
            saved[name] = host
        if args.output:
            np.savez(args.output, **saved)

    def _inputs(self, avals: Sequence[Any]) -> list[np.ndarray]:
        args = self.args
        if not args.args:
            if avals and args.random_inputs is None and not args.zero_inputs:
                raise RunError(
                    f"@main takes {len(avals)} arguments: give them with --args, or use --random-inputs SEED or "
                    "--zero-inputs."
                )
            rng = np.random.default_rng(args.random_inputs or 0)
            return [_made(a, rng if args.random_inputs is not None else None) for a in avals]
        if args.random_inputs is not None or args.zero_inputs:
            raise RunError("--args cannot be combined with --random-inputs or --zero-inputs.")
        arrays: list[tuple[str, np.ndarray]] = []
        for path in args.args:
            try:
                loaded = np.load(path, allow_pickle=False)
            except OSError as e:
                raise RunError(f"cannot read '{path}': {e.strerror or e}") from None
            except ValueError:  # numpy's message speaks of pickles
                raise RunError(f"'{path}' is not a .npy or .npz file.") from None
            if isinstance(loaded, np.ndarray):
                arrays.append((path, loaded))
            else:
                arrays += [(f"{path}[{key}]", loaded[key]) for key in loaded.files]
        if len(arrays) != len(avals):
            raise RunError(f"@main takes {len(avals)} arguments, but the input files hold {len(arrays)} arrays.")
        for i, ((where, array), aval) in enumerate(zip(arrays, avals)):
            if array.shape != aval.shape or array.dtype != aval.dtype:
                raise RunError(
                    f"{where} holds {array.dtype.name}{list(array.shape)}, but argument {i} of @main is "
                    f"{np.dtype(aval.dtype).name}{list(aval.shape)}."
                )
        return [a for _, a in arrays]


def _made(aval: Any, rng: np.random.Generator | None) -> np.ndarray:
    dtype = np.dtype(aval.dtype)
    if rng is None:
        return np.zeros(aval.shape, dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, aval.shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 10, aval.shape).astype(dtype)
    return rng.standard_normal(aval.shape).astype(dtype)


def main() -> None:
    """Console entry point of ``shardkit-run``."""
    sys.exit(RunMain().run())


if __name__ == "__main__":
    main()
