"""Where jax or a library checks for jax's own concrete class, shardkit's object passes: its PartitionSpec is
jax's, its NamedSharding and SingleDeviceSharding subclass jax's, its ShapeDtypeStruct subclasses jax's. Each
call runs on shardkit's objects and on jax's, with equal values and the same sharding kind and spec."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest
from jax.sharding import AxisType

import shardkit as sk
from shardkit import P

F32 = np.float32
MESH = sk.make_mesh((4, 2), ("data", "model"))
JAX_MESH = MESH.to_jax()
VALUE = np.arange(16.0, dtype=F32).reshape(8, 2)


def placed(got, want):
    """Equal values, and shardings of the same jax kind and spec."""
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert isinstance(got.sharding, type(want.sharding)) and isinstance(want.sharding, jax.sharding.NamedSharding)
    assert got.sharding.spec == want.sharding.spec
    assert got.sharding.mesh.shape_tuple == want.sharding.mesh.shape_tuple


def both(spec, value=VALUE, mesh=MESH):
    """The value placed by shardkit on ``mesh`` and by jax on jax's copy of it."""
    return (
        sk.device_put(value, sk.NamedSharding(mesh, spec)),
        jax.device_put(value, jax.sharding.NamedSharding(mesh.to_jax(), spec)),
    )


def test_shardkit_s_classes_are_jax_s():
    s = sk.NamedSharding(MESH, P("data"))
    assert sk.P is jax.sharding.PartitionSpec
    assert isinstance(s, jax.sharding.NamedSharding) and isinstance(s, sk.Sharding)
    one = sk.SingleDeviceSharding(jax.devices()[0])
    assert isinstance(one, jax.sharding.SingleDeviceSharding) and isinstance(one, sk.Sharding)
    assert isinstance(sk.GSPMDSharding(jax.devices(), "{replicated}"), (jax.sharding.Sharding, sk.Sharding))
    sds = sk.ShapeDtypeStruct((8, 2), F32, sharding=s)
    assert isinstance(sds, jax.ShapeDtypeStruct) and sds.sharding is s
    assert jax.eval_shape(lambda a: a * 2, sds).shape == (8, 2)


def test_jax_named_sharding_takes_shardkit_s_mesh_and_spec():
    theirs = jax.sharding.NamedSharding(MESH, P("data"))
    assert theirs.spec == P("data") and theirs.mesh is MESH
    placed(jax.device_put(VALUE, theirs), jax.device_put(VALUE, jax.sharding.NamedSharding(JAX_MESH, P("data"))))


def test_shard_map_takes_shardkit_s_mesh_specs_and_arrays():
    def run(mesh, x):
        f = jax.shard_map(
            lambda a: jax.lax.psum(a, "model") * 2, mesh=mesh, in_specs=P("data", "model"), out_specs=P("data")
        )
        return f(x)

    mine, theirs = both(P("data", "model"))
    placed(run(MESH, mine), run(JAX_MESH, theirs))
    placed(jax.jit(lambda a: run(MESH, a))(mine), jax.jit(lambda a: run(JAX_MESH, a))(theirs))


@pytest.mark.parametrize(
    "fun",
    [lambda a: a * 2, lambda a: jnp.sin(a) @ a.T, lambda a: a.sum(axis=1), lambda a: (a + 1, a[:4])],
    ids=["scale", "matmul", "sum", "tuple"],
)
def test_jax_jit_results_over_shardkit_arrays_are_named_as_jax_s(fun):
    mine, theirs = both(P("data"))
    for got, want in zip(jax.tree.leaves(jax.jit(fun)(mine)), jax.tree.leaves(jax.jit(fun)(theirs))):
        placed(got, want)


def test_reshard_takes_shardkit_arrays_and_shardings():
    mesh = sk.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    mine, theirs = both(P("data"), mesh=mesh)
    placed(
        jax.sharding.reshard(mine, sk.NamedSharding(mesh, P("model"))),
        jax.sharding.reshard(theirs, jax.sharding.NamedSharding(mesh.to_jax(), P("model"))),
    )
    with jax.set_mesh(mesh):
        placed(jax.sharding.reshard(mine, P(None, "model")), jax.sharding.reshard(theirs, P(None, "model")))


def test_orbax_records_and_restores_shardkit_shardings(tmp_path, caplog):
    state = {
        "w": sk.device_put(VALUE, sk.NamedSharding(MESH, P("data", "model"))),
        "b": sk.device_put(VALUE[0], sk.NamedSharding(MESH, P("model"))),
    }
    reference = {k: jax.device_put(v, jax.sharding.NamedSharding(JAX_MESH, v.sharding.spec)) for k, v in state.items()}
    checkpointer = ocp.StandardCheckpointer()
    with caplog.at_level(logging.WARNING):
        for name, tree in [("mine", state), ("theirs", reference)]:
            checkpointer.save(tmp_path / name, tree)
            checkpointer.wait_until_finished()
    assert not [r for r in caplog.records if "not been implemented" in r.getMessage()]
    mine, theirs = (checkpointer.metadata(tmp_path / n).item_metadata.tree for n in ("mine", "theirs"))
    assert {k: v.sharding for k, v in mine.items()} == {k: v.sharding for k, v in theirs.items()}
    untargeted = checkpointer.restore(tmp_path / "mine")  # the saved layout, as for jax's
    for k, want in checkpointer.restore(tmp_path / "theirs").items():
        placed(untargeted[k], want)
    target = {k: sk.ShapeDtypeStruct(v.shape, v.dtype, sharding=sk.NamedSharding(MESH, P())) for k, v in state.items()}
    for k, got in checkpointer.restore(tmp_path / "mine", target).items():
        np.testing.assert_array_equal(np.asarray(got), np.asarray(state[k]))
        assert got.sharding == target[k].sharding


def test_jax_s_array_functions_take_shardkit_built_arrays_as_their_own():
    """One Array type: the functions of jax that take only jax's own Array (its C++ class) take the arrays shardkit
    builds, each against the same call on jax's arrays."""
    from jax.experimental import multihost_utils

    mine, theirs = both(P("data"))
    assert type(mine) is type(theirs) and mine.committed and theirs.committed

    def pieces(x):
        return [shard.data for shard in x.addressable_shards]

    placed(
        jax.make_array_from_single_device_arrays((8, 2), mine.sharding, pieces(mine)),
        jax.make_array_from_single_device_arrays((8, 2), theirs.sharding, pieces(theirs)),
    )
    for fn in (multihost_utils.global_array_to_host_local_array, multihost_utils.host_local_array_to_global_array):
        placed(fn(mine, MESH, P("data")), fn(theirs, JAX_MESH, P("data")))
    for tiled in (False, True):
        np.testing.assert_array_equal(
            multihost_utils.process_allgather(mine, tiled=tiled), multihost_utils.process_allgather(theirs, tiled=tiled)
        )
    target = sk.NamedSharding(MESH, P(None, "model"))
    moved, want = jax.device_put(mine, target), jax.device_put(theirs, target.to_jax(2))
    placed(moved, want)
    assert moved.committed and want.committed
    # and shardkit's own functions take jax's arrays
    placed(sk.make_array_from_single_device_arrays((8, 2), mine.sharding, pieces(theirs)), theirs)
    placed(sk.multihost.global_array_to_host_local_array(theirs, MESH, P("data")), theirs)


def test_equinox_filter_jit_takes_shardkit_built_arrays():
    """equinox.filter_jit itself (jax.jit's C++ dispatch) over a model and data sk.device_put placed, as over jax's."""
    import equinox as eqx

    model = eqx.nn.Linear(2, 4, key=jax.random.key(0))

    @eqx.filter_jit
    def step(model, x):
        return jax.vmap(model)(x).sum()

    mine, theirs = both(P("data"))
    sk_model = eqx.filter(model, eqx.is_array)
    placed_model = eqx.combine(sk.device_put(sk_model, sk.NamedSharding(MESH, P())), model)
    jax_model = eqx.combine(jax.device_put(sk_model, jax.sharding.NamedSharding(JAX_MESH, P())), model)
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(step(placed_model, mine)), np.asarray(step(jax_model, theirs)), rtol=1e-6)
