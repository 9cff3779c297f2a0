// expected-error {{pass 'sdy-convert-global-to-local' crashed (SIGABRT) on 'builtin.module'}}
// expected-note @-1 {{the pass's last words: Check failed: localType Failed to compute local type due to non-divisible sharding}}
// jaxlib's sdy-convert-global-to-local fails a check (SIGABRT) on a value whose sharding does not divide its
// dimension, in jaxlib 0.10.2, 0.11.2 and 0.12.0.1 alike (0.10.2 also aborted on reduce_window and
// select_and_scatter sharded along a windowed dimension, which later releases convert). The crash becomes a
// diagnostic naming the signal, with the pass's last words as a note. The pass runs on the whole module, and this
// module is implicit (MLIR gives it no line), so the diagnostic is where the chunk's text starts (line 1, above), as
// mlir-opt places a failure on a module. The next chunk runs in a fresh child and converts.
// RUN: shardkit-opt %s -split-input-file -sdy-convert-global-to-local -verify-diagnostics
// RUN: not shardkit-opt %s -split-input-file -sdy-convert-global-to-local 2>&1 | FileCheck %s

// CHECK: convert-global-to-local.mlir:1:1: error: pass 'sdy-convert-global-to-local' crashed (SIGABRT) on 'builtin.module'
// CHECK: convert-global-to-local.mlir:1:1: note: the pass's last words: Check failed: localType Failed to compute local type due to non-divisible sharding
// CHECK: func.func @divisible(%arg0: tensor<4xf32>

sdy.mesh @mesh = <["x"=2]>
func.func @non_divisible(%arg0: tensor<7xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>})
    -> (tensor<7xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

sdy.mesh @mesh = <["x"=2]>
func.func @divisible(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>})
    -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}
