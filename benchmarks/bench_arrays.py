"""Host <-> device data paths of shardkit against jax's and a plain memcpy, 8 virtual CPU devices: placing host
data, gathering it back (``sk.device_get`` against ``np.asarray`` of a jax-built array) and resharding.

    python benchmarks/bench_arrays.py                         # 256 MiB float32 (8192 x 8192), 3 runs of 5 rounds
    python benchmarks/bench_arrays.py --runs 5                # the closing-note figures
    python benchmarks/bench_arrays.py --mib 16 --runs 1       # quick smoke run (SK_BENCH_MIB works too)

Reference: ``np.copyto(np.empty_like(src), src)``, a memcpy into fresh memory, which pays the same first-touch
page faults as any function that returns new memory (a memcpy into a prefaulted buffer is printed alongside).
Every row moves the same bytes (the array once). Per round each side runs once, in an order that rotates;
a run's figures are the medians over its rounds of memcpy time / shardkit time ("x memcpy", higher is
faster) and of jax time / shardkit time ("x jax"). The summary gives min/median/max over runs and checks
the target against the worst run. jax's gathers use fresh Array objects over the same buffers, so no cached host
value is reused (``sk.device_get`` caches nothing).

Targets (docs/design.md): callback and device_put >= 0.8x memcpy and >= 3x jax; gathers and reshards
>= 0.8x memcpy and >= 1x jax.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import samples, spread  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402

LAYOUTS = [("rows P('x')", ("x",)), ("cols P(None,'x')", (None, "x")), ("2-d P('x','y')", ("x", "y"))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=int(os.environ.get("SK_BENCH_MIB", "256")))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", help="run the rows whose name contains this")
    args = parser.parse_args()
    side = math.isqrt(args.mib * 2**20 // 4) // 64 * 64
    src = np.random.default_rng(0).standard_normal((side, side), dtype=np.float32)
    prefaulted = np.empty_like(src)
    np.copyto(prefaulted, src)
    line, grid = sk.make_mesh((8,), ("x",)), sk.make_mesh((4, 2), ("x", "y"))  # rows/cols on 8, 2-d on 4x2

    def shardings(*spec):
        mesh = grid if "y" in str(spec) else line
        jmesh = jax.sharding.Mesh(mesh.devices, mesh.axis_names)
        return sk.NamedSharding(mesh, P(*spec)), jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec(*spec))

    def callback(s, js):
        return (
            lambda: sk.make_array_from_callback(src.shape, s, lambda i: src[i]).block_until_ready(),
            lambda: jax.make_array_from_callback(src.shape, js, lambda i: src[i]).block_until_ready(),
        )

    def put(s, js):
        return lambda: sk.device_put(src, s).block_until_ready(), lambda: jax.device_put(src, js).block_until_ready()

    def gather(s, js):
        if s.is_fully_replicated:  # 2 GiB of device memory: place it once, and give jax the same buffers
            x = sk.device_put(src, s)
            j = jax.make_array_from_single_device_arrays(src.shape, js, [sh.data for sh in x.addressable_shards])
        else:
            x, j = sk.device_put(src, s), jax.device_put(src, js)
        buffers = [sh.data for sh in j.addressable_shards]
        return (  # jax caches np.asarray's value on the array: a fresh array over the same buffers each time
            lambda: sk.device_get(x),
            lambda: np.asarray(jax.make_array_from_single_device_arrays(src.shape, js, buffers)),
        )

    def reshard(pair1, pair2):
        (s1, js1), (s2, js2) = pair1, pair2
        x, j = sk.device_put(src, s1), jax.device_put(src, js1)
        return lambda: sk.device_put(x, s2).block_until_ready(), lambda: jax.device_put(j, js2).block_until_ready()

    rows = []  # (name, make, target x memcpy, target x jax)
    for label, spec in LAYOUTS:
        rows.append((f"make_array_from_callback {label}", lambda spec=spec: callback(*shardings(*spec)), 0.8, 3.0))
    for label, spec in LAYOUTS:
        rows.append((f"device_put(numpy) {label}", lambda spec=spec: put(*shardings(*spec)), 0.8, 3.0))
    for label, spec in [*LAYOUTS, ("replicated P()", ())]:
        target = (None, 1.0) if spec == () else (0.8, 1.0)  # replicated: zero-copy on both sides
        rows.append((f"gather sk.device_get {label}", lambda spec=spec: gather(*shardings(*spec)), *target))
    for a, b in [(("x",), (None, "x")), (("x", "y"), ("y", "x")), (("y", "x"), ("x", "y"))]:
        rows.append((f"reshard P{a} -> P{b}", lambda a=a, b=b: reshard(shardings(*a), shardings(*b)), 0.8, 1.0))
    if args.only:
        rows = [r for r in rows if args.only in r[0]]

    def memcpy():
        np.copyto(np.empty_like(src), src)

    def memcpy_prefaulted():
        np.copyto(prefaulted, src)

    print(f"{side}x{side} float32 = {src.nbytes / 2**20:.0f} MiB on {len(jax.devices())} CPU devices")
    results: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in rows}
    for run in range(args.runs):
        print(
            f"\nrun {run + 1}: medians of {args.rounds} rounds\n{'operation':44s} {'memcpy':>8s} {'prefault':>8s} "
            f"{'shardkit':>8s} {'jax':>8s} {'sk GB/s':>8s} {'x memcpy':>8s} {'x jax':>8s}"
        )
        for name, make, *_ in rows:
            ours, theirs = make()
            ours(), theirs()  # warm up: compiles, recycled buffers
            t = samples({"memcpy": memcpy, "pre": memcpy_prefaulted, "sk": ours, "jax": theirs}, rounds=args.rounds)
            x_mem = statistics.median(m / s for m, s in zip(t["memcpy"], t["sk"]))
            x_jax = statistics.median(j / s for j, s in zip(t["jax"], t["sk"]))
            results[name].append((x_mem, x_jax))
            med = {k: statistics.median(v) for k, v in t.items()}
            print(
                f"{name:44s} {med['memcpy'] * 1e3:6.1f}ms {med['pre'] * 1e3:6.1f}ms {med['sk'] * 1e3:6.1f}ms "
                f"{med['jax'] * 1e3:6.1f}ms {src.nbytes / med['sk'] / 1e9:8.2f} {x_mem:7.2f}x {x_jax:7.2f}x",
                flush=True,
            )
            del ours, theirs

    print(f"\nmin/median/max over {args.runs} runs; a target is met when the worst run meets it")
    print(f"{'operation':44s} {'x memcpy':>17s} {'target':>7s} {'x jax':>17s} {'target':>7s}")
    for name, _, need_mem, need_jax in rows:
        mem, vs_jax = [r[0] for r in results[name]], [r[1] for r in results[name]]
        ok = (need_mem is None or min(mem) >= need_mem) and min(vs_jax) >= need_jax
        need = "-" if need_mem is None else f">={need_mem}"
        print(
            f"{name:44s} {spread(mem):>17s} {need:>7s} {spread(vs_jax):>17s} {'>=' + str(need_jax):>7s}  "
            f"{'ok' if ok else 'MISS'}"
        )


if __name__ == "__main__":
    main()
