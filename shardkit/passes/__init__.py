"""Compiler passes over shardkit's StableHLO modules: the Pass class, the registry and plugins, pipeline
text, jaxlib's MLIR passes, the PassManager, and the built-in passes (``shardkit-opt --help`` lists them).

The contract for the rest of shardkit: ``run_pipeline(module, "propagate,export-gspmd")`` transforms an
``ir.Module`` in place, and a failure raises ``PassError`` (a ValueError) naming the pass.
"""

from shardkit.dialects.diagnostics import Diagnostic
from shardkit.passes.base import Pass
from shardkit.passes.diagnostics import PassError
from shardkit.passes.manager import IRPrinting, PassManager, resolve, run_pipeline
from shardkit.passes.mlir_pipeline import MlirPass
from shardkit.passes.pipeline import PassSpec, PipelineSyntaxError, parse_pipeline, print_pipeline
from shardkit.passes.registry import (
    PluginError,
    UnknownPassError,
    describe_passes,
    find_plugins,
    get_pass,
    pass_names,
    register_pass,
    unregister_pass,
)

__all__ = [
    "Diagnostic",
    "IRPrinting",
    "MlirPass",
    "Pass",
    "PassError",
    "PassManager",
    "PassSpec",
    "PipelineSyntaxError",
    "PluginError",
    "UnknownPassError",
    "describe_passes",
    "find_plugins",
    "get_pass",
    "parse_pipeline",
    "pass_names",
    "print_pipeline",
    "register_pass",
    "resolve",
    "run_pipeline",
    "unregister_pass",
]
