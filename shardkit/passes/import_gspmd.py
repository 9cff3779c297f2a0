"""import-gspmd: GSPMD form -> Shardy form, the reverse of export-gspmd.

Each ``mhlo.sharding`` string becomes a mesh derived from its tile assignment (``dialects.sdy.hlo_to_sdy``:
one axis ``_axis_<dim>`` per tiled dimension, ``_replicas`` for the copies, ``device_ids`` when the
assignment is not iota) and an ``sdy.sharding`` on it; ``custom_call @Sharding`` becomes
``sdy.sharding_constraint`` whose ``unspecified_dims`` are open. Equal meshes share one ``sdy.mesh``
symbol, named as jax names them (``@mesh``, then ``@mesh_0``, ``@mesh_1``, ... for other meshes).
"""

from __future__ import annotations

import dataclasses

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import diagnostics, irx, mhlo, sdy as sdy_forms
from shardkit.passes.base import Pass


@dataclasses.dataclass(frozen=True)
class ImportGSPMD(Pass):
    """Converts GSPMD mhlo.sharding strings and @Sharding custom calls to Shardy meshes and shardings."""

    name = "import-gspmd"

    def apply(self, module: ir.Module) -> None:
        table = irx.MeshTable(module)

        def convert(site: irx.Site, open_dims: frozenset[int] = frozenset()) -> sdy_forms.SdyTensorSharding:
            """The Shardy form of the value's ``mhlo.sharding``; ValueError saying why it has none."""
            text = site.shardings[irx.MHLO_SHARDING]
            try:
                mesh, tensor = sdy_forms.hlo_to_sdy(mhlo.read(text), irx.rank(site.type))
            except (ValueError, RuntimeError) as e:  # xla raises RuntimeError for unparsable strings
                shown = ir.StringAttr(text).value if isinstance(text, ir.StringAttr) else text
                raise ValueError(f"cannot import mhlo.sharding {shown}: {diagnostics.clause(e)}") from None
            dims = tuple(dataclasses.replace(d, is_open=i in open_dims) for i, d in enumerate(tensor.dims))
            return dataclasses.replace(tensor, mesh=table.name(mesh), dims=dims)

        def to_sdy(site: irx.Site) -> dict[str, ir.Attribute | None] | None:
            if irx.MHLO_SHARDING not in site.shardings:
                return None
            target = irx.call_target(site.op)
            if mhlo.unspecified(site.shardings[irx.MHLO_SHARDING]):  # the empty string: no sharding
                return None if target == "Sharding" else {irx.MHLO_SHARDING: None}
            if target == "Sharding":  # the constraint op replaces the call; nothing is left to write
                tensor = convert(site, irx.gspmd_open_dims(site.op))
                with ir.InsertionPoint(site.op), site.op.location:
                    constraint = sdy.ShardingConstraintOp(site.op.operands[0], tensor.build())
                irx.replace(site.op, constraint.results)
                return None
            if target.startswith("SPMD"):
                self.emit_error(
                    site.op, f"{sdy_forms.symbol_ref(target)} (manual sharding) has no Shardy form in import-gspmd"
                )
                return None
            return {irx.MHLO_SHARDING: None, irx.SDY_SHARDING: convert(site).build()}

        with module.context:
            irx.transform_shardings(module, to_sdy, lambda site, e: self.emit_error(site.op, f"{site.label} - {e}"))
            table.emit()
