"""shardkit.multihost against jax.experimental.multihost_utils, in one process (local mesh = global mesh)."""

import jax
import numpy as np
import pytest
from jax.experimental import multihost_utils

import shardkit as sk
from shardkit import P, multihost
from tests.jax_oracle import jax_mesh, jax_spec

DEVS = jax.devices()
MESH = sk.Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
DATA = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)


@pytest.mark.parametrize("spec", [P("x"), P("x", "y"), P(None, "y"), P(("x", "y")), P()])
def test_host_local_to_global_matches_jax(spec):
    got = multihost.host_local_array_to_global_array(DATA, MESH, spec)
    want = multihost_utils.host_local_array_to_global_array(DATA, jax_mesh(MESH), jax_spec(spec))
    assert got.shape == want.shape and got.sharding == sk.NamedSharding(MESH, spec)
    assert [s.index for s in got.addressable_shards] == [s.index for s in want.addressable_shards]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    again = multihost.host_local_array_to_global_array(got, MESH, spec)  # already laid out: buffers kept
    assert [s.data.unsafe_buffer_pointer() for s in again.addressable_shards] == [
        s.data.unsafe_buffer_pointer() for s in got.addressable_shards
    ]


def test_pytrees_and_spec_trees():
    tree = {"a": DATA, "b": [DATA[:4], DATA[0]]}
    out = multihost.host_local_array_to_global_array(tree, MESH, {"a": P("x"), "b": [P(), P("y")]})
    assert out["a"].sharding.spec == P("x") and out["b"][1].sharding.spec == P("y")
    same = multihost.global_array_to_host_local_array(out, MESH, {"a": P("x"), "b": [P(), P("y")]})
    assert same["a"] is out["a"]  # fully addressable arrays are already host-local (as in jax)
    one_spec = multihost.host_local_array_to_global_array([DATA, DATA], MESH, P("x"))
    assert all(a.sharding.spec == P("x") for a in one_spec)
    with pytest.raises(ValueError, match=r"`None` is not a valid input to the pspecs argument"):
        multihost.host_local_array_to_global_array(DATA, MESH, None)


def test_global_to_host_local_of_numpy_places_on_the_local_mesh():
    out = multihost.global_array_to_host_local_array(DATA, MESH, P("x"))
    assert out.sharding == sk.NamedSharding(MESH.local_mesh, P("x"))
    np.testing.assert_array_equal(np.asarray(out), DATA)


def test_process_allgather_matches_jax():
    x = sk.device_put(DATA, sk.NamedSharding(MESH, P("x", "y")))
    for tiled in (False, True):
        for value in (x, DATA, np.float32(3)):
            want = multihost_utils.process_allgather(value, tiled=tiled)  # jax takes shardkit-built arrays
            got = multihost.process_allgather(value, tiled=tiled)
            assert isinstance(got, np.ndarray) and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    tree = multihost.process_allgather({"x": x, "n": [DATA]}, tiled=True)
    np.testing.assert_array_equal(tree["n"][0], DATA)


def test_the_cross_process_gather_step_replicates_through_sk_jit():
    """process_allgather's many-process path: a compiled identity onto every device (here on one process)."""
    for s in (sk.NamedSharding(MESH, P("x", "y")), sk.GSPMDSharding(DEVS, "{devices=[4,2]<=[8]}")):
        r = multihost._replicated(sk.device_put(DATA, s))
        assert r.is_fully_replicated and r.sharding.device_set == s.device_set
        for shard in r.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), DATA)
