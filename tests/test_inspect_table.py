"""The per-value sharding table of a propagated module: rows, replicated values, filters, the printed table.

The oracle for each row's sharding is jax: the same function lowered by jax with the same shardings and
propagated by the same Shardy pipeline carries the same ``sdy.sharding`` on the same ops.
"""

from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.dialects import context
from shardkit.inspect import sharding_table
from shardkit.passes import run_pipeline
from tests.jax_oracle import jax_named

MESH = sk.make_mesh((4, 2), ("x", "y"))
F32 = np.float32


def layer(x, w):
    h = jnp.tanh(x @ w)
    return h.sum(axis=1)


def lowered_layer(partitioner: str = "shardy"):
    x = sk.ShapeDtypeStruct((16, 8), F32, sharding=sk.NamedSharding(MESH, P("x", "y")))
    w = sk.ShapeDtypeStruct((8, 4), F32, sharding=sk.NamedSharding(MESH, P("y", None)))
    return sk.jit(layer, partitioner=partitioner).lower(x, w)


def table_of(lowered):
    return lowered.run_passes("propagate").shardings()


GOLDEN = """\
op                     #  type       sharding                               jax op                   source
@main                  0  f32[16,8]  P('x', 'y')                            x
@main                  1  f32[8,4]   P('y',)                                w
stablehlo.dot_general  0  f32[16,4]  P('x',)                                jit(layer)/dot_general   LINE1
stablehlo.tanh         0  f32[16,4]  P('x',)                                jit(layer)/tanh          LINE1
sdy.constant           0  f32[]      P()          replicated (no attribute)  jit(layer)/reduce_sum  LINE2
stablehlo.reduce       0  f32[16]    P('x',)                                jit(layer)/reduce_sum    LINE2
"""


def test_printed_table():
    text = str(table_of(lowered_layer()))
    first = layer.__code__.co_firstlineno
    text = text.replace(f"tests/test_inspect_table.py:{first + 1}", "LINE1")
    text = text.replace(f"tests/test_inspect_table.py:{first + 2}", "LINE2")
    assert re.sub(r" +", " ", text) == re.sub(r" +", " ", GOLDEN)


def test_rows_hold_shardkit_shardings_on_the_module_mesh():
    rows = table_of(lowered_layer()).rows
    dot = next(r for r in rows if r.op == "stablehlo.dot_general")
    assert dot.sharding == sk.NamedSharding(MESH, P("x"))
    assert dot.sdy == '#sdy.sharding<@mesh, [{"x"}, {}]>' and not dot.replicated
    assert (dot.shape, dot.dtype) == ((16, 4), "f32")
    constant = next(r for r in rows if r.op == "sdy.constant")
    assert constant.replicated and constant.sdy == "" and constant.spec == P()


def _sdy_attrs(text: str) -> list[str]:
    return re.findall(r"sdy\.sharding = (#sdy\.sharding(?:_per_value)?<.*?>)(?: :|\}|,)", text)


def test_shardings_are_jax_propagated_shardings():
    jax_text = (
        jax.jit(
            layer,
            in_shardings=(
                jax_named(sk.NamedSharding(MESH, P("x", "y"))),
                jax_named(sk.NamedSharding(MESH, P("y", None))),
            ),
        )
        .lower(jax.ShapeDtypeStruct((16, 8), F32), jax.ShapeDtypeStruct((8, 4), F32))
        .as_text()
    )
    from jaxlib.mlir import ir

    module = ir.Module.parse(jax_text, context())
    run_pipeline(module, "propagate")
    from shardkit.inspect.table import ShardingTable

    theirs: ShardingTable = sharding_table(module, MESH)
    mine = table_of(lowered_layer())
    assert [(r.op, r.index, r.sdy, r.spec) for r in mine] == [(r.op, r.index, r.sdy, r.spec) for r in theirs]


def test_filters():
    table = table_of(lowered_layer())
    first = layer.__code__.co_firstlineno
    assert [r.op for r in table.filter(op="dot_general")] == ["stablehlo.dot_general"]
    assert [r.op for r in table.filter(file="test_inspect_table.py", lines=(first + 1, first + 1))] == [
        "stablehlo.dot_general",
        "stablehlo.tanh",
    ]
    assert len(table.filter(file="elsewhere.py")) == 0
    assert [r.op for r in table.filter(op="reduce_sum")] == ["sdy.constant", "stablehlo.reduce"]


def test_json():
    rows = json.loads(table_of(lowered_layer()).to_json())
    assert rows[0] == {
        "op": "@main",
        "index": 0,
        "shape": [16, 8],
        "dtype": "f32",
        "sdy": '#sdy.sharding<@mesh, [{"x"}, {"y"}]>',
        "spec": ["x", "y"],
        "replicated": False,
        "op_name": "x",
        "source": None,
        "shard_shape": [4, 4],
        "bytes_per_device": 64,
    }


def test_what_a_partition_spec_cannot_say_keeps_the_sdy_text():
    text = """
    sdy.mesh @mesh = <["x"=4, "y"=2]>
    func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(1)2}, {}]>}) -> tensor<8x8xf32> {
      return %arg0 : tensor<8x8xf32>
    }"""
    from jaxlib.mlir import ir

    (row,) = sharding_table(ir.Module.parse(text, context()), MESH).rows
    assert row.sharding is None and row.sdy == '#sdy.sharding<@mesh, [{"x":(1)2}, {}]>'
    assert row.pieces == (2, 1) and row.shard_shape == (4, 8) and row.to_dict()["bytes_per_device"] == 128
    assert '{"x":(1)2}' in str(sharding_table(ir.Module.parse(text, context())))


def test_a_gspmd_module_is_refused_with_the_way_out():
    lowered = lowered_layer("gspmd")
    with pytest.raises(ValueError, match="GSPMD form .* 'import-gspmd,propagate'"):
        lowered.shardings()
    assert any(not r.replicated for r in lowered.run_passes("import-gspmd,propagate").shardings())


def test_default_mesh_is_the_modules_own():
    rows = sharding_table(lowered_layer().run_passes("propagate").compiler_ir()).rows
    assert rows[0].sharding.mesh == sk.AbstractMesh((4, 2), ("x", "y"))
