// RUN: shardkit-opt %s -split-input-file -p verify-shardings -verify-diagnostics | FileCheck %s

// A valid module passes through unchanged.
// CHECK-LABEL: func @valid(
// CHECK-SAME: #sdy.sharding<@mesh, [{"x"}, {"y"}]>
// CHECK-SAME: mhlo.sharding = "{devices=[4,2]<=[8]}"
module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  func.func @valid(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>},
                   %arg1: tensor<8x8xf32> {mhlo.sharding = "{devices=[4,2]<=[8]}"}) -> tensor<8x8xf32> {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x", "y"}, {?}]> : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}

// -----

// Divisibility, for Shardy and GSPMD shardings, arguments, results and constraints.
module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  // expected-error @+3 {{'func.func' op arg 0 - dim 0 of size 7 is not divisible by 4, the size of axes {"x"}}}
  // expected-error @+2 {{'func.func' op arg 1 - dim 1 of size 6 is not divisible by its 4 tiles in mhlo.sharding {devices=[2,4]<=[8]}}}
  // expected-error @+1 {{'func.func' op result 0 - dim 0 of size 7 is not divisible by 8, the size of axes {"x", "y"}}}
  func.func @indivisible(%arg0: tensor<7x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                         %arg1: tensor<8x6xf32> {mhlo.sharding = "{devices=[2,4]<=[8]}"})
      -> (tensor<7x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) {
    // expected-error @+1 {{'sdy.sharding_constraint' op result 0 - dim 0 of size 7 is not divisible by 2, the size of axes {"y"}}}
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"y"}, {?}]> : tensor<7x8xf32>
    %1 = stablehlo.negate %0 : tensor<7x8xf32>
    return %1 : tensor<7x8xf32>
  }
}

// -----

// The mesh must have mhlo.num_partitions devices.
module attributes {mhlo.num_partitions = 4 : i32} {
  // expected-error @+1 {{'sdy.mesh' op mesh <["x"=4, "y"=2]> has 8 devices, but mhlo.num_partitions is 4}}
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  // expected-error @+1 {{'sdy.mesh' op maximal mesh device 5 is not below mhlo.num_partitions = 4}}
  sdy.mesh @maximal_mesh_5 = <[], device_ids=[5]>
  // expected-error @+2 {{'func.func' op arg 0 - mhlo.sharding {devices=[8,1]<=[8]} names devices [4, 5, 6, 7], not below mhlo.num_partitions = 4}}
  // expected-error @+1 {{'func.func' op arg 1 - mhlo.sharding {devices=[2,1]0,1} spans 2 devices, but mhlo.num_partitions is 4}}
  func.func @partitions(%arg0: tensor<8x8xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"},
                        %arg1: tensor<8x8xf32> {mhlo.sharding = "{devices=[2,1]0,1}"}) -> tensor<8x8xf32> {
    return %arg0 : tensor<8x8xf32>
  }
}

// -----

// GSPMD strings: unparsable, wrong rank, a device twice; and a value with both forms.
module attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=4]>
  // expected-error @+4 {{'func.func' op arg 0 - invalid mhlo.sharding '{bogus}'}}
  // expected-error @+3 {{'func.func' op arg 1 - mhlo.sharding {devices=[2,2]<=[4]} tiles 2 dimensions, but the value has rank 1}}
  // expected-error @+2 {{'func.func' op arg 2 - invalid mhlo.sharding '{devices=[4]0,1,0,0}': at column 2: a tile assignment of shape [4] must list each device 0..3 exactly once, got [0, 1, 0, 0]}}
  // expected-error @+1 {{'func.func' op arg 3 - has both sdy.sharding and mhlo.sharding}}
  func.func @strings(%arg0: tensor<8xf32> {mhlo.sharding = "{bogus}"},
                     %arg1: tensor<8xf32> {mhlo.sharding = "{devices=[2,2]<=[4]}"},
                     %arg2: tensor<8xf32> {mhlo.sharding = "{devices=[4]0,1,0,0}"},
                     %arg3: tensor<8xf32> {mhlo.sharding = "{devices=[4]<=[4]}", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
    return %arg0 : tensor<8xf32>
  }
}

// -----

// Unknown axes and axes used twice are caught by Shardy's own verifier while parsing, with the same
// wording; verify-shardings repeats those checks for modules built in Python without verification.
sdy.mesh @mesh = <["x"=4, "y"=2]>
// expected-error @+1 {{'func.func' op arg 0 - unknown axis name: "z"}}
func.func @unknown_axis(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"z"}, {}]>}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}

// -----

sdy.mesh @mesh = <["x"=4, "y"=2]>
// expected-error @+1 {{'func.func' op arg 0 - duplicate axis ref: "x"}}
func.func @axis_twice(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"x"}]>}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}

// -----

// Forms that cut nothing and name no device: unreduced (each device holds a partial sum of the whole value,
// fuzz-2026-11c ended in a ZeroDivisionError here), unknown, manual; subgroups of them after the tiles.
module attributes {mhlo.num_partitions = 8 : i32} {
  func.func @newer_forms(%arg0: tensor<8xf32> {mhlo.sharding = "{unreduced}"},
                         %arg1: tensor<8xf32> {mhlo.sharding = "{unknown}"},
                         %arg2: tensor<8xf32> {mhlo.sharding = "{manual}"},
                         %arg3: tensor<8xf32> {mhlo.sharding = "{devices=[2,4]<=[8] last_tile_dims={unreduced}}"},
                         %arg4: tensor<8xf32> {mhlo.sharding = "{devices=[4,2]<=[8] last_tile_dims={manual} shard_as 1}"},
                         %arg5: tensor<8xf32> {mhlo.sharding = "{maximal device=7 metadata={op_name=\"a\"}}"}) -> tensor<8xf32> {
    return %arg0 : tensor<8xf32>
  }
}

// -----

// A tuple sharding is one per result of an op; on one value that is not a tuple it is a finding.
module attributes {mhlo.num_partitions = 2 : i32} {
  // expected-error @+1 {{'func.func' op arg 0 - mhlo.sharding {{devices=[2]0,1}} is a tuple sharding of 1 element for one value of type tensor<8xf32>}}
  func.func @tuples(%arg0: tensor<8xf32> {mhlo.sharding = "{{devices=[2]0,1}}"}) -> tensor<8xf32> {
    %0:2 = stablehlo.custom_call @pair(%arg0) {mhlo.sharding = "{{devices=[2]0,1}, {replicated}}"} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    // expected-error @+1 {{'stablehlo.add' op result 0 - mhlo.sharding {{replicated}, {maximal device=1}} is a tuple sharding of 2 elements}}
    %1 = stablehlo.add %0#0, %0#1 {mhlo.sharding = "{{replicated}, {maximal device=1}}"} : tensor<8xf32>
    // expected-error @+1 {{'stablehlo.custom_call' op mhlo.sharding {{replicated}, {replicated}, {replicated}} is a tuple sharding of 3 elements for the op's 2 results}}
    %2:2 = stablehlo.custom_call @pair(%1) {mhlo.sharding = "{{replicated}, {replicated}, {replicated}}"} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    return %1 : tensor<8xf32>
  }
}
