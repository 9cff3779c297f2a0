"""Every shell command in README.md and docs/*.md runs, as written, on files of the names it uses (made here: a
sharded module, a jax.export artifact, numpy inputs), and exits 0."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent

# The README's two commands: `./run test` is the command that runs this file, and tests/test_examples.py runs
# the demo `./run demo` starts.
COVERED_ELSEWHERE = {"./run demo", "./run test"}


def commands() -> list[tuple[str, str]]:
    """(``file:line``, command) for every command line in a code block of the docs."""
    found = []
    for path in DOCS:
        fenced = False
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not (fenced or line.startswith("    ")):
                continue
            text = re.sub(r"\s+#\s.*$", "", line.strip())
            if re.match(r"(shardkit-[a-z]+|\./run)\b", text):
                found.append((f"{path.relative_to(ROOT)}:{n}", text))
    return found


COMMANDS = commands()


def test_the_docs_hold_the_commands_this_file_knows():
    assert {c for _, c in COMMANDS if c.startswith("./run")} == COVERED_ELSEWHERE
    assert len(COMMANDS) >= 12


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The files the commands name: model.mlir and in.mlir (a step sharded over a ('data', 'model') mesh),
    model.jax (a jax.export artifact of f(x, w1, w2) over an ('x', 'y') mesh) with x.npy and w.npz."""
    where = tmp_path_factory.mktemp("docs")
    mesh = sk.make_mesh((4, 2), ("data", "model"))
    step = sk.jit(
        lambda x, w: jax.numpy.tanh(x @ w).sum(axis=1),
        in_shardings=(sk.NamedSharding(mesh, P("data")), sk.NamedSharding(mesh, P(None, "model"))),
    )
    text = step.lower(np.ones((16, 8), np.float32), np.ones((8, 4), np.float32)).as_text()
    (where / "model.mlir").write_text(text)
    (where / "in.mlir").write_text(text)
    jmesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    named = lambda *spec: jax.sharding.NamedSharding(jmesh, jax.P(*spec))  # noqa: E731
    f = jax.jit(
        lambda x, w1, w2: jax.numpy.tanh(x @ w1) @ w2,
        in_shardings=(named("x"), named(None, "y"), named("y")),
        out_shardings=named("x"),
    )
    shapes = [jax.ShapeDtypeStruct(s, np.float32) for s in ((16, 8), (8, 32), (32, 4))]
    (where / "model.jax").write_bytes(jax.export.export(f)(*shapes).serialize())
    rng = np.random.default_rng(0)
    np.save(where / "x.npy", rng.normal(size=(16, 8)).astype(np.float32))
    np.savez(
        where / "w.npz", w1=rng.normal(size=(8, 32)).astype(np.float32), w2=rng.normal(size=(32, 4)).astype(np.float32)
    )
    return where


@pytest.mark.parametrize("where, command", [c for c in COMMANDS if c[1] not in COVERED_ELSEWHERE])
def test_documented_command_runs(where, command, workdir):
    maxtext = "--maxtext" in command  # MaxText's own step: where MaxText is installed (the Python 3.13 lane)
    if maxtext and sk.maxtext.installed() is not None:
        pytest.skip(sk.maxtext.installed())
    argv = shlex.split(command.replace("examples/", f"{ROOT}/examples/"))
    argv[0] = str(BIN / argv[0])
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    run = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=900 if maxtext else 300, env=env)
    assert run.returncode == 0, f"{where}: {command}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
