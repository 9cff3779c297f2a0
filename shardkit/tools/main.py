"""What every shardkit command-line tool shares: it is a class that tests drive in-process, with its
streams injectable and its errors one line (``shardkit-x: error: ...``) and exit code 1."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO


class ToolMain:
    """Parses ``argv`` with ``parser`` and keeps the streams; subclasses implement ``run() -> int``."""

    def __init__(
        self,
        parser: argparse.ArgumentParser,
        argv: Sequence[str] | None,
        *,
        stdin: TextIO | None,
        stdout: TextIO | None,
        stderr: TextIO | None,
    ):
        self.prog = parser.prog
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.args = parser.parse_args(argv)

    def error(self, message: str) -> int:
        self.stderr.write(f"{self.prog}: error: {message}\n")
        return 1

    def does_not_fit(self, report: Any, as_json: bool = False) -> int:
        """Prints the memory report of a program XLA refused for want of memory (``sk.OutOfMemoryError``) and
        says so in one line."""
        self.stdout.write(report.to_json() + "\n" if as_json else str(report))
        return self.error(f"the program does not fit {report.target}: {report.error}")
