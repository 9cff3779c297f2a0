"""auto-partition: lays out a module whose arguments' shardings are open, as ``sk.autoshard`` lays out a function.

``shardkit-opt model.mlir -p 'auto-partition{target=tpu-v5e:4x4}'`` searches the meshes of the target's device
count and the shardings of every argument without one (or with only open dimensions), confirms the best by
compiling for the target, and writes the winner into the module: its mesh, each argument's sharding (a storage
sharding at priority 1), each result's sharding as Shardy's propagation gives it, and ``mhlo.num_partitions``.
Arguments that have a sharding keep it, and their mesh is the one searched. This module imports nothing heavy:
the search (and jax) load when the pass runs.
"""

from __future__ import annotations

import dataclasses

from jaxlib.mlir import ir

from shardkit.passes import isolation
from shardkit.passes.base import Pass


@dataclasses.dataclass(frozen=True)
class AutoPartition(Pass):
    """Chooses the mesh and the open arguments' shardings for a target machine (sk.autoshard's search)."""

    name = "auto-partition"
    target: str = dataclasses.field(default="", metadata={"help": "the machine: tpu-v5e:16x16, cpu:8, ... (required)"})
    memory_limit: int | None = dataclasses.field(
        default=None, metadata={"help": "bytes per device a layout must fit (default: the target's HBM)"}
    )
    hardware: str | None = dataclasses.field(
        default=None, metadata={"help": "the time model's hardware profile (default: the target's)"}
    )
    confirm: int = dataclasses.field(default=2, metadata={"help": "best candidates compiled for the target"})
    workers: int = dataclasses.field(default=2, metadata={"help": "processes evaluating candidates at once"})

    def apply(self, module: ir.Module) -> None:
        at = _main(module)
        if not self.target:
            self.emit_error(at, "auto-partition needs a target, e.g. 'auto-partition{target=tpu-v5e:4x4}'")
            return
        from shardkit.autosharding.api import autoshard_module
        from shardkit.autosharding.program import written

        try:
            plan = autoshard_module(
                module,
                target=self.target,
                memory_limit=self.memory_limit,
                hardware=self.hardware,
                confirm=self.confirm,
                workers=self.workers,
            )
        except (ValueError, TypeError, ImportError) as e:
            self.emit_error(at, f"auto-partition: {e}")
            return
        isolation.replace_contents(module, written(plan.program, plan.chosen))


def _main(module: ir.Module) -> ir.Operation:
    table = ir.SymbolTable(module.operation)
    return table["main"].operation if "main" in table else module.operation
