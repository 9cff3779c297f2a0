// Names that are not shardkit's fall through to the MLIR passes registered in jaxlib; passes that
// only run on functions are nested under func.func automatically; builtin.module(...) is accepted.
// RUN: shardkit-opt %s -p 'canonicalize,cse' | FileCheck %s
// RUN: shardkit-opt %s -p 'builtin.module(func.func(cse),canonicalize{max-iterations=2})' | FileCheck %s
// RUN: shardkit-opt %s -p 'sdy-sharding-constraint-to-reshard' | FileCheck %s --check-prefix=RESHARD
// RUN: shardkit-opt %s -p 'symbol-dce,propagate,export-gspmd' | FileCheck %s --check-prefix=MIXED
// RUN: shardkit-opt < %s -p cse -o %t && FileCheck %s < %t

sdy.mesh @mesh = <["x"=8]>

// CHECK-LABEL: func @main(
// RESHARD-LABEL: func @main(
// MIXED-LABEL: func @main(
// MIXED-SAME: {mhlo.sharding = "{devices=[8]<=[8]}"}
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
  // CHECK-NEXT: %[[ADD:.*]] = stablehlo.add %arg0, %arg0
  // CHECK-NEXT: %[[C:.*]] = sdy.sharding_constraint %[[ADD]]
  // CHECK-NEXT: stablehlo.multiply %[[C]], %[[C]]
  %0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
  %1 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
  // RESHARD: sdy.reshard
  // MIXED: stablehlo.custom_call @Sharding
  %2 = sdy.sharding_constraint %1 <@mesh, [{}]> : tensor<8xf32>
  %3 = stablehlo.multiply %2, %2 : tensor<8xf32>
  return %3 : tensor<8xf32>
}

// MIXED-NOT: @private
func.func private @private_unused(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
