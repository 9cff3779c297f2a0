"""Compiling for a machine not at hand: the GPT step of ``examples/gpt_train_step.py`` compiled for TPU slices
(libtpu's compiler, compile-only devices) and for ``cpu:N``, by shardkit and by jax side by side (target: a
4,096-chip slice in under 10 s on 2 cores).

Each round, interleaved: shardkit (``step.lower(...).compile(target=...)`` on an AbstractMesh, a fresh
lowering each time) and jax (``jax.jit(train_step, in/out shardings on the topology's devices).trace(...)
.lower().compile()``, jax's own ahead-of-time path). The ratio is per round (shardkit / jax); min / median /
max over the rounds. Also the reports shardkit adds: communication, memory, time.

Run: .venv/bin/python benchmarks/bench_targets.py [ROUNDS]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import gpt_train_step as gpt  # noqa: E402
import jax  # noqa: E402
from _timing import spread  # noqa: E402
from jax.experimental import topologies  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit.executor import targets  # noqa: E402

CASES = [  # (target, mesh shape, libtpu topology and options for jax's side)
    ("tpu-v5e:16x16", (16, 16), ("v5e:16x16", {})),
    ("tpu-v5p:8x16x16", (128, 16), ("v5p:8x16x16", {"chip_config_name": "megacore"})),
    ("tpu-v5p:16x16x16", (256, 16), ("v5p:16x16x16", {"chip_config_name": "megacore"})),
    ("cpu:256", (16, 16), None),
]


def shardkit_compile(target: str, shape: tuple[int, int]):
    step, args = gpt.build(sk.AbstractMesh(shape, ("data", "model")), batch=2 * shape[0])
    sk.clear_caches()  # a fresh lowering and compile each round
    return step.lower(*args).compile(target=target)


def jax_compile(topology: tuple[str, dict], shape: tuple[int, int]):
    name, options = topology
    devices = topologies.get_topology_desc(name, platform="tpu", **options).devices
    mesh = jax.sharding.Mesh(jax.experimental.mesh_utils.create_device_mesh(shape, devices), ("data", "model"))
    named = {k: jax.sharding.NamedSharding(mesh, jax.P(*spec)) for k, (_, spec) in gpt.PARAMS.items()}
    batch = jax.sharding.NamedSharding(mesh, jax.P("data", None))
    scalar = jax.sharding.NamedSharding(mesh, jax.P())
    step = jax.jit(
        gpt.train_step,
        in_shardings=(named, named, named, scalar, batch, batch),
        out_shardings=(named, named, named, scalar, scalar),
        donate_argnums=(0, 1, 2),
    )
    state = {k: jax.ShapeDtypeStruct(s, "float32") for k, (s, _) in gpt.PARAMS.items()}
    tokens = jax.ShapeDtypeStruct((2 * shape[0], gpt.SEQ), "int32")
    return step.trace(state, state, state, jax.ShapeDtypeStruct((), "float32"), tokens, tokens).lower().compile()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"{jax.devices()[0].platform} x{len(jax.devices())}, {os.cpu_count()} cores; {rounds} rounds")
    for target, shape, topology in CASES:
        targets.target(target)  # load libtpu and make the devices once, outside the timing
        ours, theirs, ratios = [], [], []
        for _ in range(rounds):
            start = time.perf_counter()
            compiled = shardkit_compile(target, shape)
            ours.append(time.perf_counter() - start)
            if topology is not None:
                start = time.perf_counter()
                jax_compile(topology, shape)
                theirs.append(time.perf_counter() - start)
                ratios.append(ours[-1] / theirs[-1])
        start = time.perf_counter()
        report = compiled.communication()
        memory = compiled.memory()
        step = report.time(target.split(":")[0]) if target.startswith("tpu-") else None
        reports = time.perf_counter() - start
        line = f"{target:18} {len(targets.target(target).devices):5} devices: shardkit "
        line += f"{statistics.median(ours):6.2f} s (min {min(ours):.2f})"
        if ratios:
            line += f", jax {statistics.median(theirs):6.2f} s, ratio {spread(ratios)}"
        line += f"; reports {reports:.2f} s: {len(report.collectives)} collectives, peak/total {memory.total:,} B"
        if step is not None:
            line += f", step {step.step * 1e3:.2f} ms"
        print(line)


if __name__ == "__main__":
    main()
