"""The ``Sharding`` base class: what a kind implements, and the index math every kind gets from it.

Every kind describes its placement in one canonical form, an XLA ``HloSharding`` (a tile assignment over
positions in the sharding's device list), and everything else is derived from that form once, here:
``devices_indices_map``, ``shard_shape``, replica ids and ``is_equivalent_to``.

Worked example (the one every derivation below follows). ``NamedSharding(mesh 4x2 ('x','y'), P('y'))``
on a rank-2 array: 'y' (size 2) shards dim 0, 'x' (size 4) is unused and so replicates. The tile
assignment is ``[2, 1, 4]`` = (tiles of dim 0, tiles of dim 1, copies) over the mesh positions
``iota([4, 2]).transpose(1, 0)`` = ``[0, 2, 4, 6, 1, 3, 5, 7]``: tile (0, 0) lives on positions 0, 2, 4, 6
(replica ids 0..3 in device order) and tile (1, 0) on positions 1, 3, 5, 7. That is the HLO text
``{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}``.
"""

from __future__ import annotations

import abc
import itertools
import types
import weakref
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any, NamedTuple

import jax
import numpy as np

from shardkit import _jaxlib
from shardkit._jaxlib import HloSharding
from shardkit.caching import memoize, on_clear
from shardkit.dialects import mhlo
from shardkit.dialects.sdy import SdyMesh, SdyTensorSharding, hlo_to_sdy
from shardkit.mesh import AbstractMesh, Mesh, device_refs, is_local, lookup_devices
from shardkit.partition_spec import PartitionSpec

Shape = tuple[int, ...]
Index = tuple[Any, ...]
Device = Any


class IndivisibleError(ValueError):
    """An array dimension is not divisible by the number of tiles the sharding cuts it into."""

    def __init__(self, message: str, *, dim: int, size: int, parts: int, shape: Shape):
        super().__init__(message)
        self.dim, self.size, self.parts, self.shape = dim, size, parts, shape


def canonical_shape(shape: Sequence[int]) -> Shape:
    """``shape`` as a tuple of Python ints: TypeError unless it is a sequence of ints, ValueError for a negative one."""
    if not isinstance(shape, (Sequence, np.ndarray)) or isinstance(shape, str):
        raise TypeError(f"An array shape is a sequence of ints, got {shape!r}.")
    shape = tuple(shape)
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool):
            raise TypeError(f"An array shape is a sequence of ints, got {shape!r}.")
        if d < 0:
            raise ValueError(f"Array dimensions must be non-negative, got shape {shape!r}.")
    return tuple(int(d) for d in shape)


def check_memory_kind(kind: str | None, device: Device) -> str | None:
    """The device's default memory kind for None; the kind itself when the device can address it."""
    if kind is not None and not isinstance(kind, str):
        raise TypeError(f"memory_kind must be a str or None, got {kind!r}.")
    if device is None:
        return kind
    if kind is None:
        return device.default_memory().kind
    known = [m.kind for m in device.addressable_memories()]
    if kind not in known:
        raise ValueError(f"Memory kind {kind!r} is unknown to device {device}: it can address {', '.join(known)}.")
    return kind


class _KindMeta(abc.ABCMeta):
    """``class Mine(Sharding)`` makes ``Mine`` a kind: a subclass of jax's ``Sharding`` base given ``Sharding``'s
    methods by ``kind`` (jaxlib's classes take one base class, so it cannot derive from both)."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        if globals().get("Sharding") not in bases:  # Sharding itself, or a class that does not derive from it
            return super().__new__(mcls, name, bases, namespace, **kwargs)
        if bases != (Sharding,):
            raise TypeError(f"A Sharding kind has one base class, Sharding; {name} has {bases}.")
        return kind(type(jax.sharding.Sharding)(name, (jax.sharding.Sharding,), namespace))


class Sharding(metaclass=_KindMeta):
    """How an array is laid out across devices: what every shardkit kind is (``isinstance`` says so).

    A kind subclasses jax's own class for it where jax has one that jaxlib lets it subclass (a shardkit
    ``NamedSharding`` is a ``jax.sharding.NamedSharding``, so every jax or library check for one takes it),
    else jax's ``Sharding`` base (``class Mine(Sharding)`` does that). jaxlib's classes take one base class, so
    no kind derives from this one: ``kind`` registers each here and copies these methods onto it, as jax's own
    ``use_cpp_class`` copies Python methods onto its C++ classes.

    What a kind implements:

    - ``device_assignment``: the devices that HLO positions refer to, in order;
    - ``to_hlo(ndim)``: its HloSharding for a value of rank ``ndim`` (ValueError for a rank it cannot describe);
    - ``is_fully_replicated`` and ``__repr__``;
    - ``_key()``: the values that make it what it is, its memory kind last; equality, hashing, pickling,
      ``memory_kind`` and ``with_memory_kind`` are derived from it (``_from_key`` rebuilds a sharding from a
      key: by default the constructor's positional arguments, then ``memory_kind=``).

    What a kind may override (the default in brackets):

    - ``to_sdy(ndim)``: its Shardy mesh and tensor sharding [a mesh derived from the tile assignment];
    - ``to_jax(ndim)``: jax's equivalent sharding [jaxlib's GSPMDSharding of ``to_hlo``];
    - ``abstract_key(ndim)``: what lowered text depends on, devices forgotten [kind, HLO text, device count and,
      for a kind with a ``mesh``, the mesh's axis names, sizes and types];
    - ``is_concrete`` [True] and ``bind(devices)`` [itself]: shardings over an AbstractMesh name no devices
      until lowering binds them;
    - ``unconstrained_dims`` [none] and ``with_unconstrained_dim(dim)`` [not supported]: dimensions left to
      the compiler;
    - ``mapped_dims`` [none]: dimensions a device's piece drops (pmap's mapped dimension);
    - ``_tile_description(dim)``: what cuts dimension ``dim``, for error messages;
    - ``mesh`` and ``spec`` [None]: the mesh and PartitionSpec of a kind that places values by mesh axes, as
      jax's NamedSharding has them (so no caller asks which kind a sharding is).

    What every kind gets from those: ``device_set``, ``num_devices``, ``addressable_devices``,
    ``is_fully_addressable``, ``shard_shape``, ``devices_indices_map``, ``addressable_devices_indices_map``,
    ``replica_ids``, ``is_equivalent_to``, and ``==``, ``hash`` and pickling from ``_key`` (a kind of one of jax's
    concrete classes keeps jax's ``==`` and ``hash``, which compare the same values: see ``kind``).
    """

    mesh: Mesh | AbstractMesh | None
    spec: PartitionSpec | None

    # -- what each kind implements -------------------------------------------------------------------------

    @property
    def device_assignment(self) -> tuple[Device, ...]:
        """The devices, in the order positions of the HLO tile assignment refer to them."""
        raise NotImplementedError

    def to_hlo(self, ndim: int) -> HloSharding:
        """The HloSharding of a rank-``ndim`` value (positions index ``device_assignment``)."""
        raise NotImplementedError

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        raise NotImplementedError

    def _key(self) -> tuple[Any, ...]:
        """What makes this sharding what it is, as ``_from_key`` takes it back, the memory kind last. Devices
        and HLO shardings in it pickle as (platform, id) and text, since jaxlib's objects do not pickle, and an
        HLO sharding compares as the placement it describes (any two replicated ones alike, as
        ``mhlo.equivalent`` says)."""
        raise NotImplementedError

    @classmethod
    def _from_key(cls, *key: Any) -> Sharding:
        """The sharding ``key`` describes: the constructor's positional arguments, then the memory kind."""
        *args, memory_kind = key
        return cls(*args, memory_kind=memory_kind)

    # -- from ``_key``: the memory kind, equality, hashing and pickling ---------------------------------------

    @property
    def memory_kind(self) -> str | None:
        return self._identity()[-1]

    def with_memory_kind(self, kind: str) -> Sharding:
        """The same placement in memory ``kind`` (ValueError when a device cannot address it)."""
        return self._from_key(*self._key()[:-1], kind)

    # Memoised in the instance's __dict__ by hand: functools.cached_property takes a lock per first use (Python
    # 3.11), which tripled the cost of hashing a fresh sharding on the call path.
    def _identity(self) -> tuple[Any, ...]:
        found = self.__dict__.get("_identity_memo")
        if found is None:
            found = self.__dict__["_identity_memo"] = (type(self), *map(_placement, self._key()))
        return found

    def __hash__(self) -> int:
        found = self.__dict__.get("_hash_memo")
        if found is None:
            found = self.__dict__["_hash_memo"] = hash(self._identity())
        return found

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return isinstance(other, Sharding) and hash(self) == hash(other) and self._identity() == other._identity()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), tuple(map(_portable, self._key()))))

    # -- what a kind may override --------------------------------------------------------------------------

    def to_sdy(self, ndim: int) -> tuple[SdyMesh, SdyTensorSharding]:
        """The Shardy mesh this sharding lives on and its tensor sharding of a rank-``ndim`` value (referring to
        the mesh by the symbol name jax would give it)."""
        return hlo_to_sdy(self.to_hlo(ndim), ndim)

    def to_jax(self, ndim: int | None = None) -> Any:
        """jax's sharding that places a rank-``ndim`` value's pieces as this one does."""
        if ndim is None:
            raise ValueError(f"{type(self).__name__}.to_jax needs the array's rank: its HLO sharding depends on it.")
        return _jaxlib.gspmd_sharding(self.device_assignment, self.to_hlo(ndim), self.memory_kind)

    def abstract_key(self, ndim: int) -> Any:
        """The sharding with its devices forgotten: what the lowered text of a rank-``ndim`` value depends on. A
        kind bound to a mesh lowers to its ``sdy.mesh`` (axis names and sizes), so its mesh's abstract form is
        part of the key: two meshes of one shape with other axis names never share a lowering."""
        mesh = None if self.mesh is None else self.mesh.axes_mesh
        return (type(self), repr(self.to_hlo(ndim)), self.num_devices, mesh, self.memory_kind)

    @property
    def is_concrete(self) -> bool:
        """Whether the sharding names its devices (False over an AbstractMesh)."""
        return True

    def bind(self, devices: Sequence[Device]) -> Sharding:
        """The sharding with its positions bound to ``devices`` (the computation's device assignment)."""
        return self

    @property
    def unconstrained_dims(self) -> tuple[int, ...]:
        """The dimensions whose sharding is left to the compiler."""
        return ()

    def with_unconstrained_dim(self, dim: int) -> Sharding:
        """This sharding for a value with one more dimension, at ``dim``, left to the compiler (how ``vmap``
        batches a sharding constraint)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot leave a dimension to the compiler; vmap of with_sharding_constraint "
            f"needs a NamedSharding, got {self}."
        )

    @property
    def mapped_dims(self) -> tuple[int, ...]:
        """Dimensions that each device's piece drops: their size is the number of pieces, indices are ints."""
        return ()

    def _tile_description(self, dim: int) -> str:
        return "the sharding's tiles"

    # -- what jax asks of a Sharding (jax.sharding.Sharding's interface, from the hooks above) ---------------

    @property
    def _device_assignment(self) -> tuple[Device, ...]:
        return self.device_assignment

    @cached_property
    def _internal_device_list(self) -> Any:
        return _jaxlib.device_list(self.device_assignment)

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> HloSharding:
        return self.to_hlo(num_dimensions)

    def _to_sdy_sharding(self, num_dimensions: int, modify_wrt_axis_types: bool = False) -> Any:
        return self.to_jax(num_dimensions)._to_sdy_sharding(num_dimensions, modify_wrt_axis_types)

    @property
    def _is_concrete(self) -> bool:
        return self.is_concrete

    def check_compatible_aval(self, aval_shape: Sequence[int]) -> None:
        """ValueError unless the sharding describes a value of this rank (jax asks before it lowers or places)."""
        self.to_hlo(len(aval_shape))

    # -- derived, shared by every kind -------------------------------------------------------------------

    @cached_property
    def device_set(self) -> frozenset[Device]:
        """Every device the sharding spans, including other processes' devices."""
        return frozenset(self.device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self.device_assignment)

    @cached_property
    def addressable_devices(self) -> frozenset[Device]:
        """The devices of ``device_set`` that this process can address."""
        return frozenset(self.addressable_device_assignment)

    @cached_property
    def addressable_device_assignment(self) -> tuple[Device, ...]:
        """``device_assignment`` restricted to this process's devices, in order."""
        return tuple(d for d in self.device_assignment if is_local(d))

    @cached_property
    def is_fully_addressable(self) -> bool:
        return len(self.addressable_devices) == len(self.device_set)

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

    def _memoized(self, derive: Any, shape: Sequence[int]) -> Any:
        """``derive(self, shape)``, remembered on the instance."""
        memo = self._memo
        try:
            return memo[derive, shape]
        except (KeyError, TypeError):
            shape = canonical_shape(shape)
            out = memo[derive, shape] = derive(self, shape)
            return out

    @cached_property
    def _memo(self) -> dict[tuple[Any, Shape], Any]:
        key = id(self)

        def forget(ref: weakref.ref) -> None:
            if _MEMO_OWNERS.get(key) is ref:  # not a newer sharding that reuses the id
                del _MEMO_OWNERS[key]

        _MEMO_OWNERS[key] = weakref.ref(self, forget)
        return {}

    def is_equivalent_to(self, other: jax.sharding.Sharding, ndim: int) -> bool:
        """Whether both place the same pieces of an ``ndim``-rank array on the same devices; ``other`` may be
        any jax Sharding (shardkit's are too), read through jax's Sharding interface.

        As in jax: the HLO shardings agree (any two fully replicated ones do), the memory kinds agree and
        the device lists are equal in order; shardings over abstract meshes compare without devices. A
        sharding that describes no value of rank ``ndim`` is a ValueError, as where jax places a value.
        """
        if not isinstance(other, jax.sharding.Sharding):
            raise TypeError(f"is_equivalent_to needs a Sharding, got {other!r} of type {type(other).__name__}.")
        if isinstance(ndim, bool) or not isinstance(ndim, (int, np.integer)):
            raise TypeError(f"is_equivalent_to's ndim must be a rank (an int >= 0), got {ndim!r}.")
        if ndim < 0:
            raise ValueError(f"is_equivalent_to's ndim must be a rank (an int >= 0), got {ndim!r}.")
        ndim = int(ndim)
        if self is other:
            return True
        if self.memory_kind != other.memory_kind:
            return False
        if self.is_concrete and other._is_concrete:
            if self.device_assignment != tuple(other._device_assignment):
                return False
        elif self.is_concrete != other._is_concrete:
            return False
        try:
            mine = self.to_hlo(ndim)
            theirs = other.to_hlo(ndim) if isinstance(other, Sharding) else _jax_hlo(other, ndim)
        except ValueError as e:
            raise ValueError(f"is_equivalent_to(other, ndim={ndim}): {e}") from None
        return mhlo.equivalent(mine, theirs)


def _jax_hlo(sharding: jax.sharding.Sharding, ndim: int) -> HloSharding:
    """A jax sharding's HLO form for a rank-``ndim`` value, ValueError for another rank, as jax's own rank check
    (``check_compatible_aval``) says; that check reads a GSPMDSharding's tiles, which aborts the process for a
    tuple or mesh-axes sharding, so those are checked by shardkit first (``mhlo.one_value``)."""
    if isinstance(sharding, jax.sharding.NamedSharding):  # jax's conversion indexes its spec by ndim unchecked
        sharding.check_compatible_aval((1,) * ndim)  # and its rank check reads only the spec's length
        return sharding._to_xla_hlo_sharding(ndim)
    hlo = mhlo.one_value(sharding._to_xla_hlo_sharding(ndim), "is_equivalent_to")
    if hlo.is_tiled() and not hlo.is_maximal():
        mhlo.tiling(hlo, ndim)
    return hlo


_SHARED_DUNDERS = ("__eq__", "__hash__", "__reduce__")
_EQUALITY = ("__eq__", "__hash__")


def kind(cls: type) -> type:
    """Class decorator: ``cls`` (a subclass of a jax sharding class) becomes a shardkit ``Sharding`` kind.

    It gets the methods of ``Sharding`` it does not define itself (overriding those of its jax base, so that
    shardkit's index math and pickling hold for every kind), ``mesh`` and ``spec`` of None where its jax base has
    none, and is registered as a ``Sharding``; jax looks a subclass of one of its concrete classes up as that class.

    Equality and hashing are shardkit's (from ``_key``), except for a kind that subclasses one of jax's concrete
    classes (``NamedSharding``, ``SingleDeviceSharding``): jax's rule decides there, which compares the same
    values as ``_key`` holds (mesh, spec, memory kind; device, memory kind), so a shardkit sharding and jax's of one
    placement are equal both ways and hash alike, and jax's caches see one placement.
    """
    (base,) = cls.__bases__
    for name, value in vars(Sharding).items():
        if (name.startswith("__") and name not in _SHARED_DUNDERS) or name.startswith("_abc") or name in vars(cls):
            continue  # the kind's own, or the class machinery of this one
        if name in _EQUALITY and base is not jax.sharding.Sharding:
            continue  # jax's concrete class's own equality
        setattr(cls, name, value)
    for name in ("mesh", "spec"):
        if not hasattr(cls, name):
            setattr(cls, name, None)
    if base is jax.sharding.Sharding:
        cls.__new__ = _new_with_cpp_half
    else:
        _jaxlib.register_sharding_subclass(cls, base)
    Sharding.register(cls)
    return cls


def _new_with_cpp_half(cls: type, *args: Any, **kwargs: Any) -> Any:
    self = jax.sharding.Sharding.__new__(cls)
    jax.sharding.Sharding.__init__(self)  # the C++ half of a jax Sharding, which jax's C++ fast paths read
    return self


# -- identity helpers -----------------------------------------------------------------------------------


def _placement(value: Any) -> Any:
    """A key value as it compares: an HLO sharding as the pieces it places (every replicated one alike)."""
    if isinstance(value, HloSharding) and mhlo.is_replicated(value):
        return _REPLICATED
    return value


_REPLICATED = HloSharding.replicate()


class _Pickled(NamedTuple):
    """A key value jaxlib cannot pickle, as a pickle carries it: ``what`` is "device", "devices" or "hlo"."""

    what: str
    data: Any


def _portable(value: Any) -> Any:
    if isinstance(value, jax.Device):
        return _Pickled("device", device_refs([value]))
    if isinstance(value, tuple) and value and isinstance(value[0], jax.Device):
        return _Pickled("devices", device_refs(value))
    if isinstance(value, HloSharding):
        return _Pickled("hlo", repr(value))
    return value


def _restored(value: Any) -> Any:
    if not isinstance(value, _Pickled):
        return value
    if value.what == "hlo":
        return mhlo.parse(value.data)
    devices = tuple(lookup_devices(value.data))
    return devices[0] if value.what == "device" else devices


def _rebuild(kind: type[Sharding], key: tuple[Any, ...]) -> Sharding:
    return kind._from_key(*map(_restored, key))


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


def _parts(sharding: Sharding, shape: Shape) -> tuple[list[int], int, HloSharding]:
    """(tiles per dimension, copies per tile, the HloSharding) of a value of ``shape``."""
    hlo = sharding.to_hlo(len(shape))
    tiling = mhlo.tiling(hlo, len(shape))
    if tiling is None:
        return [1] * len(shape), sharding.num_devices, hlo
    parts, copies = tiling
    return parts, copies, hlo


@memoize()
def _shard_shape(sharding: Sharding, shape: Shape) -> Shape:
    shape = canonical_shape(shape)
    parts, _, _ = _parts(sharding, shape)
    mapped = sharding.mapped_dims
    out = []
    for dim, (size, p) in enumerate(zip(shape, parts)):
        if dim in mapped:
            if size != p:
                raise ValueError(
                    f"A mapped dimension must equal the number of devices it is mapped over: dimension {dim} of "
                    f"shape {shape} has size {size}, but there are {p} devices."
                )
            continue
        quotient, remainder = divmod(size, p)
        if remainder:
            raise IndivisibleError(
                f"Dimension {dim} of shape {shape} has size {size}, which is not divisible by {p}, the number "
                f"of pieces {sharding._tile_description(dim)} cut it into. Pad the dimension to a multiple of "
                f"{p} or shard it over fewer devices.",
                dim=dim,
                size=size,
                parts=p,
                shape=shape,
            )
        out.append(quotient)
    return tuple(out)


@memoize()
def _indices_by_position(sharding: Sharding, shape: Shape) -> tuple[Index, ...]:
    """The index of the piece at each position of the device assignment."""
    shard = _shard_shape(sharding, shape)
    shape = canonical_shape(shape)
    parts, copies, hlo = _parts(sharding, shape)
    mapped = sharding.mapped_dims
    sizes = iter(shard)
    per_dim = []
    for dim, p in enumerate(parts):
        if dim in mapped:
            per_dim.append(list(range(p)))
            continue
        size = next(sizes)
        per_dim.append([slice(None)] if p == 1 else [slice(i * size, (i + 1) * size) for i in range(p)])
    tiles = list(itertools.product(*per_dim))
    n = sharding.num_devices
    if len(tiles) == 1:
        return (tiles[0],) * n
    # tile_assignment_devices() lists positions tile-major, copies minor: entry k holds tile k // copies.
    tile_of_position = np.empty(n, dtype=np.int64)
    tile_of_position[np.asarray(hlo.tile_assignment_devices(), dtype=np.int64)] = np.arange(n) // copies
    return tuple(map(tiles.__getitem__, tile_of_position.tolist()))


@memoize()
def _devices_indices_map(sharding: Sharding, shape: Shape) -> Mapping[Device, Index]:
    return types.MappingProxyType(dict(zip(sharding.device_assignment, _indices_by_position(sharding, shape))))


@memoize()
def _addressable_indices_map(sharding: Sharding, shape: Shape) -> Mapping[Device, Index]:
    full = _devices_indices_map(sharding, shape)
    if sharding.is_fully_addressable:
        return full
    return types.MappingProxyType({d: full[d] for d in sharding.addressable_device_assignment})


def index_key(index: Index) -> tuple[Any, ...]:
    """A hashable form of an index (slices are not hashable before Python 3.12)."""
    return tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)


@memoize()
def _replica_ids(sharding: Sharding, shape: Shape) -> Mapping[Device, int]:
    seen: dict[tuple[Any, ...], int] = {}
    out = {}
    for device, index in zip(sharding.device_assignment, _indices_by_position(sharding, shape)):
        key = index_key(index)
        out[device] = seen.get(key, 0)
        seen[key] = out[device] + 1
    return types.MappingProxyType(out)
