"""compat.GlobalDeviceArray: the GDA interface jax documented, mapped onto Array as the migration guide maps it."""

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.compat import GlobalDeviceArray
from tests.jax_oracle import jax_named

DEVS = jax.devices()
MESH = sk.Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
DATA = np.arange(64 * 32).reshape(64, 32)


def test_gda_doc_example_from_callback():
    gda = GlobalDeviceArray.from_callback(DATA.shape, MESH, P("x", "y"), lambda index: DATA[index])
    assert isinstance(gda, GlobalDeviceArray) and isinstance(gda.array, sk.Array)  # a view of one jax Array
    assert gda.shape == (64, 32) and gda.ndim == 2 and gda.size == 64 * 32 and gda.dtype == np.int32
    assert gda.local_shards[0].data.shape == (16, 16)
    assert gda.local_shards[0].index == (slice(0, 16), slice(0, 16))
    assert gda.mesh is MESH and gda.mesh_axes == P("x", "y")
    assert not gda.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(gda), DATA)


def test_gda_maps_to_make_array_from_callback_like_the_migration_guide():
    gda = GlobalDeviceArray.from_callback(DATA.shape, MESH, ["x", None], lambda index: DATA[index])
    want = jax.make_array_from_callback(DATA.shape, jax_named(sk.NamedSharding(MESH, P("x"))), lambda i: DATA[i])
    assert [(s.device, s.index, s.replica_id) for s in gda.global_shards] == [
        (s.device, s.index, s.replica_id) for s in want.global_shards
    ]
    for i, s in enumerate(want.addressable_shards):
        np.testing.assert_array_equal(np.asarray(gda.local_data(i)), np.asarray(s.data))
    assert gda.sharding == sk.NamedSharding(MESH, P("x", None))


def test_gda_constructor_from_device_buffers():
    s = sk.NamedSharding(MESH, P("x"))
    buffers = [jax.device_put(DATA[i], d) for d, i in s.addressable_devices_indices_map(DATA.shape).items()]
    gda = GlobalDeviceArray(DATA.shape, MESH, P("x"), buffers[::-1])
    np.testing.assert_array_equal(np.asarray(gda), DATA)
    assert [s.device for s in gda.local_shards] == list(MESH.devices.flat)
    with pytest.raises(ValueError, match=r"Expected 8 per-device arrays"):
        GlobalDeviceArray(DATA.shape, MESH, P("x"), buffers[:3])


def test_gda_from_batched_callback_asks_once_for_every_distinct_index():
    asked = []

    def cb(indices):
        asked.append(indices)
        return [DATA[i] for i in indices]

    gda = GlobalDeviceArray.from_batched_callback(DATA.shape, MESH, P(None, "y"), cb)
    assert len(asked) == 1 and len(asked[0]) == 2
    np.testing.assert_array_equal(np.asarray(gda), DATA)
    replicated = GlobalDeviceArray.from_callback(DATA.shape, MESH, P(), lambda i: DATA[i])
    assert replicated.is_fully_replicated


def test_a_gda_goes_where_its_array_goes_as_the_gda_doc_example_runs():
    """The GDA page's example: a pjit (sk.jit) of ``x @ x.T`` over a GDA; the function sees the Array, and its
    output is an Array (jax.Array replaced the GDA outputs)."""
    gda = GlobalDeviceArray.from_callback(DATA.shape, MESH, P("x", "y"), lambda index: DATA[index])
    f = sk.jit(lambda x: x @ x.T, out_shardings=sk.NamedSharding(MESH, P("y", "x")))
    with MESH:
        out = f(gda)
    assert isinstance(out, sk.Array) and out.shape == (64, 64)
    assert out.addressable_shards[0].data.shape == (32, 16)
    np.testing.assert_array_equal(np.asarray(out), DATA @ DATA.T)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: x + 1)(gda)), DATA + 1)  # jax takes it too
    np.testing.assert_array_equal(np.asarray(jax.numpy.negative(gda)), -DATA)
    again = jax.tree.map(lambda a: a, {"g": gda})["g"]
    assert isinstance(again, GlobalDeviceArray) and again.array is gda.array
    assert (
        gda.block_until_ready() is gda
        and repr(gda) == "GlobalDeviceArray(shape=(64, 32), dtype=int32, mesh_axes=P('x', 'y'))"
    )
    gda.delete()
    assert gda.is_deleted()
