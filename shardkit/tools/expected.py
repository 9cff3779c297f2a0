"""MLIR's ``-verify-diagnostics`` protocol: comments in the input say which diagnostics must appear.

This follows mlir-opt's ``SourceMgrDiagnosticVerifierHandler`` (mlir/lib/IR/Diagnostics.cpp) rule for rule:

- A directive is ``expected-(error|warning|remark|note)(-re)? (@+N|@-N|@above|@below|@unknown)? {{text}}``,
  one per line: the text runs from the first ``{{`` to the ``}}`` that ends the line.
- It expects a diagnostic on its own line, ``@+N``/``@-N`` lines away, ``@above`` on the closest line above that
  holds no directive, ``@below`` on the closest such line below, or ``@unknown`` at no location at all.
- ``text`` must be contained in the message; with ``-re``, ``{{regex}}`` blocks inside it are regular
  expressions (Python's ``re`` here, POSIX ERE in MLIR; the common subset behaves alike).
- A diagnostic is taken by the first directive of its severity on its line whose text it matches. A directive
  is not used up: it takes every identical diagnostic on its line, so N copies of a message need one
  directive, and a second identical directive is reported as not produced.
- Notes attached to a diagnostic are checked like diagnostics, each at its own location.
- A diagnostic no directive takes is reported as ``unexpected <severity>: <message>`` at its location; one whose
  text matches a directive of another severity on its line as ``'<severity>' diagnostic emitted when expecting
  a '<severity>'`` at the directive; a directive nothing took as ``expected <severity> "<text>" was not
  produced`` at the directive (with ``only_expected``, unexpected diagnostics are ignored).
- An ``@unknown`` directive has no place in the file for MLIR (``computeExpectedDiags`` drops its ``fileLoc``), so
  reports about it, and about a diagnostic at no location, are at no place: mlir-opt prints them as
  ``<unknown>:0: error: ...`` (``SourceMgr::GetMessage`` of an invalid location), and so does shardkit-opt.
"""

from __future__ import annotations

import dataclasses
import re

from shardkit.dialects.diagnostics import Diagnostic

_DIRECTIVE = re.compile(
    r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}$"
)


@dataclasses.dataclass
class Expected:
    """One directive: the diagnostic it expects and where the directive itself is (for reports)."""

    severity: str
    line: int  # where the diagnostic must be; 0 for @unknown
    text: str
    at: int  # line of the directive
    col: int  # column of ``expected-`` on that line
    pattern: re.Pattern[str] | None = None
    matched: bool = False

    def match(self, message: str) -> bool:
        return self.pattern.search(message) is not None if self.pattern is not None else self.text in message

    def error(self, message: str, file: str) -> Diagnostic:
        """An error about this directive, at it; an ``@unknown`` directive has no place (MLIR drops it)."""
        return Diagnostic("error", message, file, self.at, self.col) if self.line else Diagnostic("error", message)


@dataclasses.dataclass(frozen=True)
class Problem:
    """A verification failure, reported as an error at ``where``; ``span`` columns are underlined."""

    where: Diagnostic
    span: int = 0


def _regex(text: str) -> str:
    """The ``-re`` text as one regular expression: literal parts escaped, ``{{...}}`` blocks as groups."""
    out, rest = [], text
    while rest:
        start = rest.find("{{")
        if start < 0:
            out.append(re.escape(rest))
            break
        out.append(re.escape(rest[:start]))
        rest = rest[start + 2 :]
        end = rest.find("}}")
        if end < 0:
            raise ValueError("found start of regex with no end '}}'")
        block = rest[:end]
        try:
            re.compile(block)
        except re.error as e:
            raise ValueError(f"invalid regex: {e}") from None
        out.append(f"({block})")
        rest = rest[end + 2 :]
    return "".join(out)


class Verifier:
    """The directives of one buffer (a file, or one ``// -----`` chunk of it) and what the run produced.

    Examples:
        >>> v = Verifier("x = 1 // expected-error {{bad}}\\n", "in.mlir")
        >>> v.process(Diagnostic("error", "very bad", "in.mlir", 1, 5))
        >>> v.finish()
        []
    """

    def __init__(self, text: str, file: str, first_line: int = 1, *, only_expected: bool = False):
        self.file = file
        self.only_expected = only_expected
        self.problems: list[Problem] = []
        self.expected: list[Expected] = []
        self.unknown: list[Expected] = []
        self._scan(text, first_line)

    def _scan(self, text: str, first_line: int) -> None:
        lines = text.split("\n")
        last_plain = first_line  # the last line that holds no directive (MLIR starts at the first line)
        below: list[Expected] = []
        for number, line in enumerate(lines, start=first_line):
            match = _DIRECTIVE.search(line.rstrip())
            if match is None:
                for e in below:
                    e.line = number
                below.clear()
                last_plain = number
                continue
            severity, is_re, _, where, text_ = match.groups()
            e = Expected(severity, number, text_, number, match.start() + 1)
            if is_re:
                try:
                    e.pattern = re.compile(_regex(text_))
                except ValueError as error:
                    self._report(Diagnostic("error", str(error), self.file, number, e.col), len(text_))
                    continue
            if where == "unknown":
                e.line = 0
                self.unknown.append(e)
                continue
            if where == "above":
                e.line = last_plain
            elif where == "below":
                e.line = first_line + len(lines) - 1  # if no plain line follows, as MLIR does
                below.append(e)
            elif where is not None:
                e.line = number + int(where)
            self.expected.append(e)

    def _report(self, where: Diagnostic, span: int = 0) -> None:
        self.problems.append(Problem(where, span))

    def process(self, diag: Diagnostic) -> None:
        """Checks a produced diagnostic and each of its notes."""
        self._process_one(diag)
        for note in diag.notes:
            self._process_one(note)

    def _process_one(self, diag: Diagnostic) -> None:
        if diag.located:
            candidates = [e for e in self.expected if e.line == diag.line] if diag.file == self.file else []
        else:
            candidates = self.unknown
        near_miss = None
        for e in candidates:
            if e.match(diag.message):
                if e.severity == diag.severity:
                    e.matched = True
                    return
                near_miss = e
        if self.only_expected:
            return
        if near_miss is not None:
            message = f"'{diag.severity}' diagnostic emitted when expecting a '{near_miss.severity}'"
            self._report(near_miss.error(message, self.file))
        else:  # at the diagnostic's place; one at none at no place, as MLIR's handler prints an unknown location
            self._report(
                dataclasses.replace(
                    diag,
                    severity="error",
                    message=f"unexpected {diag.severity}: {diag.message}",
                    file=diag.file if diag.located else "",
                    notes=(),
                )
            )

    def finish(self) -> list[Problem]:
        """Every problem: those met while processing, then each directive that nothing took."""
        for e in [*self.expected, *self.unknown]:
            if not e.matched:
                message = f'expected {e.severity} "{e.text}" was not produced'
                self._report(e.error(message, self.file), len(e.text) if e.line else 0)
        problems, self.problems = self.problems, []
        return problems
