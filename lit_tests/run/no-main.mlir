// RUN: not shardkit-run %s --zero-inputs 2>&1 | FileCheck %s
// RUN: shardkit-run %s --zero-inputs --entry f | FileCheck %s --check-prefix=ENTRY

// A module without @main has nothing to run unless --entry names a function: the error lists them.
// CHECK: shardkit-run: error: {{.*}}no-main.mlir has no function @main to run; its public functions: @f; pick one with entry=NAME (shardkit-run --entry NAME).
// ENTRY: result: float32[2] sharding={replicated} sum=0

module {
  func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
    return %a : tensor<2xf32>
  }
}
