"""Each example runs as a user would run it (a fresh process) and prints what it promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu", **env},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_quickstart():
    out = run_example("quickstart.py")
    assert 'sdy.mesh @mesh = <["x"=4, "y"=2]>' in out
    assert out.count('#sdy.sharding<@mesh, [{"x"}, {"y"}]>') == 2
    assert "device 7: rows 6:8, cols 1:2 -> [26.0, 30.0]" in out


def test_inspect_lowering():
    out = run_example("inspect_lowering.py")
    assert 'sdy.sharding_constraint %0 <@mesh, [{"x"}, {"y"}]>' in out
    assert 'custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[4,2]<=[8]}"}' in out
    assert "both partitioners compute the same result" in out


def test_mlp_2d():
    out = run_example("mlp_2d.py", MLP_STEPS="4")
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("step")]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert "w1: shape (16, 32), params P(None, 'y'), grads P(None, 'y'), shard (16, 16)" in out


def test_gpt_train_step_prints_its_communication():
    out = run_example("gpt_train_step.py")
    assert "XLA's partitioned program: 16 collectives on 8 devices (data=4 model=2)" in out
    assert "Shardy's plan (before XLA):" in out
    assert re.search(r"lower \+ compile \d+ ms; XLA report [\d.]+ ms \([\d.]+% of it\); Shardy plan", out)


def test_demo_runs_the_tour_example():
    out = run_example("demo.py")
    assert 'sdy.mesh @mesh = <["x"=4, "y"=2]>' in out


def test_foreign_module():
    out = run_example("foreign_module.py")
    assert "inputs [P('x',), P(None, 'y'), P('y',)] output P('x',)" in out
    assert "shardkit == jax: numbers True, sharding True (P('x',))" in out
    assert "edited output sharding P('x', 'y'), same numbers True" in out
    assert "jax runs shardkit's artifact: same numbers True" in out


def test_transformer_trains_with_jax_s_losses():
    out = run_example("transformer.py", STEPS="2")
    assert "losses equal to jax.jit's: True; decreasing: True" in out
    assert out.count("  step 1: loss") == 2  # jax.debug.print from inside both compiled steps


def test_an_ecosystem_example_prints_jax_s_losses():
    """Every ecosystem example's program is compared in-process by tests/ecosystem/test_programs.py; one runs here
    as a user runs it."""
    out = run_example("optax_zero.py")
    assert "losses equal to jax's: True; parameters equal: True" in out


def test_maxtext_decoder_trains_as_jax_does():
    """MaxText's decoder at a small size on 8 CPU devices (fsdp 4 x tensor 2, its logical rules): shardkit's losses
    are jax.jit's, step by step."""
    out = run_example("maxtext_decoder.py")
    rows = [line.split() for line in out.splitlines() if line.startswith("step")]
    assert len(rows) == 3
    for row in rows:
        ours, theirs = float(row[3]), float(row[5])
        assert abs(ours - theirs) < 1e-4 * abs(theirs), row
    assert float(rows[-1][3]) < float(rows[0][3])
