"""Ordinary jax programs under sk.jit, against jax.jit on the same programs: host callbacks and effects, jax
transforms and nesting, uneven constraints, shard_map, and jax objects going in and out of shardkit."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

import shardkit as sk
from shardkit import P
from tests.child import run_python

F32 = np.float32
DEVS = jax.devices()
MESH = sk.make_mesh((4, 2), ("x", "y"))
JP = jax.sharding.PartitionSpec


def ns(*spec):
    return sk.NamedSharding(MESH, P(*spec))


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, F32), np.asarray(b, F32), rtol=2e-6, atol=2e-6)


X = np.random.default_rng(0).normal(size=(8, 4)).astype(F32)
W = np.random.default_rng(1).normal(size=(4, 2)).astype(F32)


# -- host callbacks and effects ------------------------------------------------------------------------


def _with_callbacks(log):
    def f(a):
        jax.debug.print("sum={s}", s=a.sum())
        jax.debug.callback(lambda v: log.append(("callback", float(v))), a.max())
        b = jax.pure_callback(lambda t: np.asarray(t) * 3, jax.ShapeDtypeStruct(a.shape, a.dtype), a)
        c = io_callback(
            lambda t: (log.append("ordered"), np.asarray(t) + 1)[1],
            jax.ShapeDtypeStruct(a.shape, a.dtype),
            b,
            ordered=True,
        )
        d = io_callback(lambda t: np.asarray(t) - 1, jax.ShapeDtypeStruct(a.shape, a.dtype), c)
        return d * 2

    return f


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
@pytest.mark.parametrize("sharding", [None, ns("x")], ids=["one device", "8 devices"])
def test_host_callbacks_and_ordered_effects_run_as_under_jax(partitioner, sharding, capfd):
    x = np.arange(8.0, dtype=F32)
    mine, theirs = [], []
    f = sk.jit(_with_callbacks(mine), in_shardings=sharding, out_shardings=sharding, partitioner=partitioner)
    y = f(x)
    want = jax.jit(_with_callbacks(theirs))(x)
    jax.effects_barrier()
    close(y, want)
    assert sorted(mine, key=str) == sorted(theirs, key=str) == [("callback", 7.0), "ordered"]  # one unordered
    assert capfd.readouterr().out.count("sum=28.0") == 2
    compiled = f.lower(x).compile()  # through the staged API too
    close(compiled(x), want)


def test_ordered_effects_stay_ordered_across_calls():
    order = []
    f = sk.jit(
        lambda a: io_callback(
            lambda t: (order.append(int(t)), t)[1], jax.ShapeDtypeStruct((), np.int32), a, ordered=True
        )
    )
    for i in range(5):
        f(np.int32(i))
    jax.effects_barrier()
    assert order == [0, 1, 2, 3, 4]


def test_callbacks_through_the_persistent_cache(tmp_path):
    # A new process loads the executable from the cache: the callback must still be handed to it.
    script = textwrap.dedent(f"""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
        import jax, numpy as np, shardkit as sk
        from shardkit import P
        sk.executor.set_cache_dir({str(tmp_path)!r})
        mesh = sk.make_mesh((4, 2), ("x", "y"))
        got = []
        def f(a):
            jax.debug.callback(lambda v: got.append(float(v)), a.sum())
            return jax.pure_callback(lambda t: np.asarray(t) + 1, jax.ShapeDtypeStruct(a.shape, a.dtype), a) * 2
        y = sk.jit(f, out_shardings=sk.NamedSharding(mesh, P("x")))(np.arange(8.0, dtype=np.float32))
        jax.effects_barrier()
        print(np.asarray(y).tolist(), got, len(os.listdir({str(tmp_path)!r})))
    """)
    runs = [run_python(script) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout == "[2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0] [28.0] 1\n"


# -- jax transforms and nesting -------------------------------------------------------------------------


def _loss(a, b):
    return jnp.tanh(a @ b).sum()


SK_LOSS = sk.jit(_loss, in_shardings=(ns("x", "y"), None))
JAX_LOSS = jax.jit(_loss, in_shardings=(ns("x", "y").to_jax(), None))


def test_grad_vmap_and_jax_jit_of_an_sk_jit_function():
    close(jax.grad(SK_LOSS)(X, W), jax.grad(JAX_LOSS)(X, W))
    close(jax.grad(SK_LOSS, argnums=1)(X, W), jax.grad(JAX_LOSS, argnums=1)(X, W))
    close(jax.vmap(sk.jit(lambda v: jnp.sin(v).sum()))(X), jax.vmap(jax.jit(lambda v: jnp.sin(v).sum()))(X))
    close(jax.jit(lambda a, b: SK_LOSS(a, b) * 2)(X, W), jax.jit(lambda a, b: JAX_LOSS(a, b) * 2)(X, W))


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
def test_sk_jit_inside_sk_jit_constrains_like_a_nested_jit(partitioner):
    outer = sk.jit(lambda a, b: SK_LOSS(a * 2, b) + 1, partitioner=partitioner)
    close(outer(X, W), jax.jit(lambda a, b: JAX_LOSS(a * 2, b) + 1)(X, W))
    text = outer.lower(X, W).as_text()
    if partitioner == "gspmd":
        assert 'custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[4,2]<=[8]}"}' in text
        return
    # the inner function is called as jax calls a nested jit, its in_shardings a constraint on its argument
    assert "call @_loss(%1, %arg1)" in text
    assert 'sdy.sharding_constraint %arg0 <@mesh, [{"x"}, {"y"}]>' in text


def test_scan_and_checkpoint_bodies_calling_sk_jit():
    row_sum = sk.jit(lambda r: jnp.sum(r * 2))
    got = jax.lax.scan(lambda c, r: (c + row_sum(r), None), 0.0, X)[0]
    close(got, jax.lax.scan(lambda c, r: (c + jnp.sum(r * 2), None), 0.0, X)[0])
    close(jax.grad(jax.checkpoint(lambda a: SK_LOSS(a, W)))(X), jax.grad(jax.checkpoint(lambda a: JAX_LOSS(a, W)))(X))


def test_ops_from_shardkit_helpers_are_located_at_the_user_s_line():
    def f(a):
        return sk.with_sharding_constraint(a * 2, ns("x"))  # this line

    text = sk.jit(f).lower(X).as_text(debug_info=True)
    line = f.__code__.co_firstlineno + 1
    assert f'"{__file__}":{line}' in text and "constraint.py" not in text


def test_with_sharding_constraint_inside_plain_jax_jit_is_jax_s_own():
    f = jax.jit(lambda a: sk.with_sharding_constraint(a * 2, ns("x", "y")))
    y = f(X)
    close(y, X * 2)
    assert y.sharding.is_equivalent_to(ns("x", "y").to_jax(), 2)
    assert "sdy.sharding_constraint" in f.lower(X).as_text()


# -- uneven constraints ------------------------------------------------------------------------------------


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
def test_constraints_on_dimensions_that_do_not_divide(partitioner):
    mesh = sk.make_mesh((4, 2), ("data", "model"))
    h = np.random.default_rng(2).normal(size=(8, 16)).astype(F32)
    w = np.random.default_rng(3).normal(size=(16, 1001)).astype(F32)
    s = sk.NamedSharding(mesh, P("data", "model"))

    def mine(h, w):
        return sk.with_sharding_constraint(h @ w, s).sum(axis=0)

    def theirs(h, w):
        return jax.lax.with_sharding_constraint(h @ w, s.to_jax()).sum(axis=0)

    f = sk.jit(mine, partitioner=partitioner)
    close(f(h, w), jax.jit(theirs)(h, w))
    text = f.lower(h, w).as_text()
    if partitioner == "shardy":
        assert 'sdy.sharding_constraint %0 <@mesh, [{"data"}, {"model"}]> : tensor<8x1001xf32>' in text
    else:
        assert 'mhlo.sharding = "{devices=[4,2]<=[8]}"' in text
    with pytest.raises(sk.IndivisibleError):  # jit arguments and Arrays keep jax's divisibility rule
        sk.jit(lambda a: a, in_shardings=s).lower(np.ones((8, 1001), F32))


# -- shard_map with a shardkit mesh ----------------------------------------------------------------------


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
def test_shard_map_inside_sk_jit(partitioner):
    def body(t):
        return jax.lax.psum(t * 2, "x")

    with MESH:
        f = sk.jit(jax.shard_map(body, in_specs=JP("x"), out_specs=JP()), partitioner=partitioner)
        y = f(np.arange(8.0, dtype=F32))
        want = jax.jit(jax.shard_map(body, in_specs=JP("x"), out_specs=JP()))(np.arange(8.0, dtype=F32))
    close(y, want)
    explicit = sk.jit(jax.shard_map(body, mesh=MESH.to_jax(), in_specs=JP("x"), out_specs=JP()))
    close(explicit(np.arange(8.0, dtype=F32)), want)


# -- jax objects in, shardkit objects out ------------------------------------------------------------------


def test_sk_arrays_go_into_jax_without_copies():
    a = sk.device_put(X, ns("x", "y"))
    for result in (jax.jit(lambda t: t * 2)(a), jnp.sin(a), jnp.add(a, 1), jnp.asarray(a)):
        assert type(result) is type(a) and result.sharding.is_equivalent_to(a.sharding, 2)
    pointers = [s.data.unsafe_buffer_pointer() for s in jnp.asarray(a).addressable_shards]
    assert pointers == [s.data.unsafe_buffer_pointer() for s in a.addressable_shards]  # no copy
    moved = jax.device_put(a, DEVS[3])  # jax's functions give jax Arrays, as on jax's own
    assert type(moved) is type(a) and moved.sharding == jax.sharding.SingleDeviceSharding(DEVS[3])
    close(jax.grad(lambda t: (t * 2).sum())(a), np.full(X.shape, 2.0))
    jax.debug.visualize_array_sharding(a)  # jax's own picture of the equivalent jax sharding


def test_jax_meshes_and_shardings_are_accepted_and_converted():
    jmesh = MESH.to_jax()
    js = jax.sharding.NamedSharding(jmesh, JP("x", "y"))
    assert sk.NamedSharding(jmesh, JP("x")) == ns("x")
    assert (
        sk.Mesh.from_jax(jmesh) is MESH and sk.AbstractMesh.from_jax(MESH.abstract_mesh.to_jax()) is MESH.abstract_mesh
    )
    assert sk.NamedSharding.from_jax(js) == ns("x", "y") and ns("x", "y").to_jax() == js
    single = jax.sharding.SingleDeviceSharding(DEVS[2])
    assert sk.SingleDeviceSharding.from_jax(single).to_jax() == single
    assert sk.device_put(X, js).sharding == ns("x", "y")
    y = sk.jit(lambda a: a * 2, in_shardings=js, out_shardings=jax.sharding.NamedSharding(jmesh, JP("y")))(X)
    assert y.sharding == ns("y")
    z = sk.jit(lambda a: sk.with_sharding_constraint(a, js) + 1)(X)
    close(z, X + 1)
    gspmd = sk.GSPMDSharding.from_jax(js, 2)
    assert gspmd.is_equivalent_to(ns("x", "y"), 2)


# -- conveniences -------------------------------------------------------------------------------------


def test_bare_partition_specs_under_with_mesh():
    with MESH:
        f = sk.jit(
            lambda a: sk.with_sharding_constraint(a * 2, P("y")), in_shardings=P("x"), out_shardings=P(None, "y")
        )
        y = f(X)
        assert y.sharding == ns(None, "y") and f.lower(X).in_shardings[0][0] == ns("x")
        assert sk.device_put(X, P("x")).sharding == ns("x")
    with pytest.raises(ValueError, match="bare PartitionSpec P\\('x',\\), which names mesh axes of no mesh"):
        sk.jit(lambda a: a, in_shardings=P("x"))(X)


def test_static_argnames():
    f = sk.jit(lambda a, n, *, scale=1.0: a * n * scale, static_argnames=("n", "scale"))
    close(f(X, n=3, scale=2.0), X * 6)
    close(f(X, 3), X * 3)  # a static name is static by position too, as jax infers it
    g = sk.jit(lambda a, n: a * n, static_argnums=1)
    close(g(X, n=4), X * 4)  # and a static position by name
    assert len(f._calls) == 2


def test_device_put_of_pytrees():
    tree = {"w": X, "b": [np.zeros(2, F32), 3.0]}
    out = sk.device_put(tree, {"w": ns("x"), "b": None})
    assert out["w"].sharding == ns("x") and isinstance(out["b"][0], sk.Array) and out["b"][1].weak_type
    one = sk.device_put(tree, ns())
    assert all(leaf.sharding == ns() for leaf in jax.tree.leaves(one, is_leaf=lambda x: isinstance(x, sk.Array)))
    theirs = jax.device_put(tree, ns().to_jax())
    assert jax.tree.structure(theirs) == jax.tree.structure(one, is_leaf=lambda x: isinstance(x, sk.Array))
    with pytest.raises(ValueError, match="not a prefix of the value's tree"):
        sk.device_put(tree, {"w": ns()})


# -- behaviours jax documented ------------------------------------------------------------------------------


def test_mesh_is_a_context_decorator():
    @MESH
    def inside():
        return sk.current_mesh(), jax.sharding.get_mesh()

    mine, theirs = inside()
    assert mine is MESH and theirs == MESH.to_jax()
    assert sk.current_mesh().empty


def test_gda_from_batched_callback_with_devices():
    data = np.arange(64.0).reshape(8, 8)
    calls = []

    def put(batch):
        calls.append([(index, tuple(d.id for d in devices)) for index, devices in batch])
        return [jax.device_put(data[index], d) for index, devices in batch for d in devices]

    gda = sk.compat.GlobalDeviceArray.from_batched_callback_with_devices((8, 8), MESH, P("x"), put)
    np.testing.assert_array_equal(np.asarray(gda), data)
    assert len(calls) == 1 and [ids for _, ids in calls[0]] == [(0, 1), (2, 3), (4, 5), (6, 7)]


def test_positional_replicate_takes_numpy_axes():
    pos = sk.PositionalSharding(DEVS).reshape(2, 2, 2)
    assert pos.replicate((0, 2)).shape == (1, 2, 1) and pos.replicate((0, -1), keepdims=False).shape == (2,)
    assert pos.replicate((0, 2)) == pos.replicate(0).replicate(2)
    with pytest.raises(ValueError, match="axis 3 is out of bounds for a PositionalSharding of rank 3"):
        pos.replicate(3)
    with pytest.raises(ValueError, match="repeats an axis"):
        pos.replicate((1, -2))
    with pytest.raises(TypeError, match="must be None, an int or a tuple of ints"):
        pos.replicate(1.5)


def test_typed_prng_keys_and_their_data_both_work():
    f = sk.jit(lambda a, k: jax.random.normal(k, a.shape) + a)
    want = jax.random.normal(jax.random.key(0), (4,)) + 1
    close(f(np.ones(4, F32), jax.random.key(0)), want)
    g = sk.jit(lambda a, k: jax.random.normal(jax.random.wrap_key_data(k), a.shape) + a)
    close(g(np.ones(4, F32), jax.random.key_data(jax.random.key(0))), want)


def test_value_errors_where_jax_raises_them():
    with pytest.raises(ValueError, match="Mesh axis names must be str, got 1"):
        sk.Mesh(np.array(DEVS).reshape(4, 2), ("x", 1))
    with pytest.raises(ValueError, match="cannot contain a nested tuple"):
        P(("x", ("y",)))
    with pytest.raises(ValueError, match="cannot contain a nested tuple"):
        jax.sharding.PartitionSpec(("x", ("y",)))
