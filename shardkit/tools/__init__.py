"""Command-line tools: ``shardkit-opt`` (pass pipelines over .mlir files, mlir-opt style) and
``shardkit-lower`` (a Python function with shardings to StableHLO)."""
