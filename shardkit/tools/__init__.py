"""Command-line tools: ``shardkit-opt`` (run pass pipelines over .mlir files, mlir-opt style)."""
