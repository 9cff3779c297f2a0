"""The communication report's cost on a GPT-style train step, against the compile it describes (target < 0.1).

The program is ``examples/gpt_train_step.py`` (embeddings, 2 attention + MLP layers under ``lax.scan``,
Adam) on a 4x2 ("data", "model") mesh. Each round, interleaved:
- XLA compiling shardkit's lowered module (``compile_lowered`` on a fresh module, no cache);
- the XLA report of that executable (``shardkit.inspect.xla_report``, what ``Compiled.communication()`` runs);
- Shardy's plan of the lowered module (``shardkit.inspect.shardy_report``: three passes on a copy, then a walk);
- the explanation of XLA's report (``report.explain()``, what ``shardkit-report --explain`` adds: Shardy's plan
  with origin tracking on a copy, each reshard explained, XLA's collectives matched to it);
- jax compiling the same step (``jax.jit(...).lower(...).compile()``), for scale, and what a jax user does
  today to count collectives: ``as_text()`` and regular expressions (counts only; no bytes, axes or loops).
Ratios are per round (report / that round's shardkit compile); min / median / max over the rounds
(target for each: < 0.1).

Run: .venv/bin/python benchmarks/bench_report.py [ROUNDS]
"""

from __future__ import annotations

import dataclasses
import os
import re
import statistics
import sys
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import gpt_train_step as gpt  # noqa: E402
import jax  # noqa: E402
from _timing import fmt  # noqa: E402
from jax.sharding import (
    NamedSharding as JNS,  # noqa: E402
    PartitionSpec as JP,  # noqa: E402
)

import shardkit as sk  # noqa: E402
from shardkit import inspect  # noqa: E402
from shardkit.executor import compile_lowered  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
_COLLECTIVE = re.compile(r" (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(")


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    mesh = sk.make_mesh((4, 2), ("data", "model"))
    jmesh = jax.sharding.Mesh(mesh.devices, mesh.axis_names)
    step, args = gpt.build(mesh)
    lowered = step.lower(*args)._lowered
    devices = lowered.device_assignment
    jax_args = jax.tree.map(
        lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=JNS(jmesh, JP(*s.sharding.spec))),
        args,
        is_leaf=lambda s: isinstance(s, sk.ShapeDtypeStruct),
    )
    params = {k: JNS(jmesh, JP(*spec)) for k, (_, spec) in gpt.PARAMS.items()}
    scalar = JNS(jmesh, JP())
    jax_step = jax.jit(gpt.train_step, out_shardings=(params, params, params, scalar, scalar))

    names = ("compile", "report", "plan", "explain", "jax compile", "jax text+regex")
    rows: dict[str, list[float]] = {k: [] for k in names}
    for _ in range(ROUNDS):
        t, exe = timed(lambda: compile_lowered(dataclasses.replace(lowered, executables={})))
        rows["compile"].append(t)
        t, report = timed(lambda: inspect.xla_report(exe.hlo_modules()[0], devices, mesh, lowered.module))
        rows["report"].append(t)
        t, why = timed(report.explain)
        rows["explain"].append(t)
        t, plan = timed(lambda: inspect.shardy_report(lowered.module, mesh, devices))
        rows["plan"].append(t)
        jax.clear_caches()
        t, compiled = timed(lambda: jax_step.lower(*jax_args).compile())
        rows["jax compile"].append(t)
        t, counts = timed(lambda: len(_COLLECTIVE.findall(compiled.as_text())))
        rows["jax text+regex"].append(t)

    print(report)
    print(
        f"Shardy's plan: {len(plan.collectives)} collectives; XLA's program: {len(report.collectives)} "
        f"(jax's text holds {counts})\n"
    )
    print(f"GPT train step, {ROUNDS} rounds (medians):")
    for name, values in rows.items():
        print(f"  {name:16s} {fmt(statistics.median(values))}")
    print(f"explained: {len(report.collectives) - len(why.unexplained)} of {len(report.collectives)}\n")
    for name in ("report", "plan", "explain"):
        ratios = [r / c for r, c in zip(rows[name], rows["compile"])]
        print(
            f"  {name} / compile: min {min(ratios):.4f}  median {statistics.median(ratios):.4f}  "
            f"max {max(ratios):.4f}   (target < 0.1)"
        )
    ratios = [c / j for c, j in zip(rows["compile"], rows["jax compile"])]
    print(
        f"  shardkit compile / jax compile: min {min(ratios):.3f}  median {statistics.median(ratios):.3f}  "
        f"max {max(ratios):.3f}"
    )


if __name__ == "__main__":
    main()
