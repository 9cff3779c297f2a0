// RUN: not shardkit-opt %s -p cse 2>&1 | FileCheck %s
// RUN: not shardkit-opt %s -p cse -split-input-file 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: shardkit-opt %s -split-input-file -verify-diagnostics

// A parse error is a diagnostic with file:line:col and exit code 1, never a traceback.
// CHECK-NOT: Traceback
// CHECK: parse-error.mlir:[[# @LINE + 8]]:41: error: custom op 'func.func' expected SSA identifier
// With -split-input-file, every chunk is parsed alone and keeps its line numbers.
// SPLIT-NOT: Traceback
// SPLIT: parse-error.mlir:[[# @LINE + 5]]:41: error: custom op 'func.func' expected SSA identifier
// SPLIT: parse-error.mlir:[[# @LINE + 12]]:8: error: custom op 'stablehlo.bogus' is unknown
// SPLIT-NOT: error

// expected-error @+1 {{custom op 'func.func' expected SSA identifier}}
func.func @broken(%arg0: tensor<8xf32>, ) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}

// -----

func.func @unknown_op(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{custom op 'stablehlo.bogus' is unknown}}
  %0 = stablehlo.bogus %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @fine(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
