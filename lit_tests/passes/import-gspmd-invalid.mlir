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

// -----

// A tuple sharding on one value, and the forms with no Shardy form here: each a finding at its value.
// expected-error @+4 {{'func.func' op arg 0 - cannot import mhlo.sharding {{maximal device=1}}: hlo_to_sdy takes one value's HLO sharding, but {{maximal device=1}} is a tuple sharding of 1 element}}
// expected-error @+3 {{'func.func' op arg 1 - cannot import mhlo.sharding {unreduced}: HLO sharding {unreduced} describes no tiling}}
// expected-error @+2 {{'func.func' op arg 2 - cannot import mhlo.sharding {unknown}: HLO sharding {unknown} describes no tiling}}
// expected-error @+1 {{'func.func' op arg 3 - cannot import mhlo.sharding {mesh['x'=2], [{'x'}]}: cannot parse HLO sharding "{mesh['x'=2], [{'x'}]}": at column 2: XLA's mesh-axes form}}
func.func @forms(%arg0: tensor<8xf32> {mhlo.sharding = "{{maximal device=1}}"}, %arg1: tensor<8xf32> {mhlo.sharding = "{unreduced}"}, %arg2: tensor<8xf32> {mhlo.sharding = "{unknown}"}, %arg3: tensor<8xf32> {mhlo.sharding = "{mesh['x'=2], [{'x'}]}"}) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
