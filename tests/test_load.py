"""Loading StableHLO shardkit did not lower.

Differential: programs that ``jax.jit`` lowered with shardings (both partitioners), exported with ``jax.export``,
then loaded and run by shardkit give jax's numbers (``Exported.call``) and equivalent output shardings. Also: every
source format, device binding, ``with_module``, shardkit's own artifacts read by jax, Shardy's own test programs,
and each refusal.
"""

from __future__ import annotations

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
from jax.sharding import NamedSharding as JNS, PartitionSpec as JP
from jaxlib.mlir import ir

import shardkit as sk
from shardkit import passes
from shardkit.dialects import context

DEVS = jax.devices()
ROOT = Path(__file__).resolve().parents[1]


def jmesh(shape: tuple[int, ...], names: tuple[str, ...], order: list[int] | None = None) -> jax.sharding.Mesh:
    devices = np.array(DEVS, dtype=object)[order if order is not None else list(range(len(DEVS)))]
    auto = (jax.sharding.AxisType.Auto,) * len(names)
    return jax.sharding.Mesh(devices.reshape(shape), names, axis_types=auto)


M42 = jmesh((4, 2), ("x", "y"))
M8 = jmesh((8,), ("d",))
M222 = jmesh((2, 2, 2), ("a", "b", "c"))
PERMUTED = jmesh((4, 2), ("x", "y"), order=[3, 1, 0, 2, 7, 5, 4, 6])


@dataclasses.dataclass
class Case:
    name: str
    fn: Callable
    args: list[Any]  # a pytree per positional argument of (shape, dtype, spec or None) leaves
    mesh: jax.sharding.Mesh | None = M42
    out: Any = None  # out_shardings as specs (a prefix tree), None to leave them to the compiler
    donate: tuple[int, ...] = ()
    bind_mesh: bool = False  # load with mesh= (a mesh whose devices are not the first ones in order)


def _leaf(x: Any) -> bool:
    return isinstance(x, tuple) and len(x) == 3 and isinstance(x[0], tuple)


F32, BF16, I32 = np.float32, jnp.bfloat16, np.int32


def _smap(f, in_specs, out_specs, mesh=M42):
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


CASES = [
    Case("scale", lambda x: x * 2, [((8, 2), F32, JP("x", "y"))], out=JP("x", "y")),
    Case("matmul", lambda a, b: a @ b, [((8, 4), F32, JP("x")), ((4, 6), F32, JP(None, "y"))], out=JP("x", "y")),
    Case(
        "mlp",
        lambda x, w1, w2: jnp.tanh(x @ w1) @ w2,
        [((16, 8), F32, JP("x")), ((8, 32), F32, JP(None, "y")), ((32, 4), F32, JP("y"))],
        out=JP("x"),
    ),
    Case("reduce", lambda x: jnp.sum(x, axis=0), [((8, 4), F32, JP("x", "y"))]),
    Case(
        "constraint",
        lambda x: jax.lax.with_sharding_constraint(x * 2, JNS(M42, JP("y"))) + 1,
        [((8, 2), F32, JP("x", "y"))],
    ),
    Case("shard_map_psum", _smap(lambda a: jax.lax.psum(a, "x"), JP("x"), JP()), [((8, 2), F32, JP("x"))]),
    Case(
        "shard_map_gather_permute",
        _smap(
            lambda a: jax.lax.all_gather(
                jax.lax.ppermute(a, "x", [(i, (i + 1) % 4) for i in range(4)]), "y", tiled=True
            ),
            JP("x", "y"),
            JP("x"),
        ),
        [((8, 4), F32, JP("x", "y"))],
    ),
    Case("donation", lambda a, b: a + b, [((8, 2), F32, JP("x")), ((8, 2), F32, JP("x"))], donate=(0,)),
    Case(
        "pytrees",
        lambda p, xs: {"y": xs[0] @ p["w"] + p["b"], "n": jnp.sum(xs[1])},
        [{"w": ((4, 2), F32, JP()), "b": ((2,), F32, None)}, (((8, 4), F32, JP("x")), ((3,), F32, None))],
        out={"y": JP("x"), "n": None},
    ),
    Case("bf16", lambda x: (x * 3).astype(BF16), [((8, 2), BF16, JP("x", "y"))], out=JP("x")),
    Case("int", lambda x: x // 3 + x % 5 * 7, [((8, 4), I32, JP("x", "y"))]),
    Case("bool", lambda x, m: jnp.logical_and(x > 0, m), [((8, 2), F32, JP("x")), ((8, 2), np.bool_, JP("x"))]),
    Case("permuted_mesh", lambda x: (x * 2, x.sum(1)), [((8, 4), F32, JP("x", "y"))], PERMUTED, bind_mesh=True),
    Case("unused_argument", lambda a, b, c: a + c, [((8, 2), F32, JP("x")), ((5,), I32, None), ((8, 2), F32, None)]),
    Case("unsharded_inputs", lambda a, b: a * b, [((8, 2), F32, None), ((8, 2), F32, None)], out=JP("x", "y")),
    Case("mesh_1d_cumsum", lambda x: jnp.cumsum(x, axis=0), [((16, 2), F32, JP("d"))], M8, out=JP("d")),
    Case("mesh_3d_multi_axis", lambda x: jnp.sin(x) + 1, [((8, 4), F32, JP(("a", "b"), "c"))], M222, out=JP("a")),
    Case("scalar_argument", lambda x, s: x * s, [((8, 2), F32, JP("x")), ((), F32, None)]),
    Case("single_device", lambda x: jnp.exp(x) - 1, [((4, 3), F32, None)], None),
    Case(
        "while_loop",
        lambda x: jax.lax.fori_loop(0, 5, lambda i, v: v * 1.5 + i, x),
        [((8, 2), F32, JP("x"))],
        out=JP("x"),
    ),
    Case("reshape_transpose", lambda x: x.reshape(4, 8).T, [((8, 4), F32, JP("x", "y"))], out=JP(None, "x")),
    Case(
        "several_outputs",
        lambda x: (x, x.T, jnp.max(x)),
        [((8, 4), F32, JP("x"))],
        out=(JP("x"), JP("y"), JP()),
    ),
    Case(
        "attention",
        lambda q, k, v: jax.nn.softmax(q @ k.T / 2.0, axis=-1) @ v,
        [((8, 4), F32, JP("x")), ((8, 4), F32, None), ((8, 4), F32, JP(None, "y"))],
        out=JP("x"),
    ),
    Case(
        "conv",
        lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"),
        [((4, 2, 8, 8), F32, JP("x")), ((3, 2, 3, 3), F32, None)],
    ),
    Case("gather_take", lambda x, i: jnp.take(x, i, axis=0), [((8, 4), F32, JP("x", "y")), ((6,), I32, None)]),
    Case("scatter_add", lambda x, i: x.at[i].add(1.0), [((8, 4), F32, JP("x")), ((3,), I32, None)], out=JP("x")),
    Case("sort_argmax", lambda x: (jnp.sort(x, axis=1), jnp.argmax(x, axis=0)), [((8, 4), F32, JP("x", "y"))]),
    Case(
        "slice_concat_pad",
        lambda x: jnp.concatenate([jax.lax.dynamic_slice(x, (2, 0), (4, 4)), jnp.pad(x[:2], ((1, 1), (0, 0)))]),
        [((8, 4), F32, JP("x"))],
    ),
    Case(
        "max_pool",
        lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (2, 2), (2, 2), "VALID"),
        [((8, 8), F32, JP("x", "y"))],
        out=JP("x"),
    ),
    Case(
        "shard_map_psum_scatter",
        _smap(lambda a: jax.lax.psum_scatter(a, "y", scatter_dimension=0, tiled=True), JP("x"), JP(("x", "y"))),
        [((16, 2), F32, JP("x"))],
    ),
    Case(
        "scan_cumulative",
        lambda x: jax.lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(x.shape[1:], x.dtype), x),
        [((8, 4), F32, JP(None, "y"))],
    ),
]


@dataclasses.dataclass
class Exported:
    exp: jax.export.Exported
    args: tuple[Any, ...]  # numpy inputs, as positional pytrees


def _export(case: Case, partitioner: str) -> Exported:
    mesh = case.mesh
    rng = np.random.default_rng(len(case.name))

    def sharding(spec: Any) -> Any:
        return None if spec is None or mesh is None else JNS(mesh, spec)

    def value(leaf: Any) -> np.ndarray:
        shape, dtype, _ = leaf
        if np.dtype(dtype) == np.bool_:
            return rng.integers(0, 2, shape).astype(bool)
        if np.dtype(dtype).kind == "i":
            return rng.integers(-50, 50, shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)

    structs = jax.tree_util.tree_map(
        lambda leaf: jax.ShapeDtypeStruct(leaf[0], leaf[1], sharding=sharding(leaf[2])), case.args, is_leaf=_leaf
    )
    in_shardings = jax.tree_util.tree_map(lambda leaf: sharding(leaf[2]), case.args, is_leaf=_leaf)
    out = jax.tree_util.tree_map(sharding, case.out, is_leaf=lambda x: isinstance(x, JP) or x is None)
    kwargs = dict(donate_argnums=case.donate)
    if mesh is not None:
        kwargs.update(in_shardings=tuple(in_shardings), out_shardings=out)
    with _shardy(partitioner):
        exp = jax.export.export(jax.jit(case.fn, **kwargs))(*structs)
    return Exported(exp, tuple(jax.tree_util.tree_map(value, case.args, is_leaf=_leaf)))


class _shardy:
    """Restores jax's partitioner flag after an export or a call in the other mode."""

    def __init__(self, partitioner: str):
        self.shardy = partitioner == "shardy"

    def __enter__(self) -> None:
        jax.config.update("jax_use_shardy_partitioner", self.shardy)

    def __exit__(self, *exc: object) -> None:
        jax.config.update("jax_use_shardy_partitioner", True)


def _jax_call(e: Exported, case: Case) -> Any:
    """jax's answer: ``Exported.call`` on inputs placed as exported (unsharded ones replicated over the mesh).

    Always with Shardy on: jax 0.10 fails to call any artifact with ``jax_use_shardy_partitioner=False`` (it
    wraps the arguments in Shardy shardings), and ``Exported.in_shardings_jax`` fails on a GSPMD-mode export
    with a scalar argument (its sharding is over an empty mesh), so the case's own specs place the inputs.
    """
    leaves, tree = jax.tree_util.tree_flatten(e.args)
    if case.mesh is not None:
        specs = [leaf[2] for leaf in jax.tree_util.tree_leaves(case.args, is_leaf=_leaf)]
        leaves = [jax.device_put(x, JNS(case.mesh, s if s is not None else JP())) for x, s in zip(leaves, specs)]
    return e.exp.call(*jax.tree_util.tree_unflatten(tree, leaves))


def _as_inputs(lowered: sk.Lowered, args: tuple[Any, ...], kind: str) -> tuple[Any, ...]:
    """The numpy inputs as numpy arrays, sk Arrays placed as compiled, or jax Arrays."""
    if kind == "numpy":
        return args
    leaves, tree = jax.tree_util.tree_flatten(args)
    shardings = jax.tree_util.tree_leaves(lowered.compile().input_shardings)
    placed = [
        sk.device_put(x, s) if kind == "shardkit" else jax.device_put(x, s.to_jax(np.ndim(x)))
        for x, s in zip(leaves, shardings)
    ]
    return jax.tree_util.tree_unflatten(tree, placed)


def _assert_same(got: Any, want: Any) -> None:
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        assert isinstance(g, sk.Array)
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-6, atol=1e-6)
        assert g.sharding.is_equivalent_to(sk.asarray(w).sharding, g.ndim), (g.sharding, w.sharding)


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jax_export_runs_with_jax_numbers(case: Case, partitioner: str):
    e = _export(case, partitioner)
    want = _jax_call(e, case)
    # Alternate the source (the Exported, its serialized bytes) and the kind of inputs over the cases.
    index = CASES.index(case) + (partitioner == "gspmd")
    source = e.exp if index % 2 else bytes(e.exp.serialize())
    mesh = sk.asarray(jax.device_put(0.0, JNS(case.mesh, JP()))).sharding.mesh if case.bind_mesh else None
    lowered = sk.load(source, mesh=mesh)
    inputs = _as_inputs(lowered, e.args, ["numpy", "sk", "jax"][index % 3])
    got = lowered.compile()(*inputs)
    _assert_same(got, want)
    if case.donate and index % 3:
        assert jax.tree_util.tree_leaves(inputs)[case.donate[0]].is_deleted()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jax_lowered_loads_whole(case: Case):
    """jax's own ``Lowered`` (``jax.jit(f, ...).lower(...)``, shardings and donation as given) loads with the
    function's argument tree, the arguments jax dropped as unused put back, and runs with jax's numbers."""
    e = _export(case, "shardy")
    kwargs = dict(donate_argnums=case.donate)
    if case.mesh is not None:
        specs = jax.tree_util.tree_map(
            lambda leaf: JNS(case.mesh, leaf[2]) if leaf[2] else None, case.args, is_leaf=_leaf
        )
        out = jax.tree_util.tree_map(
            lambda x: JNS(case.mesh, x) if x is not None else None,
            case.out,
            is_leaf=lambda x: isinstance(x, JP) or x is None,
        )
        kwargs.update(in_shardings=tuple(specs), out_shardings=out)
    structs = jax.tree_util.tree_map(lambda leaf: jax.ShapeDtypeStruct(leaf[0], leaf[1]), case.args, is_leaf=_leaf)
    theirs = jax.jit(case.fn, **kwargs).lower(*structs)
    mesh = sk.asarray(jax.device_put(0.0, JNS(case.mesh, JP()))).sharding.mesh if case.bind_mesh else None
    lowered = sk.load(theirs, mesh=mesh)
    _assert_same(lowered.compile()(*e.args), _jax_call(e, case))


def test_what_jax_dropped_and_its_key_types_carry_over():
    """jax.jit drops an unused argument (here the batch's ``y``, as MaxText's step drops ``targets_position``) and
    gives typed PRNG keys; its Lowered and its export load whole, its bare text says why the call does not fit."""

    def step(params, batch):
        return (params["w"] * batch["x"]).sum(), jax.random.split(jax.random.key(1), 2)

    params, batch = {"w": np.ones(4, np.float32)}, {"x": np.arange(4, dtype=np.float32), "y": np.ones(2, np.int32)}
    lowered = jax.jit(step).lower(params, batch)
    assert "tensor<2xi32>" not in lowered.as_text()  # jax dropped it
    want = jax.jit(step)(params, batch)
    for source in (lowered, jax.export.export(jax.jit(step))(params, batch)):
        got = sk.load(source).compile()(params, batch)
        assert float(got[0]) == float(want[0]) and got[1].dtype == want[1].dtype
        assert np.array_equal(jax.random.key_data(got[1]), jax.random.key_data(want[1]))
    bare = sk.load(lowered.as_text()).compile()
    with pytest.raises(TypeError, match="jax.jit drops the arguments a function does not use"):
        bare(*jax.tree_util.tree_leaves((params, batch)))
    with pytest.raises(TypeError, match="not its Compiled"):
        sk.load(lowered.compile())


def test_every_source_format_loads_the_same_program(tmp_path):
    e = _export(CASES[2], "shardy")
    text = e.exp.mlir_module()
    module = ir.Module.parse(text, context())
    buf = io.BytesIO()
    module.operation.write_bytecode(file=buf)
    (tmp_path / "m.mlir").write_text(text)
    (tmp_path / "m.mlirbc").write_bytes(buf.getvalue())
    (tmp_path / "m.vhlo").write_bytes(e.exp.mlir_module_serialized)
    (tmp_path / "m.jax").write_bytes(e.exp.serialize())
    sources = [text, buf.getvalue(), e.exp.mlir_module_serialized, e.exp, bytes(e.exp.serialize())]
    sources += [str(tmp_path / "m.mlir"), tmp_path / "m.mlirbc", tmp_path / "m.vhlo", tmp_path / "m.jax"]
    want = _jax_call(e, CASES[2])
    for source in sources:
        lowered = sk.load(source)
        assert lowered.in_shardings[0][0].spec == sk.P("x")
        _assert_same(lowered.compile()(*e.args), want)


GSPMD_TEXT = """
module @hand_written attributes {mhlo.num_partitions = 8 : i32} {
  func.func @main(%a: tensor<8x4xf32> {mhlo.sharding = "{devices=[4,2]<=[8]}"},
                  %b: tensor<8x4xf32> {mhlo.sharding = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"})
      -> (tensor<8x4xf32> {mhlo.sharding = "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"}) {
    %0 = stablehlo.multiply %a, %b : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
"""


def test_gspmd_module_with_and_without_a_mesh():
    a, b = np.arange(32, dtype=np.float32).reshape(8, 4), np.full((8, 4), 2, np.float32)
    lowered = sk.load(GSPMD_TEXT)
    assert lowered.out_shardings == sk.GSPMDSharding(DEVS, "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}")
    y = lowered.compile()(a, b)
    np.testing.assert_array_equal(np.asarray(y), a * b)
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    named = sk.load(GSPMD_TEXT, mesh=mesh)
    assert [s.spec for s in named.in_shardings[0]] == [sk.P("x", "y"), sk.P("x")]
    assert named.compile()(a, b).sharding == sk.NamedSharding(mesh, sk.P(None, "y"))


SDY_TEXT = """
module {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func @main(%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})
      -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) {
    %0 = stablehlo.add %a, %a : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
"""


def test_device_binding():
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    first = sk.load(SDY_TEXT)
    assert first.mesh.flat_devices == tuple(DEVS[:4])  # the first num_partitions devices, in mesh order
    mine = sk.make_mesh((2, 2), ("x", "y"), devices=DEVS[7:3:-1])  # an AbstractMesh module binds to any mesh
    on_mesh = sk.load(SDY_TEXT, mesh=mine)
    y = on_mesh.compile()(x)
    assert y.sharding == sk.NamedSharding(mine, sk.P("y"))
    np.testing.assert_array_equal(np.asarray(y), 2 * x)
    listed = sk.load(SDY_TEXT, devices=DEVS[4:])
    assert listed.compile()(x).sharding.device_set == set(DEVS[4:])
    assert sk.load(SDY_TEXT, mesh=mine.to_jax()).mesh == mine  # jax meshes too
    with pytest.raises(
        ValueError, match=r'mesh <\["x"=4, "y"=2\]> does not match the module main\'s mesh: @mesh <\["x"=2'
    ):
        sk.load(SDY_TEXT, mesh=sk.make_mesh((4, 2), ("x", "y")))
    with pytest.raises(ValueError, match=r"@mesh <\[\"x\"=2, \"y\"=2\]>"):
        sk.load(SDY_TEXT, mesh=sk.make_mesh((2, 2), ("a", "b"), devices=DEVS[:4]))
    big = sk.load(SDY_TEXT.replace('"x"=2, "y"=2', '"x"=4, "y"=4'))  # compile-only: tests/test_targets.py
    assert big.compile().target == "cpu:16"
    with pytest.raises(ValueError, match="runs on 4 partitions, but devices holds 3 distinct devices"):
        sk.load(SDY_TEXT, devices=DEVS[:3])
    with pytest.raises(ValueError, match="a mesh or a device list, not both"):
        sk.load(SDY_TEXT, mesh=mine, devices=DEVS[:4])


def test_device_ids_say_which_partition_each_mesh_position_is():
    text = SDY_TEXT.replace('<["x"=2, "y"=2]>', '<["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>')
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    lowered = sk.load(text)
    assert lowered.mesh.flat_devices == tuple(DEVS[3::-1])
    y = lowered.compile()(x)
    np.testing.assert_array_equal(np.asarray(y), 2 * x)
    # The same pieces on the same devices (the device list is in partition order, not the mesh's).
    assert y.sharding.devices_indices_map(x.shape) == sk.NamedSharding(lowered.mesh, sk.P("y")).devices_indices_map(
        x.shape
    )
    mine = sk.make_mesh((2, 2), ("x", "y"), devices=DEVS[4:])
    bound = sk.load(text, mesh=mine)
    assert bound.mesh is mine
    z = bound.compile()(x).sharding
    assert z.devices_indices_map(x.shape) == sk.NamedSharding(mine, sk.P("y")).devices_indices_map(x.shape)


def test_with_module_takes_an_edited_module_back():
    lowered = sk.load(SDY_TEXT)
    module = lowered.compiler_ir()
    text = str(module).replace('[{"y"}, {}]', '[{}, {"x"}]')
    edited = lowered.with_module(text)
    assert edited.out_shardings.spec == sk.P(None, "x")
    x = np.ones((8, 4), np.float32)
    assert edited.compile()(x).sharding.spec == sk.P(None, "x")
    assert lowered.with_module(module).compile()(x).sharding.spec == sk.P("y")
    with pytest.raises(ValueError, match=r"argument 0 of the new @main is tensor<8x2xf32>, but main has argument 0"):
        lowered.with_module(text.replace("8x4xf32", "8x2xf32"))
    jitted = sk.jit(lambda a: a * a).lower(x)
    with pytest.raises(ValueError, match=r"argument 0 of the new @main is tensor<8x4xi32>, but <lambda> has arg"):
        jitted.with_module(str(jitted.compiler_ir()).replace("8x4xf32", "8x4xi32"))
    with pytest.raises(ValueError, match="the new @main has 2 arguments, but main has 1"):
        lowered.with_module(text.replace("%arg0: tensor<8x4xf32>", "%b: tensor<2xf32>, %arg0: tensor<8x4xf32>"))


def test_shardkit_lowered_exports_to_a_jax_artifact():
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    x = sk.device_put(np.arange(16, dtype=np.float32).reshape(8, 2), sk.NamedSharding(mesh, sk.P("x", "y")))
    for partitioner in ("shardy", "gspmd"):
        f = sk.jit(lambda a, b: (a * b, a.sum()), out_shardings=(sk.NamedSharding(mesh, sk.P("x")), None))
        f = sk.jit(f.__wrapped__, out_shardings=(sk.NamedSharding(mesh, sk.P("x")), None), partitioner=partitioner)
        lowered = f.lower(x, 3.0)
        blob = lowered.export().serialize()
        exp = jax.export.deserialize(blob)
        assert exp.nr_devices == 8 and exp.in_shardings_jax(M42)[0].spec == JP("x", "y")
        want = exp.call(x, jnp.float32(3.0))
        got = sk.load(bytes(blob), mesh=mesh).compile()(x, np.float32(3.0))
        _assert_same(got, want)
        _assert_same(lowered.compile()(x, 3.0), want)


# -- Shardy's own test programs ---------------------------------------------------------------------------------

SHARDY_FILES = sorted((ROOT / "lit_tests" / "run" / "shardy").glob("*.mlir"))
_SHARDY_NAME = re.compile(r"// Shardy test: @(\w+)")
SHARDY_CHUNKS = [
    pytest.param(chunk, id=f"{path.stem}:{_SHARDY_NAME.search(chunk).group(1)}")
    for path in SHARDY_FILES
    for chunk in re.split(r"^// -----$", path.read_text(), flags=re.MULTILINE)
    if "// Shardy test:" in chunk
]


@pytest.mark.parametrize("chunk", SHARDY_CHUNKS)
def test_shardy_test_programs_run_sharded_as_on_one_device(chunk: str):
    lowered = sk.load(chunk)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(a.shape).astype(a.dtype) for a in jax.tree_util.tree_leaves(lowered.in_avals)]
    got = lowered.compile()(*args)
    module = ir.Module.parse(chunk, context())
    passes.run_pipeline(module, "strip-shardings")
    want = sk.load(str(module)).compile()(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert w.sharding.num_devices == 1
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def test_shardy_files_cover_a_few_families():
    assert {p.stem for p in SHARDY_FILES} >= {"basic_propagation", "user_priority_propagation"}
    assert len(SHARDY_CHUNKS) >= 60


# -- what is refused ---------------------------------------------------------------------------------------------


def _main(signature: str, body: str = "return %a : tensor<4xf32>", attrs: str = "") -> str:
    return f"module {attrs} {{\n  func.func @main({signature}) -> tensor<4xf32> {{\n    {body}\n  }}\n}}"


@pytest.mark.parametrize(
    "source, error",
    [
        (
            "module {\n  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n    return %a : tensor<4xf32>\n  }\n}",
            "<string> has no function @main to run",
        ),
        (
            "module {\n  func.func @main(%a: tensor<4xf32>, ) -> tensor<4xf32> {\n  }\n}",
            r"<string>:2:38: error: custom op 'func.func' expected SSA identifier",
        ),
        (
            _main("%a: tensor<4xf32>", attrs="attributes {mhlo.num_replicas = 2 : i32}"),
            "has mhlo.num_replicas = 2; shardkit runs SPMD programs of one replica",
        ),
        (
            _main('%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@nowhere, [{"x"}]>}'),
            "<string>:2:3: error: 'func.func' op arg 0 - unknown mesh: @nowhere",
        ),
        (
            _main(
                "%a: tensor<?xf32>",
                "%0 = stablehlo.convert %a : (tensor<?xf32>) -> tensor<4xf32>\n return %0 : tensor<4xf32>",
            ),
            r"argument 0 of main's @main has the dynamic type tensor<\?xf32>",
        ),
        (
            _main("%a: !stablehlo.token, %b: tensor<4xf32>", "return %b : tensor<4xf32>"),
            "argument 0 of main's @main has type !stablehlo.token; shardkit loads programs whose arguments",
        ),
        (
            _main(
                '%a: tensor<4xf32> {mhlo.sharding = "{devices=[3]<=[3]}"}',
                attrs="attributes {mhlo.num_partitions = 2 : i32}",
            ),
            None,
        ),
        (
            SDY_TEXT.replace("module {", "module attributes {mhlo.num_partitions = 8 : i32} {"),
            r'sdy mesh @mesh <\["x"=2, "y"=2\]> has 4 devices, but main runs on 8 partitions',
        ),
        (b"\x00\x01not a module", "<bytes> is not MLIR text, MLIR or StableHLO bytecode, nor a serialized"),
        ("no/such/file.mlir", "cannot read 'no/such/file.mlir': No such file or directory"),
    ],
)
def test_refused_modules_name_the_problem(source, error):
    if error is None:  # a sharding over more devices than the program runs on: XLA's own compile error
        with pytest.raises(Exception, match="devices"):
            sk.load(source).compile()
        return
    with pytest.raises(ValueError, match=error):
        sk.load(source)


def test_refused_exports_and_sources():
    f = jax.jit(lambda x: x * 2)
    poly = jax.export.export(f)(jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 2"), np.float32))
    with pytest.raises(ValueError, match="was exported with symbolic shapes; shardkit loads programs of static"):
        sk.load(poly)
    multi = jax.export.export(f, platforms=["cpu", "tpu"])(jax.ShapeDtypeStruct((4,), np.float32))
    with pytest.raises(ValueError, match=r"exported for several platforms \('cpu', 'tpu'\); export it for one"):
        sk.load(multi)
    tpu = jax.export.export(f, platforms=["tpu"])(jax.ShapeDtypeStruct((4,), np.float32))
    with pytest.raises(ValueError, match="was exported for tpu, but the devices are cpu devices"):
        sk.load(tpu)
    plain = jax.export.export(f)(jax.ShapeDtypeStruct((4,), np.float32))
    with pytest.raises(ValueError, match=r"has ordered effects \('an effect',\) \(tokens\); shardkit does not"):
        sk.load(dataclasses.replace(plain, ordered_effects=("an effect",)))
    with pytest.raises(ValueError, match="was exported for 4 devices, but its module has 1 partitions"):
        sk.load(dataclasses.replace(plain, nr_devices=4))
    with pytest.raises(
        TypeError,
        match="load takes MLIR text, bytes, a path, an ir.Module, a jax.export.Exported or jax's Lowered, got int",
    ):
        sk.load(3)
    with pytest.raises(TypeError, match="mesh must be a concrete Mesh"):
        sk.load(SDY_TEXT, mesh=sk.AbstractMesh((2, 2), ("x", "y")))


def test_export_writes_named_shardings():
    one_device = sk.jit(lambda a, b: a + b).lower(np.ones(4, np.float32), 2.0)
    got = jax.export.deserialize(one_device.export().serialize()).call(np.ones(4, np.float32), np.float32(2.0))
    np.testing.assert_array_equal(np.asarray(got), np.full(4, 3.0, np.float32))
    # a GSPMD sharding travels over the abstract mesh of its own tile assignment when that mesh orders the devices
    tiled = sk.GSPMDSharding(DEVS, "{devices=[8]<=[8]}")
    exported = sk.jit(lambda a: a * 2, in_shardings=tiled).lower(np.ones(8, np.float32)).export()
    (named,) = jax.export.deserialize(exported.serialize()).in_shardings_jax(sk.make_mesh((8,), ("_axis_0",)).to_jax())
    assert named.spec == sk.P("_axis_0") and tiled.is_equivalent_to(named, 1)
    permuted = sk.GSPMDSharding(DEVS, "{devices=[8]7,6,5,4,3,2,1,0}")
    lowered = sk.jit(lambda a: a * 2, in_shardings=permuted).lower(np.ones(8, np.float32))
    with pytest.raises(ValueError, match=r"argument 0 of <lambda> is sharded as GSPMDSharding\(\{devices=\[8\]7,6"):
        lowered.export()


def test_shardkit_report_reads_a_serialized_jax_export_artifact(tmp_path):
    """shardkit-report takes what sk.load takes: a jax.export artifact's bytes (a gradient step jax lowered with
    its own shardings) gives the report of the same program sk.load compiles, and bytes that are nothing it reads
    are one line and exit 1."""
    from shardkit.tools.report import ReportMain

    mesh = jax.make_mesh((4, 2), ("data", "model"))

    def loss(w, x):
        return jnp.tanh(x @ w).sum()

    step = jax.jit(jax.grad(loss), in_shardings=(JNS(mesh, JP(None, "model")), JNS(mesh, JP("data", None))))
    blob = jax.export.export(step)(
        jax.ShapeDtypeStruct((64, 32), jnp.float32), jax.ShapeDtypeStruct((16, 64), jnp.float32)
    ).serialize()
    path = tmp_path / "step.jaxexp"
    path.write_bytes(bytes(blob))
    out = io.StringIO()
    assert ReportMain([str(path), "--json"], stdout=out, stderr=io.StringIO()).run() == 0
    kinds = sorted(c["kind"] for c in json.loads(out.getvalue())["collectives"])
    want = sorted(c.kind for c in sk.load(bytes(blob)).compile().communication().collectives)
    assert kinds == want and kinds
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x84\x85 not a module")
    err = io.StringIO()
    assert ReportMain([str(junk)], stdout=io.StringIO(), stderr=err).run() == 1
    assert err.getvalue() == (
        f"shardkit-report: error: input '{junk}' is neither UTF-8 text nor MLIR bytecode: byte 0x84 at line 1, "
        "column 1 is not valid UTF-8, nor a serialized jax.export artifact\n"
    )
