// RUN: shardkit-report %s | FileCheck %s
// RUN: shardkit-report %s --plan | FileCheck %s --check-prefix=PLAN
// RUN: shardkit-report %s --table | FileCheck %s --check-prefix=TABLE
// RUN: shardkit-report %s --json | FileCheck %s --check-prefix=JSON
// RUN: shardkit-report %s --mesh rows=8 | FileCheck %s --check-prefix=ROWS
// RUN: shardkit-report - --plan < %s | FileCheck %s --check-prefix=PLAN
// RUN: shardkit-report %s --image %t.svg > /dev/null && %PYTHON -c "import sys; sys.exit(b'<svg' not in open(sys.argv[1], 'rb').read())" %t.svg

// A layer on a 4x2 mesh: tanh(x @ w) summed over its columns. x is split over both axes and w over 'y', so
// the matmul contracts over 'y' (an all-reduce over 'y') and the sum over 'x'-split rows keeps its rows;
// the result is replicated, which gathers the rows over 'x'.

// CHECK: XLA's partitioned program: 2 collectives on 8 devices (x=4 y=2); {{.*}} sent per device per call
// CHECK-NEXT: #  kind        over  operand/device  result/device  bytes/device  sent/device  runs
// CHECK-NEXT: 0  all-reduce  'y'   f32[4,4]        f32[4,4]       64            64           1
// CHECK-NEXT: 1  all-gather  'x'   f32[4]          f32[16]        16            48           1
// CHECK: by mesh axes:
// CHECK-NEXT: ops  runs  sent/device
// CHECK-NEXT: 'y'  1    1     64 B
// CHECK-NEXT: 'x'  1    1     48 B

// PLAN: Shardy's plan (before XLA): 2 collectives on 8 devices (x=4 y=2)
// PLAN-NEXT: #  kind        over  operand/device  result/device
// PLAN-NEXT: 0  all-reduce  'y'   f32[4,4]        f32[4,4]
// PLAN-NEXT: 1  all-gather  'x'   f32[4]          f32[16]

// TABLE:      op                     #  type       sharding
// TABLE-NEXT: @main                  0  f32[16,8]  P('x', 'y')
// TABLE-NEXT: @main                  1  f32[8,4]   P('y',)
// TABLE-NEXT: stablehlo.dot_general  0  f32[16,4]  P('x',)
// TABLE-NEXT: stablehlo.tanh         0  f32[16,4]  P('x',)
// TABLE-NEXT: sdy.constant           0  f32[]      P()          replicated (no attribute)  {{ *}}shardkit-report.mlir:{{[0-9]+}}
// TABLE-NEXT: stablehlo.reduce       0  f32[16]    P('x',)

// JSON: "stage": "xla",
// JSON: "kind": "all-reduce",
// JSON-NEXT: "name": "{{.*}}",
// JSON-NEXT: "axes": [
// JSON-NEXT: "y"
// JSON: "groups": [
// JSON-NEXT: [
// JSON-NEXT: 0,
// JSON-NEXT: 1
// JSON-NEXT: ],

// ROWS: XLA's partitioned program: 2 collectives on 8 devices (rows=8)
// ROWS: 0  all-reduce  'rows:(4)2'
// ROWS: 1  all-gather  'rows:(1)4'

sdy.mesh @mesh = <["x"=4, "y"=2]>
func.func public @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>},
                       %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>})
    -> (tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %1 = stablehlo.tanh %0 : tensor<16x4xf32>
  %2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %3 = stablehlo.reduce(%1 init: %2) applies stablehlo.add across dimensions = [1] : (tensor<16x4xf32>, tensor<f32>) -> tensor<16xf32>
  return %3 : tensor<16xf32>
}
