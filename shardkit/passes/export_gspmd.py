"""export-gspmd: Shardy form -> GSPMD form, as jax lowers with ``jax_use_shardy_partitioner=False``.

- ``sdy.sharding`` on function arguments/results and ops -> ``mhlo.sharding = "{devices=[4,1,2]<=[8] ...}"``
  (several results -> a tuple sharding);
- ``sdy.sharding_constraint`` -> ``stablehlo.custom_call @Sharding`` with ``backend_config`` ``""``, or
  ``"unspecified_dims=[0]"`` listing the open dimensions; ``sdy.reshard`` -> the same custom call, closed;
- ``sdy.constant`` -> ``stablehlo.constant``; ``sdy.mesh`` symbols and other ``sdy.*`` attributes dropped.

The strings come from the sharding model (``sharding_from_sdy`` then ``mhlo.to_hlo_sharding``), never from
text. A mesh with ``device_ids`` lists its devices explicitly, as jax prints a mesh with logical device ids.
Other sdy ops (manual computations, sharding groups, ...) have no GSPMD form here and are errors.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from jaxlib import xla_client as xc
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import mhlo
from shardkit.dialects import sdy as forms
from shardkit.passes import diagnostics, rewriter
from shardkit.passes.base import Pass

# sdy.return only ends the region of an op that is reported itself.
_CONVERTED = ("sdy.mesh", "sdy.sharding_constraint", "sdy.reshard", "sdy.constant", "sdy.return")


def hlo_sharding(tensor: forms.SdyTensorSharding, meshes: dict[str, forms.SdyMesh], ndim: int) -> xc.HloSharding:
    """The HloSharding of a Shardy tensor sharding; open dimensions and priorities do not matter to GSPMD.

    Raises ValueError for an unknown mesh or what a PartitionSpec cannot say (sub-axes, unreduced axes).
    """
    if isinstance(tensor.mesh, forms.SdyMesh):
        mesh = tensor.mesh
    elif tensor.mesh in meshes:
        mesh = meshes[tensor.mesh]
    else:
        raise ValueError(f"unknown mesh @{tensor.mesh}")
    if mesh.is_maximal:
        return xc.HloSharding.from_string(f"{{maximal device={mesh.device_ids[0]}}}")
    closed = dataclasses.replace(tensor, dims=tuple(forms.SdyDim(d.axes) for d in tensor.dims))
    named = forms.sharding_from_sdy(closed, forms.mesh_from_sdy(forms.SdyMesh(mesh.axes)))
    hlo = mhlo.to_hlo_sharding(named, ndim)
    if mesh.device_ids is None or hlo.is_replicated():
        return hlo
    # Tile positions index the logical mesh order; device_ids says which device sits at each position.
    # (The iota form reports a trailing replication dimension as replicate_on_last_tile_dim, not as a
    # subgroup type, so it is put back as one.)
    ids = np.asarray(mesh.device_ids)[np.asarray(hlo.tile_assignment_devices())]
    subgroups = [xc.OpSharding.Type.REPLICATED] if hlo.replicate_on_last_tile_dim() else hlo.subgroup_types()
    return xc.HloSharding.subgroup_with_device_ordering(ids.reshape(hlo.tile_assignment_dimensions()), subgroups)


def _tuple_sharding(hlos: list[xc.HloSharding], types: list[ir.Type]) -> xc.HloSharding:
    shapes = [xc.Shape.array_shape(np.dtype("float32"), rewriter.shape(t)) for t in types]
    return xc.HloSharding.tuple_sharding(xc.Shape.tuple_shape(shapes), hlos)


@dataclasses.dataclass(frozen=True)
class ExportGSPMD(Pass):
    """Converts Shardy shardings (sdy.sharding, constraints, meshes) to GSPMD mhlo.sharding strings."""

    name = "export-gspmd"

    def apply(self, module: ir.Module) -> None:
        meshes = rewriter.meshes(module)

        # Most values share a few shardings; attributes hash by value, so each is converted once.
        converted: dict[tuple[ir.Attribute, int], xc.HloSharding | str] = {}

        def convert(where: ir.Operation, what: str, attr: ir.Attribute, type_: ir.Type) -> xc.HloSharding | None:
            key = (attr, rewriter.rank(type_))
            if key not in converted:
                tensor = forms.SdyTensorSharding.from_attr(attr)
                try:
                    converted[key] = hlo_sharding(tensor, meshes, key[1])
                except ValueError as e:
                    converted[key] = f"cannot export {tensor} to GSPMD: {diagnostics.clause(e)}"
            found = converted[key]
            if isinstance(found, str):
                self.emit_error(where, f"{what} - {found}")
                return None
            return found

        with module.context:
            for func in rewriter.ops(module, "func.func"):
                for kind, label in (("arg", "arg"), ("res", "result")):
                    dicts = rewriter.value_attrs(func, kind)
                    for i, (d, t) in enumerate(zip(dicts, rewriter.value_types(func, kind))):
                        if "sdy.sharding" in d:
                            if mhlo.ATTR_NAME in d:
                                self.emit_error(func, f"{label} {i} - has both sdy.sharding and mhlo.sharding")
                            hlo = convert(func, f"{label} {i}", d.pop("sdy.sharding"), t)
                            if hlo is not None:
                                d[mhlo.ATTR_NAME] = ir.StringAttr.get(repr(hlo))
                        for key in [k for k in d if k.startswith("sdy.")]:
                            del d[key]
                    if any(dicts):
                        rewriter.set_value_attrs(func, kind, dicts)
            for op in rewriter.ops(module):
                self._export_op(op, convert)
            for op in list(rewriter.mesh_ops(module)):
                rewriter.erase(op)

    def _export_op(self, op: ir.Operation, convert) -> None:
        name = op.name
        if name in ("sdy.sharding_constraint", "sdy.reshard"):
            tensor = forms.SdyTensorSharding.from_attr(op.attributes["sharding"])
            hlo = convert(op, "result 0", op.attributes["sharding"], op.results[0].type)
            with ir.InsertionPoint(op), op.location:
                call = mhlo.constraint(
                    op.operands[0], ir.StringAttr.get(repr(hlo)) if hlo is not None else None, tensor.open_dims
                )
            rewriter.replace(op, call.results)
        elif name == "sdy.constant":
            new = rewriter.create(
                "stablehlo.constant", op, results=[op.results[0].type], operands=[],
                attributes={"value": op.attributes["value"]},
            )
            rewriter.replace(op, new.results)
        elif name.startswith("sdy.") and name not in _CONVERTED:
            self.emit_error(op, "has no GSPMD form; export-gspmd handles meshes, shardings, constraints and reshards")
        elif name != "func.func":
            self._export_attrs(op, convert)

    def _export_attrs(self, op: ir.Operation, convert) -> None:
        if "sdy.sharding" in op.attributes:
            types = [r.type for r in op.results]
            per_value = sdy.TensorShardingPerValueAttr(op.attributes["sdy.sharding"]).shardings
            hlos = [convert(op, f"result {i}", a, t) for i, (a, t) in enumerate(zip(per_value, types))]
            if all(h is not None for h in hlos):
                text = repr(hlos[0]) if len(hlos) == 1 else repr(_tuple_sharding(hlos, types))
                rewriter.set_attr(op, mhlo.ATTR_NAME, ir.StringAttr.get(text))
        for key in [k for k in op.attributes if k.startswith("sdy.")]:
            del op.attributes[key]
