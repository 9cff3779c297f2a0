"""GSPMD form: shardings as HLO sharding strings (``mhlo.sharding = "{devices=[4,2]<=[8]}"``).

The strings are jaxlib's ``HloSharding`` printed with ``repr``, so they are exactly what XLA and jax print
and parse; nothing here assembles them by hand. Positions in a tile assignment refer to the sharding's
device list, which is also the compile-time device assignment, so a mesh over permuted devices prints the
same iota form as the ordered one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxlib import xla_client as xc
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from shardkit.sharding import GSPMDSharding, Sharding

ATTR_NAME = "mhlo.sharding"


def to_hlo_sharding(sharding: Sharding, ndim: int) -> xc.HloSharding:
    """The HloSharding of ``sharding`` for an array of rank ``ndim``.

    Examples:
        >>> to_hlo_sharding(NamedSharding(mesh4x2, P(None, "x")), 2)
        {devices=[1,4,2]<=[8] last_tile_dim_replicate}
    """
    return sharding._hlo(ndim)


def to_hlo_string(sharding: Sharding, ndim: int) -> str:
    """The text XLA prints for the sharding: ``{replicated}``, ``{devices=[4,2]<=[8]}``, ``{maximal device=3}``."""
    return repr(sharding._hlo(ndim))


def from_hlo_string(
    text: str | xc.HloSharding, devices: Sequence[Any], *, memory_kind: str | None = None
) -> GSPMDSharding:
    """A GSPMDSharding whose tile positions refer to ``devices`` (the device assignment)."""
    return GSPMDSharding(devices, text, memory_kind=memory_kind)


def build(sharding: Sharding, ndim: int) -> ir.StringAttr:
    """The ``mhlo.sharding`` attribute value; needs an active MLIR context."""
    return ir.StringAttr.get(to_hlo_string(sharding, ndim))


def constraint(operand: ir.Value, sharding: ir.Attribute | None, open_dims: Sequence[int]) -> stablehlo.CustomCallOp:
    """GSPMD's sharding constraint, as jax emits it: ``custom_call @Sharding(operand)`` with ``mhlo.sharding``
    and ``backend_config`` ``""`` or ``"unspecified_dims=[0,2]"`` naming the dimensions left to the compiler.

    Needs an active insertion point and location; ``sharding`` None leaves the attribute off (for a caller
    that reports why it has none).
    """
    config = f"unspecified_dims=[{','.join(map(str, open_dims))}]" if open_dims else ""
    call = stablehlo.CustomCallOp(
        [operand.type], [operand], call_target_name="Sharding", backend_config=ir.StringAttr.get(config)
    )
    if sharding is not None:
        call.attributes[ATTR_NAME] = sharding
    return call


def read(attr: ir.Attribute) -> xc.HloSharding:
    """The HloSharding held by an ``mhlo.sharding`` string attribute."""
    return xc.HloSharding.from_string(ir.StringAttr(attr).value)
