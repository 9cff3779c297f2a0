"""The fuzz campaign (``campaign.py``), bounded for ``./run test``: about a minute by default, longer with
``SHARDKIT_FUZZ_SECONDS``; ``SHARDKIT_FUZZ_SEED`` replays a run (each run draws a new seed and prints it).

It runs in a child interpreter, so an input that crashes the process fails this test with that input named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_fuzz_campaign_finds_no_crash_no_unclean_error_no_wrong_result(tmp_path):
    seconds = os.environ.get("SHARDKIT_FUZZ_SECONDS", "60")
    marker = tmp_path / "case"
    command = [sys.executable, "-m", "tests.fuzz.campaign", "--seconds", seconds, "--marker", str(marker)]
    if "SHARDKIT_FUZZ_SEED" in os.environ:
        command += ["--seed", os.environ["SHARDKIT_FUZZ_SEED"]]
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=float(seconds) * 3 + 300)
    if proc.returncode < 0:
        raise AssertionError(f"signal {-proc.returncode} while running {marker.read_text()}\n{proc.stderr[-3000:]}")
    summary = json.loads(proc.stdout)
    print(json.dumps({k: summary[k] for k in ("seed", "cases", "per_target", "outcomes")}))
    assert not summary["findings"], "\n\n".join(summary["findings"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert all(n > 0 for n in summary["per_target"].values()), summary["per_target"]
