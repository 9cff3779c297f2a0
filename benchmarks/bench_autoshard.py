"""``sk.autoshard`` against four hand layouts, on the programs and targets of its issue (target: the plan's
modelled step at most 1.05x the best hand layout that fits; a 256-chip search under 60 s on 2 cores).

XLA's own auto-sharding (the build option ``use_auto_spmd_partitioning``, through libtpu: ``xla_autoshard``) runs
on the same program with every sharding open, side by side: its layout, modelled step and compile time.

For each case, each hand layout is written the way its reference writes it and compiled for the target; its
modelled step is XLA's program timed by shardkit's time model (``compiled.communication().time(hardware)``:
XLA's cost analysis with loop bodies counted by their trip counts) and its memory is XLA's (``compiled.memory()``,
against the chip's HBM). The plan is ``sk.autoshard(step, *args, target=...)`` (its chosen layout compiled the
same way by the search itself); its wall time is the whole search: lowering, estimates, compiles.

- data parallel: the batch over a 1-D mesh, everything else replicated;
- FSDP (ZeRO-3): parameters and optimizer state over the same axis on their largest dimension it divides, the
  batch over it;
- Megatron tensor parallel: on a ('data', 'model') mesh, the batch over 'data', heads / MLP hidden / vocabulary
  over 'model' as ``examples/gpt_train_step.py`` (``examples/mlp_2d.py``) writes it;
- FSDP x tensor parallel: the same 2-D mesh, each parameter's tensor-parallel sharding plus 'data' on its
  largest other dimension;
- FSDP as MaxText writes it: FSDP's shardings, and the activations constrained to the batch at every layer boundary
  (MaxText's logical-axis rules keep them there).

The decoder cases are ``examples/maxtext_decoder.py``'s model (MaxText's 2023 decoder at its 16B and 32B sizes, its
per-device batch, full remat, dot-product attention: the plan's function has no mesh in it for flash attention's
``shard_map``): the hand layout is MaxText's own (its logical rules, the activations constrained), the plan the same
function with no constraint in it, searched from open arguments; on one slice, two and eight (``slices=2``: the data
axis across the data-center network).

Run: .venv/bin/python benchmarks/bench_autoshard.py [CASE ...] [--images DIR]   (cases: gpt-v5e, gpt-v5p, mlp-v5e,
gpt1b-v5e: a 1.3B-parameter GPT that data parallelism cannot fit; decoder16-v5e, decoder16-v5e-x2, -x8, decoder32-v5e:
MaxText's decoder, whose 256-chip compiles take minutes each; default: the GPT and MLP cases; --images saves each
plan's table as a picture, as docs/autoshard_gpt.png was made)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import gpt_train_step as gpt  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import maxtext_decoder as mt  # noqa: E402
import mlp_2d as mlp  # noqa: E402
import numpy as np  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402
from shardkit.autosharding.xla_auto import xla_autoshard  # noqa: E402
from shardkit.executor import targets  # noqa: E402
from shardkit.inspect import OutOfMemoryError, hardware  # noqa: E402

GPT2_SMALL = gpt.GPT2_SMALL
GPT_1B = gpt.params(vocab=50304, seq=1024, dim=2048, ff=8192, layers=24)  # 1.3B parameters: 21 GB with Adam


def mlp_step(p, x, y):
    """The training step of ``examples/mlp_2d.py`` without its sharding constraint (the layout is the plan's)."""

    def loss(p, x, y):
        return jnp.mean((mlp.layer(x, p["w1"]) @ p["w2"] - y) ** 2)

    value, grads = jax.value_and_grad(loss)(p, x, y)
    return {k: p[k] - 0.2 * grads[k] for k in p}, grads, value


MLP_SHAPES = {"w1": (16, 32), "w2": (32, 1)}
MLP_TP = {"w1": P(None, "model"), "w2": P("model", None)}  # mlp_2d's: hidden units over its second axis


def largest_dim(shape, size, taken=()):
    """The largest dimension of ``shape`` that ``size`` divides and ``taken`` does not hold, or None."""
    dims = [d for d in range(len(shape)) if d not in taken and shape[d] % size == 0 and shape[d] >= size]
    return max(dims, key=lambda d: shape[d]) if dims else None


def fsdp_spec(shape, size, axis="data", base=None):
    """``base`` (a PartitionSpec, default replicated) plus ``axis`` on the largest other dimension it divides."""
    entries = list(base) + [None] * (len(shape) - len(base)) if base is not None else [None] * len(shape)
    taken = [d for d, e in enumerate(entries) if e is not None]
    d = largest_dim(shape, size, taken)
    if d is not None:
        entries[d] = axis
    return P(*entries)


def gpt_case(mesh_shape, names, param_spec, batch, sizes=GPT2_SMALL, activations=None):
    """(jitted step, argument structs) of ``examples/gpt_train_step.py``'s step with ``param_spec(name, shape,
    megatron_spec)`` for each parameter (and its Adam moments), the batch over 'data' (``activations``: a constraint
    at every layer boundary)."""
    specs = {k: (shape, param_spec(k, shape, spec)) for k, (shape, spec) in sizes.items()}
    return gpt.build(sk.AbstractMesh(mesh_shape, names), sizes=specs, batch=batch, activations=activations)


def gpt_hand(devices, model, batch, sizes=GPT2_SMALL):
    data = devices // model
    return {
        "data parallel": gpt_case((devices,), ("data",), lambda k, s, spec: P(), batch, sizes),
        "FSDP": gpt_case((devices,), ("data",), lambda k, s, spec: fsdp_spec(s, devices), batch, sizes),
        "Megatron TP": gpt_case((data, model), ("data", "model"), lambda k, s, spec: spec, batch, sizes),
        "FSDP x TP": gpt_case(
            (data, model), ("data", "model"), lambda k, s, spec: fsdp_spec(s, data, base=spec), batch, sizes
        ),
        "FSDP (MaxText)": gpt_case(
            (devices,), ("data",), lambda k, s, spec: fsdp_spec(s, devices), batch, sizes, P("data", None, None)
        ),
    }


def gpt_plan_args(batch, sizes=GPT2_SMALL):
    state = {k: sk.ShapeDtypeStruct(shape, np.float32) for k, (shape, _) in sizes.items()}
    tokens = sk.ShapeDtypeStruct((batch, sizes["wpe"][0][0]), np.int32)
    return (state, state, state, sk.ShapeDtypeStruct((), np.float32), tokens, tokens)


def mlp_case(mesh_shape, names, param_spec, constrained=False):
    mesh = sk.AbstractMesh(mesh_shape, names)
    if constrained:  # mlp_2d as it is written: its build, its constraint on the hidden activations
        train, params_sharding, data = mlp.build(mesh)
        return train, mlp.arguments(params_sharding, data)
    params = {k: sk.NamedSharding(mesh, param_spec(k, s)) for k, s in MLP_SHAPES.items()}
    data = sk.NamedSharding(mesh, P(names[0], None))
    args = (
        {k: sk.ShapeDtypeStruct(s, np.float32, sharding=params[k]) for k, s in MLP_SHAPES.items()},
        sk.ShapeDtypeStruct((64, 16), np.float32, sharding=data),
        sk.ShapeDtypeStruct((64, 1), np.float32, sharding=data),
    )
    step = sk.jit(
        mlp_step,
        in_shardings=(params, data, data),
        out_shardings=(params, params, sk.NamedSharding(mesh, P())),
        donate_argnums=0,
    )
    return step, args


def mlp_hand(devices, model):
    data = devices // model
    tp = {k: P(*[("model" if e == "model" else e) for e in spec]) for k, spec in MLP_TP.items()}
    return {
        "data parallel": mlp_case((devices,), ("data",), lambda k, s: P()),
        "FSDP": mlp_case((devices,), ("data",), lambda k, s: fsdp_spec(s, devices)),
        "Megatron TP": mlp_case((data, model), ("x", "y"), None, constrained=True),
        "FSDP x TP": mlp_case((data, model), ("data", "model"), lambda k, s: fsdp_spec(s, data, base=tp[k])),
    }


def mlp_plan_args():
    return (
        {k: sk.ShapeDtypeStruct(s, np.float32) for k, s in MLP_SHAPES.items()},
        sk.ShapeDtypeStruct((64, 16), np.float32),
        sk.ShapeDtypeStruct((64, 1), np.float32),
    )


def decoder_case(scale: int, batch: int, slices: int = 1):
    """MaxText's decoder at ``scale`` (``global_parameter_scale``): its own layout as the hand layout, the same function
    without constraints (and without a mesh) for the plan."""
    cfg = mt.config(scale, per_device_batch=batch, attention="dot_product", slices=slices)
    devices = 256 * slices

    def hand():
        model = mt.Model(cfg, sk.AbstractMesh(mt.mesh_shape(cfg, devices), mt.MESH_AXES))
        return {"FSDP (MaxText)": model.build()}

    def plan():
        model = mt.Model(cfg, None, rules=None)
        params, opt = model.state_structs(sharded=False)
        tokens = sk.ShapeDtypeStruct((batch * devices, cfg.seq), np.int32)
        return model.train_step, ((params, opt), tokens, tokens), (0,)

    return hand, plan


CASES = {  # name -> (target, hand layouts, (function, args, donate))
    "gpt-v5e": (
        "tpu-v5e:16x16",
        lambda: gpt_hand(256, 16, 256),
        lambda: (gpt.train_step, gpt_plan_args(256), (0, 1, 2)),
    ),
    "gpt-v5p": (
        "tpu-v5p:8x16x16",
        lambda: gpt_hand(2048, 16, 2048),
        lambda: (gpt.train_step, gpt_plan_args(2048), (0, 1, 2)),
    ),
    "mlp-v5e": ("tpu-v5e:4x4", lambda: mlp_hand(16, 4), lambda: (mlp_step, mlp_plan_args(), (0,))),
    "gpt1b-v5e": (  # too large for data parallelism on 16 GiB chips
        "tpu-v5e:16x16",
        lambda: gpt_hand(256, 16, 256, GPT_1B),
        lambda: (gpt.train_step, gpt_plan_args(256, GPT_1B), (0, 1, 2)),
    ),
    "decoder16-v5e": ("tpu-v5e:16x16", *decoder_case(16, 6)),
    "decoder16-v5e-x2": ("tpu-v5e:16x16,slices=2", *decoder_case(16, 6, slices=2)),
    "decoder16-v5e-x8": ("tpu-v5e:16x16,slices=8", *decoder_case(16, 6, slices=8)),
    "decoder32-v5e": ("tpu-v5e:16x16", *decoder_case(32, 4)),
}
DEFAULT = ("gpt-v5e", "gpt-v5p", "mlp-v5e", "gpt1b-v5e")


def timed(compiled, profile):
    step = compiled.communication().time(profile)  # XLA's cost with loop bodies by trip count
    memory = compiled.memory()
    return step.step, memory.total, memory.fits


def refusal(error: OutOfMemoryError) -> str:
    """XLA's reason, from the memory report's message (``... refused it: Ran out of memory on HBM, ...``)."""
    return str(error).splitlines()[1].split("refused it: ")[-1].strip()


def xla_auto(lowered, target: str) -> None:
    """XLA's own auto-sharding (the build option, through libtpu) on the same program, every sharding open."""
    start = time.perf_counter()
    try:
        xla = xla_autoshard(lowered, target)
    except OutOfMemoryError as e:
        print(f"  {'XLA auto':<14} XLA refused it: {refusal(e)}  (compiled in {time.perf_counter() - start:.1f} s)")
        return
    what = "sharded" if xla.partitioned else "left every sharding replicated"
    print(
        f"  {'XLA auto':<14} {xla.step.step * 1e3:9.3f} ms  {xla.memory.total / 2**30:6.2f} GiB "
        f"{'fits' if xla.memory.fits else 'DOES NOT FIT'}, {what} on mesh {xla.mesh_shape}  "
        f"(compiled in {xla.compile_seconds:.1f} s)"
    )


def run(name: str, images: str | None = None) -> None:
    target, hand, plan_of = CASES[name]
    profile = hardware(targets.profile_name(target))
    targets.target(target)  # libtpu's devices once, outside the timing
    print(f"\n{name}: {target} ({profile.name}, {profile.hbm_bytes / 2**30:.0f} GiB HBM per chip)")
    results = {}
    for label, (step, args) in hand().items():
        start = time.perf_counter()
        try:
            seconds, memory, fits = timed(step.lower(*args).compile(target=target), profile)
        except OutOfMemoryError as e:
            seconds, memory, fits = None, refusal(e), False
        results[label] = (seconds, memory, fits)
        took = time.perf_counter() - start
        shown = f"XLA refused it: {memory}" if seconds is None else f"{seconds * 1e3:9.3f} ms"
        extra = "" if seconds is None else f"  {memory / 2**30:6.2f} GiB {'fits' if fits else 'DOES NOT FIT'}"
        print(f"  {label:<14} {shown}{extra}  (compiled in {took:.1f} s)")
    fun, args, donate = plan_of()
    if name.startswith("decoder"):  # a 16B model replicated: XLA refuses it, after minutes (docs/targets.md)
        print(f"  {'XLA auto':<14} not run: it leaves every sharding replicated (docs/targets.md)")
    else:
        xla_auto(sk.jit(fun, donate_argnums=donate).lower(*args), target)
    sk.clear_caches()
    start = time.perf_counter()
    plan = sk.autoshard(fun, *args, target=target, donate_argnums=donate)
    wall = time.perf_counter() - start
    confirmed = plan.confirmed.get(plan.chosen.key)
    fits = confirmed.fits if confirmed is not None else None
    print(
        f"  {'autoshard':<14} {plan.step_time * 1e3:9.3f} ms  {plan.memory_per_device / 2**30:6.2f} GiB "
        f"{'fits' if fits else 'DOES NOT FIT'}  (search {wall:.1f} s: {plan.evaluations} Shardy plans, "
        f"{len(plan.confirmed)} compiles)"
    )
    print(f"    mesh {plan.chosen.mesh}: {plan.table().rows()[plan.candidates.index(plan.chosen)]['summary']}")
    spent = plan.where_time()
    print(
        f"    search: compiles {spent['compiles']:.1f} s, Shardy plans {spent['plans']:.1f} s, "
        f"lowering and the rest {spent['rest']:.1f} s; estimate {plan.estimate.step * 1e3:.3f} ms, "
        f"{plan.estimate.peak / 2**30:.2f} GiB (XLA's {plan.memory_per_device / 2**30:.2f} GiB)"
    )
    fitting = [s for s, _, f in results.values() if s is not None and f]
    if fitting:
        best = min(fitting)
        label = min((k for k, v in results.items() if v[0] == best))
        ratio = plan.step_time / best
        goal = 1.0 if name.startswith("decoder") else 1.05  # the decoders' goal: at or below MaxText's own layout
        verdict = "met" if ratio <= goal else "NOT met"
        print(f"  plan / best hand layout ({label}): {ratio:.3f} (target <= {goal}: {verdict})")
    else:
        print("  no hand layout fits HBM; the plan " + ("fits" if fits else "does not fit either"))
    print(plan.table())
    if images:
        plan.table().save_image(os.path.join(images, f"autoshard_{name}.png"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*", help=f"of {', '.join(CASES)} (default: {', '.join(DEFAULT)})")
    parser.add_argument("--images", metavar="DIR", help="also save each plan's table as DIR/autoshard_CASE.png")
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}: the cases are {', '.join(CASES)}")
    print(f"{jax.devices()[0].platform} x{len(jax.devices())}, {os.cpu_count()} cores")
    for name in args.cases or DEFAULT:
        run(name, args.images)


if __name__ == "__main__":
    main()
