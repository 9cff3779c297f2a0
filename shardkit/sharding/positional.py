"""PositionalSharding: an array of devices shaped like the array's tiling (jax 0.4's ``jax.sharding`` kind)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from shardkit._jaxlib import HloSharding, OpShardingType
from shardkit.caching import memoize
from shardkit.mesh import check_devices
from shardkit.sharding.base import Device, Shape, Sharding, check_memory_kind


class PositionalSharding(Sharding):
    """An array of devices shaped like the array's tiling: piece ``i`` goes to the devices at position ``i``.

    ``replicate(axis)`` merges the device sets along an axis (those devices then hold copies);
    ``reshape``/``transpose`` rearrange the positions. As jax 0.4 documented
    ``jax.sharding.PositionalSharding`` (jax 0.10 no longer ships it).

    Examples:
        >>> s = PositionalSharding(jax.devices()).reshape(4, 2)
        >>> s.replicate(1).shard_shape((8, 2))
        (2, 2)
    """

    def __init__(self, devices: Sequence[Device] | np.ndarray, *, memory_kind: str | None = None):
        devices = np.asarray(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
        flat = check_devices(devices.flat, "PositionalSharding devices")
        ids = np.empty(devices.shape, dtype=object)
        for i, pos in enumerate(np.ndindex(devices.shape)):
            ids[pos] = (i,)
        self._init(flat, ids, check_memory_kind(memory_kind, flat[0]))

    def _init(self, devices: tuple[Device, ...], ids: np.ndarray, memory_kind: str | None) -> None:
        ids.flags.writeable = False
        self._devices = devices
        self._ids = ids  # each entry: the sorted positions (into _devices) that hold that piece
        self._memory_kind = memory_kind

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

    def _key(self) -> tuple[Any, ...]:
        return (self._devices, self._ids.shape, tuple(self._ids.flat), self._memory_kind)

    @classmethod
    def _from_key(
        cls, devices: tuple[Device, ...], shape: Shape, members: tuple, memory_kind: str | None
    ) -> PositionalSharding:
        ids = np.empty(len(members), dtype=object)
        for i, m in enumerate(members):
            ids[i] = m
        return cls._remake(devices, ids.reshape(shape), check_memory_kind(memory_kind, devices[0]))

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

    def replicate(self, axis: int | Sequence[int] | None = None, keepdims: bool = True) -> PositionalSharding:
        """Merges the device sets along ``axis`` (an int, a tuple of them, or None for all axes, as numpy's
        reductions take it): those devices then hold copies."""
        union = np.frompyfunc(lambda a, b: tuple(sorted(set(a) | set(b))), 2, 1)
        axes = self._axes(axis)
        merged = self._ids
        for ax in axes:  # the union is not reorderable for numpy, so reduce one axis at a time
            merged = np.asarray(union.reduce(merged, axis=ax, keepdims=True, dtype=object), dtype=object)
        if not keepdims:
            merged = merged.reshape([n for i, n in enumerate(merged.shape) if i not in axes])
        return self._remake(self._devices, merged, self._memory_kind)

    def _axes(self, axis: Any) -> tuple[int, ...]:
        if axis is None:
            return tuple(range(self.ndim))
        given = (axis,) if isinstance(axis, (int, np.integer)) else axis
        if not isinstance(given, (tuple, list)) or not all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in given
        ):
            raise TypeError(f"replicate's axis must be None, an int or a tuple of ints, got {axis!r}.")
        axes = []
        for a in given:
            if not -self.ndim <= a < self.ndim:
                raise np.exceptions.AxisError(  # a ValueError, as numpy raises it
                    f"replicate's axis {a} is out of bounds for a PositionalSharding of rank {self.ndim}."
                )
            axes.append(int(a) % self.ndim)
        if len(set(axes)) != len(axes):
            raise ValueError(f"replicate's axis {axis!r} repeats an axis.")
        return tuple(axes)

    @property
    def device_assignment(self) -> tuple[Device, ...]:
        return self._devices

    @cached_property
    def is_fully_replicated(self) -> bool:
        return self.shape == (1,) * self.ndim

    def _tile_description(self, dim: int) -> str:
        return f"PositionalSharding axis {dim} of shape {self.shape}"

    @memoize()
    def to_hlo(self, ndim: int) -> HloSharding:
        if self.is_fully_replicated:
            return HloSharding.replicate()
        if ndim != self.ndim:
            raise ValueError(
                f"PositionalSharding of shape {self.shape} is only valid for values of rank {self.ndim}, but "
                f"was applied to a value of rank {ndim}."
            )
        (set_size,) = {len(members) for members in self._ids.flat}
        dims = list(self.shape)
        if set_size > 1:
            dims.append(set_size)
        tiles = np.array([i for members in self._ids.flat for i in members], dtype=np.int64)
        subgroups = [OpShardingType.REPLICATED] if set_size > 1 else []
        if np.array_equal(tiles, np.arange(tiles.size)):  # print the compact iota form when it applies
            return HloSharding.iota_tile(dims, [], [], subgroups)
        return HloSharding.subgroup_with_device_ordering(tiles.reshape(dims), subgroups)


class _DeviceIdSet:
    def __init__(self, platform: str, ids: tuple[int, ...]):
        self.platform, self.ids = platform, ids

    def __repr__(self) -> str:
        return f"{{{self.platform} {', '.join(map(str, self.ids))}}}"
