"""report.explain(): every collective of the examples and of programs after public reproductions explained, its
origins concrete (an argument, result or constraint with a Python line), its shardings Shardy's own.

The programs follow the reproductions in the issues users file most about sharded compilers: jax#18591
(an "involuntary full rematerialization" from a reshape of a sharded array), jax#20381 (an all-gather or
all-reduce around a dot whose operands disagree), xla#15207 (an embedding lookup into a sharded table) and
xla#7148 (collectives XLA inserts without saying why: concatenation, cumulative sums, uneven dimensions); plus
the shard_map boundary and explicit collectives.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.inspect import explain as explain_
from shardkit.tools.report import ReportMain
from tests.examples import load_example
from tests.jax_oracle import jax_mesh

ROOT = Path(__file__).resolve().parents[1]
M2 = sk.make_mesh((4, 2), ("data", "model"))
F32 = np.float32
CONCRETE = {"argument", "result", "constraint", "shard_map input", "shard_map output"}


def struct(shape, spec, dtype=F32):
    return sk.ShapeDtypeStruct(shape, dtype, sharding=sk.NamedSharding(M2, P(*spec)))


def constrain(x, *spec):
    return sk.with_sharding_constraint(x, sk.NamedSharding(M2, P(*spec)))


def shard_map(body, in_specs, out_specs):
    return jax.shard_map(body, mesh=jax_mesh(M2), in_specs=in_specs, out_specs=out_specs)


# name -> (function, argument structs, out spec or None)
PROGRAMS = {
    "jax18591_reshape_remat": (lambda x: x.reshape(128) * 2, [struct((8, 16), ("data", "model"))], ("data",)),
    "jax18591_transpose_constraint": (
        lambda x: constrain(x.T, "data", None),
        [struct((16, 8), ("data", None))],
        None,
    ),
    "jax20381_contracting_both_sides": (
        lambda a, b: a @ b,
        [struct((16, 32), (None, "model")), struct((32, 16), ("model", None))],
        (),
    ),
    "jax20381_out_sharding_disagrees": (
        lambda a, b: a @ b,
        [struct((16, 32), ("data", None)), struct((32, 16), (None, "model"))],
        ("model", "data"),
    ),
    "xla15207_embedding_lookup": (
        lambda table, ids: table[ids],
        [struct((64, 16), ("model", None)), struct((8,), ("data",), np.int32)],
        ("data", None),
    ),
    "xla15207_scatter_add": (
        lambda table, ids, rows: table.at[ids].add(rows),
        [struct((64, 16), ("model", None)), struct((8,), ("data",), np.int32), struct((8, 16), ("data", None))],
        ("model", None),
    ),
    "xla7148_concatenate_sharded": (
        lambda a, b: jnp.concatenate([a, b], axis=0) * 2,
        [struct((8, 16), ("data", None)), struct((8, 16), ("data", None))],
        ("data", None),
    ),
    "xla7148_cumsum_sharded_axis": (lambda x: jnp.cumsum(x, axis=0), [struct((16, 8), ("data", None))], None),
    "xla7148_uneven_constraint": (
        lambda x: constrain(jnp.tanh(x), None, "model").sum(0),
        [struct((4, 9), ("data", None))],
        (),
    ),
    "argmax_over_sharded_axis": (lambda x: jnp.argmax(x, axis=1), [struct((8, 16), ("data", "model"))], ("data",)),
    "shard_map_psum": (
        shard_map(lambda x: jax.lax.psum(x, "model"), jax.P("data", "model"), jax.P("data", None)),
        [struct((8, 16), ("data", "model"))],
        ("data", None),
    ),
    "shard_map_boundary": (
        shard_map(lambda x: x * 2, jax.P(None, "model"), jax.P(None, "model")),
        [struct((8, 16), ("data", None))],
        ("data", None),
    ),
    # a shard_map on a loop's value, as MaxText runs its splash attention in each scanned layer: jaxlib's
    # sdy-apply-sharding-constraints, recording origins, crashed on it (explain.constrain_shard_map_operands)
    "shard_map_in_a_loop": (
        lambda x: jax.lax.scan(
            lambda c, _: (shard_map(lambda a: a * 2, jax.P(None, "model"), jax.P(None, "model"))(c), None),
            x,
            None,
            length=2,
        )[0],
        [struct((8, 16), ("data", None))],
        ("data", None),
    ),
}


def lowered_program(name: str) -> sk.Lowered:
    fn, args, out = PROGRAMS[name]
    kwargs = {} if out is None else {"out_shardings": sk.NamedSharding(M2, P(*out))}
    return sk.jit(fn, **kwargs).lower(*args)


def check_explained(explanation: explain_.Explanation) -> None:
    assert len(explanation.items) == len(explanation.report.collectives)
    for item in explanation.items:
        assert item.causes, item.summary
        origins = [o for c in item.causes for o in c.origins]
        assert any(o.kind in CONCRETE and o.source for o in origins), item.summary
        assert all(c.reason in explain_.REASONS for c in item.causes)
        assert item.summary.startswith(item.collective.kind)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_public_reproductions_explained(name):
    lowered = lowered_program(name)
    plan = lowered.communication()
    xla = lowered.compile().communication()
    assert plan.collectives or xla.collectives, f"{name} communicates nothing: not a useful reproduction"
    check_explained(plan.explain())
    check_explained(xla.explain())


def test_reasons_of_reproductions():
    def reasons(name):
        lowered = lowered_program(name)
        items = lowered.communication().explain().items or lowered.compile().communication().explain().items
        return set(items[0].reasons)

    expected = {
        "jax18591_reshape_remat": {"in-sharding"},
        "jax18591_transpose_constraint": {"constraint"},
        "jax20381_contracting_both_sides": {"contracting"},
        "jax20381_out_sharding_disagrees": {"out-sharding"},
        "xla15207_embedding_lookup": {"lookup"},
        "xla7148_cumsum_sharded_axis": {"partitioner"},
        "argmax_over_sharded_axis": {"reduction"},
        "shard_map_psum": {"explicit"},
        "shard_map_boundary": {"shard_map"},
        "shard_map_in_a_loop": {"shard_map"},
    }
    assert {name: reasons(name) for name in expected} == expected


def test_xla_collectives_explained_by_their_own_reshard():
    """Whatever line XLA's release gives a collective (the op that needs it, the value it moves, or none): the
    shard_map's all-gather of its argument is the reshard into in_specs, that of its result the one out to the
    result's sharding; argmax's all-gathers (an all-reduce in Shardy's plan up to jaxlib 0.10, none after) are a
    reduction over its sharded axis."""
    boundary = lowered_program("shard_map_boundary").compile().communication().explain()
    consumers = {i.collective.axes: i.causes[0].consumer.split(" at ")[0] for i in boundary.items}
    assert consumers == {("data",): "shard_map", ("model",): "the result of main"}
    argmax = lowered_program("argmax_over_sharded_axis").compile().communication().explain()
    assert {(i.collective.kind, i.reasons, i.causes[0].axes) for i in argmax.items} == {
        ("all-gather", ("reduction",), ("model",))
    }


def test_contracting_names_both_arguments():
    (item,) = lowered_program("jax20381_contracting_both_sides").communication().explain().items
    (cause,) = item.causes
    assert (cause.have.role, cause.have.spec, cause.need.spec) == ("lhs", "P(None, 'model')", "P('model', None)")
    assert [(o.kind, o.name, o.axes) for o in cause.origins] == [
        ("argument", "a", ("model",)),
        ("argument", "b", ("model",)),
    ]
    assert all(
        o.source and o.source.endswith(f"{Path(__file__).name}:{_line_of('lambda a, b: a @ b')}") for o in cause.origins
    )


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if text in line)


# -- values replicated by a user sharding -------------------------------------------------------------------------

MXY = sk.make_mesh((4, 2), ("x", "y"))


def on_xy(shape, *spec):
    return sk.ShapeDtypeStruct(shape, F32, sharding=sk.NamedSharding(MXY, P(*spec)))


def regather(a, spec):
    doubled = a * 2
    return sk.with_sharding_constraint(doubled, sk.NamedSharding(MXY, P(*spec))).sum()


def origins_at(why: explain_.Explanation, kind: str, text: str) -> list[list[str]]:
    """For each collective: the specs of its origins of ``kind`` at the line holding ``text``."""
    where = f"{Path(__file__).name}:{_line_of(text)}"
    return [
        [o.spec for c in i.causes for o in c.origins if o.kind == kind and o.source.endswith(where)] for i in why.items
    ]


@pytest.mark.parametrize("spec", [(), ("x",)])
def test_constraint_that_regathers_is_named(spec):
    """``with_sharding_constraint(a * 2, P())`` replicates the multiply: Shardy records the axes a value has, not
    those it lacks, so shardkit traces why the multiply (and the constant it multiplies by) lacks 'x' and 'y' to
    the constraint. Every collective, planned or XLA's, names it and its line; XLA runs Shardy's all-gather over
    ('x', 'y') one axis at a time, each step the plan's gather into the constraint's sharding."""
    lowered = sk.jit(lambda a: regather(a, spec)).lower(on_xy((8, 8), "x", "y"))
    plan, xla = lowered.communication().explain(), lowered.compile().communication().explain()
    given = "P()" if not spec else "P('x', None)"
    for why in (plan, xla):
        check_explained(why)
        assert all(given in found for found in origins_at(why, "constraint", "with_sharding_constraint(doubled")), why
    (planned,) = [i for i in plan.items if i.collective.kind == "all-slice"]  # the constant, sliced to multiply
    have = planned.causes[0].have
    assert (have.spec, [o.spec for o in have.origins if o.kind == "constraint"]) == (given, [given])
    gathers = [i for i in xla.items if i.collective.kind == "all-gather"]
    assert gathers, xla
    for item in gathers:
        (cause,) = item.causes
        assert (cause.reason, cause.have.spec, cause.need.spec) == ("constraint", "P('x', 'y')", given)
        assert ("argument", "a") in [(o.kind, o.name) for o in cause.have.origins]
        assert f"needs {given} (constraint {given} at " in item.summary


def test_replicated_out_sharding_is_named():
    """A result replicated by ``out_shardings``: XLA's all-gathers (over one axis at a time) are the plan's gather
    into it, not the slicing of the replicated argument the plan also holds."""
    lowered = sk.jit(lambda a, b: jnp.sin(a + b), out_shardings=sk.NamedSharding(MXY, P())).lower(
        on_xy((8, 8), "x", "y"), on_xy((8, 8))
    )
    plan, xla = lowered.communication().explain(), lowered.compile().communication().explain()
    for why in (plan, xla):
        check_explained(why)
    (gather,) = [i for i in plan.items if i.collective.kind == "all-gather"]
    assert gather.causes[0].reason == "out-sharding"
    assert xla.items and all(i.collective.kind == "all-gather" for i in xla.items)
    assert origins_at(xla, "result", "jnp.sin(a + b)") == [["P()"]] * len(xla.items)
    assert all(i.causes[0] == gather.causes[0] for i in xla.items)


def test_replicated_argument_is_named():
    """An argument given replicated (``P()``) that a sharded contraction needs sliced: the plan slices it, XLA
    gathers the other operand instead; both name the argument, its sharding and its line."""
    lowered = sk.jit(lambda a, b: b @ a).lower(on_xy((8, 8), "x", "y"), on_xy((8, 8)))
    plan, xla = lowered.communication().explain(), lowered.compile().communication().explain()
    for why in (plan, xla):
        check_explained(why)
    (planned,) = [i for i in plan.items if i.collective.kind == "all-slice"]
    (item,) = xla.items
    for cause in (planned.causes[0], item.causes[0]):
        assert (cause.reason, cause.have.spec) == ("in-sharding", "P()")
        assert [(o.kind, o.name, o.spec) for o in cause.have.origins] == [("argument", "b", "P()")]
    assert origins_at(xla, "argument", "lambda a, b: b @ a") == [["P()", "P('x', 'y')"]]


def transformer_step():
    t = load_example("transformer")
    shardings = {k: s for k, (_, s) in t.PARAMS.items()}
    batch, scalar = t.BATCH_SHARDING, t.named()
    step = sk.jit(
        t.train_step,
        in_shardings=(shardings, shardings, shardings, scalar, batch, batch),
        out_shardings=(shardings, shardings, shardings, scalar, scalar),
    )
    params = {k: sk.ShapeDtypeStruct(shape, F32, sharding=s) for k, (shape, s) in t.PARAMS.items()}
    tokens = sk.ShapeDtypeStruct((t.BATCH, t.SEQ), np.int32, sharding=batch)
    return t, step.lower(params, params, params, sk.ShapeDtypeStruct((), F32, sharding=scalar), tokens, tokens)


@pytest.fixture(scope="module")
def transformer():
    return transformer_step()


def test_transformer_every_collective_explained(transformer):
    _, lowered = transformer
    check_explained(lowered.communication().explain())
    xla = lowered.compile().communication().explain()
    check_explained(xla)
    # the padded vocabulary: XLA's all-gathers of f32[64,258] of the head's three Adam updates (params, m, v) into
    # their replicated out_shardings. jaxlib 0.10's XLA gives them no metadata, 0.11's that of the update computing
    # the value; either way each is located at its own update's line, matched to Shardy's all-gather of that
    # update, and says it was padded
    padded = [i for i in xla.items if any(r.dims == (64, 258) for r in i.collective.results)]
    results = set()
    for item in padded:
        assert "uneven" in item.reasons
        (cause,) = item.causes
        assert cause.reason == "out-sharding"
        assert item.collective.source == cause.value.source
        assert {(o.kind, o.spec) for o in cause.need.origins} <= {("result", "P()")}
        assert any(o.kind == "constraint" and o.source.endswith("transformer.py:73") for o in cause.have.origins)
        results |= {o.name for o in cause.need.origins}
    assert results == {"result[0]['head']", "result[1]['head']", "result[2]['head']"}


def test_mlp_every_collective_explained():
    example = load_example("mlp_2d")
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    train, params, data = example.build(mesh)
    args = example.arguments(params, data)
    lowered = train.lower(*args)
    check_explained(lowered.communication().explain())
    xla = lowered.compile().communication().explain()
    check_explained(xla)
    (forward,) = [i for i in xla.items if i.collective.over == "'y'"]
    assert forward.reasons == ("contracting",)
    assert {o.name for o in forward.causes[0].origins} == {"p['w2']", "jit(step)/jvp()/shardkit_sharding_constraint"}


def test_shardings_are_what_propagation_assigns(transformer):
    """Differential: one of each reshard's two shardings is the one Shardy's propagation gives the value (the
    producer's, or, where the op computes in another sharding and reshards its result, the consumer's)."""
    _, lowered = transformer
    table = lowered.run_passes("propagate").shardings()
    by_value: dict[tuple, set[str]] = {}
    for row in table:
        key = (row.op, f"{_short(row.dtype)}[{','.join(map(str, row.shape))}]", row.op_name, row.source)
        by_value.setdefault(key, set()).add(_full(row.spec, len(row.shape)))
    checked = 0
    for item in lowered.communication().explain().items:
        for cause in item.causes:
            v = cause.value
            if cause.have.role != "producer" or not v.op.startswith("stablehlo.") or v.index:
                continue
            key = (v.op, v.type, v.op_name, v.source)
            if key in by_value:
                assert {cause.have.spec, cause.need.spec} & by_value[key], (item.summary, by_value[key])
                checked += 1
    assert checked >= 5


def _short(dtype: str) -> str:
    return {"f32": "f32", "i32": "s32", "i1": "pred"}.get(dtype, dtype)


def _full(spec: Any, rank: int) -> str:
    entries = [*spec, *[None] * (rank - len(spec))]
    return "P()" if not any(entries) else "P(" + ", ".join(map(repr, entries)) + ")"


def test_json_and_text(transformer):
    _, lowered = transformer
    explanation = lowered.communication().explain()
    data = json.loads(explanation.to_json())
    assert data["stage"] == "shardy"
    assert len(data["collectives"]) == len(explanation.items)
    first = data["collectives"][0]
    assert {"collective", "summary", "reasons", "causes", "notes", "unexplained"} <= set(first)
    assert {"reason", "value", "have", "need", "consumer"} <= set(first["causes"][0])
    text = str(explanation)
    assert text.splitlines()[0].startswith("Shardy's plan (before XLA): why each of")
    assert len(text.splitlines()) == 1 + len(explanation.items)


def test_image(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "why.png"
    lowered_program("jax20381_contracting_both_sides").communication().explain().save_image(path)
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_report_without_module_cannot_be_explained():
    report = lowered_program("jax20381_contracting_both_sides").communication()
    import dataclasses

    with pytest.raises(ValueError, match="no StableHLO module to explain it from"):
        dataclasses.replace(report, program=None).explain()


def test_module_without_main():
    from jaxlib.mlir import ir

    from shardkit.dialects import context

    module = ir.Module.parse("func.func @f() { return }", context())
    with pytest.raises(ValueError, match="no function @main"):
        explain_.analyse(module)


# -- shardkit-report --explain -----------------------------------------------------------------------------------


def run_tool(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = ReportMain(argv, stdout=out, stderr=err).run()
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def mlir_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("explain") / "dot.mlir"
    path.write_text(lowered_program("jax20381_contracting_both_sides").as_text(debug_info=True))
    return path


@pytest.mark.parametrize("plan", [False, True])
def test_cli_explain(mlir_file, plan):
    code, out, err = run_tool([str(mlir_file), "--explain", "--json"] + ["--plan"] * plan)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["stage"] == ("shardy" if plan else "xla")
    assert [c["reasons"] for c in data["collectives"]] == [["contracting"]]
    code, out, _ = run_tool([str(mlir_file), "--explain"] + ["--plan"] * plan)
    assert code == 0 and "all-reduce over 'model'" in out and "because" in out


def test_a_module_file_is_named_at_every_line_of_its_explanation(tmp_path):
    """Read from a file, a module's locations name the file (MLIR parses it from there), so the explanation, its JSON
    and the page say ``step.mlir:N`` (they said ``-:N``); an argument without a name is ``argument 1`` (once)."""
    path = tmp_path / "step.mlir"
    path.write_text(lowered_program("jax20381_contracting_both_sides").as_text())
    code, out, err = run_tool([str(path), "--explain", "--html", str(tmp_path / "step.html")])
    assert (code, err) == (0, "")
    places = re.findall(r" at (\S+):\d+\b", out)
    assert places and {Path(p).name for p in places} == {"step.mlir"}, out
    assert "(argument 1 P(" in out and "argument argument" not in out
    page = (tmp_path / "step.html").read_text()
    assert "step.mlir:" in page and '"-:' not in page
    code, out, _ = run_tool([str(path), "--explain", "--json", "--plan"])
    origins = [o for c in json.loads(out)["collectives"] for cause in c["causes"] for o in cause["have"]["origins"]]
    assert origins and all(o["source"].startswith(f"{path}:") for o in origins)
    assert {o["label"] for o in origins} <= {"argument 0", "argument 1"}
    plan = sk.load(path).communication()  # sk.load of a path reads it as the tools do
    assert plan.collectives and all(c.source.startswith(f"{path}:") for c in plan.collectives)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--explain", "--table"], "--explain explains the communication report; it does not apply to --table"),
        (["--diff"], "expected two inputs (A.mlir B.mlir), got 1"),
    ],
)
def test_cli_explain_errors(mlir_file, argv, message):
    code, out, err = run_tool([str(mlir_file), *argv])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and message in err


def test_a_scanned_layers_gather_matches_the_plans_of_its_shape():
    """XLA gathers a scanned layer's slice of its stacked weights with the layer dimension of size 1 kept
    (``bf16[1,256,512]``), Shardy's plan of the loop's body without it (``bf16[256,512]``): they fit, ahead of a
    gather of another weight at the same line (every dense layer of a model is one line of its Dense class)."""
    from shardkit.inspect import matching
    from shardkit.inspect.communication import Collective
    from shardkit.inspect.hlo import ArrayShape

    def gather(piece, whole):
        return Collective("all-gather", "g", (ArrayShape("bf16", piece),), (ArrayShape("bf16", whole),), ("x",), 4)

    xla = gather((1, 64, 512), (1, 256, 512))
    assert matching._fit(xla, gather((64, 512), (256, 512))) == 1
    assert matching._fit(xla, gather((64, 2, 128), (256, 2, 128))) == 2


def test_an_opaque_kernel_is_named_as_one():
    """A Pallas kernel (a ``tpu_custom_call``, lowered for TPU from this machine) is opaque to XLA's partitioner: XLA
    gathers its sharded operand for it, and the explanation says so, not that the op reduces."""
    from jax.experimental import pallas as pl

    def double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    def f(x):
        return pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    x = sk.ShapeDtypeStruct((16, 128), F32, sharding=sk.NamedSharding(sk.AbstractMesh((2, 2), ("a", "b")), P("a")))
    compiled = sk.jit(f, platform="tpu").lower(x).compile(target="tpu-v5e:2x2")
    explanation = compiled.communication().explain()
    gathers = [i for i in explanation.items if i.collective.kind == "all-gather"]
    assert gathers and all(i.reasons == ("kernel",) for i in gathers)
    assert "opaque kernel" in gathers[0].summary and "run whole on each device" in gathers[0].summary


def test_a_host_callback_runs_on_one_device():
    """jax runs a host callback on one device (a maximal sharding): XLA gathers its sharded operand to that device and
    sends its result from there to the devices of its user; both collectives are explained so."""
    x = sk.ShapeDtypeStruct((8, 4), F32, sharding=sk.NamedSharding(M2, P("data")))
    out = sk.NamedSharding(M2, P("data"))
    f = sk.jit(lambda x: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x) * 2, out_shardings=out)
    explanation = f.lower(x).compile().communication().explain()
    assert not explanation.unexplained
    reasons = {i.collective.kind: i.reasons[0] for i in explanation.items}
    assert reasons == {"all-gather": "callback", "all-reduce": "callback-result"}
    gather, sent = sorted(explanation.items, key=lambda i: i.collective.kind == "all-reduce")
    assert re.search(r"host callback.*(which jax runs|run) on one device", gather.summary)
    assert "a host callback's result, made on one device," in sent.summary and "P('data', None)" in sent.summary
