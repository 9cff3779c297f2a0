"""The communication report of Shardy's plan: the collectives Shardy itself inserts, before XLA sees the module.

On a copy of the module: Shardy propagation (shardkit's ``propagate``), then
``sdy-insert-explicit-reshards{enable-full-version=true}`` (every place two shardings disagree gets an
explicit reshard; without the option jaxlib 0.10's pass leaves most of them implicit) and
``sdy-reshard-to-collectives`` (each reshard becomes ``sdy.all_gather``, ``all_slice``, ``all_to_all``,
``collective_permute``; each partial result an ``sdy.all_reduce`` or ``reduce_scatter``). Collectives the
program writes itself (``psum`` and friends in a ``shard_map``) are ``stablehlo`` collectives with replica
groups and are reported too.

A ``stablehlo.while`` of the counted form jax lowers ``scan`` and ``fori_loop`` to (a counter from a constant,
compared ``LT`` with a constant, plus one per trip) runs its collectives that many times, as XLA's report
counts them; any other loop's trip count is not known at this level (reported as ``?``). A GSPMD-form
module has no Shardy plan (XLA's GSPMD partitions it; ``xla.report`` shows what it does): it raises, unless
converted first with ``import-gspmd``, whose meshes are derived from each HLO sharding (``_axis_0``, ...).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from shardkit.dialects import copy_module, dtypes, irx, sdy as sdy_forms
from shardkit.inspect import groups as groups_, locations
from shardkit.inspect.communication import Collective, CommunicationReport
from shardkit.inspect.hlo import ArrayShape
from shardkit.mesh import Mesh
from shardkit.passes import run_pipeline

PIPELINE = "propagate,sdy-insert-explicit-reshards{enable-full-version=true},sdy-reshard-to-collectives"

_PARAM = re.compile(r"\{([^{}]*)\}:\s*(\d+)->(\d+)")


def report(module: ir.Module, mesh: Any = None, devices: Sequence[Any] | None = None) -> CommunicationReport:
    """The collectives Shardy would insert into (a copy of) ``module``, plus those it already holds.

    Args:
        module: a sharded StableHLO module (Shardy or GSPMD form); it is not changed.
        mesh: the shardkit Mesh or AbstractMesh to name groups by; default: the module's first ``sdy.mesh``.
        devices: the device assignment (partition order), with a concrete ``mesh`` over permuted devices;
            default: partition ``p`` is the mesh's ``p``-th position in row-major order, as shardkit lowers.
    """
    if "main" not in ir.SymbolTable(module.operation):
        raise ValueError("the module has no function @main to plan for")
    if not irx.uses_shardy(module):
        raise ValueError(
            "the module is in the GSPMD form (mhlo.sharding): Shardy has no plan for it. The compiled "
            "report shows what XLA's GSPMD partitioner does, or run 'import-gspmd' first."
        )
    report, _ = read(planned(module), mesh, devices)
    return dataclasses.replace(report, program=(module, mesh, devices))


def planned(module: ir.Module) -> ir.Module:
    """A copy of ``module`` with Shardy's plan written in: propagated, every conflict an explicit reshard, each
    reshard the collectives it needs (``PIPELINE``)."""
    out = copy_module(module)
    run_pipeline(out, PIPELINE)
    return out


def read(
    module: ir.Module, mesh: Any = None, devices: Sequence[Any] | None = None
) -> tuple[CommunicationReport, list[ir.Operation]]:
    """The collectives ``module`` holds (after the plan's passes), in program order, with the op each came from."""
    reader = _Reader(module, mesh, devices)
    main = ir.SymbolTable(module.operation)["main"]
    reader.walk(main.operation, ())
    ids = tuple(d.id for d in mesh.devices.flat) if isinstance(mesh, Mesh) else ()
    return CommunicationReport("shardy", reader.axes, reader.num_devices, tuple(reader.found), ids), reader.ops


def array_shape(type_: ir.Type) -> ArrayShape:
    """A tensor type as the reports write it: XLA's element type name and the dimensions."""
    t = ir.RankedTensorType(type_)
    element = str(t.element_type)
    known = dtypes.BY_MLIR.get(element)  # XLA's name, as the compiled report writes it
    dtype = element if known is None else known.hlo
    return ArrayShape(dtype, tuple(t.shape))


class _Reader:
    def __init__(self, module: ir.Module, mesh: Any, devices: Sequence[Any] | None):
        self.meshes = irx.meshes(module)
        self.symbols = ir.SymbolTable(module.operation)
        if mesh is None:
            own = next((m for m in self.meshes.values() if m.axes), None)
            names, sizes = (tuple(n for n, _ in own.axes), tuple(s for _, s in own.axes)) if own else ((), ())
            order = own.device_ids if own is not None and own.device_ids is not None else None
        else:
            names, sizes, order = tuple(mesh.axis_names), tuple(s for _, s in mesh.shape_tuple), None
        self.names, self.sizes = names, sizes
        self.axes = tuple(zip(names, sizes)) if names else None
        partitions = irx.module_int(module, irx.NUM_PARTITIONS) or 1
        self.num_devices = math.prod(sizes) if names else partitions
        if devices is not None and isinstance(mesh, Mesh):
            self.positions = groups_.mesh_positions(devices, mesh)
        elif names:
            coords = np.stack(np.unravel_index(np.arange(self.num_devices), sizes), axis=1)
            self.positions = coords if order is None else coords[np.argsort(order)]
        else:
            self.positions = None
        self.found: list[Collective] = []
        self.ops: list[ir.Operation] = []

    def walk(self, op: ir.Operation, loops: tuple[int | None, ...]) -> None:
        inner = loops + (trip_count(op),) if op.name == "stablehlo.while" else loops
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    name = child.operation.name
                    if name in irx.SDY_COLLECTIVES:
                        self.found.append(self.sdy(child.operation, loops=inner))
                        self.ops.append(child.operation)
                    elif name in irx.STABLEHLO_COLLECTIVES:
                        self.found.append(self.stablehlo(child.operation, loops=inner))
                        self.ops.append(child.operation)
                    elif name == "func.call":
                        callee = ir.FlatSymbolRefAttr(child.operation.attributes["callee"]).value
                        self.walk(self.symbols[callee].operation, inner)
                    if child.operation.regions:
                        self.walk(child.operation, inner)

    def _axes(self, groups: list[list[int]]) -> tuple[str, ...] | None:
        if self.positions is None:
            return None
        return groups_.axes_of(groups, self.positions, self.names, self.sizes)

    def _mesh(self, sharding: sdy_forms.SdyTensorSharding) -> sdy_forms.SdyMesh:
        return self.meshes[sharding.mesh] if isinstance(sharding.mesh, str) else sharding.mesh

    def sdy(self, op: ir.Operation, loops: tuple[int | None, ...]) -> Collective:
        """An sdy collective: its axes are attributes; its per-device shapes follow from ``out_sharding``.

        The operand's sharding is the result's with the op undone: gathered axes added back to their
        dimensions, sliced or scattered ones taken off, all-to-all axes moved back to their source dimension.
        """
        kind = irx.SDY_COLLECTIVES[op.name]
        out = sdy_forms.SdyTensorSharding.from_attr(op.attributes["out_sharding"])
        mesh = self._mesh(out)
        if kind == "collective-permute":
            return self._permute(op, out, mesh, loops)

        def size(refs: list[irx.AxisRef]) -> int:
            return math.prod(_axis_size(mesh, name, sub) for name, sub in refs)

        result = _local(op.results[0].type, out, mesh)
        parts = [size([(a.name, a.sub) for a in dim.axes]) for dim in out.dims]
        grouped: list[irx.AxisRef] = []
        if kind == "all-to-all":
            for text, src, tgt in _PARAM.findall(str(op.attributes["params"])):
                refs = irx.axis_refs(text)
                parts[int(src)] *= size(refs)
                parts[int(tgt)] //= size(refs)
                grouped += refs
        else:
            per_dim = irx.dim_axis_refs(op.attributes[irx.SDY_COLLECTIVE_AXES[op.name]])
            grouped = [r for refs in per_dim for r in refs]
            if kind != "all-reduce":  # all-reduce: the operand holds partial sums with the result's layout
                for d, refs in enumerate(per_dim):
                    parts[d] = parts[d] * size(refs) if kind == "all-gather" else parts[d] // size(refs)
        operand = _divided(op.results[0].type, parts)
        groups = groups_.mesh_axis_groups(_ids(mesh), mesh.axes, grouped)
        return Collective(
            kind,
            op.name,
            (operand,),
            (result,),
            self._axes(groups),
            len(groups[0]),
            (),
            locations.op_name(op.location),
            locations.source(op.location),
            False,
            loops,
        )

    def _permute(
        self, op: ir.Operation, out: sdy_forms.SdyTensorSharding, mesh: sdy_forms.SdyMesh, loops: tuple[int | None, ...]
    ) -> Collective:
        """A collective-permute: each device receives the tile it holds in the result sharding from a device
        that holds that tile in the operand's (holders paired in partition order)."""
        arrays = (_local(op.results[0].type, out, mesh),)
        before = sharding_of(op.operands[0])
        axes, moving = None, True
        if before is not None:
            senders, receivers = _tiles(before, self._mesh(before)), _tiles(out, mesh)
            moving = [
                (int(s), int(r))
                for t in np.unique(receivers)
                for s, r in zip(np.flatnonzero(senders == t), np.flatnonzero(receivers == t))
                if s != r
            ]
            if self.positions is not None:
                axes = groups_.axes_of_pairs(moving, self.positions, self.names)
        return Collective(
            "collective-permute",
            op.name,
            arrays,
            arrays,
            axes,
            2 if moving else 1,
            (),
            locations.op_name(op.location),
            locations.source(op.location),
            False,
            loops,
            bool(moving),
        )

    def stablehlo(self, op: ir.Operation, loops: tuple[int | None, ...]) -> Collective:
        kind = irx.STABLEHLO_COLLECTIVES[op.name]
        attrs = op.attributes
        operands = tuple(array_shape(v.type) for v in op.operands)
        results = tuple(array_shape(v.type) for v in op.results)
        channel = "channel_handle" in attrs
        name, source = locations.op_name(op.location), locations.source(op.location)
        if kind == "collective-permute":
            pairs = np.array(ir.DenseIntElementsAttr(attrs["source_target_pairs"])).reshape(-1, 2).tolist()
            moving = [(s, t) for s, t in pairs if s != t]
            axes = None if self.positions is None else groups_.axes_of_pairs(moving, self.positions, self.names)
            return Collective(
                kind, op.name, operands, results, axes, 2 if moving else 1, (), name, source, False, loops, bool(moving)
            )
        raw = irx.replica_groups(op)
        if isinstance(raw, tuple):  # mesh axes: the groups of the named mesh's partitions along them
            mesh_name, refs = raw
            mesh = self.meshes[mesh_name]
            raw = groups_.mesh_axis_groups(_ids(mesh), mesh.axes, refs)
        global_ids = ("use_global_device_ids" in attrs) if kind != "all-to-all" else None
        groups = groups_.partition_groups(
            raw,
            channel=channel,
            global_ids=global_ids,
            num_partitions=self.num_devices,
        )
        return Collective(
            kind, op.name, operands, results, self._axes(groups), len(groups[0]), (), name, source, False, loops
        )


def trip_count(loop: ir.Operation) -> int | None:
    """The trip count of a ``stablehlo.while`` of jax's counted form (``scan``, ``fori_loop``): loop value ``k``
    starts at a constant ``c``, the condition returns ``value_k < n`` for a constant ``n`` and the body returns
    ``value_k + 1`` as value ``k``: ``max(n - c, 0)``. None for any other loop."""
    cond, body = loop.regions[0].blocks[0], loop.regions[1].blocks[0]
    returned = list(cond.operations)[-1].operands
    compare = returned[0].owner if len(returned) == 1 else None
    if not isinstance(compare, ir.OpView) or compare.operation.name != "stablehlo.compare":
        return None
    if "LT" not in str(compare.attributes["comparison_direction"]):
        return None
    counter, bound = compare.operands
    k, n = _argument_of(counter, cond), _int_constant(bound)
    if k is None or n is None or k >= len(loop.operands):
        return None
    start = _int_constant(loop.operands[k])
    step = list(body.operations)[-1].operands[k].owner
    if start is None or not isinstance(step, ir.OpView) or step.operation.name != "stablehlo.add":
        return None
    a, b = step.operands
    if not (
        (_argument_of(a, body) == k and _int_constant(b) == 1) or (_argument_of(b, body) == k and _int_constant(a) == 1)
    ):
        return None
    return max(n - start, 0)


def _argument_of(value: ir.Value, block: ir.Block) -> int | None:
    """``k`` where ``value`` is argument ``k`` of ``block``, else None."""
    if not isinstance(value.owner, ir.Block) or value.owner != block:
        return None
    return ir.BlockArgument(value).arg_number


def _int_constant(value: ir.Value) -> int | None:
    """The value of an integer scalar constant (``stablehlo.constant``, or ``sdy.constant`` inside Shardy's
    pipeline), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name not in ("stablehlo.constant", "sdy.constant"):
        return None
    try:
        values = np.array(ir.DenseIntElementsAttr(owner.attributes["value"]))
    except ValueError:  # a float constant
        return None
    return int(values) if values.size == 1 else None


def _ids(mesh: sdy_forms.SdyMesh) -> np.ndarray:
    """The partition ids of a mesh's positions, in logical (row-major) order."""
    return np.array(mesh.device_ids) if mesh.device_ids is not None else np.arange(mesh.size)


def _axis_size(mesh: sdy_forms.SdyMesh, name: str, sub: tuple[int, int] | None) -> int:
    return dict(mesh.axes)[name] if sub is None else sub[1]


def _divided(type_: ir.Type, parts: Sequence[int]) -> ArrayShape:
    """The per-device array of a global tensor type split ``parts[d]`` ways along each dimension (padded up)."""
    shape = ir.RankedTensorType(type_).shape
    return ArrayShape(array_shape(type_).dtype, tuple(-(-n // p) for n, p in zip(shape, parts)))


def _local(type_: ir.Type, sharding: sdy_forms.SdyTensorSharding, mesh: sdy_forms.SdyMesh) -> ArrayShape:
    """The per-device array of a global tensor type under a sharding."""
    return _divided(type_, [math.prod(_axis_size(mesh, a.name, a.sub) for a in dim.axes) for dim in sharding.dims])


def _tiles(sharding: sdy_forms.SdyTensorSharding, mesh: sdy_forms.SdyMesh) -> np.ndarray:
    """``tiles[p]``: the tile (row-major index over the sharded dimensions) that partition ``p`` holds."""
    names, sizes = [n for n, _ in mesh.axes], [s for _, s in mesh.axes]
    coords = np.unravel_index(np.arange(mesh.size), sizes)
    tile = np.zeros(mesh.size, dtype=np.int64)
    for dim in sharding.dims:
        for a in dim.axes:
            axis = names.index(a.name)
            pre, size = a.sub or (1, sizes[axis])
            tile = tile * size + (coords[axis] // pre) % size
    out = np.empty(mesh.size, dtype=np.int64)
    out[_ids(mesh)] = tile
    return out


def sharding_of(value: ir.Value) -> sdy_forms.SdyTensorSharding | None:
    """The sharding Shardy gives a value: its defining op's ``out_sharding``, ``sharding`` (a constraint or
    reshard) or ``sdy.sharding``, or its function argument's ``sdy.sharding``; None for anything else."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        parent = owner.owner
        if parent.operation.name != "func.func":
            return None
        attrs = irx.value_attrs(parent, "arg")[ir.BlockArgument(value).arg_number]
        return sdy_forms.SdyTensorSharding.from_attr(attrs[irx.SDY_SHARDING]) if irx.SDY_SHARDING in attrs else None
    attrs = owner.attributes
    for key in ("out_sharding", "sharding"):
        if key in attrs:
            return sdy_forms.SdyTensorSharding.from_attr(attrs[key])
    if irx.SDY_SHARDING in attrs:
        from jaxlib.mlir.dialects import sdy

        per_value = sdy.TensorShardingPerValueAttr(attrs[irx.SDY_SHARDING]).shardings
        return sdy_forms.SdyTensorSharding.from_attr(per_value[ir.OpResult(value).result_number])
    return None
