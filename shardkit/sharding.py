"""The Sharding family and all of its index math.

Every kind describes its placement in one canonical form, an XLA ``HloSharding`` (a tile assignment over
positions in the sharding's device list), and everything else is derived from that form once, here:
``devices_indices_map``, ``shard_shape``, replica ids, ``is_fully_replicated`` and ``is_equivalent_to``.
The five kinds only say how they build their ``HloSharding`` and which devices the positions refer to.

Worked example (the one every derivation below follows). ``NamedSharding(mesh 4x2 ('x','y'), P('y'))``
on a rank-2 array: 'y' (size 2) shards dim 0, 'x' (size 4) is unused and so replicates. The tile
assignment is ``[2, 1, 4]`` = (tiles of dim 0, tiles of dim 1, copies) over the mesh positions
``iota([4, 2]).transpose(1, 0)`` = ``[0, 2, 4, 6, 1, 3, 5, 7]``: tile (0, 0) lives on positions 0, 2, 4, 6
(replica ids 0..3 in device order) and tile (1, 0) on positions 1, 3, 5, 7. That is the HLO text
``{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}``.
"""

from __future__ import annotations

import itertools
import math
import types
import weakref
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
from jaxlib import xla_client as xc

from shardkit.caching import memoize, on_clear
from shardkit.mesh import AbstractMesh, AxisType, Mesh, device_refs, lookup_devices
from shardkit.partition_spec import UNCONSTRAINED, PartitionSpec

Shape = tuple[int, ...]
Index = tuple[Any, ...]
Device = Any

_REPLICATED = xc.OpSharding.Type.REPLICATED


class IndivisibleError(ValueError):
    """An array dimension is not divisible by the number of tiles the sharding cuts it into."""

    def __init__(self, message: str, *, dim: int, size: int, parts: int, shape: Shape):
        super().__init__(message)
        self.dim, self.size, self.parts, self.shape = dim, size, parts, shape


class DuplicateSpecError(ValueError):
    """A mesh axis appears more than once in a PartitionSpec."""

    def __init__(self, message: str, *, axes: tuple[str, ...], spec: PartitionSpec):
        super().__init__(message)
        self.axes, self.spec = axes, spec


def _canonical_shape(shape: Sequence[int]) -> Shape:
    shape = tuple(shape)
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 0:
            raise TypeError(f"Array shapes hold non-negative ints, got {shape!r}.")
    return tuple(int(d) for d in shape)


def _check_memory_kind(kind: str | None, device: Device) -> str | None:
    """The device's default memory kind for None; the kind itself when the device can address it."""
    if device is None:
        return kind
    if kind is None:
        return device.default_memory().kind
    known = [m.kind for m in device.addressable_memories()]
    if kind not in known:
        raise ValueError(
            f"Memory kind {kind!r} is unknown to device {device}: it can address {', '.join(known)}."
        )
    return kind


def _is_local(device: Device) -> bool:
    return device.process_index == device.client.process_index()


class Sharding:
    """How an array is laid out across devices.

    Subclasses give ``_device_assignment`` (the devices that HLO positions refer to), ``_to_hlo(ndim)``,
    ``memory_kind``, ``with_memory_kind``, equality, hashing and repr; this class derives the rest.
    """

    # -- what each kind provides -------------------------------------------------------------------------

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        raise NotImplementedError

    def _to_hlo(self, ndim: int) -> xc.HloSharding:
        raise NotImplementedError

    @property
    def memory_kind(self) -> str | None:
        raise NotImplementedError

    def with_memory_kind(self, kind: str) -> Sharding:
        raise NotImplementedError

    def _check_rank(self, ndim: int) -> None:
        """Raises ValueError when the sharding cannot describe an array of rank ``ndim``."""

    def _tile_description(self, dim: int) -> str:
        """Names what cuts dimension ``dim`` (for error messages)."""
        return "the sharding's tiles"

    # -- derived, shared by every kind -----------------------------------------------------------------

    def _hlo(self, ndim: int) -> xc.HloSharding:
        return self._memoized(_hlo_for, ndim)

    @property
    def _is_concrete(self) -> bool:
        return True

    @cached_property
    def device_set(self) -> frozenset[Device]:
        """Every device the sharding spans, including other processes' devices."""
        return frozenset(self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @cached_property
    def addressable_devices(self) -> frozenset[Device]:
        """The devices of ``device_set`` that this process can address."""
        return frozenset(d for d in self._device_assignment if _is_local(d))

    @cached_property
    def _addressable_device_assignment(self) -> tuple[Device, ...]:
        return tuple(d for d in self._device_assignment if _is_local(d))

    @cached_property
    def is_fully_addressable(self) -> bool:
        return len(self.addressable_devices) == len(self.device_set)

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        raise NotImplementedError

    # Index math is memoised twice: per (sharding, shape) in module-level functions, and in front of them in
    # a dict on the instance, so a repeated call costs one dict lookup (no hashing of the sharding).

    def shard_shape(self, global_shape: Sequence[int]) -> Shape:
        """The shape of the piece each device holds."""
        return self._memoized(_shard_shape, global_shape)

    def devices_indices_map(self, global_shape: Sequence[int]) -> Mapping[Device, Index]:
        """Device -> the index (a tuple of slices) of the piece it holds, for every device."""
        return self._memoized(_devices_indices_map, global_shape)

    def addressable_devices_indices_map(self, global_shape: Sequence[int]) -> Mapping[Device, Index]:
        """``devices_indices_map`` restricted to this process's devices."""
        return self._memoized(_addressable_indices_map, global_shape)

    def replica_ids(self, global_shape: Sequence[int]) -> Mapping[Device, int]:
        """Device -> which copy of its piece it holds: the n-th device (in device order) with an index gets n."""
        return self._memoized(_replica_ids, global_shape)

    def _memoized(self, derive: Any, key: Sequence[int] | int) -> Any:
        """``derive(self, key)`` for a shape (or rank) key, remembered on the instance."""
        memo = self._memo
        try:
            return memo[derive, key]
        except (KeyError, TypeError):
            key = key if isinstance(key, int) else tuple(key)
            out = memo[derive, key] = derive(self, key)
            return out

    @cached_property
    def _memo(self) -> dict[tuple[Any, Shape], Any]:
        key = id(self)

        def forget(ref: weakref.ref) -> None:
            if _MEMO_OWNERS.get(key) is ref:  # not a newer sharding that reuses the id
                del _MEMO_OWNERS[key]

        _MEMO_OWNERS[key] = weakref.ref(self, forget)
        return {}

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both place the same pieces of an ``ndim``-rank array on the same devices.

        As in jax: the HLO shardings agree (any two fully replicated ones do), the memory kinds agree and
        the device lists are equal in order; shardings over abstract meshes compare without devices.
        """
        if not isinstance(other, Sharding):
            raise TypeError(f"is_equivalent_to needs a Sharding, got {type(other).__name__}.")
        if self is other:
            return True
        if self.memory_kind != other.memory_kind:
            return False
        if self._is_concrete and other._is_concrete:
            if self._device_assignment != other._device_assignment:
                return False
        elif self._is_concrete != other._is_concrete:
            return False
        return _hlo_equal(self._hlo(ndim), other._hlo(ndim))


# -- the derivations, memoised on (sharding, shape) -----------------------------------------------------

# By identity, not in a WeakSet: equal shardings are distinct objects with a memo each, and a set would
# keep only one of them (the other's memo would survive clear_caches).
_MEMO_OWNERS: dict[int, weakref.ref[Sharding]] = {}


@on_clear
def _clear_instance_memos() -> None:
    for ref in list(_MEMO_OWNERS.values()):
        owner = ref()
        if owner is not None:
            owner.__dict__.pop("_memo", None)
    _MEMO_OWNERS.clear()



@memoize()
def _hlo_for(sharding: Sharding, ndim: int) -> xc.HloSharding:
    sharding._check_rank(ndim)
    return sharding._to_hlo(ndim)


def _hlo_is_replicated(hlo: xc.HloSharding) -> bool:
    return hlo.num_devices() == 1 or hlo.is_replicated()


def _hlo_equal(a: xc.HloSharding, b: xc.HloSharding) -> bool:
    if _hlo_is_replicated(a) and _hlo_is_replicated(b):
        return True
    return a == b


def _tiling(hlo: xc.HloSharding, ndim: int) -> tuple[list[int], int] | None:
    """(tiles per dimension, copies per tile), or None for a replicated (or single-device) sharding."""
    if _hlo_is_replicated(hlo):
        return None
    dims = hlo.tile_assignment_dimensions()
    subgroups = hlo.subgroup_types()
    if hlo.replicate_on_last_tile_dim() or subgroups == [_REPLICATED]:
        parts, copies = list(dims[:-1]), dims[-1]
    elif subgroups:
        raise ValueError(f"HLO sharding {hlo} has subgroup types {subgroups}; shardkit supports only replicated ones.")
    else:
        parts, copies = list(dims), 1
    if len(parts) != ndim:
        raise ValueError(f"HLO sharding {hlo} tiles {len(parts)} dimensions, but the array has rank {ndim}.")
    return parts, copies


@memoize()
def _shard_shape(sharding: Sharding, shape: Shape) -> Shape:
    shape = _canonical_shape(shape)
    tiling = _tiling(sharding._hlo(len(shape)), len(shape))
    if tiling is None:
        return shape
    parts, _ = tiling
    out = []
    for dim, (size, p) in enumerate(zip(shape, parts)):
        quotient, remainder = divmod(size, p)
        if remainder:
            raise IndivisibleError(
                f"Dimension {dim} of shape {shape} has size {size}, which is not divisible by {p}, the number "
                f"of pieces {sharding._tile_description(dim)} cut it into. Pad the dimension to a multiple of "
                f"{p} or shard it over fewer devices.",
                dim=dim, size=size, parts=p, shape=shape,
            )
        out.append(quotient)
    return tuple(out)


@memoize()
def _indices_by_position(sharding: Sharding, shape: Shape) -> tuple[Index, ...]:
    """The index of the piece at each position of the device assignment."""
    shard = _shard_shape(sharding, shape)
    shape = _canonical_shape(shape)
    hlo = sharding._hlo(len(shape))
    n = sharding.num_devices
    tiling = _tiling(hlo, len(shape))
    if tiling is None:
        return ((slice(None),) * len(shape),) * n
    parts, copies = tiling
    per_dim = [
        [slice(None)] if p == 1 else [slice(i * c, (i + 1) * c) for i in range(p)] for p, c in zip(parts, shard)
    ]
    tiles = list(itertools.product(*per_dim))
    # tile_assignment_devices() lists positions tile-major, copies minor: entry k holds tile k // copies.
    tile_of_position = np.empty(n, dtype=np.int64)
    tile_of_position[np.asarray(hlo.tile_assignment_devices(), dtype=np.int64)] = np.arange(n) // copies
    return tuple(map(tiles.__getitem__, tile_of_position.tolist()))


@memoize()
def _devices_indices_map(sharding: Sharding, shape: Shape) -> Mapping[Device, Index]:
    return types.MappingProxyType(dict(zip(sharding._device_assignment, _indices_by_position(sharding, shape))))


@memoize()
def _addressable_indices_map(sharding: Sharding, shape: Shape) -> Mapping[Device, Index]:
    full = _devices_indices_map(sharding, shape)
    if sharding.is_fully_addressable:
        return full
    return types.MappingProxyType({d: full[d] for d in sharding._addressable_device_assignment})


def _index_key(index: Index) -> tuple[Any, ...]:
    return tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)


@memoize()
def _replica_ids(sharding: Sharding, shape: Shape) -> Mapping[Device, int]:
    seen: dict[tuple[Any, ...], int] = {}
    out = {}
    for device, index in zip(sharding._device_assignment, _indices_by_position(sharding, shape)):
        key = _index_key(index)
        out[device] = seen.get(key, 0)
        seen[key] = out[device] + 1
    return types.MappingProxyType(out)


# -- SingleDeviceSharding ------------------------------------------------------------------------------


class SingleDeviceSharding(Sharding):
    """The whole array on one device.

    Examples:
        >>> SingleDeviceSharding(jax.devices()[0]).shard_shape((8, 2))
        (8, 2)
    """

    def __init__(self, device: Device, *, memory_kind: str | None = None):
        self._device = device
        self._memory_kind = _check_memory_kind(memory_kind, device)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_single, (device_refs([self._device]), self._memory_kind))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SingleDeviceSharding)
            and self._device == other._device
            and self._memory_kind == other._memory_kind
        )

    def __hash__(self) -> int:
        return hash((SingleDeviceSharding, self._device, self._memory_kind))

    @property
    def device(self) -> Device:
        return self._device

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return (self._device,)

    def _to_hlo(self, ndim: int) -> xc.HloSharding:
        return xc.HloSharding.replicate()

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> SingleDeviceSharding:
        return SingleDeviceSharding(self._device, memory_kind=kind)


def _make_single(refs: tuple, memory_kind: str | None) -> SingleDeviceSharding:
    return SingleDeviceSharding(lookup_devices(refs)[0], memory_kind=memory_kind)


# -- NamedSharding ---------------------------------------------------------------------------------------


@memoize(maxsize=1024)
def _check_spec(mesh: Mesh | AbstractMesh, spec: PartitionSpec) -> None:
    used = spec.used_axes()
    for name in used:
        if name not in mesh.axis_names:
            raise ValueError(
                f"Resource axis: {name} of {spec} is not found in mesh: {mesh.axis_names}. "
                f"Use one of the mesh's axis names."
            )
    duplicates = tuple(sorted({n for n in used if used.count(n) > 1}))
    if duplicates:
        raise DuplicateSpecError(
            f"A mesh axis can shard at most one array dimension, but {spec} uses "
            f"{', '.join(repr(a) for a in duplicates)} more than once.",
            axes=duplicates, spec=spec,
        )
    if UNCONSTRAINED in spec and AxisType.Auto not in mesh.axis_types:
        raise ValueError(f"{spec} cannot use P.UNCONSTRAINED: no axis of the mesh is Auto ({mesh.axis_types}).")


@memoize(maxsize=1024)
def _named_hlo(mesh: Mesh | AbstractMesh, spec: PartitionSpec, ndim: int) -> xc.HloSharding:
    # Size-1 axes cut nothing, so they are dropped first; then the tiled axes are listed in spec order
    # (dim-major, and major-to-minor inside a dim) and the unused axes are gathered into one trailing
    # replication dimension. The tile assignment is iota(mesh sizes) transposed into that axis order:
    # e.g. mesh {a:2, b:2, c:2, d:2}, P(None, ('d', 'b'), 'c'), rank 4 gives dims [1, 4, 2, 1, 2],
    # reshape [2, 2, 2, 2], perm [3, 1, 2, 0].
    kept = [(n, s) for n, s in mesh.shape_tuple if s != 1]
    position = {n: i for i, (n, _) in enumerate(kept)}
    dims = [1] * ndim
    perm: list[int] = []
    for dim in range(len(spec)):
        for name in spec.axes_of(dim):
            if name in position:
                dims[dim] *= mesh.axis_size(name)
                perm.append(position[name])
    if not perm:
        return xc.HloSharding.replicate()
    unused = [i for i, (n, _) in enumerate(kept) if i not in perm]
    subgroups = []
    if unused:
        dims.append(math.prod(kept[i][1] for i in unused))
        perm.extend(unused)
        subgroups.append(_REPLICATED)
    return xc.HloSharding.iota_tile(dims, [s for _, s in kept], perm, subgroups)


class NamedSharding(Sharding):
    """A mesh plus a PartitionSpec saying which mesh axes shard which array dimensions.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> s = NamedSharding(mesh, P("x", "y"))
        >>> s.shard_shape((8, 2))
        (2, 1)
    """

    def __init__(
        self, mesh: Mesh | AbstractMesh, spec: PartitionSpec | Sequence[Any] | None = None, *,
        memory_kind: str | None = None,
    ):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding needs a Mesh or AbstractMesh, got {type(mesh).__name__}.")
        if spec is None:
            spec = PartitionSpec()
        elif not isinstance(spec, PartitionSpec):
            if not isinstance(spec, (tuple, list)):
                raise TypeError(f"NamedSharding needs a PartitionSpec, got {spec!r}.")
            spec = PartitionSpec(*spec)
        _check_spec(mesh, spec)
        self.mesh = mesh
        self.spec = spec
        first = None if isinstance(mesh, AbstractMesh) or mesh.empty else mesh._flat_devices[0]
        self._memory_kind = _check_memory_kind(memory_kind, first)
        self._hash = hash((NamedSharding, mesh, spec, self._memory_kind))

    def __repr__(self) -> str:
        mem = "" if self._memory_kind is None else f", memory_kind={self._memory_kind}"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec}{mem})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_named, (self.mesh, self.spec, self._memory_kind))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return (
            isinstance(other, NamedSharding)
            and self._hash == other._hash
            and self.spec == other.spec
            and self._memory_kind == other._memory_kind
            and self.mesh == other.mesh
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def _is_concrete(self) -> bool:
        return isinstance(self.mesh, Mesh)

    def _need_devices(self, what: str) -> None:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"{what} is not available for a NamedSharding over an AbstractMesh ({self.mesh}).")

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        self._need_devices("The device assignment")
        return self.mesh._flat_devices

    @cached_property
    def device_set(self) -> frozenset[Device]:
        self._need_devices("device_set")
        return frozenset(self.mesh._flat_devices)

    @cached_property
    def addressable_devices(self) -> frozenset[Device]:
        self._need_devices("addressable_devices")
        return self.mesh._local_devices_set

    @cached_property
    def is_fully_addressable(self) -> bool:
        self._need_devices("is_fully_addressable")
        return not self.mesh.is_multi_process

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @cached_property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.axis_size(n) == 1 for n in self.spec.used_axes())

    def _check_rank(self, ndim: int) -> None:
        if len(self.spec) > ndim:
            hint = " For scalars the PartitionSpec should be P()." if ndim == 0 else ""
            raise ValueError(
                f"Sharding {self} is only valid for values of rank at least {len(self.spec)}, but was applied "
                f"to a value of rank {ndim}.{hint}"
            )

    def _tile_description(self, dim: int) -> str:
        axes = self.spec.axes_of(dim)
        sizes = "*".join(str(self.mesh.axis_size(a)) for a in axes)
        return f"mesh axes {axes} (sizes {sizes})"

    def _to_hlo(self, ndim: int) -> xc.HloSharding:
        return _named_hlo(self.mesh, self.spec, ndim)

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def with_spec(self, spec: PartitionSpec | Sequence[Any]) -> NamedSharding:
        return NamedSharding(self.mesh, spec, memory_kind=self._memory_kind)


def _make_named(mesh: Mesh | AbstractMesh, spec: PartitionSpec, memory_kind: str | None) -> NamedSharding:
    return NamedSharding(mesh, spec, memory_kind=memory_kind)


# -- GSPMDSharding ---------------------------------------------------------------------------------------


def _as_hlo(op_sharding: xc.HloSharding | xc.OpSharding | str) -> xc.HloSharding:
    if isinstance(op_sharding, xc.HloSharding):
        return op_sharding
    if isinstance(op_sharding, xc.OpSharding):
        return xc.HloSharding.from_proto(op_sharding)
    if isinstance(op_sharding, str):
        try:
            return xc.HloSharding.from_string(op_sharding)
        except Exception as e:  # jaxlib raises its own error type; callers get a ValueError
            raise ValueError(f"Cannot parse HLO sharding {op_sharding!r}: {e}") from None
    raise TypeError(f"Expected an HloSharding, OpSharding or HLO sharding string, got {type(op_sharding).__name__}.")


class GSPMDSharding(Sharding):
    """An XLA HLO sharding over an explicit device list (positions in the HLO refer to that list).

    Examples:
        >>> s = GSPMDSharding(jax.devices(), "{devices=[4,1,2]<=[8] last_tile_dim_replicate}")
        >>> s.shard_shape((8, 2))
        (2, 2)
    """

    def __init__(
        self, devices: Sequence[Device], op_sharding: xc.HloSharding | xc.OpSharding | str, *,
        memory_kind: str | None = None,
    ):
        self._devices = tuple(np.asarray(devices, dtype=object).flat)
        if not self._devices:
            raise ValueError("GSPMDSharding needs at least one device.")
        if len(set(self._devices)) != len(self._devices):
            raise ValueError(f"GSPMDSharding devices must be unique, got {list(self._devices)}.")
        self._hlo_sharding = _as_hlo(op_sharding)
        hlo = self._hlo_sharding
        if hlo.is_manual() or hlo.is_unknown() or hlo.is_unreduced() or hlo.tuple_elements():
            raise ValueError(f"GSPMDSharding supports tiled, replicated and maximal shardings, got {hlo}.")
        if hlo.is_maximal() and not hlo.is_replicated():
            (position,) = hlo.tile_assignment_devices()
            if position >= len(self._devices):
                raise ValueError(f"HLO sharding {hlo} names device position {position}, but only {len(self._devices)} devices were given.")
        elif not hlo.is_replicated() and hlo.num_devices() != len(self._devices):
            raise ValueError(
                f"HLO sharding {hlo} spans {hlo.num_devices()} devices, but {len(self._devices)} were given."
            )
        self._memory_kind = _check_memory_kind(memory_kind, self._devices[0])
        self._hash = hash((GSPMDSharding, self._devices, self._hlo_sharding, self._memory_kind))

    def __repr__(self) -> str:
        return f"GSPMDSharding({self._hlo_sharding!r}, memory_kind={self._memory_kind})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_gspmd, (device_refs(self._devices), repr(self._hlo_sharding), self._memory_kind))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return (
            isinstance(other, GSPMDSharding)
            and self._devices == other._devices
            and self._memory_kind == other._memory_kind
            and _hlo_equal(self._hlo_sharding, other._hlo_sharding)
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def hlo_sharding(self) -> xc.HloSharding:
        return self._hlo_sharding

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return self._devices

    def _check_rank(self, ndim: int) -> None:
        _tiling(self._hlo_sharding, ndim)

    def _tile_description(self, dim: int) -> str:
        return f"the HLO sharding {self._hlo_sharding}"

    def _to_hlo(self, ndim: int) -> xc.HloSharding:
        return self._hlo_sharding

    @cached_property
    def is_fully_replicated(self) -> bool:
        return _hlo_is_replicated(self._hlo_sharding)

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> GSPMDSharding:
        return GSPMDSharding(self._devices, self._hlo_sharding, memory_kind=kind)

    @classmethod
    def get_replicated(cls, devices: Sequence[Device], *, memory_kind: str | None = None) -> GSPMDSharding:
        return cls(devices, xc.HloSharding.replicate(), memory_kind=memory_kind)


def _make_gspmd(refs: tuple, hlo: str, memory_kind: str | None) -> GSPMDSharding:
    return GSPMDSharding(lookup_devices(refs), hlo, memory_kind=memory_kind)


# -- PositionalSharding ----------------------------------------------------------------------------------


class PositionalSharding(Sharding):
    """An array of devices shaped like the array's tiling: piece ``i`` goes to the devices at position ``i``.

    ``replicate(axis)`` merges the device sets along an axis (those devices then hold copies);
    ``reshape``/``transpose`` rearrange the positions. Rebuilt from the seed's jax.sharding reference,
    since jax 0.10 no longer ships it.

    Examples:
        >>> s = PositionalSharding(jax.devices()).reshape(4, 2)
        >>> s.replicate(1).shard_shape((8, 2))
        (2, 2)
    """

    def __init__(self, devices: Sequence[Device] | np.ndarray, *, memory_kind: str | None = None):
        devices = np.asarray(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
        if devices.size == 0:
            raise ValueError(f"PositionalSharding needs at least one device, got {devices!r}.")
        flat = tuple(devices.flat)
        if len(set(flat)) != len(flat):
            raise ValueError(f"PositionalSharding devices must be unique, got {list(flat)}.")
        ids = np.empty(devices.shape, dtype=object)
        for i, pos in enumerate(np.ndindex(devices.shape)):
            ids[pos] = (i,)
        self._init(flat, ids, _check_memory_kind(memory_kind, flat[0]))

    def _init(self, devices: tuple[Device, ...], ids: np.ndarray, memory_kind: str | None) -> None:
        ids.flags.writeable = False
        self._devices = devices
        self._ids = ids  # each entry: the sorted positions (into _devices) that hold that piece
        self._memory_kind = memory_kind
        self._hash = hash((PositionalSharding, devices, ids.shape, tuple(ids.flat), memory_kind))

    @classmethod
    def _remake(cls, devices: tuple[Device, ...], ids: np.ndarray, memory_kind: str | None) -> PositionalSharding:
        out = cls.__new__(cls)
        out._init(devices, ids, memory_kind)
        return out

    def __repr__(self) -> str:
        platform = self._devices[0].platform.upper()
        shown = np.empty(self._ids.shape, dtype=object)
        for pos, members in np.ndenumerate(self._ids):
            shown[pos] = _DeviceIdSet(platform, tuple(self._devices[i].id for i in members))
        body = np.array2string(shown, prefix="PositionalSharding(", suffix=")", max_line_width=100)
        return f"PositionalSharding({body}, memory_kind={self._memory_kind}, shape={self.shape})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_positional, (device_refs(self._devices), self._ids.shape, tuple(self._ids.flat), self._memory_kind))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return (
            isinstance(other, PositionalSharding)
            and self._hash == other._hash
            and self._devices == other._devices
            and self._ids.shape == other._ids.shape
            and all(a == b for a, b in zip(self._ids.flat, other._ids.flat))
            and self._memory_kind == other._memory_kind
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def shape(self) -> Shape:
        return self._ids.shape

    @property
    def ndim(self) -> int:
        return self._ids.ndim

    def reshape(self, *shape: Any) -> PositionalSharding:
        return self._remake(self._devices, self._ids.reshape(*shape), self._memory_kind)

    def transpose(self, *axes: Any) -> PositionalSharding:
        return self._remake(self._devices, self._ids.transpose(*axes), self._memory_kind)

    @property
    def T(self) -> PositionalSharding:
        return self.transpose()

    def replicate(self, axis: int | None = None, keepdims: bool = True) -> PositionalSharding:
        """Merges the device sets along ``axis`` (all axes when None): those devices then hold copies."""
        union = np.frompyfunc(lambda a, b: tuple(sorted(set(a) | set(b))), 2, 1)
        axes = range(self.ndim) if axis is None else (axis % self.ndim,)
        merged = self._ids
        for ax in axes:  # the union is not reorderable for numpy, so reduce one axis at a time
            merged = np.asarray(union.reduce(merged, axis=ax, keepdims=True, dtype=object), dtype=object)
        if not keepdims:
            merged = merged.reshape([n for i, n in enumerate(merged.shape) if i not in axes])
        return self._remake(self._devices, merged, self._memory_kind)

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return self._devices

    @cached_property
    def is_fully_replicated(self) -> bool:
        return self.shape == (1,) * self.ndim

    def _check_rank(self, ndim: int) -> None:
        if ndim != self.ndim and not self.is_fully_replicated:
            raise ValueError(
                f"PositionalSharding of shape {self.shape} is only valid for values of rank {self.ndim}, but "
                f"was applied to a value of rank {ndim}."
            )

    def _tile_description(self, dim: int) -> str:
        return f"PositionalSharding axis {dim} of shape {self.shape}"

    def _to_hlo(self, ndim: int) -> xc.HloSharding:
        if self.is_fully_replicated:
            return xc.HloSharding.replicate()
        (set_size,) = {len(members) for members in self._ids.flat}
        dims = list(self.shape)
        if set_size > 1:
            dims.append(set_size)
        tiles = np.array([i for members in self._ids.flat for i in members], dtype=np.int64)
        subgroups = [_REPLICATED] if set_size > 1 else []
        if np.array_equal(tiles, np.arange(tiles.size)):  # print the compact iota form when it applies
            return xc.HloSharding.iota_tile(dims, [], [], subgroups)
        return xc.HloSharding.subgroup_with_device_ordering(tiles.reshape(dims), subgroups)

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> PositionalSharding:
        return self._remake(self._devices, self._ids, _check_memory_kind(kind, self._devices[0]))


def _make_positional(refs: tuple, shape: Shape, members: tuple, memory_kind: str | None) -> PositionalSharding:
    ids = np.empty(len(members), dtype=object)
    for i, m in enumerate(members):
        ids[i] = m
    return PositionalSharding._remake(tuple(lookup_devices(refs)), ids.reshape(shape), memory_kind)


class _DeviceIdSet:
    def __init__(self, platform: str, ids: tuple[int, ...]):
        self.platform, self.ids = platform, ids

    def __repr__(self) -> str:
        return f"{{{self.platform} {', '.join(map(str, self.ids))}}}"


# -- PmapSharding ----------------------------------------------------------------------------------------


class PmapSharding(Sharding):
    """pmap's placement: dimension ``sharded_dim`` is unstacked, one slice per device; or full copies.

    A pmap shard drops the sharded dimension: ``shard_shape((8, 3))`` is ``(3,)`` and the index of
    device ``i`` is ``(i, slice(None))``. Rebuilt from the seed's jax.sharding reference (jax 0.10 no
    longer ships it); the general pmap ``ShardingSpec`` (chunked dims, several mesh mappings) is not modelled.

    Examples:
        >>> PmapSharding.default((8, 3)).shard_shape((8, 3))
        (3,)
    """

    def __init__(self, devices: Sequence[Device] | np.ndarray, sharded_dim: int | None = 0, *,
                 memory_kind: str | None = None):
        self._devices = tuple(np.asarray(devices, dtype=object).flat)
        if not self._devices:
            raise ValueError("PmapSharding needs at least one device.")
        if len(set(self._devices)) != len(self._devices):
            raise ValueError(f"PmapSharding devices must be unique, got {list(self._devices)}.")
        if sharded_dim is not None and (not isinstance(sharded_dim, int) or sharded_dim < 0):
            raise ValueError(f"sharded_dim must be a non-negative int or None, got {sharded_dim!r}.")
        self.sharded_dim = sharded_dim
        self._memory_kind = _check_memory_kind(memory_kind, self._devices[0])
        self._hash = hash((PmapSharding, self._devices, sharded_dim, self._memory_kind))

    @classmethod
    def default(cls, shape: Sequence[int], sharded_dim: int | None = 0,
                devices: Sequence[Device] | None = None) -> PmapSharding:
        """The placement ``jax.pmap`` gives an input of ``shape`` mapped over ``sharded_dim``."""
        shape = _canonical_shape(shape)
        if sharded_dim is None:
            if devices is None:
                raise ValueError("PmapSharding.default with sharded_dim=None needs the devices to replicate over.")
            return cls(devices, None)
        if not 0 <= sharded_dim < len(shape):
            raise ValueError(f"sharded_dim {sharded_dim} is out of range for shape {shape}.")
        n = shape[sharded_dim]
        if devices is None:
            import jax

            devices = jax.local_devices()
        devices = list(devices)
        if n > len(devices):
            raise ValueError(f"Dimension {sharded_dim} of shape {shape} needs {n} devices, but only {len(devices)} are available.")
        return cls(devices[:n], sharded_dim)

    def __repr__(self) -> str:
        return f"PmapSharding(devices={np.array(self._devices)!r}, sharded_dim={self.sharded_dim}, memory_kind={self._memory_kind})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_pmap, (device_refs(self._devices), self.sharded_dim, self._memory_kind))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PmapSharding)
            and self._devices == other._devices
            and self.sharded_dim == other.sharded_dim
            and self._memory_kind == other._memory_kind
        )

    def __hash__(self) -> int:
        return self._hash

    @property
    def devices(self) -> np.ndarray:
        return np.array(self._devices, dtype=object)

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return self._devices

    @cached_property
    def is_fully_replicated(self) -> bool:
        return self.sharded_dim is None or len(self._devices) == 1

    def _check_rank(self, ndim: int) -> None:
        if self.sharded_dim is not None and self.sharded_dim >= ndim:
            raise ValueError(f"PmapSharding over dimension {self.sharded_dim} needs a value of rank > {self.sharded_dim}, got rank {ndim}.")

    def _to_hlo(self, ndim: int) -> xc.HloSharding:
        if self.is_fully_replicated:
            return xc.HloSharding.replicate()
        dims = [1] * ndim
        dims[self.sharded_dim] = len(self._devices)
        return xc.HloSharding.iota_tile(dims)

    def shard_shape(self, global_shape: Sequence[int]) -> Shape:
        shape = _canonical_shape(global_shape)
        if self.sharded_dim is None:
            return shape
        self._check_rank(len(shape))
        if shape[self.sharded_dim] != len(self._devices):
            raise ValueError(
                f"The sharded dimension must equal the number of devices of the PmapSharding: dimension "
                f"{self.sharded_dim} of shape {shape} has size {shape[self.sharded_dim]}, but there are "
                f"{len(self._devices)} devices."
            )
        return shape[: self.sharded_dim] + shape[self.sharded_dim + 1 :]

    def devices_indices_map(self, global_shape: Sequence[int]) -> Mapping[Device, Index]:
        shape = _canonical_shape(global_shape)
        self.shard_shape(shape)
        if self.sharded_dim is None:
            return types.MappingProxyType({d: (slice(None),) * len(shape) for d in self._devices})
        head = (slice(None),) * self.sharded_dim
        tail = (slice(None),) * (len(shape) - self.sharded_dim - 1)
        return types.MappingProxyType({d: head + (i,) + tail for i, d in enumerate(self._devices)})

    def addressable_devices_indices_map(self, global_shape: Sequence[int]) -> Mapping[Device, Index]:
        full = self.devices_indices_map(global_shape)
        return types.MappingProxyType({d: i for d, i in full.items() if _is_local(d)})

    def replica_ids(self, global_shape: Sequence[int]) -> Mapping[Device, int]:
        self.shard_shape(global_shape)
        replicated = self.sharded_dim is None
        return types.MappingProxyType({d: (i if replicated else 0) for i, d in enumerate(self._devices)})

    @property
    def memory_kind(self) -> str | None:
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> PmapSharding:
        return PmapSharding(self._devices, self.sharded_dim, memory_kind=kind)


def _make_pmap(refs: tuple, sharded_dim: int | None, memory_kind: str | None) -> PmapSharding:
    return PmapSharding(lookup_devices(refs), sharded_dim, memory_kind=memory_kind)
