// RUN: shardkit-opt %s -p 'propagate,export-gspmd' --print-ir-after-all --timing 2>&1 >/dev/null | FileCheck %s
// RUN: shardkit-opt %s -p 'export-gspmd' --print-ir-before-all 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE

// CHECK: // -----// IR Dump After propagate //----- //
// CHECK: stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>}
// CHECK: // -----// IR Dump After export-gspmd //----- //
// CHECK: stablehlo.negate %arg0 {mhlo.sharding = "{devices=[8]<=[8]}"}
// CHECK: shardkit pass execution timing report
// CHECK: Wall Time (ms)
// CHECK-DAG: propagate
// CHECK-DAG: export-gspmd
// CHECK-DAG: (verify)
// CHECK: (100.0%)  Total
// BEFORE: // -----// IR Dump Before export-gspmd //----- //
// BEFORE-NEXT: module {
// BEFORE-NEXT: sdy.mesh @mesh

sdy.mesh @mesh = <["x"=8]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
  %0 = stablehlo.negate %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
