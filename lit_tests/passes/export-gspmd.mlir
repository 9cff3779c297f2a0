// RUN: shardkit-opt %s -split-input-file -p export-gspmd | FileCheck %s
// RUN: shardkit-opt %s -split-input-file -p export-gspmd | FileCheck %s --check-prefix=NOMESH

// The strings are the ones jax 0.10 prints under jax_use_shardy_partitioner=False
// (tests/test_passes_export.py checks them against jax itself).

// NOMESH-NOT: sdy.
sdy.mesh @mesh = <["x"=4, "y"=2]>

// CHECK-LABEL: func @specs(
// CHECK-SAME: %arg0: tensor<8x8xf32> {mhlo.sharding = "{replicated}"}
// CHECK-SAME: %arg1: tensor<8x8xf32> {mhlo.sharding = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"}
// CHECK-SAME: %arg2: tensor<8x8xf32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}
// CHECK-SAME: %arg3: tensor<8x8xf32> {mhlo.sharding = "{devices=[2,4]<=[4,2]T(1,0)}"}
// CHECK-SAME: -> (tensor<8x8xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[4,2]<=[8]}"})
func.func @specs(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>},
                 %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>},
                 %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>},
                 %arg3: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>})
    -> (tensor<8x8xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
  return %arg0 : tensor<8x8xf32>
}

// -----

sdy.mesh @mesh = <["x"=4, "y"=2]>

// CHECK-LABEL: func @constraints(
func.func @constraints(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // CHECK-NEXT: %[[OPEN:.*]] = stablehlo.custom_call @Sharding(%arg0) {backend_config = "unspecified_dims=[0]", mhlo.sharding = "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"}
  %0 = sdy.sharding_constraint %arg0 <@mesh, [{?}, {"y"}]> : tensor<8x8xf32>
  // CHECK-NEXT: %[[CLOSED:.*]] = stablehlo.custom_call @Sharding(%[[OPEN]]) {backend_config = "", mhlo.sharding = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"}
  %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>
  // CHECK-NEXT: return %[[CLOSED]]
  return %1 : tensor<8x8xf32>
}

// -----

// A mesh with device_ids lists its devices explicitly, as jax does for logical device ids (XLA sorts
// the devices inside each replication group).
sdy.mesh @mesh = <["x"=4, "y"=2], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>

// CHECK-LABEL: func @device_ids(
// CHECK-SAME: {mhlo.sharding = "{devices=[4,2]7,6,5,4,3,2,1,0}"}
// CHECK-SAME: {mhlo.sharding = "{devices=[2,1,4]1,3,5,7,0,2,4,6 last_tile_dim_replicate}"}
// CHECK-SAME: {mhlo.sharding = "{replicated}"}
func.func @device_ids(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>},
                      %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>},
                      %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}

// -----

// Partial replication: unused axes and replicated={...} both become the trailing replication dimension.
sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>

// CHECK-LABEL: func @partial_replication(
// CHECK-SAME: {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}
// CHECK-SAME: {mhlo.sharding = "{devices=[1,2,4]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}"}
// CHECK-SAME: {mhlo.sharding = "{devices=[2,2,2]<=[4,2]T(1,0)}"}
func.func @partial_replication(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}], replicated={"b"}>},
                               %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"b"}]>},
                               %arg2: tensor<8x8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"c"}, {"a"}, {"b"}]>}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}

// -----

// Size-1 axes shard nothing; an empty mesh is replicated; a maximal mesh names its device.
sdy.mesh @mesh = <["x"=1, "y"=8]>
sdy.mesh @empty_mesh = <[]>
sdy.mesh @maximal_mesh_3 = <[], device_ids=[3]>

// CHECK-LABEL: func @special_meshes(
// CHECK-SAME: {mhlo.sharding = "{devices=[1,8]<=[8]}"}
// CHECK-SAME: {mhlo.sharding = "{replicated}"}
// CHECK-SAME: {mhlo.sharding = "{maximal device=3}"}
func.func @special_meshes(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>},
                          %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@empty_mesh, [{}, {}]>},
                          %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@maximal_mesh_3, []>}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}

// -----

// What propagation leaves behind: per-op shardings, reshards and sdy.constant.
sdy.mesh @mesh = <["x"=4, "y"=2]>

// CHECK-LABEL: func @propagated(
func.func @propagated(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x8xf32> {
  // CHECK-NEXT: %[[CST:.*]] = stablehlo.constant dense<1.000000e+00> : tensor<8x8xf32>
  %0 = sdy.constant dense<1.0> : tensor<8x8xf32>
  // CHECK-NEXT: %[[ADD:.*]] = stablehlo.add %arg0, %[[CST]] {mhlo.sharding = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"}
  %1 = stablehlo.add %arg0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : tensor<8x8xf32>
  // CHECK-NEXT: stablehlo.custom_call @Sharding(%[[ADD]]) {backend_config = "", mhlo.sharding = "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"}
  %2 = sdy.reshard %1 <@mesh, [{}, {"y"}]> : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}

// -----

// Several results get a tuple sharding.
sdy.mesh @mesh = <["x"=2]>

// CHECK-LABEL: func @tuple(
func.func @tuple(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: mhlo.sharding = "{{[{][{]}}devices=[2]<=[2]}, {replicated}}"
  %0:2 = stablehlo.custom_call @pair(%arg0, %arg1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>, <@mesh, [{}]>]>} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}
