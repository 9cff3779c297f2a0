"""The IR helpers that lowering, the passes and the executor share; nothing else walks or edits modules.

- attribute names (``SDY_SHARDING``, ``MHLO_SHARDING``, ...), defined once as Shardy's ``constants.h`` does;
- walking ops, reading and setting attributes (also a function's per-argument and per-result ones), creating,
  replacing and erasing ops;
- ``MeshTable``: the module's ``sdy.mesh`` symbols, named as jax names them;
- ``gspmd_constraint``: GSPMD's ``custom_call @Sharding``, built and read in one place;
- ``walk_shardings`` / ``set_shardings``: the one walk over every value's sharding in either form, after Shardy's
  ``walkShardings``: function arguments and results, op results, and constraint ops; ``transform_shardings``
  (after Shardy's ``transformShardings``) applies a function to each and writes back what it returns.

jaxlib's walk callbacks must return an ``ir.WalkResult`` and ops must not change during a walk, so every walk
here collects first and callers edit afterwards.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy, stablehlo

from shardkit.dialects import mhlo
from shardkit.dialects.sdy import SdyMesh

SDY_SHARDING = "sdy.sharding"  # a value's Shardy sharding (per value on ops: TensorShardingPerValueAttr)
MHLO_SHARDING = "mhlo.sharding"  # a value's GSPMD sharding string (a tuple sharding on multi-result ops)
NUM_PARTITIONS = "mhlo.num_partitions"
NUM_REPLICAS = "mhlo.num_replicas"
SHARDING_FORMS = (SDY_SHARDING, MHLO_SHARDING)
CONSTRAINT_OPS = ("sdy.sharding_constraint", "sdy.reshard")  # their ``sharding`` attribute is the result's

# Collectives by op name, each with its kind in XLA's words (the names the communication report uses).
SDY_COLLECTIVES = {  # Shardy's, which name the mesh axes they run over
    "sdy.all_gather": "all-gather",
    "sdy.all_slice": "all-slice",
    "sdy.all_reduce": "all-reduce",
    "sdy.reduce_scatter": "reduce-scatter",
    "sdy.all_to_all": "all-to-all",
    "sdy.collective_permute": "collective-permute",
}
SDY_COLLECTIVE_AXES = {  # the attribute naming the axes of the Shardy collectives that have one
    "sdy.all_gather": "gathering_axes",
    "sdy.all_slice": "slicing_axes",
    "sdy.reduce_scatter": "reduce_scatter_axes",
    "sdy.all_reduce": "reduction_axes",
}
STABLEHLO_COLLECTIVES = {  # StableHLO's, which name their devices by replica groups (or source-target pairs)
    "stablehlo.all_reduce": "all-reduce",
    "stablehlo.all_gather": "all-gather",
    "stablehlo.reduce_scatter": "reduce-scatter",
    "stablehlo.all_to_all": "all-to-all",
    "stablehlo.collective_permute": "collective-permute",
}

Op = ir.Operation | ir.OpView


# -- walking and editing ops ---------------------------------------------------------------------------------


def ops(root: ir.Module | Op, names: str | Sequence[str] | None = None) -> list[ir.Operation]:
    """Every op under ``root`` (itself included, pre-order) whose name is in ``names`` (all when None)."""
    wanted = {names} if isinstance(names, str) else (set(names) if names is not None else None)
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if wanted is None or op.name in wanted:
            found.append(op)
        return ir.WalkResult.ADVANCE

    (root.operation if isinstance(root, (ir.Module, ir.OpView)) else root).walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def set_attr(op: Op, key: str, value: ir.Attribute | None) -> None:
    """Sets (or with None removes) one attribute."""
    attrs = op.operation.attributes
    if value is not None:
        attrs[key] = value
    elif key in attrs:
        del attrs[key]


def create(
    name: str,
    before: Op,
    *,
    results: Sequence[ir.Type],
    operands: Sequence[ir.Value],
    attributes: dict[str, ir.Attribute],
) -> ir.Operation:
    """A new op inserted right before ``before`` and located where it is."""
    with ir.InsertionPoint(before), before.location:
        return ir.Operation.create(name, results=list(results), operands=list(operands), attributes=attributes)


def replace(op: Op, values: Sequence[ir.Value]) -> None:
    """Rewires every use of ``op``'s results to ``values`` and erases ``op``."""
    for old, new in zip(op.operation.results, values, strict=True):
        old.replace_all_uses_with(new)
    op.operation.erase()


def erase(op: Op) -> None:
    op.operation.erase()


def drop_attrs(op: Op, drop: Callable[[str], bool]) -> None:
    """Removes the attributes whose name ``drop`` accepts, from the op and, on a function, from its arguments'
    and results' attribute dicts."""
    attrs = op.operation.attributes
    for key in [key for key in attrs if drop(key)]:
        del attrs[key]
    if op.operation.name == "func.func":
        for kind in ("arg", "res"):
            dicts = value_attrs(op, kind)
            if any(drop(k) for d in dicts for k in d):
                set_value_attrs(op, kind, [{k: v for k, v in d.items() if not drop(k)} for d in dicts])


def constant_to_stablehlo(op: Op) -> None:
    """Replaces a constant of another dialect (Shardy's ``sdy.constant``, MLIR's ``arith.constant`` of a tensor) by
    the ``stablehlo.constant`` of the same value."""
    new = create(
        "stablehlo.constant",
        op,
        results=[op.results[0].type],
        operands=[],
        attributes={"value": op.operation.attributes["value"]},
    )
    replace(op, new.results)


def call_target(op: Op) -> str:
    """The callee of a ``stablehlo.custom_call`` (``Sharding``, ``SPMDFullToShardShape``, ...); "" for other ops."""
    if op.operation.name != "stablehlo.custom_call":
        return ""
    return ir.StringAttr(op.operation.attributes["call_target_name"]).value


# -- GSPMD's sharding constraint --------------------------------------------------------------------------

_UNSPECIFIED = re.compile(r"unspecified_dims=\[([0-9, ]*)\]")


def gspmd_constraint(operand: ir.Value, sharding: ir.Attribute | None, open_dims: Sequence[int]) -> ir.OpView:
    """GSPMD's sharding constraint, as jax emits it: ``custom_call @Sharding(operand)`` with ``mhlo.sharding``
    and ``backend_config`` ``""`` or ``"unspecified_dims=[0,2]"`` naming the dimensions left to the compiler.

    Needs an active insertion point and location; ``sharding`` None leaves the attribute off (for a caller
    that reports why it has none).
    """
    config = f"unspecified_dims=[{','.join(map(str, open_dims))}]" if open_dims else ""
    call = stablehlo.CustomCallOp(
        [operand.type], [operand], call_target_name="Sharding", backend_config=ir.StringAttr.get(config)
    )
    if sharding is not None:
        call.attributes[MHLO_SHARDING] = sharding
    return call


def gspmd_open_dims(call: Op) -> frozenset[int]:
    """The dimensions a ``custom_call @Sharding`` leaves to the compiler (its ``unspecified_dims``)."""
    attrs = call.operation.attributes
    config = ir.StringAttr(attrs["backend_config"]).value if "backend_config" in attrs else ""
    match = _UNSPECIFIED.search(config)
    return frozenset(int(t) for t in match.group(1).split(",") if t.strip()) if match else frozenset()


# -- a function's per-argument and per-result attributes --------------------------------------------------


def _function_type(func: Op) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(func.operation.attributes["function_type"]).value)


def value_types(func: Op, kind: str) -> list[ir.Type]:
    """The types of a function's arguments (``kind="arg"``) or results (``"res"``)."""
    func_type = _function_type(func)
    return list(func_type.inputs if kind == "arg" else func_type.results)


def value_attrs(func: Op, kind: str) -> list[dict[str, ir.Attribute]]:
    """The attribute dicts of a function's arguments (``kind="arg"``) or results (``"res"``), one per value."""
    key = f"{kind}_attrs"
    if key not in func.operation.attributes:
        return [{} for _ in value_types(func, kind)]
    return [{n.name: n.attr for n in ir.DictAttr(d)} for d in ir.ArrayAttr(func.operation.attributes[key])]


def set_value_attrs(func: Op, kind: str, dicts: Sequence[Mapping[str, ir.Attribute]]) -> None:
    """Replaces every argument's (``"arg"``) or result's (``"res"``) attribute dict; needs an active context."""
    set_attr(func, f"{kind}_attrs", ir.ArrayAttr.get([ir.DictAttr.get(dict(d)) for d in dicts]))


def rank(type_: ir.Type) -> int:
    """The rank of a ranked tensor type (0 for anything else, e.g. a token)."""
    return type_.rank if isinstance(type_, ir.RankedTensorType) else 0


def shape(type_: ir.Type) -> tuple[int, ...]:
    return tuple(type_.shape) if isinstance(type_, ir.RankedTensorType) else ()


# -- the sdy.mesh symbols ----------------------------------------------------------------------------------


def module_int(module: ir.Module, key: str) -> int | None:
    """The integer module attribute ``key`` (``mhlo.num_partitions``, ...), None when absent; ValueError naming
    it when it holds something else (the bindings' cast would only say "Cannot cast attribute")."""
    attrs = module.operation.attributes
    if key not in attrs:
        return None
    if not isinstance(attrs[key], ir.IntegerAttr):
        raise ValueError(f"{key} must be an integer attribute, got {attrs[key]}")
    return ir.IntegerAttr(attrs[key]).value


def set_partitions(module: ir.Module, partitions: int) -> None:
    """Writes the SPMD program's device count as jax's lowering does: ``mhlo.num_partitions``, one replica."""
    i32 = ir.IntegerType.get_signless(32, module.context)
    module.operation.attributes[NUM_PARTITIONS] = ir.IntegerAttr.get(i32, partitions)
    module.operation.attributes[NUM_REPLICAS] = ir.IntegerAttr.get(i32, 1)


def mesh_ops(module: ir.Module) -> Iterator[ir.Operation]:
    return (op.operation for op in module.body.operations if op.operation.name == "sdy.mesh")


def mesh_of(mesh_op: Op) -> SdyMesh:
    """The mesh an ``sdy.mesh`` op defines."""
    return SdyMesh.from_attr(mesh_op.operation.attributes["mesh"])


def symbol_name(op: Op) -> str:
    return ir.StringAttr(op.operation.attributes["sym_name"]).value


def function_of(op: Op) -> ir.Operation | None:
    """The ``func.func`` that holds ``op`` (``op`` itself if it is one: its arguments and results are its own)."""
    current: ir.Operation | None = op.operation
    while current is not None and current.name != "func.func":
        parent = current.parent
        current = parent.operation if parent is not None else None
    return current


def meshes(module: ir.Module) -> dict[str, SdyMesh]:
    """``sdy.mesh`` symbols at the top of the module, by name, in order."""
    return {symbol_name(op): mesh_of(op) for op in mesh_ops(module)}


class MeshTable:
    """The module's ``sdy.mesh`` symbols plus the ones to declare: one symbol per distinct mesh.

    New meshes are named as jax names them: ``@mesh`` (``@empty_mesh``, ``@maximal_mesh_<id>``), then
    ``@mesh_0``, ``@mesh_1``, ... for other meshes that would get the same name. Meshes the module already
    declares keep their names (the first symbol, where one mesh is declared twice).

    Examples:
        >>> table = MeshTable(ir.Module.parse("module {}", context()))
        >>> table.name(SdyMesh((("x", 4),))), table.name(SdyMesh((("y", 2),))), table.name(SdyMesh((("x", 4),)))
        ('mesh', 'mesh_0', 'mesh')
    """

    def __init__(self, module: ir.Module):
        self.module = module
        self.by_name = meshes(module)
        self._names: dict[SdyMesh, str] = {}
        for name, mesh in self.by_name.items():
            self._names.setdefault(mesh, name)
        self._new: list[str] = []

    def name(self, mesh: SdyMesh) -> str:
        """The symbol of ``mesh``, declared on ``emit`` if the module has none yet."""
        name = self._names.get(mesh)
        if name is None:
            base = name = mesh.default_name()
            k = 0
            while name in self.by_name:
                name, k = f"{base}_{k}", k + 1
            self._names[mesh] = name
            self.by_name[name] = mesh
            self._new.append(name)
        return name

    def resolve(self, ref: str | SdyMesh) -> SdyMesh | None:
        """The mesh a tensor sharding refers to (a symbol or an inlined mesh); None for an unknown symbol."""
        return ref if isinstance(ref, SdyMesh) else self.by_name.get(ref)

    def emit(self) -> None:
        """Declares the meshes ``name`` added, at the top of the module (needs an active context)."""
        with ir.InsertionPoint.at_block_begin(self.module.body), ir.Location.unknown():
            for name in self._new:
                sdy.MeshOp(name, self.by_name[name].build())
        self._new.clear()


# -- every value's sharding ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class Site:
    """A value that holds a sharding: a function argument or result, an op result, or a constraint's result.

    ``shardings`` maps each form present (``SDY_SHARDING``, ``MHLO_SHARDING``) to the value's own attribute: one
    ``#sdy.sharding`` (an element of an op's per-value list; a constraint's ``sharding``), or one HLO sharding
    string (an element of an op's tuple sharding; the whole string where it does not parse as one).
    """

    op: ir.Operation  # what holds the attribute and what diagnostics blame (func.func for its arguments)
    kind: str  # "arg" or "res" (of a func.func), "op" (an op's results), "constraint" (CONSTRAINT_OPS)
    index: int
    type: ir.Type
    shardings: Mapping[str, ir.Attribute]

    @property
    def label(self) -> str:
        """How Shardy's diagnostics name the value: ``arg 0`` or ``result 1``."""
        return f"{'arg' if self.kind == 'arg' else 'result'} {self.index}"


AxisRef = tuple[str, tuple[int, int] | None]  # an axis name, and (pre-size, size) for a sub-axis


_AXIS_REF = re.compile(r'"((?:[^"\\]|\\.)*)"(?::\((\d+)\)(\d+))?')


def axis_refs(text: str) -> list[AxisRef]:
    """The axis references of Shardy's printed form: ``"x", "y":(1)2`` -> ``[('x', None), ('y', (1, 2))]``."""
    return [(name, (int(pre), int(size)) if pre else None) for name, pre, size in _AXIS_REF.findall(text)]


def dim_axis_refs(attr: ir.Attribute) -> list[list[AxisRef]]:
    """``#sdy<list_of_axis_ref_lists[{"x"}, {}]>`` -> ``[[('x', None)], []]``; an ``axis_ref_list`` is one list.

    jaxlib has no Python accessors for these attributes, so their (small, fixed) printed form is read.
    """
    return [axis_refs(group) for group in re.findall(r"\{([^{}]*)\}", str(attr))]


def replica_groups(op: Op) -> list[list[int]] | tuple[str, list[AxisRef]]:
    """A StableHLO collective's ``replica_groups`` in either form: the dense groups of ids (``[]`` for one group
    of all), or, for ``#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [...]>`` (what jax 0.11 and later
    write in ``shard_map`` bodies), the mesh's symbol name and the (sub-)axes the groups vary along."""
    attr = op.attributes["replica_groups"]
    if stablehlo.ReplicaGroupMeshAxesAttr.isinstance(attr):
        form = stablehlo.ReplicaGroupMeshAxesAttr(attr)
        refs = []
        for axis in form.axes:
            ref = stablehlo.AxisRefAttr(axis)
            sub = ref.sub_axis_info
            info = None if sub is None else stablehlo.SubAxisInfoAttr(sub)
            refs.append((ref.name, None if info is None else (info.pre_size, info.size)))
        return ir.FlatSymbolRefAttr(form.mesh).value, refs
    ids = ir.DenseIntElementsAttr(attr)
    shape = ir.ShapedType(ids.type).shape
    flat = list(ids)
    width = shape[1] if len(shape) == 2 else len(flat)
    return [flat[i : i + width] for i in range(0, len(flat), width)] if flat else []


def uses_shardy(module: ir.Module) -> bool:
    """Whether the module is in the Shardy form: ``sdy.sharding`` anywhere, or no sharding at all.

    GSPMD modules carry ``mhlo.sharding`` attributes (``@Sharding`` custom calls hold one too) instead.
    """
    forms = {form for site in walk_shardings(module) for form in site.shardings}
    return SDY_SHARDING in forms or MHLO_SHARDING not in forms


def walk_shardings(root: ir.Module | Op, *, body: bool = True) -> list[Site]:
    """Every function argument and result (sharded or not), and every op result and constraint that holds a
    sharding, in program order; with ``body=False``, only ``root``'s own (a function's arguments and results)."""
    sites: list[Site] = []
    for op in ops(root) if body else [root.operation]:
        if op.name == "func.func":
            for kind in ("arg", "res"):
                for i, (attrs, t) in enumerate(zip(value_attrs(op, kind), value_types(op, kind))):
                    found = {k: attrs[k] for k in SHARDING_FORMS if k in attrs}
                    sites.append(Site(op, kind, i, t, found))
        elif op.name in CONSTRAINT_OPS:
            sites.append(Site(op, "constraint", 0, op.results[0].type, {SDY_SHARDING: op.attributes["sharding"]}))
        else:
            sites += _op_sites(op)
    return sites


def _op_sites(op: ir.Operation) -> list[Site]:
    attrs = op.attributes
    n = len(op.results)
    per_value: dict[str, list[ir.Attribute]] = {}
    if SDY_SHARDING in attrs:
        per_value[SDY_SHARDING] = list(sdy.TensorShardingPerValueAttr(attrs[SDY_SHARDING]).shardings)
    if MHLO_SHARDING in attrs:
        per_value[MHLO_SHARDING] = mhlo.split(attrs[MHLO_SHARDING], n)
    if not per_value:
        return []
    return [
        Site(op, "op", i, r.type, {k: v[i] for k, v in per_value.items() if i < len(v)})
        for i, r in enumerate(op.results)
    ]


def transform_shardings(
    root: ir.Module | Op,
    transform: Callable[[Site], Mapping[str, ir.Attribute | None] | None],
    failed: Callable[[Site, ValueError], None] | None = None,
    *,
    body: bool = True,
) -> None:
    """Applies ``transform`` to every value ``walk_shardings(root, body=body)`` finds and writes back what it
    returns, after Shardy's ``transformShardings``: the forms to set (an attribute) or remove (None), or None to
    leave the value as it is. Needs an active context.

    A ValueError from ``transform`` goes to ``failed`` with the value (it propagates when ``failed`` is None) and
    leaves every sharding of that value's op as it was (a function's arguments and results, an op's results), so
    a pass reports each value it cannot convert and never writes half an op.
    """
    updates: list[tuple[Site, Mapping[str, ir.Attribute | None]]] = []
    refused: set[ir.Operation] = set()
    for site in walk_shardings(root, body=body):
        try:
            change = transform(site)
        except ValueError as e:
            if failed is None:
                raise
            failed(site, e)
            refused.add(site.op)
            continue
        if change:
            updates.append((site, change))
    set_shardings((site, change) for site, change in updates if site.op not in refused)


def set_shardings(updates: Iterable[tuple[Site, Mapping[str, ir.Attribute | None]]]) -> None:
    """Sets (an attribute) or removes (None) sharding forms of the given values; needs an active context.

    Updates are applied per holder: one write of a function's argument or result attributes, one per-value
    ``sdy.sharding`` list or tuple ``mhlo.sharding`` per op (every result then needs one, as MLIR requires).
    """
    groups: dict[tuple[ir.Operation, str], list[tuple[Site, Mapping[str, ir.Attribute | None]]]] = {}
    for site, change in updates:
        groups.setdefault((site.op, site.kind), []).append((site, change))
    for (op, kind), changes in groups.items():
        if kind in ("arg", "res"):
            dicts = value_attrs(op, kind)
            for site, change in changes:
                for key, value in change.items():
                    _put(dicts[site.index], key, value)
            set_value_attrs(op, kind, dicts)
        elif kind == "constraint":
            for _, change in changes:
                if change.keys() - {SDY_SHARDING} or change.get(SDY_SHARDING) is None:
                    raise ValueError(f"'{op.name}' holds exactly one sdy sharding; it cannot take {dict(change)}.")
                op.attributes["sharding"] = change[SDY_SHARDING]
        else:
            _set_op_shardings(op, changes)


def _put(attrs: dict[str, ir.Attribute], key: str, value: ir.Attribute | None) -> None:
    if value is None:
        attrs.pop(key, None)
    else:
        attrs[key] = value


def _set_op_shardings(op: ir.Operation, changes: list[tuple[Site, Mapping[str, ir.Attribute | None]]]) -> None:
    """Writes the forms ``changes`` touch, each as one attribute of the op; a form no change touches stays as it
    is written (an ``mhlo.sharding`` whose tuple does not match the results is kept whole for its reader)."""
    current = {i: dict(s.shardings) for i, s in enumerate(_op_sites(op))}
    values = [current.get(i, {}) for i in range(len(op.results))]
    touched = set()
    for site, change in changes:
        for key, value in change.items():
            _put(values[site.index], key, value)
            touched.add(key)
    for key in SHARDING_FORMS:
        if key not in touched:
            continue
        present = [v[key] for v in values if key in v]
        if not present:
            set_attr(op, key, None)
        elif len(present) != len(values):
            raise ValueError(f"'{op.name}' needs a {key} for each of its {len(values)} results, got {len(present)}.")
        elif key == SDY_SHARDING:
            set_attr(op, key, sdy.TensorShardingPerValueAttr.get(present))
        else:
            set_attr(op, key, mhlo.join(present, [r.type for r in op.results]))
