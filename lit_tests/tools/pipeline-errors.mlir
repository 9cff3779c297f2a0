// Pipeline mistakes are one-line errors with exit code 1, never a traceback.
// RUN: not shardkit-opt %s -p canonicalise 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not shardkit-opt %s -p export-gspm 2>&1 | FileCheck %s --check-prefix=CLOSE
// RUN: not shardkit-opt %s -p 'propagate{keep-opn=true}' 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not shardkit-opt %s -p 'propagate{keep-open=yes}' 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not shardkit-opt %s -p 'cse{no-such-option=1}' 2>&1 | FileCheck %s --check-prefix=MLIROPT
// RUN: not shardkit-opt %s -p 'cse,{' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not shardkit-opt %s -p 'builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=PAREN
// RUN: not shardkit-opt %S/does-not-exist.mlir -p cse 2>&1 | FileCheck %s --check-prefix=MISSING

// UNKNOWN: shardkit-opt: error: Unknown pass 'canonicalise': not a shardkit pass nor a registered MLIR pass. Did you mean 'canonicalize'?
// CLOSE: Did you mean 'export-gspmd', 'import-gspmd'?
// OPTION: shardkit-opt: error: Pass 'propagate' has no option 'keep-opn'; its options are: keep-open, strategy, conservative, debug-origins.
// VALUE: shardkit-opt: error: Option 'keep-open' of pass 'propagate' expects true or false, got 'yes'.
// MLIROPT: shardkit-opt: error: MLIR pass 'cse' rejected its options: <Pass-Options-Parser>: no such option no-such-option
// SYNTAX: shardkit-opt: error: Invalid pass pipeline at column 5: expected a pass name, found '{'.
// SYNTAX-NEXT: cse,{
// SYNTAX-NEXT: {{^}}      ^
// PAREN: shardkit-opt: error: Invalid pass pipeline at column 19: expected ')', found the end.
// MISSING: shardkit-opt: error: could not open input file '{{.*}}does-not-exist.mlir': No such file or directory
// UNKNOWN-NOT: Traceback
func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
