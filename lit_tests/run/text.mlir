// RUN: %PYTHON -c "import numpy as np; np.save('%t.a.npy', np.arange(16, dtype=np.float32).reshape(8, 2)); np.save('%t.b.npy', np.array([3, 4], np.int32)); np.savez('%t.ab.npz', np.arange(16, dtype=np.float32).reshape(8, 2), np.array([3, 4], np.int32))"
// RUN: shardkit-run %s --args %t.a.npy %t.b.npy -o %t.out.npz | FileCheck %s
// RUN: %PYTHON -c "import numpy as np; d = np.load('%t.out.npz'); print(sorted(d), d['result[0]'][7], d['result[1]'])" | FileCheck %s --check-prefix=SAVED
// RUN: shardkit-run %s --args %t.ab.npz | FileCheck %s
// RUN: shardkit-run %s --zero-inputs -p propagate | FileCheck %s --check-prefix=ZERO
// RUN: shardkit-run %s --random-inputs 7 | FileCheck %s --check-prefix=RANDOM

// Running a hand-written Shardy module from the command line: inputs from .npy/.npz files (or made), one line
// per output with its shape, dtype, sharding (HLO form) and checksums; -o saves the outputs.

// CHECK: result[0]: float32[8,2] sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate} = P('x',) on @mesh sum=240 crc32=194d14e8
// CHECK-NEXT: result[1]: int32[2] sharding={replicated} = P() on @mesh sum=7 crc32=64cf4fdd
// CHECK-NOT: result

// SAVED: ['result[0]', 'result[1]'] [28. 30.] [3 4]

// ZERO: result[0]: float32[8,2] sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate} = P('x',) on @mesh sum=0
// ZERO-NEXT: result[1]: int32[2] sharding={replicated} = P() on @mesh sum=0

// RANDOM: result[0]: float32[8,2] sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate} = P('x',) on @mesh sum={{.*}} crc32=
// RANDOM-NEXT: result[1]: int32[2]

module @scale attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  func.func @main(%a: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %b: tensor<2xi32>)
      -> (tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<2xi32>) {
    %0 = stablehlo.add %a, %a : tensor<8x2xf32>
    return %0, %b : tensor<8x2xf32>, tensor<2xi32>
  }
}
