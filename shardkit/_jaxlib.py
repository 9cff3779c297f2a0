"""Every private jax/jaxlib symbol shardkit uses, each behind one small function saying why.

jaxlib makes no API promise for these; keeping them here means a jaxlib upgrade breaks one file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxlib import xla_client as xc


def result_handler(aval: Any, sharding: xc.GSPMDSharding) -> Any:
    """jaxlib's handler that turns one output's per-device buffers into a global ``xc.ArrayImpl``.

    Private because of ``_skip_checks``: the executor built ``sharding`` from the executable's own output
    sharding, so jaxlib's per-call re-validation (about 10 us per output) would check nothing new.
    """
    return xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True)


def array_impl(aval: Any, sharding: xc.Sharding, buffers: Sequence[Any]) -> Any:
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


def jax_sharding_hlo(sharding: Any, ndim: int) -> tuple[tuple[Any, ...], xc.HloSharding]:
    """(device assignment, HloSharding) of any jax sharding: jax has no public HLO view of its shardings."""
    return tuple(sharding._device_assignment), sharding._to_xla_hlo_sharding(ndim)


def coordination_barrier(name: str, timeout_ms: int) -> None:
    """Waits until every process reaches the barrier ``name`` on jax's coordination service.

    jax exposes the distributed client only as ``jax._src.distributed.global_state.client``; its
    ``wait_at_barrier`` raises after ``timeout_ms`` instead of waiting forever on a missing peer.
    """
    from jax._src import distributed

    distributed.global_state.client.wait_at_barrier(name, timeout_ms)
