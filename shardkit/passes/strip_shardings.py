"""strip-shardings: removes every sharding, for running or debugging a module on one device.

Drops ``sdy.sharding``/``mhlo.sharding`` (and other ``sdy.*`` attributes) from functions and ops, replaces
``sdy.sharding_constraint``, ``sdy.reshard`` and ``custom_call @Sharding`` by their operand, turns
``sdy.constant`` back into ``stablehlo.constant``, erases the meshes and sets ``mhlo.num_partitions = 1``.
Manual computations cannot be undone this way and are errors.
"""

from __future__ import annotations

import dataclasses

from jaxlib.mlir import ir

from shardkit.dialects import mhlo
from shardkit.passes import rewriter
from shardkit.passes.base import Pass

_PASS_THROUGH = ("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier")


@dataclasses.dataclass(frozen=True)
class StripShardings(Pass):
    """Removes all shardings, constraints and meshes so the module runs on a single device."""

    name = "strip-shardings"

    def apply(self, module: ir.Module) -> None:
        with module.context:
            for op in rewriter.ops(module):
                if op.name in _PASS_THROUGH or _is_sharding_call(op):
                    rewriter.replace(op, [op.operands[0]])
                elif op.name == "sdy.constant":
                    new = rewriter.create("stablehlo.constant", op, results=[op.results[0].type], operands=[],
                                          attributes={"value": op.attributes["value"]})
                    rewriter.replace(op, new.results)
                elif op.name == "sdy.mesh":
                    rewriter.erase(op)
                elif op.name.startswith("sdy.") and op.name != "sdy.return" or _is_manual_call(op):
                    self.emit_error(op, "cannot be stripped to a single-device form")
                else:
                    _strip_attrs(op)
            if "mhlo.num_partitions" in module.operation.attributes:
                rewriter.set_attr(module.operation, "mhlo.num_partitions",
                                  ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1))


def _is_sharding(key: str) -> bool:
    return key == mhlo.ATTR_NAME or key.startswith("sdy.")


def _strip_attrs(op: ir.Operation) -> None:
    for key in [k for k in op.attributes if _is_sharding(k)]:
        del op.attributes[key]
    if op.name == "func.func":
        for kind in ("arg", "res"):
            dicts = rewriter.value_attrs(op, kind)
            if any(_is_sharding(k) for d in dicts for k in d):
                rewriter.set_value_attrs(op, kind, [{k: v for k, v in d.items() if not _is_sharding(k)} for d in dicts])


def _target(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["call_target_name"]).value if op.name == "stablehlo.custom_call" else ""


def _is_sharding_call(op: ir.Operation) -> bool:
    return _target(op) == "Sharding"


def _is_manual_call(op: ir.Operation) -> bool:
    return _target(op) in ("SPMDFullToShardShape", "SPMDShardToFullShape")
