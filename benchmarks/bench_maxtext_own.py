"""MaxText's published training rates predicted from MaxText's own code: each cell of its v5e and v5p tables built
by ``shardkit.maxtext`` from the script MaxText 0.2.5 ships for it (``tpu/v5e/16b.sh``, ...; its overrides and
libtpu flags, train_compile's additions), compiled by libtpu for the cell's slices, and timed by shardkit's model.

``bench_maxtext.py`` predicts the same tables from ``examples/maxtext_decoder.py``, a re-statement of the 2023
models the tables measured; this runs the models MaxText builds today, which differ (``docs/maxtext.md``). The
published figures (and their source) are ``bench_maxtext``'s. TFLOP/s per chip is MaxText's own count of the step's
work (``calculate_tflops_training_per_device``) over the predicted step; MFU that over the chip's peak.

Each compile is kept as its HLO text with XLA's cost analysis, memory figures, MaxText's count and the program's
device placement under ``--cache`` (default ``~/.cache/shardkit-maxtext-own/jax-<version>``); ``--retime`` times
every kept cell again with the current model, without MaxText (``from_text``).

Run (Python 3.13 lane, ``shardkit[maxtext]``): nice .venv-py3.13-jax0.12.0.1/bin/python
benchmarks/bench_maxtext_own.py [v5e|v5p|CELL ...] [--retime] [--cache DIR] [--out FILE] [--markdown] [--docs]
(writes ``benchmarks/maxtext_own_tables.json``, which ``docs/performance_model.md`` and ``tests/test_maxtext_own.py``
read)
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_maxtext as published  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import _jaxlib  # noqa: E402
from shardkit.executor import targets  # noqa: E402
from shardkit.inspect import OutOfMemoryError, cost, xla  # noqa: E402
from shardkit.inspect.hardware import Topology, hardware  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "maxtext_own_tables.json")
BEGIN, END = "<!-- the table: benchmarks/bench_maxtext_own.py --markdown -->", "<!-- end of MaxText's own table -->"
FUSE_ALL_GATHER = "xla_tpu_enable_async_collective_fusion_fuse_all_gather"
SOURCE = f"MaxText 0.2.5 (PyPI): its tpu/v5e and tpu/v5p scripts; published figures: {published.SOURCE}"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One published cell and the MaxText script that ran it."""

    name: str
    table: str
    scale: int
    hardware: str
    target: str
    script: str
    tflops: float
    mfu: float


def cells() -> list[Cell]:
    out = []
    for scale, rows in published.V5E_TABLE.items():
        for slices, (tflops, mfu) in zip((1, 2, 4, 8, 16, 32), rows):
            target = "tpu-v5e:16x16" + (f",slices={slices}" if slices > 1 else "")
            script = f"tpu/v5e/{scale}b.sh"
            out.append(Cell(f"v5e-{scale}B-x{slices}", "v5e", scale, "tpu-v5e", target, script, tflops, mfu))
    for scale, cores, slices, tflops, mfu in published.V5P_TABLE:
        target = f"tpu-v5p:{published.V5P_SLICES[cores]}" + (f",slices={slices}" if slices > 1 else "")
        name = f"v5p-{scale}B-v5p-{cores}-x{slices}"
        out.append(Cell(name, "v5p", scale, "tpu-v5p", target, f"tpu/v5p/{scale}b.sh", tflops, mfu))
    return out


def cache_dir(given: str | None) -> str:
    path = given or os.path.join(os.path.expanduser("~"), ".cache", "shardkit-maxtext-own", f"jax-{jax.__version__}")
    os.makedirs(path, exist_ok=True)
    return path


def compile_cell(cell: Cell, directory: str) -> dict:
    """Builds the cell's step from its script with MaxText's code, compiles it for the cell's target and keeps the
    program with what ``from_text`` needs to time it again."""
    from shardkit import maxtext

    meta: dict = {"cell": cell.name, "jax": jax.__version__, "script": cell.script}
    start = time.perf_counter()
    step = maxtext.train_step(cell.script, target=cell.target)
    lowered = step.lower()
    meta["model_flops"] = step.model_flops
    meta["config"] = {
        k: getattr(step.config, k)
        for k in ("emb_dim", "num_query_heads", "num_kv_heads", "head_dim", "mlp_dim", "num_decoder_layers")
    } | {"decoder_block": str(step.config.decoder_block)}
    try:
        try:
            compiled = step.compile(lowered)
        except jax.errors.JaxRuntimeError as e:
            if "Continuation fusion for AllGather" not in str(e):
                raise
            # MaxText 0.2.5's v5p scripts but 32b.sh ask libtpu to fuse all-gathers into continuation fusions, which
            # the libtpu jax 0.12 pairs with refuses on v5p; 32b.sh turns it off again: the others are run so too
            step = dataclasses.replace(step, compiler_options={**step.compiler_options, FUSE_ALL_GATHER: False})
            meta["flags_changed"] = {FUSE_ALL_GATHER: False}
            compiled = step.compile(lowered)
    except OutOfMemoryError as e:
        meta.update(refused=e.report.error, compile_seconds=time.perf_counter() - start)
        _write(directory, cell, meta)
        return meta
    except jax.errors.JaxRuntimeError as e:  # libtpu refuses the script itself (a flag this release does not take)
        meta.update(refused=f"libtpu: {str(e).splitlines()[0][:300]}", compile_seconds=time.perf_counter() - start)
        _write(directory, cell, meta)
        return meta
    meta["compile_seconds"] = time.perf_counter() - start
    meta.update(
        xla_cost=compiled.cost_analysis(),
        **published.memory_meta(compiled.memory()),
        mesh=[[str(n), int(s)] for n, s in step.mesh.shape.items()],
        mesh_devices=[int(d.id) for d in step.mesh.devices.flat],
        assignment=[int(d.id) for d in compiled.device_assignment],
    )
    with gzip.open(os.path.join(directory, f"{cell.name}.hlo.gz"), "wt") as f:
        f.write(compiled.as_text())
    _write(directory, cell, meta)
    return meta


def _write(directory: str, cell: Cell, meta: dict) -> None:
    with open(os.path.join(directory, f"{cell.name}.json"), "w") as f:
        json.dump(meta, f, indent=1)


def from_text(cell: Cell, text: str, meta: dict) -> object:
    """The modelled step of a kept compile: XLA's program read from its HLO text on the target's chips, placed as
    it was compiled (MaxText's mesh over the target's devices), as ``compiled.communication().time()`` reads it."""
    t = targets.target(cell.target)
    by_id = {d.id: d for d in t.devices}
    names, sizes = zip(*meta["mesh"])
    grid = np.empty(len(meta["mesh_devices"]), dtype=object)
    grid[:] = [by_id[i] for i in meta["mesh_devices"]]
    mesh = sk.Mesh(grid.reshape(sizes), names)
    devices = [by_id[i] for i in meta["assignment"]]
    module = _jaxlib.hlo_module(text)
    report = dataclasses.replace(
        xla.report(module, devices, mesh),
        topology=Topology.from_devices(devices, cell.hardware),
        cost=cost.program_cost(module, meta["xla_cost"]),
    )
    return report.time(cell.hardware)


def row(cell: Cell, meta: dict, directory: str) -> dict:
    out = {
        "cell": cell.name,
        "table": cell.table,
        "scale": cell.scale,
        "script": cell.script,
        "target": cell.target,
        "model": meta.get("config"),
        "published_tflops": cell.tflops,
        "published_mfu": cell.mfu,
        "published_step_s": meta["model_flops"] / (cell.tflops * 1e12),
        "compile_seconds": meta.get("compile_seconds"),
        "jax": meta.get("jax"),
        "flags_changed": meta.get("flags_changed", {}),
    }
    if "refused" in meta:
        return {**out, "refused": meta["refused"]}
    with gzip.open(os.path.join(directory, f"{cell.name}.hlo.gz"), "rt") as f:
        step = from_text(cell, f.read(), meta)
    if step.refused is not None:
        return {**out, "refused": f"the time model: {step.refused}"}
    peak = hardware(cell.hardware).flops
    tflops = meta["model_flops"] / step.step / 1e12
    return {
        **out,
        "step_s": step.step,
        "tflops": tflops,
        "mfu": 100 * tflops * 1e12 / peak,
        "error": tflops / cell.tflops - 1,
        "busy_s": dict(step.busy),
        "exposed_s": step.exposed,
        "exposed_dcn_s": sum(t.exposed for t in step.collectives if "dcn" in t.links),
        "communication_s": step.communication,
        "utilization": step.utilization,
        "warnings": list(step.warnings),
        **published.memory_row(meta),
    }


def main() -> None:
    published.tables_main(__doc__, cells, compile_cell, row, OUT, (BEGIN, END), SOURCE, cache_dir)


if __name__ == "__main__":
    main()
