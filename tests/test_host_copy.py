"""Recycled host buffers (``shardkit.host_copy``): reused once nothing references them, never while anything
does (an Array placed zero-copy on them, a jax view, a shard, a gathered host value or any numpy view)."""

from __future__ import annotations

import gc

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P, host_copy

MESH = sk.make_mesh((8,), ("x",))
ROWS = sk.NamedSharding(MESH, P("x"))
BIG = np.arange(2 * host_copy.RECYCLE_MIN_BYTES, dtype=np.float32).reshape(-1, 512)  # 1 MiB pieces x 8


def pointers(x: sk.Array) -> list[int]:
    return [s.data.unsafe_buffer_pointer() for s in x.addressable_shards]


def test_buffers_are_reused_once_unreferenced():
    first = pointers(sk.device_put(BIG, ROWS))  # the Array is dropped right away
    gc.collect()
    again = sk.device_put(BIG + 1, ROWS)
    assert sorted(pointers(again)) == sorted(first)
    np.testing.assert_array_equal(np.asarray(again), BIG + 1)


@pytest.mark.parametrize(
    "hold",
    [
        lambda x: x,
        lambda x: jax.make_array_from_single_device_arrays(x.shape, x.sharding, x._arrays),
        lambda x: x.addressable_shards[3].data,
        lambda x: np.asarray(x.addressable_shards[5].data)[1:],
        lambda x: sk.device_put(x, sk.NamedSharding(MESH, P(None, "x"))),  # host reshard: reads, then new pieces
    ],
    ids=["array", "an Array over its pieces", "shard", "numpy view of a shard", "resharded copy"],
)
def test_referenced_buffers_are_never_handed_out(hold):
    x = sk.device_put(BIG, ROWS)
    kept = hold(x)
    expected = np.asarray(kept).copy()
    del x
    gc.collect()
    for i in range(3):  # every later request of the same size must get other memory
        y = sk.device_put(np.full_like(BIG, -i), ROWS)
        np.testing.assert_array_equal(np.asarray(kept), expected)
        del y


def test_gathered_host_values_are_recycled_only_when_dropped():
    x = sk.device_put(BIG, sk.NamedSharding(MESH, P(None, "x")))
    value = sk.device_get(x)
    view = value[3:5]
    del value
    gc.collect()
    for _ in range(2):
        sk.device_get(sk.device_put(BIG * 0, x.sharding))
    np.testing.assert_array_equal(view, BIG[3:5])


def test_the_limit_and_clear_caches_bound_what_is_kept():
    recycler = host_copy._Recycler(limit=3 * host_copy.RECYCLE_MIN_BYTES)
    held = [recycler.take(host_copy.RECYCLE_MIN_BYTES) for _ in range(5)]  # only the first two fit the limit
    assert recycler._held == 2 * (host_copy.RECYCLE_MIN_BYTES + host_copy.ALIGNMENT)
    assert recycler.take(host_copy.RECYCLE_MIN_BYTES) is not held[0]  # still in use
    first, address = held[0], held[1].ctypes.data
    del held
    assert recycler.take(host_copy.RECYCLE_MIN_BYTES).ctypes.data == address  # `first` is still referenced
    assert recycler.take(host_copy.RECYCLE_MIN_BYTES).ctypes.data != first.ctypes.data
    recycler.clear()  # drops the idle buffers only
    assert recycler._held == first.nbytes
    del first
    recycler.clear()
    assert recycler._held == 0
    small = recycler.take(1024)
    assert small.nbytes == 1024 + host_copy.ALIGNMENT and recycler._held == 0  # small ones are never kept
    roomy = host_copy._Recycler(limit=1 << 40)
    many = [roomy.take(host_copy.RECYCLE_MIN_BYTES) for _ in range(host_copy.RECYCLE_PER_SIZE + 2)]
    assert roomy._held == host_copy.RECYCLE_PER_SIZE * many[0].nbytes  # the rest are plain allocations


def test_aligned_empty_is_aligned_and_shaped():
    for shape, dtype in [((3, 5), np.float64), ((1 << 18,), np.int8), ((), np.complex64), ((0, 4), np.float32)]:
        a = host_copy.aligned_empty(shape, dtype)
        assert a.shape == shape and a.dtype == dtype
        assert a.size == 0 or a.ctypes.data % host_copy.ALIGNMENT == 0
        assert a.flags.c_contiguous and a.flags.writeable


def test_jax_puts_do_not_pin_shardkit_memory():
    x = sk.device_put(BIG, ROWS)
    before = pointers(x)
    j = jax.device_put(BIG, ROWS.to_jax(2))  # jax's own memory: unrelated to the recycler
    del x
    gc.collect()
    assert sorted(pointers(sk.device_put(BIG, ROWS))) == sorted(before)
    del j
