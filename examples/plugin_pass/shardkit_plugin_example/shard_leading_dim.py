"""shard-leading-dim: shards dimension 0 of every unsharded function argument over one mesh axis."""

import dataclasses

from jaxlib.mlir import ir

from shardkit.dialects import irx, sdy as sdy_forms
from shardkit.passes import Pass


@dataclasses.dataclass(frozen=True)
class ShardLeadingDim(Pass):
    """Shards every unsharded argument's leading dimension over one mesh axis."""

    name = "shard-leading-dim"
    axis: str = "x"
    mesh: str = "mesh"

    def apply(self, module: ir.Module) -> None:
        meshes = irx.meshes(module)
        if self.axis not in dict(meshes[self.mesh].axes if self.mesh in meshes else ()):
            self.emit_error(module.operation, f'has no mesh @{self.mesh} with axis "{self.axis}"')
            return

        def leading(rank: int) -> ir.Attribute:
            return sdy_forms.SdyTensorSharding(
                self.mesh, [sdy_forms.SdyDim((self.axis,))] + [sdy_forms.SdyDim()] * (rank - 1)
            ).build()

        with module.context:
            irx.set_shardings(
                (site, {irx.SDY_SHARDING: leading(irx.rank(site.type))})
                for site in irx.walk_shardings(module)
                if site.kind == "arg" and not site.shardings and irx.rank(site.type) > 0
            )
