"""Running Python in a fresh interpreter: for behaviour that needs a new process (start-up, the persistent cache
across processes) and for inputs that used to crash the interpreter, where a crash must fail one test rather than
end the run (``run_python`` for one snippet, ``check_outcomes`` for many in one interpreter, each named)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


_CHILD = """
import json, os, sys, traceback
import numpy as np, jax, shardkit as sk
from shardkit import P, NamedSharding as NS
from shardkit.dialects import context, mhlo, sdy as sdy_forms
mesh = sk.make_mesh((4, 2), ("x", "y")); devs = sk.devices()
def fresh():
    return sk.device_put(np.arange(32, dtype=np.float32).reshape(8, 4), NS(mesh, P("x", "y")))
for name, code in json.loads(sys.stdin.read()).items():
    print(json.dumps({"start": name}), flush=True)
    scope = dict(globals())
    try:
        exec(code, scope)
        outcome = "ok: " + repr(scope.get("out"))
    except BaseException as e:  # the outcome is the exception's type and message
        outcome = f"{type(e).__name__}: {e}"
    print(json.dumps({"name": name, "outcome": outcome}), flush=True)
"""


def run_in_child(cases: dict[str, str]) -> dict[str, str]:
    """name -> "ok: <repr(out)>" or "<ExceptionType>: <message>" for each snippet, run in order in one fresh
    interpreter with 8 CPU devices; a case that kills the interpreter fails the test, named."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], input=json.dumps(cases), capture_output=True, text=True, env=env, timeout=300
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    outcomes = {r["name"]: r["outcome"] for r in records if "name" in r}
    started = [r["start"] for r in records if "start" in r]
    if proc.returncode != 0:
        pytest.fail(
            f"case {started[-1] if started else '?'} crashed the interpreter ({proc.returncode}):\n{proc.stderr}"
        )
    return outcomes


def check_outcomes(cases: dict[str, tuple[str, str]]) -> None:
    """Runs ``{name: (code, expected)}`` in a child; ``expected`` is a regex over "<Type>: <message>" or "ok: ..."."""
    outcomes = run_in_child({name: code for name, (code, _) in cases.items()})
    wrong = {
        name: outcomes.get(name)
        for name, (_, expected) in cases.items()
        if not re.match(expected, outcomes.get(name, ""), re.S)
    }
    assert not wrong, json.dumps(wrong, indent=1)
