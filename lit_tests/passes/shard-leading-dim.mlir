// RUN: shardkit-opt %s -split-input-file -p 'shard-leading-dim{axis=x}' | FileCheck %s
// RUN: shardkit-opt %s -split-input-file -p 'shard-leading-dim{axis=y},export-gspmd' | FileCheck %s --check-prefix=GSPMD
// RUN: shardkit-opt --help | FileCheck %s --check-prefix=HELP

// The example plugin (examples/plugin_pass), found through its entry point in group shardkit.passes.
// HELP: shard-leading-dim  Shards every unsharded argument's leading dimension over one mesh axis.

sdy.mesh @mesh = <["x"=4, "y"=2]>

// CHECK-LABEL: func @args(
// CHECK-SAME: %arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}
// CHECK-SAME: %arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}
// CHECK-SAME: %arg2: tensor<f32>)
// GSPMD-LABEL: func @args(
// GSPMD-SAME: {mhlo.sharding = "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"}
// GSPMD-SAME: {mhlo.sharding = "{replicated}"}
func.func @args(%arg0: tensor<8x4xf32>, %arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>},
                %arg2: tensor<f32>) -> tensor<8x4xf32> {
  return %arg0 : tensor<8x4xf32>
}
