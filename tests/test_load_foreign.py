"""Other frontends' dialect attributes on a module (tt-mlir's ``#ttcore...``): refused by default with the way
round, dropped and named with ``allow_unregistered`` (``shardkit-run --allow-unregistered-dialect``); an op of
such a dialect is refused either way."""

from __future__ import annotations

import io

import numpy as np
import pytest

import shardkit as sk
from shardkit.dialects import context
from shardkit.tools.run import RunMain

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
