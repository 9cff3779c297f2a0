"""Attaching shardings to an unsharded module, in the Shardy or the GSPMD form.

What jax 0.10 prints for a sharded ``jit`` is reproduced attribute for attribute:

- module: ``mhlo.num_partitions`` (devices of the computation) and ``mhlo.num_replicas = 1``;
- Shardy: one ``sdy.mesh`` symbol per distinct logical mesh (``@mesh``, ``@mesh_0``, ..., ``@empty_mesh``),
  ``sdy.sharding`` on main's arguments and results, constraints as ``sdy.sharding_constraint``;
- GSPMD: ``mhlo.sharding`` strings on arguments and results, constraints as ``custom_call @Sharding``;
- donation: ``tf.aliasing_output = <result>`` where an output can reuse the donated buffer, else
  ``jax.buffer_donor = true`` (jax's matching rule, see ``donation``); a donated argument that is neither gets
  jax's warning, in jax's words, when it is lowered (``_warn_unusable``).

An argument or result whose sharding is None gets no attribute: the compiler chooses it.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import warnings
from collections.abc import Sequence

import jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy, stablehlo

from shardkit.caching import memoize
from shardkit.dialects import irx, mhlo, sdy as sdy_forms
from shardkit.lowering.constraint import DEVICES_ATTR, PLACEHOLDER, PLATFORM_ATTR, SDY_ATTR
from shardkit.lowering.types import ShapeDtypeStruct
from shardkit.sharding import Sharding

DeviceRefs = tuple[tuple[str, int], ...]


def _specified(sharding: Sharding | None) -> bool:
    return sharding is not None and not sharding.unconstrained_dims


def donation(
    donated: Sequence[bool],
    in_avals: Sequence[ShapeDtypeStruct],
    out_avals: Sequence[ShapeDtypeStruct],
    in_shardings: Sequence[Sharding | None],
    out_shardings: Sequence[Sharding | None],
    num_partitions: int,
) -> tuple[tuple[int | None, ...], tuple[bool, ...]]:
    """(result each argument aliases or None, whether it is a plain buffer donor), as jax decides them.

    Values are matched by their per-device pieces (shape where the sharding is known, as jax's
    ``sharded_aval``): XLA aliases device buffers, and refuses an alias between pieces of different sizes.
    Each donated argument takes the first unclaimed result with the same piece shape and dtype; the pair is
    an alias when the result's sharding is known (always on one device), else the argument is left to XLA as
    a donor. A donated argument with no such result becomes a donor when some unclaimed result's piece has
    the same size, or, on several devices, when some result's sharding is left to the compiler.
    """
    if not any(donated):
        return (None,) * len(in_avals), (False,) * len(in_avals)
    in_pieces = [_piece(a, s) for a, s in zip(in_avals, in_shardings)]
    out_pieces = [_piece(a, s) for a, s in zip(out_avals, out_shardings)]
    pending: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    for i, (piece, aval, d) in enumerate(zip(in_pieces, in_avals, donated)):
        if d:
            pending[(piece, aval.dtype)].append(i)
    aliases: list[int | None] = [None] * len(in_avals)
    donors = [False] * len(in_avals)
    unmatched = list(donated)
    for j, (piece, aval) in enumerate(zip(out_pieces, out_avals)):
        queue = pending.get((piece, aval.dtype))
        if queue:
            i = queue.popleft()
            unmatched[i] = False
            if num_partitions == 1 or _specified(out_shardings[j]):
                aliases[i] = j
            else:
                donors[i] = True
    free_by_size: dict[int, collections.deque] = collections.defaultdict(collections.deque)
    aliased = set(a for a in aliases if a is not None)
    for j, piece in enumerate(out_pieces):
        if j not in aliased:
            free_by_size[math.prod(piece)].append(j)
    for i, piece in enumerate(in_pieces):
        if unmatched[i] and free_by_size.get(math.prod(piece)):
            free_by_size[math.prod(piece)].popleft()
            unmatched[i], donors[i] = False, True
    if num_partitions > 1 and not all(map(_specified, out_shardings)):
        donors = [d or u for d, u in zip(donors, unmatched)]  # XLA may find a use for them after propagation
    return tuple(aliases), tuple(donors)


def _piece(aval: ShapeDtypeStruct, sharding: Sharding | None) -> tuple[int, ...]:
    return aval.shape if sharding is None else sharding.shard_shape(aval.shape)


def _warn_unusable(
    donated: Sequence[bool],
    aliases: Sequence[int | None],
    donors: Sequence[bool],
    in_avals: Sequence[ShapeDtypeStruct],
    in_shardings: Sequence[Sharding | None],
) -> None:
    """jax's warning, in its words and where jax gives it (lowering), naming the per-device pieces of the donated
    arguments that ``donation`` gave XLA neither as an alias nor as a donor: XLA reuses none of their buffers, so
    no call deletes them. Its text is what ``equinox.filter_jit(donate="all")`` filters out."""
    unusable = [
        str(jax.core.ShapedArray(_piece(a, s), a.dtype, weak_type=a.weak_type))
        for d, alias, donor, a, s in zip(donated, aliases, donors, in_avals, in_shardings)
        if d and alias is None and not donor
    ]
    if unusable:
        warnings.warn(
            f"Some donated buffers were not usable: {', '.join(unusable)}.\n"
            "See an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
            stacklevel=2,
        )


@memoize()
def _sdy_form(sharding: Sharding, ndim: int) -> tuple[sdy_forms.SdyMesh, sdy_forms.SdyTensorSharding]:
    """The pure-Python sdy values are memoised; MLIR attributes are built per module (they belong to its context)."""
    return sharding.to_sdy(ndim)


def _sharding_attr(sharding: Sharding, ndim: int, partitioner: str, table: irx.MeshTable) -> tuple[str, ir.Attribute]:
    if partitioner == "gspmd":
        return irx.MHLO_SHARDING, mhlo.build(sharding.to_hlo(ndim))
    mesh, tensor = _sdy_form(sharding, ndim)
    return irx.SDY_SHARDING, _referring(tensor, mesh, table)


def _referring(tensor: sdy_forms.SdyTensorSharding, mesh: sdy_forms.SdyMesh, table: irx.MeshTable) -> ir.Attribute:
    """The attribute of ``tensor`` referring to ``mesh``'s symbol."""
    return dataclasses.replace(tensor, mesh=table.name(mesh)).build()


def _placeholders(module: ir.Module) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if ir.StringAttr(op.attributes["call_target_name"]).value == PLACEHOLDER:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, op_class=stablehlo.CustomCallOp)  # the filter runs in C++
    return found


def _rewrite_constraint(op: ir.Operation, partitioner: str, table: irx.MeshTable) -> None:
    operand = op.operands[0]
    tensor = sdy_forms.SdyTensorSharding.from_attr(op.attributes[SDY_ATTR])
    with ir.InsertionPoint(op), op.location:
        if partitioner == "shardy":
            new = sdy.ShardingConstraintOp(operand, _referring(tensor, tensor.mesh, table))
        else:
            new = irx.gspmd_constraint(operand, op.attributes[irx.MHLO_SHARDING], tensor.open_dims)
    op.result.replace_all_uses_with(new.result)
    op.erase()


def constraint_meshes(module: ir.Module) -> list[DeviceRefs | int]:
    """Per ``with_sharding_constraint`` placeholder: its devices as (platform, id) refs, or for an
    AbstractMesh its number of devices."""
    out: list[DeviceRefs | int] = []
    for op in _placeholders(module):
        if DEVICES_ATTR in op.attributes:
            platform = ir.StringAttr(op.attributes[PLATFORM_ATTR]).value
            out.append(tuple((platform, i) for i in ir.DenseI64ArrayAttr(op.attributes[DEVICES_ATTR])))
        else:
            mesh = sdy_forms.SdyTensorSharding.from_attr(op.attributes[SDY_ATTR]).mesh
            out.append(mesh.size)
    return out


def attach(
    module: ir.Module,
    *,
    partitioner: str,
    num_partitions: int,
    num_tokens: int = 0,
    in_avals: Sequence[ShapeDtypeStruct],
    out_avals: Sequence[ShapeDtypeStruct],
    in_shardings: Sequence[Sharding | None],
    out_shardings: Sequence[Sharding | None],
    donated: Sequence[bool],
) -> None:
    """Makes ``module`` (an unsharded module in shardkit's context) the sharded program, in place.

    ``num_tokens`` effect tokens lead main's arguments and results (jax's calling convention); they get no
    sharding.
    """
    table = irx.MeshTable(module)
    given = {("arg", num_tokens + i): v for i, v in enumerate(zip(in_shardings, in_avals))}
    given |= {("res", num_tokens + i): v for i, v in enumerate(zip(out_shardings, out_avals))}
    built: dict[tuple[Sharding, int], dict[str, ir.Attribute]] = {}

    def sharded(site: irx.Site) -> dict[str, ir.Attribute] | None:
        sharding, aval = given.get((site.kind, site.index), (None, None))
        if sharding is None:
            return None
        key = (sharding, aval.ndim)
        if key not in built:
            name, attr = _sharding_attr(sharding, aval.ndim, partitioner, table)
            built[key] = {name: attr}
        return built[key]

    with module.context, ir.Location.unknown():
        main = ir.SymbolTable(module.operation)["main"]
        irx.transform_shardings(main, sharded, body=False)
        aliases, donors = donation(donated, in_avals, out_avals, in_shardings, out_shardings, num_partitions)
        _warn_unusable(donated, aliases, donors, in_avals, in_shardings)
        i32 = ir.IntegerType.get_signless(32)
        if any(a is not None for a in aliases) or any(donors):
            arg_attrs = irx.value_attrs(main, "arg")
            for attrs, alias, donor in zip(arg_attrs[num_tokens:], aliases, donors):
                if alias is not None:
                    attrs["tf.aliasing_output"] = ir.IntegerAttr.get(i32, num_tokens + alias)
                if donor:
                    attrs["jax.buffer_donor"] = ir.BoolAttr.get(True)
            irx.set_value_attrs(main, "arg", arg_attrs)
        for op in _placeholders(module):
            _rewrite_constraint(op, partitioner, table)
        table.emit()
        irx.set_partitions(module, num_partitions)
