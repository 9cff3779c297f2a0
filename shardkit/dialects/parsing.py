"""Parsing what a user gives (MLIR text or bytecode, XLA's HLO text) into a module, the one way shardkit-opt,
shardkit-report, ``sk.load`` and the isolation worker all do it.

A module read from a file is parsed by MLIR from that file (``Module.parseFile``), so its locations name the file
(``loc("step.mlir":44:10)``), as mlir-opt's do, and every report that reads a line from a location (the
communication report, the per-value table, explanations, the page) names ``step.mlir:44``. MLIR names a string
buffer ``-``; text that is not a whole file (stdin, a ``--split-input-file`` chunk, a string) keeps that name in
its locations, and its diagnostics are renamed here. Text nested deeply enough to overflow MLIR's recursive parser
is refused first (``dialects.nesting``).
"""

from __future__ import annotations

import dataclasses
import os

from jaxlib.mlir import ir

from shardkit.dialects import diagnostics, hlo_text
from shardkit.dialects.diagnostics import Diagnostic


@dataclasses.dataclass(frozen=True)
class Input:
    """What to parse: ``data`` (MLIR text or bytecode) named ``name`` in diagnostics; ``first_line``, the file line
    a chunk of text starts on; ``path``, the regular file ``data`` was read whole from (MLIR then reads it
    itself, naming its locations by it)."""

    data: str | bytes  # MLIR text or bytecode, or XLA's HLO text
    name: str
    first_line: int = 1
    path: str | None = None


def parse(source: Input, ctx: ir.Context) -> tuple[ir.Module | None, list[Diagnostic]]:
    """The module (None when it does not parse or verify) and every diagnostic parsing reported, named
    ``source.name``."""
    if isinstance(source.data, str):
        deep = diagnostics.nesting_error(source.data, source.name, source.first_line)
        if deep is not None:
            return None, [deep]
        if hlo_text.is_hlo_text(source.data):
            try:
                return hlo_text.to_stablehlo(source.data, ctx, source.name), []
            except hlo_text.HloTextError as e:
                line = e.line and e.line + source.first_line - 1
                return None, [Diagnostic("error", e.reason, source.name, line, e.col)]
    try:
        with diagnostics.captured(ctx) as found:
            if _whole_file(source):
                module = ir.Module.parseFile(source.path, ctx)
            else:  # blank lines in front keep the parser's line numbers equal to the file's
                padding = "\n" * (source.first_line - 1) if isinstance(source.data, str) else ""
                module = ir.Module.parse(padding + source.data if padding else source.data, ctx)
    except ir.MLIRError as e:
        return None, [d.renamed(source.name) for d in [*found, *diagnostics.from_mlir_error(e)]]
    except MemoryError:
        return None, [Diagnostic("error", "out of memory while parsing this input", source.name)]
    return module, [d.renamed(source.name) for d in found]


def _whole_file(source: Input) -> bool:
    """Whether MLIR can read ``source`` from its file: a regular file (not a pipe, which was read already) whose
    size is still that of the data, never ``-`` (which MLIR would read as stdin)."""
    if source.path is None or source.path == "-" or source.first_line != 1:
        return False
    size = len(source.data.encode("utf-8")) if isinstance(source.data, str) else len(source.data)
    try:
        return os.path.isfile(source.path) and os.path.getsize(source.path) == size
    except OSError:
        return False
