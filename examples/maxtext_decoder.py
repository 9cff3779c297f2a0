"""A decoder-only transformer and its training step written as MaxText writes its models, sharded by its rules.

MaxText (github.com/AI-Hypercomputer/maxtext) publishes step rates for its own models on TPU v5e and v5p pods
(``MaxText/configs/v5e/README.md``, from commit 5ebcd67fe of 2023-10-27, and ``v5p/README.md``, from 76bd53b0f of
2023-12-15, with the scripts beside them). This is that model, written here from MaxText's code of those commits,
with the parts that decide its cost on a pod:

- **Sizes** from ``global_parameter_scale`` (``pyconfig.get_individual_scales``: the heads and MLP width, the
  embedding width and the layer count double in turn, from a base model), ``base`` holding the base sizes of the
  release the tables were measured with (``MAXTEXT_2023``: MHA with head_dim 256, a ReLU MLP, embeddings shared with
  the logits, vocabulary 32,768) or of today's llama2 block (``LLAMA2``: SwiGLU, separate logits, vocabulary 32,000).
- **The block** as MaxText wrote it: an RMSNorm, then attention and the MLP both read the normed input and are added
  to it (``block="2023-10"``, ``layers.py`` at 5ebcd67fe: q, k, v projections straight into attention;
  ``"2023-12"``, ``layers/models.py`` at 76bd53b0f: rotary embeddings and an RMSNorm of q, k, v too); or today's
  sequential llama2 block (``"llama2"``).
- **Layers** stacked on axis 1 (``param_scan_axis``) and run by ``lax.scan``, each under ``jax.checkpoint``:
  ``remat="full"`` saves only the layer's input, ``"minimal"`` every matmul without batch dimensions
  (``checkpoint_dots_with_no_batch_dims``).
- **Attention** ``"flash"``: jax's Pallas TPU flash attention (``jax.experimental.pallas.ops.tpu.flash_attention``)
  under ``shard_map`` over the batch and heads, with each release's block sizes, non-causal at 5ebcd67fe (its
  ``causal=False``) and causal at 76bd53b0f. A Pallas TPU kernel lowers only for TPU (``sk.jit(...,
  platform="tpu")``) and compiles through libtpu for a target slice (``compile(target="tpu-v5e:16x16")``).
  ``"dot_product"``: MaxText's plain attention (its scores materialized: for the CPU run and the autoshard cases,
  whose function has no mesh in it).
- **Sharding** by MaxText's logical-axis rules of the release (``RULES[block]``) onto the mesh ``('data', 'fsdp',
  'sequence', 'tensor')``: slices on 'data' (DCN), the rest of a slice on 'fsdp' (``ici_fsdp_parallelism=-1``) and
  'tensor'; weights stored over 'fsdp' on their embedding dimension, activations constrained to the batch over
  ('data', 'fsdp') at every layer boundary (``nn.with_logical_constraint``); ``rules=None`` writes no constraint.
  (The December rules add a 'sequence' axis, which the logits' vocabulary then no longer gets 'tensor' beside.)
- **The step**: cross-entropy on one-hot targets, ``optax.clip_by_global_norm(1.0)``, ``optax.adamw`` (b1 0.9, b2
  0.95, weight decay 0.1), the state donated.

Run it to train a few steps of a small model on 8 CPU devices, jax.jit's losses beside shardkit's:

    .venv/bin/python examples/maxtext_decoder.py

``benchmarks/bench_maxtext.py`` compiles the tables' configurations for their slices and times them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402

MESH_AXES = ("data", "fsdp", "sequence", "tensor")
# MaxText's logical-axis rules (configs/base.yml): logical name -> mesh axes, in order (flax's first fit); at 5ebcd67fe
# (the v5e table) and at 76bd53b0f (the v5p table, with a 'sequence' axis), by block
RULES_2023_10 = (
    ("activation_batch", ("data", "fsdp")),
    ("activation_length", ("data", "fsdp")),
    ("activation_embed", ("tensor",)),
    ("activation_mlp", ("tensor",)),
    ("activation_heads", ("tensor",)),
    ("activation_kv", ("tensor",)),
    ("activation_vocab", ("tensor",)),
    ("mlp", ("tensor",)),
    ("vocab", ("tensor",)),
    ("embed", ("fsdp",)),
    ("heads", ("tensor",)),
)
RULES_2023_12 = (
    ("activation_batch", ("data", "fsdp")),
    ("activation_heads", ("tensor", "sequence")),
    ("activation_length", ("sequence",)),
    ("activation_embed", ("tensor",)),
    ("activation_mlp", ("tensor",)),
    ("activation_kv", ("tensor",)),
    ("activation_vocab", ("tensor", "sequence")),
    ("mlp", ("tensor",)),
    ("vocab", ("tensor",)),
    ("embed", ("fsdp", "sequence")),
    ("heads", ("tensor",)),
)
RULES = {"2023-10": RULES_2023_10, "2023-12": RULES_2023_12, "llama2": RULES_2023_12}
BATCH, LENGTH, EMBED = "activation_batch", "activation_length", "activation_embed"
BLOCKS = ("block_q", "block_k_major", "block_k", "block_q_major_dkv", "block_k_major_dkv", "block_q_dkv", "block_k_dkv")
BLOCKS += ("block_q_dq", "block_k_dq", "block_k_major_dq")
ACTIVATIONS = (BATCH, LENGTH, EMBED)

# base sizes (configs/base.yml) before global_parameter_scale: embed, heads, kv heads, head_dim, mlp, layers, vocab
MAXTEXT_2023 = {"emb": 2560, "heads": 8, "kv_heads": 8, "head_dim": 256, "mlp": 8192, "layers": 16, "vocab": 32768}
LLAMA2 = {"emb": 2048, "heads": 16, "kv_heads": 16, "head_dim": 128, "mlp": 7168, "layers": 16, "vocab": 32000}


@dataclasses.dataclass(frozen=True)
class Config:
    """One MaxText configuration: the model's sizes, its block, remat, attention and parallelism (MaxText's
    names: ``per_device_batch_size``, ``ici_tensor_parallelism``, ``dcn_data_parallelism`` = slices)."""

    emb: int
    heads: int
    kv_heads: int
    head_dim: int
    mlp: int
    layers: int
    vocab: int
    block: str = "2023-12"  # "2023-10" / "2023-12": MaxText's parallel block of then; "llama2": sequential, SwiGLU
    per_device_batch: int = 1
    seq: int = 2048
    remat: str = "full"  # "full", "minimal" or "none"
    attention: str = "flash"  # "flash" (Pallas TPU) or "dot_product"
    ici_tensor: int = 1
    slices: int = 1

    @property
    def params(self) -> int:
        """Parameters of the model (MaxText's ``num_model_parameters``)."""
        return sum(math.prod(shape) for shape, _ in shapes(self).values())

    def train_flops(self) -> float:
        """MaxText's training FLOPs per device per step (``train.calculate_training_tflops``): 6 x parameters x
        tokens, plus attention, ``12 heads layers head_dim seq^2 batch``: as the release counted it, whole at
        5ebcd67fe (whose flash attention was not causal), halved for causality from November 2023 on. Recomputation
        (remat) is not counted: its TFLOP/s and MFU are of the model's work."""
        tokens = self.per_device_batch * self.seq
        attention = 12 * self.heads * self.layers * self.head_dim * self.seq**2 * self.per_device_batch
        return 6.0 * self.params * tokens + (attention if self.block == "2023-10" else attention / 2)


def config(scale: int, base: dict | None = None, **kw) -> Config:
    """The model ``global_parameter_scale=scale`` gives (``pyconfig.get_individual_scales``), with ``kw``'s
    settings.

    Examples:
        >>> c = config(16, per_device_batch=6)
        >>> c.emb, c.heads, c.mlp, c.layers, round(c.params / 1e9, 1)
        (5120, 32, 32768, 32, 16.3)
    """
    log = int(math.log2(scale))
    if 2**log != scale:
        raise ValueError(f"global_parameter_scale must be a power of two, got {scale}.")
    base = MAXTEXT_2023 if base is None else base
    cycles, rem = divmod(log, 3)
    heads = cycles + int(rem > 0)  # heads and MLP width double first, then the embedding, then the depth
    emb = cycles + int(rem > 1)
    sizes = {
        "emb": base["emb"] << emb,
        "heads": base["heads"] << heads,
        "kv_heads": base["kv_heads"] << heads,
        "head_dim": base["head_dim"],
        "mlp": base["mlp"] << heads,
        "layers": base["layers"] << cycles,
        "vocab": base["vocab"],
        "block": "llama2" if base is LLAMA2 else "2023-12",
    }
    return Config(**{**sizes, **kw})


def mesh_shape(cfg: Config, devices: int) -> tuple[int, ...]:
    """('data', 'fsdp', 'sequence', 'tensor') sizes: slices on 'data', the rest of each slice on 'fsdp'."""
    per_slice = devices // cfg.slices
    return (cfg.slices, per_slice // cfg.ici_tensor, 1, cfg.ici_tensor)


def spec(logical: tuple[str | None, ...], rules=RULES_2023_12) -> P:
    """flax's ``logical_to_mesh_axes``: the rules in order, each giving its mesh axes to the dimension it names
    when that dimension has none yet and no other dimension took any of them.

    Examples:
        >>> spec(("activation_batch", "activation_heads", "activation_length", "activation_kv"))
        PartitionSpec(('data', 'fsdp'), ('tensor', 'sequence'), None, None)
    """
    out: list[tuple[str, ...] | None] = [None] * len(logical)
    for name, axes in rules:
        free = not any(a in taken for taken in out if taken for a in axes)
        if name in logical and out[logical.index(name)] is None and free:
            out[logical.index(name)] = axes
    return P(*(None if not a else a[0] if len(a) == 1 else a for a in out))


def shapes(cfg: Config) -> dict[str, tuple[tuple[int, ...], tuple[str | None, ...]]]:
    """Parameter name -> (shape, logical axes), layer parameters stacked on axis 1 as MaxText's scan stacks them."""
    e, h, k, d, m, n, v = cfg.emb, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.mlp, cfg.layers, cfg.vocab
    out = {
        "embedding": ((v, e), ("vocab", "embed")),
        "pre_norm": ((e, n), ("embed", "layers")),
        "query": ((e, n, h, d), ("embed", "layers", "heads", "kv")),
        "key": ((e, n, k, d), ("embed", "layers", "heads", "kv")),
        "value": ((e, n, k, d), ("embed", "layers", "heads", "kv")),
        "out": ((h, n, d, e), ("heads", "layers", "kv", "embed")),
        "wi": ((e, n, m), ("embed", "layers", "mlp")),
        "wo": ((m, n, e), ("mlp", "layers", "embed")),
        "decoder_norm": ((e,), ("embed",)),
    }
    if cfg.block == "2023-12":
        out.update({f"{x}_norm": ((d, n), ("heads", "layers")) for x in ("query", "key", "value")})
    elif cfg.block == "llama2":
        out["wi_1"] = out["wi"]
        out["post_norm"] = out["pre_norm"]
        out["logits"] = ((e, v), ("embed", "vocab"))
    return out


def _rms(x, scale, dtype=jnp.bfloat16):
    x = x.astype(jnp.float32)
    y = x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
    return y.astype(dtype) * scale.astype(dtype)


def _rotary(x, positions):
    """LLaMA's rotary embedding over the last dimension (``embeddings.LLaMARotaryEmbedding``)."""
    half = x.shape[-1] // 2
    timescale = 10000.0 ** (2.0 * jnp.arange(half, dtype=jnp.float32) / x.shape[-1])
    angle = (positions[:, :, None, None] / timescale).astype(jnp.float32)
    sin, cos = jnp.sin(angle), jnp.cos(angle)
    first, second = x[..., :half].astype(jnp.float32), x[..., half:].astype(jnp.float32)
    return jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1).astype(x.dtype)


class Model:
    """The decoder and its training step for one configuration, on ``mesh`` (a Mesh or AbstractMesh with
    ``MESH_AXES``) under ``rules`` (default: the block's release's; None: no sharding constraint in the function,
    shardings left to the caller)."""

    def __init__(self, cfg: Config, mesh=None, rules: tuple | None | str = "release"):
        if cfg.attention == "flash" and mesh is None:
            raise ValueError("flash attention runs under shard_map, which needs the mesh.")
        self.cfg, self.mesh = cfg, mesh
        self.rules = RULES[cfg.block] if rules == "release" else rules
        self.optimizer = optax.chain(
            optax.clip_by_global_norm(1.0), optax.adamw(3e-5, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1)
        )

    def constrain(self, x, logical):
        if self.rules is None:
            return x
        return sk.with_sharding_constraint(x, sk.NamedSharding(self.mesh, spec(logical, self.rules)))

    def attention(self, q, k, v):
        """[batch, length, heads, head_dim] q, k, v -> the causal attention, same shape."""
        if self.cfg.attention == "dot_product":
            scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32)
            causal = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))
            weights = jax.nn.softmax(jnp.where(causal, scores, -1e10), axis=-1).astype(q.dtype)
            return jnp.einsum("bhqk,bkhd->bqhd", weights, v)
        from jax.experimental.pallas.ops.tpu import flash_attention as fa

        def kernel(q, k, v):  # on one device's block, with the release's block sizes from the local shapes
            b, s = q.shape[0], q.shape[2]
            if self.cfg.block == "2023-10":  # layers.py at 5ebcd67fe: 512 everywhere, one sequence, not causal
                sizes = fa.BlockSizes(**{f: min(512, s) for f in BLOCKS}, block_b=1)
                return fa.flash_attention(q, k, v, causal=False, block_sizes=sizes)
            sizes = fa.BlockSizes(  # layers/attentions.py at 76bd53b0f
                **{f: min(512, s) for f in BLOCKS if not f.endswith("_dq")},
                block_b=min(2, b),
                block_q_dq=min(1024, s),
                block_k_dq=min(256, s),
                block_k_major_dq=min(512, s),
            )
            return fa.flash_attention(q, k, v, causal=True, block_sizes=sizes)

        names = spec((BATCH, "activation_heads", LENGTH, "activation_kv"), self.rules or RULES[self.cfg.block])
        run = jax.shard_map(kernel, mesh=self.mesh, in_specs=(names,) * 3, out_specs=names, check_vma=False)
        swap = functools.partial(jnp.swapaxes, axis1=1, axis2=2)
        return swap(run(swap(q), swap(k), swap(v)))

    def layer(self, x, p, positions):
        cfg = self.cfg
        x = self.constrain(x, ACTIVATIONS)
        normed = self.constrain(_rms(x, p["pre_norm"]), ACTIVATIONS)
        q, k, v = (jnp.einsum("bse,ehd->bshd", normed, p[n].astype(x.dtype)) for n in ("query", "key", "value"))
        if cfg.block != "2023-10":
            q, k = _rotary(q, positions), _rotary(k, positions)
        if cfg.block == "2023-12":
            q, k, v = (_rms(a, p[f"{n}_norm"]) for a, n in ((q, "query"), (k, "key"), (v, "value")))
        elif cfg.block == "llama2":
            q = q / np.sqrt(cfg.head_dim).astype(q.dtype)
        heads = (BATCH, LENGTH, "activation_heads", "activation_kv")
        q, k, v = (self.constrain(a, heads) for a in (q, k, v))
        attended = jnp.einsum("bshd,hde->bse", self.attention(q, k, v), p["out"].astype(x.dtype))
        attended = self.constrain(attended, ACTIVATIONS)
        if cfg.block != "llama2":
            hidden = jax.nn.relu(jnp.einsum("bse,em->bsm", normed, p["wi"].astype(x.dtype)))
        else:
            x = x + attended
            normed = self.constrain(_rms(x, p["post_norm"]), ACTIVATIONS)
            gate = jnp.einsum("bse,em->bsm", normed, p["wi"].astype(x.dtype))
            hidden = jax.nn.silu(gate) * jnp.einsum("bse,em->bsm", normed, p["wi_1"].astype(x.dtype))
        hidden = self.constrain(hidden, (BATCH, LENGTH, "activation_mlp"))
        mlp = self.constrain(jnp.einsum("bsm,me->bse", hidden, p["wo"].astype(x.dtype)), ACTIVATIONS)
        out = x + mlp + attended if cfg.block != "llama2" else x + mlp
        return self.constrain(out, ACTIVATIONS)

    def logits(self, params, tokens):
        cfg = self.cfg
        one_hot = (tokens[..., None] == jnp.arange(cfg.vocab, dtype=tokens.dtype)).astype(jnp.bfloat16)
        x = self.constrain(one_hot @ params["embedding"].astype(jnp.bfloat16), ACTIVATIONS)  # use_iota_embed
        positions = jnp.broadcast_to(jnp.arange(tokens.shape[1]), tokens.shape)
        stacked = {
            k: jnp.moveaxis(v, 1, 0)
            for k, v in params.items()
            if len(shapes(cfg)[k][1]) > 1 and k not in ("embedding", "logits")
        }
        body = lambda x, p: (self.layer(x, p, positions), None)
        if cfg.remat != "none":
            policy = jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims if cfg.remat == "minimal" else None
            body = jax.checkpoint(body, policy=policy, prevent_cse=False)
        x, _ = jax.lax.scan(body, x, stacked)
        x = _rms(x, params["decoder_norm"])
        if cfg.block != "llama2":  # the shared embedding's attend, in float32, over sqrt(embed)
            logits = (x.astype(jnp.float32) @ params["embedding"].T) / np.sqrt(cfg.emb)
        else:
            logits = (x @ params["logits"].astype(x.dtype)).astype(jnp.float32)
        return self.constrain(logits, (BATCH, LENGTH, "activation_vocab"))

    def loss(self, params, tokens, targets):
        logp = jax.nn.log_softmax(self.logits(params, tokens), axis=-1)
        xent = -jnp.sum(jax.nn.one_hot(targets, self.cfg.vocab) * logp, axis=-1)
        return jnp.mean(self.constrain(xent, (BATCH, LENGTH)))

    def train_step(self, state, tokens, targets):
        params, opt_state = state
        loss, grads = jax.value_and_grad(self.loss)(params, tokens, targets)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    def state_structs(self, sharded: bool = True):
        """(params, optimizer state) as ShapeDtypeStructs, sharded by the rules when ``sharded``."""
        named = {
            k: sk.NamedSharding(self.mesh, spec(logical)) if sharded else None
            for k, (_, logical) in shapes(self.cfg).items()
        }
        params = {k: sk.ShapeDtypeStruct(s, np.float32, sharding=named[k]) for k, (s, _) in shapes(self.cfg).items()}
        plain = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in params.items()}
        replicated = sk.NamedSharding(self.mesh, P()) if sharded else None

        def like(path, x):  # Adam's moments are sharded as their parameters (named by path); counters replicated
            keys = [k.key for k in path if isinstance(k, jax.tree_util.DictKey)]
            sharding = params[keys[-1]].sharding if keys else replicated
            return sk.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)

        return params, jax.tree_util.tree_map_with_path(like, jax.eval_shape(self.optimizer.init, plain))

    def build(self, platform: str | None = None):
        """(the jitted step, its arguments as ShapeDtypeStructs) with MaxText's shardings: the state by the rules,
        the batch over ('data', 'fsdp'), the state donated. ``platform="tpu"`` lowers flash attention's kernel for
        a TPU target."""
        params, opt = self.state_structs()
        state = (params, opt)
        state_sharding = jax.tree.map(lambda s: s.sharding, state)
        data = sk.NamedSharding(self.mesh, spec((BATCH, LENGTH)))
        devices = math.prod(self.mesh.shape.values())
        tokens = sk.ShapeDtypeStruct((self.cfg.per_device_batch * devices, self.cfg.seq), np.int32, sharding=data)
        step = sk.jit(
            self.train_step,
            in_shardings=(state_sharding, data, data),
            out_shardings=(state_sharding, sk.NamedSharding(self.mesh, P())),
            donate_argnums=0,
            platform=platform,
        )
        return step, (state, tokens, tokens)


SMALL = Config(
    emb=64,
    heads=4,
    kv_heads=4,
    head_dim=16,
    mlp=128,
    layers=2,
    vocab=128,
    per_device_batch=2,
    seq=32,
    attention="dot_product",
)


def main() -> None:
    """Trains three steps of a small 2023-style model on 8 CPU devices (data 1, fsdp 4, tensor 2) under jax.jit and
    sk.jit from the same state, and prints both losses."""
    cfg = dataclasses.replace(SMALL, ici_tensor=2)
    mesh = sk.make_mesh(mesh_shape(cfg, 8), MESH_AXES)
    model = Model(cfg, mesh)
    step, (state, tokens, _) = model.build()
    rng = np.random.default_rng(0)
    params = {k: (rng.standard_normal(s.shape) * 0.02).astype(np.float32) for k, s in state[0].items()}
    params.update({k: np.ones(s.shape, np.float32) for k, s in state[0].items() if k.endswith("norm")})
    data = rng.integers(0, cfg.vocab, (tokens.shape[0], cfg.seq + 1)).astype(np.int32)
    x, y = data[:, :-1], data[:, 1:]
    print(
        f"{cfg.layers} layers of {cfg.block}'s block (embedding {cfg.emb}, {cfg.heads} heads, MLP {cfg.mlp}; "
        f"{cfg.params:,} parameters), batch {tokens.shape[0]} x {cfg.seq} on mesh {dict(mesh.shape)}; "
        f"the layers' weights stored as {state[0]['query'].sharding.spec}"
    )
    ours = theirs = (params, model.optimizer.init(params))
    ours = jax.tree.map(lambda a, s: sk.device_put(np.asarray(a), s.sharding), ours, state)
    reference = jax.jit(model.train_step)
    for i in range(3):
        ours, loss = step(ours, x, y)
        theirs, ref = reference(theirs, x, y)
        print(f"step {i}: loss {float(loss):.6f} (sk.jit)  {float(ref):.6f} (jax.jit)")


if __name__ == "__main__":
    main()
