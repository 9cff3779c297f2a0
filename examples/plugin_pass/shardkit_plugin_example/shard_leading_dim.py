"""shard-leading-dim: shards dimension 0 of every unsharded function argument over one mesh axis."""

import dataclasses

from jaxlib.mlir import ir

from shardkit.dialects import sdy
from shardkit.passes import Pass, rewriter


@dataclasses.dataclass(frozen=True)
class ShardLeadingDim(Pass):
    """Shards every unsharded argument's leading dimension over one mesh axis."""

    name = "shard-leading-dim"
    axis: str = "x"
    mesh: str = "mesh"

    def apply(self, module: ir.Module) -> None:
        meshes = rewriter.meshes(module)
        if self.axis not in dict(meshes[self.mesh].axes if self.mesh in meshes else ()):
            self.emit_error(module.operation, f'has no mesh @{self.mesh} with axis "{self.axis}"')
            return
        with module.context:
            for func in rewriter.ops(module, "func.func"):
                args = rewriter.value_attrs(func, "arg")
                for attrs, type_ in zip(args, rewriter.value_types(func, "arg")):
                    if "sdy.sharding" not in attrs and rewriter.rank(type_) > 0:
                        dims = [sdy.SdyDim((self.axis,))] + [sdy.SdyDim()] * (rewriter.rank(type_) - 1)
                        attrs["sdy.sharding"] = sdy.SdyTensorSharding(self.mesh, dims).build()
                rewriter.set_value_attrs(func, "arg", args)
