"""The fuzz campaigns, bounded for ``./run test``: shardkit-opt and the pipeline parser (``opt_fuzz.py``), and
the library's model, parsers, Arrays, executor and cache (``campaign.py``). Each runs for a fixed time
(``SHARDKIT_FUZZ_SECONDS``, default 30 each) from a fixed seed, so ``./run test`` (and CI) is repeatable;
``SHARDKIT_FUZZ_SEED=N`` replays another run and ``SHARDKIT_FUZZ_SEED=random`` draws a new seed (printed). Both
tests carry the ``fuzz`` marker: ``-m fuzz`` runs them alone, ``-m "not fuzz"`` leaves them out.

The cases run in a child interpreter, so a case that kills the process with a signal fails its test with the
case as the reproducer instead of ending the test run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECONDS = os.environ.get("SHARDKIT_FUZZ_SECONDS", "30")
SEED = os.environ.get("SHARDKIT_FUZZ_SEED", "0")


def _seed() -> str:
    return str(random.SystemRandom().randrange(2**32)) if SEED == "random" else SEED


@pytest.mark.fuzz
def test_fuzz_shardkit_opt(tmp_path):
    log = tmp_path / "cases.jsonl"
    script = Path(__file__).with_name("opt_fuzz.py")
    run = subprocess.run(
        [sys.executable, str(script), "--seconds", SECONDS, "--log", str(log), "--seed", _seed()],
        capture_output=True,
        text=True,
        timeout=float(SECONDS) + 300,
        check=False,
    )
    last = log.read_text().splitlines()[-1] if log.exists() and log.read_text() else "(no case)"
    if run.returncode < 0:
        raise AssertionError(
            f"a case killed the process with {signal.Signals(-run.returncode).name}: {last}\n{run.stderr[-3000:]}"
        )
    assert run.returncode == 0, f"{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    counts = json.loads(run.stdout.splitlines()[-1])
    assert counts["opt"] > 0 and counts["pipeline"] > 0, counts


@pytest.mark.fuzz
def test_fuzz_campaign_finds_no_crash_no_unclean_error_no_wrong_result(tmp_path):
    marker = tmp_path / "case"
    command = [sys.executable, "-m", "tests.fuzz.campaign", "--seconds", SECONDS, "--marker", str(marker)]
    command += ["--seed", _seed()]
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=float(SECONDS) * 3 + 300)
    if proc.returncode < 0:
        raise AssertionError(f"signal {-proc.returncode} while running {marker.read_text()}\n{proc.stderr[-3000:]}")
    summary = json.loads(proc.stdout)
    print(json.dumps({k: summary[k] for k in ("seed", "cases", "per_target", "outcomes")}))
    assert not summary["findings"], "\n\n".join(summary["findings"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert all(n > 0 for n in summary["per_target"].values()), summary["per_target"]
