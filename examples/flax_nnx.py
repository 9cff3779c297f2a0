"""Flax NNX on shardkit: a model whose parameters carry sharding names (``out_sharding``), Dropout with its
random state in ``nnx.Rngs`` (typed PRNG keys), ``nnx.Optimizer``, and the functional train step of NNX's
performance guide (``nnx.split`` / ``nnx.merge`` around a plain jit, the graph definition static); written once
and run under jax.jit and under sk.jit.

Run: python examples/flax_nnx.py (8 virtual CPU devices)
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

from typing import Any  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402
from frameworks import Framework, compare  # noqa: E402


class DotReluDot(nnx.Module):
    def __init__(self, depth: int, rngs: nnx.Rngs):
        init = nnx.initializers.lecun_normal()
        self.w1 = nnx.Param(init(rngs.params(), (depth, 4 * depth)), out_sharding=(None, "model"))
        self.w2 = nnx.Param(init(rngs.params(), (4 * depth, depth)), out_sharding=("model", None))
        self.dropout = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x):
        h = self.dropout(nnx.relu(x @ self.w1))
        return h @ self.w2


def train(fw: Framework, steps: int = 3) -> tuple[list[float], Any]:
    mesh = fw.make_mesh((4, 2), ("data", "model"))
    with jax.set_mesh(mesh):  # flax creates sharding-annotated parameters sharded, on the mesh in scope
        model = DotReluDot(16, rngs=nnx.Rngs(params=0, dropout=1))
        optimizer = nnx.Optimizer(model, optax.adamw(1e-2), wrt=nnx.Param)
        graphdef, state = nnx.split((model, optimizer))

        def loss_fn(model, x, y):
            return jnp.mean((model(x) - y) ** 2)

        def step(graphdef, state, x, y):
            model, optimizer = nnx.merge(graphdef, state)
            loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
            optimizer.update(model, grads)
            return loss, nnx.state((model, optimizer))

        step = fw.jit(step, static_argnums=0)
        rng, batch = np.random.default_rng(0), fw.NamedSharding(mesh, fw.P("data"))
        losses = []
        for _ in range(steps):
            x = fw.device_put(rng.normal(size=(32, 16)).astype(np.float32), batch)
            y = fw.device_put(rng.normal(size=(32, 16)).astype(np.float32), batch)
            loss, state = step(graphdef, state, x, y)
            losses.append(float(loss))
        model, _ = nnx.merge(graphdef, state)
    return losses, nnx.state(model, nnx.Param)


if __name__ == "__main__":
    compare(train)
