"""The program a search lays out: one module lowered once, and the candidates written into copies of it.

The function is traced and lowered once, without choosing anything: the leaves the user gave a sharding keep
it, every other argument has none (Shardy reads that as fully open) and the results are open. A candidate is
that module with a mesh declared (unless the program has its own) and the free arguments' ``sdy.sharding``
written (``instance``): a bytecode copy and a few attributes, no tracing. A module from a file
(``from_module``) is searched the same way: its arguments without a sharding, or with every dimension open
(``{?}``), are free. The values the loops of ``@main`` carry between iterations (a scanned layer's activations)
are free too, as layer boundaries (``space``): a candidate that chooses one constrains it at the start of each
loop's body.
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from jaxlib.mlir import ir

from shardkit.autosharding.space import Choice, Group, Leaf, MeshShape, Spec, group_leaves
from shardkit.dialects import copy_module, dtypes, irx
from shardkit.dialects.sdy import SdyDim, SdyMesh, SdyTensorSharding

MESH = "mesh"  # the symbol a searched mesh is declared as


@dataclasses.dataclass(frozen=True, eq=False)
class Program:
    """A module and what the search may choose in it.

    Attributes:
        module: the lowered module (shared: ``instance`` copies it).
        leaves: one per argument of ``@main``.
        groups: the free leaves' sharding decisions, then the layer boundaries'.
        results: per result of ``@main``, its path (``jax.result_info``) and shape.
        mesh: the mesh the program fixes (a sharding the user gave, or a constraint in the body names it), with
            its symbol; None when the search chooses the mesh.
        donated: per argument, whether the program may reuse its buffer.
    """

    module: ir.Module
    leaves: tuple[Leaf, ...]
    groups: tuple[Group, ...]
    results: tuple[tuple[str, tuple[int, ...]], ...]
    mesh: tuple[str, SdyMesh] | None
    donated: tuple[bool, ...]

    def __reduce__(self) -> tuple:  # to a worker process: the module as bytecode
        data = io.BytesIO()
        self.module.operation.write_bytecode(data)
        return _rebuild, (data.getvalue(), self.leaves, self.groups, self.results, self.mesh, self.donated)

    @property
    def free_bytes(self) -> int:
        return sum(g.nbytes for g in self.groups)

    def instance(self, mesh: MeshShape, layout: Sequence[Choice | None]) -> ir.Module:
        """A copy of the module on ``mesh`` with each group's leaves sharded as ``layout`` says (None: open)."""
        module = copy_module(self.module)
        name = self.mesh[0] if self.mesh is not None else MESH
        with module.context, ir.Location.unknown():
            if self.mesh is None or self.mesh[1].axes != mesh.axes:  # none, or the program's resized (api._resized)
                _declare(module, name, SdyMesh(mesh.axes))
            module.operation.attributes[irx.NUM_PARTITIONS] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(32), mesh.size
            )
            main = ir.SymbolTable(module.operation)["main"]
            attrs = irx.value_attrs(main, "arg")
            for leaf in self.leaves:
                if leaf.group is None:
                    continue
                choice = layout[leaf.group]
                if choice is None:
                    attrs[leaf.index].pop(irx.SDY_SHARDING, None)
                else:
                    attrs[leaf.index][irx.SDY_SHARDING] = sharding_attr(name, choice.spec, choice.storage)
            irx.set_value_attrs(main, "arg", attrs)
            constrain_boundaries(module, name, self.boundary_constraints(layout))
        return module

    def boundary_constraints(self, layout: Sequence[Choice | None]) -> list[tuple[tuple[tuple[int, int], ...], Spec]]:
        """Per layer boundary the layout constrains: its sites and its spec."""
        return [(g.sites, layout[g.index].spec) for g in self.groups if g.boundary and layout[g.index] is not None]


def boundaries(module: ir.Module) -> list[tuple[int, int, tuple[int, ...], str, float]]:
    """The layer boundaries of a module (``space``): per value, (loop of ``@main``, its operand, shape, dtype,
    bytes per element). A loop whose trip count is not jax's counted form has none."""
    from shardkit.inspect.shardy import trip_count

    out = []
    for n, loop in enumerate(_loops(module)):
        trips = trip_count(loop)
        if trips is None or trips < 2:
            continue
        body = loop.regions[1].blocks[0]
        returned = list(body.operations)[-1].operands
        for k, value in enumerate(loop.operands):
            t = value.type
            if not isinstance(t, ir.RankedTensorType) or t.rank < 2 or t.shape[0] == trips:
                continue  # a scalar or vector, or stacked over the iterations
            if returned[k] == body.arguments[k]:
                continue  # carried unchanged
            dtype, itemsize = element_type(t)
            out.append((n, k, tuple(t.shape), dtype, itemsize))
    return out


def _loops(module: ir.Module) -> list[ir.Operation]:
    main = ir.SymbolTable(module.operation)["main"]
    return [op.operation for op in main.regions[0].blocks[0].operations if op.operation.name == "stablehlo.while"]


def constrain_boundaries(
    module: ir.Module, mesh_name: str, constraints: Sequence[tuple[tuple[tuple[int, int], ...], Spec]]
) -> ir.Module:
    """``module`` (edited in place) with each layer boundary constrained at the start of its loop's body."""
    if not constraints:
        return module
    from jaxlib.mlir.dialects import sdy

    loops = _loops(module)
    with module.context, ir.Location.unknown():
        for sites, spec in constraints:
            for n, k in sites:
                body = loops[n].regions[1].blocks[0]
                value = body.arguments[k]
                with ir.InsertionPoint.at_block_begin(body):
                    constraint = sdy.ShardingConstraintOp(value, sharding_attr(mesh_name, spec))
                value.replace_all_uses_except(constraint.result, constraint.operation)
    return module


def _rebuild(data: bytes, *fields: Any) -> Program:
    from shardkit.dialects import context

    return Program(ir.Module.parse(data, context()), *fields)


def sharding_attr(mesh_name: str, spec: Spec, storage: bool = False) -> ir.Attribute:
    """``#sdy.sharding<@mesh, [{"x"}, {}]>`` for a spec (every dimension closed); a storage sharding's sharded
    dimensions at priority 1 (``{"x"}p1``)."""
    priority = 1 if storage else None
    dims = tuple(SdyDim(tuple(axes), priority=priority if axes else None) for axes in spec)
    return SdyTensorSharding(mesh_name, dims).build()


def _declare(module: ir.Module, name: str, mesh: SdyMesh) -> None:
    from jaxlib.mlir.dialects import sdy

    for op in list(irx.mesh_ops(module)):
        if irx.symbol_name(op) == name:
            op.erase()
    with ir.InsertionPoint.at_block_begin(module.body):
        sdy.MeshOp(name, mesh.build())


def from_function(
    fun: Callable, args: Sequence[Any], donate_argnums: Sequence[int], platform: str | None = None
) -> tuple[Program, Any]:
    """The program of ``fun(*args)`` lowered once (module docstring) with its body lowered by jax for ``platform``
    (the target's, as ``Lowered.compile`` lowers it for a target; default this process's), and the ``Lowered`` it
    came from."""
    import jax

    from shardkit.stages import Lowered, jit

    lowered = jit(fun, donate_argnums=tuple(donate_argnums)).lower(*args)
    if platform is not None:
        lowered = Lowered(lowered._lowered.for_platform(platform))
    module = lowered.compiler_ir()
    avals, _ = lowered.in_avals
    flat, _ = jax.tree_util.tree_flatten_with_path(avals)
    given = [_given(x) for x in jax.tree_util.tree_leaves(tuple(args))]
    names = _parameter_names(fun, len(avals))
    paths = [names[path[0].idx] + jax.tree_util.keystr(path[1:]) for path, _ in flat]
    keys = mirrored([path for path, _ in flat], [(x.shape, str(x.dtype)) for _, x in flat])
    main = ir.SymbolTable(module.operation)["main"]
    if len(irx.value_types(main, "arg")) != len(flat):
        raise ValueError(
            f"autoshard: {getattr(fun, '__name__', 'the function')} lowers to {len(irx.value_types(main, 'arg'))} "
            f"arguments for {len(flat)} array leaves (ordered side effects add tokens); it cannot be searched."
        )
    if len(given) != len(flat):
        given = [False] * len(flat)
    return _program(module, paths, keys, given), lowered


def mirrored(paths: Sequence[tuple], types: Sequence[tuple]) -> list[tuple | None]:
    """Per leaf (its pytree path and its type), what ties it to others: its place inside the outermost subtree that
    another subtree mirrors (the same keys and types throughout) from elsewhere: another argument, or a place with
    another parent (a parameter tree and each optimizer moment of it, as arguments of their own or inside one train
    state). Mirrors under one parent (two dense layers of one model, unrolled layers in a list) are not ties: such
    layers may want different layouts. None where no subtree holding the leaf is mirrored so. Leaves tied this way
    are one decision of the search.

    Examples:
        >>> from jax.tree_util import DictKey as K, GetAttrKey as A, SequenceKey as S
        >>> w, b = ((4, 2), "float32"), ((2,), "float32")
        >>> params = [(S(0), K("w")), (S(0), K("b"))]
        >>> adam = [(S(1), S(0), A(m), K(k)) for m in ("mu", "nu") for k in "wb"]
        >>> [key and key[1] for key in mirrored(params + adam + [(S(2),)], [w, b] * 3 + [w])]
        ["['w']", "['b']", "['w']", "['b']", "['w']", "['b']", None]
        >>> mirrored([(S(0), K("dense0"), K("w")), (S(0), K("dense1"), K("w"))], [w, w])
        [None, None]
    """
    import jax

    below: dict[tuple, list[tuple]] = {}  # a subtree (its path) -> its leaves' (path inside it, type)
    for path, type_ in zip(paths, types):
        for cut in range(1, len(path)):
            below.setdefault(tuple(path[:cut]), []).append((jax.tree_util.keystr(tuple(path[cut:])), type_))
    ids: dict[tuple, int] = {}  # a signature (its leaves) -> its number
    of: dict[tuple, int] = {}  # a subtree -> its signature's number
    places: dict[int, set] = {}  # a signature's number -> where its subtrees sit (an argument is a place of its own)
    for at, leaves in below.items():
        n = of[at] = ids.setdefault(tuple(leaves), len(ids))
        places.setdefault(n, set()).add(at if len(at) == 1 else at[:-1])
    out: list[tuple | None] = []
    for path in map(tuple, paths):
        cut = next((c for c in range(1, len(path)) if len(places[of[path[:c]]]) > 1), None)
        out.append(None if cut is None else (of[path[:cut]], jax.tree_util.keystr(path[cut:])))
    return out


def _given(leaf: Any) -> bool:
    """Whether an argument leaf arrives with a sharding the user chose: one over a mesh (an Array or
    ShapeDtypeStruct on a NamedSharding, or any sharding over more than one device); numpy values, Python scalars
    and arrays on one device are free."""
    sharding = getattr(leaf, "sharding", None)
    if sharding is None:
        return False
    if getattr(sharding, "mesh", None) is not None:
        return True
    try:
        return len(sharding.device_set) > 1
    except (AttributeError, TypeError):
        return False


def from_module(module: ir.Module) -> Program:
    """The program of a module whose free arguments have no sharding, or only open dimensions."""
    table = ir.SymbolTable(module.operation)
    if "main" not in table:
        raise ValueError("the module has no function @main to lay out")
    main = table["main"]
    fixed = []
    for attrs in irx.value_attrs(main, "arg"):
        attr = attrs.get(irx.SDY_SHARDING)
        if attr is None:
            fixed.append(False)
            continue
        sharding = SdyTensorSharding.from_attr(attr)
        fixed.append(not (all(d.is_open and not d.axes for d in sharding.dims) and not sharding.replicated))
    module = copy_module(module)
    main = ir.SymbolTable(module.operation)["main"]
    attrs = irx.value_attrs(main, "arg")
    with module.context:
        for a, keep in zip(attrs, fixed):
            if not keep:
                a.pop(irx.SDY_SHARDING, None)
        irx.set_value_attrs(main, "arg", attrs)
    n = len(attrs)
    return _program(module, [f"arg{i}" for i in range(n)], [None] * n, fixed)


def _program(
    module: ir.Module, paths: Sequence[str], keys: Sequence[Hashable | None], fixed: Sequence[bool]
) -> Program:
    if not irx.uses_shardy(module):
        raise ValueError("the module is in the GSPMD form (mhlo.sharding); autoshard searches Shardy modules")
    main = ir.SymbolTable(module.operation)["main"]
    types = irx.value_types(main, "arg")
    arg_attrs = irx.value_attrs(main, "arg")
    meshes = {n: m for n, m in irx.meshes(module).items() if m.axes}
    if len(set(meshes.values())) > 1:
        listed = ", ".join(f"@{n} = {m.body}" for n, m in meshes.items())
        raise ValueError(f"the program names more than one mesh ({listed}); autoshard lays out programs on one mesh")
    mesh = next(iter(meshes.items()), None)
    leaves, tie = [], []
    for i, (t, attrs, path, key, keep) in enumerate(zip(types, arg_attrs, paths, keys, fixed)):
        shape = irx.shape(t)
        dtype, itemsize = element_type(t)
        spec = None
        if keep:
            sharding = SdyTensorSharding.from_attr(attrs[irx.SDY_SHARDING])
            spec = tuple(tuple(a.name for a in d.axes) for d in sharding.dims)
        leaves.append(Leaf(i, path, shape, dtype, itemsize, spec))
        tie.append(None if key is None else (key, shape, dtype))
    leaves, groups = group_leaves(leaves, tie)
    groups += _boundary_groups(module, len(groups))
    results = []
    for t, attrs in zip(irx.value_types(main, "res"), irx.value_attrs(main, "res")):
        info = attrs.get("jax.result_info")
        path = ir.StringAttr(info).value if info is not None else f"result{len(results)}"
        results.append((path, irx.shape(t)))
    donated = tuple("jax.buffer_donor" in a or "tf.aliasing_output" in a for a in arg_attrs)
    return Program(module, tuple(leaves), tuple(groups), tuple(results), mesh, donated)


def _boundary_groups(module: ir.Module, first: int) -> list[Group]:
    """One group per shape and dtype of the module's layer boundaries (a layer's activations forward and their
    gradient back share one), numbered from ``first``."""
    by_type: dict[tuple, list[tuple[int, int]]] = {}
    sizes = {}
    for n, k, shape, dtype, itemsize in boundaries(module):
        by_type.setdefault((shape, dtype), []).append((n, k))
        sizes[(shape, dtype)] = int(math.prod(shape) * itemsize)
    return [
        Group(first + i, f"carry<{'x'.join(map(str, shape))}x{dtype}>", shape, (), sizes[(shape, dtype)], tuple(sites))
        for i, ((shape, dtype), sites) in enumerate(by_type.items())
    ]


def _parameter_names(fun: Callable, count: int) -> list[str]:
    """The names of ``fun``'s first ``count`` positional parameters (``args[i]`` where it has none)."""
    names = [f"args[{i}]" for i in range(count)]
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, p in enumerate(params[:count]):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names[i] = p.name
        else:
            break
    return names


def element_type(type_: ir.Type) -> tuple[str, float]:
    """(numpy's name, bytes per element) of a tensor type's elements (a token or unknown type: its text, 0)."""
    if not isinstance(type_, ir.RankedTensorType):
        return str(type_), 0.0
    element = dtypes.BY_MLIR.get(str(type_.element_type))
    return (str(type_.element_type), 0.0) if element is None else (element.numpy, element.bits / 8)


def with_priorities(module: ir.Module, stored: Sequence[int]) -> ir.Module:
    """``module`` (edited in place and returned) with the sharded dimensions of the arguments ``stored`` at
    Shardy priority 1: held split, gathered where used; and, where any is stored, the results' too (``written``)."""
    main = ir.SymbolTable(module.operation)["main"]
    with module.context:
        for kind, which in (("arg", set(stored)), ("res", None)):
            attrs = irx.value_attrs(main, kind)
            for i, value in enumerate(attrs):
                attr = value.get(irx.SDY_SHARDING)
                if attr is None or not stored or (which is not None and i not in which):
                    continue
                sharding = SdyTensorSharding.from_attr(attr)
                dims = tuple(dataclasses.replace(d, priority=1) if d.axes else d for d in sharding.dims)
                value[irx.SDY_SHARDING] = dataclasses.replace(sharding, dims=dims).build()
            irx.set_value_attrs(main, kind, attrs)
    return module


def written(program: Program, candidate: Any) -> ir.Module:
    """The program's module with a candidate written in: its mesh, every free argument's sharding (a stored one
    at priority 1, an open one as Shardy chose it), its layer boundaries' constraints and every result's sharding
    as Shardy chose it. Where an argument
    is stored, the results are written at its priority too: the estimate planned them open, so at priority 0 they
    would steer XLA's propagation ahead of the batch (an updated parameter's storage sharding carried back through
    its gradient into the activations) where the estimate's did not."""
    layout = []
    for g, choice in enumerate(candidate.layout):
        if choice is None and program.groups[g].boundary:  # an open boundary stays unconstrained
            layout.append(None)
            continue
        if choice is None:  # what propagation gave the group's first leaf
            leaf = next(x for x in program.leaves if x.group == g)
            spec = candidate.reading.in_specs[leaf.index]
            choice = Choice(spec if spec is not None else tuple(() for _ in program.groups[g].shape))
        layout.append(choice)
    module = program.instance(candidate.mesh, layout)
    name = program.mesh[0] if program.mesh is not None else MESH
    main = ir.SymbolTable(module.operation)["main"]
    results = irx.value_attrs(main, "res")
    stored = any(choice is not None and choice.storage and any(choice.spec) for choice in layout)
    with module.context:
        for attrs, spec in zip(results, candidate.reading.out_specs):
            if spec is not None:
                attrs[irx.SDY_SHARDING] = sharding_attr(name, spec, storage=stored)
        irx.set_value_attrs(main, "res", results)
        irx.set_value_attrs(main, "arg", _donors_where_layouts_differ(irx.value_attrs(main, "arg"), results))
    return module


def _donors_where_layouts_differ(args: list[dict[str, ir.Attribute]], results: list[dict[str, ir.Attribute]]) -> list:
    """The arguments' attributes with each alias (``tf.aliasing_output``, set when the program was lowered with no
    shardings) whose argument and result are now sharded differently made a ``jax.buffer_donor``: their pieces
    differ in shape, which XLA refuses to alias, and jax's rule donates such an argument without an alias."""
    for attrs in args:
        alias = attrs.get("tf.aliasing_output")
        if alias is None:
            continue
        result = results[ir.IntegerAttr(alias).value]
        if str(attrs.get(irx.SDY_SHARDING)) != str(result.get(irx.SDY_SHARDING)):
            del attrs["tf.aliasing_output"]
            attrs["jax.buffer_donor"] = ir.BoolAttr.get(True)
    return args
