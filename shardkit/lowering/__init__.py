"""Lowering: a Python function plus shardings becomes sharded StableHLO (no compiling here).

- ``trace``: jax traces and lowers the body WITHOUT shardings; the module is copied into shardkit's context.
- ``attach``: shardkit adds meshes, shardings (Shardy ``sdy`` or GSPMD ``mhlo.sharding``), partition counts,
  donation and the sharding constraints.
- ``constraint``: ``with_sharding_constraint`` and its jax primitive.
- ``lower``: flattening a call, the checks, the device assignment and the lowering cache -> ``LoweredModule``.
- ``load``: StableHLO shardkit did not lower (text, bytecode, ``jax.export``) -> ``LoweredModule``; and back
  to a ``jax.export.Exported``.
"""

from shardkit.lowering import load as load_module
from shardkit.lowering.constraint import sharding_constraint_p, with_sharding_constraint
from shardkit.lowering.lower import LoweredModule, Lowering
from shardkit.lowering.options import JitOptions
from shardkit.lowering.trace import Effects
from shardkit.lowering.types import PY_SCALARS, ShapeDtypeStruct

__all__ = [
    "Effects",
    "JitOptions",
    "Lowering",
    "LoweredModule",
    "PY_SCALARS",
    "ShapeDtypeStruct",
    "load_module",
    "sharding_constraint_p",
    "with_sharding_constraint",
]
