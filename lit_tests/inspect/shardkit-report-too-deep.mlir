// RUN: %PYTHON -c "print('module attributes {a = ' + '[' * 100000 + ']' * 100000 + '} {}')" > %t.mlir
// RUN: not shardkit-report %t.mlir 2>&1 | FileCheck %s
// RUN: not shardkit-run %t.mlir --zero-inputs 2>&1 | FileCheck %s --check-prefix=LOADED

// Nesting deep enough to overflow MLIR's recursive parser (a segfault) is a located error in every tool that
// parses a user's text, not only shardkit-opt.

// CHECK: too-deep.mlir.tmp.mlir:1:1023: error: nesting deeper than 1000 levels; MLIR's recursive parser would overflow the stack
// LOADED: shardkit-run: error: {{.*}}too-deep.mlir.tmp.mlir:1:1023: error: nesting deeper than 1000 levels
