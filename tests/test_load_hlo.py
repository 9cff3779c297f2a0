"""XLA's HLO text as input to sk.load, shardkit-run, shardkit-report and shardkit-opt, against jax.jit on the
program the text came from; and the tools reading the same inputs (MLIR bytecode too) with the same errors."""

from __future__ import annotations

import io

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit.tools.opt import OptMain
from shardkit.tools.report import ReportMain
from shardkit.tools.run import RunMain

MESH = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
X = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
W = np.random.default_rng(1).normal(size=(4, 2)).astype(np.float32)

# As XLA's SPMD tests write HLO: shardings on parameters and ops, the partition count in the header.
HAND_WRITTEN = """HloModule dot, entry_computation_layout={(f32[8,4]{1,0}, f32[4,2]{1,0})->f32[8,2]{1,0}}, \
num_partitions=8

ENTRY main {
  x = f32[8,4] parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}
  w = f32[4,2] parameter(1), sharding={replicated}
  ROOT d = f32[8,2] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[4,2]<=[8]}
}
"""


def named(*spec):
    return jax.sharding.NamedSharding(MESH, jax.P(*spec))


def jax_program():
    return jax.jit(
        lambda x, w: jax.numpy.tanh(x @ w), in_shardings=(named("x"), named(None, "y")), out_shardings=named("x", "y")
    )


@pytest.mark.parametrize("shardy", [True, False], ids=["jax's Shardy-flavoured HLO", "GSPMD HLO"])
def test_hlo_text_from_jax_runs_with_jax_s_numbers_and_shardings(shardy):
    f = jax_program()
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        text = f.lower(X, W).as_text(dialect="hlo")
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)
    assert text.startswith("HloModule")
    lowered = sk.load(text)
    got, want = lowered.compile()(X, W), f(X, W)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.sharding.is_equivalent_to(want.sharding, 2)
    assert lowered.in_shardings[0][0].is_equivalent_to(named("x"), 2)


def test_hand_written_hlo_keeps_every_sharding_and_the_partition_count(tmp_path):
    path = tmp_path / "dot.hlo"
    path.write_text(HAND_WRITTEN)
    lowered = sk.load(path)
    assert "mhlo.num_partitions = 8" in lowered.as_text()
    assert lowered.as_text().count("mhlo.sharding") == 4  # two arguments, the result, the dot
    out = lowered.compile()(X, W)
    np.testing.assert_allclose(np.asarray(out), X @ W, rtol=1e-6)
    assert repr(out.sharding.to_hlo(2)) == "{devices=[4,2]<=[8]}"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            HAND_WRITTEN.replace("sharding={replicated}", "sharding={devices=[4,2]<=[2]}"),
            r"dot.hlo:5:39: error: Cannot parse HLO sharding '\{devices=\[4,2\]<=\[2\]\}': .*iota reshape \[2\]",
        ),
        (HAND_WRITTEN.replace(" dot(", " dott("), r"dot.hlo:6:21: error: XLA cannot parse the HLO module: .*dott"),
    ],
    ids=["a sharding XLA would abort on", "what XLA's parser says"],
)
def test_malformed_hlo_text_is_a_located_error(tmp_path, text, message):
    path = tmp_path / "dot.hlo"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        sk.load(path)
    err = io.StringIO()
    assert OptMain([str(path)], stdout=io.StringIO(), stderr=err).run() == 1
    assert err.getvalue().count("error:") == 1 and "dot.hlo:" in err.getvalue()


def test_the_tools_take_hlo_text(tmp_path):
    path = tmp_path / "dot.hlo"
    path.write_text(HAND_WRITTEN)
    out = io.StringIO()
    assert OptMain([str(path), "-p", "import-gspmd"], stdout=out, stderr=io.StringIO()).run() == 0
    assert "sdy.sharding" in out.getvalue()
    report = io.StringIO()
    assert ReportMain([str(path)], stdout=report, stderr=io.StringIO()).run() == 0
    assert "on 8 devices" in report.getvalue()
    ran = io.StringIO()
    assert RunMain([str(path), "--zero-inputs"], stdout=ran, stderr=io.StringIO()).run() == 0
    assert "result: float32[8,2]" in ran.getvalue()


def test_shardkit_report_reads_what_shardkit_opt_reads(tmp_path):
    mesh = sk.make_mesh((8,), ("x",))
    module = sk.jit(lambda a: a * 2, in_shardings=sk.NamedSharding(mesh, sk.P("x"))).lower(np.ones(8, np.float32))
    bytecode = tmp_path / "m.mlirbc"
    buffer = io.BytesIO()
    module.compiler_ir().operation.write_bytecode(buffer)
    bytecode.write_bytes(buffer.getvalue())
    report = io.StringIO()
    assert ReportMain([str(bytecode)], stdout=report, stderr=io.StringIO()).run() == 0
    assert "on 8 devices" in report.getvalue()
    garbage = tmp_path / "g.mlir"
    garbage.write_bytes(b"func\xff")
    errors = []
    for tool in (OptMain, ReportMain):
        err = io.StringIO()
        assert tool([str(garbage)], stdout=io.StringIO(), stderr=err).run() == 1
        errors.append(err.getvalue().split("error: ", 1)[1])
    assert "neither UTF-8 text nor MLIR bytecode" in errors[0]
    assert errors[1] == errors[0].rstrip("\n") + ", nor a serialized jax.export artifact\n"  # report reads those too
