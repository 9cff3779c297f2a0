"""Calling compiled sharded programs: shardkit against jax.jit, side by side in one process, 8 CPU devices.

Rows (steady state, per call):
1. ``x * 2`` on a (8, 128) float32 array sharded P('x', 'y') over a 4x2 mesh: ``sk.jit(f)(x)`` and the AOT
   ``Compiled(x)`` (target <= 1.0x jax.jit, aim 0.95);
2. the same with 100 arguments in a pytree (a dict of 100 such arrays, summed);
3. ``x * 2`` on 1 device, on an Array and on a numpy array (C++ dispatch hands shardkit a host value to place);
4. ``x * 2`` donating its argument (``y = f(y)``);
5. jax's own ``jax.jit(f)(x)`` and eager ``x * 2`` on an array shardkit built against the same on one jax built
   (target <= 1.05x for ``jax.jit``);
6. one training step of a 2-D (data x model) sharded MLP, value_and_grad + SGD, donating the weights
   (target <= 1.0x).

Timing: each round runs a burst of calls on each side (the last one blocked until ready, so queued work never
spills into the other side's timing); a run's figure is the median over its rounds of shardkit's time over
jax's time in the same round. ``--runs`` runs; the summary prints min/median/max over runs.

Run: .venv/bin/python benchmarks/bench_dispatch.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _timing import fmt, paired, spread  # noqa: E402
from jax.sharding import NamedSharding as JNS, PartitionSpec as JP  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402

MESH = sk.make_mesh((4, 2), ("x", "y"))
JMESH = jax.sharding.Mesh(MESH.devices, MESH.axis_names)
HOST = np.arange(8 * 128, dtype=np.float32).reshape(8, 128)
BURST = 20


def pair(*spec):
    return sk.NamedSharding(MESH, P(*spec)), JNS(JMESH, JP(*spec))


def burst(call, n=BURST):
    """``n`` back-to-back calls, then a wait for the last."""

    def run():
        for _ in range(n - 1):
            call()
        jax.block_until_ready(call())

    return run


def chained(f, state, key, n=BURST):
    """``n`` calls of ``state[key] = f(state[key])`` (a donated argument is consumed by each call)."""

    def run():
        for _ in range(n):
            state[key] = f(state[key])
        jax.block_until_ready(state[key])

    return run


def sharded_x2():
    s, js = pair("x", "y")
    x, jx = sk.device_put(HOST, s), jax.device_put(HOST, js)
    f = sk.jit(lambda a: a * 2, in_shardings=s, out_shardings=s)
    jf = jax.jit(lambda a: a * 2, in_shardings=js, out_shardings=js)
    compiled = f.lower(x).compile()
    return {
        "jax": burst(lambda: jf(jx)),
        "sk.jit(f)(x)": burst(lambda: f(x)),
        "Compiled(x)": burst(lambda: compiled(x)),
    }


def jax_on_shardkit():
    """jax's own functions on arrays shardkit built (jax's own Array type, carrying shardkit's sharding) against
    the same calls on arrays jax built: ``jax.jit(f)(x)`` (target <= 1.05) and an eager ``x * 2``."""
    s, js = pair("x", "y")
    x, jx = sk.device_put(HOST, s), jax.device_put(HOST, js)
    jf = jax.jit(lambda a: a * 2)
    return {
        "jax": burst(lambda: jf(jx)),
        "jax.jit(f)(shardkit-built)": burst(lambda: jf(x)),
        "eager x * 2, jax-built": burst(lambda: jx * 2),
        "eager x * 2, shardkit-built": burst(lambda: x * 2),
    }


def profile():
    """The steady-state call taken apart, cumulatively: XLA's ``execute_sharded`` with jaxlib's result handler is
    the floor every path shares; shardkit's Python path (the first call of a signature, and signatures C++
    dispatch keeps no record of) adds its checks; ``sk.jit``'s steady state runs in jaxlib's C++ dispatch."""
    s, js = pair("x", "y")
    x, jx = sk.device_put(HOST, s), jax.device_put(HOST, js)
    f = sk.jit(lambda a: a * 2, in_shardings=s, out_shardings=s)
    jf = jax.jit(lambda a: a * 2, in_shardings=js, out_shardings=js)
    f(x)
    compiled = f.lower(x).compile()
    executable, handlers = compiled._executable, compiled._results
    return {
        "jax": burst(lambda: jf(jx)),
        "execute_sharded + handler": burst(lambda: executable.execute_sharded([x]).consume_with_handlers(handlers)[0]),
        "Python path (checks, execute, outputs)": burst(lambda: compiled.call_flat([x])[0]),
        "sk.jit(f)(x), C++ dispatch": burst(lambda: f(x)),
    }


def python_steps() -> None:
    """What each step of shardkit's Python path costs alone (timeit, warm caches, no execution in between)."""
    import timeit

    from shardkit.executor.arguments import call_key, flatten_call
    from shardkit.mesh import current_mesh

    s, _ = pair("x", "y")
    x = sk.device_put(HOST, s)
    f = sk.jit(lambda a: a * 2, in_shardings=s, out_shardings=s)
    f(x)
    leaves, tree = flatten_call((x,), {})
    key = call_key(leaves, tree, (), current_mesh())
    handler = f.lower(x).compile()._handlers[0]
    steps = {
        "flatten_call": lambda: flatten_call((x,), {}),
        "call_key": lambda: call_key(leaves, tree, (), current_mesh()),
        "cache lookup": lambda: f._calls.get(key),
        "argument check (shape, dtype, sharding, pieces)": lambda: handler(x),
    }
    print("Python path steps alone, min over 7 x 20000 calls:")
    for name, step in steps.items():
        best = min(timeit.repeat(step, number=20000, repeat=7)) / 20000
        print(f"  {name:52s} {fmt(best)}")


def pytree_100():
    s, js = pair("x", "y")
    tree = {f"w{i:03d}": sk.device_put(HOST + i, s) for i in range(100)}
    jtree = {k: jax.device_put(np.asarray(v), js) for k, v in tree.items()}
    total = lambda t: sum(t.values())  # noqa: E731
    f, jf = sk.jit(total, out_shardings=s), jax.jit(total, out_shardings=js)
    np.testing.assert_array_equal(np.asarray(f(tree)), np.asarray(jf(jtree)))
    return {"jax": burst(lambda: jf(jtree), 5), "sk.jit(f)(tree)": burst(lambda: f(tree), 5)}


def one_device():
    device = jax.devices()[0]
    x, jx = sk.device_put(HOST, device), jax.device_put(HOST, device)
    f, jf = sk.jit(lambda a: a * 2), jax.jit(lambda a: a * 2)
    return {"jax": burst(lambda: jf(jx)), "sk.jit(f)(x)": burst(lambda: f(x))}


def one_device_numpy():
    f, jf = sk.jit(lambda a: a * 2), jax.jit(lambda a: a * 2)
    return {"jax": burst(lambda: jf(HOST)), "sk.jit(f)(numpy)": burst(lambda: f(HOST))}


def donated():
    s, js = pair("x", "y")
    f = sk.jit(lambda a: a * 2, in_shardings=s, out_shardings=s, donate_argnums=0)
    jf = jax.jit(lambda a: a * 2, in_shardings=js, out_shardings=js, donate_argnums=0)
    state = {"sk": sk.device_put(HOST, s), "jax": jax.device_put(HOST, js)}
    return {"jax": chained(jf, state, "jax"), "sk.jit(f)(y), donated": chained(f, state, "sk")}


def mlp_step():
    batch, width, layers = 256, 512, 4
    data, _ = pair("x", None)
    col, _ = pair(None, "y")
    row, _ = pair("y", None)
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal((width, width)).astype(np.float32) / np.sqrt(width) for _ in range(layers)]
    w_shard = [col if i % 2 == 0 else row for i in range(layers)]
    xs = rng.standard_normal((batch, width)).astype(np.float32)

    def loss(ws, x):
        h = x
        for w in ws:
            h = jnp.tanh(h @ w)
        return jnp.mean(h**2)

    def step(ws, x):
        value, grads = jax.value_and_grad(loss)(ws, x)
        return [w - 0.1 * g for w, g in zip(ws, grads)], value

    f = sk.jit(
        step, in_shardings=(w_shard, data), out_shardings=(w_shard, sk.NamedSharding(MESH, P())), donate_argnums=0
    )
    to_jax = lambda s: JNS(JMESH, JP(*s.spec))  # noqa: E731
    jf = jax.jit(
        step,
        in_shardings=([to_jax(s) for s in w_shard], to_jax(data)),
        out_shardings=([to_jax(s) for s in w_shard], JNS(JMESH, JP())),
        donate_argnums=0,
    )
    state = {
        "sk": [sk.device_put(w, s) for w, s in zip(weights, w_shard)],
        "jax": [jax.device_put(w, to_jax(s)) for w, s in zip(weights, w_shard)],
    }
    x, jx = sk.device_put(xs, data), jax.device_put(xs, to_jax(data))

    def run(side, fn, arg):
        def one():
            for _ in range(3):
                state[side], value = fn(state[side], arg)
            value.block_until_ready()

        return one

    fns = {"jax": run("jax", jf, jx), "sk.jit(step)": run("sk", f, x)}
    for fn in fns.values():
        fn()
    np.testing.assert_allclose(np.asarray(state["sk"][0]), np.asarray(state["jax"][0]), rtol=1e-4, atol=1e-5)
    return fns


CASES = [
    ("x * 2, (8, 128) f32 P('x','y') on 4x2", sharded_x2, 401, "<= 1.0 (aim 0.95)"),
    ("the same call taken apart (cumulative)", profile, 401, "profile"),
    ("jax's functions on shardkit-built arrays: jax.jit, eager x * 2", jax_on_shardkit, 201, "jax.jit <= 1.05"),
    ("100 arguments in a pytree, summed", pytree_100, 61, "measured"),
    ("x * 2 on 1 device", one_device, 401, "measured"),
    ("x * 2 on 1 device, a numpy argument", one_device_numpy, 401, "measured"),
    ("x * 2, donated argument", donated, 401, "measured"),
    ("MLP training step, 4 layers, B=256 D=512, data x model on 4x2", mlp_step, 21, "<= 1.0"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", help="run the cases whose title contains this")
    args = parser.parse_args()
    summary = []
    for title, make, rounds, target in CASES:
        if args.only and args.only not in title:
            continue
        if make is profile:
            python_steps()
        fns = make()
        for _ in range(3):  # warm up both sides (compiles, caches, allocator)
            for fn in fns.values():
                fn()
        per_run: dict[str, list[float]] = {name: [] for name in fns if name != "jax"}
        print(f"{title} (target {target})")
        for run in range(args.runs):
            result = paired(fns, "jax", rounds=rounds)
            line = "  ".join(f"{name} {ratio:.3f}x" for name, (ratio, _) in result.items() if name != "jax")
            print(f"  run {run + 1}: jax {fmt(result['jax'][1])} per burst;  {line}", flush=True)
            for name in per_run:
                per_run[name].append(result[name][0])
        summary += [(title, name, ratios, target) for name, ratios in per_run.items()]
    print("\nshardkit / jax.jit, min/median/max over runs:")
    for title, name, ratios, target in summary:
        print(f"  {title:62s} {name:24s} {spread(ratios)}   target {target}")


if __name__ == "__main__":
    main()
