"""Flax linen on shardkit: the "Scale up on multiple devices" guide's pattern. Parameters carry logical axis names
(``nn.with_logical_partitioning``), logical axis rules map them onto the mesh (``nn.logical_to_mesh_sharding``),
the initial state is created sharded by a jitted ``init`` with those out_shardings, and a jitted train step keeps
them; written once and run under jax.jit and under sk.jit.

Run: python examples/flax_linen_logical.py (8 virtual CPU devices)
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

from typing import Any  # noqa: E402

import flax.linen as nn  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from frameworks import Framework, compare  # noqa: E402

RULES = (("batch", "data"), ("hidden", "model"), ("embed", None))


class MLP(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x):
        init = nn.with_logical_partitioning(nn.initializers.lecun_normal(), ("embed", "hidden"))
        x = nn.Dense(self.hidden, kernel_init=init, use_bias=False)(x)
        x = nn.with_logical_constraint(nn.relu(x), ("batch", "hidden"))
        out_init = nn.with_logical_partitioning(nn.initializers.lecun_normal(), ("hidden", "embed"))
        return nn.Dense(x.shape[-1] // 2, kernel_init=out_init, use_bias=False)(x)


def train(fw: Framework, steps: int = 3) -> tuple[list[float], Any]:
    mesh = fw.make_mesh((4, 2), ("data", "model"))
    model, tx = MLP(), optax.sgd(0.1)
    x = np.random.default_rng(0).normal(size=(16, 64)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(16, 16)).astype(np.float32)

    def init(key, x):
        params = model.init(key, x)
        return params, tx.init(params)

    with nn.logical_axis_rules(RULES):
        abstract = jax.eval_shape(init, jax.random.key(0), x)
        specs = nn.get_partition_spec(abstract)
        shardings = nn.logical_to_mesh_sharding(specs, mesh, RULES)
        params, opt_state = fw.jit(init, out_shardings=shardings)(jax.random.key(0), x)
        batch = fw.NamedSharding(mesh, fw.P("data"))

        def loss_fn(params, x, y):
            return jnp.mean((model.apply(params, x) - y) ** 2)

        @fw.jit
        def step(params, opt_state, x, y):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        losses = []
        for _ in range(steps):
            params, opt_state, loss = step(params, opt_state, fw.device_put(x, batch), fw.device_put(y, batch))
            losses.append(float(loss))
    return losses, nn.meta.unbox(params)


if __name__ == "__main__":
    compare(train)
