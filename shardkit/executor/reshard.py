"""Resharding an Array on its devices: one compiled program per (source, target, shape, dtype, weak type).

A piece of the target layout that no device holds whole must be assembled from the pieces that overlap it.
Through the host that is a copy out and a copy in per piece (on a GPU, two PCIe trips); as a program it is
XLA's collectives between the devices (all-to-all, collective-permute, all-gather), which is also what jax
compiles for it. jax traces an identity; shardkit lowers it with the source sharding on the argument and the
target sharding on the result, and compiles it with its own executor. The program is cached per layout
pair, shape and dtype (compiling costs tens of milliseconds, a call about as much as any other call).

One SPMD program has one device assignment, so the source is re-expressed over the target's device order
(the same pieces on the same devices, as a GSPMDSharding) when the two list the same devices in different
orders. Devices sets that differ, several processes, memory kinds that differ, pmap's mapped dimensions
and single-device ("maximal") placements within a device list stay with ``shardkit.array.reshard``'s own
paths.

When the program runs (``use_program``): on every platform but CPU. On CPU "device" memory is host memory,
and the host path (recycled buffers, one copy per piece) measured 1.3-17x faster than the program at every
size from 4 KiB to 256 MiB, for rows to columns and 2-D transposes on 8 devices, over one device order and
across two (``benchmarks/bench_reshard.py``, docs/arrays.md), so there the program runs only when asked for
with ``prefer="program"``.

``shardkit.array`` sits below lowering and the executor and cannot import this module; importing the
executor installs ``reshard_on_devices`` as array's device reshard (``array.use_device_reshard``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shardkit import _jaxlib
from shardkit.array import Array, new_array, use_device_reshard
from shardkit.caching import memoize
from shardkit.dialects import mhlo
from shardkit.executor.compile import compile_lowered
from shardkit.executor.compiled import Compiled
from shardkit.lowering import JitOptions, Lowering, ShapeDtypeStruct
from shardkit.sharding import GSPMDSharding, Sharding


def _identity(a: Any) -> Any:
    return a


@memoize(maxsize=256)
def program(source: Sharding, target: Sharding, shape: tuple[int, ...], dtype: np.dtype, weak_type: bool) -> Compiled:
    """The compiled identity from ``source`` to ``target`` (both over one device assignment)."""
    lowering = Lowering(_identity, JitOptions(in_shardings=source, out_shardings=target))
    lowered = lowering.lower((ShapeDtypeStruct(shape, dtype, sharding=source, weak_type=weak_type),), {})
    return Compiled(lowered, compile_lowered(lowered))


def supported(source: Sharding, target: Sharding, ndim: int) -> bool:
    """Whether one program can take an Array from ``source`` to ``target``."""
    if source.device_set != target.device_set or source.num_devices == 1 or source.memory_kind != target.memory_kind:
        return False
    if not source.is_fully_addressable or source.mapped_dims or target.mapped_dims:
        return False
    return not any(_on_one_device(s.to_hlo(ndim)) for s in (source, target))


def _on_one_device(hlo: Any) -> bool:
    """A maximal HLO sharding: the whole value on one position of a device list."""
    return hlo.is_maximal() and not hlo.is_replicated()


def use_program(source: Sharding, target: Sharding) -> bool:
    """The rule (module docstring): the program on every platform but CPU, where the host path is faster."""
    return target.device_assignment[0].platform != "cpu"


def over_devices(x: Array, devices: tuple[Any, ...]) -> Array:
    """``x`` with its sharding re-expressed over ``devices`` (the same devices in another order): an Array over
    the same buffers, listed in the new order."""
    source = x.sharding
    if source.device_assignment == devices:
        return x
    position = {d: i for i, d in enumerate(devices)}
    hlo = mhlo.permuted(source.to_hlo(x.ndim), [position[d] for d in source.device_assignment])
    sharding = GSPMDSharding(devices, hlo, memory_kind=source.memory_kind)
    by_device = dict(zip(source.addressable_device_assignment, _jaxlib.per_device_arrays(x)))
    buffers = [by_device[d] for d in sharding.addressable_device_assignment]
    return new_array(x.shape, x.dtype, sharding, buffers, x.weak_type)


def reshard_on_devices(x: Array, target: Sharding, prefer: str = "rule") -> Array | None:
    """``x`` laid out as ``target`` by a compiled program; None where one program cannot do it or, with
    ``prefer="rule"``, where ``use_program`` says the host path is faster."""
    if not supported(x.sharding, target, x.ndim):
        return None
    if prefer == "rule" and not use_program(x.sharding, target):
        return None
    x = over_devices(x, target.device_assignment)
    return program(x.sharding, target, x.shape, x.dtype, x.weak_type)(x)


use_device_reshard(reshard_on_devices)
