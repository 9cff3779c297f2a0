"""The communication report against jax: same programs, same shardings, jax's own compiled HLO as the oracle.

For each program, jax.jit(f, in_shardings, out_shardings) is compiled too, and its HLO text is counted here
with plain regular expressions (independently of shardkit's reader): the report must list the same number
of collectives of each kind, with the same bytes per device. Each reported group of devices is checked
against jax's mesh (the devices that vary along the reported axes, the others fixed), and where the
mathematics fixes the axes (a contraction over 'model' is an all-reduce over 'model') they are checked too.
Meshes: 1-D, 2-D, 3-D, and permuted device orders; both partitioners.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.inspect import groups as groups_, hlo
from shardkit.inspect.communication import Collective, CommunicationReport
from tests.examples import load_example
from tests.jax_oracle import gspmd_mode, jax_mesh, jax_named

ROOT = Path(__file__).resolve().parents[1]
DEVS = jax.devices()
PERM = [3, 1, 7, 5, 0, 2, 4, 6]
M1 = sk.make_mesh((8,), ("x",))
M2 = sk.make_mesh((4, 2), ("data", "model"))
M2P = sk.Mesh(np.array([DEVS[i] for i in PERM], dtype=object).reshape(4, 2), ("data", "model"))
M3 = sk.make_mesh((2, 2, 2), ("x", "y", "z"))
M3P = sk.Mesh(np.array([DEVS[i] for i in PERM], dtype=object).reshape(2, 2, 2), ("x", "y", "z"))
F32 = np.float32


@dataclasses.dataclass
class Case:
    """A program: ``make(mesh)`` -> (function, arg (shape, spec) list or pytree, out specs); ``expect``: for
    some kinds, the axes every collective of that kind must run over."""

    name: str
    make: Callable[[Any], tuple[Callable, Any, Any]]
    meshes: tuple[Any, ...] = (M2, M2P)
    expect: dict[str, set[tuple[str, ...]]] = dataclasses.field(default_factory=dict)


def simple(fn, args, out):
    return lambda mesh: (fn, args, out)


def shard_map_case(body, in_spec, out_spec):
    def make(mesh):
        def f(a):
            return jax.shard_map(body, mesh=jax_mesh(mesh), in_specs=in_spec, out_specs=out_spec)(a)

        return f, [((32, 16), P(*in_spec))], P(*out_spec)

    return make


def scan_matmul(a, b):
    def step(c, _):
        return jnp.tanh(c @ b), None

    return jax.lax.scan(step, a, None, length=5)[0]


def fori_matmul(a, b):
    return jax.lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c @ b), a)


JP = jax.sharding.PartitionSpec
CASES = [
    # matmuls: every place the contracting and batch dimensions can be sharded
    Case(
        "matmul_rows_cols",
        simple(lambda a, b: a @ b, [((16, 8), P("data", None)), ((8, 16), P(None, "model"))], P("data", "model")),
    ),
    Case(
        "matmul_contract_model",
        simple(lambda a, b: a @ b, [((16, 8), P(None, "model")), ((8, 16), P("model", None))], P()),
        expect={"all-reduce": {("model",)}},
    ),
    Case(
        "matmul_contract_both_axes",
        simple(lambda a, b: a @ b, [((16, 8), P(None, ("data", "model"))), ((8, 16), P(("data", "model"), None))], P()),
        expect={"all-reduce": {("data", "model")}},
    ),
    Case(
        "matmul_rows_and_contract",
        simple(lambda a, b: a @ b, [((16, 8), P("data", "model")), ((8, 16), P("model", None))], P("data", None)),
        expect={"all-reduce": {("model",)}},
    ),
    Case(
        "matmul_conflicting_rows",
        simple(lambda a, b: a @ b, [((16, 8), P("data", None)), ((8, 16), P(None, "data"))], P("data", None)),
    ),
    Case(
        "matmul_transposed_out",
        simple(lambda a, b: a @ b, [((16, 8), P("data", None)), ((8, 16), P())], P(None, "data")),
    ),
    Case(
        "einsum_batch_contract",
        simple(
            lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
            [((4, 8, 8), P("data", None, "model")), ((4, 8, 8), P("data", "model", None))],
            P("data"),
        ),
        expect={"all-reduce": {("model",)}},
    ),
    Case(
        "einsum_batch_on_model",
        simple(
            lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
            [((4, 8, 8), P("model", "data", None)), ((4, 8, 8), P("model", None, None))],
            P(None, "data"),
        ),
    ),
    Case(
        "vector_dot",
        simple(lambda v, w: v @ w, [((16,), P("data")), ((16, 8), P("data", "model"))], P("model")),
        expect={"all-reduce": {("data",)}},
    ),
    Case(
        "matmul_1d_contract",
        simple(lambda a, b: a @ b, [((16, 16), P(None, "x")), ((16, 8), P("x", None))], P()),
        meshes=(M1,),
        expect={"all-reduce": {("x",)}},
    ),
    Case(
        "matmul_3d_contract_yz",
        simple(lambda a, b: a @ b, [((16, 16), P("x", ("y", "z"))), ((16, 8), P(("y", "z"), None))], P("x")),
        meshes=(M3, M3P),
        expect={"all-reduce": {("y", "z")}},
    ),
    # reductions
    Case(
        "sum_rows",
        simple(lambda a: a.sum(0), [((16, 8), P("data", "model"))], P("model")),
        expect={"all-reduce": {("data",)}},
    ),
    Case("max_all", simple(lambda a: a.max(), [((16, 8), P("data", "model"))], P())),
    Case("mean_3d", simple(lambda a: a.mean((0, 2)), [((8, 8, 8), P("x", "y", "z"))], P("y")), meshes=(M3, M3P)),
    Case("argmax_rows", simple(lambda a: jnp.argmax(a, axis=0), [((16, 8), P("data", None))], P())),
    Case("cumsum_sharded", simple(lambda a: jnp.cumsum(a, axis=0), [((16, 8), P("data", None))], P("data", None))),
    # resharding
    Case("reshard_rows_to_cols", simple(lambda a: a * 2, [((16, 8), P("data", None))], P(None, "data"))),
    Case("reshard_to_replicated", simple(lambda a: a + 1, [((16, 8), P("data", "model"))], P())),
    Case("reshard_swap_axes", simple(lambda a: a * 2, [((16, 8), P("data", "model"))], P("model", "data"))),
    Case("reshard_1d_order", simple(lambda a: a * 2, [((16,), P(("data", "model")))], P(("model", "data")))),
    Case("reshape_sharded", simple(lambda a: a.reshape(8, 16), [((16, 8), P(None, "data"))], P("data", None))),
    # shard_map collectives
    Case(
        "shard_map_psum",
        shard_map_case(lambda b: jax.lax.psum(b, "data"), JP("data", "model"), JP(None, "model")),
        expect={"all-reduce": {("data",)}},
    ),
    Case(
        "shard_map_ppermute",
        shard_map_case(
            lambda b: jax.lax.ppermute(b, "model", [(0, 1), (1, 0)]), JP("data", "model"), JP("data", "model")
        ),
        expect={"collective-permute": {("model",)}},
    ),
    Case(
        "shard_map_all_gather",
        shard_map_case(
            lambda b: jax.lax.all_gather(b, "model", tiled=True, axis=1) * 1.0, JP("data", "model"), JP("data", "model")
        ),
        expect={"all-gather": {("model",)}},
    ),
    Case(
        "shard_map_psum_scatter",
        shard_map_case(
            lambda b: jax.lax.psum_scatter(b, ("data", "model"), tiled=True),
            JP(None, None),
            JP(("data", "model"), None),
        ),
        expect={"reduce-scatter": {("data", "model")}},
    ),
    Case(
        "shard_map_all_to_all",
        shard_map_case(lambda b: jax.lax.all_to_all(b, "data", 1, 0, tiled=True), JP("data", None), JP(None, "data")),
        expect={"all-to-all": {("data",)}},
    ),
    # loops
    Case(
        "scan_matmul",
        simple(scan_matmul, [((16, 8), P("data", "model")), ((8, 8), P("model", None))], P("data", None)),
        expect={"all-reduce": {("model",)}},
    ),
    Case(
        "fori_matmul_3d",
        simple(fori_matmul, [((16, 8), P("x", ("y", "z"))), ((8, 8), P(("y", "z"), None))], P("x", None)),
        meshes=(M3P,),
    ),
]


def build(case: Case, mesh: Any):
    fn, args, out = case.make(mesh)
    specs = [spec for _, spec in args]
    sk_in = tuple(sk.NamedSharding(mesh, s) for s in specs)
    sk_out = jax.tree.map(lambda s: sk.NamedSharding(mesh, s), out, is_leaf=lambda s: isinstance(s, P))
    sk_args = [sk.ShapeDtypeStruct(shape, F32) for shape, _ in args]
    jax_args = [jax.ShapeDtypeStruct(shape, F32) for shape, _ in args]
    return fn, sk_in, sk_out, sk_args, jax_args


def shardkit_report(jitted, args) -> tuple[CommunicationReport, Any]:
    lowered = jitted.lower(*args)
    return lowered.compile().communication(), lowered


_LINE = re.compile(
    r"^\s*(?:ROOT )?%\S+ = (.*?) (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
    r"(-start)?\(",
    re.MULTILINE,
)
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([\d,]*)\]")
_BYTES = {"f32": 4, "s32": 4, "u32": 4, "pred": 1, "bf16": 2, "f16": 2, "s64": 8, "f64": 8}


def oracle(text: str) -> dict[str, list[int]]:
    """kind -> result bytes per device of each collective, counted from jax's compiled HLO text."""
    found = collections.defaultdict(list)
    for shape, kind, _ in _LINE.findall(text):
        found[kind].append(
            sum(_BYTES[t] * int(np.prod([int(d) for d in dims.split(",") if d])) for t, dims in _ARRAY.findall(shape))
        )
    return {k: sorted(v) for k, v in found.items()}


def mine(report: CommunicationReport) -> dict[str, list[int]]:
    found = collections.defaultdict(list)
    for c in report.collectives:
        found[c.kind].append(sum(a.nbytes for a in c.results))
    return {k: sorted(v) for k, v in found.items()}


def check_groups_against_mesh(c: Collective, mesh: sk.Mesh) -> None:
    """Each group is exactly the devices of ``mesh`` that differ only along the reported (sub-)axes: a sub-axis
    ``x:(pre)size`` of an axis of ``n`` is the digit ``(x // (n // (pre * size))) % size`` (Shardy's notation)."""
    if not c.axes or c.kind == "collective-permute":
        return
    coords = {d.id: dict(zip(mesh.axis_names, idx)) for idx, d in np.ndenumerate(mesh.devices)}
    digits = []  # (axis, stride, size) of each reported (sub-)axis
    for label in c.axes:
        name, _, sub = label.partition(":")
        n = mesh.shape[name]
        pre, size = map(int, re.fullmatch(r"\((\d+)\)(\d+)", sub).groups()) if sub else (1, n)
        digits.append((name, n // (pre * size), size))

    def rest(device: int) -> tuple[int, ...]:  # the coordinates with every reported digit zeroed
        where = dict(coords[device])
        for name, stride, size in digits:
            where[name] -= (where[name] // stride) % size * stride
        return tuple(where.values())

    for group in c.groups:
        assert len({rest(d) for d in group}) == 1, (c, group)
        assert len(group) == int(np.prod([size for _, _, size in digits])), (c, group)


def run_case(case: Case, mesh: Any, partitioner: str) -> CommunicationReport:
    fn, sk_in, sk_out, sk_args, jax_args = build(case, mesh)
    report, _ = shardkit_report(sk.jit(fn, sk_in, sk_out, partitioner=partitioner), sk_args)
    jax_in = tuple(jax_named(s) for s in sk_in)
    jax_out = jax.tree.map(jax_named, sk_out, is_leaf=lambda s: isinstance(s, sk.NamedSharding))
    if partitioner == "gspmd":
        with gspmd_mode():
            text = jax.jit(fn, in_shardings=jax_in, out_shardings=jax_out).lower(*jax_args).compile().as_text()
    else:
        text = jax.jit(fn, in_shardings=jax_in, out_shardings=jax_out).lower(*jax_args).compile().as_text()
    assert mine(report) == oracle(text)
    for c in report.collectives:
        assert c.axes is not None, c
        check_groups_against_mesh(c, mesh)
        if c.kind in case.expect:
            assert c.axes in case.expect[c.kind], c
    return report


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_report_matches_jax(case, partitioner):
    for mesh in case.meshes:
        run_case(case, mesh, partitioner)


def test_collectives_are_found_where_expected():
    # The cases are only a check if they communicate: most must produce collectives, with every kind seen.
    kinds = collections.Counter()
    for case in CASES:
        report = run_case(case, case.meshes[0], "shardy")
        kinds.update(c.kind for c in report.collectives)
    assert set(kinds) == {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"}


def test_loops_carry_trip_counts():
    report = run_case(CASES[[c.name for c in CASES].index("scan_matmul")], M2, "shardy")
    inside = [c for c in report.collectives if c.loops]
    assert inside and all(c.loops == (5,) and c.executions == 5 for c in inside)
    assert report.by_kind()["all-reduce"].executions >= 5
    report = run_case(CASES[[c.name for c in CASES].index("fori_matmul_3d")], M3P, "shardy")
    assert {c.loops for c in report.collectives if c.kind == "all-reduce"} == {(3,)}


def jax_args_of(args: Any) -> Any:
    return jax.tree.map(
        lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=jax_named(s.sharding)),
        args,
        is_leaf=lambda s: isinstance(s, sk.ShapeDtypeStruct),
    )


def test_mlp_example_step(monkeypatch):
    example = load_example("mlp_2d")
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    train, params, data = example.build(mesh)
    args = example.arguments(params, data)
    report, _ = shardkit_report(train, args)
    # jax traces the example's own step, with jax's constraint in place of shardkit's
    monkeypatch.setattr(sk, "with_sharding_constraint", lambda x, s: jax.lax.with_sharding_constraint(x, jax_named(s)))
    shardings = {k: jax_named(v) for k, v in params.items()}
    out = (shardings, shardings, jax_named(sk.NamedSharding(mesh, P())))
    text = jax.jit(train.__wrapped__, out_shardings=out).lower(*jax_args_of(args)).compile().as_text()
    assert mine(report) == oracle(text)
    assert {c.over for c in report.collectives} == {"'x'", "'y'"}


def test_gpt_train_step():
    example = load_example("gpt_train_step")
    step, args = example.build(M2)
    report, _ = shardkit_report(step, args)
    params = {k: jax_named(s.sharding) for k, s in args[0].items()}
    scalar = jax_named(args[3].sharding)
    text = (
        jax.jit(example.train_step, out_shardings=(params, params, params, scalar, scalar), donate_argnums=(0, 1, 2))
        .lower(*jax_args_of(args))
        .compile()
        .as_text()
    )
    assert mine(report) == oracle(text)
    for c in report.collectives:
        check_groups_against_mesh(c, M2)
    assert any(c.loops == (example.LAYERS,) for c in report.collectives)  # the layer scan, forward and backward
    assert set(report.by_axes()) == {"'data'", "'model'"}


# -- Shardy's plan -----------------------------------------------------------------------------------------


def plan(case: Case, mesh: Any) -> CommunicationReport:
    fn, sk_in, sk_out, sk_args, _ = build(case, mesh)
    return sk.jit(fn, sk_in, sk_out).lower(*sk_args).communication()


@pytest.mark.parametrize(
    "name",
    [
        "matmul_contract_model",
        "matmul_contract_both_axes",
        "matmul_3d_contract_yz",
        "shard_map_psum",
        "shard_map_ppermute",
        "shard_map_all_gather",
        "sum_rows",
    ],
)
def test_shardy_plan_agrees_with_xla_on_simple_programs(name):
    case = CASES[[c.name for c in CASES].index(name)]
    for mesh in case.meshes:
        planned = plan(case, mesh)
        compiled = run_case(case, mesh, "shardy")
        assert [(c.kind, c.axes, c.operands, c.results) for c in planned.collectives] == [
            (c.kind, c.axes, c.operands, c.results) for c in compiled.collectives
        ]


def test_shardy_plan_of_a_reshard():
    planned = plan(CASES[[c.name for c in CASES].index("reshard_rows_to_cols")], M2P)
    assert [(c.kind, c.over, str(c.operands[0]), str(c.results[0])) for c in planned.collectives] == [
        ("all-to-all", "'data'", "f32[4,8]", "f32[16,2]")
    ]
    planned = plan(CASES[[c.name for c in CASES].index("reshard_1d_order")], M2P)
    permute = next(c for c in planned.collectives if c.kind == "collective-permute")
    assert permute.over == "('data','model')" and permute.wire_bytes == 8


def test_shardy_plan_rejects_a_gspmd_module():
    fn, sk_in, sk_out, sk_args, _ = build(CASES[0], M2)
    lowered = sk.jit(fn, sk_in, sk_out, partitioner="gspmd").lower(*sk_args)
    with pytest.raises(ValueError, match="GSPMD form .* Shardy has no plan"):
        lowered.communication()


def test_plan_counts_loops_of_jax_counted_form():
    """Shardy's plan runs the collectives of a scan or fori_loop by its trip count, as XLA's report does; a
    while_loop with a data-dependent bound has none ('?')."""
    for name, mesh, trips in (("scan_matmul", M2, 5), ("fori_matmul_3d", M3P, 3)):
        planned = plan(CASES[[c.name for c in CASES].index(name)], mesh)
        inside = [c for c in planned.collectives if c.loops]
        assert inside and all(c.loops == (trips,) and c.executions == trips for c in inside), name

    def until_small(a, b):
        return jax.lax.while_loop(lambda c: c.sum() > 1.0, lambda c: jnp.tanh(c @ b) * 0.5, a)

    a = sk.ShapeDtypeStruct((16, 8), np.float32, sharding=sk.NamedSharding(M2, P("data", "model")))
    b = sk.ShapeDtypeStruct((8, 8), np.float32, sharding=sk.NamedSharding(M2, P("model", None)))
    planned = sk.jit(until_small).lower(a, b).communication()
    inside = [c for c in planned.collectives if c.loops]
    assert inside and all(c.loops == (None,) and c.executions == 1 for c in inside)
    assert "?" in str(planned)


# -- groups to mesh axes -----------------------------------------------------------------------------------


def positions(mesh_shape, order=None):
    coords = np.stack(np.unravel_index(np.arange(int(np.prod(mesh_shape))), mesh_shape), axis=1)
    return coords if order is None else coords[np.argsort(order)]


@pytest.mark.parametrize(
    "groups, axes",
    [
        ([[0, 1], [2, 3], [4, 5], [6, 7]], ("y",)),
        ([[0, 2, 4, 6], [1, 3, 5, 7]], ("x",)),
        ([[0, 1, 2, 3, 4, 5, 6, 7]], ("x", "y")),
        ([[0, 2, 4, 6, 1, 3, 5, 7]], ("y", "x")),
        ([[0, 4], [1, 5], [2, 6], [3, 7]], ("x:(1)2",)),
        ([[0, 2], [1, 3], [4, 6], [5, 7]], ("x:(2)2",)),
        ([[i] for i in range(8)], ()),
        ([[0, 3], [1, 2], [4, 7], [5, 6]], None),  # not rows of the mesh
        ([[0, 1, 2], [3, 4, 5]], None),
    ],
)
def test_axes_of_groups(groups, axes):
    assert groups_.axes_of(groups, positions((4, 2)), ("x", "y"), (4, 2)) == axes


def test_axes_of_groups_on_permuted_partitions():
    # partition p sits at logical mesh position order.index(p)
    order = [5, 4, 3, 2, 1, 0, 7, 6]
    pos = positions((4, 2), order)
    assert groups_.axes_of([[5, 4], [3, 2], [1, 0], [7, 6]], pos, ("x", "y"), (4, 2)) == ("y",)
    assert groups_.axes_of([[5, 3, 1, 7], [4, 2, 0, 6]], pos, ("x", "y"), (4, 2)) == ("x",)


def test_group_modes():
    assert groups_.partition_groups([[0, 1]], channel=False, global_ids=None, num_partitions=2) == [[0], [1]]
    assert groups_.partition_groups([], channel=True, global_ids=True, num_partitions=3) == [[0, 1, 2]]
    assert groups_.partition_groups([[0]], channel=True, global_ids=False, num_partitions=3) == [[0, 1, 2]]
    assert groups_.partition_groups([[0, 2], [1, 3]], channel=True, global_ids=None, num_partitions=4) == [
        [0, 2],
        [1, 3],
    ]


def test_mesh_axis_groups_rejects_unknown_axes():
    with pytest.raises(ValueError, match=r"axes \['z'\] are not in the mesh"):
        groups_.mesh_axis_groups(np.arange(8), [("x", 4), ("y", 2)], [("z", None)])


# -- the hand-written async module (GPU forms) --------------------------------------------------------------


def test_async_forms():
    from jaxlib import xla_client as xc

    from shardkit.inspect import xla_report

    text = re.sub(r"^//.*\n", "", (ROOT / "tests/data/hlo/async_collectives.hlo").read_text(), flags=re.MULTILINE)
    report = xla_report(xc.hlo.hlo_module_from_text(text), DEVS, sk.make_mesh((4, 2), ("x", "y")))
    rows = [(c.kind, c.is_async, c.over, [str(a) for a in c.results], c.wire_bytes) for c in report.collectives]
    assert rows == [
        ("all-reduce", True, "'y'", ["f32[8,4]"], 128),
        ("all-gather", True, "'y'", ["f32[16,4]"], 128),
        ("collective-permute", True, "'x'", ["f32[8,4]"], 128),
        ("reduce-scatter", True, "'x'", ["f32[2,4]"], 96),
        ("all-to-all", True, "'x'", ["f32[8,4]"], 96),
        ("all-reduce", False, "'x:(1)2'", ["f32[8,4]"], 128),
    ]
    assert report.collectives[0].source == "/src/model.py:12"


# -- output forms -------------------------------------------------------------------------------------------


GOLDEN = """\
XLA's partitioned program: 2 collectives on 8 devices (data=4 model=2); 352 B sent per device per call
  #  kind        over     operand/device  result/device  bytes/device  sent/device  runs  op            source
  0  all-reduce  'model'  f32[4,16]       f32[4,16]      256           256          1     jit(f)/dot_general  SRC
  1  all-reduce  'data'   f32[16]         f32[16]        64            96           1     jit(f)/reduce_sum   SRC
by kind:
              ops  runs  sent/device
  all-reduce  2    2     352 B
by mesh axes:
           ops  runs  sent/device
  'model'  1    1     256 B
  'data'   1    1     96 B
"""


def f(a, b):
    return jnp.tanh(a @ b).sum(0)


def test_printed_report_and_json():
    x = sk.ShapeDtypeStruct((16, 8), F32, sharding=sk.NamedSharding(M2, P("data", "model")))
    w = sk.ShapeDtypeStruct((8, 16), F32, sharding=sk.NamedSharding(M2, P("model", None)))
    report, _ = shardkit_report(sk.jit(f), (x, w))
    text = re.sub(r"\S*test_inspect_communication\.py:\d+", "SRC", str(report))
    assert re.sub(r" +", " ", text) == re.sub(r" +", " ", GOLDEN)
    data = json.loads(report.to_json())
    assert data["by_kind"] == {"all-reduce": {"ops": 2, "executions": 2, "wire_bytes": 352}}
    assert [c["axes"] for c in data["collectives"]] == [["model"], ["data"]]
    assert data["collectives"][0]["groups"] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert data["collectives"][1]["source"].endswith(f"test_inspect_communication.py:{f.__code__.co_firstlineno + 1}")


def test_wire_bytes_formulas():
    a = hlo.ArrayShape("f32", (8,))  # 32 bytes
    big = hlo.ArrayShape("f32", (32,))

    def make(kind, n, ops=(a,), res=(a,), **kw):
        return Collective(kind, "c", ops, res, ("x",), n, **kw)

    assert make("all-reduce", 4).wire_bytes == 48  # 2 * 3/4 * 32
    assert make("all-gather", 4, res=(big,)).wire_bytes == 96  # 3/4 * 128
    assert make("reduce-scatter", 4, ops=(big,)).wire_bytes == 96
    assert make("all-to-all", 4).wire_bytes == 24
    assert make("collective-permute", 2).wire_bytes == 32
    assert make("collective-permute", 1, moves_data=False).wire_bytes == 0
    assert make("all-slice", 4).wire_bytes == 0
    assert make("all-reduce", 1).wire_bytes == 0
    looped = make("all-reduce", 4, loops=(3, None, 2))
    assert looped.executions == 6
    report = CommunicationReport("xla", (("x", 4),), 4, (looped, make("all-gather", 4, res=(big,))))
    assert report.wire_bytes == 48 * 6 + 96
    assert "3x?x2" in str(report)
    stream = io.StringIO()
    stream.write(str(CommunicationReport("xla", None, 8, ())))
    assert (
        stream.getvalue() == "XLA's partitioned program: 0 collectives on 8 devices (no mesh); 0 B sent per "
        "device per call\n"
    )
