"""``mhlo.sharding`` in every form XLA reads: text, serialized ``OpSharding`` protos (older frontends), and the
empty string (no sharding); each checked by shardkit's rules before XLA sees it, the body's included."""

from __future__ import annotations

import re

import numpy as np
import pytest
from jaxlib.mlir import ir

import shardkit as sk
from shardkit._jaxlib import HloSharding
from shardkit.dialects import context
from shardkit.passes import run_pipeline

TEXT = """module @m attributes {mhlo.num_partitions = 8 : i32} {
  func.func @main(%arg0: tensor<8x2xf32> {mhlo.sharding = "ARG0"}, %arg1: tensor<8x2xf32> {mhlo.sharding = "ARG1"})
      -> (tensor<8x2xf32> {mhlo.sharding = "RES"}) {
    %0 = stablehlo.add %arg0, %arg1 {mhlo.sharding = "OP"} : tensor<8x2xf32>
    return %0 : tensor<8x2xf32>
  }
}"""
TILED, ROWS = "{devices=[4,2]<=[8]}", "{devices=[8,1]<=[8]}"
A = np.arange(16, dtype=np.float32).reshape(8, 2)
B = np.ones((8, 2), np.float32)


def as_proto(text: str) -> str:
    """The MLIR string escape of the serialized OpSharding of ``text``, as older frontends write it."""
    return "".join(f"\\{b:02X}" for b in HloSharding.from_string(text).to_proto().SerializeToString())


def module(**forms: str) -> str:
    return re.sub(r"ARG0|ARG1|RES|OP", lambda m: forms[m.group(0)], TEXT)


def test_serialized_protos_read_as_their_text():
    text_form = sk.load(module(ARG0=TILED, ARG1=ROWS, RES=TILED, OP=TILED))
    proto_form = sk.load(module(ARG0=as_proto(TILED), ARG1=as_proto(ROWS), RES=as_proto(TILED), OP=as_proto(TILED)))
    assert proto_form.in_shardings == text_form.in_shardings
    assert proto_form.out_shardings == text_form.out_shardings
    got, want = proto_form.compile()(A, B), text_form.compile()(A, B)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.sharding == want.sharding
    with context():
        mixed = ir.Module.parse(module(ARG0=as_proto(TILED), ARG1=ROWS, RES=TILED, OP=TILED))
    run_pipeline(mixed, "verify-shardings")  # a PassError on a sharding it could not read


def test_the_empty_string_is_no_sharding_as_xla_reads_it():
    lowered = sk.load(module(ARG0=TILED, ARG1="", RES="", OP=""))
    (arg0, arg1), _ = lowered.in_shardings
    assert repr(arg0.to_hlo(2)) == TILED and arg1 is None
    out = lowered.compile()(A, B)
    np.testing.assert_array_equal(np.asarray(out), A + B)
    with context():
        imported = ir.Module.parse(module(ARG0=TILED, ARG1="", RES="", OP=""))
        run_pipeline(imported, "import-gspmd")
    assert "mhlo.sharding" not in str(imported) and str(imported).count("sdy.sharding =") == 1


@pytest.mark.parametrize(
    "form, message",
    [
        ("{devices=[4,2]<=[2]}", r"iota reshape \[2\]"),
        ("\\08\\03\\1A\\02\\04\\02J\\01\\09R\\01\\00", r"OpSharding proto is malformed: the iota reshape \[9\]"),
        ("garbage!!", r"neither HLO sharding text nor a valid serialized OpSharding proto"),
    ],
    ids=["text", "proto", "neither"],
)
def test_a_malformed_sharding_in_the_body_is_refused_before_xla(form, message):
    with pytest.raises(ValueError, match=r"<string>:4:10: result 0 of 'stablehlo.add': .*" + message):
        sk.load(module(ARG0=TILED, ARG1=TILED, RES=TILED, OP=form))
