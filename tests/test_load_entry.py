"""What other frontends' modules trip on: an entry not named @main, several modules in one file, shardings only
inside the body, more partitions than the default devices, and export of a module holding non-StableHLO
constants."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import shardkit as sk
from tests.child import run_python

X = np.arange(8, dtype=np.float32)

TWO_MODULES = """module @first {
  func.func @forward(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = call @helper(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
  func.func private @helper(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    return %arg0 : tensor<8xf32>
  }
}
module @second {
  func.func @test_negate(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[8]<=[8]}"}) -> tensor<8xf32> {
    %0 = stablehlo.negate %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
"""


def test_an_entry_other_than_main_runs_with_its_calls():
    first = sk.load(TWO_MODULES, module=0)
    np.testing.assert_array_equal(np.asarray(first.compile()(X)), X)  # @main
    forward = sk.load(TWO_MODULES, module=0, entry="forward")
    np.testing.assert_array_equal(np.asarray(forward.compile()(X)), 2 * X)
    assert "func.func @main_0(" in forward.as_text()  # the module's own @main moved aside
    second = sk.load(TWO_MODULES, module=1, entry="test_negate")
    out = second.compile()(X)
    np.testing.assert_array_equal(np.asarray(out), -X)
    assert repr(out.sharding.to_hlo(1)) == "{devices=[8]<=[8]}"


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (
            {},
            ValueError,
            r"holds 2 top-level modules: pick one with module=INDEX \(shardkit-run --module INDEX\), 0..1",
        ),
        ({"module": 2}, ValueError, "holds 2 top-level modules, so module=2 names none"),
        ({"module": "0"}, TypeError, "module must be an int"),
        (
            {"module": 1},
            ValueError,
            r"has no function @main to run; its public functions: @test_negate; pick one with entry=NAME",
        ),
        ({"module": 0, "entry": "helper2"}, ValueError, "has no function @helper2 to run; its public functions: "),
        ({"module": 0, "entry": 3}, TypeError, "entry must be a function name"),
    ],
    ids=["no index", "index out of range", "index not an int", "no main", "unknown entry", "entry not a str"],
)
def test_entry_and_module_errors_name_what_there_is(kwargs, error, message):
    with pytest.raises(error, match=message):
        sk.load(TWO_MODULES, **kwargs)


def test_shardings_only_in_the_body_partition_the_program():
    """XLA partitions a module whose shardings are all inside @main over the devices they name; so does sk."""
    text = """func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.negate %arg0 {mhlo.sharding = "{devices=[8,1]<=[8]}"} : tensor<8x4xf32>
  %1 = stablehlo.custom_call @Sharding(%0) {mhlo.sharding = "{devices=[4,2]<=[8]}"}
    : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}"""
    lowered = sk.load(text)
    assert lowered.in_shardings == ((None,), {})
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = lowered.compile()(x)
    np.testing.assert_array_equal(np.asarray(out), -x)
    assert len(out.sharding.device_set) == 8 and repr(out.sharding.to_hlo(2)) == "{devices=[4,2]<=[8]}"


def test_export_writes_arith_constants_as_stablehlo_and_names_what_it_cannot_write():
    text = """func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %c = arith.constant dense<2.0> : tensor<8xf32>
  %0 = stablehlo.multiply %arg0, %c : tensor<8xf32>
  return %0 : tensor<8xf32>
}"""
    exported = sk.load(text).export()
    np.testing.assert_array_equal(np.asarray(exported.call(X)), 2 * X)
    back = jax.export.deserialize(exported.serialize())
    np.testing.assert_array_equal(np.asarray(back.call(X)), 2 * X)
    foreign = text.replace("stablehlo.multiply %arg0, %c", "arith.mulf %arg0, %c")
    with pytest.raises(ValueError, match=r"cannot be written as a jax.export artifact, .*arith.mulf"):
        sk.load(foreign).export()


def test_shardkit_run_makes_the_devices_a_module_needs(tmp_path):
    path = tmp_path / "m16.mlir"
    path.write_text("""module attributes {mhlo.num_partitions = 16 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=4]>
  func.func @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) -> tensor<16x4xf32> {
    %0 = stablehlo.negate %arg0 : tensor<16x4xf32>
    return %0 : tensor<16x4xf32>
  }
}""")
    run = run_python("from shardkit.tools.run import main; main()", str(path), "--zero-inputs")
    assert run.returncode == 0, run.stderr
    assert "result: float32[16,4] sharding={devices=[16,1]<=[16]} = P(('x', 'y'),) on @mesh sum=0" in run.stdout
    assert "shardkit-run: made 16 virtual CPU devices for the module's 16 partitions" in run.stderr
