"""A shard_map user's program, written as jax's shard_map guide writes it: a data-parallel training step whose
per-device body computes the loss and gradients of its batch shard and averages them with ``lax.pmean``, and a
block matmul whose ``psum`` sums the partial products of the contracting dimension's shards. Written once and run
under jax and under shardkit: ``from shardkit import P`` and shardkit's mesh go straight into ``jax.shard_map``.

Run: python examples/shard_map_user.py (8 virtual CPU devices)
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
    mesh = fw.make_mesh((4, 2), ("data", "model"))
    P = fw.P
    rng = np.random.default_rng(0)
    params = fw.device_put(
        {"w": rng.normal(size=(16, 8)).astype(np.float32), "b": np.zeros(8, np.float32)},
        fw.NamedSharding(mesh, P()),
    )
    x = fw.device_put(rng.normal(size=(32, 16)).astype(np.float32), fw.NamedSharding(mesh, P("data")))
    y = fw.device_put(rng.normal(size=(32, 8)).astype(np.float32), fw.NamedSharding(mesh, P("data")))

    def local_step(params, x, y):  # one device's batch shard; gradients averaged over 'data'
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"] + p["b"] - y) ** 2))(params)
        loss, grads = jax.lax.pmean((loss, grads), "data")
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss

    step = fw.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P("data"), P("data")), out_specs=(P(), P())))

    def block_matmul(a, b):  # a: rows over 'data', columns over 'model'; b: rows over 'model'
        return jax.lax.psum(a @ b, "model")

    matmul = fw.jit(
        jax.shard_map(block_matmul, mesh=mesh, in_specs=(P("data", "model"), P("model", None)), out_specs=P("data"))
    )
    losses = []
    for _ in range(steps):
        params, loss = step(params, x, y)
        losses.append(float(loss))
    a = fw.device_put(
        np.arange(32 * 16, dtype=np.float32).reshape(32, 16) / 100, fw.NamedSharding(mesh, P("data", "model"))
    )
    product = matmul(a, params["w"])
    np.testing.assert_allclose(np.asarray(product), np.asarray(a) @ np.asarray(params["w"]), rtol=1e-5)
    return losses, {**params, "product": product}


if __name__ == "__main__":
    compare(train)
