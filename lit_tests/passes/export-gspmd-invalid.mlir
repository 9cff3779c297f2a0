// RUN: shardkit-opt %s -split-input-file -p export-gspmd -verify-diagnostics

// What a PartitionSpec cannot say has no GSPMD string here: each is an error at the op.

sdy.mesh @mesh = <["x"=4, "y"=2]>

// expected-error @+1 {{'func.func' op arg 0 - cannot export #sdy.sharding<@mesh, [{"x":(1)2}, {}]> to GSPMD}}
func.func @sub_axis(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(1)2}, {}]>}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}

// -----

sdy.mesh @mesh = <["x"=4, "y"=2]>

func.func @unreduced(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'sdy.sharding_constraint' op result 0 - cannot export}}
  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}, {}], unreduced={"y"}> : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

sdy.mesh @mesh = <["x"=4]>

func.func @manual(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'sdy.manual_computation' op has no GSPMD form}}
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%arg1: tensor<2xf32>) {
    sdy.return %arg1 : tensor<2xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
