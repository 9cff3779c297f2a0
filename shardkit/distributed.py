"""Many processes, one program: a thin layer over jax's distributed runtime.

shardkit never brings its own transport: ``initialize`` is ``jax.distributed.initialize`` (the coordination
service, plus gloo collectives on CPU or NCCL on GPU), so meshes can span the devices of every process.

Failure behaviour comes from that runtime and is bounded by the timeouts given here: a peer that never
arrives fails ``initialize`` after ``initialization_timeout`` seconds, and a peer that dies is detected after
``heartbeat_timeout_seconds``; in both cases jaxlib terminates the surviving processes with the message
"Terminating process because the JAX distributed service detected fatal errors" (it does not raise a Python
exception). ``sync_global_devices`` in :mod:`shardkit.multihost` raises on its own timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: int | Sequence[int] | None = None,
    *,
    initialization_timeout: int = 300,
    heartbeat_timeout_seconds: int = 100,
    shutdown_timeout_seconds: int = 300,
    **kwargs: Any,
) -> None:
    """Joins this process to the distributed runtime: ``jax.distributed.initialize`` with the same arguments.

    Must run before anything touches jax's backend (``sk.devices()``, ``sk.make_mesh``, ...).

    Examples:
        >>> sk.distributed.initialize("127.0.0.1:1234", num_processes=2, process_id=0)  # doctest: +SKIP
    """
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
        local_device_ids=local_device_ids,
        initialization_timeout=initialization_timeout,
        heartbeat_timeout_seconds=heartbeat_timeout_seconds,
        shutdown_timeout_seconds=shutdown_timeout_seconds,
        **kwargs,
    )


def shutdown() -> None:
    """Leaves the distributed runtime (``jax.distributed.shutdown``)."""
    jax.distributed.shutdown()


def is_initialized() -> bool:
    return jax.distributed.is_initialized()


def process_index() -> int:
    """This process's index among ``process_count()`` processes (0 when not distributed)."""
    return jax.process_index()


def process_count() -> int:
    return jax.process_count()


def devices(backend: str | None = None) -> list[Any]:
    """Every device of every process (jax's Device objects, so shardkit meshes interoperate with jax)."""
    return jax.devices(backend)


def local_devices() -> list[Any]:
    """The devices this process can address."""
    return jax.local_devices()
