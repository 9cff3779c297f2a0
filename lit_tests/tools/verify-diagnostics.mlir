// -verify-diagnostics reports both directions of a mismatch and fails.
// RUN: not shardkit-opt %s -split-input-file -p verify-shardings -verify-diagnostics 2>&1 | FileCheck %s

// CHECK-DAG: verify-diagnostics.mlir:[[# @LINE + 9]]: error: expected error "this is never produced" was not produced (expected on line [[# @LINE + 10]])
// CHECK-DAG: verify-diagnostics.mlir:[[# @LINE + 18]]:3: error: unexpected error: 'func.func' op arg 0 - dim 0 of size 7 is not divisible by 8

// CHECK-DAG: verify-diagnostics.mlir:[[# @LINE + 27]]:3: error: unexpected error: 'func.func' op arg 0 - dim 0 of size 3 is not divisible by 8
// CHECK-DAG: verify-diagnostics.mlir:[[# @LINE + 25]]: error: expected error "dim 0 of size 3 is not divisible by 8" was not produced (expected on line [[# @LINE + 27]])
// CHECK-NOT: expected error "dim 0 of size 5

module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=8]>
  // expected-error @+1 {{this is never produced}}
  func.func @missing(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
    return %arg0 : tensor<8xf32>
  }
}

// -----

module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=8]>
  func.func @unexpected(%arg0: tensor<7xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<7xf32> {
    return %arg0 : tensor<7xf32>
  }
}

// -----

// An expectation on the wrong line does not count.
module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=8]>
  // expected-error @+2 {{dim 0 of size 3 is not divisible by 8}}
  func.func @wrong_line(%arg0: tensor<3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<3xf32> {
    return %arg0 : tensor<3xf32>
  }
}

// -----

// Same-line and @-1 forms.
module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=8]>
  func.func @same_line(%arg0: tensor<5xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<5xf32> { // expected-error {{dim 0 of size 5 is not divisible by 8}}
    return %arg0 : tensor<5xf32>
  }
  func.func @above(%arg0: tensor<6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<6xf32> {
  // expected-error @-1 {{dim 0 of size 6 is not divisible by 8}}
    return %arg0 : tensor<6xf32>
  }
}
