"""jax traces: a Python function becomes an unsharded StableHLO module in shardkit's MLIR context.

Only public jax traces (``jax.jit(f).trace(...).lower()`` with no shardings). jax keeps the module it returns in
its own lowering cache, shared by every later lowering of the same function, so shardkit never edits it: it is
copied into ``shardkit.dialects.context()`` through MLIR bytecode first.

What the module needs beyond its arrays comes along as ``Effects``: ordered effects (``io_callback(ordered=True)``,
``jax.debug.print(ordered=True)``) thread one token each through main's first arguments and results, and host
callbacks name Python functions by index, which XLA must be handed at compile time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from typing import Any

from jaxlib.mlir import ir

from shardkit import _jaxlib
from shardkit.dialects.context import copy_module


@dataclasses.dataclass(frozen=True)
class Effects:
    """A module's side effects: ``ordered`` (jax's effect objects, one token each, in main's argument order),
    whether it has unordered ones, and the host callbacks its custom calls name by index (kept alive with
    ``keepalive``, whatever jax says must outlive the executable)."""

    ordered: tuple[Any, ...] = ()
    unordered: bool = False
    host_callbacks: tuple[Callable, ...] = ()
    keepalive: Any = None

    @property
    def any(self) -> bool:
        return bool(self.ordered or self.unordered or self.host_callbacks)


NO_EFFECTS = Effects()


@dataclasses.dataclass(frozen=True)
class Traced:
    module: ir.Module  # in shardkit's context, unsharded
    out_info: Any  # jax's pytree of output ShapeDtypeStructs
    effects: Effects
    devices: tuple[Any, ...]  # jax's choice (shard_map meshes, its own constraints, its mesh context), () if none
    jax_traced: Any = None  # jax's Traced, which lowers again for another platform (``lower_traced``)


_STATE = threading.local()


@contextlib.contextmanager
def tracing() -> Iterator[None]:
    """Marks the block as shardkit's own tracing and lowering (nested uses count)."""
    _STATE.depth = getattr(_STATE, "depth", 0) + 1
    try:
        yield
    finally:
        _STATE.depth -= 1


def tracing_for_shardkit() -> bool:
    """Whether jax is tracing or lowering for shardkit right now (``sk.jit``), rather than for jax itself: a
    sharding constraint is then shardkit's, otherwise jax's own."""
    return getattr(_STATE, "depth", 0) > 0


@contextlib.contextmanager
def _for_shardkit(shardy: bool) -> Iterator[None]:
    """jax tracing or lowering for shardkit (``tracing``), its sharding constructs in GSPMD's form where not
    ``shardy``."""
    with tracing(), contextlib.nullcontext() if shardy else _jaxlib.jax_lowers_gspmd():
        yield


def trace(
    jax_fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, shardy: bool, platform: str | None = None
) -> Traced:
    """The unsharded module of ``jax_fun`` for these arguments, with its output info and effects.

    ``jax_fun`` is ``jax.jit(fun, static_argnums=..., static_argnames=..., keep_unused=True)``: keeping unused
    arguments keeps main's array arguments one-to-one with the flat call arguments. ``args`` and ``kwargs`` hold
    jax ShapeDtypeStructs and the static values. jax's own sharding constructs in the body (a host callback's
    device, its sharding constraints, ``shard_map``) come in the Shardy form, or with ``shardy=False`` in GSPMD's.
    """
    with _for_shardkit(shardy):
        traced = jax_fun.trace(*args, **kwargs)
    return lower_traced(traced, shardy=shardy, platform=platform)


def lower_traced(traced: Any, *, shardy: bool, platform: str | None) -> Traced:
    """jax's ``traced`` (``jax.jit(f).trace(...)``) lowered for ``platform`` (None: this process's), with no Python
    traced again: a body jax lowers differently per platform (a remat policy's host offloading, which jax drops on
    CPU; ``lax.platform_dependent``) is lowered for the platform it will be compiled for."""
    with _for_shardkit(shardy):
        lowered = traced.lower(lowering_platforms=None if platform is None else (platform,))
    ordered, unordered, callbacks, keepalive, devices = _jaxlib.lowering_extras(lowered)
    any_effect = ordered or unordered or callbacks
    effects = Effects(tuple(ordered), bool(unordered), tuple(callbacks), keepalive) if any_effect else NO_EFFECTS
    module = copy_module(lowered.compiler_ir("stablehlo"))
    return Traced(module, traced.out_info, effects, devices if len(devices) > 1 else (), traced)
