"""A data x model parallel MLP trained on a 4x2 mesh: the batch is split over 'x', the hidden units over 'y'.

Prints the loss per step and the shardings of the parameters and of their gradients. ``build(mesh)`` gives
the jitted training step and its argument shardings (the README tour and the tests inspect it).
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402

STEPS = int(os.environ.get("MLP_STEPS", "10"))


def layer(x, w1):
    """The hidden layer (also what ``shardkit-lower examples/mlp_2d.py:layer`` lowers in docs/inspect.md)."""
    return jnp.tanh(x @ w1)


def build(mesh):
    """(the jitted training step, the parameters' shardings, the data's sharding) on a ('x', 'y') mesh."""
    data = sk.NamedSharding(mesh, P("x", None))  # batch over 'x'
    params_sharding = {
        "w1": sk.NamedSharding(mesh, P(None, "y")),  # hidden units over 'y'
        "w2": sk.NamedSharding(mesh, P("y", None)),
    }

    def loss(p, x, y):
        h = layer(x, p["w1"])
        h = sk.with_sharding_constraint(h, sk.NamedSharding(mesh, P("x", "y")))
        return jnp.mean((h @ p["w2"] - y) ** 2)

    def step(p, x, y):
        value, grads = jax.value_and_grad(loss)(p, x, y)
        return {k: p[k] - 0.2 * grads[k] for k in p}, grads, value

    train = sk.jit(
        step,
        in_shardings=(params_sharding, data, data),
        out_shardings=(params_sharding, params_sharding, sk.NamedSharding(mesh, P())),
        donate_argnums=0,
    )
    return train, params_sharding, data


def arguments(params_sharding, data):
    """The step's arguments as ShapeDtypeStructs, to lower it without data (``train.lower(*arguments(...))``)."""
    return (
        {
            k: sk.ShapeDtypeStruct(s, np.float32, sharding=params_sharding[k])
            for k, s in (("w1", (16, 32)), ("w2", (32, 1)))
        },
        sk.ShapeDtypeStruct((64, 16), np.float32, sharding=data),
        sk.ShapeDtypeStruct((64, 1), np.float32, sharding=data),
    )


def main() -> None:
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    train, params_sharding, data = build(mesh)

    rng = np.random.default_rng(0)
    true_w = rng.standard_normal((16, 1)).astype(np.float32)
    xs = rng.standard_normal((64, 16)).astype(np.float32)
    ys = np.tanh(xs @ true_w)
    params = {
        "w1": rng.standard_normal((16, 32)).astype(np.float32) * 0.3,
        "w2": rng.standard_normal((32, 1)).astype(np.float32) * 0.3,
    }
    params = {k: sk.device_put(v, params_sharding[k]) for k, v in params.items()}
    x, y = sk.device_put(xs, data), sk.device_put(ys, data)

    first = last = None
    for i in range(STEPS):
        params, grads, value = train(params, x, y)
        last = float(value)
        first = last if first is None else first
        print(f"step {i:2d}  loss {last:.5f}")
    assert last < first, (first, last)
    for name in params:
        print(
            f"{name}: shape {params[name].shape}, params {params[name].sharding.spec}, "
            f"grads {grads[name].sharding.spec}, shard {params[name].addressable_shards[0].data.shape}"
        )


if __name__ == "__main__":
    main()
