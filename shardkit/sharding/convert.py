"""Into the model from elsewhere: a compiled program's HLO shardings, jax's shardings, and whatever a user passes
where a sharding goes (shardkit's, jax's, or a bare PartitionSpec under ``with mesh:``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from shardkit._jaxlib import HloSharding
from shardkit.caching import memoize
from shardkit.dialects import mhlo
from shardkit.mesh import AbstractMesh, Mesh, current_mesh
from shardkit.partition_spec import PartitionSpec
from shardkit.sharding.base import Device, Sharding
from shardkit.sharding.gspmd import GSPMDSharding
from shardkit.sharding.named import NamedSharding
from shardkit.sharding.single import SingleDeviceSharding


def from_hlo(hlo: HloSharding, devices: Sequence[Device], mesh: Mesh | AbstractMesh | None, ndim: int) -> Sharding:
    """The sharding ``hlo`` describes over ``devices`` (its positions): a SingleDeviceSharding on one device, a
    NamedSharding over ``mesh`` when the mesh has these devices in this order and a PartitionSpec fits, else
    a GSPMDSharding. A tuple sharding describes no one value: ``mhlo.TupleShardingError`` (a ValueError).

    Examples:
        >>> from_hlo(mhlo.parse("{devices=[1,4,2]<=[8] last_tile_dim_replicate}"), jax.devices(), mesh4x2, 2)
        NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P(None, 'x'), memory_kind=device)
    """
    hlo = mhlo.one_value(hlo, "from_hlo")
    devices = tuple(devices)
    if len(devices) == 1:
        return SingleDeviceSharding(devices[0])
    if isinstance(mesh, Mesh) and mesh.flat_devices == devices:
        named = NamedSharding.from_hlo(mesh, hlo, ndim)
        if named is not None:
            return named
    return GSPMDSharding(devices, hlo)


@memoize()
def from_jax(sharding: jax.sharding.Sharding, ndim: int) -> Sharding:
    """The shardkit sharding that places a rank-``ndim`` value's pieces as the jax sharding does: the same kind
    where shardkit has it (NamedSharding, SingleDeviceSharding), else a GSPMDSharding of jax's HLO form.

    Examples:
        >>> from_jax(jax.sharding.NamedSharding(mesh4x2.to_jax(), jax.sharding.PartitionSpec("x")), 2).spec
        P('x',)
    """
    if isinstance(sharding, Sharding):  # shardkit's own, as jax hands it back (a jax Array placed by it)
        return sharding
    if isinstance(sharding, jax.sharding.NamedSharding):
        return NamedSharding.from_jax(sharding)
    if isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return SingleDeviceSharding.from_jax(sharding)
    return GSPMDSharding.from_jax(sharding, ndim)


@memoize()
def physical_sharding(sharding: Sharding, ndim: int, extra: int) -> Sharding:
    """The sharding of a rank-``ndim`` value's physical layout with ``extra`` trailing dimensions that are never cut
    (a typed PRNG key array's data): ``sharding`` itself where it describes the longer rank that way (a
    NamedSharding's spec leaves trailing dimensions whole), else a GSPMDSharding of the padded HLO form.

    Examples:
        >>> s = NamedSharding(mesh4x2, P("x"))
        >>> physical_sharding(s, 1, 1) is s
        True
        >>> physical_sharding(GSPMDSharding.from_jax(s.to_jax(1), 1), 1, 1).to_hlo(2) == s.to_hlo(2)
        True
    """
    padded = mhlo.with_trailing_dims(sharding.to_hlo(ndim), ndim, extra)
    try:
        if sharding.to_hlo(ndim + extra) == padded:
            return sharding
    except ValueError:  # a kind whose HLO form has a fixed rank
        pass
    return GSPMDSharding(sharding.device_assignment, padded, memory_kind=sharding.memory_kind)


def is_sharding_like(x: Any) -> bool:
    """Whether ``x`` is a leaf of a tree of shardings (``as_sharding`` takes it), None included."""
    return x is None or isinstance(x, (Sharding, PartitionSpec, jax.sharding.Sharding))


def as_sharding(sharding: Any, ndim: int, what: str) -> Sharding:
    """A shardkit Sharding for what a user passed as ``what`` for a rank-``ndim`` value: a shardkit Sharding as it
    is, a jax sharding converted (``from_jax``), a bare PartitionSpec (shardkit's or jax's) over the mesh of the
    innermost ``with mesh:``, as jax reads one under its mesh context.

    Examples:
        >>> with mesh4x2:
        ...     as_sharding(P("y"), 2, "in_shardings").spec
        P('y',)
    """
    if isinstance(sharding, Sharding):
        return sharding
    if isinstance(sharding, jax.sharding.Sharding):
        return from_jax(sharding, ndim)
    if isinstance(sharding, PartitionSpec):
        mesh = current_mesh()
        if mesh.empty:
            raise ValueError(
                f"{what} holds the bare PartitionSpec {sharding}, which names mesh axes of no mesh: use it inside "
                "`with mesh:`, or pass NamedSharding(mesh, spec)."
            )
        return NamedSharding(mesh, sharding)
    raise TypeError(
        f"{what} must hold shardkit or jax Shardings, PartitionSpecs (under `with mesh:`) or None, got {sharding!r}."
    )
