// A pass pipeline nested on an op it cannot run on makes MLIR's pipeline builder abort ("LLVM ERROR: Can't
// add pass"); shardkit-opt checks anchors first. A module with no @main makes jaxlib's propagation abort;
// shardkit-opt refuses it first, at its first function. Both exit with code 1, never a signal.
// RUN: not shardkit-opt %s -p 'func.func(sdy-export-pipeline)' 2>&1 | FileCheck %s --check-prefix=FUNC
// RUN: not shardkit-opt %s --pass-pipeline='builtin.module(sdy.mesh(sdy-import-pipeline))' 2>&1 | FileCheck %s --check-prefix=MESH
// RUN: not shardkit-opt %s -p 'cse,func.func(canonicalize,sdy-propagation-pipeline)' 2>&1 | FileCheck %s --check-prefix=INNER
// RUN: shardkit-opt %s -p 'func.func(sdy-insert-explicit-reshards),builtin.module(sdy-import-pipeline)' | FileCheck %s --check-prefix=FINE
// RUN: shardkit-opt %s -propagate -verify-diagnostics

// FUNC: shardkit-opt: error: Pass pipeline 'sdy-export-pipeline' cannot run nested on 'func.func': its pass 'sdy-remove-sharding-groups' runs on 'builtin.module'. Put it at the top level of the pipeline, outside 'func.func(...)'.
// MESH: shardkit-opt: error: Pass pipeline 'sdy-import-pipeline' cannot run nested on 'sdy.mesh': its pass 'sdy-lift-inlined-meshes' runs on 'builtin.module'.
// INNER: shardkit-opt: error: Pass pipeline 'sdy-propagation-pipeline' cannot run nested on 'func.func'
// FINE: func.func @f

sdy.mesh @mesh = <["x"=2]>
// expected-error @below {{Shardy's propagation needs a public function @main, the program's entry, in a module of these functions: public @f, public @g; rename the entry to @main}}
func.func @f(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
func.func @g(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
