"""Running a Python snippet in a fresh interpreter: for behaviour that needs a new process (start-up, the
persistent cache across processes) and for inputs that used to crash the interpreter, where a crash must fail
one test rather than end the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120):
    """The finished ``python -c code args...`` (text output captured), run from the repository root on the CPU
    backend; ``env`` adds variables to this process's environment."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})},
    )
