"""import-gspmd: GSPMD form -> Shardy form, the reverse of export-gspmd.

Each ``mhlo.sharding`` string becomes a mesh derived from its tile assignment (``dialects.sdy.hlo_to_sdy``:
one axis ``_axis_<dim>`` per tiled dimension, ``_replicas`` for the copies, ``device_ids`` when the
assignment is not iota) and an ``sdy.sharding`` on it; ``custom_call @Sharding`` becomes
``sdy.sharding_constraint`` whose ``unspecified_dims`` are open. Equal meshes share one ``sdy.mesh``
symbol; different meshes that jax would give the same name get ``_1``, ``_2``, ... suffixes.
"""

from __future__ import annotations

import dataclasses
import re

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import mhlo
from shardkit.dialects import sdy as forms
from shardkit.passes import diagnostics, rewriter
from shardkit.passes.base import Pass

_UNSPECIFIED = re.compile(r"unspecified_dims=\[([0-9, ]*)\]")


class _MeshNames:
    """Hands out one symbol per distinct mesh, keeping the module's existing ``sdy.mesh`` symbols."""

    def __init__(self, module: ir.Module):
        self.by_mesh = {mesh: name for name, mesh in reversed(rewriter.meshes(module).items())}
        self.taken = set(self.by_mesh.values())
        self.new: list[tuple[str, forms.SdyMesh]] = []

    def name(self, mesh: forms.SdyMesh) -> str:
        if mesh not in self.by_mesh:
            base, name, k = mesh.default_name(), mesh.default_name(), 0
            while name in self.taken:
                k += 1
                name = f"{base}_{k}"
            self.by_mesh[mesh] = name
            self.taken.add(name)
            self.new.append((name, mesh))
        return self.by_mesh[mesh]


@dataclasses.dataclass(frozen=True)
class ImportGSPMD(Pass):
    """Converts GSPMD mhlo.sharding strings and @Sharding custom calls to Shardy meshes and shardings."""

    name = "import-gspmd"

    def apply(self, module: ir.Module) -> None:
        names = _MeshNames(module)

        def convert(where: ir.Operation, what: str, text: ir.Attribute, type_: ir.Type,
                    open_dims: frozenset[int] = frozenset()) -> forms.SdyTensorSharding | None:
            try:
                hlo = mhlo.read(text)
                ndim = rewriter.rank(type_)
                mesh, tensor = forms.hlo_to_sdy(hlo, ndim)
            except (ValueError, RuntimeError) as e:  # xla raises RuntimeError for unparsable strings
                self.emit_error(where, f"{what} - cannot import mhlo.sharding {ir.StringAttr(text).value}: "
                                       f"{diagnostics.clause(e)}")
                return None
            dims = tuple(dataclasses.replace(d, is_open=i in open_dims) for i, d in enumerate(tensor.dims))
            return dataclasses.replace(tensor, mesh=names.name(mesh), dims=dims)

        with module.context:
            for func in rewriter.ops(module, "func.func"):
                for kind, label in (("arg", "arg"), ("res", "result")):
                    dicts = rewriter.value_attrs(func, kind)
                    for i, (d, t) in enumerate(zip(dicts, rewriter.value_types(func, kind))):
                        if mhlo.ATTR_NAME in d:
                            tensor = convert(func, f"{label} {i}", d.pop(mhlo.ATTR_NAME), t)
                            if tensor is not None:
                                d["sdy.sharding"] = tensor.build()
                    if any(dicts):
                        rewriter.set_value_attrs(func, kind, dicts)
            for op in rewriter.ops(module):
                if op.name == "func.func" or mhlo.ATTR_NAME not in op.attributes:
                    continue
                if op.name == "stablehlo.custom_call" and _target(op) == "Sharding":
                    config = ir.StringAttr(op.attributes["backend_config"]).value if "backend_config" in op.attributes else ""
                    match = _UNSPECIFIED.search(config)
                    open_dims = frozenset(int(t) for t in match.group(1).split(",") if t.strip()) if match else frozenset()
                    tensor = convert(op, "result 0", op.attributes[mhlo.ATTR_NAME], op.results[0].type, open_dims)
                    if tensor is not None:
                        with ir.InsertionPoint(op), op.location:
                            constraint = sdy.ShardingConstraintOp(op.operands[0], tensor.build())
                        rewriter.replace(op, constraint.results)
                elif op.name == "stablehlo.custom_call" and _target(op).startswith("SPMD"):
                    self.emit_error(op, f"@{_target(op)} (manual sharding) has no Shardy form in import-gspmd")
                else:
                    self._import_op_sharding(op, convert)
            with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
                for name, mesh in names.new:
                    sdy.MeshOp(name, mesh.build())

    def _import_op_sharding(self, op: ir.Operation, convert) -> None:
        text = op.attributes[mhlo.ATTR_NAME]
        try:
            hlo = mhlo.read(text)
        except RuntimeError as e:
            self.emit_error(op, f"result 0 - cannot import mhlo.sharding {ir.StringAttr(text).value}: "
                                f"{diagnostics.clause(e)}")
            return
        if hlo.tuple_elements():
            elements = [ir.StringAttr.get(repr(h)) for h in hlo.tuple_elements()]
        else:
            elements = [text] * len(op.results)
        tensors = [convert(op, f"result {i}", e, r.type) for i, (e, r) in enumerate(zip(elements, op.results))]
        if all(t is not None for t in tensors):
            rewriter.set_attr(op, "sdy.sharding", sdy.TensorShardingPerValueAttr.get([t.build() for t in tensors]))
            rewriter.set_attr(op, mhlo.ATTR_NAME, None)


def _target(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["call_target_name"]).value

