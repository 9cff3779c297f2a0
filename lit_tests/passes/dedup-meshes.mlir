// RUN: shardkit-opt %s -split-input-file -p dedup-meshes | FileCheck %s

// Equal meshes merge into the first; every reference follows, in arguments, constraints and op shardings.
// CHECK: sdy.mesh @mesh = <["x"=4, "y"=2]>
// CHECK-NEXT: sdy.mesh @other = <["x"=2, "y"=4]>
// CHECK-NEXT: sdy.mesh @permuted = <["x"=4, "y"=2], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>
// CHECK-NOT: sdy.mesh
sdy.mesh @mesh = <["x"=4, "y"=2]>
sdy.mesh @other = <["x"=2, "y"=4]>
sdy.mesh @copy = <["x"=4, "y"=2]>
sdy.mesh @permuted = <["x"=4, "y"=2], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>
sdy.mesh @permuted_copy = <["x"=4, "y"=2], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>

// CHECK-LABEL: func @refs(
// CHECK-SAME: #sdy.sharding<@mesh, [{"x"}, {}]>
// CHECK-SAME: #sdy.sharding<@other, [{"x"}, {}]>
// CHECK-SAME: #sdy.sharding<@permuted, [{}, {"y"}]>
func.func @refs(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@copy, [{"x"}, {}]>},
                %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@other, [{"x"}, {}]>},
                %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@permuted_copy, [{}, {"y"}]>}) -> tensor<8x8xf32> {
  // CHECK-NEXT: %[[C:.*]] = sdy.sharding_constraint %arg0 <@mesh, [{}, {"y"}]>
  %0 = sdy.sharding_constraint %arg0 <@copy, [{}, {"y"}]> : tensor<8x8xf32>
  // CHECK-NEXT: stablehlo.add %[[C]], %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>}
  %1 = stablehlo.add %0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@copy, [{"x"}, {"y"}]>]>} : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// -----

// Nothing to merge: unchanged.
// CHECK: sdy.mesh @a = <["x"=8]>
// CHECK-NEXT: sdy.mesh @b = <["y"=8]>
// CHECK-LABEL: func @distinct(
// CHECK-SAME: #sdy.sharding<@b, [{"y"}]>
sdy.mesh @a = <["x"=8]>
sdy.mesh @b = <["y"=8]>
func.func @distinct(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@b, [{"y"}]>}) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
