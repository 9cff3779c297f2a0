"""MaxText's decoder (``examples/maxtext_decoder.py``), compiled for TPU slices from this machine, and the time
model against measured and published numbers: XLA's and a Pallas kernel's matmuls on TPU v5e (jax's Pallas TPU
matmul guide) and MaxText's v5e table (``benchmarks/maxtext_tables.json``, ``docs/performance_model.md``).

Each published figure names its source; a model figure is recomputed here from a compiled program (compiled in the
test, or kept as its HLO text in ``tests/data/maxtext/`` where its compile takes minutes).
"""

from __future__ import annotations

import functools
import gzip
import json
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit.inspect.hardware import hardware

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "maxtext"
sys.path.insert(0, str(ROOT / "examples"))

import maxtext_decoder as mt  # noqa: E402

# jax's Pallas TPU matmul guide (docs/pallas/tpu/matmul.ipynb in jax-ml/jax, its recorded outputs on TPU v5e):
# bf16 n^3 matmuls timed with timeit and block_until_ready, dispatch included
XLA_MATMULS = {1024: 119.4e-6, 4096: 827.3e-6, 8192: 6047.1e-6}
PALLAS_MATMULS = {4096: 889.1e-6, 8192: 6099.4e-6}  # its kernel with bm=512, bk=1024, bn=1024


def test_sizes_follow_global_parameter_scale() -> None:
    """MaxText's ``get_individual_scales``: heads and MLP width double first, then the embedding, then the depth;
    the 2023 base model gives the tables' 16B, 32B, 64B and 128B, and 1T for scale 1024."""
    sizes = {s: mt.config(s) for s in (16, 32, 64, 128, 1024)}
    assert [(c.emb, c.heads, c.mlp, c.layers) for c in sizes.values()] == [
        (5120, 32, 32768, 32),
        (10240, 32, 32768, 32),
        (10240, 32, 32768, 64),
        (10240, 64, 65536, 64),
        (20480, 128, 131072, 128),
    ]
    assert [round(c.params / 1e9) for c in sizes.values()] == [16, 33, 65, 129, 1031]
    llama = mt.config(16, mt.LLAMA2)
    assert (llama.emb, llama.heads, llama.mlp, llama.layers, llama.block) == (4096, 64, 28672, 32, "llama2")
    with pytest.raises(ValueError, match="power of two"):
        mt.config(24)


def test_logical_rules_are_flax_first_fit() -> None:
    """A logical name takes the axes of its rule unless an earlier dimension took them (flax's
    ``logical_to_mesh_axes``): activations keep the batch on ('data', 'fsdp'), weights store 'embed' on 'fsdp'."""
    assert mt.spec(mt.ACTIVATIONS) == sk.P(("data", "fsdp"), "sequence", "tensor")
    assert mt.spec(("embed", "layers", "heads", "kv")) == sk.P(("fsdp", "sequence"), None, "tensor", None)
    assert mt.spec(("activation_batch", "activation_heads", "activation_length", "activation_kv")) == sk.P(
        ("data", "fsdp"), ("tensor", "sequence"), None, None
    )


@functools.cache
def tiny_flash_step():
    """A MaxText decoder small enough to compile in seconds, with Pallas flash attention lowered for TPU, compiled
    for a v5e 2x2 with MaxText's flags."""
    cfg = mt.Config(
        emb=256, heads=2, kv_heads=2, head_dim=128, mlp=512, layers=2, vocab=512, per_device_batch=1, seq=512
    )
    mesh = sk.AbstractMesh(mt.mesh_shape(cfg, 4), mt.MESH_AXES)
    step, args = mt.Model(cfg, mesh).build(platform="tpu")
    lowered = step.lower(*args)
    flags = {"xla_tpu_enable_async_collective_fusion": True, "xla_enable_async_all_gather": True}
    return cfg, lowered, lowered.compile(target="tpu-v5e:2x2", compiler_options=flags)


def test_flash_attention_compiles_for_tpu_from_this_machine() -> None:
    """jax's Pallas TPU flash attention, lowered for TPU (``jit(platform="tpu")``), is a ``tpu_custom_call`` that
    libtpu compiles for the slice; the time model prices each kernel by its matmul work (the forward's own cost
    estimate, the backward's counted from its Mosaic body), none by bytes alone."""
    cfg, lowered, compiled = tiny_flash_step()
    assert "tpu_custom_call" in lowered.as_text()
    assert compiled.memory().fits
    step = compiled.communication().time("tpu-v5e")
    assert step.scheduled is not None and not step.unestimated and dict(step.busy)["kernels"] > 0
    with pytest.raises(ValueError, match="lowered for platform 'tpu'"):
        lowered.compile(target="cpu:4")  # XLA's CPU compiler cannot take a TPU kernel


def test_kernel_body_count_agrees_with_the_kernels_own_estimate() -> None:
    """The flash forward kernel carries its author's cost estimate; counting the matmuls of its Mosaic body over its
    grid gives the same flops (the estimate adds the softmax's): the count the backward kernels are priced by."""
    from shardkit.inspect import hlo, schedule

    _, _, compiled = tiny_flash_step()
    kernels = [
        i
        for insts in hlo.computations(compiled.as_text()).values()
        for i in insts
        if i.opcode == "custom-call" and "tpu_custom_call" in i.attributes.get("custom_call_target", "")
    ]
    configs = [schedule._custom_call_config(k.attributes["backend_config"]) for k in kernels]
    forward = [c for c in configs if c.get("cost_estimate")]
    assert forward and len(forward) < len(configs)  # the backward kernels have none
    for c in forward:
        assert schedule.kernel_flops(c["body"]) == pytest.approx(float(c["cost_estimate"]["flops"]), rel=0.01)
    assert all(schedule.kernel_flops(c["body"]) > 0 for c in configs)


def test_compiler_options_are_checked_and_kept_apart() -> None:
    x = sk.ShapeDtypeStruct((8, 8), np.float32)
    lowered = sk.jit(lambda a: a * 2).lower(x)
    with pytest.raises(TypeError, match="compiler_options must map option names"):
        lowered.compile(compiler_options={"xla_cpu_enable_fast_math": [1]})
    with pytest.raises(TypeError, match="compiler_options must be a mapping"):
        lowered.compile(compiler_options=["xla_cpu_enable_fast_math"])
    plain = lowered.compile()
    assert lowered.compile(compiler_options={"xla_cpu_enable_fast_math": False}) is not plain
    with pytest.raises(ValueError, match="platform must be None"):
        sk.jit(lambda a: a, platform="tpu7")


def _matmul(x, y):
    return x @ y


def _pallas_matmul(x, y, bm=512, bk=1024, bn=1024):
    """A blocked Pallas TPU matmul with the guide's block sizes (written here; accumulates in float32 VMEM)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    steps = x.shape[1] // bk

    def kernel(a, b, out, acc):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc[...] = jnp.zeros_like(acc)

        acc[...] += jnp.dot(a[...], b[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == steps - 1)
        def _():
            out[...] = acc[...].astype(out.dtype)

    m, n = x.shape[0], y.shape[1]
    return pl.pallas_call(
        kernel,
        grid=(m // bm, n // bn, steps),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)), pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
    )(x, y)


def modelled(fun, n: int) -> float:
    """The modelled step of ``fun`` on two bf16[n, n] (replicated) compiled for one v5e chip's worth of work."""
    mesh = sk.AbstractMesh((4,), ("d",))
    s = sk.ShapeDtypeStruct((n, n), jnp.bfloat16, sharding=sk.NamedSharding(mesh, sk.P()))
    compiled = sk.jit(fun, platform="tpu").lower(s, s).compile(target="tpu-v5e:2x2")
    return compiled.communication().time("tpu-v5e").step


def test_matmuls_on_v5e_against_measured() -> None:
    """XLA's matmuls (the three the matmul efficiency is fitted to: a check of the fit) and a Pallas kernel's (not
    fitted: its flops are counted from its Mosaic body) against their measured times on TPU v5e; the
    measurement's dispatch, the fit's intercept, is added to the model's step."""
    from shardkit.inspect.hardware import V5E_DISPATCH

    for n, measured in XLA_MATMULS.items():
        assert modelled(_matmul, n) + V5E_DISPATCH == pytest.approx(measured, rel=0.10), n
    for n, measured in PALLAS_MATMULS.items():
        assert modelled(_pallas_matmul, n) + V5E_DISPATCH == pytest.approx(measured, rel=0.10), n


def kept(cell: str):
    """A MaxText cell's compiled program as the benchmark keeps it (HLO text and XLA's cost analysis) and its row of
    the tables file."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_maxtext

    with gzip.open(DATA / f"{cell}.hlo.gz", "rt") as f:
        text = f.read()
    meta = json.loads((DATA / f"{cell}.json").read_text())
    row = next(
        r for r in json.loads((ROOT / "benchmarks" / "maxtext_tables.json").read_text())["rows"] if r["cell"] == cell
    )
    c = next(c for c in bench_maxtext.cells() if c.name == cell)
    return c, text, meta, row


def test_maxtext_16b_on_one_v5e_pod_against_its_table() -> None:
    """MaxText's 16B model on one v5e-256 (v5e/README.md at 76bd53b0f: 120 TFLOP/s per chip, 61.10% MFU), timed
    from its compiled program (libtpu's, kept): within 10%, as the docs' table says. The step is XLA's schedule: the
    FSDP gathers asynchronous (hidden under the layer's matmuls), the gradients' reductions synchronous."""
    cell, text, meta, row = kept("v5e-16B-x1")
    step = bench_step(cell, text, meta)
    tflops = cell.config.train_flops() / step.step / 1e12
    assert tflops == pytest.approx(row["tflops"], rel=1e-6)  # the tables file holds what the model says
    assert tflops == pytest.approx(120, rel=0.10)
    hidden = [t for t in step.collectives if t.collective.is_async]
    assert hidden and sum(t.exposed for t in hidden) < 0.05 * sum(t.total for t in hidden)
    assert sum(t.collective.executions for t in hidden if t.collective.kind == "all-gather") >= 32 * 3


def test_maxtext_128b_on_a_v5p_256_against_its_table() -> None:
    """MaxText's 128B model on a v5p-256 (v5p/README.md at 76bd53b0f: 315 TFLOP/s per chip, 68.68% MFU; 8-way tensor
    parallelism, minimal remat), timed from its compiled program (libtpu's, kept): within 10%, as the docs' table
    says. Its tensor-parallel matmuls are XLA's windowed loops of collective-permutes, which the walk times as
    scheduled."""
    cell, text, meta, row = kept("v5p-128B-v5p-256-x1")
    step = bench_step(cell, text, meta)
    tflops = cell.config.train_flops() / step.step / 1e12
    assert tflops == pytest.approx(row["tflops"], rel=1e-6)
    assert tflops == pytest.approx(315, rel=0.10)
    assert any(t.collective.kind == "collective-permute" for t in step.collectives)


def bench_step(cell, text, meta):
    import bench_maxtext

    return bench_maxtext.from_text(cell, text, meta["xla_cost"])


def test_the_docs_table_is_the_tables_file():
    """docs/performance_model.md's MaxText table is printed from benchmarks/maxtext_tables.json (bench_maxtext
    --docs), row for row, each published figure MaxText's (the v5e table as its README gives it)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_maxtext

    rows = json.loads((ROOT / "benchmarks" / "maxtext_tables.json").read_text())["rows"]
    docs = (ROOT / "docs" / "performance_model.md").read_text()
    assert bench_maxtext.markdown(rows) in docs
    published = {(r["scale"], r["target"]): (r["published_tflops"], r["published_mfu"]) for r in rows}
    assert published[(16, "tpu-v5e:16x16")] == (120, 61.10)
    assert published.get((128, "tpu-v5e:16x16,slices=32"), (91, 46.25)) == (91, 46.25)
    for r in rows:  # MFU is TFLOP/s over the chip's bf16 peak, as MaxText reports both
        peak = hardware("tpu-v5e" if r["table"] == "v5e" else "tpu-v5p").flops
        assert r["published_mfu"] == pytest.approx(100 * r["published_tflops"] * 1e12 / peak, abs=0.7)


def test_a_program_read_in_part_is_refused(monkeypatch) -> None:
    """The 16B step read as a line reader read MaxText's splash programs (each loop body cut short: 142 of the
    backward body's 468 instructions): shardkit's count of the program falls below XLA's own, so the time model
    refuses it and every report says why, where it had printed a step above the chip's peak."""
    from shardkit.inspect import hlo

    cell, text, meta, _ = kept("v5e-16B-x1")
    real = hlo.computations

    def cut_short(module):
        read = real(module)
        bodies = {i.attributes["body"].lstrip("%") for insts in read.values() for i in insts if i.opcode == "while"}
        return {
            name: insts[: len(insts) * 142 // 468] + insts[-1:] if name in bodies else insts
            for name, insts in read.items()
        }

    monkeypatch.setattr(hlo, "computations", cut_short)
    step = bench_step(cell, text, meta)
    assert step.refused is not None and "fewer than XLA's own count" in step.refused
    with pytest.raises(sk.ImpossibleEstimate, match="not read"):
        _ = step.step
    assert "no modelled step: shardkit counts" in str(step)
    assert json.loads(step.to_json())["step_seconds"] is None
    assert step.utilization is None


def test_kept_steps_run_below_the_chips_peak() -> None:
    """Every kept TPU program's modelled step takes longer than its own flops at the chip's peak."""
    for name in ("v5e-16B-x1", "v5p-128B-v5p-256-x1"):
        cell, text, meta, _ = kept(name)
        step = bench_step(cell, text, meta)
        assert step.refused is None and 0.3 < step.utilization < 1.0, name
        assert step.compute < step.step
