// RUN: shardkit-opt %s -p 'auto-partition{target=cpu:8 confirm=0 workers=0}' | FileCheck %s
// RUN: not shardkit-opt %s -p 'auto-partition' 2>&1 | FileCheck %s --check-prefix=NO-TARGET
// RUN: not shardkit-opt %s -p 'auto-partition{target=tpu-v9:4x4 workers=0}' 2>&1 | FileCheck %s --check-prefix=BAD

// The batch of a small MLP's forward pass is split over all 8 devices; nothing else moves. The arguments had no
// sharding (open): the pass writes the mesh, every argument's and result's sharding and the partition count.

// CHECK: module @mlp attributes {mhlo.num_partitions = 8 : i32
// CHECK: sdy.mesh @mesh = <["x"=8]>
// CHECK: func.func public @main(%arg0: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
// CHECK-SAME: %arg1: tensor<32x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>},
// CHECK-SAME: %arg2: tensor<128x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})
// CHECK-SAME: -> (tensor<64x16xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})

// NO-TARGET: error: 'func.func' op auto-partition needs a target, e.g. 'auto-partition{target=tpu-v5e:4x4}'
// BAD: error: 'func.func' op auto-partition: target 'tpu-v9:4x4': unknown TPU generation 'v9'
module @mlp attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64x32xf32>, %arg1: tensor<32x128xf32>, %arg2: tensor<128x16xf32>)
      -> (tensor<64x16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<64x32xf32>, tensor<32x128xf32>) -> tensor<64x128xf32>
    %1 = stablehlo.tanh %0 : tensor<64x128xf32>
    %2 = stablehlo.dot_general %1, %arg2, contracting_dims = [1] x [0] : (tensor<64x128xf32>, tensor<128x16xf32>) -> tensor<64x16xf32>
    return %2 : tensor<64x16xf32>
  }
}
