"""``sk.autoshard``: plans run and compute what the unsharded program computes, keep the shardings the user gave,
lay out functions that have no parameters or batch, choose a mesh for the target, and report; the
``auto-partition`` pass and ``shardkit-report --autoshard`` do the same for a module; bad input is a named error.

Plans are made for ``cpu:8`` (the 8 virtual devices of ``conftest.py`` run them) and for a small TPU slice
(``tpu-v5e:2x4``, compile-only); the models are small so that the whole file runs in well under a minute.
"""

from __future__ import annotations

import io
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.autosharding import PlannedJit, api, space, workers
from shardkit.autosharding.program import from_function

RNG = np.random.default_rng(0)


def normal(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def chained(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


def adam_step(params, m, v, x, y):
    """A small training step: an MLP's loss, its gradients, Adam's moments (params/m/v trees, tied)."""

    def loss(p):
        return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
    v = jax.tree.map(lambda v, g: 0.99 * v + 0.01 * g * g, v, grads)
    params = jax.tree.map(lambda p, m, v: p - 1e-2 * m / (jnp.sqrt(v) + 1e-8), params, m, v)
    return params, m, v, value


@pytest.fixture(scope="module")
def adam():
    params = {"w1": normal(32, 64), "w2": normal(64, 8)}
    zeros = jax.tree.map(np.zeros_like, params)
    args = (params, zeros, jax.tree.map(lambda a: a + 1.0, zeros), normal(64, 32), normal(64, 8))
    plan = sk.autoshard(adam_step, *args, target="cpu:8", confirm=1)
    return plan, args


def placed(plan, args):
    """The arguments put where the plan's jit expects them (on this process's 8 devices)."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    shardings = jax.tree_util.tree_leaves(plan.in_shardings)
    mesh = sk.make_mesh(plan.mesh.axis_sizes, plan.mesh.axis_names) if isinstance(plan.mesh, sk.AbstractMesh) else None
    out = []
    for a, s in zip(leaves, shardings):
        if mesh is not None:
            s = sk.NamedSharding(mesh, s.spec)
        out.append(sk.device_put(np.asarray(a), s))
    return jax.tree_util.tree_unflatten(tree, out)


# -- plans run and equal the unsharded program -------------------------------------------------------------------


def test_a_training_step_runs_and_equals_the_unsharded_program(adam):
    plan, args = adam
    assert plan.mesh.size == 8
    got = plan.jit()(*placed(plan, args))
    want = jax.jit(adam_step)(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-5)
    assert plan.step_time > 0 and plan.memory_per_device > 0
    assert plan.table().to_dict()["candidates"][0]["chosen"] in (True, False)  # every candidate is listed


def test_parameters_and_their_optimizer_state_take_one_decision(adam):
    plan, _ = adam
    names = [g.name for g in plan.program.groups]
    assert "params['w1'] (+2 tied)" in names and "params['w2'] (+2 tied)" in names
    shardings = plan.in_shardings
    for key in ("w1", "w2"):
        assert shardings[0][key].spec == shardings[1][key].spec == shardings[2][key].spec


def test_a_train_state_ties_each_parameter_to_its_optimizer_moments():
    """One argument holding the parameters and optax's Adam state, as Flax's TrainState and MaxText hold them: each
    moment takes its parameter's decision (the search has a third of the decisions to try); two layers of one shape
    in the same model stay two decisions."""
    import optax

    params = {"dense0": {"w": normal(32, 32)}, "dense1": {"w": normal(32, 32)}, "out": normal(32, 8)}
    tx = optax.adam(1e-3)

    def step(state, x, y):
        params, opt = state

        def loss(p):
            h = jnp.tanh(jnp.tanh(x @ p["dense0"]["w"]) @ p["dense1"]["w"])
            return jnp.mean((h @ p["out"] - y) ** 2)

        grads = jax.grad(loss)(params)
        updates, opt = tx.update(grads, opt, params)
        return optax.apply_updates(params, updates), opt

    program, _ = from_function(step, ((params, tx.init(params)), normal(64, 32), normal(64, 8)), (0,))
    names = sorted(g.name for g in program.groups if not g.boundary)
    assert names == [
        "state[0]['dense0']['w'] (+2 tied)",
        "state[0]['dense1']['w'] (+2 tied)",
        "state[0]['out'] (+2 tied)",
        "state[1][0].count",
        "x",
        "y",
    ]
    tied = next(g for g in program.groups if g.name.startswith("state[0]['out']"))
    assert [program.leaves[i].path for i in tied.leaves] == [
        "state[0]['out']",
        "state[1][0].mu['out']",
        "state[1][0].nu['out']",
    ]


def test_functions_without_parameters_or_batch():
    x, w1, w2 = normal(64, 128), normal(128, 256), normal(256, 32)
    plan = sk.autoshard(chained, x, w1, w2, target="cpu:8", confirm=1)
    got = plan.jit()(*placed(plan, (x, w1, w2)))
    np.testing.assert_allclose(np.asarray(got), np.tanh(x @ w1) @ w2, rtol=1e-4, atol=1e-4)

    def spread(a):  # a reduction and a normalisation
        return (a - a.mean(axis=0)) / (a.std(axis=0) + 1.0), a.sum()

    a = normal(256, 64)
    plan = sk.autoshard(spread, a, target="cpu:8", confirm=0, workers=0)
    got, total = plan.jit()(*placed(plan, (a,)))
    np.testing.assert_allclose(np.asarray(got), (a - a.mean(0)) / (a.std(0) + 1.0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(total), a.sum(), rtol=1e-4)


def test_a_mesh_is_searched_among_the_factorisations_of_the_device_count():
    assert [str(m) for m in space.mesh_shapes(8)] == ["x=8", "x=2 y=4", "x=4 y=2", "x=2 y=2 z=2"]
    assert len(space.mesh_shapes(256)) == 29 and [str(m) for m in space.mesh_shapes(7)] == ["x=7"]
    x = normal(512, 64)
    plan = sk.autoshard(lambda a: jnp.sin(a) @ a.T, x, target="cpu:8", confirm=0, workers=0)
    meshes = {str(c.mesh) for c in plan.candidates}
    assert {"x=8", "x=2 y=4", "x=4 y=2"} <= meshes  # the one-axis layout priced on every mesh


def test_a_body_that_calls_back_is_searched_for_a_tpu_target():
    """jax lowers a host callback for this process's devices only: the body is lowered here, as Lowered.compile
    keeps it for a TPU target, and searched (jax's own lowering for TPU refuses it: "the platform for the specified
    backend cpu is different from the lowering platform tpu")."""

    def f(w, x):
        jax.debug.print("{}", x.sum())
        return jnp.tanh(x @ w).sum()

    plan = sk.autoshard(f, normal(64, 64), normal(32, 64), target="tpu-v5e:2x2", confirm=0, workers=0)
    assert plan.candidates and plan.target == "tpu-v5e:2x2"


# -- the user's shardings --------------------------------------------------------------------------------------


def test_a_sharding_the_user_gives_is_kept_and_names_the_mesh():
    mesh = sk.make_mesh((4, 2), ("a", "b"))
    given = sk.NamedSharding(mesh, P("a", None))
    x = sk.device_put(normal(64, 128), given)
    w1, w2 = normal(128, 64), normal(64, 16)
    plan = sk.autoshard(chained, x, w1, w2, target="cpu:8", confirm=1)
    assert plan.mesh is mesh and plan.in_shardings[0] is given
    assert {str(c.mesh) for c in plan.candidates} == {"a=4 b=2"}
    got = plan.jit()(x, *[sk.device_put(a, s) for a, s in zip((w1, w2), plan.in_shardings[1:])])
    np.testing.assert_allclose(np.asarray(got), chained(np.asarray(x), w1, w2), rtol=1e-4, atol=1e-4)


def test_shardings_over_fewer_devices_than_the_target_are_planned_again_over_it():
    """Shardings over a 4-device mesh (a trainer's step built on the devices at hand, its rules naming axes, not
    sizes) for a target of 8: the plan keeps their axes and searches the meshes of those axes over the 8."""
    mesh4 = sk.make_mesh((2, 2), ("data", "model"), devices=jax.devices()[:4])
    x = sk.ShapeDtypeStruct((64, 128), np.float32, sharding=sk.NamedSharding(mesh4, P("data", None)))
    w1, w2 = normal(128, 64), normal(64, 16)
    plan = sk.autoshard(chained, x, w1, w2, target="cpu:8", confirm=1, workers=0)
    assert {str(c.mesh) for c in plan.candidates} <= {
        "data=8 model=1",
        "data=4 model=2",
        "data=2 model=4",
        "data=1 model=8",
    }
    assert plan.mesh.size == 8 and plan.mesh.axis_names == ("data", "model")
    assert plan.in_shardings[0].spec == P("data", None)
    xv = normal(64, 128)
    got = plan.jit()(xv, w1, w2)
    assert got.sharding.mesh.size == 8
    np.testing.assert_allclose(np.asarray(got), chained(xv, w1, w2), rtol=1e-4, atol=1e-4)


def test_an_input_sharded_on_its_features_is_computed_on_where_it_is():
    """Gathering x (32 MiB) costs more than reducing the small product: the weight is split the same way and the
    partial products are summed, x never moves."""
    mesh = sk.make_mesh((8,), ("x",))
    xv, wv = normal(256, 32768), normal(32768, 16)
    x = sk.device_put(xv, sk.NamedSharding(mesh, P(None, "x")))
    plan = sk.autoshard(lambda a, b: a @ b, x, wv, target="cpu:8", confirm=0, workers=0)
    assert plan.in_shardings[1].spec == P("x", None)
    kinds = [c.kind for c in plan.chosen.reading.collectives]
    assert kinds == ["all-reduce"]  # of the (256, 16) product; no all-gather of x
    got = plan.jit()(x, sk.device_put(wv, plan.in_shardings[1]))
    np.testing.assert_allclose(np.asarray(got), xv @ wv, rtol=1e-3, atol=1e-2)


def test_a_layout_that_does_not_fit_loses_to_one_that_does():
    """Replicated, the weight alone (4 MiB) is over the limit: the plan splits it, and still computes the same."""
    w, x = normal(1024, 1024), normal(64, 1024)
    f = lambda w, x: jnp.tanh(x @ w).sum(axis=0)  # noqa: E731
    free = sk.autoshard(f, w, x, target="cpu:8", confirm=0, workers=0)
    limit = 2 << 20
    plan = sk.autoshard(f, w, x, target="cpu:8", memory_limit=limit, confirm=0, workers=0)
    assert plan.memory_per_device <= limit < free.memory_per_device or free.memory_per_device <= limit
    assert any(plan.in_shardings[0].spec)  # the weight is split
    got = plan.jit()(*placed(plan, (w, x)))
    np.testing.assert_allclose(np.asarray(got), np.tanh(x @ w).sum(0), rtol=1e-4, atol=1e-3)


def test_a_plan_that_stores_an_argument_runs_and_lowers_with_its_priority(adam):
    """A storage sharding (priority 1) is no in_sharding: ``jit()`` is a PlannedJit that writes it, and its
    program computes what the unsharded one does; for a TPU slice the lowering holds it too."""
    plan, args = adam
    stored = next(c for c in plan.candidates if any(x is not None and x.storage and any(x.spec) for x in c.layout))
    chosen, plan.chosen = plan.chosen, stored
    try:
        assert plan.constraints and all(c.kind == "stored" for c in plan.constraints)
        step = plan.jit()
        assert isinstance(step, PlannedJit)
        assert "}p1" in step.lower(*placed(plan, args)).as_text()
        got = step(*placed(plan, args))
        want = jax.jit(adam_step)(*args)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-5)
    finally:
        plan.chosen = chosen


# -- for a TPU slice ------------------------------------------------------------------------------------------


def test_a_plan_for_a_tpu_slice_is_confirmed_by_compiling_it(tmp_path):
    x, w1, w2 = normal(1024, 512), normal(512, 2048), normal(2048, 512)
    plan = sk.autoshard(chained, x, w1, w2, target="tpu-v5e:2x4", confirm=2)
    assert plan.target == "tpu-v5e:2x4" and plan.hardware == "tpu-v5e"
    confirmed = plan.confirmed[plan.chosen.key]
    assert confirmed.fits and confirmed.step == plan.step_time and confirmed.peak == plan.memory_per_device
    assert plan.memory_limit == 16 * 2**30  # the chip's HBM
    compiled = plan.lower().compile(target=plan.target)
    assert compiled.memory().fits
    text = str(plan.table())
    assert "autoshard for tpu-v5e:2x4 on tpu-v5e" in text and "* chosen" in text
    rows = json.loads(plan.table().to_json())["candidates"]
    assert sum(r["chosen"] for r in rows) == 1 and any(r["xla"] for r in rows)
    plan.table().save_image(tmp_path / "table.png")
    assert (tmp_path / "table.png").read_bytes()[:4] == b"\x89PNG"
    stored = next(c for c in plan.candidates if any(x is not None and x.storage and any(x.spec) for x in c.layout))
    plan.chosen = stored  # a storage sharding on the slice's compile-only devices
    assert plan.lower().compile(target=plan.target).memory().fits


# -- reports ------------------------------------------------------------------------------------------------


def test_plan_reports(adam, tmp_path):
    plan, args = adam
    text = str(plan)
    assert text.startswith("Plan for cpu:8 (8 devices, timed on h100): mesh ")
    assert "Shardy plans" in text and "lowering and the rest" in text
    spent = plan.where_time()
    assert set(spent) == {"compiles", "plans", "rest"} and spent["plans"] > 0
    assert sum(spent.values()) == pytest.approx(plan.search_seconds, rel=1e-6) or spent["rest"] == 0
    lowered = plan.lower()
    assert "sdy.mesh" in lowered.as_text()
    why = plan.explain()
    assert str(why).startswith("The plan (mesh ")
    if why.runner_up is not None:
        assert "beats the runner-up" in str(why)
        data = json.loads(why.to_json())
        assert data["winner"]["layout"] and data["runner_up"]["layout"]
    table = plan.table()
    assert len(str(table).splitlines()) <= 2 + 20
    assert len(table.rows()) == len(plan.candidates)


def test_a_storage_sharding_is_written_at_priority_one():
    """A layout that stores an argument (split, gathered where used) runs; its lowering says priority 1."""
    program = api.from_function(
        adam_step,
        (
            {"w1": normal(32, 64), "w2": normal(64, 8)},
            {"w1": normal(32, 64), "w2": normal(64, 8)},
            {"w1": normal(32, 64), "w2": normal(64, 8)},
            normal(64, 32),
            normal(64, 8),
        ),
        (),
    )[0]
    mesh = space.MeshShape(("x",), (8,))
    layout = []
    for g in program.groups:
        if g.name.startswith("params['w1']"):
            layout.append(space.Choice((("x",), ()), storage=True))
        elif g.name.startswith("x"):
            layout.append(space.Choice((("x",), ())))
        else:
            layout.append(None)
    text = program.instance(mesh, tuple(layout)).operation.get_asm()
    assert '[{"x"}p1, {}]' in text


def test_the_auto_partition_pass_and_the_report_flag(tmp_path):
    from shardkit.tools.opt import OptMain
    from shardkit.tools.report import ReportMain

    module = sk.jit(chained).lower(normal(64, 32), normal(32, 128), normal(128, 16)).as_text()
    path = tmp_path / "open.mlir"
    path.write_text(module)
    out, err = io.StringIO(), io.StringIO()
    code = OptMain([str(path), "-p", "auto-partition{target=cpu:8 confirm=1}"], stdout=out, stderr=err).run()
    assert code == 0, err.getvalue()
    written = out.getvalue()
    assert "sdy.mesh @mesh = <[" in written and "mhlo.num_partitions = 8" in written
    loaded = sk.load(written)
    x, w1, w2 = normal(64, 32), normal(32, 128), normal(128, 16)
    got = loaded.compile()(x, w1, w2)
    np.testing.assert_allclose(np.asarray(got), chained(x, w1, w2), rtol=1e-4, atol=1e-4)

    out, err = io.StringIO(), io.StringIO()
    code = ReportMain([str(path), "--autoshard", "--target", "cpu:8", "--explain"], stdout=out, stderr=err).run()
    assert code == 0, err.getvalue()
    assert out.getvalue().startswith("Plan for cpu:8") and "autoshard for cpu:8 on h100" in out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert ReportMain([str(path), "--autoshard", "--target", "cpu:8", "--json"], stdout=out, stderr=err).run() == 0
    assert json.loads(out.getvalue())["table"]["devices"] == 8

    out, err = io.StringIO(), io.StringIO()
    assert ReportMain([str(path), "--autoshard"], stdout=out, stderr=err).run() == 1
    assert err.getvalue().count("\n") == 1 and "give --target" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert OptMain([str(path), "-p", "auto-partition"], stdout=out, stderr=err).run() == 1
    assert "auto-partition needs a target" in err.getvalue()


# -- errors -----------------------------------------------------------------------------------------------------


def test_a_memory_limit_nothing_meets_names_the_smallest_footprint():
    x, w1, w2 = normal(64, 32), normal(32, 128), normal(128, 16)
    with pytest.raises(
        ValueError,
        match=r"memory_limit=1000 \(1000 B per device\) is below every layout's footprint on "
        r"cpu:8: the smallest found is [0-9.]+ KiB per device \(mesh ",
    ):
        sk.autoshard(chained, x, w1, w2, target="cpu:8", memory_limit=1000, confirm=0, workers=0)


def test_layouts_the_estimate_fits_and_xla_refuses_are_named_as_such(monkeypatch):
    """Every confirmed layout under the limit by the estimate and refused by XLA for memory (MaxText's 16B decoder
    on eight v5e slices): the error says the estimate missed what XLA holds, with XLA's reason, instead of calling
    the limit below a footprint the estimate puts under it."""
    from shardkit.autosharding.plan import Confirmed

    reason = "XLA refused it: Ran out of memory in memory space hbm. Used 17.20G of 15.75G hbm."
    refused = Confirmed(None, None, None, None, None, False, 0.0, reason)
    monkeypatch.setattr(api, "_compile", lambda plan, c, limit: refused)
    x, w1, w2 = normal(64, 32), normal(32, 128), normal(128, 16)
    with pytest.raises(ValueError) as e:
        sk.autoshard(chained, x, w1, w2, target="cpu:8", memory_limit=2**30, confirm=1, workers=0)
    message = str(e.value)
    assert re.match(
        r"autoshard: the 5 best layouts for cpu:8 fit memory_limit=1073741824 \(1\.0 GiB per device\) by the "
        r"estimate \([0-9.]+ KiB to [0-9.]+ KiB\), but none does in XLA's program \(the first, mesh ",
        message,
    )
    assert reason in message and "Confirm more of them (confirm=6)" in message


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"target": "tpu-v9:4x4"}, ValueError, "unknown TPU generation 'v9'"),
        ({"target": "cpu"}, ValueError, r"target='cpu': name the device count"),
        ({"target": 8}, TypeError, "target must be a target name"),
        (
            {"target": "cpu:8", "mesh": sk.AbstractMesh((4,), ("x",))},
            ValueError,
            "mesh x=4 has 4 devices, but target cpu:8 has 8",
        ),
        ({"target": "cpu:8", "mesh": (8,)}, TypeError, "mesh must be a Mesh or AbstractMesh"),
        ({"target": "cpu:8", "memory_limit": -1}, ValueError, "memory_limit must be a positive number of bytes"),
        ({"target": "cpu:8", "memory_limit": 1.5}, ValueError, "memory_limit must be a positive number of bytes"),
        ({"target": "cpu:8", "hardware": "abacus"}, ValueError, "hardware='abacus'"),
        ({"target": "cpu:8", "confirm": -1}, ValueError, "confirm must be a number of candidates >= 0"),
        ({"target": "cpu:8", "confirm": 1.0}, ValueError, "confirm must be a number of candidates >= 0, got 1.0"),
    ],
)
def test_bad_input_is_a_named_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        sk.autoshard(chained, normal(16, 8), normal(8, 8), normal(8, 4), **{"workers": 0, **kwargs})
    with pytest.raises(ValueError, match="workers must be a number of processes >= 0, got -2"):
        sk.autoshard(chained, normal(16, 8), normal(8, 8), normal(8, 4), target="cpu:8", workers=-2)


def test_bad_functions_and_meshes_are_named_errors():
    with pytest.raises(TypeError, match="autoshard's fun must be a function, got int"):
        sk.autoshard(3, normal(4), target="cpu:8")
    with pytest.raises(TypeError, match="autoshard takes the function itself"):
        sk.autoshard(sk.jit(chained), normal(4, 4), normal(4, 4), normal(4, 4), target="cpu:8")
    mesh4 = sk.make_mesh((4,), ("x",), devices=jax.devices()[:4])
    x = sk.ShapeDtypeStruct((4, 8), np.float32, sharding=sk.NamedSharding(mesh4, P("x")))
    with pytest.raises(
        ValueError,
        match=r"the program's mesh x=4 \(from the shardings it was given\) has 4 devices and target cpu:8 has 8: "
        r"no mesh of its axes over 8 devices divides every given sharding",
    ):
        sk.autoshard(chained, x, normal(8, 8), normal(8, 4), target="cpu:8", workers=0)
    mesh8 = sk.make_mesh((8,), ("x",))
    odd = sk.ShapeDtypeStruct((12, 8), np.float32, sharding=sk.NamedSharding(mesh8, P("x")))
    with pytest.raises(ValueError, match="12"):
        sk.autoshard(chained, odd, normal(8, 8), normal(8, 4), target="cpu:8", workers=0)


# -- machinery ------------------------------------------------------------------------------------------------


def test_the_public_name_is_the_function():
    assert sk.autoshard.__name__ == "autoshard" and callable(sk.autoshard)
    from shardkit.autosharding import Plan

    assert Plan.__name__ == "Plan"


def test_a_candidate_shardy_refuses_or_a_dead_worker_costs_that_candidate_only():
    from shardkit.autosharding import model

    program = api.from_function(chained, (normal(16, 8), normal(8, 8), normal(8, 4)), ())[0]
    pool = workers.Pool(program, 1)
    mesh = space.MeshShape(("x",), (8,))
    nameless = (space.MeshShape(("y",), (8,)), (space.Choice((("x",), ())),) + (None,) * (len(program.groups) - 1))
    good = (mesh, (None,) * len(program.groups))
    first, second = pool.evaluate([nameless, good])  # a sharding over an axis the mesh lacks: Shardy refuses it
    assert isinstance(first, Exception) and isinstance(second, model.Reading)
    workers._WORKERS[0].process.kill()
    workers._WORKERS[0].process.wait()
    (again,) = pool.evaluate([good])  # the dead worker is started again
    assert isinstance(again, model.Reading) and again.flops == second.flops


def test_a_donated_argument_sharded_unlike_its_result_is_donated_without_an_alias():
    """A module lowered without shardings aliases each donated argument to its result; once a candidate shards
    them differently their pieces differ in shape, which XLA refuses to alias (it failed that candidate's
    compile), so the argument is donated without an alias, as jax's rule does."""
    from jaxlib.mlir import ir

    from shardkit.autosharding.program import _donors_where_layouts_differ
    from shardkit.dialects import context

    with context():
        alias = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0)
        rows, cols = (ir.Attribute.parse(f"#sdy.sharding<@mesh, [{d}]>") for d in ('{"x"}, {}', '{}, {"x"}'))
        results = [{"sdy.sharding": rows}]
        kept, moved = _donors_where_layouts_differ(
            [{"tf.aliasing_output": alias, "sdy.sharding": rows}, {"tf.aliasing_output": alias, "sdy.sharding": cols}],
            results,
        )
        assert "tf.aliasing_output" in kept and "jax.buffer_donor" not in kept
        assert "tf.aliasing_output" not in moved and ir.BoolAttr(moved["jax.buffer_donor"]).value


# -- at a decoder's scale: what XLA compiles is what the estimate planned ------------------------------------------


def embedded_step(p, tokens):
    """A decoder's skeleton: a one-hot embedding, a scan of normed layers, logits through the same embedding, and
    an SGD update of every parameter (the results a storage sharding's gradient flows back from)."""

    def loss(p):
        x = (tokens[..., None] == jnp.arange(p["emb"].shape[0])).astype(jnp.float32) @ p["emb"]

        def layer(x, w):
            h = x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)
            return x + jnp.tanh(h @ w), None

        x, _ = jax.lax.scan(jax.checkpoint(layer), x, p["ws"])
        return jax.nn.logsumexp(x @ p["emb"].T, axis=-1).mean()

    grads = jax.grad(loss)(p)
    return jax.tree.map(lambda a, g: a - 0.1 * g, p, grads)


def fsdp_candidate():
    """``embedded_step``'s program on cpu:8 with every weight stored on its embedding dimension and the batch split,
    as a candidate (its Shardy plan read)."""
    import types

    from shardkit.autosharding import model

    params = {"emb": normal(512, 128), "ws": np.stack([normal(128, 128)] * 4)}
    tokens = np.arange(64 * 32, dtype=np.int32).reshape(64, 32) % 512
    program = api.from_function(embedded_step, (params, tokens), ())[0]
    layout = []
    for g in program.groups:
        if g.boundary:  # the layers' carry: open, as propagation leaves it
            layout.append(None)
        elif g.shape == (64, 32):
            layout.append(space.Choice((("x",), ())))
        else:  # the (first) embedding dimension stored
            first = list(g.shape).index(128)
            layout.append(space.Choice(tuple(("x",) if d == first else () for d in range(len(g.shape))), storage=True))
    mesh = space.MeshShape(("x",), (8,))
    reading = model.evaluate(program, mesh, tuple(layout))
    return program, types.SimpleNamespace(mesh=mesh, layout=tuple(layout), reading=reading), (params, tokens)


def test_a_compiled_candidate_partitions_as_its_estimate_planned():
    """The confirming compile writes the results at the storage priority too: at priority 0 an updated parameter's
    storage sharding flowed back through its gradient into the activations, and XLA split them on the embedding
    (the batch whole on every device) where Shardy's plan, with open results, split the batch. jaxlib 0.11's and
    0.12's XLA read every sharding without its priority (measured on 0.11.2 and 0.12.0.1), so there the compiled
    program splits the embedding whatever the plan says (docs/autoshard.md, *Limits*)."""
    from shardkit._jaxlib import JAXLIB_RELEASE
    from shardkit.autosharding.program import written

    program, candidate, (params, tokens) = fsdp_candidate()
    module = written(program, candidate)
    results = str(ir_main(module)).split("->", 1)[1]
    assert '{"x"}p1' in results
    compiled = sk.load(module).compile(target="cpu:8")
    text = compiled.as_text()
    if JAXLIB_RELEASE < (0, 11):
        assert "f32[8,32,128]" in text and "f32[64,32,16]" not in text  # the batch split, the embedding whole
    else:
        assert "f32[64,32,16]" in text  # the priorities lost: the stored embedding split the activations
    want = jax.jit(embedded_step)(params, tokens)
    assert want["emb"].shape == (512, 128)


def ir_main(module):
    from jaxlib.mlir import ir

    return ir.SymbolTable(module.operation)["main"]


FOOTPRINT = """
module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=8]>
  func.func private @scores(%q: tensor<64x1024xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
      -> (tensor<64x1024xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.exponential %q {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : tensor<64x1024xf32>
    return %0 : tensor<64x1024xf32>
  }
  func.func @main(%q: tensor<64x1024xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %w: tensor<1024x256xf32>)
      -> tensor<64x256xf32> {
    %s = call @scores(%q) : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    %c = stablehlo.constant dense<2.0> : tensor<f32>
    %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<64x1024xf32>
    %m = stablehlo.multiply %s, %b {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>}
        : tensor<64x1024xf32>
    %t = stablehlo.tanh %m {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : tensor<64x1024xf32>
    %y = stablehlo.dot_general %t, %w, contracting_dims = [1] x [0]
        {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>}
        : (tensor<64x1024xf32>, tensor<1024x256xf32>) -> tensor<64x256xf32>
    return %y : tensor<64x256xf32>
  }
}
"""


def test_the_estimate_holds_a_calls_result_as_sharded_and_a_fused_chain_not_at_all():
    """The footprint reads a call's result as its callee returns it (here split 8 ways, not whole), a broadcast of a
    scalar as nothing (XLA fuses it into its users) and an elementwise value only elementwise ops read as nothing
    (``multiply`` feeds only ``tanh``): the peak is at the contraction, the arguments, the ``tanh`` it reads and its
    result (the call's result died at the ``multiply``; whole, 8 times its piece, it would be the peak)."""
    from jaxlib.mlir import ir

    from shardkit.autosharding.model import _Walker
    from shardkit.dialects import context

    module = ir.Module.parse(FOOTPRINT, context())
    walker = _Walker(module)
    _, _, peak = walker.function(ir.SymbolTable(module.operation)["main"], donated=(False, False))
    piece = 8 * 1024 * 4  # one device's rows of a [64, 1024] f32
    weights = 1024 * 256 * 4
    assert peak == piece + weights + piece + 8 * 256 * 4
    assert 8 * piece + piece + weights > peak  # a whole call result would have been the peak


def test_the_mesh_search_puts_the_slices_axis_first_on_a_multi_slice_target():
    """On several slices the mesh searched with every axis free is the slices' axis before the torus's own
    (the target lays a mesh's major axis across its slices: the data-center network)."""
    from shardkit.autosharding import model
    from shardkit.autosharding.search import Search
    from shardkit.executor import targets
    from shardkit.inspect.hardware import hardware

    machine = model.Machine(targets.target("tpu-v5e:2x2,slices=2"), hardware("tpu-v5e"), None)
    assert machine.slices == 2 and machine.torus_shape == (2, 2)
    search = Search.__new__(Search)
    search.machine = machine
    assert [str(m) for m in search.torus_aligned(space.mesh_shapes(8))] == ["x=2 y=2 z=2"]
    placed = machine.target.mesh(sk.AbstractMesh((2, 2, 2), ("x", "y", "z")))
    assert [{d.slice_index for d in placed.devices[i].flat} for i in range(2)] == [{0}, {1}]


def test_a_model_too_large_to_replicate_starts_from_its_state_stored():
    """Six weights each as large as the limit allows for all of them together: replicated, no single move (one
    weight stored, one axis) fits; the descent starts from every large weight stored (ZeRO-3's layout) instead."""

    def deep(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return x.sum()

    rng = np.random.default_rng(6)  # its own numbers: the sum below is 16,384 float32 values in another order
    ws = [(rng.normal(size=(256, 256)) / 16).astype(np.float32) for _ in range(6)]  # scaled as an init scales them
    x = rng.normal(size=(64, 256)).astype(np.float32)
    replicated = sum(w.nbytes for w in ws)
    plan = sk.autoshard(deep, ws, x, target="cpu:8", memory_limit=replicated // 3, confirm=0, workers=0)
    assert plan.memory_per_device <= replicated // 3
    assert all(any(s.spec) for s in plan.in_shardings[0])  # every weight split
    got = plan.jit()(*placed(plan, (ws, x)))
    np.testing.assert_allclose(float(got), float(jax.jit(deep)(ws, x)), rtol=1e-4, atol=1e-3)


def test_steps_within_the_noise_rank_by_footprint():
    """Estimates within ``GAIN`` of each other are a tie the estimate cannot break, and the smaller footprint ranks
    first (on two slices XLA refused the 16B decoder's best estimate, 15.9 GiB of 16, where another 0.1% slower
    held 14.1 GiB); a step slower by more than the noise ranks after a tie, whatever its footprint, and every
    candidate that fits before any that does not."""
    from shardkit.autosharding.model import Estimate
    from shardkit.autosharding.search import GAIN, Candidate, Search

    mesh = space.MeshShape(("x",), (8,))

    def candidate(i: int, step: float, gib: float) -> Candidate:
        estimate = Estimate(mesh, step, step, 0.0, 0.0, (), int(gib * 2**30), 0)
        return Candidate(mesh, (space.Choice(((),) * i),), None, estimate, "one axis")

    search = Search.__new__(Search)
    search.limit = 16 * 2**30
    found = [
        candidate(0, 9.11, 15.9),
        candidate(1, 9.11 * (1 + GAIN / 2), 14.1),
        candidate(2, 9.11 * (1 + 2 * GAIN), 11.0),  # past the noise: after the tie
        candidate(3, 1.0, 17.0),  # fastest, but over the limit
    ]
    search.candidates = {c.key: c for c in found}
    assert search.ranked() == [found[1], found[0], found[2], found[3]]


def start_of(fun, args, limit):
    """Where the one-axis descent over 8 devices starts for ``fun`` under a memory ``limit``, and the program."""
    from shardkit.autosharding import model
    from shardkit.autosharding.search import Search
    from shardkit.executor import targets
    from shardkit.inspect.hardware import hardware

    program = api.from_function(fun, args, ())[0]
    machine = model.Machine(targets.target("cpu:8"), hardware("h100"), None)
    search = Search(program, machine, memory_limit=limit)
    return search.start(space.MeshShape(("x",), (8,)), "one axis"), program


def test_a_step_whose_batch_alone_does_not_fit_replicated_starts_open():
    """Replicated, the batch and its activations are over the limit, but one move (the batch split) fits: the
    descent starts from everything open, where data parallelism is one move away. ZeRO-3's start is for a state
    that no single move fits (GPT-2's step on a v5e pod started there stayed stored, 1.13x data parallelism's
    compiled step). Where no move fits, it starts stored."""

    def step(w, x):
        return jnp.tanh(x @ w).sum()

    w, x = normal(64, 64), normal(4096, 64)
    layout, program = start_of(step, (w, x), (2 * x.nbytes) // 3)
    assert layout == tuple(None for _ in program.groups)

    def deep(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return x.sum()

    ws = [normal(256, 256) for _ in range(6)]
    layout, program = start_of(deep, (ws, normal(64, 256)), sum(w.nbytes for w in ws) // 3)
    assert sum(c is not None and c.storage for c in layout) >= 6  # every weight (and the input, as large)


def test_on_several_slices_the_descent_also_starts_from_storage_inside_each_slice():
    """A weight whose dimensions the whole device count divides none of stays replicated on the one-axis mesh; on
    several slices the descent over the slices' mesh also starts from every large group stored inside each slice
    (the axes after the slices'), where the weight's storage is one layout away (MaxText's 16B decoder on eight
    v5e slices: from the spread layout the descent reached 21.5 s and a program XLA refused for 272 GB; from
    storage inside each slice, 9.15 s in 11.4 GiB)."""
    from shardkit.autosharding import model
    from shardkit.autosharding.search import Search
    from shardkit.executor import targets
    from shardkit.inspect.hardware import hardware

    def step(w, v, x):
        return jnp.tanh(jnp.tanh(x @ w) @ v).sum()

    args = (normal(12, 12), normal(12, 16), normal(64, 12))  # 12: four divides it, eight does not
    program = api.from_function(step, args, ())[0]
    machine = model.Machine(targets.target("tpu-v5e:2x2,slices=2"), hardware("tpu-v5e"), None)
    search = Search(program, machine, memory_limit=None)
    mesh = space.MeshShape(("x", "y", "z"), (2, 2, 2))
    base = tuple(None for _ in program.groups)
    stored = {g.name: c for g, c in zip(program.groups, search.stored(mesh, ("y", "z"), base))}
    assert stored["w"] == space.Choice((("y", "z"), ()), storage=True)  # the larger dimension; the first of a tie
    assert stored["v"] == space.Choice(((), ("y", "z")), storage=True)
    everywhere = {g.name: c for g, c in zip(program.groups, search.stored(mesh, ("x", "y", "z"), base))}
    assert everywhere["w"] is None  # eight divides neither of its dimensions: it keeps the base's decision
    assert everywhere["v"] == space.Choice(((), ("x", "y", "z")), storage=True)
    seen = []
    evaluate = search.evaluate

    def spy(states, found):
        seen.extend(states)
        return evaluate(states, found)

    search.evaluate = spy
    search.run(None)
    w = [g.name for g in program.groups].index("w")
    assert any(m == mesh and layout[w] == stored["w"] for m, layout in seen)


def test_a_layer_boundary_constraint_wins_where_the_activations_do_not_fit_whole():
    """A scan of tensor-parallel layers whose input the user gave replicated: the activations between the layers
    (the loop's carry, forward and back) are a decision of their own; replicated they and the residuals saved for
    the backward pass exceed the limit, constrained on the sequence at each layer's start they fit. The plan
    writes the constraint into its program (``jit()``), which computes what the unconstrained program does."""
    layers, seq, emb, hidden = 8, 2048, 256, 1024

    def step(w1, w2, x):
        def loss(ws):
            def layer(h, w):
                return h + jnp.tanh(h @ w[0]) @ w[1], None

            return (jax.lax.scan(layer, x, ws)[0] ** 2).sum()

        return jax.grad(loss)((w1, w2))

    mesh = sk.make_mesh((8,), ("x",))
    w1 = jax.device_put(normal(layers, emb, hidden) / 16, sk.NamedSharding(mesh, P(None, None, "x")))
    w2 = jax.device_put(normal(layers, hidden, emb) / 32, sk.NamedSharding(mesh, P(None, "x", None)))
    x = jax.device_put(normal(seq, emb), sk.NamedSharding(mesh, P()))
    program = from_function(step, (w1, w2, x), ())[0]
    (carry,) = [g for g in program.groups if g.boundary]
    assert carry.shape == (seq, emb) and len(carry.sites) == 2  # the forward loop's and the backward's
    # XLA's figure for a CPU program is everything live at once (its CPU "peak" leaves the temporaries out):
    # 45.1 MiB replicated, 42.5 MiB constrained; the estimates are 47.8 and 27.6 MiB
    limit = 44 * 2**20
    plan = sk.autoshard(step, w1, w2, x, target="cpu:8", memory_limit=limit, confirm=1, workers=0)
    (constraint,) = plan.constraints
    assert constraint.kind == "boundary" and constraint.sharding.spec == P("x", None)
    replicated = [c for c in plan.candidates if all(choice is None for choice in c.layout)]
    assert replicated and replicated[0].estimate.peak > limit >= plan.memory_per_device  # XLA's, compiled
    lowered = plan.jit().lower(w1, w2, x).as_text()
    assert lowered.count("sdy.sharding_constraint") >= 2
    got, want = plan.jit()(w1, w2, x), jax.jit(step)(w1, w2, x)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-3, atol=1e-5 * float(jnp.abs(w).max()))
