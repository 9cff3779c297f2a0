"""Orbax on shardkit: a sharded training state saved with ``StandardCheckpointer``, its sharding metadata read back,
restored without a target (onto the layout it was saved with, which orbax reads from that metadata), onto the
shardings of its abstract twin (``orbax.checkpoint.utils.to_shape_dtype_struct``) and onto a different layout, and
trained on; written once and run under jax.jit and under sk.jit.

Run: python examples/orbax_checkpoint.py (8 virtual CPU devices)
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import orbax.checkpoint as ocp  # noqa: E402
from frameworks import Framework, compare  # noqa: E402


def train(fw: Framework, steps: int = 2) -> tuple[list[float], Any]:
    mesh = fw.make_mesh((4, 2), ("data", "model"))
    rng = np.random.default_rng(0)
    state = fw.device_put(
        {"w": rng.normal(size=(16, 8)).astype(np.float32), "b": np.zeros(8, np.float32)},
        {"w": fw.NamedSharding(mesh, fw.P("data", "model")), "b": fw.NamedSharding(mesh, fw.P())},
    )
    x = fw.device_put(rng.normal(size=(32, 16)).astype(np.float32), fw.NamedSharding(mesh, fw.P("data")))
    y = fw.device_put(rng.normal(size=(32, 8)).astype(np.float32), fw.NamedSharding(mesh, fw.P("data")))

    @fw.jit
    def step(state, x, y):
        loss, grads = jax.value_and_grad(lambda s: jnp.mean((x @ s["w"] + s["b"] - y) ** 2))(state)
        return jax.tree.map(lambda p, g: p - 0.1 * g, state, grads), loss

    losses = []
    for _ in range(steps):
        state, loss = step(state, x, y)
        losses.append(float(loss))
    with tempfile.TemporaryDirectory() as directory:
        checkpointer = ocp.StandardCheckpointer()
        checkpointer.save(Path(directory) / "state", state)
        checkpointer.wait_until_finished()
        saved = checkpointer.metadata(Path(directory) / "state").item_metadata.tree
        for k, leaf in saved.items():  # what orbax recorded: the mesh's axes and each leaf's spec
            assert tuple(leaf.sharding.partition_spec) == tuple(state[k].sharding.spec), (k, leaf.sharding)
        untargeted = checkpointer.restore(Path(directory) / "state")  # no target: the saved layout
        for k in state:
            assert np.array_equal(np.asarray(untargeted[k]), np.asarray(state[k]))
            assert untargeted[k].sharding.spec == state[k].sharding.spec
        state = checkpointer.restore(Path(directory) / "state", jax.tree.map(ocp.utils.to_shape_dtype_struct, state))
        elsewhere = {  # the same values on another layout: orbax reads each device's piece of the new one
            "w": jax.ShapeDtypeStruct((16, 8), np.float32, sharding=fw.NamedSharding(mesh, fw.P("model", "data"))),
            "b": jax.ShapeDtypeStruct((8,), np.float32, sharding=fw.NamedSharding(mesh, fw.P("model"))),
        }
        moved = checkpointer.restore(Path(directory) / "state", elsewhere)
        assert all(np.array_equal(np.asarray(moved[k]), np.asarray(state[k])) for k in state)
        assert moved["w"].sharding.spec == elsewhere["w"].sharding.spec
    for _ in range(steps):
        state, loss = step(state, x, y)
        losses.append(float(loss))
    return losses, state


if __name__ == "__main__":
    compare(train)
