"""lit runs the tools of the checkout it belongs to: a second checkout whose shardkit-opt is broken fails its lit
tests, even where the first checkout's tools are the ones installed (console scripts on PATH, an editable install)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIT = Path(sys.executable).parent / "lit"
TEST = Path("lit_tests/passes/dedup-meshes.mlir")  # one RUN line of shardkit-opt


def lit(checkout: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # this checkout's tools first on PATH
    env["PATH"] = os.pathsep.join([str(LIT.parent), env.get("PATH", "")])
    return subprocess.run(
        [str(LIT), "-v", str(checkout / TEST)], capture_output=True, text=True, timeout=300, env=env, cwd=checkout
    )


@pytest.mark.skipif(not LIT.exists(), reason=f"no lit beside {sys.executable}")
def test_lit_runs_the_checkouts_own_tools(tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(ROOT / "shardkit", clone / "shardkit", ignore=shutil.ignore_patterns("__pycache__"))
    (clone / TEST).parent.mkdir(parents=True)
    shutil.copy(ROOT / "lit_tests" / "lit.cfg.py", clone / "lit_tests")
    shutil.copy(ROOT / TEST, clone / TEST)
    whole = lit(clone)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    opt = clone / "shardkit" / "tools" / "opt.py"
    head = "from __future__ import annotations\n"
    assert head in opt.read_text()
    opt.write_text(opt.read_text().replace(head, head + 'raise ImportError("this clone\'s shardkit-opt is broken")\n'))
    failed = lit(clone)
    assert failed.returncode == 1 and "this clone's shardkit-opt is broken" in failed.stdout, failed.stdout
