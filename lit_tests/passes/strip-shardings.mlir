// RUN: shardkit-opt %s -split-input-file -p strip-shardings | FileCheck %s
// RUN: shardkit-opt %s -split-input-file -p strip-shardings | FileCheck %s --check-prefix=NONE

// NONE-NOT: sdy.
// NONE-NOT: mhlo.sharding
// NONE-NOT: @Sharding

// CHECK: module attributes {mhlo.num_partitions = 1 : i32}
// CHECK-LABEL: func @sdy_form(
// CHECK-SAME: %arg0: tensor<8x8xf32>) -> (tensor<8x8xf32> {jax.result_info = "result"})
module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  func.func @sdy_form(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
      -> (tensor<8x8xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) {
    // CHECK-NEXT: %[[CST:.*]] = stablehlo.constant dense<2.000000e+00>
    %0 = sdy.constant dense<2.0> : tensor<8x8xf32>
    // CHECK-NEXT: %[[MUL:.*]] = stablehlo.multiply %arg0, %[[CST]] : tensor<8x8xf32>
    %1 = stablehlo.multiply %arg0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : tensor<8x8xf32>
    %2 = sdy.sharding_constraint %1 <@mesh, [{}, {"y"}]> : tensor<8x8xf32>
    %3 = sdy.reshard %2 <@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
    // CHECK-NEXT: return %[[MUL]]
    return %3 : tensor<8x8xf32>
  }
}

// -----

// CHECK-LABEL: func @gspmd_form(
// CHECK-SAME: %arg0: tensor<8x8xf32>) -> tensor<8x8xf32>
module attributes {mhlo.num_partitions = 8 : i32} {
  func.func @gspmd_form(%arg0: tensor<8x8xf32> {mhlo.sharding = "{devices=[4,2]<=[8]}"}) -> tensor<8x8xf32> {
    // CHECK-NEXT: %[[NEG:.*]] = stablehlo.negate %arg0 : tensor<8x8xf32>
    %0 = stablehlo.negate %arg0 {mhlo.sharding = "{replicated}"} : tensor<8x8xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    // CHECK-NEXT: return %[[NEG]]
    return %1 : tensor<8x8xf32>
  }
}
