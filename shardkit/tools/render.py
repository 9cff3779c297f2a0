"""Diagnostics printed as mlir-opt prints them (llvm::SourceMgr): the location, then the source line and a caret.

::

    in.mlir:4:10: error: use of undeclared SSA value name
      return %b : tensor<8xf32>
             ^

Lines come from the input text; a location in another file (debug info of a lowered Python function, say)
shows that file's line when it can be read, as MLIR's SourceMgr loads it. Notes follow their diagnostic and
show their line only when it differs from the previous location. A diagnostic at no place at all is printed
as SourceMgr prints an invalid location, ``<unknown>:0: error: message``; one that names its file but no line
as ``in.mlir: error: message``.
"""

from __future__ import annotations

import functools
import os

from shardkit.dialects.diagnostics import Diagnostic

_TAB_STOP = 8


class SourceMgr:
    """The buffers diagnostics point into, by name."""

    def __init__(self, buffers: dict[str, str] | None = None):
        self.buffers = dict(buffers or {})

    def line(self, file: str, number: int) -> str | None:
        """Line ``number`` (1-based) of ``file`` without its line ending, or None when there is none."""
        text = self.buffers.get(file)
        lines = _split(text) if text is not None else _file_lines(file)
        if not 0 < number <= len(lines):
            return None
        return lines[number - 1]

    def render(self, diag: Diagnostic, *, span: int = 0) -> str:
        """The diagnostic and its notes, each with its source line and caret."""
        out = [self._message(diag, span=span)]
        previous = (diag.file, diag.line, diag.col)
        for note in diag.notes:
            here = (note.file, note.line, note.col)
            out.append(self._message(note, show_source=here != previous))
            previous = here
        return "".join(out)

    def _message(self, diag: Diagnostic, *, span: int = 0, show_source: bool = True) -> str:
        if not diag.located:
            return f"{diag.file or '<unknown>:0'}: {diag.severity}: {diag.message}\n"
        head = f"{diag.file}:{diag.line}:{diag.col}: {diag.severity}: {diag.message}\n"
        source = self.line(diag.file, diag.line) if show_source and diag.col > 0 else None
        if source is None or diag.col - 1 > len(source):
            return head
        if any(ord(c) >= 0x80 for c in source):  # columns would be wrong: the line alone, as LLVM does
            return head + _expand_tabs(source) + "\n"
        return head + _expand_tabs(source) + "\n" + _caret_line(source, diag.col - 1, span) + "\n"


def _split(text: str) -> list[str]:
    return [line.rstrip("\r") for line in text.split("\n")]


@functools.lru_cache(maxsize=16)
def _file_lines(file: str) -> list[str]:
    if not os.path.isfile(file):  # a location may name anything: a missing file, a directory, /dev/zero
        return []
    try:
        with open(file, encoding="utf-8", errors="replace") as f:
            return _split(f.read())
    except (OSError, ValueError):
        return []


def _expand_tabs(line: str) -> str:
    return line.expandtabs(_TAB_STOP)


def _caret_line(source: str, col: int, span: int) -> str:
    """``^`` under column ``col`` (0-based), ``~`` under the next ``span - 1`` columns, tabs expanded like the line."""
    marks = [" "] * (len(source) + 1)
    for i in range(col, min(col + span, len(marks))):
        marks[i] = "~"
    marks[min(col, len(source))] = "^"
    caret = "".join(marks).rstrip(" ")
    out, column = [], 0
    for i, mark in enumerate(caret):
        if i >= len(source) or source[i] != "\t":
            out.append(mark)
            column += 1
            continue
        while True:  # a tab in the source widens its mark to the next tab stop
            out.append(mark)
            column += 1
            if column % _TAB_STOP == 0:
                break
    return "".join(out)
