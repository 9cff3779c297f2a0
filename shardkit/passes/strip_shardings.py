"""strip-shardings: removes every sharding, for running or debugging a module on one device.

Drops ``sdy.sharding``/``mhlo.sharding`` (and other ``sdy.*`` attributes) from functions and ops, replaces
``sdy.sharding_constraint``, ``sdy.reshard`` and ``custom_call @Sharding`` by their operand, turns
``sdy.constant`` back into ``stablehlo.constant``, erases the meshes and sets ``mhlo.num_partitions = 1``.
Manual computations cannot be undone this way and are errors.
"""

from __future__ import annotations

import dataclasses

from jaxlib.mlir import ir

from shardkit.dialects import irx
from shardkit.passes.base import Pass

_PASS_THROUGH = (*irx.CONSTRAINT_OPS, "sdy.propagation_barrier")
_MANUAL_CALLS = ("SPMDFullToShardShape", "SPMDShardToFullShape")


def _is_sharding_attr(key: str) -> bool:
    return key == irx.MHLO_SHARDING or key.startswith("sdy.")


@dataclasses.dataclass(frozen=True)
class StripShardings(Pass):
    """Removes all shardings, constraints and meshes so the module runs on a single device."""

    name = "strip-shardings"

    def apply(self, module: ir.Module) -> None:
        with module.context:
            for op in irx.ops(module):
                if op.name in _PASS_THROUGH or irx.call_target(op) == "Sharding":
                    irx.replace(op, [op.operands[0]])
                elif op.name == "sdy.constant":
                    irx.constant_to_stablehlo(op)
                elif op.name == "sdy.mesh":
                    irx.erase(op)
                elif op.name.startswith("sdy.") and op.name != "sdy.return" or irx.call_target(op) in _MANUAL_CALLS:
                    self.emit_error(op, "cannot be stripped to a single-device form")
                else:
                    irx.drop_attrs(op, _is_sharding_attr)
            if irx.NUM_PARTITIONS in module.operation.attributes:
                irx.set_attr(
                    module.operation, irx.NUM_PARTITIONS, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1)
                )
