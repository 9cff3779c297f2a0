"""MaxText's own train step (MaxText 0.2.5 from PyPI, its code unchanged) through shardkit.

On every lane: the program kept in ``tests/data/maxtext/maxtext-tiny-flash.*`` (MaxText's step with its default TPU
attention, the Pallas splash kernel inside a ``shard_map`` of each scanned layer; how it was made is in its
``.json``) is explained and drawn. Where MaxText is installed (the Python 3.13 lane, extra ``shardkit[maxtext]``)
the same step is built from MaxText's config by ``shardkit.maxtext`` and checked live.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import maxtext
from tests import browser as browser_

DATA = pathlib.Path(__file__).resolve().parent / "data" / "maxtext"


@pytest.fixture(scope="module")
def kept_flash() -> sk.Lowered:
    return sk.load(gzip.decompress((DATA / "maxtext-tiny-flash.mlir.gz").read_bytes()).decode())


def test_kept_flash_step_is_explained(kept_flash):
    """Every collective of Shardy's plan for MaxText's step is explained; the splash kernel's shard_map inputs are
    named as such (jaxlib's origin tracking crashed on them: ``explain.constrain_shard_map_operands``)."""
    explanation = kept_flash.communication().explain()
    assert len(explanation.items) == len(explanation.report.collectives) > 20
    assert all(item.causes for item in explanation.items)
    kinds = {o.kind for item in explanation.items for c in item.causes for o in c.origins}
    assert {"argument", "constraint"} <= kinds


@pytest.mark.skipif(browser_.missing() is not None, reason=browser_.missing() or "")
def test_kept_flash_step_page_opens(kept_flash, browser, tmp_path):
    path = tmp_path / "flash.html"
    kept_flash.to_html(path)
    with browser_.opened(browser, str(path)) as (_, errors):
        assert errors == []


# -- MaxText itself (the Python 3.13 lane) ----------------------------------------------------------------------

live = pytest.mark.skipif(maxtext.installed() is not None, reason=maxtext.installed() or "")
# A tiny llama2-style decoder of MaxText's base config: 2 layers, 8 devices of FSDP
TINY = (
    "base_emb_dim=128",
    "base_num_query_heads=4",
    "base_num_kv_heads=4",
    "base_mlp_dim=256",
    "base_num_decoder_layers=2",
    "head_dim=32",
    "vocab_size=256",
    "max_target_length=64",
    "per_device_batch_size=1",
    "attention=dot_product",
    "learning_rate=0.01",
    "warmup_steps_fraction=0",
)
# MaxText's flash attention (the splash kernel) needs sequences of 512 and heads of 128 in its blocks
TINY_FLASH = (
    "base_emb_dim=256",
    "base_num_query_heads=2",
    "base_num_kv_heads=2",
    "base_mlp_dim=512",
    "base_num_decoder_layers=2",
    "head_dim=128",
    "vocab_size=512",
    "max_target_length=512",
    "per_device_batch_size=1",
    "attention=flash",
)


def _concrete(state, batch, vocab: int):
    """Values for MaxText's shaped state and batch, placed with their shardings: parameters drawn small, optimizer
    state and counters zero, PRNG keys of zeros, a batch of random tokens."""
    rng = np.random.default_rng(0)

    def leaf(path, s):
        if jax.dtypes.issubdtype(s.dtype, jax.dtypes.prng_key):
            data = np.zeros((*s.shape, *jax.random.key_data(jax.random.key(0, impl=s.dtype._impl)).shape), np.uint32)
            return jax.device_put(jax.random.wrap_key_data(data, impl=s.dtype._impl), s.sharding)
        if jnp.issubdtype(s.dtype, jnp.floating) and "opt_state" not in jax.tree_util.keystr(path):
            return jax.device_put((rng.standard_normal(s.shape) * 0.02).astype(s.dtype), s.sharding)
        return jax.device_put(np.zeros(s.shape, s.dtype), s.sharding)

    tokens = rng.integers(1, vocab, batch["inputs"].shape).astype(np.int32)
    positions = np.broadcast_to(np.arange(tokens.shape[1], dtype=np.int32), tokens.shape)
    data = {
        "inputs": tokens,
        "inputs_position": positions,
        "inputs_segmentation": np.ones_like(tokens),
        "targets": np.roll(tokens, -1, axis=1),
        "targets_position": positions,
        "targets_segmentation": np.ones_like(tokens),
    }
    return jax.tree_util.tree_map_with_path(leaf, state), {
        k: jax.device_put(v, batch[k].sharding) for k, v in data.items()
    }


def _bits(tree):
    """Every leaf's bytes (a key array's data), for a bit-for-bit comparison."""

    def raw(a):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a = jax.random.key_data(a)
        return np.asarray(a).tobytes()

    return [raw(a) for a in jax.tree_util.tree_leaves(tree)]


@live
def test_maxtexts_step_under_sk_jit_equals_jax_jit_bit_for_bit():
    """MaxText's own train step on 8 CPU devices, staged by shardkit with MaxText's shardings and donation inside
    MaxText's contexts, and by ``jax.jit`` the same way (train_compile's call): three steps give the same losses
    and the same state, bit for bit; the loss moves."""
    step = maxtext.train_step("base.yml", *TINY)
    state, batch = _concrete(*step.args, vocab=256)
    copy = lambda tree: jax.tree.map(lambda a: a.copy(), tree)
    with step.contexts():
        theirs = jax.jit(
            step.function.__wrapped__,
            in_shardings=step.in_shardings,
            out_shardings=step.out_shardings,
            donate_argnums=step.donate_argnums,
        )
        a, b = copy(state), copy(state)
        losses = []
        for _ in range(3):
            a, mine = step.function(a, batch)
            b, jaxs = theirs(b, batch)
            losses.append((float(mine["scalar"]["learning/loss"]), float(jaxs["scalar"]["learning/loss"])))
    assert [m for m, _ in losses] == [j for _, j in losses]
    assert losses[0][0] != losses[-1][0]
    assert _bits(a) == _bits(b)
    leaves = jax.tree_util.tree_leaves(a)
    assert all(isinstance(x.sharding, jax.sharding.NamedSharding) for x in leaves)


@live
def test_maxtexts_flash_step_for_a_v5e_slice(browser, tmp_path):
    """MaxText's step with its default TPU attention (the splash kernel in a shard_map), built from its config for
    a v5e 2x2 slice: it compiles, every collective is explained, the modelled step is below the chip's peak and its
    page opens in Chromium with no error; MaxText's count of its work is what its own log prints."""
    step = maxtext.train_step("base.yml", *TINY_FLASH, target="tpu-v5e:2x2")
    assert step.mesh.shape["fsdp"] == 4 and step.compiler_options["xla_tpu_spmd_rng_bit_generator_unsafe"]
    compiled = step.compile()
    explanation = compiled.communication().explain()
    assert len(explanation.items) == len(explanation.report.collectives) > 0
    timed = step.time(compiled)
    assert timed.refused is None and 0 < timed.utilization < 1
    performance = step.performance(compiled, timed)
    assert 0 < performance.mfu < 1 and performance.program_flops >= performance.model_flops
    path = tmp_path / "flash.html"
    step.to_html(compiled, path)
    with browser_.opened(browser, str(path)) as (page, errors):
        assert errors == []
        assert page.text_content("header .chip[data-chip='MFU'] b").startswith(f"{100 * performance.mfu:.1f}%")


@live
def test_shardkit_report_maxtext(capsys, tmp_path):
    """``shardkit-report --maxtext CONFIG KEY=VALUE ... --target`` prints MaxText's step's communication, memory,
    modelled step and MaxText's TFLOP/s and MFU, and writes the page."""
    from shardkit.tools.report import ReportMain

    html = tmp_path / "step.html"
    assert ReportMain(["--maxtext", "base.yml", *TINY_FLASH, "--target", "tpu-v5e:2x2", "--html", str(html)]).run() == 0
    out = capsys.readouterr().out
    assert "XLA's partitioned program" in out and "Memory per device" in out
    assert "on XLA's schedule" in out and "TFLOP/s per chip" in out and "MFU at the modelled step" in out
    assert html.stat().st_size > 10_000


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--maxtext", "nope.yml"], "no MaxText config 'nope.yml'"),
        (["--maxtext", "base.yml", "steps"], "not of the form key=value"),
        (["--maxtext", "base.yml", "--target", "cpu:8"], "MaxText compiles for TPU slices"),
        (["--maxtext", "base.yml", "--diff"], "--diff does not apply to --maxtext"),
    ],
)
@live
def test_shardkit_report_maxtext_errors(capsys, argv, message):
    from shardkit.tools.report import ReportMain

    assert ReportMain(argv).run() == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_without_maxtext_the_error_says_how_to_install(monkeypatch):
    """Where MaxText is missing (Python 3.11, or no extra), building its step is an ImportError naming the extra."""
    monkeypatch.setattr(maxtext, "installed", lambda: "MaxText is not installed: pip install 'shardkit[maxtext]'")
    with pytest.raises(ImportError, match=r"shardkit\[maxtext\]"):
        maxtext.train_step("base.yml")


@live
def test_scripts_are_read_as_maxtext_runs_them():
    """A MaxText script's overrides and libtpu flags (the v5e 16B script MaxText 0.2.5 ships)."""
    text = (maxtext.configs_dir() / "tpu" / "v5e" / "16b.sh").read_text()
    script = maxtext.Script.parse(text)
    assert script.config == "base.yml"
    assert "global_parameter_scale=16" in script.overrides and "attention=flash" in script.overrides
    assert not any("$" in o for o in script.overrides)
    assert script.flags["xla_tpu_enable_async_collective_fusion"] is True
    with pytest.raises(ValueError, match="runs no 'python3 -m maxtext"):
        maxtext.Script.parse("echo hello")


@live
def test_autoshard_plans_maxtexts_step_again_over_a_larger_target():
    """MaxText's step built on this process's 8 devices, searched for a 4x4 slice inside MaxText's contexts: its
    shardings name MaxText's axes, not their sizes, so the plan keeps the axes over the target's 16 chips."""
    step = maxtext.train_step("base.yml", *TINY[:8], "per_device_batch_size=2", *TINY[9:])
    with step.contexts():
        plan = sk.autoshard(
            step.function.__wrapped__,
            *step.args,
            target="tpu-v5e:4x4",
            donate_argnums=step.donate_argnums,
            confirm=1,
            workers=0,
        )
    assert plan.mesh.size == 16 and plan.mesh.axis_names == tuple(step.mesh.axis_names)
    assert dict(plan.mesh.shape)["fsdp"] == 16 and plan.compiled is not None


# Every parallelism MaxText's scripts use, on a tiny decoder of 4 layers for a v5e 2x4 slice (with FSDP over the
# rest): tensor (its v5p scripts), sequence (context parallelism), expert (a mixture of experts, megablox's Pallas
# kernels), pipeline (stages over the layers)
PARALLELISMS = {
    "fsdp": (),
    "tensor": ("ici_tensor_parallelism=2",),
    "sequence": ("ici_context_parallelism=2", "max_target_length=1024"),
    "expert": ("num_experts=4", "num_experts_per_tok=2", "base_moe_mlp_dim=512", "ici_expert_parallelism=2"),
    "pipeline": ("ici_pipeline_parallelism=2", "num_layers_per_pipeline_stage=1", "num_pipeline_microbatches=4"),
}


@live
@pytest.mark.parametrize("name", list(PARALLELISMS))
def test_every_parallelism_maxtext_uses_compiles_and_is_read_right(name):
    """Each compiles for the slice; XLA's program is read whole (every computation's instructions are XLA's), every
    collective is explained, the step is below the chips' peak and MaxText's MFU at it below 100%."""
    from shardkit.inspect import hlo

    overrides = [o for o in TINY_FLASH if not o.startswith(("base_num_decoder_layers", "per_device_batch_size"))]
    step = maxtext.train_step(
        "base.yml",
        *overrides,
        "base_num_decoder_layers=4",
        "per_device_batch_size=2",
        *PARALLELISMS[name],
        target="tpu-v5e:2x4",
    )
    axis = {"fsdp": "fsdp", "tensor": "tensor", "sequence": "context", "expert": "expert", "pipeline": "stage"}[name]
    assert step.mesh.shape[axis] == (8 if name == "fsdp" else 2)
    compiled = step.compile()
    module = compiled.executable.hlo_modules()[0]
    read = hlo.computations(module)
    for c in module.computations():  # XLA's instructions, each once, in XLA's schedule where it has one
        assert sorted(i.name for i in read[c.name]) == sorted(i.name for i in c.instructions()), c.name
    explanation = compiled.communication().explain()
    assert len(explanation.items) == len(explanation.report.collectives) > 0
    timed = step.time(compiled)
    assert timed.refused is None and 0 < timed.utilization < 1
    assert 0 < step.performance(compiled, timed).mfu < 1


# -- MaxText 0.2.5's 16B step (16b.sh, flash) for one v5e pod, kept: every lane ---------------------------------


def test_maxtexts_own_16b_step_against_its_table():
    """MaxText 0.2.5's 16B step built from its own ``tpu/v5e/16b.sh`` (the splash kernel, remat full, batch 6 per
    chip) and compiled for ``tpu-v5e:16x16`` (``bench_maxtext_own.py``, kept with its placement): read whole, it
    models within 10% of the published 120 TFLOP/s per chip (v5e/README.md), below the chips' peak. A reader that
    ends a computation at a line starting with ``}`` read its backward loop body short and printed 456% MFU."""
    import sys

    sys.path.insert(0, str(DATA.parents[2] / "benchmarks"))
    import bench_maxtext_own as bench

    meta = json.loads((DATA / "maxtext-0.2.5-v5e-16B-x1.json").read_text())
    cell = next(c for c in bench.cells() if c.name == "v5e-16B-x1")
    text = gzip.decompress((DATA / "maxtext-0.2.5-v5e-16B-x1.hlo.gz").read_bytes()).decode()
    assert re.search(r"^\}\}", text, flags=re.MULTILINE)  # the splash kernel's kernel_metadata, over three lines
    step = bench.from_text(cell, text, meta)
    assert step.refused is None and step.warnings == ()
    tflops = meta["model_flops"] / step.step / 1e12
    assert tflops == pytest.approx(120, rel=0.10)
    assert 0.5 < meta["model_flops"] / (step.step * step.hardware.flops) < 1 and step.utilization < 1
    assert meta["temp_bytes"] == 13_089_893_376  # MaxText's own train_compile prints the same temporaries


def test_the_docs_table_is_the_tables_file():
    """docs/performance_model.md's table of MaxText's own programs is printed from
    benchmarks/maxtext_own_tables.json (bench_maxtext_own --docs), every cell of both published tables in it."""
    import sys

    root = DATA.parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    import bench_maxtext
    import bench_maxtext_own

    rows = json.loads((root / "benchmarks" / "maxtext_own_tables.json").read_text())["rows"]
    assert [r["cell"] for r in rows] == [c.name for c in bench_maxtext_own.cells()]
    assert bench_maxtext.markdown(rows) in (root / "docs" / "performance_model.md").read_text()
    sixteen = next(r for r in rows if r["cell"] == "v5e-16B-x1")
    assert sixteen["tflops"] == pytest.approx(125.2, abs=0.05) and sixteen["error"] == pytest.approx(0.043, abs=0.001)
