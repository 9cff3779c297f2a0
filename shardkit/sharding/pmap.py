"""PmapSharding: ``jax.pmap``'s placement (jax 0.4's ``jax.sharding`` kind)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from shardkit._jaxlib import HloSharding
from shardkit.caching import memoize
from shardkit.mesh import check_devices
from shardkit.sharding.base import Device, Sharding, canonical_shape, check_memory_kind


class PmapSharding(Sharding):
    """pmap's placement: dimension ``sharded_dim`` is unstacked, one slice per device; or full copies.

    A pmap shard drops the sharded dimension: ``shard_shape((8, 3))`` is ``(3,)`` and the index of
    device ``i`` is ``(i, slice(None))``. As jax 0.4 documented ``jax.sharding.PmapSharding`` (jax 0.10 no
    longer ships it); the general pmap ``ShardingSpec`` (chunked dims, several mesh mappings) is not modelled.

    Examples:
        >>> PmapSharding.default((8, 3)).shard_shape((8, 3))
        (3,)
    """

    def __init__(
        self, devices: Sequence[Device] | np.ndarray, sharded_dim: int | None = 0, *, memory_kind: str | None = None
    ):
        self._devices = check_devices(np.asarray(devices, dtype=object).flat, "PmapSharding devices")
        if sharded_dim is not None and (not isinstance(sharded_dim, int) or sharded_dim < 0):
            raise ValueError(f"sharded_dim must be a non-negative int or None, got {sharded_dim!r}.")
        self.sharded_dim = sharded_dim
        self._memory_kind = check_memory_kind(memory_kind, self._devices[0])

    @classmethod
    def default(
        cls, shape: Sequence[int], sharded_dim: int | None = 0, devices: Sequence[Device] | None = None
    ) -> PmapSharding:
        """The placement ``jax.pmap`` gives an input of ``shape`` mapped over ``sharded_dim``."""
        shape = canonical_shape(shape)
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
            raise ValueError(
                f"Dimension {sharded_dim} of shape {shape} needs {n} devices, but only {len(devices)} are available."
            )
        return cls(devices[:n], sharded_dim)

    def __repr__(self) -> str:
        devices = np.array(self._devices)
        return f"PmapSharding(devices={devices!r}, sharded_dim={self.sharded_dim}, memory_kind={self._memory_kind})"

    def _key(self) -> tuple[Any, ...]:
        return (self._devices, self.sharded_dim, self._memory_kind)

    @property
    def devices(self) -> np.ndarray:
        return np.array(self._devices, dtype=object)

    @property
    def device_assignment(self) -> tuple[Device, ...]:
        return self._devices

    @cached_property
    def is_fully_replicated(self) -> bool:
        return self.sharded_dim is None or len(self._devices) == 1

    @property
    def mapped_dims(self) -> tuple[int, ...]:
        """The unstacked dimension: each device's piece drops it, and its index there is an int."""
        return () if self.sharded_dim is None else (self.sharded_dim,)

    @memoize()
    def to_hlo(self, ndim: int) -> HloSharding:
        if self.sharded_dim is not None and self.sharded_dim >= ndim:
            raise ValueError(
                f"PmapSharding over dimension {self.sharded_dim} needs a value of rank > {self.sharded_dim}, got "
                f"rank {ndim}."
            )
        if self.is_fully_replicated:
            return HloSharding.replicate()
        dims = [1] * ndim
        dims[self.sharded_dim] = len(self._devices)
        return HloSharding.iota_tile(dims)
