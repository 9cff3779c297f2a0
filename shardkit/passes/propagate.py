"""propagate: Shardy sharding propagation, so every intermediate value shows the sharding chosen for it.

By default this is jaxlib's ``sdy-propagation-pipeline`` (what XLA runs before partitioning): it labels every
op with ``sdy.sharding``, closes open dimensions and turns constraints into ``sdy.reshard``. That pipeline
takes no options, so ``keep-open=true`` runs only the propagation step (``sdy-<strategy>-propagate``),
which leaves open dimensions open and constraints in place and accepts the tuning options below.

The pipeline writes constraints as ``sdy.reshard``; those are written back as ``sdy.sharding_constraint``
with the same (now closed) sharding, which means the same to XLA, because jaxlib 0.10.2's compile path
rejects a module that holds ``sdy.reshard`` ("'sdy.reshard' op unknown mesh: @mesh").
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import irx
from shardkit.passes.base import Pass
from shardkit.passes.mlir_pipeline import MlirPass


@dataclasses.dataclass(frozen=True)
class Propagate(Pass):
    """Runs Shardy propagation (jaxlib's sdy-propagation-pipeline) and labels every op with its sharding."""

    name = "propagate"
    keep_open: bool = dataclasses.field(
        default=False, metadata={"help": "run only the propagation step: open dimensions and constraints stay"}
    )
    strategy: Literal["user-priority", "op-priority", "aggressive", "basic"] = dataclasses.field(
        default="user-priority", metadata={"help": "Shardy's propagation strategy (with keep-open=true)"}
    )
    conservative: bool = dataclasses.field(
        default=False, metadata={"help": "never shard along a dimension a value was not sharded on (keep-open=true)"}
    )
    debug_origins: bool = dataclasses.field(
        default=False, metadata={"help": "record where each sharding came from (keep-open=true)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.keep_open and self.options().keys() - {"keep-open"}:
            raise ValueError(
                "strategy, conservative and debug-origins need keep-open=true "
                "(jaxlib's sdy-propagation-pipeline takes no options)"
            )

    def mlir_pass(self) -> MlirPass:
        if not self.keep_open:
            return MlirPass("sdy-propagation-pipeline")
        flags = f"conservative-propagation={str(self.conservative).lower()} "
        flags += f"debug-sharding-origins={str(self.debug_origins).lower()}"
        return MlirPass(f"sdy-{self.strategy}-propagate{{{flags}}}")

    def apply(self, module: ir.Module) -> None:
        self.mlir_pass().apply(module)
        reshards_to_constraints(module)


def reshards_to_constraints(module: ir.Module) -> None:
    """Writes each ``sdy.reshard`` back as the ``sdy.sharding_constraint`` it came from (see the module docstring),
    keeping its other attributes (the debug origins Shardy records with ``debug-sharding-origins``)."""
    for op in irx.ops(module, "sdy.reshard"):
        with ir.InsertionPoint(op), op.location:
            constraint = sdy.ShardingConstraintOp(op.operands[0], op.attributes["sharding"])
        for name in op.attributes:
            constraint.attributes[name] = op.attributes[name]
        irx.replace(op, constraint.results)
