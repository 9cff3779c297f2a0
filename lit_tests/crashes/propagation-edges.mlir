// jaxlib's Shardy verifier of sdy.propagation_edges ends the process (SIGSEGV) on an edge naming an operand, a
// result or a sharding its op does not have, in jaxlib 0.10.2 and 0.12.0.1 alike. Parsing verifies, so that was
// the end of shardkit-opt before any pass ran. Input holding propagation edges is parsed in the isolation worker:
// the crash is an error at the attribute, with exit code 1. The second chunk's edges are fine: it parses there
// and its pass runs there too (every pass over such input does: the verifier runs after each).
// RUN: shardkit-opt %s -split-input-file -p sdy-lift-inlined-meshes -verify-diagnostics
// RUN: not shardkit-opt %s -split-input-file -p sdy-lift-inlined-meshes 2>&1 | FileCheck %s

// CHECK-DAG: propagation-edges.mlir:[[# @LINE + 6]]:39: error: MLIR crashed (SIG{{[A-Z]+}}) parsing this input: Shardy's verifier of sdy.propagation_edges crashes on an edge naming an operand, a result or a sharding its op does not have
// CHECK-DAG: func.func @fine

sdy.mesh @mesh = <["z"=4]>
func.func @f(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
  // expected-error @below {{parsing this input: Shardy's verifier of sdy.propagation_edges crashes}}
  %0 = sdy.func_data_flow_edge %arg0 {sdy.propagation_edges = #sdy.propagation_edges<[{step-22 = [{"z" = result-0 -> [operand-3]}]}]>, sdy.sharding = #sdy.sharding_per_value<[]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

sdy.mesh @mesh = <["z"=4]>
func.func @fine(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
  %0 = sdy.func_data_flow_edge %arg0 {sdy.propagation_edges = #sdy.propagation_edges<[{step-22 = [{"z" = result-0 -> [operand-0]}]}]>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"z"}, {}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
