// RUN: shardkit-opt %s -split-input-file -p import-gspmd -verify-diagnostics

// expected-error @+1 {{'func.func' op arg 0 - cannot import mhlo.sharding {bogus}}}
func.func @unparsable(%arg0: tensor<8x8xf32> {mhlo.sharding = "{bogus}"}) -> tensor<8x8xf32> {
  return %arg0 : tensor<8x8xf32>
}

// -----

func.func @manual(%arg0: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'stablehlo.custom_call' op @SPMDFullToShardShape (manual sharding) has no Shardy form}}
  %0 = stablehlo.custom_call @SPMDFullToShardShape(%arg0) {mhlo.sharding = "{manual}"} : (tensor<8xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{'func.func' op arg 0 - cannot import mhlo.sharding {devices=[2,2]<=[4]}: HLO sharding {devices=[2,2]<=[4]} tiles 2 dimensions, but the array has rank 1}}
func.func @rank(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[2,2]<=[4]}"}) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
