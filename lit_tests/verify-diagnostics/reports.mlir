// What -verify-diagnostics reports when expectations and diagnostics disagree: mlir-opt's wording, at
// mlir-opt's locations (the diagnostic for an unexpected one, the directive for one not produced), with the
// source line and a caret underlining the expected text; an @unknown directive has no place for MLIR, whose
// SourceMgr prints an invalid location as <unknown>:0. The run fails.
// RUN: not shardkit-opt %s -split-input-file -p verify-shardings -verify-diagnostics 2>&1 | FileCheck %s --strict-whitespace --match-full-lines
// With =only-expected, diagnostics nobody expects are ignored; directives nothing took still fail.
// RUN: not shardkit-opt %s -split-input-file -p verify-shardings -verify-diagnostics=only-expected 2>&1 | FileCheck %s --check-prefix=ONLY
// (CHECK lines spell expected-{{error}} so that they are not directives themselves.)
// ONLY-NOT: unexpected
// ONLY: {{.*}}reports.mlir:[[# @LINE + 17]]:4: error: expected error "this is never produced" was not produced
// CHECK:{{.*}}reports.mlir:[[# @LINE + 16]]:4: error: expected error "this is never produced" was not produced
// CHECK-NEXT:// expected-{{error}} @+1 {{[{][{]}}this is never produced}}
// CHECK-NEXT:   ^~~~~~~~~~~~~~~~~~~~~~
// CHECK-NEXT:{{.*}}reports.mlir:[[# @LINE + 21]]:1: error: unexpected error: 'func.func' op arg 0 - dim 0 of size 7 is not divisible by 8, the size of axes {"x"}
// CHECK-NEXT:func.func @unexpected(%arg0: tensor<7xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<7xf32> {
// CHECK-NEXT:^
// CHECK-NEXT:{{.*}}reports.mlir:[[# @LINE + 27]]:1: error: unexpected error: 'func.func' op arg 0 - dim 0 of size 3 is not divisible by 8, the size of axes {"x"}
// CHECK:{{.*}}reports.mlir:[[# @LINE + 25]]:4: error: expected error "dim 0 of size 3 is not divisible by 8" was not produced
// CHECK:{{.*}}reports.mlir:[[# @LINE + 35]]:4: error: expected error "of size 6" was not produced
// CHECK:{{.*}}reports.mlir:[[# @LINE + 42]]:4: error: invalid regex: {{.*}}
// CHECK:{{.*}}reports.mlir:[[# @LINE + 42]]:1: error: unexpected error: 'func.func' op arg 0 - dim 0 of size 6 is not divisible by 8, the size of axes {"x"}
// CHECK:{{.*}}reports.mlir:[[# @LINE + 49]]:3: error: unexpected note: prior use here
// CHECK:<unknown>:0: error: expected error "never at an unknown location" was not produced
// CHECK-NOT:{{.*}}error

sdy.mesh @mesh = <["x"=8]>
// expected-error @+1 {{this is never produced}}
func.func @missing(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}

// -----

sdy.mesh @mesh = <["x"=8]>
func.func @unexpected(%arg0: tensor<7xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<7xf32> {
  return %arg0 : tensor<7xf32>
}

// -----

// An expectation on the wrong line does not count: both sides are reported.
sdy.mesh @mesh = <["x"=8]>
// expected-error @+2 {{dim 0 of size 3 is not divisible by 8}}
func.func @wrong_line(%arg0: tensor<3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<3xf32> {
  return %arg0 : tensor<3xf32>
}

// -----

// Two directives that both match one diagnostic: the first takes it, the second is never used.
sdy.mesh @mesh = <["x"=8]>
func.func @twice(%arg0: tensor<6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<6xf32> {
// expected-error @above {{dim 0 of size 6}}
// expected-error @above {{of size 6}}
  return %arg0 : tensor<6xf32>
}

// -----

// A broken regex is reported at its directive, which then expects nothing.
sdy.mesh @mesh = <["x"=8]>
// expected-error-re @below {{dim 0 of size {{[0-9}}}}
func.func @bad_regex(%arg0: tensor<6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<6xf32> {
  return %arg0 : tensor<6xf32>
}

// -----

// A note nobody expects fails the run like an error does.
func.func @note(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
  // expected-error @below {{expects different type than prior uses}}
  return %0 : tensor<4xf32>
}

// -----

// expected-error @unknown {{never at an unknown location}}
func.func @fine() {
  return
}
