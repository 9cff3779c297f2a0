// RUN: shardkit-report %s --mesh data=4,model=2 | FileCheck %s
// RUN: shardkit-report %s | FileCheck %s --check-prefix=NOMESH
// RUN: not shardkit-report %s --plan 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: not shardkit-report %s --mesh data=3 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not shardkit-report %s --table --image %t.png 2>&1 | FileCheck %s --check-prefix=IMAGE
// RUN: not shardkit-report %t.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: %PYTHON -c "open(r'%t.latin1', 'wb').write(b'// caf\xe9')"
// RUN: not shardkit-report %t.latin1 2>&1 | FileCheck %s --check-prefix=UTF8
// RUN: echo "func.func @f() { return }" > %t.nomain.mlir
// RUN: not shardkit-report %t.nomain.mlir 2>&1 | FileCheck %s --check-prefix=NOMAIN
// RUN: not shardkit-report %t.nomain.mlir --plan 2>&1 | FileCheck %s --check-prefix=NOMAIN-PLAN

// A GSPMD-form module has no sdy.mesh: --mesh names the axes its groups run over; without it the groups
// stay device lists ('?'). It has no Shardy plan.

// CHECK: XLA's partitioned program: 1 collective on 8 devices (data=4 model=2)
// CHECK-NEXT: #  kind        over     operand/device  result/device
// CHECK-NEXT: 0  all-reduce  'model'  f32[4,4]        f32[4,4]

// NOMESH: XLA's partitioned program: 1 collective on 8 devices (no mesh)
// NOMESH-NEXT: #  kind        over  operand/device
// NOMESH-NEXT: 0  all-reduce  ?     f32[4,4]
// NOMESH: by mesh axes:
// NOMESH-NEXT: ops  runs  sent/device
// NOMESH-NEXT: ?  1    1     64 B

// PLAN: shardkit-report: error: the module is in the GSPMD form (mhlo.sharding): Shardy has no plan for it.
// SIZE: shardkit-report: error: --mesh data=3 has 3 devices but the module has 8 partitions
// IMAGE: shardkit-report: error: --image draws the communication report; it does not apply to --table
// MISSING: shardkit-report: error: could not open input file '{{.*}}.missing': No such file or directory
// UTF8: shardkit-report: error: input '{{.*}}.latin1' is neither UTF-8 text nor MLIR bytecode: byte 0xe9 at line 1, column 7 is not valid UTF-8
// NOMAIN: shardkit-report: error: <module> has no function @main to run
// NOMAIN-PLAN: shardkit-report: error: the module has no function @main to plan for

module @jit_layer attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x8xf32> {mhlo.sharding = "{devices=[4,2]<=[8]}"},
                         %arg1: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"})
      -> (tensor<16x4xf32> {mhlo.sharding = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
    return %0 : tensor<16x4xf32>
  }
}
