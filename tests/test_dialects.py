"""The sdy and mhlo forms: text without MLIR, attributes with it, and property tests that both round-trip."""

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from jaxlib.mlir import ir

import shardkit as sk
from shardkit import P
from shardkit._jaxlib import HloSharding
from shardkit.dialects import context, mhlo, sdy as sdy_forms
from tests.jax_oracle import random_case

DEVS = jax.devices()
MESH = sk.Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
cases = st.integers(0, 2**31).map(lambda seed: random_case(np.random.default_rng(seed)))


def test_sdy_text_without_a_context():
    t = sdy_forms.SdyTensorSharding(
        "mesh", (sdy_forms.SdyDim(("x",), is_open=True, priority=1), sdy_forms.SdyDim()), replicated=("y",)
    )
    assert str(t) == '#sdy.sharding<@mesh, [{"x", ?}p1, {}], replicated={"y"}>'
    assert t.body == '<@mesh, [{"x", ?}p1, {}], replicated={"y"}>'
    assert str(sdy_forms.SdyDim(is_open=True)) == "{?}"
    assert str(sdy_forms.SdyAxisRef("x", (1, 2))) == '"x":(1)2'
    assert (
        str(sdy_forms.SdyMesh((("x", 4), ("y", 2)), tuple(range(8)))) == '#sdy.mesh<["x"=4, "y"=2]>'
    )  # iota ids dropped
    assert sdy_forms.SdyMesh((), (3,)).body == "<[], device_ids=[3]>"
    with pytest.raises(ValueError, match="has 8 positions, so its device_ids must list each of 0..7 once"):
        sdy_forms.SdyMesh((("x", 4), ("y", 2)), (0, 1))


def test_sdy_builds_what_it_prints():
    with context():
        for t in [
            sdy_forms.SdyTensorSharding("mesh", (sdy_forms.SdyDim(("x", "y")), sdy_forms.SdyDim(is_open=True))),
            sdy_forms.SdyTensorSharding(
                sdy_forms.SdyMesh((("x", 4), ("y", 2)), (7, 6, 5, 4, 3, 2, 1, 0)), (sdy_forms.SdyDim(("x",)),)
            ),
            sdy_forms.SdyTensorSharding(
                "m", (sdy_forms.SdyDim((sdy_forms.SdyAxisRef("x", (1, 2)),)), sdy_forms.SdyDim()), unreduced=("y",)
            ),
        ]:
            attr = t.build()
            assert str(attr) == str(t)
            assert sdy_forms.SdyTensorSharding.from_attr(attr) == t
        mesh = sdy_forms.SdyMesh((("x", 4), ("y", 2)))
        assert str(mesh.build()) == str(mesh) and sdy_forms.SdyMesh.from_attr(mesh.build()) == mesh


@pytest.mark.parametrize("name", ["mesh", "a b", 'mesh"', "1x", "x.y$z", "é", "a\\b", "_m"])
def test_symbol_names_print_as_mlir_prints_them(name):
    tensor = sdy_forms.SdyTensorSharding(name, (sdy_forms.SdyDim(),))
    with context():
        assert sdy_forms.symbol_ref(name) == str(ir.FlatSymbolRefAttr.get(name))
        assert str(tensor) == str(tensor.build())
        assert sdy_forms.SdyTensorSharding.parse(str(tensor), context()) == tensor


def test_malformed_sdy_text_gets_a_diagnostic():
    with pytest.raises(ir.MLIRError, match="sdy"):
        sdy_forms.SdyTensorSharding.parse('#sdy.sharding<@mesh, [{"x"}', context())


def test_sharding_from_sdy_refuses_what_a_spec_cannot_say():
    sub = sdy_forms.SdyTensorSharding("mesh", (sdy_forms.SdyDim((sdy_forms.SdyAxisRef("x", (1, 2)),)),))
    with pytest.raises(ValueError, match="Dimension 0 .* sub-axes"):
        sk.NamedSharding.from_sdy(sub, MESH)
    with pytest.raises(ValueError, match="unreduced"):
        sk.NamedSharding.from_sdy(sdy_forms.SdyTensorSharding("mesh", (sdy_forms.SdyDim(),), unreduced=("x",)), MESH)
    with pytest.raises(ValueError, match="Resource axis: z"):
        sk.NamedSharding.from_sdy(sdy_forms.SdyTensorSharding("mesh", (sdy_forms.SdyDim(("z",)),)), MESH)


def test_mesh_from_sdy():
    assert sk.AbstractMesh.from_sdy(sdy_forms.SdyMesh((("x", 4), ("y", 2)))) is sk.AbstractMesh((4, 2), ("x", "y"))
    bound = sk.Mesh.from_sdy(sdy_forms.SdyMesh((("x", 4), ("y", 2)), (7, 6, 5, 4, 3, 2, 1, 0)), DEVS)
    assert bound.device_ids.tolist() == [[7, 6], [5, 4], [3, 2], [1, 0]]
    assert bound.to_sdy() == sdy_forms.SdyMesh((("x", 4), ("y", 2)))  # the order belongs to the device assignment
    with pytest.raises(ValueError, match="bind it to devices with Mesh.from_sdy"):
        sk.AbstractMesh.from_sdy(sdy_forms.SdyMesh((("x", 8),), tuple(range(8))[::-1]))
    with pytest.raises(ValueError, match="has 8 devices, but 4 were given"):
        sk.Mesh.from_sdy(sdy_forms.SdyMesh((("x", 8),)), DEVS[:4])
    with pytest.raises(ValueError, match="maximal"):
        sk.Mesh.from_sdy(sdy_forms.SdyMesh((), (3,)), DEVS)


def test_sdy_to_hlo():
    mesh = sdy_forms.SdyMesh((("x", 4), ("y", 2)))
    t = sdy_forms.SdyTensorSharding(
        "mesh", (sdy_forms.SdyDim(("y",), is_open=True), sdy_forms.SdyDim(("x",), priority=0))
    )
    assert repr(t.to_hlo(mesh)) == "{devices=[2,4]<=[4,2]T(1,0)}"  # open dims and priorities do not matter
    permuted = sdy_forms.SdyMesh(mesh.axes, (7, 6, 5, 4, 3, 2, 1, 0))
    assert repr(t.to_hlo(permuted)) == "{devices=[2,4]7,5,3,1,6,4,2,0}"
    assert repr(sdy_forms.SdyTensorSharding("m", ()).to_hlo(sdy_forms.SdyMesh((), (3,)))) == "{maximal device=3}"
    assert repr(sdy_forms.SdyTensorSharding("m", (sdy_forms.SdyDim(),)).to_hlo(mesh)) == "{replicated}"
    with pytest.raises(ValueError, match=r'dimension 0 is sharded over the sub-axis "x":\(1\)2'):
        sdy_forms.SdyTensorSharding("m", (sdy_forms.SdyDim((sdy_forms.SdyAxisRef("x", (1, 2)),)),)).to_hlo(mesh)
    with pytest.raises(ValueError, match=r'dimension 0 names axis "z", which mesh <\["x"=4, "y"=2\]> does not have'):
        sdy_forms.SdyTensorSharding("m", (sdy_forms.SdyDim(("z",)),)).to_hlo(mesh)
    with pytest.raises(ValueError, match=r'unreduced axes \{"y"\}'):
        sdy_forms.SdyTensorSharding("m", (sdy_forms.SdyDim(("x",)),), unreduced=("y",)).to_hlo(mesh)


def test_mhlo_attribute_and_strings():
    s = sk.NamedSharding(MESH, P(None, "x"))
    assert repr(s.to_hlo(2)) == "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"
    assert isinstance(s.to_hlo(2), HloSharding)
    with context():
        attr = mhlo.build(s.to_hlo(2))
        assert str(attr) == '"{devices=[1,4,2]<=[8] last_tile_dim_replicate}"'
        assert mhlo.read(attr) == s.to_hlo(2)
    assert repr(sk.GSPMDSharding(DEVS, "{maximal device=3}").to_hlo(2)) == "{maximal device=3}"
    assert repr(sk.SingleDeviceSharding(DEVS[0]).to_hlo(2)) == "{replicated}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_sdy_round_trip(case):
    mesh, spec, shape = case
    named = sk.NamedSharding(mesh, spec)
    sdy_mesh, tensor = named.to_sdy(len(shape))
    assert tensor.to_hlo(sdy_mesh) == named.to_hlo(len(shape))
    with context():
        parsed = sdy_forms.SdyTensorSharding.from_attr(ir.Attribute.parse(str(tensor)))
        assert sdy_forms.SdyMesh.from_attr(ir.Attribute.parse(str(sdy_mesh))) == sdy_mesh
    assert parsed == tensor
    back = sk.NamedSharding.from_sdy(parsed, sk.Mesh.from_sdy(sdy_mesh, mesh.flat_devices))
    assert back.mesh is mesh
    assert back.is_equivalent_to(named, len(shape))
    entries = list(spec)
    while entries and entries[-1] is None:
        entries.pop()
    assert back.spec == P(*entries)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_mhlo_round_trip(case):
    mesh, spec, shape = case
    named = sk.NamedSharding(mesh, spec)
    text = repr(named.to_hlo(len(shape)))
    assert repr(mhlo.parse(text)) == text
    back = sk.GSPMDSharding(mesh.flat_devices, text)
    assert back.is_equivalent_to(named, len(shape))
    assert repr(back.to_hlo(len(shape))) == text
    assert sk.NamedSharding.from_hlo(mesh, back.to_hlo(len(shape)), len(shape)).is_equivalent_to(named, len(shape))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases)
def test_mesh_derived_from_a_tile_assignment_places_data_alike(case):
    mesh, spec, shape = case
    named = sk.NamedSharding(mesh, spec)
    sdy_mesh, tensor = sdy_forms.hlo_to_sdy(named.to_hlo(len(shape)), len(shape))
    if not sdy_mesh.axes:
        assert named.is_fully_replicated
        return
    derived = sk.NamedSharding.from_sdy(tensor, sk.Mesh.from_sdy(sdy_mesh, mesh.flat_devices))
    assert dict(derived.devices_indices_map(shape)) == dict(named.devices_indices_map(shape))
    assert dict(derived.replica_ids(shape)) == dict(named.replica_ids(shape))
