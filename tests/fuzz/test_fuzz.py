"""The fuzz campaigns, bounded for ``./run test``: shardkit-opt and the pipeline parser (``opt_fuzz.py``), and
the library's model, parsers, Arrays, executor and cache (``campaign.py``). Each runs for a fixed time
(``SHARDKIT_FUZZ_SECONDS``, default 30 each); ``SHARDKIT_FUZZ_SEED`` replays a campaign run (each run draws a
new seed and prints it).

The cases run in a child interpreter, so a case that kills the process with a signal fails its test with the
case as the reproducer instead of ending the test run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECONDS = os.environ.get("SHARDKIT_FUZZ_SECONDS", "30")


def test_fuzz_shardkit_opt(tmp_path):
    log = tmp_path / "cases.jsonl"
    script = Path(__file__).with_name("opt_fuzz.py")
    run = subprocess.run(
        [sys.executable, str(script), "--seconds", SECONDS, "--log", str(log)],
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


def test_fuzz_campaign_finds_no_crash_no_unclean_error_no_wrong_result(tmp_path):
    marker = tmp_path / "case"
    command = [sys.executable, "-m", "tests.fuzz.campaign", "--seconds", SECONDS, "--marker", str(marker)]
    if "SHARDKIT_FUZZ_SEED" in os.environ:
        command += ["--seed", os.environ["SHARDKIT_FUZZ_SEED"]]
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=float(SECONDS) * 3 + 300)
    if proc.returncode < 0:
        raise AssertionError(f"signal {-proc.returncode} while running {marker.read_text()}\n{proc.stderr[-3000:]}")
    summary = json.loads(proc.stdout)
    print(json.dumps({k: summary[k] for k in ("seed", "cases", "per_target", "outcomes")}))
    assert not summary["findings"], "\n\n".join(summary["findings"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert all(n > 0 for n in summary["per_target"].values()), summary["per_target"]
