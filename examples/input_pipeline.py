"""A data-parallel input loop on shardkit: each step's batch is built from this process's rows with
``make_array_from_process_local_data`` (as a multi-host input pipeline builds it), placed over 'data', and fed to
a jitted step whose parameters stay replicated; written once and run under jax.jit and under sk.jit.

Run: python examples/input_pipeline.py (8 virtual CPU devices)
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

from typing import Any  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from frameworks import Framework, compare  # noqa: E402


def batches(steps: int, size: int = 64):
    """A host-side loader: one (x, y) pair of numpy arrays per step, this process's rows."""
    rng = np.random.default_rng(0)
    true_w = rng.normal(size=(8, 1)).astype(np.float32)
    for _ in range(steps):
        x = rng.normal(size=(size, 8)).astype(np.float32)
        yield x, x @ true_w + 0.01 * rng.normal(size=(size, 1)).astype(np.float32)


def train(fw: Framework, steps: int = 5) -> tuple[list[float], Any]:
    mesh = fw.make_mesh((8,), ("data",))
    rows, replicated = fw.NamedSharding(mesh, fw.P("data")), fw.NamedSharding(mesh, fw.P())
    params = fw.device_put({"w": np.zeros((8, 1), np.float32)}, replicated)

    @fw.jit
    def step(params, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"] - y) ** 2))(params)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss

    losses = []
    for x, y in batches(steps):
        x = fw.make_array_from_process_local_data(rows, x)
        y = fw.make_array_from_process_local_data(rows, y)
        params, loss = step(params, x, y)
        losses.append(float(loss))
    return losses, params


if __name__ == "__main__":
    compare(train)
