"""What running passes in a child process costs (shardkit.passes.isolation), next to running them in-process.

The program is bench_passes' MLP training step (4x2 mesh), lowered by ``sk.jit``. Timed, interleaved rounds:
- ``PassManager("propagate,export-gspmd").run`` with isolation ``none`` (all in-process), ``crash-prone`` (the
  default: propagate's jaxlib pipeline goes to the worker, as bytecode both ways) and ``all``;
- jax's own ``jax.jit(step, in_shardings=...).lower(...)`` of the same step (caches cleared), for scale;
- parsing the step's text: ``ir.Module.parse`` alone, ``isolation.parse`` as the tools call it (no crash-prone
  syntax: in-process, after the nesting check and the screen for it), and in the worker (what input holding
  crash-prone syntax costs: the text there, its bytecode back, read again here);
- the worker's start-up (paid once per process), and shardkit-opt as lit runs it (a fresh process per run)
  with ``-propagate`` in-process and isolated.
Ratios are per round (isolated / in-process), reported as min / median / max.

Run: .venv/bin/python benchmarks/bench_isolation.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
from _timing import fmt
from bench_passes import JMESH, MESH, SHAPES, SPECS, step
from jax.sharding import NamedSharding as JNS, PartitionSpec as JP
from jaxlib.mlir import ir

import shardkit as sk
from shardkit.dialects import context, parsing
from shardkit.passes import isolation

PIPELINE = "propagate,export-gspmd"
ROUNDS = 11


def samples(fns: dict, setup=None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            if setup is not None:
                setup()
            start = time.perf_counter()
            fn()
            out[name].append(time.perf_counter() - start)
    return out


def ratio_line(label: str, num: list[float], den: list[float]) -> str:
    ratios = [a / b for a, b in zip(num, den)]
    return f"  {label:44s} {min(ratios):6.2f} / {statistics.median(ratios):6.2f} / {max(ratios):6.2f}"


def main() -> None:
    structs = [sk.ShapeDtypeStruct(s, jnp.float32, sharding=sk.NamedSharding(MESH, p)) for s, p in zip(SHAPES, SPECS)]
    text = sk.jit(step).lower(*structs).as_text()
    modules: list[ir.Module] = []
    managers = {policy: sk.passes.PassManager(PIPELINE, isolation=policy) for policy in isolation.POLICIES}
    jshard = [JNS(JMESH, JP(*p)) for p in SPECS]
    jargs = [jax.ShapeDtypeStruct(s, jnp.float32) for s in SHAPES]
    isolation.prestart()
    managers["all"].run(ir.Module.parse(text, context()))  # the worker is up and warm
    times = samples(
        {
            "in-process (isolation=none)": lambda: managers["none"].run(modules.pop()),
            "default (isolation=crash-prone)": lambda: managers["crash-prone"].run(modules.pop()),
            "every pass isolated (isolation=all)": lambda: managers["all"].run(modules.pop()),
            "jax.jit(...).lower(...), cold": lambda: (
                jax.clear_caches(),
                jax.jit(step, in_shardings=jshard).lower(*jargs),
            ),
        },
        setup=lambda: modules.append(ir.Module.parse(text, context())),
    )
    print(f"MLP training step, {text.count(chr(10))} lines of StableHLO; pipeline {PIPELINE!r}; medians of {ROUNDS}")
    for name, values in times.items():
        print(f"  {name:44s} {fmt(statistics.median(values))}")
    print("ratios per round, min / median / max")
    base = times["in-process (isolation=none)"]
    print(ratio_line("crash-prone / in-process", times["default (isolation=crash-prone)"], base))
    print(ratio_line("all / in-process", times["every pass isolated (isolation=all)"], base))
    print(
        ratio_line(
            "crash-prone / jax lower", times["default (isolation=crash-prone)"], times["jax.jit(...).lower(...), cold"]
        )
    )

    source = parsing.Input(text, "step.mlir")
    ctx = context()

    def in_worker() -> None:
        with isolation.policy("all"):
            isolation.parse(source, ctx)

    parses = samples(
        {
            "ir.Module.parse": lambda: ir.Module.parse(text, ctx),
            "isolation.parse, in-process": lambda: isolation.parse(source, ctx),
            "isolation.parse, in the worker": in_worker,
        }
    )
    for name, values in parses.items():
        print(f"  {name:44s} {fmt(statistics.median(values))}")
    base = parses["ir.Module.parse"]
    print(ratio_line("isolation.parse in-process / parse", parses["isolation.parse, in-process"], base))
    print(ratio_line("isolation.parse in the worker / parse", parses["isolation.parse, in the worker"], base))

    starts = []
    for _ in range(5):
        isolation.shutdown()
        start = time.perf_counter()
        managers["all"].run(ir.Module.parse("func.func @main() { return }", context()))
        starts.append(time.perf_counter() - start)
    print(f"worker start-up + first request: min {fmt(min(starts))}, median {fmt(statistics.median(starts))}")

    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(text)
        f.flush()
        opt = [sys.executable, "-m", "shardkit.tools.opt", f.name, "-propagate", "-o", "/dev/null"]
        cli = samples(
            {
                "shardkit-opt -propagate, in-process": lambda: subprocess.run(
                    [*opt, "--isolate-passes=none"], check=True
                ),
                "shardkit-opt -propagate, isolated": lambda: subprocess.run(opt, check=True),
            }
        )
    for name, values in cli.items():
        print(f"  {name:44s} {fmt(statistics.median(values))}")
    print(
        ratio_line(
            "shardkit-opt isolated / in-process",
            cli["shardkit-opt -propagate, isolated"],
            cli["shardkit-opt -propagate, in-process"],
        )
    )


if __name__ == "__main__":
    main()
