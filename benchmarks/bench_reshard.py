"""Resharding, host path against the compiled program, against jax, 8 virtual CPU devices.

For each size and layout pair: ``sk.device_put(x, target)`` (on CPU the rule picks the host path: recycled
buffers, one copy per piece), ``reshard_on_devices(x, target, prefer="program")`` (the compiled collective
program), ``jax.device_put`` (jax compiles a program too) and a memcpy of the same bytes into fresh memory.
Per round each runs once, in a rotating order; a run's figures are medians over rounds of time / the host
path's time in the same round. This decides ``shardkit.executor.reshard.use_program`` on CPU.

Run: .venv/bin/python benchmarks/bench_reshard.py [--runs 3] [--max-mib 256]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt, samples, spread  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402
from shardkit.executor import reshard_on_devices  # noqa: E402

DEVICES = jax.devices()
LINE = sk.Mesh(np.array(DEVICES), ("x",))
GRID = sk.make_mesh((4, 2), ("x", "y"))
REVERSED = sk.Mesh(np.array(DEVICES[::-1]).reshape(4, 2), ("x", "y"))
PAIRS = [
    ("rows -> cols", sk.NamedSharding(LINE, P("x")), sk.NamedSharding(LINE, P(None, "x"))),
    ("P('x','y') -> P('y','x')", sk.NamedSharding(GRID, P("x", "y")), sk.NamedSharding(GRID, P("y", "x"))),
    (
        "P('x','y') -> reversed devices P('y','x')",
        sk.NamedSharding(GRID, P("x", "y")),
        sk.NamedSharding(REVERSED, P("y", "x")),
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--max-mib", type=int, default=256)
    args = parser.parse_args()
    sizes = [s for s in (4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20) if s <= args.max_mib << 20]
    summary: dict[tuple[str, int], dict[str, list[float]]] = {}
    for run in range(args.runs):
        print(f"run {run + 1}: medians of {args.rounds} rounds; ratios are time / host path time")
        for nbytes in sizes:
            side = int(np.sqrt(nbytes // 4)) // 64 * 64
            src = np.random.default_rng(0).standard_normal((side, side), dtype=np.float32)
            for name, s1, s2 in PAIRS:
                x = sk.device_put(src, s1)
                j = jax.device_put(src, s1.to_jax(2))
                js2 = s2.to_jax(2)
                fns = {
                    "host": lambda x=x, s2=s2: sk.device_put(x, s2).block_until_ready(),
                    "program": lambda x=x, s2=s2: reshard_on_devices(x, s2, prefer="program").block_until_ready(),
                    "jax": lambda j=j, js2=js2: jax.device_put(j, js2).block_until_ready(),
                    "memcpy": lambda src=src: np.copyto(np.empty_like(src), src),
                }
                for fn in fns.values():
                    fn()
                t = samples(fns, rounds=args.rounds)
                ratio = {k: statistics.median(a / b for a, b in zip(t[k], t["host"])) for k in fns if k != "host"}
                for k, v in ratio.items():
                    summary.setdefault((name, nbytes), {}).setdefault(k, []).append(v)
                print(
                    f"  {nbytes >> 10:7d} KiB {name:42s} host {fmt(statistics.median(t['host']))}  "
                    + "  ".join(f"{k} {v:.2f}x" for k, v in ratio.items()),
                    flush=True,
                )
    print("\nmin/median/max over runs of time / host path time (> 1: the host path is faster)")
    for (name, nbytes), ratios in summary.items():
        cells = "  ".join(f"{k} {spread(v)}" for k, v in ratios.items())
        print(f"  {nbytes >> 10:7d} KiB {name:42s} {cells}")


if __name__ == "__main__":
    main()
