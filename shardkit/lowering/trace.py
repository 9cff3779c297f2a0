"""jax traces: a Python function becomes an unsharded StableHLO module in shardkit's MLIR context.

Only public jax is used (``jax.jit(f).trace(...).lower()`` with no shardings). jax keeps the module it returns
in its own lowering cache, shared by every later lowering of the same function, so shardkit never edits it:
it is copied into ``shardkit.dialects.context()`` through MLIR bytecode first.
"""

from __future__ import annotations

import io
from typing import Any

from jaxlib.mlir import ir

from shardkit.dialects import context


def copy_module(module: ir.Module) -> ir.Module:
    """A copy of ``module`` in shardkit's context (bytecode keeps locations; about 0.1 ms for small modules)."""
    buf = io.BytesIO()
    module.operation.write_bytecode(file=buf)
    return ir.Module.parse(buf.getvalue(), context=context())


def trace(jax_fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[ir.Module, Any]:
    """(the unsharded module in shardkit's context, jax's pytree of output ShapeDtypeStructs).

    ``jax_fun`` is ``jax.jit(fun, static_argnums=..., keep_unused=True)``: keeping unused arguments keeps
    main's arguments one-to-one with the flat call arguments. ``args`` hold jax ShapeDtypeStructs and the
    static values.
    """
    traced = jax_fun.trace(*args, **kwargs)
    module = traced.lower().compiler_ir("stablehlo")
    return copy_module(module), traced.out_info
