"""MaxText's published training rates on TPU v5e and v5p pods, predicted from this machine: every configuration of
its two tables written as ``examples/maxtext_decoder.py``, compiled by libtpu for its slices with the XLA flags of
its scripts, and timed by shardkit's model (``compiled.communication().time(...)``).

The tables are MaxText's, github.com/AI-Hypercomputer/maxtext: ``MaxText/configs/v5e/README.md`` (16B, 32B, 64B,
128B on 1 to 32 slices of v5e-256; first published with ``v5e_high_performance.md`` and the scripts
``MaxText/configs/largest_job/*.sh`` at 5ebcd67fe, 2023-10-27, whose model they ran: ``block="2023-10"``) and
``MaxText/configs/v5p/README.md`` with ``v5p/{32b,...,1024b}.sh`` at 76bd53b0f, 2023-12-15 (``block="2023-12"``; a
v5p-N slice has N/2 chips). TFLOP/s per chip is MaxText's count of the step's work (``Config.train_flops``) over
the predicted step; MFU that over the chip's peak.

Each compile (minutes for 256 chips and more on 2 cores) is kept as its HLO text with XLA's cost analysis and memory
figures under ``--cache`` (default ``~/.cache/shardkit-maxtext/jax-<version>``); ``--retime`` times every kept cell
again with the current model, in seconds, through the same reading of XLA's program (``from_text``).

Run: nice .venv/bin/python benchmarks/bench_maxtext.py [v5e|v5p|CELL ...] [--retime] [--cache DIR] [--out FILE]
(CELL: ``v5e-16B-x2``, ``v5p-1024B-v5p-4096-x2``, ...; writes ``benchmarks/maxtext_tables.json``, which
``docs/performance_model.md``'s table and ``tests/test_maxtext.py`` read)
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import jax  # noqa: E402
import maxtext_decoder as mt  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import _jaxlib  # noqa: E402
from shardkit.executor import targets  # noqa: E402
from shardkit.inspect import OutOfMemoryError, cost, xla  # noqa: E402
from shardkit.inspect.hardware import Topology, hardware  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "maxtext_tables.json")
DOCS = os.path.join(HERE, "..", "docs", "performance_model.md")
BEGIN, END = "<!-- the table: benchmarks/bench_maxtext.py --markdown -->", "<!-- end of the table -->"
SOURCE = "github.com/AI-Hypercomputer/maxtext: v5e table and scripts @ 5ebcd67fe (2023-10-27), v5p @ 76bd53b0f"

# LIBTPU_INIT_ARGS of the scripts, as compiler options (the same flags, passed per compile)
V5E_FLAGS = [
    "xla_tpu_enable_data_parallel_all_reduce_opt",
    "xla_tpu_data_parallel_opt_different_sized_ops",
    "xla_tpu_enable_async_collective_fusion",
    "xla_tpu_enable_async_collective_fusion_fuse_all_gather",
    "xla_tpu_enable_async_collective_fusion_multiple_steps",
    "xla_tpu_overlap_compute_collective_tc",
    "xla_enable_async_all_gather",
]
V5P_FLAGS = {
    "xla_tpu_megacore_fusion_allow_ags": False,
    **dict.fromkeys(
        [
            "xla_enable_async_collective_permute",
            "xla_tpu_enable_ag_backward_pipelining",
            "xla_tpu_enable_data_parallel_all_reduce_opt",
            "xla_tpu_data_parallel_opt_different_sized_ops",
            "xla_tpu_enable_async_collective_fusion",
            "xla_tpu_enable_async_collective_fusion_multiple_steps",
            "xla_tpu_overlap_compute_collective_tc",
            "xla_enable_async_all_gather",
        ],
        True,
    ),
}

# v5e/README.md: TFLOP/s per chip and MFU (%) on 1, 2, 4, 8, 16, 32 slices of v5e-256
V5E_TABLE = {
    16: ((120, 61.10), (117, 59.37), (117, 59.14), (115, 58.27), (111, 56.56), (108, 54.65)),
    32: ((132, 66.86), (128, 64.81), (126, 64.10), (125, 63.67), (123, 62.26), (119, 60.40)),
    64: ((118, 59.90), (112, 56.66), (110, 55.85), (108, 54.96), (105, 53.29), (99, 50.18)),
    128: ((110, 56.06), (110, 55.82), (108, 54.93), (104, 52.93), (100, 50.86), (91, 46.25)),
}
# v5e/{16b,32b,64b,128b}.sh: per-device batch, remat, ici_fsdp x ici_tensor (the rest of a slice on fsdp)
V5E_SCRIPTS = {16: (6, "full", 1), 32: (4, "full", 1), 64: (2, "full", 1), 128: (1, "full", 16)}
# v5p/README.md: (scale, v5p-N, slices, TFLOP/s per chip, MFU %); v5p/*.sh: batch, remat, ici_tensor
V5P_TABLE = (
    (32, 128, 1, 328, 71.47),
    (32, 128, 2, 319, 69.43),
    (64, 128, 1, 323, 70.31),
    (64, 128, 2, 309, 67.26),
    (128, 256, 1, 315, 68.68),
    (128, 256, 2, 305, 66.34),
    (128, 512, 1, 316, 68.83),
    (128, 512, 2, 274, 59.66),
    (256, 1024, 1, 308, 67.09),
    (256, 1024, 2, 289, 62.99),
    (512, 1024, 1, 294, 63.99),
    (512, 1024, 2, 282, 61.45),
    (1024, 2048, 1, 254, 55.35),
    (1024, 2048, 2, 237, 51.55),
    (1024, 4096, 1, 297, 64.80),
    (1024, 4096, 2, 279, 60.83),
)
V5P_SCRIPTS = {
    32: (8, "minimal", 4),
    64: (4, "minimal", 4),
    128: (2, "minimal", 8),
    256: (2, "minimal", 8),
    512: (2, "full", 16),
    1024: (2, "full", 16),
}
V5P_SLICES = {128: "4x4x4", 256: "4x4x8", 512: "4x8x8", 1024: "8x8x8", 2048: "8x8x16", 4096: "8x16x16"}


@dataclasses.dataclass(frozen=True)
class Cell:
    """One row of a published table and the configuration that produced it."""

    name: str
    table: str
    scale: int
    hardware: str
    target: str
    config: mt.Config
    tflops: float
    mfu: float
    flags: dict


def cells() -> list[Cell]:
    out = []
    for scale, rows in V5E_TABLE.items():
        batch, remat, tensor = V5E_SCRIPTS[scale]
        for slices, (tflops, mfu) in zip((1, 2, 4, 8, 16, 32), rows):
            cfg = mt.config(
                scale, per_device_batch=batch, remat=remat, ici_tensor=tensor, slices=slices, block="2023-10"
            )
            target = "tpu-v5e:16x16" + (f",slices={slices}" if slices > 1 else "")
            flags = dict.fromkeys(V5E_FLAGS, True)
            out.append(Cell(f"v5e-{scale}B-x{slices}", "v5e", scale, "tpu-v5e", target, cfg, tflops, mfu, flags))
    for scale, cores, slices, tflops, mfu in V5P_TABLE:
        batch, remat, tensor = V5P_SCRIPTS[scale]
        cfg = mt.config(scale, per_device_batch=batch, remat=remat, ici_tensor=tensor, slices=slices)
        target = f"tpu-v5p:{V5P_SLICES[cores]}" + (f",slices={slices}" if slices > 1 else "")
        name = f"v5p-{scale}B-v5p-{cores}-x{slices}"
        out.append(Cell(name, "v5p", scale, "tpu-v5p", target, cfg, tflops, mfu, dict(V5P_FLAGS)))
    return out


def cache_dir(given: str | None) -> str:
    path = given or os.path.join(os.path.expanduser("~"), ".cache", "shardkit-maxtext", f"jax-{jax.__version__}")
    os.makedirs(path, exist_ok=True)
    return path


def mesh(cell: Cell):
    """The MaxText mesh of a cell laid onto its target's chips (as the compile lays it)."""
    t = targets.target(cell.target)
    return t.mesh(sk.AbstractMesh(mt.mesh_shape(cell.config, len(t.devices)), mt.MESH_AXES))


def compile_cell(cell: Cell, directory: str) -> dict:
    """Compiles one cell for its target (flash attention lowered for TPU) and keeps its HLO text and XLA's figures."""
    devices = len(targets.target(cell.target).devices)
    model = mt.Model(cell.config, sk.AbstractMesh(mt.mesh_shape(cell.config, devices), mt.MESH_AXES))
    step, args = model.build(platform="tpu")
    start = time.perf_counter()
    meta = {"cell": cell.name, "jax": jax.__version__}
    try:
        compiled = step.lower(*args).compile(target=cell.target, compiler_options=cell.flags)
    except OutOfMemoryError as e:
        meta.update(refused=e.report.error, compile_seconds=time.perf_counter() - start)
        with open(os.path.join(directory, f"{cell.name}.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return meta
    meta["compile_seconds"] = time.perf_counter() - start
    meta.update(xla_cost=compiled.cost_analysis(), **memory_meta(compiled.memory()))
    with gzip.open(os.path.join(directory, f"{cell.name}.hlo.gz"), "wt") as f:
        f.write(compiled.as_text())
    with open(os.path.join(directory, f"{cell.name}.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def from_text(cell: Cell, text: str, xla_cost: dict) -> object:
    """The modelled step of a kept compile: XLA's program read from its HLO text (``xla.report``, ``cost``) on the
    target's chips, as ``compiled.communication().time()`` reads the compiled one."""
    module = _jaxlib.hlo_module(text)
    placed = mesh(cell)
    devices = placed.flat_devices
    report = xla.report(module, devices, placed)
    report = dataclasses.replace(
        report,
        topology=Topology.from_devices(devices, cell.hardware),
        cost=cost.program_cost(module, xla_cost),
    )
    return report.time(cell.hardware)


def row(cell: Cell, meta: dict, directory: str) -> dict:
    cfg = cell.config
    out = {
        "cell": cell.name,
        "table": cell.table,
        "scale": cell.scale,
        "parameters": cfg.params,
        "target": cell.target,
        "per_device_batch": cfg.per_device_batch,
        "remat": cfg.remat,
        "ici_tensor": cfg.ici_tensor,
        "published_tflops": cell.tflops,
        "published_mfu": cell.mfu,
        "published_step_s": cfg.train_flops() / (cell.tflops * 1e12),
        "compile_seconds": meta.get("compile_seconds"),
        "jax": meta.get("jax"),
    }
    if "refused" in meta:
        return {**out, "refused": meta["refused"]}
    with gzip.open(os.path.join(directory, f"{cell.name}.hlo.gz"), "rt") as f:
        step = from_text(cell, f.read(), meta["xla_cost"])
    peak = hardware(cell.hardware).flops
    tflops = cfg.train_flops() / step.step / 1e12
    exposed_dcn = sum(t.exposed for t in step.collectives if "dcn" in t.links)
    return {
        **out,
        "step_s": step.step,
        "tflops": tflops,
        "mfu": 100 * tflops * 1e12 / peak,
        "error": tflops / cell.tflops - 1,
        "busy_s": dict(step.busy),
        "exposed_s": step.exposed,
        "exposed_dcn_s": exposed_dcn,
        "communication_s": step.communication,
        "unestimated_kernels": len(step.unestimated),
        **memory_row(meta),
    }


def memory_meta(memory: Any) -> dict:
    """What a cell keeps of its compile's memory report: the device's bytes (XLA's peak, or the upper bound where
    XLA's peak is not the device's), and what XLA keeps in the host's memory."""
    return {
        "peak_bytes": memory.peak,
        "device_bytes": memory.total,
        "host_bytes": memory.host,
        "temp_bytes": memory.temporaries,
        "argument_bytes": memory.arguments,
    }


def memory_row(meta: dict) -> dict:
    """A row's memory columns from a kept compile (one kept before ``device_bytes`` was recorded has its peak)."""
    device = meta.get("device_bytes", meta.get("peak_bytes"))
    return {
        "memory_gib": device / 2**30 if device else None,
        "memory_is_peak": meta.get("peak_bytes") is not None,
        "host_gib": meta.get("host_bytes", 0) / 2**30,
    }


def memory_text(row: dict) -> str:
    """A row's memory per chip as the tables print it."""
    text = f"{row['memory_gib']:.1f} GiB" + ("" if row["memory_is_peak"] else " (upper bound)")
    return text + (f" + {row['host_gib']:.1f} GiB on the host" if row["host_gib"] else "")


def markdown(rows: list[dict]) -> str:
    """The tables of ``docs/performance_model.md`` (*MaxText's tables from a CPU box*) from the tables file's rows."""
    lines = [
        "| table | model | slices | target | published TFLOP/s, MFU | predicted TFLOP/s, MFU | error | "
        "published step | predicted step | busy: matmul / memory / kernels | exposed (DCN) | memory per chip |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        slices = r["target"].split("slices=")[1] if "slices=" in r["target"] else "1"
        published = f"{r['published_tflops']}, {r['published_mfu']}%"
        head = f"| {r['table']} | {r['scale']}B | {slices} | `{r['target']}` | {published} |"
        if "refused" in r:
            lines.append(head + f" refused: {r['refused']} | | {r['published_step_s']:.2f} s | | | | |")
            continue
        busy = r["busy_s"]
        lines.append(
            head + f" {r['tflops']:.1f}, {r['mfu']:.1f}% | {r['error']:+.1%} | {r['published_step_s']:.2f} s | "
            f"{r['step_s']:.2f} s | {busy.get('matmul', 0):.2f} / {busy.get('memory', 0):.2f} / "
            f"{busy.get('kernels', 0):.2f} s | {r['exposed_s']:.2f} s ({r['exposed_dcn_s']:.2f} s) | "
            f"{memory_text(r)} |"
        )
    lines.append("")
    for table in dict.fromkeys(r["table"] for r in rows):
        mine = [r for r in rows if r["table"] == table]
        errors = [abs(r["error"]) for r in mine if "error" in r]
        lines.append(
            f"{table}: {len(mine)} cells, {sum(e <= 0.10 for e in errors)} within ±10% of the published TFLOP/s per "
            f"chip, {sum(e <= 0.20 for e in errors)} within ±20%"
            + (f", {len(mine) - len(errors)} refused by XLA" if len(errors) < len(mine) else "")
            + "."
        )
    return "\n".join(lines)


def tables_main(
    doc: str,
    all_cells: Callable[[], list],
    compile_one: Callable,
    row_of: Callable,
    out: str,
    markers: tuple[str, str],
    source: str,
    cache: Callable[[str | None], str],
) -> None:
    """The command line of a tables benchmark (this one, ``bench_maxtext_own.py``): compile the chosen cells (or
    time the kept ones again), write the tables file, or print the docs' table from it and write it in."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("which", nargs="*", help="v5e, v5p or cell names (default: every cell)")
    parser.add_argument("--retime", action="store_true", help="only time the kept compiles again")
    parser.add_argument("--cache", help="where compiles are kept")
    parser.add_argument("--out", default=out)
    parser.add_argument("--markdown", action="store_true", help="print the docs' tables from the tables file")
    parser.add_argument("--docs", action="store_true", help=f"write them into {os.path.relpath(DOCS)}")
    args = parser.parse_args()
    begin, end = markers
    if args.markdown or args.docs:
        with open(args.out) as f:
            table = markdown(json.load(f)["rows"])
        if args.markdown:
            print(table)
        if args.docs:
            with open(DOCS) as f:
                text = f.read()
            head, rest = text.split(begin, 1)
            with open(DOCS, "w") as f:
                f.write(head + begin + "\n" + table + "\n" + end + rest.split(end, 1)[1])
        return
    directory = cache(args.cache)
    order = [c.name for c in all_cells()]
    chosen = [c for c in all_cells() if not args.which or c.table in args.which or c.name in args.which]
    results = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            results = {r["cell"]: r for r in json.load(f)["rows"]}
    for cell in chosen:
        kept = os.path.join(directory, f"{cell.name}.json")
        if os.path.exists(kept):
            with open(kept) as f:
                meta = json.load(f)
        elif args.retime:
            continue
        else:
            print(f"{cell.name}: compiling for {cell.target} ...", flush=True)
            meta = compile_one(cell, directory)
        results[cell.name] = r = row_of(cell, meta, directory)
        if "refused" in r:
            print(f"{cell.name}: refused: {r['refused']}", flush=True)
        else:
            print(
                f"{cell.name}: {r['tflops']:.1f} TFLOP/s/chip predicted, {cell.tflops} published ({r['error']:+.1%}); "
                f"step {r['step_s']:.2f} s; compiled in {r['compile_seconds']:.0f} s",
                flush=True,
            )
        with open(args.out, "w") as f:
            rows = sorted(results.values(), key=lambda r: order.index(r["cell"]))
            json.dump({"source": source, "rows": rows}, f, indent=1)
            f.write("\n")


def main() -> None:
    tables_main(__doc__, cells, compile_cell, row, OUT, (BEGIN, END), SOURCE, cache_dir)


if __name__ == "__main__":
    main()
