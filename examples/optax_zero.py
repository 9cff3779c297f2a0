"""optax on shardkit: adamw with gradient accumulation, parameters sharded over 'model', the optimizer
state over 'data' (ZeRO), written once and run under jax.jit and under sk.jit.

Run: python examples/optax_zero.py (8 virtual CPU devices)
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


def train(fw: Framework, steps: int = 4) -> tuple[list[float], Any]:
    """optax's adamw with gradient accumulation (``MultiSteps``), parameters sharded over 'model' and the
    optimizer state over 'data' (ZeRO), a data-parallel batch."""
    import optax

    mesh = fw.make_mesh((4, 2), ("data", "model"))
    rng = np.random.default_rng(0)
    params = {
        "w1": rng.normal(size=(16, 32)).astype(np.float32),
        "b1": np.zeros(32, np.float32),
        "w2": rng.normal(size=(32, 4)).astype(np.float32),
    }
    placement = {
        "w1": fw.NamedSharding(mesh, fw.P(None, "model")),
        "b1": fw.NamedSharding(mesh, fw.P("model")),
        "w2": fw.NamedSharding(mesh, fw.P("model", None)),
    }
    params = fw.device_put(params, placement)
    tx = optax.MultiSteps(optax.adamw(1e-2), every_k_schedule=2)

    def zero(x):
        return fw.NamedSharding(mesh, fw.P("data") if x.ndim and x.shape[0] % 4 == 0 else fw.P())

    opt_state = jax.tree.map(lambda x: fw.device_put(x, zero(x)), tx.init(params))

    def loss_fn(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    @fw.jit
    def step(p, s, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    batch = fw.NamedSharding(mesh, fw.P("data"))
    losses = []
    for _ in range(steps):
        x = fw.device_put(rng.normal(size=(32, 16)).astype(np.float32), batch)
        y = fw.device_put(rng.normal(size=(32, 4)).astype(np.float32), batch)
        params, opt_state, loss = step(params, opt_state, x, y)
        losses.append(float(loss))
    return losses, params


if __name__ == "__main__":
    compare(train)
