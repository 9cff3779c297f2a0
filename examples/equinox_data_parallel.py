"""Equinox on shardkit: the data-parallel guide's MLP with eqx.filter_shard, written once and run under
equinox.filter_jit and under its shardkit counterpart, sk.filter_jit.

Run: python examples/equinox_data_parallel.py (8 virtual CPU devices)
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


def train(fw: Framework, steps: int = 3) -> tuple[list[float], Any]:
    """Equinox's data-parallel guide: an ``eqx.nn.MLP``, ``eqx.filter_shard`` for the model (replicated) and the
    batch (over 'batch'), optax's adam, a filtered jit."""
    import equinox as eqx
    import optax

    mesh = fw.make_mesh((8,), ("batch",))
    data_sharding = fw.NamedSharding(mesh, fw.P("batch"))
    replicated = fw.NamedSharding(mesh, fw.P())
    model = eqx.nn.MLP(in_size=4, out_size=1, width_size=16, depth=2, key=jax.random.PRNGKey(0))
    optim = optax.adam(1e-2)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    model, opt_state = eqx.filter_shard((model, opt_state), replicated)

    def compute_loss(model, x, y):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    @fw.filter_jit
    def train_step(model, opt_state, x, y):
        model, opt_state = eqx.filter_shard((model, opt_state), replicated)
        x, y = eqx.filter_shard((x, y), data_sharding)
        loss, grads = eqx.filter_value_and_grad(compute_loss)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        model = eqx.apply_updates(model, updates)
        model, opt_state = eqx.filter_shard((model, opt_state), replicated)
        return model, opt_state, loss

    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x = rng.normal(size=(64, 4)).astype(np.float32)
        y = rng.normal(size=(64, 1)).astype(np.float32)
        x, y = eqx.filter_shard((x, y), data_sharding)
        model, opt_state, loss = train_step(model, opt_state, x, y)
        losses.append(float(loss))
    return losses, eqx.filter(model, eqx.is_array)


if __name__ == "__main__":
    compare(train)
