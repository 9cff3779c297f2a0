"""shardkit: meshes and shardings -> StableHLO -> passes -> XLA -> sharded Arrays.

The public API, re-exported; see README.md and DESIGN.md for the tour.
"""

from shardkit.caching import clear_caches
from shardkit.mesh import AbstractMesh, AxisType, Mesh, current_mesh, make_mesh
from shardkit.partition_spec import UNCONSTRAINED, P, PartitionSpec
from shardkit.sharding import (
    DuplicateSpecError,
    GSPMDSharding,
    IndivisibleError,
    NamedSharding,
    PmapSharding,
    PositionalSharding,
    Sharding,
    SingleDeviceSharding,
)


def devices(backend: str | None = None) -> list:
    """jax's devices: shardkit meshes are built from jaxlib Device objects, so they interoperate with jax."""
    import jax

    return jax.devices(backend)


__version__ = "0.1.0"

__all__ = [
    "AbstractMesh",
    "AxisType",
    "DuplicateSpecError",
    "GSPMDSharding",
    "IndivisibleError",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "PmapSharding",
    "PositionalSharding",
    "Sharding",
    "SingleDeviceSharding",
    "UNCONSTRAINED",
    "clear_caches",
    "current_mesh",
    "devices",
    "make_mesh",
]
