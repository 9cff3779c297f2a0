"""GSPMDSharding: an XLA HLO sharding over an explicit device list, the form compiled programs report."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from shardkit import _jaxlib
from shardkit._jaxlib import HloSharding, OpSharding
from shardkit.dialects import mhlo
from shardkit.mesh import check_devices
from shardkit.sharding.base import Device, Sharding, check_memory_kind


def _as_hlo(op_sharding: HloSharding | OpSharding | str) -> HloSharding:
    if isinstance(op_sharding, str):
        op_sharding = mhlo.parse(op_sharding)
    if isinstance(op_sharding, (HloSharding, OpSharding)):
        return mhlo.one_value(op_sharding, "GSPMDSharding")
    raise TypeError(
        f"GSPMDSharding's op_sharding must be an HloSharding, OpSharding or HLO sharding string, got {op_sharding!r}."
    )


class GSPMDSharding(Sharding):
    """An XLA HLO sharding over an explicit device list (positions in the HLO refer to that list).

    Examples:
        >>> s = GSPMDSharding(jax.devices(), "{devices=[4,1,2]<=[8] last_tile_dim_replicate}")
        >>> s.shard_shape((8, 2))
        (2, 2)
    """

    def __init__(
        self,
        devices: Sequence[Device],
        op_sharding: HloSharding | OpSharding | str,
        *,
        memory_kind: str | None = None,
    ):
        self._devices = check_devices(np.asarray(devices, dtype=object).flat, "GSPMDSharding devices")
        self._hlo_sharding = hlo = _as_hlo(op_sharding)
        if hlo.is_manual() or hlo.is_unknown() or hlo.is_unreduced():
            raise ValueError(f"GSPMDSharding supports tiled, replicated and maximal shardings, got {hlo}.")
        if hlo.is_maximal() and not hlo.is_replicated():
            (position,) = hlo.tile_assignment_devices()
            if position >= len(self._devices):
                raise ValueError(
                    f"HLO sharding {hlo} names device position {position}, but only {len(self._devices)} devices "
                    "were given."
                )
        elif not hlo.is_replicated() and hlo.num_devices() != len(self._devices):
            raise ValueError(
                f"HLO sharding {hlo} spans {hlo.num_devices()} devices, but {len(self._devices)} were given."
            )
        self._memory_kind = check_memory_kind(memory_kind, self._devices[0])

    def __repr__(self) -> str:
        return f"GSPMDSharding({self._hlo_sharding!r}, memory_kind={self._memory_kind})"

    def _key(self) -> tuple[Any, ...]:
        return (self._devices, self._hlo_sharding, self._memory_kind)

    @property
    def hlo_sharding(self) -> HloSharding:
        return self._hlo_sharding

    @property
    def device_assignment(self) -> tuple[Device, ...]:
        return self._devices

    def _tile_description(self, dim: int) -> str:
        return f"the HLO sharding {self._hlo_sharding}"

    def to_hlo(self, ndim: int) -> HloSharding:
        mhlo.tiling(self._hlo_sharding, ndim)  # raises for a value of another rank
        return self._hlo_sharding

    @cached_property
    def is_fully_replicated(self) -> bool:
        return mhlo.is_replicated(self._hlo_sharding)

    @classmethod
    def from_jax(cls, sharding: Any, ndim: int) -> GSPMDSharding:
        """Any jax sharding as the HLO sharding it places a rank-``ndim`` value with, over its device assignment."""
        devices, hlo = _jaxlib.jax_sharding_hlo(sharding, ndim)
        return cls(devices, hlo, memory_kind=sharding.memory_kind)

    @classmethod
    def get_replicated(cls, devices: Sequence[Device], *, memory_kind: str | None = None) -> GSPMDSharding:
        return cls(devices, HloSharding.replicate(), memory_kind=memory_kind)
