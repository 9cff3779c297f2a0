// RUN: not shardkit-opt %s -p 'propagate{conservative=true}' 2>&1 | FileCheck %s
// RUN: not shardkit-opt %s -p 'propagate{keep-open strategy=fast}' 2>&1 | FileCheck %s --check-prefix=STRATEGY

// CHECK: shardkit-opt: error: Pass 'propagate' rejected its options {'conservative': 'true'}: strategy, conservative and debug-origins need keep-open=true
// STRATEGY: shardkit-opt: error: Option 'strategy' of pass 'propagate' expects one of user-priority, op-priority, aggressive, basic, got 'fast'.
func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
