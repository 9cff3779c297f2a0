// RUN: shardkit-opt %s -p 'shard-leading-dim{axis=z}' -verify-diagnostics

// expected-error @+1 {{'builtin.module' op has no mesh @mesh with axis "z"}}
module {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    return %arg0 : tensor<8xf32>
  }
}
