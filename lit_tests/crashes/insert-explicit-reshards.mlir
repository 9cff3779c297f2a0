// jaxlib's sdy-insert-explicit-reshards fails a check (SIGABRT) on a reshard that drops one unreduced axis and
// introduces another (input from Shardy's ir/test/reshard_verification.mlir, openxla/shardy, Apache-2.0), in
// jaxlib 0.10.2, 0.11.2 and 0.12.0.1 alike. It runs in a child process, so the crash is a diagnostic at the
// function it was running on with the pass's last words as a note, the other functions and chunks are untouched,
// and the exit code is 1.
// RUN: shardkit-opt %s -split-input-file -sdy-insert-explicit-reshards -verify-diagnostics
// RUN: not shardkit-opt %s -split-input-file -sdy-insert-explicit-reshards 2>&1 | FileCheck %s

// CHECK: insert-explicit-reshards.mlir:[[# @LINE + 8]]:1: error: pass 'sdy-insert-explicit-reshards' crashed (SIGABRT) on 'func.func' @reshard_drop_and_introduce
// CHECK-NEXT: func.func @reshard_drop_and_introduce(
// CHECK-NEXT: ^
// CHECK-NEXT: insert-explicit-reshards.mlir:[[# @LINE + 5]]:1: note: the pass's last words: Check failed:
// CHECK-NOT: Traceback
sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
// expected-error @below {{pass 'sdy-insert-explicit-reshards' crashed (SIGABRT) on 'func.func' @reshard_drop_and_introduce}}
// expected-note @below {{the pass's last words: Check failed:}}
func.func @reshard_drop_and_introduce(
    %arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced={"x", "y"}>}) -> tensor<8xf32> {
  %0 = sdy.reshard %arg0 <@mesh, [{}], unreduced={"x", "z"}> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// The next chunk runs in a fresh child and succeeds.
sdy.mesh @mesh = <["x"=4, "y"=2]>
func.func @fine(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}
