"""Diagnostics located at ops, MLIR style (``file:line:col: error: 'func.func' op arg 0 - ...``).

shardkit passes run in Python, outside MLIR's diagnostic engine, so they report findings here: a pass calls
``self.emit_error(op, message)``, the PassManager collects every finding of the pass and then raises one
``PassError`` holding them all. C++ passes and the parser report through ``ir.MLIRError``, whose
diagnostics are converted to the same ``Diagnostic`` so a tool prints and checks both alike.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re
from collections.abc import Iterator, Sequence

from jaxlib.mlir import ir

_FILE_LINE_COL = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """One finding: severity, message and where (``file``/``line``/``col``; empty/0 when unknown)."""

    severity: str
    message: str
    file: str = ""
    line: int = 0
    col: int = 0
    notes: tuple[str, ...] = ()

    @classmethod
    def at(cls, where: ir.Location | ir.Operation | ir.OpView, message: str, severity: str = "error") -> Diagnostic:
        """A diagnostic at an op (the message is prefixed with ``'<op>' op`` as MLIR's emitError does) or a location."""
        if isinstance(where, ir.Location):
            return cls(severity, message, *_file_line_col(where))
        op = where.operation
        return cls(severity, f"'{op.name}' op {message}", *_file_line_col(op.location))

    @classmethod
    def from_mlir(cls, diag: ir.DiagnosticInfo) -> Diagnostic:
        severity = diag.severity.name.lower()
        notes = tuple(n.message.split("\n", 1)[0] for n in diag.notes)
        return cls(severity, diag.message, *_file_line_col(diag.location), notes=notes)

    def renamed(self, file: str) -> Diagnostic:
        """The same diagnostic for another buffer name (the parser calls every string buffer ``-``)."""
        return dataclasses.replace(self, file=file) if self.file == "-" else self

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else (self.file or "<unknown>")
        return f"{where}: {self.severity}: {self.message}"


def _file_line_col(location: ir.Location) -> tuple[str, int, int]:
    # Locations print as loc("file":3:5), possibly wrapped (callsite, fused, named); the first
    # file position inside is the one MLIR itself reports.
    match = _FILE_LINE_COL.search(str(location))
    if match is None:
        return "", 0, 0
    return match.group(1), int(match.group(2)), int(match.group(3))


def clause(error: Exception) -> str:
    """A Python error sentence as part of a diagnostic: no final period, lowercase unless an acronym leads."""
    text = str(error).rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def from_mlir_error(error: ir.MLIRError) -> list[Diagnostic]:
    """The diagnostics of a parser, verifier or C++ pass failure; the message itself when there are none."""
    diags = [Diagnostic.from_mlir(d) for d in error.error_diagnostics]
    return diags or [Diagnostic("error", str(error).split("\n", 1)[0])]


class PassError(ValueError):
    """A pass failed; ``pass_name`` names it and ``diagnostics`` holds its findings, located at ops."""

    def __init__(self, pass_name: str, diagnostics: Sequence[Diagnostic], what: str = "failed"):
        self.pass_name = pass_name
        self.diagnostics = tuple(diagnostics)
        lines = "".join(f"\n  {d}" for d in self.diagnostics)
        super().__init__(f"Pass '{pass_name}' {what}:{lines}")


_collector: contextvars.ContextVar[list[Diagnostic] | None] = contextvars.ContextVar("shardkit_diags", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[Diagnostic]]:
    """Collects what passes emit inside the block (the PassManager wraps every pass in one)."""
    found: list[Diagnostic] = []
    token = _collector.set(found)
    try:
        yield found
    finally:
        _collector.reset(token)


def emit(diagnostic: Diagnostic, pass_name: str) -> None:
    """Records a diagnostic; outside a PassManager an error raises PassError at once."""
    found = _collector.get()
    if found is not None:
        found.append(diagnostic)
    elif diagnostic.severity == "error":
        raise PassError(pass_name, [diagnostic])
