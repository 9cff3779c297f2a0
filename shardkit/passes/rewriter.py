"""The few IR helpers every built-in pass uses: find ops by name, read and set attributes (also the
per-argument / per-result ones of a function), replace and erase ops, and the module's ``sdy.mesh`` table.

jaxlib's walk callbacks must return an ``ir.WalkResult`` and ops must not change during a walk, so ``ops``
collects first and passes edit afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from jaxlib.mlir import ir

from shardkit.dialects import sdy as sdy_forms

Op = ir.Operation | ir.OpView


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


# -- per-argument and per-result attributes of func.func --------------------------------------------------


def value_attrs(func: Op, kind: str) -> list[dict[str, ir.Attribute]]:
    """The attribute dicts of a function's arguments (``kind="arg"``) or results (``"res"``), one per value."""
    func_type = ir.FunctionType(ir.TypeAttr(func.operation.attributes["function_type"]).value)
    count = len(func_type.inputs if kind == "arg" else func_type.results)
    key = f"{kind}_attrs"
    if key not in func.operation.attributes:
        return [{} for _ in range(count)]
    return [{n.name: n.attr for n in ir.DictAttr(d)} for d in ir.ArrayAttr(func.operation.attributes[key])]


def set_value_attrs(func: Op, kind: str, dicts: Sequence[dict[str, ir.Attribute]]) -> None:
    set_attr(func, f"{kind}_attrs", ir.ArrayAttr.get([ir.DictAttr.get(d) for d in dicts]))


def value_types(func: Op, kind: str) -> list[ir.Type]:
    func_type = ir.FunctionType(ir.TypeAttr(func.operation.attributes["function_type"]).value)
    return list(func_type.inputs if kind == "arg" else func_type.results)


def rank(type_: ir.Type) -> int:
    """The rank of a ranked tensor type (0 for anything else, e.g. a token)."""
    return type_.rank if isinstance(type_, ir.RankedTensorType) else 0


def shape(type_: ir.Type) -> tuple[int, ...]:
    return tuple(type_.shape) if isinstance(type_, ir.RankedTensorType) else ()


# -- editing ops -------------------------------------------------------------------------------------------


def create(name: str, before: Op, *, results: Sequence[ir.Type], operands: Sequence[ir.Value],
           attributes: dict[str, ir.Attribute]) -> ir.Operation:
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


# -- the sdy.mesh symbol table -----------------------------------------------------------------------------


def meshes(module: ir.Module) -> dict[str, sdy_forms.SdyMesh]:
    """``sdy.mesh`` symbols at the top of the module, by name, in order."""
    return {ir.StringAttr(op.attributes["sym_name"]).value: mesh_of(op) for op in mesh_ops(module)}


def mesh_of(mesh_op: Op) -> sdy_forms.SdyMesh:
    """The mesh an ``sdy.mesh`` op defines."""
    return sdy_forms.SdyMesh.from_attr(mesh_op.operation.attributes["mesh"])


def mesh_ops(module: ir.Module) -> Iterator[ir.Operation]:
    return (op.operation for op in module.body.operations if op.operation.name == "sdy.mesh")
