"""Diagnostics located at ops, MLIR style (``file:line:col: error: 'func.func' op arg 0 - ...``): what parsing,
loading, passes and the tools all report, so it sits below them.

C++ passes and the parser report errors through ``ir.MLIRError`` and warnings, remarks and notes through the
context's diagnostic handlers; shardkit's passes and checks report from Python. Both become the same
``Diagnostic`` so a tool prints and checks them alike (``passes.diagnostics`` collects a pass's findings).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator

from jaxlib.mlir import ir

from shardkit.dialects import nesting

_FILE_LINE_COL = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
SEVERITIES = ("error", "warning", "remark", "note")


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One finding: severity, message, where (``file``/``line``/``col``; empty/0 when unknown) and its notes."""

    severity: str
    message: str
    file: str = ""
    line: int = 0
    col: int = 0
    notes: tuple[Diagnostic, ...] = ()

    @classmethod
    def at(cls, where: ir.Location | ir.Operation | ir.OpView, message: str, severity: str = "error") -> Diagnostic:
        """A diagnostic at an op (the message is prefixed with ``'<op>' op`` as MLIR's emitError does) or a location.

        An op without a file location (``loc(unknown)``, a bare name) is reported at its closest ancestor
        that has one, so the finding still points into the source.
        """
        if isinstance(where, ir.Location):
            return cls(severity, message, *_file_line_col(where))
        op = where.operation
        return cls(severity, f"'{op.name}' op {message}", *op_position(op))

    @classmethod
    def from_mlir(cls, diag: ir.DiagnosticInfo | ir.Diagnostic) -> Diagnostic:
        notes = tuple(cls.from_mlir(n) for n in diag.notes)
        return cls(diag.severity.name.lower(), diag.message, *_file_line_col(diag.location), notes=notes)

    @property
    def located(self) -> bool:
        return self.line > 0

    def renamed(self, file: str) -> Diagnostic:
        """The same diagnostic for another buffer name (the parser calls every string buffer ``-``); one at no
        location (an op at ``loc(unknown)``) is placed in that buffer, so it still names its input."""
        notes = tuple(n.renamed(file) for n in self.notes)
        return dataclasses.replace(self, file=file if self.file in ("-", "") else self.file, notes=notes)

    def __str__(self) -> str:
        return f"{position(self.file, self.line, self.col)}: {self.severity}: {self.message}"


def position(file: str, line: int, col: int) -> str:
    """``file:line:col`` as diagnostics print a place; the file alone when the line is unknown (0)."""
    return f"{file}:{line}:{col}" if line else (file or "<unknown>")


def _file_line_col(location: ir.Location) -> tuple[str, int, int]:
    # Locations print as loc("file":3:5), possibly wrapped (callsite, fused, named); the first
    # file position inside is the one MLIR itself reports (FileLineColLoc found first in a walk).
    match = _FILE_LINE_COL.search(str(location))
    if match is None:
        return "", 0, 0
    return match.group(1), int(match.group(2)), int(match.group(3))


def op_position(op: ir.Operation) -> tuple[str, int, int]:
    """``(file, line, col)`` of ``op``, or of its closest ancestor with a file location; empty when none has one.

    The module MLIR's parser makes around top-level ops (an implicit module) is at line 0 of its file; a finding
    there is placed at 1:1, where the module's text starts, as mlir-opt places a failure on a module.
    """
    current: ir.Operation | None = op
    first = None
    while current is not None:
        position = _file_line_col(current.location)
        if position[1]:
            return position
        first = first or (position if position[0] else None)
        parent = current.parent
        current = parent.operation if parent is not None else None
    if first is not None and first[0] not in ("", "-"):
        return first[0], 1, 1
    return first or ("", 0, 0)  # the parser's name for a string ("-") is renamed by the tools, with its line


def nesting_error(text: str, name: str, first_line: int = 1) -> Diagnostic | None:
    """The error to report instead of parsing ``text`` when it is nested deep enough to crash MLIR's parser
    (``dialects.nesting``), located in ``name`` (``first_line``: the file line ``text`` starts on), or None."""
    deep = nesting.too_deep(text, first_line)
    return None if deep is None else Diagnostic("error", nesting.MESSAGE, name, *deep)


@contextlib.contextmanager
def captured(context: ir.Context) -> Iterator[list[Diagnostic]]:
    """The warnings, remarks and errors C++ code emits into ``context`` inside the block and no one else takes
    (MLIR drops them when no handler does): the parser's and the passes' findings beside their ``MLIRError``."""
    found: list[Diagnostic] = []

    def take(diag: ir.Diagnostic) -> bool:
        found.append(Diagnostic.from_mlir(diag))
        return True

    handler = context.attach_diagnostic_handler(take)
    try:
        yield found
    finally:
        handler.detach()


def clause(error: Exception) -> str:
    """A Python error sentence as part of a diagnostic: no final period, lowercase unless an acronym leads."""
    text = str(error).rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def from_mlir_error(error: ir.MLIRError) -> list[Diagnostic]:
    """The diagnostics of a parser, verifier or C++ pass failure; the message itself when there are none."""
    diags = [Diagnostic.from_mlir(d) for d in error.error_diagnostics]
    return diags or [Diagnostic("error", str(error).split("\n", 1)[0])]
