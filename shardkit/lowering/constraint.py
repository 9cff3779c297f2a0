"""``with_sharding_constraint``: pin the sharding of an intermediate value inside a jitted function.

Inside a trace it binds ``sharding_constraint_p``, a jax primitive of shardkit's own with rules for
evaluation, abstract evaluation, differentiation (it is linear: the cotangent gets the same constraint) and
batching (the compiler chooses how to shard the batch dimension). Its lowering emits a device-free placeholder,

    stablehlo.custom_call @shardkit.sharding_constraint(%x)
        {shardkit.sharding = #sdy.sharding<mesh<["x"=4, "y"=2]>, [{"x"}, {}]>, mhlo.sharding = "{...}"}

which ``attach.py`` rewrites against the module's own mesh table into ``sdy.sharding_constraint`` (Shardy) or
the ``@Sharding`` custom call (GSPMD). The placeholder names no devices unless the sharding is concrete
(``shardkit.devices``), so a constraint over an ``AbstractMesh`` lowers to the same module for every
mesh of that shape. The primitive is bound only while jax traces for shardkit (``trace.tracing``); under a plain
``jax.jit``, ``jax.grad`` or ``jax.vmap`` the constraint is jax's own. Outside a trace it is a ``device_put``, as
in jax.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.extend.source_info_util
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir as jax_mlir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from shardkit.array import device_put
from shardkit.dialects import irx, mhlo, sdy as sdy_forms
from shardkit.lowering.trace import tracing_for_shardkit
from shardkit.sharding import Sharding, as_sharding, is_sharding_like

PLACEHOLDER = "shardkit.sharding_constraint"
SDY_ATTR = "shardkit.sharding"
DEVICES_ATTR = "shardkit.devices"
PLATFORM_ATTR = "shardkit.platform"

# Ops created in shardkit's own frames are located at the user's line that called into shardkit, as jax's own
# frames are skipped.
jax.extend.source_info_util.register_exclusion(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

sharding_constraint_p = Primitive("shardkit_sharding_constraint")
sharding_constraint_p.def_impl(lambda x, *, sharding: x)
sharding_constraint_p.def_abstract_eval(lambda x, *, sharding: x)


def _lower(ctx: Any, x: ir.Value, *, sharding: Sharding) -> list[ir.Value]:
    ndim = len(ctx.avals_in[0].shape)
    if not tracing_for_shardkit():
        # A jaxpr traced for sk.jit and lowered by jax itself (a cached inner jax.jit reused by a plain jax.jit):
        # jax's own constraint, with the equivalent jax sharding.
        jax_sharding = sharding.to_jax(ndim)
        return jax_mlir.lower_fun(lambda v: jax.lax.with_sharding_constraint(v, jax_sharding), False)(ctx, x)
    mesh, tensor = sharding.to_sdy(ndim)
    inlined = sdy_forms.SdyTensorSharding(mesh, tensor.dims, tensor.replicated, tensor.unreduced)
    op = stablehlo.CustomCallOp([x.type], [x], call_target_name=PLACEHOLDER, has_side_effect=ir.BoolAttr.get(False))
    op.attributes[SDY_ATTR] = inlined.build()
    op.attributes[irx.MHLO_SHARDING] = mhlo.build(sharding.to_hlo(ndim))
    if sharding.is_concrete:
        devices = sharding.device_assignment
        op.attributes[DEVICES_ATTR] = ir.DenseI64ArrayAttr.get([d.id for d in devices])
        op.attributes[PLATFORM_ATTR] = ir.StringAttr.get(devices[0].platform)
    return list(op.results)


jax_mlir.register_lowering(sharding_constraint_p, _lower)
ad.deflinear2(sharding_constraint_p, lambda ct, x, *, sharding: [sharding_constraint_p.bind(ct, sharding=sharding)])


def _batch(args: Any, dims: Any, *, sharding: Sharding) -> tuple[Any, Any]:
    (x,), (dim,) = args, dims
    if dim is None:
        return sharding_constraint_p.bind(x, sharding=sharding), None
    # As jax: the compiler places the batch dimension.
    return sharding_constraint_p.bind(x, sharding=sharding.with_unconstrained_dim(dim)), dim


batching.primitive_batchers[sharding_constraint_p] = _batch


def _checked(sharding: Any, shape: tuple[int, ...], path: str, traced: bool) -> Sharding:
    """The leaf's sharding as shardkit's; a traced value needs only a sharding of its rank (dimensions that do
    not divide are padded by the compiler, as jax allows), an eager one must divide (it becomes an Array)."""
    sharding = as_sharding(sharding, len(shape), f"with_sharding_constraint for {path}")
    try:
        sharding.to_hlo(len(shape)) if traced else sharding.shard_shape(shape)
    except ValueError as e:
        e.args = (f"with_sharding_constraint on {path} of shape {shape}: {e}", *e.args[1:])
        raise
    return sharding


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Constrains each array leaf of ``x`` to the matching sharding of ``shardings``: one sharding for every leaf,
    or a prefix tree of them; each a shardkit or jax Sharding, or a bare PartitionSpec under ``with mesh:``.

    Inside ``sk.jit`` the compiler keeps the value laid out that way (a dimension that does not divide is padded,
    as in jax); inside a plain ``jax.jit``, ``jax.grad`` or ``jax.vmap`` the constraint is jax's own, with the
    equivalent jax sharding; outside any trace the leaves are placed there with ``sk.device_put``.

    Examples:
        >>> @sk.jit
        ... def f(a):
        ...     h = with_sharding_constraint(a @ a.T, NamedSharding(mesh, P("x", None)))
        ...     return h * 2
        >>> "sdy.sharding_constraint" in f.lower(np.ones((8, 2), np.float32)).as_text()
        True
    """
    leaves, tree = jax.tree_util.tree_flatten_with_path(x)
    try:
        per_leaf = jax.tree.broadcast(shardings, x, is_leaf=is_sharding_like)
    except (ValueError, TypeError) as e:
        raise ValueError(f"with_sharding_constraint: the shardings are not a prefix of the value's tree: {e}") from None
    flat_shardings = jax.tree_util.tree_leaves(per_leaf, is_leaf=is_sharding_like)
    out = []
    for (path, leaf), sharding in zip(leaves, flat_shardings):
        if sharding is None:  # no constraint on this leaf
            out.append(leaf)
            continue
        traced = isinstance(leaf, jax.core.Tracer)
        shape = tuple(getattr(leaf, "shape", ()))
        sharding = _checked(sharding, shape, "x" + jax.tree_util.keystr(path), traced)
        if not traced:
            out.append(device_put(leaf, sharding))
        elif tracing_for_shardkit():
            out.append(sharding_constraint_p.bind(leaf, sharding=sharding))
        else:
            out.append(jax.lax.with_sharding_constraint(leaf, sharding.to_jax(len(shape))))
    return jax.tree_util.tree_unflatten(tree, out)
