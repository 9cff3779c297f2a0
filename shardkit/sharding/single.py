"""SingleDeviceSharding: the whole array on one device."""

from __future__ import annotations

from typing import Any

import jax

from shardkit._jaxlib import HloSharding
from shardkit.dialects.sdy import SdyDim, SdyMesh, SdyTensorSharding
from shardkit.mesh import check_device
from shardkit.sharding.base import Device, check_memory_kind, kind


@kind
class SingleDeviceSharding(jax.sharding.SingleDeviceSharding):
    """The whole array on one device (a ``jax.sharding.SingleDeviceSharding``, as ``NamedSharding`` is jax's).

    Examples:
        >>> SingleDeviceSharding(jax.devices()[0]).shard_shape((8, 2))
        (8, 2)
    """

    def __init__(self, device: Device, *, memory_kind: str | None = None):
        device = check_device(device, "SingleDeviceSharding's device")
        super().__init__(device, memory_kind=check_memory_kind(memory_kind, device))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"

    def _key(self) -> tuple[Any, ...]:
        return (self._device, self._memory_kind)

    @property
    def device(self) -> Device:
        return self._device

    @property
    def device_assignment(self) -> tuple[Device, ...]:
        return (self._device,)

    def to_hlo(self, ndim: int) -> HloSharding:
        return HloSharding.replicate()

    def to_sdy(self, ndim: int) -> tuple[SdyMesh, SdyTensorSharding]:
        """The empty mesh ``<[]>``, as jax lowers a single-device sharding."""
        mesh = SdyMesh(())
        return mesh, SdyTensorSharding(mesh.default_name(), (SdyDim(),) * ndim)

    def to_jax(self, ndim: int | None = None) -> jax.sharding.SingleDeviceSharding:
        return jax.sharding.SingleDeviceSharding(self._device, memory_kind=self._memory_kind)

    @classmethod
    def from_jax(cls, sharding: jax.sharding.SingleDeviceSharding) -> SingleDeviceSharding:
        (device,) = sharding.device_set
        return cls(device, memory_kind=sharding.memory_kind)

    @property
    def is_fully_replicated(self) -> bool:
        return True
