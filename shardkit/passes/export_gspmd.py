"""export-gspmd: Shardy form -> GSPMD form, as jax lowers with ``jax_use_shardy_partitioner=False``.

- ``sdy.sharding`` on function arguments/results and ops -> ``mhlo.sharding = "{devices=[4,1,2]<=[8] ...}"``
  (several results -> a tuple sharding);
- ``sdy.sharding_constraint`` -> ``stablehlo.custom_call @Sharding`` with ``backend_config`` ``""``, or
  ``"unspecified_dims=[0]"`` listing the open dimensions; ``sdy.reshard`` -> the same custom call, closed;
- ``sdy.constant`` -> ``stablehlo.constant``; ``sdy.mesh`` symbols and other ``sdy.*`` attributes dropped.

The strings come from the Shardy form itself (``SdyTensorSharding.to_hlo``, the conversion ``NamedSharding``
uses too), never from text. A mesh with ``device_ids`` lists its devices explicitly, as jax prints a mesh with
logical device ids.
Other sdy ops (manual computations, sharding groups, ...) have no GSPMD form here and are errors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from jaxlib.mlir import ir

from shardkit._jaxlib import HloSharding
from shardkit.dialects import diagnostics, irx, mhlo, sdy as sdy_forms
from shardkit.passes.base import Pass

# sdy.return only ends the region of an op that is reported itself.
_CONVERTED = ("sdy.mesh", "sdy.sharding_constraint", "sdy.reshard", "sdy.constant", "sdy.return")


@dataclasses.dataclass(frozen=True)
class ExportGSPMD(Pass):
    """Converts Shardy shardings (sdy.sharding, constraints, meshes) to GSPMD mhlo.sharding strings."""

    name = "export-gspmd"

    def apply(self, module: ir.Module) -> None:
        meshes = irx.MeshTable(module)

        # Most values share a few shardings; attributes hash by value, so each is converted once.
        converted: dict[ir.Attribute, HloSharding | str] = {}

        def convert(attr: ir.Attribute) -> HloSharding:
            """The HLO sharding of an ``#sdy.sharding``; ValueError saying why it has none."""
            if attr not in converted:
                tensor = sdy_forms.SdyTensorSharding.from_attr(attr)
                mesh = meshes.resolve(tensor.mesh)
                try:
                    if mesh is None:
                        raise ValueError(f"unknown mesh {sdy_forms.symbol_ref(tensor.mesh)}")
                    converted[attr] = tensor.to_hlo(mesh)
                except ValueError as e:
                    converted[attr] = f"cannot export {tensor} to GSPMD: {diagnostics.clause(e)}"
            found = converted[attr]
            if isinstance(found, str):
                raise ValueError(found)
            return found

        def export(site: irx.Site) -> dict[str, ir.Attribute | None] | None:
            if site.kind == "constraint" or irx.SDY_SHARDING not in site.shardings:
                return None
            if irx.MHLO_SHARDING in site.shardings:
                self.emit_error(site.op, f"{site.label} - has both sdy.sharding and mhlo.sharding")
            return {irx.SDY_SHARDING: None, irx.MHLO_SHARDING: mhlo.build(convert(site.shardings[irx.SDY_SHARDING]))}

        with module.context:
            irx.transform_shardings(module, export, lambda site, e: self.emit_error(site.op, f"{site.label} - {e}"))
            for op in irx.ops(module):
                self._export_op(op, convert)
            for op in list(irx.mesh_ops(module)):
                irx.erase(op)

    def _export_op(self, op: ir.Operation, convert: Callable[[ir.Attribute], HloSharding]) -> None:
        name = op.name
        if name in irx.CONSTRAINT_OPS:
            tensor = sdy_forms.SdyTensorSharding.from_attr(op.attributes["sharding"])
            try:
                hlo = mhlo.build(convert(op.attributes["sharding"]))
            except ValueError as e:
                self.emit_error(op, f"result 0 - {e}")
                hlo = None
            with ir.InsertionPoint(op), op.location:
                call = irx.gspmd_constraint(op.operands[0], hlo, tensor.open_dims)
            irx.replace(op, call.results)
        elif name == "sdy.constant":
            irx.constant_to_stablehlo(op)
        elif name.startswith("sdy.") and name not in _CONVERTED:
            self.emit_error(op, "has no GSPMD form; export-gspmd handles meshes, shardings, constraints and reshards")
        else:
            irx.drop_attrs(op, lambda key: key.startswith("sdy."))
