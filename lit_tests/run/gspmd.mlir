// RUN: %PYTHON -c "import numpy as np; np.save('%t.a.npy', np.arange(32, dtype=np.float32).reshape(8, 4))"
// RUN: shardkit-run %s --args %t.a.npy %t.a.npy | FileCheck %s
// RUN: shardkit-run %s --args %t.a.npy %t.a.npy --mesh x=4,y=2 | FileCheck %s --check-prefix=MESH

// A GSPMD module (mhlo.sharding strings, no mesh) runs on the first 8 devices, or on a --mesh of 8, where its
// results are PartitionSpecs too.

// CHECK: result: float32[8,4] sharding={devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate} sum=10416 crc32=
// MESH: result: float32[8,4] sharding={devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate} = P(None, 'y') on mesh <["x"=4, "y"=2]> sum=10416 crc32=
// CHECK-NOT: error

module @hand_written attributes {mhlo.num_partitions = 8 : i32} {
  func.func @main(%a: tensor<8x4xf32> {mhlo.sharding = "{devices=[4,2]<=[8]}"},
                  %b: tensor<8x4xf32> {mhlo.sharding = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"})
      -> (tensor<8x4xf32> {mhlo.sharding = "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}"}) {
    %0 = stablehlo.multiply %a, %b : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
