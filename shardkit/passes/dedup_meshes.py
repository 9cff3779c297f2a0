"""dedup-meshes: merges ``sdy.mesh`` symbols that define the same mesh (axes and device_ids) into the first.

Modules stitched together, or imported from GSPMD, often repeat a mesh under several names; Shardy treats
different symbols as different meshes, so merging them lets propagation see one mesh.
"""

from __future__ import annotations

import dataclasses

from jaxlib.mlir import ir

from shardkit.dialects import irx
from shardkit.passes.base import Pass


@dataclasses.dataclass(frozen=True)
class DedupMeshes(Pass):
    """Merges sdy.mesh symbols with identical axes and device_ids into the first one."""

    name = "dedup-meshes"

    def apply(self, module: ir.Module) -> None:
        first: dict[object, str] = {}
        with module.context:
            for op in list(irx.mesh_ops(module)):
                name, mesh = irx.symbol_name(op), irx.mesh_of(op)
                if mesh in first:
                    ir.SymbolTable.replace_all_symbol_uses(name, first[mesh], module.operation)
                    irx.erase(op)
                else:
                    first[mesh] = name
