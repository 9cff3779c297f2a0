"""Bad input is a named error, never a crash or a wrong answer (issue 12, the Python API's half).

One test per family of the November 2026 fuzz catalogue (``model-*``, ``array-*``, ``cache-*``, ``lower-*``): each
entry's input gives a ValueError/TypeError naming what is wrong, a located MLIR diagnostic, or the right result
(checked against jax). Inputs that used to kill the interpreter run in one child interpreter, so a regression
fails its test instead of the suite. ``tests/fuzz/`` generates new inputs of the same kinds.
"""

from __future__ import annotations

import dataclasses
import pickle
import warnings

import jax
import numpy as np
import pytest
from jaxlib.mlir import ir

import shardkit as sk
from shardkit import P, _jaxlib
from shardkit._jaxlib import HloSharding, OpSharding, OpShardingType
from shardkit.dialects import context, hlo_check, mhlo, sdy as sdy_forms
from shardkit.executor.compile import compile_lowered
from shardkit.mesh import EMPTY_MESH
from shardkit.partition_spec import axes_of, used_axes
from tests.child import check_outcomes
from tests.jax_oracle import jax_gspmd

DEVS = jax.devices()
MESH = sk.make_mesh((4, 2), ("x", "y"))
JAX_MESH = jax.sharding.Mesh(MESH.devices, MESH.axis_names)
NS = sk.NamedSharding
PMAP_LOCAL = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)

# -- model-*: HLO sharding strings, OpShardings, sdy forms, meshes, devices ---------------------------------

AFTER_MALFORMED = (  # the strings that corrupted the heap before they were checked
    "for t in ['{devices=[4,0,-8]6,5,-1,0}', '{devices=[2,4]<=[2]}', '{devices=[0,1,00]2,-1,4,6,0,-1,7,0}']:\n"
    "    try: sk.GSPMDSharding(devs[:4], t)\n"
    "    except ValueError: pass\n"
)

MODEL_CRASHES = {
    # GSPMD strings XLA's parser accepts and then aborts on (or corrupts the heap with).
    "model-crash-30": (
        "s = sk.GSPMDSharding(devs, '{devices=[4,1,2]<=[8] last_tile_dim_replicate}'); out = s.shard_shape((8, 2))",
        r"ok: \(2, 2\)",
    ),
    "model-crash-31": (
        "sk.GSPMDSharding(devs[:4], '{devices=[4,0,-8]6,5,-1,0}')",
        r"HloParseError: .*must be positive",
    ),
    "model-crash-35": (
        "sk.GSPMDSharding(devs[::-1], '{devices=[2,4]<=[2]}', memory_kind='pinned_host')",
        r"HloParseError: .*iota reshape \[2\] must be positive sizes whose product is 8",
    ),
    "model-crash-40": (
        "sk.GSPMDSharding(devs[:4], '{devices=[3,2]1,3,3,6,-1,1,8,2,5}', memory_kind='')",
        r"HloParseError: .*must list each device 0..5 exactly once",
    ),
    "model-crash-49": (
        "sk.GSPMDSharding([devs[0], devs[0]], sk._jaxlib.HloSharding.iota_tile([4, 2]))",
        r"ValueError: GSPMDSharding devices must be unique",
    ),
    "model-crash-54": (
        "sk.GSPMDSharding(devs[::-1], '{devices=[1,4]-1,4,3,3,6,8,3,7,2}')",
        r"HloParseError: .*each device 0..3",
    ),
    "model-crash-55": (
        "sk.GSPMDSharding(devs[:2], '{devices=[2]5,4,4,6 last_tile_dims={manual}}')",
        r"HloParseError: .*each device 0..1",
    ),
    "model-crash-68": ("sk.GSPMDSharding(devs[:1], '{devices=[16,8]<=[1e3,2]}')", r"HloParseError: .*expected '\]'"),
    "model-crash-69": (
        "sk.GSPMDSharding(devs[::-1], '{devices=[0,8]4,5,5,5,3,8,-1,5}', memory_kind='hbm')",
        r"HloParseError: .*must be positive",
    ),
    "model-crash-70": (
        "sk.GSPMDSharding(devs[1::2], '{devices=[0,1,00]2,-1,4,6,0,-1,7,0 last_tile_dims={replicated}}')",
        r"HloParseError: .*must be positive",
    ),
    "model-crash-38 model-crash-50 model-hang-93 (mhlo.read of a module's attribute)": (
        "from jaxlib.mlir import ir\n"
        "with context():\n"
        "    for t in ['{devices=[4,2]<=[2]}', '{devices=[65536,65536]<=[4294967296]}', '{maximal device=-1}']:\n"
        "        try: mhlo.read(ir.StringAttr.get(t))\n"
        "        except ValueError as e: print(e)\n"
        "    mhlo.read(ir.StringAttr.get('{devices=[2,2]0,1,2,3 last_tile_dims={manual, replicated, manual}}'))",
        r"HloParseError: .*subgroup types .* repeat",
    ),
    # What crashed after those: a later, unrelated allocation hit the corrupted heap (array-crash-102/103/104/106/
    # 107/108 and the model-crash cases below). The same sequences are now clean.
    "model-crash-32 model-crash-33 model-crash-45 model-crash-65 (make_ir_context after a malformed string)": (
        AFTER_MALFORMED + "for _ in range(3): jax.interpreters.mlir.make_ir_context()\n"
        "from shardkit.dialects import mhlo\n"
        "out = NS(sk.make_mesh((2, 2, 2), ('a', 'b', 'c')), P(None, ('a', 'b'))).shard_shape((4, 8))",
        r"ok: \(4, 2\)",
    ),
    "model-crash-42 model-crash-44 model-crash-67 (the pass API after a malformed string)": (
        AFTER_MALFORMED + "from jaxlib.mlir import ir\nctx = context()\n"
        'm = ir.Module.parse(\'func.func @main(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[4,2]<=[2]}"}) '
        "-> tensor<8xf32> {\\n  return %arg0 : tensor<8xf32>\\n}', ctx)\n"
        "sk.passes.run_pipeline(m, 'import-gspmd')",
        r"PassError: Pass 'import-gspmd' failed:\n  -:1:1: error: 'func.func' op arg 0 - cannot import mhlo.sharding "
        r"\{devices=\[4,2\]<=\[2\]\}: .*iota reshape \[2\]",
    ),
    "model-crash-34 model-crash-41 model-crash-46 model-crash-47 model-crash-52 model-crash-53 model-crash-59 "
    "model-crash-60 model-crash-66 (named shardings against jax after a malformed string)": (
        AFTER_MALFORMED + "import pickle\nfrom tests.jax_oracle import jax_named\n"
        "meshes = {'mesh_222': sk.make_mesh((2, 2, 2), ('x', 'y', 'z')), 'mesh_8': sk.make_mesh((8,), ('i',)),\n"
        "          'mesh_rev': sk.Mesh(np.array(devs[::-1]).reshape(4, 2), ('x', 'y')), 'mesh': mesh,\n"
        "          'unpickled': pickle.loads(pickle.dumps(mesh))}\n"
        "specs = [('mesh_222', P(), (8, 8)), ('mesh_8', P(None, 'i', None), (2, 8, 2)), ('unpickled', P(None), (8,)),\n"
        "         ('mesh', P('x'), (8, 2)), ('mesh', P(None, ('x', 'y')), (2, 8)), ('mesh', P('x', None), (8, 4)),\n"
        "         ('mesh_8', P(), (8,)), ('mesh', P(('y',), 'x'), (8, 4)), ('mesh_rev', P(), (4, 4))]\n"
        "out = []\n"
        "for name, spec, shape in specs:\n"
        "    s = NS(meshes[name], spec)\n"
        "    j = jax_named(s)\n"
        "    out.append(dict(s.devices_indices_map(shape)) == j.devices_indices_map(shape)\n"
        "               and s.is_equivalent_to(NS(meshes[name], spec), len(shape)))\n"
        "out = all(out)",
        r"ok: True",
    ),
    # Meshes: sizes XLA's tile arithmetic overflows on (SIGFPE), and the empty mesh's missing devices.
    "an AbstractMesh of more positions than XLA can count": (
        "sk.NamedSharding(sk.AbstractMesh((2**62, 16), ('x', 'y')), P('x')).to_hlo(1)",
        r"ValueError: AbstractMesh \{'x': 4611686018427387904, 'y': 16\} has \d+ positions; at most 1048576",
    ),
    "the empty mesh has no devices, pickles and is one process's": (
        "import pickle\nm = sk.make_mesh((), ())\n"
        "out = (m.is_multi_process, pickle.loads(pickle.dumps(m)) is m, m.local_devices, m.flat_devices)",
        r"ok: \(False, True, \[\], \(\)\)",
    ),
    # Shardy attributes.
    "model-crash-29": (
        "from jaxlib.mlir import ir\nsdy_forms.SdyTensorSharding.parse('', ir.Context())",
        r"ValueError: .*no text",
    ),
    "model-crash-36": (
        "out = str(sdy_forms.SdyTensorSharding.parse('#sdy.sharding<@mesh, [{}]>', "
        "jax.interpreters.mlir.make_ir_context()))",
        r"ok: '#sdy.sharding<@mesh, \[\{\}\]>'",
    ),
    "model-crash-39": (
        "from jaxlib.mlir import ir\n"
        "sdy_forms.SdyTensorSharding.parse('#sdy.sharding<@mesh, [{\"x\":(0x10)9223372036854775807}]>', ir.Context())",
        r"MLIRError: Unable to parse attribute:.*1:6: .*unregistered dialect",
    ),
    "model-crash-39 (in a context with sdy: parses, then build refuses the sub-axis)": (
        "t = sdy_forms.SdyTensorSharding.parse("
        "'#sdy.sharding<@mesh, [{\"x\":(0x10)9223372036854775807}]>', context())\n"
        "with context(): t.build()",
        r"ValueError: sub-axis \"x\":\(16\)9223372036854775807 needs",
    ),
    "model-crash-64": (
        't = sdy_forms.SdyTensorSharding.parse(\'#sdy.sharding<mesh<["_axis_0"=3]>, [{"y", ?}]>\', context())\n'
        "with context(): t.build()",
        r"ValueError: .*names axis \"y\", which mesh <\[\"_axis_0\"=3\]> does not have",
    ),
    "model-crash-43 model-crash-57 model-crash-58 model-crash-61 (odd axis names round-trip)": (
        "meshes = [sdy_forms.SdyMesh((('a\\\\b', 8),), tuple(range(8))),\n"
        "          sdy_forms.SdyMesh((('x\"y', 3), ('\\u00e9', 4))),\n"
        "          sdy_forms.SdyMesh((('\\u00e9', 1), ('x\"y', 2)))]\n"
        "with context(): out = [sdy_forms.SdyMesh.from_attr(m.build()) == m for m in meshes]",
        r"ok: \[True, True, True\]",
    ),
    "model-crash-48": (
        "m = sdy_forms.SdyMesh((), (0,))\nwith context(): out = str(m.build())",
        r"ok: '#sdy.mesh<\[\], device_ids=\[0\]>'",
    ),
    "model-crash-56": (
        "t = sdy_forms.SdyTensorSharding(sdy_forms.SdyMesh(()), (sdy_forms.SdyDim(('x',)),))\n"
        "with context(): t.build()",
        r"ValueError: .*names axis \"x\", which mesh <\[\]> does not have",
    ),
    "model-crash-51": ("sk.Mesh(np.array(devs[:1]).reshape(()), None)", r"TypeError: axis_names must be a str"),
    "model-crash-37 (a module pass nested on func.func)": (
        "text = 'dedup-meshes ,func.func(sdy-import-pipeline) ,dedup-meshes'\n"
        "assert len(sk.passes.parse_pipeline(text)) == 3\nsk.passes.PassManager(text)",
        r"ValueError: Pass pipeline 'sdy-import-pipeline' cannot run nested on 'func.func'",
    ),
    "model-crash-62 (a pipeline of unknown passes)": (
        "sk.passes.PassManager('builtin.module(canonicalise ,- ,print-ir ,propagate)')",
        r"UnknownPassError: Unknown pass 'canonicalise'.*Did you mean 'canonicalize'",
    ),
    "model-crash-63": (
        "s = sk.PositionalSharding(devs).replicate(None).T.transpose(0)\n"
        "out = np.asarray(sk.device_put(np.arange(8.0), s)).tolist()",
        r"ok: \[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0\]",
    ),
}


def test_model_crashes_are_named_errors_or_right_answers():
    check_outcomes(MODEL_CRASHES)


# Tuple shardings (one per element of a tuple value, or per result of an op) at every public function that takes an
# HloSharding, its text or its proto: XLA aborts the process when asked for a tuple's devices or tiles
# (fuzz-2026-11c: hlo_to_sdy(parse("{{maximal device=8}}"), 1) ended in "Check failed: !IsTuple()"). Where one
# value's sharding is expected: TupleShardingError, a ValueError naming the function; where a tuple is legal,
# element by element. Nested tuples (jaxlib builds one from a nested proto; XLA's parser takes none) are malformed.
TUPLE = "t = mhlo.parse('{{maximal device=8}}'); two = mhlo.parse('{{replicated}, {devices=[2]0,1}}')\n"
NESTED = (
    "e = sk._jaxlib.OpSharding(); e.type = sk._jaxlib.OpShardingType.REPLICATED\n"
    "inner = sk._jaxlib.OpSharding(); inner.type = sk._jaxlib.OpShardingType.TUPLE; inner.tuple_shardings = [e]\n"
    "outer = sk._jaxlib.OpSharding(); outer.type = sk._jaxlib.OpShardingType.TUPLE; outer.tuple_shardings = [inner]\n"
    "nested = sk._jaxlib.HloSharding.from_proto(outer)\n"
)
REFUSED = r"TupleShardingError: {} takes one value's HLO sharding, but \{{\{{maximal device=8\}}\}} is a tuple sharding"
TUPLE_SHARDINGS = {
    "fuzz-2026-11c hlo_to_sdy": (TUPLE + "sdy_forms.hlo_to_sdy(t, 1)", REFUSED.format("hlo_to_sdy")),
    "parse": (
        TUPLE + "out = [repr(e) for e in two.tuple_elements()]",
        r"ok: \['\{replicated\}', '\{devices=\[2\]0,1\}'\]",
    ),
    "checked (text form)": (TUPLE + "out = mhlo.checked(two) == two", "ok: True"),
    "checked (proto)": (TUPLE + "out = repr(mhlo.checked(two.to_proto()))", r"ok: '\{\{replicated\}, \{devices"),
    "checked (nested proto)": (
        NESTED + "mhlo.checked(outer)",
        "ValueError: OpSharding proto is malformed: tuple element 0 is itself a tuple",
    ),
    "checked (nested object)": (
        NESTED + "mhlo.checked(nested)",
        r"ValueError: HLO sharding \{\{\{replicated\}\}\} is malformed",
    ),
    "one_value": (TUPLE + "mhlo.one_value(t, 'f')", REFUSED.format("f")),
    "permuted": (TUPLE + "mhlo.permuted(t, [0])", REFUSED.format("mhlo.permuted")),
    "with_trailing_dims": (TUPLE + "mhlo.with_trailing_dims(t, 1, 1)", REFUSED.format("mhlo.with_trailing_dims")),
    "tiling": (TUPLE + "mhlo.tiling(t, 1)", REFUSED.format("mhlo.tiling")),
    "is_replicated": (
        TUPLE
        + "out = (mhlo.is_replicated(t), mhlo.is_replicated(two), mhlo.is_replicated(mhlo.parse('{{replicated}}')))",
        r"ok: \(True, False, True\)",  # a maximal sharding places the whole value, as one of one device does
    ),
    "is_replicated (nested object)": (
        NESTED + "mhlo.is_replicated(nested)",
        "ValueError: HLO sharding .* is malformed",
    ),
    "equivalent": (
        TUPLE + "r = mhlo.parse('{replicated}')\n"
        "out = (mhlo.equivalent(t, t), mhlo.equivalent(t, r), mhlo.equivalent(r, t), mhlo.equivalent(two, two),"
        " mhlo.equivalent(two, t), mhlo.equivalent(mhlo.parse('{{replicated}}'), mhlo.parse('{{maximal device=0}}')))",
        r"ok: \(True, False, False, True, False, True\)",
    ),
    "read and split": (
        TUPLE + "from jaxlib.mlir import ir\nwith context():\n"
        "    out = [ir.StringAttr(a).value for a in mhlo.split(ir.StringAttr.get(repr(two)), 2)]",
        r"ok: \['\{replicated\}', '\{devices=\[2\]0,1\}'\]",
    ),
    "join of a tuple": (
        TUPLE + "from jaxlib.mlir import ir\nwith context(), ir.Location.unknown():\n"
        "    a = ir.StringAttr.get(repr(two)); f32 = ir.RankedTensorType.get([2], ir.F32Type.get())\n"
        "    mhlo.join([a, a], [f32, f32])",
        r"TupleShardingError: result 0's mhlo.sharding takes one value's HLO sharding",
    ),
    "GSPMDSharding (text)": (
        "sk.GSPMDSharding(devs[:2], '{{replicated}, {devices=[2]0,1}}')",
        r"TupleShardingError: GSPMDSharding takes",
    ),
    "GSPMDSharding (object)": (TUPLE + "sk.GSPMDSharding(devs, t)", REFUSED.format("GSPMDSharding")),
    "GSPMDSharding (proto)": (TUPLE + "sk.GSPMDSharding(devs, t.to_proto())", REFUSED.format("GSPMDSharding")),
    "from_hlo": (
        TUPLE + "from shardkit.sharding import from_hlo\nfrom_hlo(t, devs[:1], None, 1)",
        REFUSED.format("from_hlo"),
    ),
    "NamedSharding.from_hlo": (TUPLE + "NS.from_hlo(mesh, t, 1)", REFUSED.format("NamedSharding.from_hlo")),
    "is_equivalent_to a jax sharding": (
        TUPLE + "j = sk._jaxlib.gspmd_sharding(devs[:2], two, None)\n"
        "sk.GSPMDSharding(devs[:2], '{devices=[2]0,1}').is_equivalent_to(j, 1)",
        r"ValueError: is_equivalent_to\(other, ndim=1\): is_equivalent_to takes one value's HLO sharding",
    ),
    "GSPMDSharding.from_jax": (
        TUPLE + "sk.GSPMDSharding.from_jax(sk._jaxlib.gspmd_sharding(devs[:2], two, None), 1)",
        r"TupleShardingError: GSPMDSharding takes",
    ),
}


def test_tuple_shardings_are_refused_or_read_element_by_element_at_every_entry_point():
    check_outcomes(TUPLE_SHARDINGS)


def test_the_heap_corruption_culprit_is_refused_before_jaxlib():
    """The crashes in unrelated calls followed one kind of call: text XLA parses without checking, whose
    negative or zero dimensions corrupt the heap. Such text never reaches jaxlib now."""
    for text in ["{devices=[4,0,-8]6,5,-1,0}", "{devices=[-2,-2]0,1,2,3}", "{devices=[2,2]<=[-4]}"]:
        with pytest.raises(mhlo.HloParseError, match="must be positive"):
            mhlo.parse(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "the text is empty"),
        ("garbage", "at column 1: expected '{'"),
        ("{devices=[4,2]<=[2]}", "iota reshape"),
        ("{devices=[2]0,0}", "each device 0..1 exactly once, got \\[0, 0\\]"),
        ("{devices=[2]0,1,2}", "each device 0..1 exactly once"),
        ("{devices=[2,2]<=[2,2]T(1,1)}", "not a permutation"),
        ("{devices=[100000,100000,100000]<=[1000000000000000]}", "at most 1048576"),
        ("{maximal device=-1}", "maximal device -1"),
        ("{devices=[2,2]0,1,2,3 last_tile_dims={manual, replicated, manual}}", "repeat"),
        ("{devices=[2]0,1 last_tile_dim_replicate last_tile_dims={manual}}", "expected '}'"),
        ("{devices=[2,2]<=[4] last_tile_dims={}}", "names no subgroup type"),
        ("{devices=[2]0,1 last_tile_dims={tiled}}", "unknown subgroup type 'tiled'"),
        ("{devices=[2]0,1 last_tile_dims={manual, replicated}}", "2 subgroup types for a tile assignment of rank 1"),
        ("{}", "empty tuple"),
        ("{{replicated}, {{replicated}}}", "expected replicated, manual"),
        ("{replicated} {replicated}", "unexpected '{' after the sharding"),
        ("{replicated", "at the end: expected '}'"),
        ("{devices=[1]0}", "non-maximal shardings must have more than one device"),  # XLA's own report
    ],
)
def test_malformed_hlo_text_is_a_located_error(text, expected):
    with pytest.raises(mhlo.HloParseError, match=expected) as e:
        mhlo.parse(text)
    assert e.value.text == text


def test_well_formed_hlo_text_round_trips():
    for text in [
        "{replicated}",
        "{manual}",
        "{maximal device=3}",
        "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
        "{devices=[2,2]0,2,1,3}",
        "{devices=[2,2]<=[4] last_tile_dims={manual}}",
        "{{replicated}, {devices=[2]0,1}}",
        '{devices=[2]0,1 metadata={op_name="a}b" source_line=3}}',
    ]:
        hlo = mhlo.parse(text)
        assert mhlo.parse(repr(hlo)) == hlo


def test_user_built_hlo_shardings_and_protos_are_checked():
    # jaxlib 0.10 parses this one and reading its tiles would abort; jaxlib 0.11 and later refuse it themselves
    try:
        bad = HloSharding.from_string("{devices=[4,2]<=[2]}")
    except jax.errors.JaxRuntimeError as e:
        assert _jaxlib.JAXLIB_RELEASE >= (0, 11) and "iota tile assignment size 2" in str(e)
    else:
        with pytest.raises(ValueError, match="iota reshape"):
            sk.GSPMDSharding(DEVS, bad)
        with pytest.raises(ValueError, match="iota reshape"):
            sdy_forms.hlo_to_sdy(bad, 2)
    proto = OpSharding()
    proto.type = OpShardingType.OTHER
    proto.tile_assignment_dimensions = [-2, -2]
    proto.tile_assignment_devices = [0, 1, 2, 3]
    with pytest.raises(ValueError, match="OpSharding proto is malformed: tile assignment dimensions must be positive"):
        sk.GSPMDSharding(DEVS[:4], proto)
    good = HloSharding.from_string("{devices=[2,2]<=[4]}").to_proto()
    assert sk.GSPMDSharding(DEVS[:4], good).shard_shape((4, 4)) == (2, 2)
    tuple_proto = HloSharding.from_string("{{replicated}, {devices=[2]0,1}}").to_proto()
    with pytest.raises(mhlo.TupleShardingError, match="GSPMDSharding takes one value's HLO sharding"):
        sk.GSPMDSharding(DEVS[:2], tuple_proto)
    with pytest.raises(ValueError, match="tuple sharding"):
        mhlo.tiling(mhlo.parse("{{replicated}, {replicated}}"), 1)  # XLA aborts on a tuple's tile assignment
    with pytest.raises(ValueError, match="describes no tiling"):
        mhlo.tiling(mhlo.parse("{manual}"), 1)


def test_gspmd_sharding_positions_fit_the_devices():
    with pytest.raises(ValueError, match="names device position 9, but only 8 devices"):
        sk.GSPMDSharding(DEVS, "{maximal device=9}")
    with pytest.raises(ValueError, match="spans 4 devices, but 2 were given"):
        sk.GSPMDSharding(DEVS[:2], "{devices=[4]<=[4]}")
    s = sk.GSPMDSharding(DEVS[::-1], "{devices=[4,1,2]<=[8] last_tile_dim_replicate}")
    j = jax_gspmd(DEVS[::-1], "{devices=[4,1,2]<=[8] last_tile_dim_replicate}")
    assert dict(s.devices_indices_map((8, 2))) == j.devices_indices_map((8, 2))


def test_sdy_forms_refuse_what_shardy_forbids():
    with pytest.raises(ValueError, match='axis "a" must have a size of at least 1, got 0'):
        sdy_forms.SdyMesh((("a", 0),))
    with pytest.raises(ValueError, match=r"names must be unique, but 'a' repeats"):
        sdy_forms.SdyMesh((("a", 2), ("a", 2)))
    with pytest.raises(TypeError, match=r"\(str, int\) pairs, got \(3, 2\)"):
        sdy_forms.SdyMesh(((3, 2),))
    with pytest.raises(ValueError, match="device_ids must list each of 0..1 once, got \\[5, 7\\]"):
        sdy_forms.SdyMesh((("a", 2),), (5, 7))
    with pytest.raises(ValueError, match="takes one device id"):
        sdy_forms.SdyMesh((), (0, 1))
    with pytest.raises(ValueError, match="at most 1048576"):
        sdy_forms.SdyMesh((("x", 2**62), ("y", 8)))
    with pytest.raises(ValueError, match="symbol name must not be empty"):  # model-wrong-72: MLIR prints it invalid
        sdy_forms.SdyTensorSharding("", ())
    with pytest.raises(TypeError, match="sequence of SdyDim"):
        sdy_forms.SdyTensorSharding("mesh", ("x",))
    with pytest.raises(ValueError, match="priority must be None or an int"):
        sdy_forms.SdyDim(("x",), priority=-1)
    with pytest.raises(TypeError, match="name must be a str, got 3"):
        sdy_forms.SdyAxisRef(3)
    mesh = sdy_forms.SdyMesh((("x", 4), ("y", 2)))
    refused = {
        'uses axis "x" twice': sdy_forms.SdyTensorSharding(mesh, (sdy_forms.SdyDim(("x",)), sdy_forms.SdyDim(("x",)))),
        'uses axis "x" twice \\("x":\\(1\\)2 and "x"\\)': sdy_forms.SdyTensorSharding(
            "mesh", (sdy_forms.SdyDim((sdy_forms.SdyAxisRef("x", (1, 2)),)),), replicated=("x",)
        ),
        'does not split axis "x" of size 4': sdy_forms.SdyTensorSharding(
            mesh, (sdy_forms.SdyDim((sdy_forms.SdyAxisRef("x", (1, 3)),)),)
        ),
        "needs a pre-size of at least 1": sdy_forms.SdyTensorSharding(
            "m", (sdy_forms.SdyDim((sdy_forms.SdyAxisRef("x", (0, 2)),)),)
        ),
        'names axis "z"': sdy_forms.SdyTensorSharding(mesh, (sdy_forms.SdyDim(("z",)),)),
    }
    with context():
        for message, tensor in refused.items():
            with pytest.raises(ValueError, match=message):
                tensor.build()
    with pytest.raises(ValueError, match='uses axis "x" twice'):
        sdy_forms.SdyTensorSharding("mesh", (sdy_forms.SdyDim(("x",)), sdy_forms.SdyDim(("x",)))).to_hlo(mesh)
    with pytest.raises(ValueError, match="shards more than one dimension"):
        mhlo.tile(mesh.axes, [("x",), ("x",)])
    with pytest.raises(ValueError, match="'z' is not an axis of the mesh"):
        mhlo.tile(mesh.axes, [("z",)])


def test_sdy_parse_errors_are_named_or_located():
    """model-unclean-84: MLIR's own parse error is the located diagnostic (``1:14: unbalanced '<'``)."""
    with pytest.raises(ValueError, match="no text"):
        sdy_forms.SdyTensorSharding.parse("", context())
    with pytest.raises(TypeError, match="needs an MLIR context"):
        sdy_forms.SdyTensorSharding.parse("#sdy.sharding<@mesh, [{}]>", None)
    with pytest.raises(ValueError, match="Expected an #sdy.sharding attribute"):
        sdy_forms.SdyTensorSharding.parse('#sdy.mesh<["a"=2]>', context())
    with pytest.raises(ir.MLIRError, match=r"1:14: unbalanced '<'"):
        sdy_forms.SdyTensorSharding.parse("#sdy.sharding<@mesh, [{}]", context())


def case(id_: str, make, error: type[Exception], message: str):
    """A named-error case whose test id names the fuzz catalogue entries it reproduces."""
    return pytest.param(make, error, message, id=id_)


# The unclean entries of the catalogue list only the error they leaked; each input below is rebuilt from it.
DEVICE_ERRORS = [
    # A device that is an int, a str, None or a list.
    case("model-unclean-71", lambda: sk.SingleDeviceSharding(0), TypeError, r"device must be a jax Device.*got 0"),
    case("array-unclean-110", lambda: sk.SingleDeviceSharding("cpu:0"), TypeError, r"Device.*got 'cpu:0'"),
    case("array-unclean-109", lambda: sk.device_put(1.0, 0), TypeError, r"a Device or None; got 0"),
    case("array-unclean-110 (device_put)", lambda: sk.device_put(1.0, "cpu:0"), TypeError, r"a Device or None; got"),
    case("model-unclean-73", lambda: sk.SingleDeviceSharding(DEVS[:2]), TypeError, r"Device.*got \[CpuDevice"),
    case(
        "model-unclean-88",
        lambda: sk.Mesh(np.arange(8).reshape(4, 2), ("x", "y")),
        TypeError,
        r"Mesh devices must be jax Devices.*entry 0",
    ),
    case("model-unclean-88 (one entry)", lambda: sk.Mesh([DEVS[0], 3], ("x",)), TypeError, r"entry 1 is 3 \(int\)"),
    case(
        "model-unclean-80", lambda: sk.make_mesh((2,), ("x",), devices=["a", "b"]), TypeError, r"entry 0 is 'a' \(str\)"
    ),
    case(
        "array-unclean-119",
        lambda: sk.Mesh(np.array(["a"] * 8).reshape(4, 2), ("x", "y")),
        TypeError,
        r"entry 0 is np.str_\('a'\)",
    ),
    case("array-unclean-113", lambda: sk.Mesh([DEVS[0], None], ("x",)), TypeError, r"entry 1 is None"),
    case("model-unclean-89", lambda: sk.GSPMDSharding([0, 1], "{devices=[2]0,1}"), TypeError, "must be jax Devices"),
    case("model-unclean-83", lambda: sk.GSPMDSharding(None, "{replicated}"), TypeError, r"entry 0 is None"),
    case("model-unclean-89 (positional)", lambda: sk.PositionalSharding([0, 1]), TypeError, "must be jax Devices"),
    case("model-unclean-90", lambda: sk.PmapSharding(["cpu"]), TypeError, "PmapSharding devices must be jax Devices"),
    case("no devices", lambda: sk.PositionalSharding([]), ValueError, "must name at least one device"),
    case("repeated devices", lambda: sk.Mesh([DEVS[0], DEVS[0]], ("x",)), ValueError, r"Mesh devices must be unique"),
    case("memory_kind", lambda: NS(MESH, P("x"), memory_kind=3), TypeError, "memory_kind must be a str or None, got 3"),
    # None, zero and negative sizes.
    case("model-unclean-91", lambda: sk.make_mesh((0,), ("x",)), ValueError, r"sizes must be positive, got \(0,\)"),
    case("model-unclean-81", lambda: sk.make_mesh((-1, 8), ("x", "y")), ValueError, r"got \(-1, 8\)"),
    case("model-unclean-77", lambda: sk.make_mesh(None, ("x",)), TypeError, "axis_shapes must be a sequence of ints"),
    case("float size", lambda: sk.make_mesh((2.5,), ("x",)), TypeError, r"got \(2.5,\)"),
    case("model-unclean-79", lambda: sk.make_mesh((None,), ("x",)), TypeError, r"got \(None,\)"),
    case("model-unclean-82", lambda: sk.make_mesh(8, "x"), TypeError, "axis_shapes must be a sequence of ints, got 8"),
    case("model-unclean-82 (shape)", lambda: NS(MESH, P("x")).shard_shape(8), TypeError, "sequence of ints, got 8"),
    case("model-unclean-82 (abstract)", lambda: sk.AbstractMesh(8, ("x",)), TypeError, "must be a sequence, got 8"),
    case("model-unclean-91 (axis)", lambda: sk.Mesh(np.empty((0,), object), ("x",)), ValueError, "'x' has size 0"),
    case("axis_names", lambda: sk.Mesh(np.array(DEVS).reshape(4, 2), None), TypeError, "axis_names must be a str"),
    case("axis_sizes", lambda: sk.AbstractMesh(None, ("x",)), TypeError, "axis_sizes must be a sequence, got None"),
    case("abstract size 0", lambda: sk.AbstractMesh((0,), ("x",)), ValueError, "positive integer size"),
    case(
        "no mesh", lambda: NS(None, P()), TypeError, r"needs a Mesh or AbstractMesh \(shardkit.s or jax.s\), got None"
    ),
    case("empty mesh", lambda: NS(EMPTY_MESH, P()), ValueError, "needs a mesh with devices, got the empty mesh"),
    case("no shape", lambda: NS(MESH, P("x")).shard_shape(None), TypeError, "array shape is a sequence of ints"),
    case("negative shape", lambda: NS(MESH, P("x")).devices_indices_map((-8,)), ValueError, r"non-negative, got"),
    case("pmap shape", lambda: sk.PmapSharding.default(None), TypeError, "array shape is a sequence of ints"),
    case(
        "model-unclean-86",
        lambda: sk.PositionalSharding(DEVS).replicate(0, False).replicate(0, False),
        ValueError,
        "out of bounds for a PositionalSharding of rank",
    ),
    # Ranks and dimensions out of range (IndexError), None compared with an int (TypeError '<').
    case("model-unclean-75", lambda: NS(MESH, P("x", "y")).shard_shape((8,)), ValueError, "rank at least 2"),
    case("model-unclean-75 (pmap)", lambda: sk.PmapSharding.default((8,), 3), ValueError, "sharded_dim 3 is out of"),
    case(
        "model-unclean-75 (hlo)",
        lambda: sk.GSPMDSharding(DEVS, "{devices=[4,2]<=[8]}").shard_shape((8,)),
        ValueError,
        "tiles 2 dimensions, but the array has rank 1",
    ),
    case("model-unclean-76", lambda: axes_of(P(), None), ValueError, "non-negative int; got None"),
    case("model-unclean-76 (sub-axis)", lambda: sdy_forms.SdyAxisRef("x", (None, 2)), TypeError, r"got \(None, 2\)"),
    case("axes_of", lambda: axes_of(P(), -9), ValueError, "non-negative int; got -9"),
    # jax's PartitionSpec takes entries shardkit does not model; every spec helper checks the spec first
    # (fuzz-2026-11c: used_axes(P(...)) ended in "'ellipsis' object is not iterable").
    case("fuzz-2026-11c used_axes", lambda: used_axes(P(...)), TypeError, "entry 0 must be None, an axis name"),
    case("used_axes of a number", lambda: used_axes(P("x", 3)), TypeError, "entry 1 must be None.*got 3 of type int"),
    case("axes_of P(...)", lambda: axes_of(P("x", ...), 0), TypeError, "entry 1 must be None.*got Ellipsis"),
    case("axes_of unreduced", lambda: axes_of(P("x", unreduced={"y"}), 0), ValueError, "shardkit does not model"),
    case("axes_of a tuple", lambda: axes_of(("x",), 0), TypeError, r"Expected a PartitionSpec, got \('x',\)"),
    case("used_axes of a list", lambda: used_axes(["x"]), TypeError, "Expected a PartitionSpec, got"),
    case(
        "model-unclean-78",
        lambda: NS(MESH, P("x")).is_equivalent_to(P("x"), 1),
        TypeError,
        r"is_equivalent_to needs a Sharding, got P\(.x.,\) of type P",
    ),
    # An axis name that is not a str reached str.replace; positions beyond the device list; std::bad_alloc from
    # huge tile assignments.
    case("model-unclean-74", lambda: sdy_forms.SdyMesh(((1, 2),)), TypeError, r"\(str, int\) pairs"),
    case(
        "model-unclean-92 model-unclean-94 array-unclean-122",
        lambda: sk.GSPMDSharding(DEVS[:2], "{devices=[2]5,6}"),
        ValueError,
        r"each device 0..1 exactly once",
    ),
    case(
        "array-unclean-122 (maximal)",
        lambda: sk.GSPMDSharding(DEVS, "{maximal device=8}"),
        ValueError,
        "names device position 8, but only 8 devices",
    ),
    case(
        "model-unclean-87 model-unclean-95",
        lambda: sk.GSPMDSharding(DEVS, "{devices=[65536,65536]<=[4294967296]}"),
        ValueError,
        "at most 1048576",
    ),
    case("op_sharding", lambda: sk.GSPMDSharding(DEVS, None), TypeError, "op_sharding must be an HloSharding"),
    case("static_argnums", lambda: sk.jit(lambda a: a, static_argnums="a"), TypeError, "static_argnums must be"),
    # Constructing arrays.
    case(
        "array-unclean-115",
        lambda: sk.make_array_from_single_device_arrays((8,), NS(MESH, P("x")), None),
        TypeError,
        "arrays must be a sequence of single-device arrays, got None",
    ),
    case(
        "array-unclean-115 (callback)",
        lambda: sk.make_array_from_callback((8,), NS(MESH, P("x")), None),
        TypeError,
        "data_callback must be a function of an index, got None",
    ),
    case(
        "array-unclean-111",
        lambda: sk.make_array_from_single_device_arrays(None, NS(MESH, P("x")), []),
        TypeError,
        "array shape is a sequence of ints, got None",
    ),
    case(
        "array-unclean-116",
        lambda: sk.make_array_from_callback((None,), NS(MESH, P("x")), np.ones),
        TypeError,
        r"array shape is a sequence of ints, got \(None,\)",
    ),
    case(
        "array-unclean-117",
        lambda: sk.make_array_from_callback((8,), None, np.ones),
        TypeError,
        "sharding must be a shardkit Sharding, got NoneType",
    ),
    case(
        "array-unclean-117 (single-device arrays)",
        lambda: sk.make_array_from_single_device_arrays((8,), None, []),
        TypeError,
        "sharding must be a shardkit Sharding, got NoneType",
    ),
    case(
        "array-unclean-118",
        lambda: sk.make_array_from_callback((-8,), NS(MESH, P("x")), np.ones),
        ValueError,
        r"non-negative, got shape \(-8,\)",
    ),
    case(
        "array-unclean-119 (pieces)",
        lambda: sk.make_array_from_single_device_arrays((8,), NS(MESH, P("x")), ["a"]),
        TypeError,
        "Per-device array 0 must be a jax Array on one device, got str",
    ),
    # fuzz-2026-11b: a pmap's pieces drop their mapped dimension, which process-local data indexed past; jax's
    # NamedSharding conversion indexes its spec by ndim unchecked.
    case(
        "fuzz-2026-11b-unclean-1",
        lambda: sk.make_array_from_process_local_data(sk.PmapSharding(DEVS[:4], 1), PMAP_LOCAL, (16, 4)),
        ValueError,
        r"In dimension 1, the process data has 8 elements\. Process addresses 4 elements and global_shape=\(16, 4\)",
    ),
    case(
        "fuzz-2026-11b-unclean-1 (global shape inferred)",
        lambda: sk.make_array_from_process_local_data(sk.PmapSharding(DEVS[:4], 1), PMAP_LOCAL),
        ValueError,
        r"dimension 1 of shape \(16, 8\) has size 8, but there are 4 devices",
    ),
    case(
        "fuzz-2026-11b-unclean-2",
        lambda: NS(sk.make_mesh((2, 2, 2), ("a", "b", "c")), P()).is_equivalent_to(
            jax.sharding.NamedSharding(JAX_MESH, jax.sharding.PartitionSpec(None, "y")), 1
        ),
        ValueError,
        r"is_equivalent_to\(other, ndim=1\): Sharding NamedSharding\(.*spec=P\(None, 'y'\).* is only valid for "
        r"values of rank at least 2, but was applied to a value of rank 1",
    ),
    case(
        "fuzz-2026-11b-unclean-2 (shardkit's own)",
        lambda: NS(MESH, P("x", "y")).is_equivalent_to(NS(MESH, P("x")), 1),
        ValueError,
        r"is_equivalent_to\(other, ndim=1\): Sharding NamedSharding\(.*spec=P\('x', 'y'\).* rank at least 2",
    ),
    case("is_equivalent_to ndim", lambda: NS(MESH, P()).is_equivalent_to(NS(MESH, P()), "1"), TypeError, "got '1'"),
    case("is_equivalent_to bool", lambda: NS(MESH, P()).is_equivalent_to(NS(MESH, P()), True), TypeError, "got True"),
    case(
        "is_equivalent_to negative",
        lambda: NS(MESH, P()).is_equivalent_to(NS(MESH, P("x")), -1),
        ValueError,
        r"is_equivalent_to's ndim must be a rank \(an int >= 0\), got -1",
    ),
    case(
        "array-unclean-123",
        lambda: sk.load("func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n  return %a : tensor<8xf32>\n}"),
        ValueError,
        "has no function @main to run",
    ),
]


@pytest.mark.parametrize("make, error, message", DEVICE_ERRORS)
def test_model_unclean_errors_are_named(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize("sharded_dim, shape", [(1, (16, 4)), (0, (4, 3)), (None, (5, 3))])
@pytest.mark.parametrize("global_shape", ["given", "inferred"])
def test_process_local_data_for_a_pmap_sharding_is_placed_as_device_put_places_it(sharded_dim, shape, global_shape):
    """fuzz-2026-11b-unclean-1, the right answer: one process holds every piece, so its data is the value (as jax
    0.4's PmapSharding took it), each piece without its mapped dimension."""
    s = sk.PmapSharding(DEVS[:4], sharded_dim)
    local = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = sk.make_array_from_process_local_data(s, local, shape if global_shape == "given" else None)
    want = sk.device_put(local, s)
    np.testing.assert_array_equal(sk.device_get(x), local)  # jax's np.asarray: see test_pmap_pieces_and_numpy
    assert x.sharding == s
    assert [(d.device, d.index) for d in x.addressable_shards] == [(d.device, d.index) for d in want.addressable_shards]
    for got, expected in zip(x.addressable_shards, want.addressable_shards):
        np.testing.assert_array_equal(np.asarray(got.data), np.asarray(expected.data))


def test_meshes_are_immutable_as_jax_meshes_are():
    """model-unclean-85: setting an attribute of a mesh is Python's AttributeError for an immutable object, naming
    the attribute; jax's AbstractMesh and Mesh refuse it the same way (as frozen dataclasses do)."""
    for mesh, jax_mesh in [(sk.AbstractMesh((2, 4), ("x", "y")), jax.sharding.AbstractMesh((2, 4), ("x", "y")))]:
        with pytest.raises(AttributeError, match="Cannot set 'x': AbstractMesh objects are immutable"):
            mesh.x = 1
        with pytest.raises(AttributeError):
            jax_mesh.x = 1
    with pytest.raises(AttributeError, match="Cannot set 'axis_names': Mesh objects are immutable"):
        MESH.axis_names = ("a", "b")


def test_a_deleted_array_is_a_runtime_error_as_in_jax():
    """array-unclean-114 (an AttributeError with no message; its input is not in the catalogue): every accessor of
    a deleted Array's data raises jax's own RuntimeError (the array is jax's); what does not need the data still
    answers."""
    x = sk.device_put(np.ones((8, 4), np.float32), NS(MESH, P("x", "y")))
    j = jax.device_put(np.ones((8, 4), np.float32), NS(MESH, P("x", "y")).to_jax(2))
    x.delete(), j.delete()
    for use in [
        lambda a: a.addressable_shards,
        lambda a: a.global_shards,
        lambda a: a.devices(),
        lambda a: a.addressable_data(0),
        lambda a: a.on_device_size_in_bytes(),
        lambda a: a.block_until_ready(),
        lambda a: a.copy_to_host_async(),
        lambda a: a.unsafe_buffer_pointer(),
        lambda a: a[0],
        lambda a: a.tolist(),
        lambda a: pickle.dumps(a),
        lambda a: jax.numpy.sum(a),
    ]:
        with pytest.raises(RuntimeError) as ours:
            use(x)
        with pytest.raises(RuntimeError) as theirs:
            use(j)
        assert str(ours.value) == str(theirs.value)
    assert (x.shape, x.sharding, x.is_deleted()) == ((8, 4), NS(MESH, P("x", "y")), True)
    with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[8,4\]"):
        sk.device_get(x)


def test_pmap_pieces_and_numpy():
    """A PmapSharding's pieces keep the mapped dimension with size 1 (XLA has no rank-dropping sharding) while its
    index drops it, as jax 0.4's did. Before jaxlib 0.12 jax's own gather (``np.asarray``) copies each piece to its
    index, which numpy broadcasts when the mapped dimension leads and refuses otherwise; 0.12 copies the whole
    array at once. shardkit's gather reads every layout on every release."""
    data = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    leading, inner = sk.device_put(data, sk.PmapSharding(DEVS[:4], 0)), sk.device_put(data, sk.PmapSharding(DEVS, 1))
    for x in (leading, inner):
        np.testing.assert_array_equal(sk.device_get(x), data)
    np.testing.assert_array_equal(np.asarray(leading), data)
    if _jaxlib.JAXLIB_RELEASE < (0, 12):
        with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(4,1\) into shape \(4,\)"):
            np.asarray(inner)
    else:
        np.testing.assert_array_equal(np.asarray(inner), data)


def test_zero_size_arrays_are_placed_and_lowered_as_jax_does():
    """array-unclean-120, array-unclean-121, lower-unclean-125 (ZeroDivisionError from sizes of 0; their inputs
    are not in the catalogue): zero-size arrays through the constructors, device_put and jit, against jax.

    Where XLA compiles a zero-size output replicated, jax still reports the requested sharding (its (0, 8) pieces
    then disagree with its shard_shape (0, 1), and np.asarray of that jax Array raises); shardkit reports what XLA
    compiled, so pieces and sharding agree. Every value here is zeros (empty, or a sum over nothing).
    """
    s = NS(MESH, P("x"))
    host = np.ones((0, 3), np.float32)
    got = [
        sk.make_array_from_process_local_data(s, host),
        sk.make_array_from_callback((0, 3), s, lambda i: host[i]),
        sk.device_put(np.ones((0,), np.float32), sk.PositionalSharding(DEVS)),
        sk.jit(lambda a: a * 2, out_shardings=NS(MESH, P(("x", "y"))))(np.ones((0,), np.float32)),
        sk.jit(lambda a: a.sum(0), in_shardings=s)(host),
        sk.jit(lambda a: jax.numpy.zeros((0, 8)), out_shardings=NS(MESH, P(None, ("x", "y"))))(1.0),
    ]
    js = s.to_jax(2)
    want = [
        jax.make_array_from_process_local_data(js, host),
        jax.make_array_from_callback((0, 3), js, lambda i: host[i]),
        jax.device_put(np.ones((0,), np.float32), NS(MESH, P("x")).to_jax(1)),
        jax.jit(lambda a: a * 2, out_shardings=NS(MESH, P(("x", "y"))).to_jax(1))(np.ones((0,), np.float32)),
        jax.jit(lambda a: a.sum(0), in_shardings=js)(host),
        jax.jit(lambda a: jax.numpy.zeros((0, 8)), out_shardings=NS(MESH, P(None, ("x", "y"))).to_jax(2))(1.0),
    ]
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        np.testing.assert_array_equal(np.asarray(g), np.zeros(w.shape, w.dtype))
        assert all(sh.data.shape == g.sharding.shard_shape(g.shape) for sh in g.addressable_shards)
    for g, w in zip(got[:3], want[:3]):
        assert [sh.index for sh in g.addressable_shards] == [sh.index for sh in w.addressable_shards]


def test_devices_of_another_client_are_refused():
    from jaxlib import xla_client

    other = xla_client.make_cpu_client().devices()[0]  # cpu:0 too, of a second client
    with pytest.raises(
        ValueError, match=r"Mesh devices mix backends \(clients\): entry 0 is cpu:0 \(cpu\) and entry 1"
    ):
        sk.Mesh([DEVS[0], other], ("x",))


def test_abstract_mesh_pickles_with_its_axis_types():
    m = sk.AbstractMesh((2, 4), ("x", "y"), axis_types=sk.AxisType.Explicit)
    assert pickle.loads(pickle.dumps(m)) is m


# -- array-*: device_put, constructors, donation, deleted pieces ---------------------------------------------

ARRAY_CRASHES = {
    "array-crash-96": (
        "a = fresh(); f2 = sk.jit(lambda a, b: a + b, donate_argnums=(0, 1)); f2(a, a)",
        r"ValueError: Argument args\[0\] is donated, but the same array is also passed as args\[1\]",
    ),
    "donated once, read twice": (
        "a = fresh(); sk.jit(lambda a, b: a + b, donate_argnums=0)(a, a)",
        r"ValueError: Argument args\[0\] is donated, but the same array is also passed as args\[1\]",
    ),
    "donated, and a reshard that kept its pieces passed too": (
        "a = fresh(); b = sk.device_put(a, sk.GSPMDSharding(devs, '{devices=[4,2]0,1,2,3,5,4,6,7}'))\n"
        "sk.jit(lambda a, b: a + b, donate_argnums=0)(a, b)",
        r"ValueError: Argument args\[0\] is donated, but its buffer on cpu:0 is also passed as args\[1\]",
    ),
    "a reshard that kept pieces of an array deleted since": (
        "a = sk.device_put(np.ones((8, 4), np.float32), NS(mesh, P('x')))\n"
        "b = sk.device_put(a, sk.GSPMDSharding(devs, '{devices=[4,1,2]2,1,0,3,4,5,6,7 last_tile_dim_replicate}'))\n"
        "a.delete(); sk.jit(lambda t: t * 2)(b)",
        r"ValueError: Argument args\[0\] has a deleted piece: its buffer on cpu:1 was freed",
    ),
    "donated, and an Array over its pieces passed too": (
        "a = fresh(); b = jax.make_array_from_single_device_arrays(a.shape, a.sharding, a._arrays)\n"
        "sk.jit(lambda a, b: a + b, donate_argnums=1)(b, a)",
        r"ValueError: Argument args\[1\] is donated, but its buffer on cpu:0 is also passed as args\[0\]",
    ),
    "one shard deleted, then a compiled call": (
        "a = fresh(); a.addressable_data(2).delete(); sk.jit(lambda t: t * 2)(a)",
        r"ValueError: Argument args\[0\] has a deleted piece: its buffer on cpu:2 was freed",
    ),
    "one shard deleted, then a new signature of a called function": (
        "f = sk.jit(lambda t: t * 2); f(fresh()); a = sk.device_put(fresh(), NS(mesh, P('x')))\n"
        "a.addressable_data(5).delete(); f(a)",
        r"ValueError: Argument args\[0\] has a deleted piece: its buffer on cpu:5",
    ),
    "one shard deleted, then a Compiled": (
        "a = fresh(); c = sk.jit(lambda t: t * 2).lower(a).compile(); a.addressable_data(7).delete(); c(a)",
        r"ValueError: Argument args\[0\] has a deleted piece: its buffer on cpu:7",
    ),
    "array-crash-97": (
        "sk.device_put(np.ones((8, 4)), NS(sk.make_mesh((0,), ('x',)), P()))",
        r"ValueError: make_mesh axis sizes must be positive",
    ),
    "array-crash-97 (the empty mesh)": (
        "from shardkit.mesh import EMPTY_MESH\nsk.device_put(np.ones((8, 4)), NS(EMPTY_MESH, P()))",
        r"ValueError: NamedSharding needs a mesh with devices",
    ),
    "array-crash-98": (
        "sk.jit(lambda a: a, out_shardings=NS(sk.make_mesh((0,), ('x',)), P()))(np.ones((8, 4)))",
        r"ValueError: make_mesh axis sizes must be positive",
    ),
    "array-crash-98 (compile options without devices)": (
        "from shardkit.executor.compile import compile_options\n"
        "compile_options([], shardy=True, in_specified=[], out_specified=[])",
        r"ValueError: The devices to compile for must name at least one device",
    ),
    "array-crash-99": (
        "a = fresh(); c_don = sk.jit(lambda t: t + 1, donate_argnums=0); c_don(a); np.asarray(a)",
        r"RuntimeError: Array has been deleted with shape=float32\[8,4\]",
    ),
    "array-crash-100": (
        "b = sk.device_put(fresh(), sk.GSPMDSharding(devs, '{devices=[2,4]<=[2]}'))",
        r"HloParseError: .*iota reshape",
    ),
    "array-crash-101": (
        "a = fresh(); sk.jit(lambda a: a + 1, donate_argnums=5)(a)",
        r"ValueError: jit of <lambda> has donate_argnums=\(5,\), but was called with 1 positional arguments",
    ),
    "array-crash-102": (
        "a = fresh(); a.delete(); sk.jit(lambda t: t + 1)(a)",
        r"ValueError: Argument args\[0\] has been deleted",
    ),
    "array-crash-103": (
        "lo = sk.jit(lambda a: sk.with_sharding_constraint(a + 1, NS(mesh, P('y', 'x'))) * 2).lower(fresh())\n"
        "c = lo.compile(passes='sdy-close-shardings'); out = np.asarray(c(fresh()))[1].tolist()",
        r"ok: \[10.0, 12.0, 14.0, 16.0\]",
    ),
    "array-crash-105 (the single_device_arrays case, against the host value)": (
        "s = NS(mesh, P('y', 'x')); full = np.arange(32, dtype=np.float32).reshape(8, 4)\n"
        "arrays = [jax.device_put(full[i], d) for d, i in s.addressable_devices_indices_map((8, 4)).items()]\n"
        "x = sk.make_array_from_single_device_arrays((8, 4), s, arrays)\n"
        "out = np.array_equal(np.asarray(x), full) and x.sharding == s",
        r"ok: True",
    ),
    "array-crash-106": ("a = fresh(); a.delete(); sk.asarray(a)", r"RuntimeError: Array has been deleted"),
    "array-crash-107": ("out = float(sk.device_put(float('nan'), NS(mesh, P())))", r"ok: nan"),
}


def test_array_crashes_are_named_errors_or_right_answers():
    check_outcomes(ARRAY_CRASHES)


def _native(value: np.ndarray) -> np.ndarray:
    return value.astype(value.dtype.newbyteorder("="))


@pytest.mark.parametrize(
    "value",
    [
        np.arange(24, dtype=">i4").reshape(8, 3),  # array-wrong-112: came back byte-swapped
        np.arange(16, dtype=">f8").reshape(8, 2),
        np.arange(8, dtype="<c8") * 1j,
        np.arange(64.0).reshape(8, 8)[::2, ::-3],  # odd strides
        np.broadcast_to(np.arange(4.0), (8, 4)),  # array-crash-104: zero strides
        np.asfortranarray(np.arange(32).reshape(8, 4)),
        np.ones((8, 0, 3), np.float32),  # zero-size dimensions
        np.zeros((0,), np.int8),
        np.arange(2 * 4 * 8, dtype=np.float64).reshape(2, 4, 8),  # array-crash-108
        np.array(True),
    ],
    ids=lambda v: f"{v.dtype.str}{list(v.shape)}{list(v.strides)}",
)
def test_device_put_of_odd_host_arrays_matches_jax(value):
    """The value in native byte order, placed as jax places it (jax 0.10 refuses a non-native byte order)."""
    s = NS(MESH, P("x") if value.ndim and value.shape[0] % 4 == 0 else P())
    x = sk.device_put(value, s)
    j = jax.device_put(value.astype(value.dtype.newbyteorder("=")), s.to_jax(value.ndim))
    assert (x.shape, x.dtype) == (j.shape, j.dtype) and x.dtype.isnative
    np.testing.assert_array_equal(np.asarray(x), np.asarray(j))
    for a, b in zip(x.addressable_shards, j.addressable_shards):
        assert a.index == b.index
        np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))


@pytest.mark.parametrize(
    "value, message",
    [
        (np.array([object()]), "Python objects"),
        (np.array(["a"]), "dtype <U1 cannot be placed"),
        (np.array([1], dtype="M8[s]"), "dtype datetime64\\[s\\] cannot be placed"),
        (np.zeros(2, dtype=[("a", "i4")]), "cannot be placed on devices: only bool and numeric"),
        (np.zeros(2, dtype="V4"), "cannot be placed"),
    ],
)
def test_host_values_devices_cannot_hold_are_type_errors(value, message):
    with pytest.raises(TypeError, match=message):
        sk.device_put(value)


def test_single_device_arrays_are_checked_before_jaxlib():
    s = NS(MESH, P("y", "x"))
    full = np.arange(32, dtype=np.float32).reshape(8, 4)
    imap = s.addressable_devices_indices_map((8, 4))
    arrays = [jax.device_put(full[i], d) for d, i in imap.items()]
    with pytest.raises(TypeError, match="arrays must be a sequence of single-device arrays, got None"):
        sk.make_array_from_single_device_arrays((8, 4), s, None)
    with pytest.raises(TypeError, match="array shape is a sequence of ints, got None"):
        sk.make_array_from_single_device_arrays(None, s, arrays)
    wrong_size = [jax.device_put(full, d) for d in imap]
    with pytest.raises(ValueError, match=r"Expected shard shape \(4, 1\) doesn't match .* \(8, 4\)"):
        sk.make_array_from_single_device_arrays((8, 4), s, wrong_size)
    on_other_devices = arrays[:4] + [jax.device_put(full[i], DEVS[0]) for i in list(imap.values())[4:]]
    with pytest.raises(ValueError, match="must be on distinct devices"):
        sk.make_array_from_single_device_arrays((8, 4), s, on_other_devices)
    arrays[3].delete()
    with pytest.raises(ValueError, match="Per-device array 3 has been deleted"):
        sk.make_array_from_single_device_arrays((8, 4), s, arrays)
    with pytest.raises(TypeError, match="sharding must be a shardkit Sharding, got Mesh"):
        sk.make_array_from_process_local_data(MESH, np.zeros((8, 8)))


def test_shardkits_paths_name_a_deleted_piece():
    """jax says such an array is not deleted (its is_deleted() reads the first buffer); shardkit's own paths read
    every buffer and name the freed one."""
    x = sk.device_put(np.ones((8, 4), np.float32), NS(MESH, P("x", "y")))
    j = jax.device_put(np.ones((8, 4), np.float32), NS(MESH, P("x", "y")).to_jax(2))  # jax's own sharding
    for a in (x, j):
        a.addressable_data(2).delete()
        assert not a.is_deleted()  # jax's answer, for jax's Array
    for use in [
        lambda: sk.device_get(x),
        lambda: sk.device_put(x, NS(MESH, P("y"))),
        lambda: sk.asarray(j),
    ]:
        with pytest.raises(RuntimeError, match=r"float32\[8,4\] has a deleted piece: its buffer on cpu:2 was freed"):
            use()


def test_eager_with_sharding_constraint_places_an_array_as_jax_does():
    for value, s in [
        (np.ones((8, 4), np.float32), NS(MESH, P("x"))),
        (np.arange(8.0), NS(MESH, P(("x", "y")))),
        (jax.numpy.arange(8.0), NS(MESH, P("y"))),
        (3.0, NS(MESH, P())),
    ]:
        got = sk.with_sharding_constraint(value, s)
        want = jax.lax.with_sharding_constraint(jax.numpy.asarray(value), s.to_jax(np.ndim(value)))
        assert isinstance(got, sk.Array) and got.sharding == s
        assert got.sharding.is_equivalent_to(sk.asarray(want).sharding, got.ndim)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    tree = {"a": np.ones((8, 2), np.float32), "b": [np.zeros(4, np.float32)]}
    out = sk.with_sharding_constraint(tree, {"a": NS(MESH, P("x", "y")), "b": [NS(MESH, P("x"))]})
    assert out["a"].sharding.spec == P("x", "y") and out["b"][0].sharding.spec == P("x")


# -- cache-*: persistent cache entries ------------------------------------------------------------------------


def test_swapped_cache_entries_are_misses_not_wrong_programs(tmp_path):
    """cache-wrong-124: each entry carries its key; an entry in another's file is a miss with a warning."""
    sk.executor.set_cache_dir(tmp_path)
    try:
        data = np.ones((8, 4), np.float32)
        sk.jit(lambda a: a * 3)(data)
        sk.jit(lambda a: a * 5)(data)
        entries = sorted(tmp_path.glob("*.skx"))
        assert len(entries) == 2
        a, b = (p.read_bytes() for p in entries)
        entries[0].write_bytes(b)
        entries[1].write_bytes(a)
        sk.clear_caches()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            three = np.asarray(sk.jit(lambda a: a * 3)(data))[0, 0]
            five = np.asarray(sk.jit(lambda a: a * 5)(data))[0, 0]
        assert (three, five) == (3.0, 5.0)
        assert sum("holds the executable of another program" in str(w.message) for w in caught) == 2
        sk.clear_caches()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the recompiled entries replaced the swapped ones
            assert np.asarray(sk.jit(lambda a: a * 3)(data))[0, 0] == 3.0
    finally:
        sk.executor.set_cache_dir(None)


# -- lower-*: the lowering path ------------------------------------------------------------------------------


def test_lowering_inputs_are_named_errors():
    x = np.ones(8, np.float32)
    with pytest.raises(TypeError, match="donate_argnums must be an int or a sequence of ints, got 1.5"):
        sk.jit(lambda a: a, donate_argnums=1.5)
    assert np.asarray(sk.jit(lambda a: a * 2, static_argnums=None, donate_argnums=None)(x))[0] == 2.0  # as jax
    with pytest.raises(ValueError, match=r"non-negative, got shape \(-1,\)"):
        sk.jit(lambda a: a).lower(sk.ShapeDtypeStruct((-1,), np.float32))
    with pytest.raises(TypeError, match="array shape is a sequence of ints, got None"):
        sk.jit(lambda a: a).lower(sk.ShapeDtypeStruct(None, np.float32))
    with pytest.raises(ValueError, match="result 0 of shape \\(\\): Sharding .* rank at least 1"):
        sk.jit(lambda a: a.sum(), out_shardings=NS(MESH, P("x")))(x)


def test_compile_checks_the_device_assignment_against_the_partition_count():
    lowered = sk.jit(lambda a: a * 2).lower(sk.device_put(np.ones(8, np.float32), NS(MESH, P("x"))))._lowered
    wrong = dataclasses.replace(lowered, num_partitions=4, executables={})
    with pytest.raises(
        ValueError, match=r"partitioned for 4 devices \(mhlo.num_partitions\), but its device assignment"
    ):
        compile_lowered(wrong)


def test_the_check_is_cheap_to_reach_again():
    """Checked text is remembered: a second parse of the same string costs one dict lookup in the check."""
    hlo_check.check_text.cache_clear()
    mhlo.parse("{devices=[4,2]<=[8]}")
    mhlo.parse("{devices=[4,2]<=[8]}")
    info = hlo_check.check_text.cache_info()
    assert (info.hits, info.misses) == (1, 1)


def test_jit_arguments_take_host_dtypes_as_device_put_does():
    # One rule for host data (array.device_dtype): a non-native byte order is converted on every path, and a
    # dtype devices cannot hold is a TypeError naming the argument.
    f = sk.jit(lambda a: a + 1)
    big = np.arange(4, dtype=">i4")
    np.testing.assert_array_equal(np.asarray(f(big)), np.arange(4) + 1)
    compiled = f.lower(np.arange(4, dtype=np.int32)).compile()
    np.testing.assert_array_equal(np.asarray(compiled(big)), np.arange(4) + 1)
    with pytest.raises(TypeError, match=r"Argument args\[0\]: Arrays of dtype <U1 cannot be placed on devices"):
        f(np.array(["a"]))
