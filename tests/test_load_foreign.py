"""Other frontends' dialect attributes on a module (tt-mlir's ``#ttcore...``): refused by default with the way
round, dropped and named with ``allow_unregistered`` (``shardkit-run --allow-unregistered-dialect``); an op of
such a dialect is refused either way."""

from __future__ import annotations

import io

import jax
import jax.extend
import numpy as np
import pytest
from jaxlib import xla_client as xc
from jaxlib.mlir import ir

import shardkit as sk
from shardkit import _jaxlib
from shardkit.dialects import context, irx
from shardkit.lowering import load
from shardkit.tools.run import RunMain
from tests.child import check_outcomes
from tests.jax_oracle import jax_gspmd

TT = """module attributes {ttcore.system_desc = #ttcore.system_desc<1>} {
  func.func @main(%arg0: tensor<8xf32> {ttcore.argument_type = #ttcore.argument_type<input>,
                                        mhlo.sharding = "{devices=[8]<=[8]}"})
      -> (tensor<8xf32> {ttcore.shard_status = #ttcore.shard_status<presharded>}) {
    %0 = stablehlo.negate %arg0 {ttir.foo = #ttir.bar<1>, ttir.name = "x"} : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}"""
DROPPED = (
    "dropped what XLA cannot take: ttcore.system_desc on the module, ttcore.argument_type on argument 0 of @main, "
    "ttcore.shard_status on result 0 of @main, ttir.foo on 'stablehlo.negate'"
)


def test_foreign_attributes_are_refused_with_the_way_round():
    with pytest.raises(ValueError, match=r"unregistered dialect.*allow_unregistered=True"):
        sk.load(TT)
    assert not context().allow_unregistered_dialects


def test_foreign_attributes_are_dropped_and_named():
    with pytest.warns(UserWarning, match=DROPPED):
        lowered = sk.load(TT, allow_unregistered=True)
    assert "ttcore" not in lowered.as_text() and 'ttir.name = "x"' in lowered.as_text()
    x = np.arange(8, dtype=np.float32)
    out = lowered.compile()(x)
    np.testing.assert_array_equal(np.asarray(out), -x)
    assert repr(out.sharding.to_hlo(1)) == "{devices=[8]<=[8]}"
    assert not context().allow_unregistered_dialects


def test_an_op_of_a_foreign_dialect_is_refused():
    text = TT.replace(
        "    %0 = stablehlo.negate",
        '    %1 = "ttir.weird"(%arg0) : (tensor<8xf32>) -> tensor<8xf32>\n    %0 = stablehlo.negate',
    )
    with pytest.raises(ValueError, match=r"<string>:5:10: 'ttir.weird' is an op of a dialect XLA does not know"):
        sk.load(text, allow_unregistered=True)


def test_shardkit_run_drops_them_on_request(tmp_path):
    path = tmp_path / "tt.mlir"
    path.write_text(TT)
    out, err = io.StringIO(), io.StringIO()
    assert RunMain([str(path), "--zero-inputs", "--allow-unregistered-dialect"], stdout=out, stderr=err).run() == 0
    assert out.getvalue().startswith("result: float32[8] sharding={devices=[8]<=[8]} sum=0")
    assert f"shardkit-run: {path}: {DROPPED}" in err.getvalue()
    err = io.StringIO()
    assert RunMain([str(path), "--zero-inputs"], stdout=io.StringIO(), stderr=err).run() == 1
    assert err.getvalue().count("\n") == 1 and "--allow-unregistered-dialect" in err.getvalue()


# -- sharded modules of other compilers --------------------------------------------------------------------
# Modules in the style of XLA's HLO translate tests, IREE's and tt-mlir's inputs: tuple shardings with
# replicated and tiled elements in while bodies, maximal and manual shardings, shardings only in functions
# @main calls. Each runs through sk.load and through XLA alone (jaxlib's client, the module compiled for its
# partition count), with the same numbers and output shardings.

WHILE_HLO = """HloModule while_tuple_sharding, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

%body (state: (s32[], f32[8])) -> (s32[], f32[8]) {
  %state = (s32[], f32[8]) parameter(0), sharding={{replicated}, {devices=[2,2]<=[4] last_tile_dim_replicate}}
  %i = s32[] get-tuple-element(%state), index=0, sharding={replicated}
  %one = s32[] constant(1), sharding={replicated}
  %next = s32[] add(%i, %one), sharding={replicated}
  %x = f32[8] get-tuple-element(%state), index=1, sharding={devices=[2,2]<=[4] last_tile_dim_replicate}
  %y = f32[8] add(%x, %x), sharding={devices=[4]<=[4]}
  ROOT %out = (s32[], f32[8]) tuple(%next, %y), sharding={{replicated}, {devices=[2,2]<=[4] last_tile_dim_replicate}}
}

%cond (state: (s32[], f32[8])) -> pred[] {
  %state = (s32[], f32[8]) parameter(0), sharding={{replicated}, {devices=[2,2]<=[4] last_tile_dim_replicate}}
  %i = s32[] get-tuple-element(%state), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %three), direction=LT
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]) tuple(%zero, %x), sharding={{replicated}, {devices=[2,2]<=[4] last_tile_dim_replicate}}
  %loop = (s32[], f32[8]) while(%init), condition=%cond, body=%body,
    sharding={{replicated}, {devices=[2,2]<=[4] last_tile_dim_replicate}}
  ROOT %r = f32[8] get-tuple-element(%loop), index=1
}
"""

CALLED_HLO = """HloModule called_computation_sharding, entry_computation_layout={(f32[8,4]{1,0})->f32[8,4]{1,0}}

%helper (p: f32[8,4]) -> f32[8,4] {
  %p = f32[8,4] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  %n = f32[8,4] negate(%p), sharding={devices=[4,2]<=[8]}
  ROOT %m = f32[8,4] multiply(%n, %p), sharding={maximal device=6}
}

ENTRY %main (x: f32[8,4]) -> f32[8,4] {
  %x = f32[8,4] parameter(0)
  ROOT %c = f32[8,4] call(%x), to_apply=%helper
}
"""

MAXIMAL = """func.func @main(%arg0: tensor<4x4xf32> {mhlo.sharding = "{maximal device=1}"},
                %arg1: tensor<4x4xf32> {mhlo.sharding = "{replicated}"})
    -> (tensor<4x4xf32> {mhlo.sharding = "{maximal device=3}"}) {
  %0 = stablehlo.add %arg0, %arg1 {mhlo.sharding = "{maximal device=1}"} : tensor<4x4xf32>
  %a = stablehlo.abs %0 {mhlo.sharding = "{devices=[1,1]<=[1]}"} : tensor<4x4xf32>
  %1 = stablehlo.multiply %a, %arg1 {mhlo.sharding = "{maximal device=3}"} : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}"""

MANUAL = """func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{devices=[4,1]<=[4]}"}
    : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"}
    : (tensor<8x4xf32>) -> tensor<2x4xf32>
  %2 = call @shmap_body(%1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = stablehlo.custom_call @Sharding(%2) {mhlo.sharding = "{manual}"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {mhlo.sharding = "{devices=[4,1]<=[4]}"}
    : (tensor<2x4xf32>) -> tensor<8x4xf32>
  return %4 : tensor<8x4xf32>
}
func.func private @shmap_body(%arg0: tensor<2x4xf32> {mhlo.sharding = "{manual}"})
    -> (tensor<2x4xf32> {mhlo.sharding = "{manual}"}) {
  %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
      replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}"""

TUPLE_VALUE = """func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>) -> tensor<4x4xf32> {
  %0 = call @pack(%arg1, %arg0) : (tensor<i32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
func.func private @pack(%arg0: tensor<i32>, %arg1: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %t = stablehlo.tuple %arg0, %arg1 {mhlo.sharding = "{{maximal device=1}, {devices=[2,1]<=[2]}}"}
    : tuple<tensor<i32>, tensor<4x4xf32>>
  %x = stablehlo.get_tuple_element %t[1] {mhlo.sharding = "{devices=[2,1]<=[2]}"}
    : (tuple<tensor<i32>, tensor<4x4xf32>>) -> tensor<4x4xf32>
  %y = stablehlo.negate %x {mhlo.sharding = "{replicated}"} : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}"""

WHILE_MIXED = """module @jit_loop {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}) -> tensor<8x4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c, %x = %arg0) : tensor<i32>, tensor<8x4xf32>
        attributes {mhlo.sharding = "{{maximal device=5}, {devices=[4,1,2]<=[8] last_tile_dim_replicate}}"}
    cond {
      %c2 = stablehlo.constant dense<2> : tensor<i32>
      %1 = stablehlo.compare LT, %i, %c2 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c1 = stablehlo.constant {mhlo.sharding = "{replicated}"} dense<1> : tensor<i32>
      %1 = stablehlo.add %i, %c1 {mhlo.sharding = "{maximal device=5}"} : tensor<i32>
      %2 = stablehlo.sine %x {mhlo.sharding = "{devices=[2,4]<=[8]}"} : tensor<8x4xf32>
      stablehlo.return %1, %2 : tensor<i32>, tensor<8x4xf32>
    }
    return %0#1 : tensor<8x4xf32>
  }
  func.func private @unused(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}) -> tensor<8x4xf32> {
    return %arg0 : tensor<8x4xf32>
  }
}"""

WHILE_BEYOND = WHILE_MIXED.replace("{maximal device=5}}", "{maximal device=11}}")

ONE_DEVICE_TILING = """func.func @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"})
    -> (tensor<8x4xf32> {mhlo.sharding = "{devices=[1,1]<=[1]}"}) {
  %0 = stablehlo.negate %arg0 {mhlo.sharding = "{devices=[1,1]<=[1]}"} : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}"""

REPLICATED = """func.func @main(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"})
    -> (tensor<4xf32> {mhlo.sharding = "{replicated}"}) {
  %0 = stablehlo.exponential %arg0 {mhlo.sharding = "{replicated}"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""

# xla/hlo/translate/mhlo_to_hlo/tests/sharding.mlir, @main of its ninth chunk (the foreign corpus's module 246): a
# loop that never runs (i < i), whose tuple sharding names 4 devices. Its export wrote nr_devices 4 and a module
# whose folded-away loop left it no sharding, and sk.load of that artifact refused it for 1 partition.
XLA_WHILE_TUPLE = """func.func @main(%arg0: tensor<i32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %0:3 = mhlo.while(%iterArg = %arg0, %iterArg_0 = %arg1, %iterArg_1 = %arg2)
    : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    attributes {mhlo.sharding = "{{replicated},{devices=[2,2]<=[4] last_tile_dim_replicate},{devices=[4]<=[4]}}"}
    cond {
    %1 = mhlo.compare LT, %iterArg, %iterArg : (tensor<i32>, tensor<i32>) -> tensor<i1>
    mhlo.return %1 : tensor<i1>
  } do {
    %1 = mhlo.add %iterArg_0, %iterArg_1 : tensor<4xf32>
    mhlo.return %iterArg, %1, %iterArg_1 : tensor<i32>, tensor<4xf32>, tensor<4xf32>
  }
  func.return %0#1, %0#2 : tensor<4xf32>, tensor<4xf32>
}"""

ROWS = np.arange(32, dtype=np.float32).reshape(8, 4)
SQUARE = np.arange(16, dtype=np.float32).reshape(4, 4)
CORPUS = [
    # (module, partitions: what XLA's verifier asks, arguments)
    (WHILE_HLO, 4, [np.arange(8, dtype=np.float32)]),  # the tiled elements of a tuple span 4 devices
    (CALLED_HLO, 8, [ROWS]),  # tiled over 8 in a called computation; maximal device 6 is one of them
    (MAXIMAL, 4, [SQUARE, SQUARE + 1]),  # maximal device 3 needs 4 partitions; a tiling over 1 device is none
    (MANUAL, 4, [ROWS]),  # jax's GSPMD shard_map form: manual in a called function, tiled around it
    (TUPLE_VALUE, 2, [SQUARE, np.int32(3)]),  # one tuple-typed value: its elements ask, the tuple does not
    (WHILE_MIXED, 8, [ROWS]),  # maximal device 5 in a while's tuple, tiled over 8; an unused function's 2 is not
    (WHILE_BEYOND, 8, [ROWS]),  # tiled over 8 fixes the count; XLA takes the while's own maximal device 11
    (ONE_DEVICE_TILING, 2, [ROWS]),  # XLA reads a tiling over one device as replicated, over any count
    (REPLICATED, 1, [np.linspace(0, 1, 4, dtype=np.float32)]),  # replicated pieces ask for no partitions
]
CORPUS_IDS = [
    "while tuple (HLO)",
    "called (HLO)",
    "maximal",
    "manual",
    "tuple value",
    "while mixed",
    "while maximal beyond",
    "one-device tiling",
    "replicated",
]


def xla_module(text: str) -> str:
    """The module XLA compiles: StableHLO as it is, HLO text through XLA's own parser and translation."""
    if not text.startswith("HloModule"):
        return text
    return str(ir.Module.parse(_jaxlib.hlo_text_to_stablehlo(text), context()))


def xla_compile(text: str, n: int):
    """``text`` compiled by jaxlib's client alone for the first ``n`` devices, GSPMD partitioning."""
    options = xc.CompileOptions()
    options.num_partitions = n
    options.executable_build_options.use_spmd_partitioning = True
    options.executable_build_options.use_shardy_partitioner = False
    options.device_assignment = xc.DeviceAssignment.create(np.arange(n).reshape(1, n))
    backend = jax.extend.backend.get_backend("cpu")
    return backend.compile_and_load(xla_module(text), xc.DeviceList(tuple(jax.devices()[:n])), options)


def xla_takes(text: str, n: int) -> bool:
    try:
        xla_compile(text, n)
    except jax.errors.JaxRuntimeError:
        return False
    return True


def xla_run(text: str, n: int, args: list[np.ndarray], shapes: list[tuple[int, ...]]):
    """(value, jax sharding) of each output of ``text`` run by XLA alone on ``n`` devices, each argument placed
    as XLA's parameter sharding says and each output put together from its pieces as its sharding says."""
    exe = xla_compile(text, n)
    devices = tuple(jax.devices()[:n])

    def placed(proto):  # one partition: XLA reports no shardings
        return jax_gspmd(devices, repr(xc.HloSharding.from_proto(proto) if proto else xc.HloSharding.replicate()))

    outputs = exe.get_output_shardings() or [None] * len(shapes)
    inputs = [jax.device_put(a, placed(p)) for a, p in zip(args, exe.get_parameter_shardings() or [None] * len(args))]
    pieces = exe.execute_sharded(inputs).disassemble_into_single_device_arrays()
    out = []
    for shape, per_device, proto in zip(shapes, pieces, outputs):
        value = np.empty(shape, per_device[0].dtype)
        index = placed(proto).devices_indices_map(shape)
        for piece in per_device:
            (device,) = piece.devices()
            value[index[device]] = np.asarray(piece)
        out.append((value, placed(proto)))
    return out


@pytest.mark.parametrize("text, partitions, args", CORPUS, ids=CORPUS_IDS)
def test_other_compilers_modules_run_with_xla_s_numbers(text, partitions, args):
    lowered = sk.load(text)
    assert load.partitions(text) == partitions
    if partitions > 1:  # XLA takes no other count (bar 1, where it does not partition)
        assert [n for n in range(2, 9) if xla_takes(text, n)][0] == partitions
    got = lowered.compile()(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = xla_run(text, partitions, args, [g.shape for g in got])
    for out, (value, sharding) in zip(got, want):
        np.testing.assert_array_equal(np.asarray(out), value)
        assert len(out.sharding.device_set) == partitions
        assert out.sharding.is_equivalent_to(sharding, out.ndim)


ROUND_TRIP = [*CORPUS, (XLA_WHILE_TUPLE, 4, [np.int32(0), np.arange(4, dtype=np.float32), np.ones(4, np.float32)])]


@pytest.mark.parametrize("text, partitions, args", ROUND_TRIP, ids=[*CORPUS_IDS, "corpus 246: a loop's tuple over 4"])
def test_what_shardkit_loads_it_exports_and_loads_back(text, partitions, args, monkeypatch):
    """``sk.load(lowered.export())`` and ``sk.load`` of its bytes run with the same numbers and output shardings
    (GSPMD programs' shardings travel over the abstract mesh of their own tile assignments), and jax reads the
    artifact for the same device count. An artifact whose module does not say its partition count (shardkit's
    before it wrote one) is read on its ``nr_devices``, as jax reads it."""
    lowered = sk.load(text)
    want = lowered.compile()(*args)
    want = want if isinstance(want, tuple) else (want,)
    exported = lowered.export()
    assert jax.export.deserialize(exported.serialize()).nr_devices == partitions
    monkeypatch.setattr(irx, "set_partitions", lambda module, n: None)
    unsaid = lowered.export()
    for source in (exported, exported.serialize(), unsaid):
        again = sk.load(source)
        assert load.partitions(source) == partitions
        got = again.compile()(*args)
        got = got if isinstance(got, tuple) else (got,)
        for out, expected in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))
            assert out.sharding == expected.sharding


def test_shardkit_run_runs_a_while_body_s_tuple_sharding(tmp_path):
    path = tmp_path / "while.hlo"
    path.write_text(WHILE_HLO)
    out, err = io.StringIO(), io.StringIO()
    assert RunMain([str(path), "--zero-inputs"], stdout=out, stderr=err).run() == 0, err.getvalue()
    assert out.getvalue().startswith("result: float32[8] sharding={devices=[2,2]<=[4] last_tile_dim_replicate}")


@pytest.mark.parametrize(
    "replace, message",
    [
        (
            ('"{devices=[2,4]<=[8]}"', '"{devices=[2,2]<=[4]}"'),
            r"<string>:13:12: result 0 of 'stablehlo.sine' \(\{devices=\[2,2\]<=\[4\]\}\) tiles 4 devices, but "
            r"<string>:2:3: arg 0 of @main \(\{devices=\[8,1\]<=\[8\]\}\) tiles 8",
        ),
        (
            ("{devices=[4,1,2]<=[8] last_tile_dim_replicate}}", "{devices=[2,1]<=[2]}}"),
            r"<string>:4:12: result 1 of 'stablehlo.while' \(\{devices=\[2,1\]<=\[2\]\}\) tiles 2 devices, but "
            r"<string>:2:3: arg 0 of @main \(\{devices=\[8,1\]<=\[8\]\}\) tiles 8",
        ),
    ],
    ids=["an op over 4, an argument over 8", "a while's tuple element over 2"],
)
def test_tiled_shardings_over_two_counts_are_refused_naming_both(replace, message):
    text = WHILE_MIXED.replace(*replace)
    assert not any(xla_takes(text, n) for n in range(2, 9))  # XLA takes it only unpartitioned
    with pytest.raises(ValueError, match=message + r": XLA partitions a program over one device count"):
        sk.load(text)


@pytest.mark.parametrize("visibility", ["private", "public"])
def test_a_function_xla_drops_asks_nothing_of_the_partition_count(visibility):
    """XLA compiles @main, the public functions and what they call, and drops the rest: a private function
    nothing calls may shard over another count, a public one may not (XLA takes that for no count but 1)."""
    text = MAIN_AND_ANOTHER.replace("@other", "private @other" if visibility == "private" else "@other")
    if visibility == "public":
        assert not any(xla_takes(text, n) for n in range(2, 9))
        with pytest.raises(ValueError, match=r"arg 0 of @other \(\{devices=\[8,1\]<=\[8\]\}\) tiles 8 devices"):
            sk.load(text)
        return
    assert load.partitions(text) == 4 and xla_takes(text, 4)
    out = sk.load(text).compile()(ROWS)
    np.testing.assert_array_equal(np.asarray(out), -ROWS)
    assert len(out.sharding.device_set) == 4


MAIN_AND_ANOTHER = """func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = call @helper(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
func.func private @helper(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,2]<=[4]}"}) -> tensor<8x4xf32> {
  %0 = stablehlo.negate %arg0 {mhlo.sharding = "{devices=[4,1]<=[4]}"} : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
func.func @other(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}) -> tensor<8x4xf32> {
  return %arg0 : tensor<8x4xf32>
}"""


# -- every form XLA's sharding parser accepts -------------------------------------------------------------------
# XLA's parser (hlo_parser.cc ParseSharding) takes replicated, manual, unknown, unreduced, maximal and tiled forms,
# subgroups of any of them after the tiles, shard_as/shard_like groups, metadata, tuples (the empty one too) and,
# from jaxlib 0.10, the mesh-axes ("V3") form. Each loads and runs, or is a named error at its place: never an
# abort (XLA's GSPMD partitioner aborted on {unreduced} on an op) and never a traceback of another kind.

FORMS = """module attributes {{mhlo.num_partitions = 8 : i32}} {{
func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {{
  %0 = stablehlo.negate %arg0 {{mhlo.sharding = "{form}"}} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}}
}}"""
LOADED = "out = str(sk.load(text).compile()(np.ones((8, 8), np.float32)).sharding)"
AT = r"LoadError: <string>:3:8: result 0 of 'stablehlo.negate': "
FORM_CASES = {
    "unreduced": ("{unreduced}", AT + r"mhlo.sharding \{unreduced\} is unreduced"),
    "a tuple's unreduced element": (
        "{{unreduced}}",
        AT + r"mhlo.sharding \{\{unreduced\}\} is a tuple sharding of 1 element ",
    ),
    "unknown": ("{unknown}", AT + r"mhlo.sharding \{unknown\} is unknown outside a shard group"),
    "manual": (
        "{manual}",
        r"ValueError: GSPMDSharding supports tiled, replicated and maximal shardings, got \{manual\}",
    ),
    "subgroup unreduced": (
        "{devices=[2,2,2]<=[8] last_tile_dims={unreduced}}",
        AT + r"mhlo.sharding \{devices=\[2,2,2\]<=\[8\] last_tile_dims=\{unreduced\}\} is unreduced",
    ),
    "subgroup manual": ("{devices=[2,2,2]<=[8] last_tile_dims={manual}}", r"ValueError: .*has subgroup types"),
    "shard_as": ("{unknown shard_as 1}", r"ok: 'GSPMDSharding\(\{replicated\}"),
    "shard_like": ("{unknown shard_like 2}", r"ok: 'GSPMDSharding\(\{replicated\}"),
    "a placement in a shard group": (
        "{devices=[8,1]<=[8] shard_as 1}",
        AT + r"mhlo.sharding .* puts a placement in a shard group",
    ),
    "metadata": ('{maximal device=3 metadata={op_name=\\"a}b\\"}}', r"ok: 'GSPMDSharding\(\{maximal device=3\}"),
    "tuple on one value": ("{{replicated}, {replicated}}", AT + r"mhlo.sharding .* is a tuple sharding of 2 elements"),
    "empty tuple": ("{}", AT + r"cannot parse HLO sharding '\{\}': .*an empty tuple sharding has no elements"),
    "mesh-axes text": ("{mesh['x'=8], [{'x'}, {}]}", AT + r"cannot parse .* at column 2: XLA's mesh-axes form"),
}


def test_every_form_xla_s_parser_accepts_runs_or_is_a_located_error():
    check_outcomes(
        {
            name: (f"text = {FORMS.format(form=form)!r}\n{LOADED}", expected)
            for name, (form, expected) in FORM_CASES.items()
        }
    )
