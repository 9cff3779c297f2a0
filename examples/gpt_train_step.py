"""A small GPT-style training step on a 4x2 ("data", "model") mesh, and what it communicates.

Token and position embeddings, pre-norm decoder layers (causal multi-head attention, a GELU MLP) stacked and
run with ``lax.scan``, tied output embedding, cross-entropy, and an Adam update. Megatron-style sharding:
the batch over 'data'; attention heads, the MLP's hidden units and the vocabulary over 'model'. The optimizer
state is sharded like the parameters.

Run it to print XLA's communication report of the step, Shardy's plan for it, and how long each took:

    .venv/bin/python examples/gpt_train_step.py

``build(mesh)`` is what the tests and ``benchmarks/bench_report.py`` use.
"""

import functools
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402

VOCAB, SEQ, DIM, HEADS, FF, LAYERS, BATCH = 256, 32, 64, 4, 256, 2, 8
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def params(vocab=VOCAB, seq=SEQ, dim=DIM, ff=FF, layers=LAYERS):
    """Parameter name -> (shape, spec) of a model of these sizes. Layer parameters are stacked along a leading
    layer axis for lax.scan."""
    return {
        "wte": ((vocab, dim), P("model", None)),
        "wpe": ((seq, dim), P()),
        "ln1": ((layers, dim), P()),
        "wqkv": ((layers, dim, 3 * dim), P(None, None, "model")),
        "wo": ((layers, dim, dim), P(None, "model", None)),
        "ln2": ((layers, dim), P()),
        "w1": ((layers, dim, ff), P(None, None, "model")),
        "w2": ((layers, ff, dim), P(None, "model", None)),
        "lnf": ((dim,), P()),
    }


PARAMS = params()
GPT2_SMALL = params(vocab=50304, seq=1024, dim=768, ff=3072, layers=12)  # GPT-2 small's sizes (124M parameters)


def _norm(x, scale):
    x = x - x.mean(-1, keepdims=True)
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-5) * scale


def _layer(x, p):
    b, t, d = x.shape
    qkv = _norm(x, p["ln1"]) @ p["wqkv"]
    q, k, v = (a.reshape(b, t, HEADS, d // HEADS) for a in jnp.split(qkv, 3, axis=-1))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // HEADS)
    scores = jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -1e9)
    attn = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v).reshape(b, t, d)
    x = x + attn @ p["wo"]
    return x + jax.nn.gelu(_norm(x, p["ln2"]) @ p["w1"]) @ p["w2"], None


def loss(params, tokens, targets, activations=None):
    """The mean cross-entropy; ``activations``: a sharding the activations keep at every layer boundary (as MaxText's
    logical rules keep them on the batch), None for none."""
    x = params["wte"][tokens] + params["wpe"]
    layers = {k: params[k] for k in ("ln1", "wqkv", "wo", "ln2", "w1", "w2")}
    if activations is None:
        x, _ = jax.lax.scan(_layer, x, layers)
    else:
        constrain = lambda x: sk.with_sharding_constraint(x, activations)
        x, _ = jax.lax.scan(lambda x, p: (constrain(_layer(constrain(x), p)[0]), None), x, layers)
    logits = _norm(x, params["lnf"]) @ params["wte"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, targets[..., None], axis=-1).mean()


def train_step(params, m, v, step, tokens, targets, activations=None):
    value, grads = jax.value_and_grad(loss)(params, tokens, targets, activations)
    step = step + 1
    m = jax.tree.map(lambda m, g: B1 * m + (1 - B1) * g, m, grads)
    v = jax.tree.map(lambda v, g: B2 * v + (1 - B2) * g * g, v, grads)
    scale = LR * jnp.sqrt(1 - B2**step) / (1 - B1**step)
    params = jax.tree.map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + EPS), params, m, v)
    return params, m, v, step, value


def build(mesh, partitioner="shardy", *, sizes=PARAMS, batch=BATCH, activations=None):
    """(the jitted step, its arguments as ShapeDtypeStructs) on a ("data", "model") mesh, for a model of
    ``sizes`` (``params(...)``) and ``batch`` sequences; ``activations`` (a PartitionSpec) constrains the
    activations at every layer boundary."""
    named = {k: sk.NamedSharding(mesh, spec) for k, (_, spec) in sizes.items()}
    batched = sk.NamedSharding(mesh, P("data", None))
    scalar = sk.NamedSharding(mesh, P())
    state = {k: sk.ShapeDtypeStruct(shape, np.float32, sharding=named[k]) for k, (shape, _) in sizes.items()}
    tokens = sk.ShapeDtypeStruct((batch, sizes["wpe"][0][0]), np.int32, sharding=batched)
    args = (state, state, state, sk.ShapeDtypeStruct((), np.float32, sharding=scalar), tokens, tokens)
    fun = train_step
    if activations is not None:
        fun = functools.wraps(train_step)(
            functools.partial(train_step, activations=sk.NamedSharding(mesh, activations))
        )
    step = sk.jit(
        fun,
        in_shardings=(named, named, named, scalar, batched, batched),
        out_shardings=(named, named, named, scalar, scalar),
        donate_argnums=(0, 1, 2),
        partitioner=partitioner,
    )
    return step, args


def main() -> None:
    mesh = sk.make_mesh((4, 2), ("data", "model"))
    step, args = build(mesh)
    start = time.perf_counter()
    lowered = step.lower(*args)
    compiled = lowered.compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    report = compiled.communication()
    report_s = time.perf_counter() - start
    print(report)
    start = time.perf_counter()
    plan = lowered.communication()
    plan_s = time.perf_counter() - start
    print(plan)
    print(
        f"lower + compile {compile_s * 1e3:.0f} ms; XLA report {report_s * 1e3:.1f} ms "
        f"({report_s / compile_s:.1%} of it); Shardy plan {plan_s * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
