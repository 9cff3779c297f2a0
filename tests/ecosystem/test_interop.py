"""jax's objects into shardkit and shardkit's into jax, each case against jax.jit (or jax's own function) on the
same inputs: shardkit's arrays are jax's own (a pytree leaf jax's functions take), a shardkit Sharding is a jax
Sharding, and jax's Arrays and ShapeDtypeStructs are read by ``sk.jit`` as jax reads them."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P

F32 = np.float32
MESH = sk.make_mesh((4, 2), ("data", "model"))
S = sk.NamedSharding(MESH, P("data"))
JS = S.to_jax(2)
VALUE = np.arange(16.0, dtype=F32).reshape(8, 2)


def sk_x():
    return sk.device_put(VALUE, S)


def jax_x():
    return jax.device_put(VALUE, JS)


def same(got, want):
    """Equal values, and the same placement (shardkit's sharding compared with jax's by what it places where)."""
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.sharding.is_equivalent_to(want.sharding, got.ndim)


# -- shardkit's arrays are jax's: leaves of jax's trees -------------------------------------------------------


def test_an_array_is_a_jax_array_and_a_leaf():
    x = sk_x()
    assert isinstance(x, jax.Array)
    assert jax.tree.structure({"w": x, "b": [x]}) == jax.tree.structure({"w": jax_x(), "b": [jax_x()]})
    assert jax.tree.leaves({"w": x}) == [x]
    assert type(x) is type(jax_x()) and x.sharding is S  # jax's own Array, shardkit's sharding
    assert jax.typeof(x) == jax.typeof(jax_x())  # jax's type, its mesh and spec included


def test_multi_tree_maps_mix_shardkit_and_jax_arrays():
    x, j = sk_x(), jax_x()
    out = jax.tree.map(lambda a, b: a + b, {"w": x, "b": None}, {"w": j, "b": None})
    same(out["w"], j + j)
    assert out["b"] is None
    both = jax.tree.map(lambda a, b: (a, b), [x], [None])
    assert both[0][0] is x and both[0][1] is None


@pytest.mark.parametrize(
    "fun",
    [
        lambda a: jax.jit(lambda t: t * 2)(a),
        lambda a: jnp.sin(a),
        lambda a: jnp.zeros_like(a),
        lambda a: jax.lax.add(a, a),
        lambda a: jnp.dot(a, a.T),
        lambda a: jax.device_put(a, JS),
        lambda a: jax.vmap(lambda t: t * 2)(a),
        lambda a: jax.grad(lambda t: (t * t).sum())(a),
    ],
    ids=["jax.jit", "jnp.sin", "zeros_like", "lax.add", "jnp.dot", "jax.device_put", "vmap", "grad"],
)
def test_jax_functions_take_arrays_as_their_own(fun):
    got, want = fun(sk_x()), fun(jax_x())
    assert isinstance(got, jax.Array)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.sharding.is_equivalent_to(want.sharding, got.ndim)


def test_arrays_are_passed_to_jax_without_copies():
    x = sk_x()
    pointers = [s.data.unsafe_buffer_pointer() for s in jnp.asarray(x).addressable_shards]
    assert pointers == [s.data.unsafe_buffer_pointer() for s in x.addressable_shards]


def test_an_array_closed_over_is_a_constant():
    x = sk_x()
    same(jax.jit(lambda t: t + x)(jax_x()), jax.jit(lambda t: t + jax_x())(jax_x()))


# -- operators and methods of shardkit-placed arrays are jax's, on the devices -------------------------------------


@pytest.mark.parametrize(
    "fun",
    [
        lambda a: a * 2,
        lambda a: 1 - a,
        lambda a: a @ a.T,
        lambda a: -a,
        lambda a: a.mean(),
        lambda a: a.sum(axis=0),
        lambda a: a.reshape(16),
        lambda a: a.T,
        lambda a: a.astype(np.int32),
        lambda a: a[::2],
        lambda a: a[1:3, 0],
        lambda a: a[jnp.array([0, 5])],
        lambda a: a.at[0, 1].set(-1.0),
        lambda a: a.at[:, 0].add(10.0),
        lambda a: a > 3,
    ],
    ids=[
        "mul",
        "rsub",
        "matmul",
        "neg",
        "mean",
        "sum",
        "reshape",
        "T",
        "astype",
        "strided index",
        "slice and int",
        "gather",
        "at set",
        "at add",
        "compare",
    ],
)
def test_operators_and_methods_match_jax(fun):
    got, want = fun(sk_x()), fun(jax_x())
    assert isinstance(got, sk.Array)
    same(got, want)


@pytest.mark.parametrize(
    "fun",
    [
        lambda a: a.imag,  # zeros jax leaves uncommitted on the default device
        lambda a: jnp.square(a.real) + jnp.square(a.imag),
        lambda a: a.conj() * a + a.imag,
        lambda a: jnp.sqrt(jnp.sum(a**2)) + jnp.max(jnp.abs(a)),
        lambda a: a.sum(axis=1) + a.imag.sum(axis=1),
    ],
    ids=["imag", "square parts", "conj times", "norms", "sums"],
)
def test_eager_results_are_placed_as_jax_places_them(fun):
    """An eager jax operation on shardkit Arrays places its result as on jax Arrays: a result jax leaves uncommitted
    stays uncommitted (a shardkit Array never is), so the next operation over the mesh takes it."""
    got, want = fun(sk_x()), fun(jax_x())
    assert got.committed == want.committed
    same(got, want)


def test_optax_norms_of_shardkit_arrays():
    optax = pytest.importorskip("optax")
    tree = {"w": sk_x(), "b": sk.device_put(VALUE[0], sk.NamedSharding(MESH, P()))}
    jtree = {"w": jax_x(), "b": jax.device_put(VALUE[0], sk.NamedSharding(MESH, P()).to_jax(1))}
    for norm in (optax.tree.norm, lambda t: optax.tree.norm(t, ord=1), lambda t: optax.tree.norm(t, ord="inf")):
        np.testing.assert_array_equal(np.asarray(norm(tree)), np.asarray(norm(jtree)))
    clipped = optax.clip_by_global_norm(1.0).update(tree, optax.clip_by_global_norm(1.0).init(tree))[0]
    jclipped = optax.clip_by_global_norm(1.0).update(jtree, optax.clip_by_global_norm(1.0).init(jtree))[0]
    np.testing.assert_allclose(np.asarray(clipped["w"]), np.asarray(jclipped["w"]), rtol=1e-6)


def test_item_and_python_scalars():
    x = sk_x()
    assert x[3, 1].item() == jax_x()[3, 1].item() == 7.0
    assert float(x.sum()) == 120.0


def test_methods_do_not_go_through_the_host():
    x = sk_x()
    (x * 2).block_until_ready()
    x[::2].block_until_ready()
    assert x._npy_value is None  # no host value was fetched (jax caches one there)


# -- shardkit's shardings are jax Shardings --------------------------------------------------------------------


def test_jax_takes_shardkit_shardings():
    assert isinstance(S, jax.sharding.Sharding)
    assert S.is_equivalent_to(JS, 2) and not S.is_equivalent_to(sk.NamedSharding(MESH, P("model")).to_jax(2), 2)
    same(jax.device_put(VALUE, S), jax.device_put(VALUE, JS))
    sds = jax.ShapeDtypeStruct((8, 2), F32, sharding=S)
    assert sds.sharding is S
    same(jax.jit(lambda a: a * 2, in_shardings=S, out_shardings=S)(VALUE), jax.jit(lambda a: a * 2)(jax_x()))
    wsc = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, S))(VALUE)
    same(wsc, jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, JS))(VALUE))
    assert "sharding" in jax.jit(lambda a: a).lower(sds).as_text()


def test_a_shardkit_sharding_of_the_wrong_rank_is_refused_by_jax():
    with pytest.raises(ValueError):
        jax.device_put(np.ones(3), sk.NamedSharding(MESH, P("data", "model")))


# -- jax's objects into sk.jit ---------------------------------------------------------------------------------


def test_lower_takes_jax_shape_dtype_structs():
    sds = jax.ShapeDtypeStruct((8, 2), F32, sharding=JS)
    mine = sk.jit(lambda a: a * 2).lower(sds)
    assert mine.in_shardings[0][0] == S
    unsharded = sk.jit(lambda a: a * 2).lower(jax.ShapeDtypeStruct((8, 2), F32))
    assert unsharded.in_avals[0][0].shape == (8, 2)


def test_a_committed_jax_array_keeps_its_sharding():
    out = sk.jit(lambda a: a * 2)(jax_x())
    same(out, jax.jit(lambda a: a * 2)(jax_x()))
    assert isinstance(out.sharding, sk.NamedSharding) and out.sharding.spec == P("data")


def test_a_jax_array_on_another_layout_is_an_error_as_under_jax_jit():
    other = jax.device_put(VALUE, sk.NamedSharding(MESH, P("model")).to_jax(2))
    with pytest.raises(ValueError, match="sharded as"):
        sk.jit(lambda a: a * 2, in_shardings=S)(other)
    with pytest.raises(ValueError):
        jax.jit(lambda a: a * 2, in_shardings=JS)(other)


def test_an_uncommitted_jax_array_goes_where_the_program_wants_it():
    got = sk.jit(lambda a: a * 2, in_shardings=S)(jnp.asarray(VALUE))
    same(got, jax.jit(lambda a: a * 2, in_shardings=JS)(jnp.asarray(VALUE)))


def test_jax_arrays_of_new_shardings_compile_anew():
    f = sk.jit(lambda a: a + 1)
    first = f(jax_x())
    other = f(jax.device_put(VALUE, sk.NamedSharding(MESH, P(None, "model")).to_jax(2)))
    assert first.sharding.spec == P("data") and other.sharding.spec == P(None, "model")


def test_jax_fast_paths_read_shardkit_shardings():
    """jax's C++ dispatch reads the C++ half of every Sharding it meets (an equinox filter_jit loop hits it)."""
    f = jax.jit(lambda a: a + 1)
    for _ in range(3):
        out = f(jax.device_put(VALUE, S))
    np.testing.assert_array_equal(np.asarray(out), VALUE + 1)


def test_results_are_named_on_the_mesh_in_scope():
    with MESH:
        out = sk.jit(lambda a: a * 2)(VALUE)
    assert isinstance(out.sharding, sk.NamedSharding) and out.sharding.mesh is MESH and out.sharding.spec == P()


def test_jax_control_flow_over_sk_jit_functions():
    body = sk.jit(lambda c, _: (c + 1, c.sum()))
    got = jax.lax.scan(body, sk_x(), None, length=3)
    want = jax.lax.scan(jax.jit(lambda c, _: (c + 1, c.sum())), jax_x(), None, length=3)
    jax.tree.map(lambda g, w: np.testing.assert_array_equal(np.asarray(g), np.asarray(w)), got, want)
    step = sk.jit(lambda i, c: c * 2)
    np.testing.assert_array_equal(np.asarray(jax.lax.fori_loop(0, 3, step, sk_x())), VALUE * 8)


def test_results_are_named_on_a_constraints_mesh():
    """jax's own with_sharding_constraint inside sk.jit (as equinox's filter_shard calls it): the result is named
    on the constraint's mesh, as under jax.jit."""
    f = sk.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, JS))
    out = f(VALUE)
    want = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, JS))(VALUE)
    same(out, want)
    assert isinstance(out.sharding, sk.NamedSharding) and out.sharding.spec == P("data")


# -- filter_jit: equinox.filter_jit's staging on sk.jit ----------------------------------------------------------


def test_filter_jit_keeps_non_array_leaves_static():
    traces = []

    def f(tree):
        traces.append(1)
        return {"y": tree["op"](tree["x"]) * tree["k"], "name": tree["name"]}

    g = sk.filter_jit(f)
    tree = {"x": sk_x(), "op": jnp.negative, "k": 3, "name": "out"}
    out = g(tree)
    same(out["y"], jax.jit(lambda x: -x * 3)(jax_x()))
    assert out["name"] == "out" and isinstance(out["y"], sk.Array)
    g({**tree, "x": sk.device_put(VALUE + 1, S)})
    assert len(traces) == 1  # same static part, same shapes: no new trace
    assert float(g({**tree, "k": 4})["y"].sum()) == -4 * VALUE.sum()
    assert len(traces) == 2


def test_filter_jit_takes_arguments_jax_canonicalizes():
    """A float64 numpy argument is traced as float32: the call still finds the result's non-array part."""
    out = sk.filter_jit(lambda t: {"y": t * 2, "tag": "doubled"})(np.arange(4.0))
    np.testing.assert_array_equal(np.asarray(out["y"]), np.arange(4.0, dtype=F32) * 2)
    assert out["tag"] == "doubled" and out["y"].dtype == F32


def test_filter_jit_donates_when_asked():
    x = sk_x()
    sk.filter_jit(lambda t: t["x"] + 1, donate=True)({"x": x})
    assert x.is_deleted()


@pytest.mark.parametrize("donate", ["all", "warn", "all-except-first", "warn-except-first", "none"])
def test_filter_jit_is_equinox_s_decorator_factory(donate):
    """``@filter_jit(donate=...)``, equinox's documented form, with equinox's donate modes: the same values and
    the same arguments deleted as under ``equinox.filter_jit``."""
    eqx = pytest.importorskip("equinox")

    def step(model, x, scale=2.0):  # an output per argument, so that XLA can reuse every donated buffer
        return {"w": model["w"] * scale + x, "x": x - 1, "n": model["n"]}

    got = {}
    for name, factory, put in (
        ("equinox", eqx.filter_jit, lambda a: jax.device_put(a, JS)),
        ("shardkit", sk.filter_jit, lambda a: sk.device_put(a, S)),
    ):
        model, x = {"w": put(VALUE), "n": 3}, put(VALUE + 1)
        out = factory(donate=donate)(step)(model, x)
        got[name] = (np.asarray(out["w"]), out["n"], model["w"].is_deleted(), x.is_deleted())
    assert got["shardkit"][1:] == got["equinox"][1:], got
    np.testing.assert_array_equal(got["shardkit"][0], got["equinox"][0])


@pytest.mark.parametrize("donate", ["all", "warn", "all-except-first", "warn-except-first", "none"])
def test_filter_jit_warns_about_unusable_donations_as_equinox_does(donate):
    """A donated batch that no output can reuse (int32 beside a float32 model, on one device): equinox's "warn" modes
    show jax's warning, its "all" modes filter it out, and the batch is not deleted; on the first call and the next
    (C++ dispatch), under equinox.filter_jit and sk.filter_jit alike."""
    eqx = pytest.importorskip("equinox")
    device = jax.devices()[0]

    def step(model, batch):
        return {"w": model["w"] * 2 + batch.sum().astype(F32)}

    got = {}
    for name, factory in (("equinox", eqx.filter_jit), ("shardkit", sk.filter_jit)):
        stepped = factory(donate=donate)(step)  # a new function: no lowering cached from another mode
        calls = []
        for _ in range(2):
            model, batch = {"w": jax.device_put(VALUE, device)}, jax.device_put(np.arange(10, dtype=np.int32), device)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = np.asarray(stepped(model, batch)["w"])
            said = [str(w.message).splitlines()[0] for w in caught if "donated" in str(w.message)]
            calls.append((said, model["w"].is_deleted(), batch.is_deleted(), out.tolist()))
        got[name] = calls
    assert got["shardkit"] == got["equinox"], got
    shown = ["Some donated buffers were not usable: int32[10]."] if donate.startswith("warn") else []
    assert [c[0] for c in got["shardkit"]] == [shown, []]
    assert not any(c[2] for c in got["shardkit"])


def test_filter_jit_donate_all_runs_equinox_s_data_parallel_loop_twice_over_one_batch():
    """Equinox's data-parallel guide with ``donate="all"``: the batch is donated but no output reuses it, so it is not
    deleted and the loop can take it again (it was deleted, and the second step raised); the same losses, deleted
    arrays and values as under equinox.filter_jit."""
    eqx = pytest.importorskip("equinox")
    optax = pytest.importorskip("optax")

    def run(filter_jit, mesh, named):
        data, replicated = named(mesh, P("batch")), named(mesh, P())
        model = eqx.nn.MLP(in_size=4, out_size=1, width_size=16, depth=2, key=jax.random.PRNGKey(0))
        optim = optax.adam(1e-2)
        opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
        model, opt_state = eqx.filter_shard((model, opt_state), replicated)

        @filter_jit(donate="all")
        def train_step(model, opt_state, x, y):
            model, opt_state = eqx.filter_shard((model, opt_state), replicated)
            x, y = eqx.filter_shard((x, y), data)
            loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
            updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
            model = eqx.apply_updates(model, updates)
            return *eqx.filter_shard((model, opt_state), replicated), loss

        rng = np.random.default_rng(0)
        batch = eqx.filter_shard((rng.normal(size=(64, 4)).astype(F32), rng.normal(size=(64, 1)).astype(F32)), data)
        losses = []
        for _ in range(2):
            model, opt_state, loss = train_step(model, opt_state, *batch)
            losses.append(float(loss))
        return losses, [b.is_deleted() for b in batch], eqx.filter(model, eqx.is_array)

    jax_mesh = jax.make_mesh((8,), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))
    want = run(eqx.filter_jit, jax_mesh, jax.sharding.NamedSharding)
    got = run(sk.filter_jit, sk.make_mesh((8,), ("batch",)), sk.NamedSharding)
    assert got[:2] == want[:2] and got[1] == [False, False], (got[:2], want[:2])
    for g, w in zip(jax.tree.leaves(got[2]), jax.tree.leaves(want[2])):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_filter_jit_names_an_unknown_donate_mode():
    with pytest.raises(ValueError, match="filter_jit's donate must be one of 'none', 'all', .* got 'some'"):
        sk.filter_jit(lambda x: x, donate="some")


def test_filter_jit_refuses_unhashable_static_leaves():
    with pytest.raises(TypeError, match="non-array arguments must be hashable"):
        sk.filter_jit(lambda t, d: t)(sk_x(), {"a": bytearray()})


# -- shardkit's meshes are jax meshes ----------------------------------------------------------------------------


def test_jax_takes_shardkit_meshes():
    assert isinstance(MESH, jax.sharding.Mesh) and isinstance(MESH.abstract_mesh, jax.sharding.AbstractMesh)
    jmesh = MESH.to_jax()
    assert jmesh == MESH and jmesh == MESH and MESH.abstract_mesh == jmesh.abstract_mesh
    named = jax.sharding.NamedSharding(MESH, jax.P("data"))
    same(jax.device_put(VALUE, named), jax_x())
    double = jax.jit(lambda a: a * 2, out_shardings=named)
    same(double(VALUE), jax.jit(lambda a: a * 2, out_shardings=JS)(VALUE))
    with jax.set_mesh(MESH):
        same(jax.jit(lambda a: a * 2, out_shardings=jax.P("data"))(VALUE), double(VALUE))
    mapped = jax.shard_map(lambda a: a * 2, mesh=MESH, in_specs=jax.P("data"), out_specs=jax.P("data"))
    same(mapped(VALUE), double(VALUE))


def test_jax_helpers_take_shardkit_meshes():
    from jax.experimental import multihost_utils

    got = multihost_utils.host_local_array_to_global_array(VALUE, MESH, jax.P("data"))
    same(got, multihost_utils.host_local_array_to_global_array(VALUE, MESH.to_jax(), jax.P("data")))


def test_axis_types_are_jax_s():
    assert sk.AxisType is jax.sharding.AxisType
    explicit = sk.make_mesh((8,), ("d",), axis_types=jax.sharding.AxisType.Explicit)
    assert explicit.axis_types == (jax.sharding.AxisType.Explicit,)


def test_jax_s_mesh_context_is_the_mesh_in_scope():
    """Under ``jax.set_mesh`` (what flax and jax code write) sk.jit reads bare PartitionSpecs over that mesh and
    names its results on it, as jax.jit does."""
    with jax.set_mesh(MESH):
        out = sk.jit(lambda a: a * 2, out_shardings=jax.P("data"))(VALUE)
        want = jax.jit(lambda a: a * 2, out_shardings=jax.P("data"))(VALUE)
        plain = sk.jit(lambda a: a + 1)(VALUE)
    same(out, want)
    assert isinstance(out.sharding, sk.NamedSharding) and out.sharding.mesh is MESH
    assert isinstance(plain.sharding, sk.NamedSharding) and plain.sharding.spec == P()
    assert sk.current_mesh().empty


def test_a_bare_spec_constraint_reads_jax_s_mesh_context():
    """``with_sharding_constraint(x, P(...))`` inside sk.jit under ``jax.set_mesh`` of a jax mesh constrains over
    that mesh, as ``jax.lax.with_sharding_constraint`` does under jax.jit."""
    jmesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    data = np.arange(16.0, dtype=F32)
    with jax.set_mesh(jmesh):
        out = sk.jit(lambda a: sk.with_sharding_constraint(a * 2, P("data")))(data)
        want = jax.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, jax.P("data")))(data)
    same(out, want)
    assert isinstance(out.sharding, sk.NamedSharding) and out.sharding.spec == P("data")
    assert out.sharding.mesh == jmesh and want.sharding.spec == jax.P("data")


# -- one placement, whichever class holds it ----------------------------------------------------------------------


def test_shardkit_and_jax_objects_of_one_placement_are_equal_both_ways_and_hash_alike():
    """jax's equality rules decide (jax interns meshes and compares them by identity; its NamedSharding compares
    mesh, spec and memory kind, its SingleDeviceSharding device and memory kind), so a dict keyed by one finds
    the other."""
    jmesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "model"), axis_types=MESH.axis_types)
    dev = jax.devices()[3]
    pairs = [
        (MESH, jmesh),
        (MESH.abstract_mesh, jmesh.abstract_mesh),  # both name the devices' kind
        (
            sk.AbstractMesh((4, 2), ("data", "model")),
            jax.sharding.AbstractMesh((4, 2), ("data", "model"), MESH.axis_types),
        ),
        (S, jax.sharding.NamedSharding(jmesh, jax.P("data"))),
        (
            sk.NamedSharding(MESH.abstract_mesh, P("data")),
            jax.sharding.NamedSharding(jmesh.abstract_mesh, jax.P("data")),
        ),
        (sk.SingleDeviceSharding(dev), jax.sharding.SingleDeviceSharding(dev)),
    ]
    for mine, theirs in pairs:
        assert mine == theirs and theirs == mine and hash(mine) == hash(theirs), (mine, theirs)
        assert {theirs: 1}[mine] == 1 and {mine: 1}[theirs] == 1
    others = [
        (S, jax.sharding.NamedSharding(jmesh, jax.P("model"))),
        (S, jax.sharding.NamedSharding(jmesh, jax.P("data"), memory_kind="pinned_host")),
        (MESH.abstract_mesh, jax.sharding.AbstractMesh((4, 2), ("data", "model"), MESH.axis_types)),  # jax's rule
        (sk.SingleDeviceSharding(dev), jax.sharding.SingleDeviceSharding(jax.devices()[4])),
        (sk.GSPMDSharding([dev], "{replicated}"), jax.sharding.SingleDeviceSharding(dev)),  # another kind
        (sk.SingleDeviceSharding(dev), sk.GSPMDSharding([dev], "{replicated}")),
    ]
    for mine, theirs in others:
        assert mine != theirs and theirs != mine, (mine, theirs)


def test_jax_jit_traces_and_compiles_one_placement_once_under_either_class():
    """The same data under jax's and shardkit's NamedSharding (and SingleDeviceSharding) of one placement: jax.jit
    traces, lowers and compiles once. (Its C++ dispatch cache keeps one entry per sharding class, since jaxlib's
    EqualShardingsForJit compares exact types and mesh objects; both entries hold that one executable.)"""
    lowered = []

    def count(event: str, seconds: float, **_: object) -> None:
        if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            lowered.append(event)

    jax.monitoring.register_event_duration_secs_listener(count)
    try:
        for mine, theirs in [
            (S, JS),
            (sk.SingleDeviceSharding(jax.devices()[2]), jax.sharding.SingleDeviceSharding(jax.devices()[2])),
        ]:
            lowered.clear()
            f = jax.jit(lambda a: a * 3 + 1)
            a, b = jax.device_put(VALUE, theirs), jax.device_put(VALUE, mine)
            same(f(b), f(a))
            assert len(lowered) == 1, (mine, lowered)
            g = jax.jit(lambda a: a * 3 + 1)  # the other order
            lowered.clear()
            same(g(a), g(b))
            assert len(lowered) == 1, (mine, lowered)
    finally:
        jax.monitoring.unregister_event_duration_listener(count)


def test_shardkit_caches_keyed_on_shardings_give_shardkit_s_own_objects():
    """A jax object equal to a shardkit one finds shardkit's memo entries (and the reverse): what they promise to
    return is still shardkit's, whichever of the two filled the entry."""
    from shardkit.mesh import current_mesh
    from shardkit.sharding import as_sharding, from_jax

    sk.clear_caches()
    assert type(from_jax(JS, 2)) is sk.NamedSharding and from_jax(S, 2) == S
    sk.clear_caches()
    assert from_jax(S, 2) is S and type(from_jax(JS, 2)) is sk.NamedSharding
    assert type(as_sharding(JS, 2, "in_shardings")) is sk.NamedSharding
    with jax.set_mesh(MESH.to_jax()):
        assert current_mesh() is MESH
    assert type(sk.Mesh.from_jax(MESH.to_jax())) is sk.Mesh
    f = sk.jit(lambda a: a * 2)
    for x in (jax.device_put(VALUE, JS), sk.device_put(VALUE, S), jax.device_put(VALUE, S)):
        out = f(x)
        assert type(out.sharding) is sk.NamedSharding and out.sharding == S, type(x.sharding)
        np.testing.assert_array_equal(np.asarray(out), VALUE * 2)
