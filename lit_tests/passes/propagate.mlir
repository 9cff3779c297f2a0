// RUN: shardkit-opt %s -split-input-file -p propagate | FileCheck %s
// RUN: shardkit-opt %s -split-input-file -p 'propagate{keep-open=true}' | FileCheck %s --check-prefix=OPEN
// RUN: shardkit-opt %s -split-input-file -p 'propagate{keep-open strategy=basic debug-origins}' | FileCheck %s --check-prefix=ORIGINS

sdy.mesh @mesh = <["x"=4, "y"=2]>

// Every intermediate gets the sharding propagation chose; the constraint is closed.
// CHECK-LABEL: func @chain(
// CHECK-SAME: %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}
// CHECK-SAME: -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})
// OPEN-LABEL: func @chain(
// OPEN-SAME: %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y", ?}]>}
// ORIGINS-LABEL: func @chain(
// ORIGINS-SAME: sdy.sharding_origins = {x = "self"}
func.func @chain(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK-NEXT: %[[ADD:.*]] = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>}
  // OPEN-NEXT: %[[ADD:.*]] = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {"y", ?}]>]>}
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  // CHECK-NEXT: %[[RESHARD:.*]] = sdy.sharding_constraint %[[ADD]] <@mesh, [{"x"}, {"y"}]>
  // OPEN-NEXT: %[[C:.*]] = sdy.sharding_constraint %[[ADD]] <@mesh, [{"x", ?}, {"y", ?}]>
  %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {"y", ?}]> : tensor<8x8xf32>
  // CHECK-NEXT: stablehlo.tanh %[[RESHARD]] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>}
  // OPEN-NEXT: stablehlo.tanh %[[C]] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {"y", ?}]>]>}
  %2 = stablehlo.tanh %1 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}

// -----

// A matmul: the contracting dimension's axis is not propagated to the result.
sdy.mesh @mesh = <["x"=4, "y"=2]>

// CHECK-LABEL: func @matmul(
// CHECK-SAME: -> (tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})
// OPEN-LABEL: func @matmul(
// ORIGINS-LABEL: func @matmul(
func.func @matmul(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                  %arg1: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> tensor<16x32xf32> {
  // CHECK-NEXT: stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>}
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x32xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}
