"""The shared IR layer: the mesh table, walk_shardings / set_shardings, attribute helpers, GSPMD constraints."""

from __future__ import annotations

import pytest
from jaxlib.mlir import ir

from shardkit.dialects import context, irx, sdy as sdy_forms

MODULE = """
module {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                  %arg1: tensor<8xf32> {mhlo.sharding = "{devices=[8]<=[8]}"}, %arg2: tensor<f32>)
      -> (tensor<8x8xf32> {jax.result_info = "r"}) {
    %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"y"}]>]>} : tensor<8x8xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"y"}, {?}]> : tensor<8x8xf32>
    %2:2 = stablehlo.custom_call @pair(%arg1, %arg1)
        {mhlo.sharding = "{{devices=[2,4]<=[8] last_tile_dim_replicate}, {replicated}}"}
        : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    return %1 : tensor<8x8xf32>
  }
}
"""


def parse(text: str = MODULE) -> ir.Module:
    return ir.Module.parse(text, context())


def _summary(sites: list[irx.Site]) -> list[tuple[str, str, dict[str, str]]]:
    return [(s.op.name, s.label, {k: str(v) for k, v in s.shardings.items()}) for s in sites]


def test_walk_shardings_visits_every_holder_in_order():
    assert _summary(irx.walk_shardings(parse())) == [
        ("func.func", "arg 0", {"sdy.sharding": '#sdy.sharding<@mesh, [{"x"}, {}]>'}),
        ("func.func", "arg 1", {"mhlo.sharding": '"{devices=[8]<=[8]}"'}),
        ("func.func", "arg 2", {}),
        ("func.func", "result 0", {}),
        ("stablehlo.negate", "result 0", {"sdy.sharding": '#sdy.sharding<@mesh, [{}, {"y"}]>'}),
        ("sdy.sharding_constraint", "result 0", {"sdy.sharding": '#sdy.sharding<@mesh, [{"y"}, {?}]>'}),
        # a tuple sharding is split per result
        ("stablehlo.custom_call", "result 0", {"mhlo.sharding": '"{devices=[2,4]<=[8] last_tile_dim_replicate}"'}),
        ("stablehlo.custom_call", "result 1", {"mhlo.sharding": '"{replicated}"'}),
    ]


def test_set_shardings_writes_each_holder_back():
    module = parse()
    sites = irx.walk_shardings(module)
    with module.context:
        new = sdy_forms.SdyTensorSharding("mesh", (sdy_forms.SdyDim(("y",)), sdy_forms.SdyDim())).build()
        hlo = ir.StringAttr.get("{devices=[4,2]<=[8]}")
        irx.set_shardings(
            [
                (sites[0], {irx.SDY_SHARDING: None, irx.MHLO_SHARDING: hlo}),  # a function argument changes form
                (sites[2], {irx.SDY_SHARDING: sdy_forms.SdyTensorSharding("mesh", ()).build()}),
                (sites[4], {irx.SDY_SHARDING: None}),  # the op's only result: the attribute goes away
                (sites[5], {irx.SDY_SHARDING: new}),  # a constraint
                (sites[7], {irx.MHLO_SHARDING: ir.StringAttr.get("{devices=[8]<=[8]}")}),  # one element of a tuple
            ]
        )
    text = str(module)
    assert '%arg0: tensor<8x8xf32> {mhlo.sharding = "{devices=[4,2]<=[8]}"}' in text
    assert "%arg2: tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, []>}" in text
    assert "stablehlo.negate %arg0 : tensor<8x8xf32>" in text
    assert 'sdy.sharding_constraint %0 <@mesh, [{"y"}, {}]>' in text
    assert 'mhlo.sharding = "{{devices=[2,4]<=[8] last_tile_dim_replicate}, {devices=[8]<=[8]}}"' in text
    module.operation.verify()


def test_set_shardings_refuses_what_mlir_cannot_hold():
    module = parse()
    sites = irx.walk_shardings(module)
    with module.context, pytest.raises(ValueError, match="'sdy.sharding_constraint' holds exactly one sdy sharding"):
        irx.set_shardings([(sites[5], {irx.SDY_SHARDING: None})])
    with module.context, pytest.raises(ValueError, match="needs a mhlo.sharding for each of its 2 results, got 1"):
        irx.set_shardings([(sites[6], {irx.MHLO_SHARDING: None})])


def test_transform_shardings_writes_what_the_function_returns_and_leaves_a_refused_op_whole():
    module = parse()
    refused = []

    def to_gspmd(site: irx.Site) -> dict[str, ir.Attribute | None] | None:
        if site.op.name == "stablehlo.custom_call":  # its result 0 would change, but the op is refused whole
            if site.index == 1:
                raise ValueError("no")
            return {irx.MHLO_SHARDING: ir.StringAttr.get("{replicated}")}
        if site.kind == "constraint" or irx.SDY_SHARDING not in site.shardings:
            return None
        return {irx.SDY_SHARDING: None, irx.MHLO_SHARDING: ir.StringAttr.get("{replicated}")}

    with module.context:
        irx.transform_shardings(module, to_gspmd, lambda site, e: refused.append((site.label, str(e))))
    text = str(module)
    assert '%arg0: tensor<8x8xf32> {mhlo.sharding = "{replicated}"}' in text
    assert 'stablehlo.negate %arg0 {mhlo.sharding = "{replicated}"}' in text
    assert "{{devices=[2,4]<=[8] last_tile_dim_replicate}, {replicated}}" in text
    assert refused == [("result 1", "no")]
    with module.context, pytest.raises(ValueError, match="no"):  # with no one to report to, the error propagates
        irx.transform_shardings(module, to_gspmd)


def test_transform_shardings_of_a_signature_only():
    module = parse()
    main = ir.SymbolTable(module.operation)["main"]
    seen = []
    with module.context:
        irx.transform_shardings(main, lambda site: seen.append(site.label), body=False)
    assert seen == ["arg 0", "arg 1", "arg 2", "result 0"]


def test_unparsable_op_sharding_is_kept_whole_for_each_result():
    module = parse(MODULE.replace("{{devices=[2,4]<=[8] last_tile_dim_replicate}, {replicated}}", "{garbage"))
    sites = [s for s in irx.walk_shardings(module) if s.op.name == "stablehlo.custom_call"]
    assert [str(s.shardings[irx.MHLO_SHARDING]) for s in sites] == ['"{garbage"', '"{garbage"']


def test_mesh_table_names_meshes_as_jax_does():
    module = parse()
    table = irx.MeshTable(module)
    assert table.name(sdy_forms.SdyMesh((("x", 4), ("y", 2)))) == "mesh"  # already declared
    assert table.name(sdy_forms.SdyMesh((("a", 8),))) == "mesh_0"
    assert table.name(sdy_forms.SdyMesh((("b", 8),))) == "mesh_1"
    assert table.name(sdy_forms.SdyMesh(())) == "empty_mesh"
    assert table.name(sdy_forms.SdyMesh((), (3,))) == "maximal_mesh_3"
    assert table.name(sdy_forms.SdyMesh((("a", 8),))) == "mesh_0"
    assert table.resolve("mesh_1") == sdy_forms.SdyMesh((("b", 8),)) and table.resolve("nope") is None
    with module.context:
        table.emit()
    assert list(irx.meshes(module)) == ["mesh_0", "mesh_1", "empty_mesh", "maximal_mesh_3", "mesh"]
    module.operation.verify()


def test_mesh_table_keeps_the_first_symbol_of_a_repeated_mesh():
    module = parse('module { sdy.mesh @a = <["x"=2]>\n sdy.mesh @b = <["x"=2]> }')
    assert irx.MeshTable(module).name(sdy_forms.SdyMesh((("x", 2),))) == "a"


def test_drop_attrs_reaches_function_arguments():
    module = parse()
    main = irx.ops(module, "func.func")[0]
    with module.context:
        irx.drop_attrs(main, lambda key: key.startswith("sdy."))
    assert [list(d) for d in irx.value_attrs(main, "arg")] == [[], ["mhlo.sharding"], []]


def test_gspmd_constraint_round_trip():
    module = parse("module { func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> { return %a : tensor<4x4xf32> } }")
    ret = irx.ops(module, "func.return")[0]
    with module.context, ir.InsertionPoint(ret), ret.location:
        call = irx.gspmd_constraint(ret.operands[0], ir.StringAttr.get("{replicated}"), (0, 1))
    assert irx.call_target(call) == "Sharding" and irx.call_target(ret) == ""
    assert irx.gspmd_open_dims(call) == {0, 1}
    assert 'backend_config = "unspecified_dims=[0,1]"' in str(module)
