"""Every jaxlib runtime symbol shardkit uses (``jaxlib.xla_client`` and jax's private modules), each behind one
small name that says why.

jaxlib makes no API promise for ``xla_client``; keeping every use here means a jaxlib upgrade breaks one file.
The MLIR bindings (``jaxlib.mlir``) are jaxlib's public Python API and are used directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import xla_client as xc

# -- HLO shardings: XLA's own description of a layout, the form every shardkit sharding derives from ----------

HloSharding = xc.HloSharding  # tile assignments, their text form and their equality are XLA's, not re-implemented
OpSharding = xc.OpSharding  # the proto form executables report their shardings in
OpShardingType = xc.OpSharding.Type


def hlo_from_proto(proto: OpSharding) -> HloSharding:
    return xc.HloSharding.from_proto(proto)


def tuple_sharding(elements: Sequence[HloSharding], shapes: Sequence[tuple[int, ...]]) -> HloSharding:
    """The tuple sharding of a multi-result op (XLA wants the tuple's shape; the element type does not matter)."""
    shape = xc.Shape.tuple_shape([xc.Shape.array_shape(np.dtype("float32"), s) for s in shapes])
    return xc.HloSharding.tuple_sharding(shape, list(elements))


# -- the jaxlib side of arrays ----------------------------------------------------------------------------------

JaxlibSharding = xc.GSPMDSharding


def gspmd_sharding(devices: Sequence[Any], hlo: HloSharding, memory_kind: str | None) -> JaxlibSharding:
    """jaxlib's sharding for an HLO sharding over a device list: what every global jaxlib array of shardkit's
    carries (``execute_sharded`` takes arrays of any sharding; this one needs no mesh)."""
    return xc.GSPMDSharding(xc.DeviceList(tuple(devices)), hlo, memory_kind=memory_kind)


def result_handler(aval: Any, sharding: JaxlibSharding) -> Any:
    """jaxlib's handler that turns one output's per-device buffers into a global ``xc.ArrayImpl``.

    Private because of ``_skip_checks``: the executor built ``sharding`` from the executable's own output
    sharding, so jaxlib's per-call re-validation (about 10 us per output) would check nothing new.
    """
    return xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True)


def array_impl(aval: Any, sharding: Any, buffers: Sequence[Any]) -> Any:
    """A global ``xc.ArrayImpl`` over single-device arrays already in the sharding's addressable device order.

    Private because of ``_skip_checks``: the checking constructor re-validates and re-orders every buffer
    (about 14 us against 4 us), and shardkit's Array has already run its own checks with its own messages.
    """
    return xc.ArrayImpl(aval, sharding, list(buffers), committed=True, _skip_checks=True)


def per_device_arrays(impl: Any) -> list[Any]:
    """The single-device arrays of a jaxlib array, in its sharding's addressable device order.

    ``jax.Array.addressable_data(i)`` is the public way, one array and one deleted-check per call; the data
    paths need the whole list at once.
    """
    return impl._arrays


def put_host_pieces(aval: Any, sharding: JaxlibSharding, pieces: Sequence[np.ndarray], devices: Sequence[Any]) -> Any:
    """A global jaxlib array from one host piece per device, placed without copying (jax's ``device_put`` copies;
    jaxlib's zero-copy placement aliases 64-byte-aligned host memory on CPU)."""
    return xc.batched_device_put(
        aval, sharding, list(pieces), list(devices), True, False, xc.HostBufferSemantics.ZERO_COPY
    )


def collect_garbage() -> None:
    """Drops the Python references jaxlib still holds for device buffers already freed (it defers them, since a
    buffer may be freed on a thread without the GIL; jit calls run this too). Host memory that a zero-copy
    placement aliased is only released then."""
    xc._xla.collect_garbage()


def copy_to_devices(buffers: Sequence[Any], devices: Sequence[Any], shardings: Sequence[JaxlibSharding]) -> list[Any]:
    """Copies each single-device buffer to its device, device to device, in one batch (jax's public
    ``device_put`` goes through its own sharding and dispatch machinery for each)."""
    return xc.batched_copy_array_to_devices_with_sharding(
        list(buffers),
        [xc.DeviceList((d,)) for d in devices],
        list(shardings),
        [xc.ArrayCopySemantics.ALWAYS_COPY] * len(buffers),
    )


def jax_sharding_hlo(sharding: Any, ndim: int) -> tuple[tuple[Any, ...], HloSharding]:
    """(device assignment, HloSharding) of any jax sharding: jax has no public HLO view of its shardings."""
    return tuple(sharding._device_assignment), sharding._to_xla_hlo_sharding(ndim)


# -- compiling and running -----------------------------------------------------------------------------------

CompileOptions = xc.CompileOptions


def device_list(devices: Sequence[Any]) -> Any:
    return xc.DeviceList(tuple(devices))


def coordination_barrier(name: str, timeout_ms: int) -> None:
    """Waits until every process reaches the barrier ``name`` on jax's coordination service.

    jax exposes the distributed client only as ``jax._src.distributed.global_state.client``; its
    ``wait_at_barrier`` raises after ``timeout_ms`` instead of waiting forever on a missing peer.
    """
    from jax._src import distributed

    distributed.global_state.client.wait_at_barrier(name, timeout_ms)
