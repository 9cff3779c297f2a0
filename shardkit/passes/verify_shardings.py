"""verify-shardings: checks every sharding against its mesh, its value and the module, before XLA does.

For each ``sdy.sharding`` (function arguments/results, constraints, reshards, per-op shardings): the mesh
exists, every axis exists in it, no axis is used twice in one tensor, the rank matches, and each dimension
divides evenly by the axes sharding it. For each ``mhlo.sharding``: it parses, tiles as many dimensions as
the value has, divides them evenly and names only devices below ``mhlo.num_partitions``. Each mesh must
have ``mhlo.num_partitions`` devices, and no value may carry both forms. A tuple sharding is checked element by
element where it is one per result of an op; on one value that is not a tuple it is a finding. Replicated,
manual, unknown and unreduced shardings cut nothing and name no device. Every finding is one diagnostic
located at the op (``'func.func' op arg 0 - ...``, as Shardy's verifier words them); the IR is unchanged.
"""

from __future__ import annotations

import dataclasses
import math

from jaxlib.mlir import ir

from shardkit.dialects import diagnostics, irx, mhlo, sdy as sdy_forms
from shardkit.passes.base import Pass


@dataclasses.dataclass(frozen=True)
class VerifyShardings(Pass):
    """Checks mesh axes, axis reuse, divisibility and num_partitions of every sharding; reports each at its op."""

    name = "verify-shardings"

    def apply(self, module: ir.Module) -> None:
        partitions = irx.module_int(module, irx.NUM_PARTITIONS)
        meshes = {}
        for op in irx.mesh_ops(module):
            try:
                meshes[irx.symbol_name(op)] = mesh = irx.mesh_of(op)
            except ValueError as e:  # a mesh MLIR accepts but shardkit cannot enumerate (too many devices)
                self.emit_error(op, diagnostics.clause(e))
                continue
            self._check_mesh(op, mesh, partitions)
        for site in irx.walk_shardings(module):
            found = site.shardings
            if irx.SDY_SHARDING in found and irx.MHLO_SHARDING in found:
                self.emit_error(site.op, f"{site.label} - has both sdy.sharding and mhlo.sharding")
            if irx.SDY_SHARDING in found:
                tensor = sdy_forms.SdyTensorSharding.from_attr(found[irx.SDY_SHARDING])
                self._check_sdy(site, tensor, meshes, partitions)
            if irx.MHLO_SHARDING in found:
                self._check_hlo(site, found[irx.MHLO_SHARDING], partitions)

    def _check_mesh(
        self, where: ir.Operation, mesh: sdy_forms.SdyMesh, partitions: int | None, label: str = ""
    ) -> None:
        if partitions is None or not (mesh.axes or mesh.is_maximal):
            return
        if mesh.is_maximal and mesh.device_ids[0] >= partitions:
            self.emit_error(
                where,
                f"{label}maximal mesh device {mesh.device_ids[0]} is not below mhlo.num_partitions = {partitions}",
            )
        elif not mesh.is_maximal and mesh.size != partitions:
            self.emit_error(
                where, f"{label}mesh {mesh.body} has {mesh.size} devices, but mhlo.num_partitions is {partitions}"
            )

    def _check_sdy(
        self,
        site: irx.Site,
        tensor: sdy_forms.SdyTensorSharding,
        meshes: dict[str, sdy_forms.SdyMesh],
        partitions: int | None,
    ) -> None:
        where, label = site.op, site.label
        if isinstance(tensor.mesh, sdy_forms.SdyMesh):
            mesh = tensor.mesh
            self._check_mesh(where, mesh, partitions, f"{label} - ")
        elif tensor.mesh in meshes:
            mesh = meshes[tensor.mesh]
        else:
            self.emit_error(where, f"{label} - unknown mesh: {sdy_forms.symbol_ref(tensor.mesh)}")
            return
        if mesh.is_maximal:
            return
        sizes = dict(mesh.axes)
        refs = [a for d in tensor.dims for a in d.axes] + list(tensor.replicated) + list(tensor.unreduced)
        for ref in refs:
            if ref.name not in sizes:
                self.emit_error(where, f'{label} - unknown axis name: "{ref.name}" (mesh {mesh.body})')
        seen = [str(r) for r in refs]
        for ref in sorted({r for r in seen if seen.count(r) > 1}):
            self.emit_error(where, f"{label} - axis {ref} is used more than once in {tensor}")
        shape = irx.shape(site.type)
        if len(tensor.dims) != len(shape):
            self.emit_error(
                where,
                f"{label} - sharding {tensor} has {len(tensor.dims)} dimensions, but the value has rank {len(shape)}",
            )
            return
        for dim, (size, d) in enumerate(zip(shape, tensor.dims)):
            parts = math.prod(a.sub[1] if a.sub else sizes.get(a.name, 1) for a in d.axes)
            if size >= 0 and size % parts:
                self.emit_error(
                    where, f"{label} - dim {dim} of size {size} is not divisible by {parts}, the size of axes {d}"
                )

    def _check_hlo(self, site: irx.Site, attr: ir.Attribute, partitions: int | None) -> None:
        where, label = site.op, site.label
        try:
            hlo = mhlo.read(attr)
        except mhlo.HloParseError as e:
            self.emit_error(where, f"{label} - invalid mhlo.sharding {e.text!r}: {e.reason}")
            return
        if hlo is None:  # the empty string: no sharding
            return
        raw = ir.StringAttr(attr).value_bytes
        text = raw.decode() if raw.lstrip().startswith(b"{") else repr(hlo)  # a proto's is its text form
        if hlo.tuple_elements():  # one per result of a multi-result op was split off (irx.walk_shardings)
            n, results = len(hlo.tuple_elements()), len(where.results) if site.kind == "op" else 1
            elements = f"a tuple sharding of {n} element{'' if n == 1 else 's'}"
            if results > 1 and site.index == 0:  # the op's sharding, kept whole for each result: said once
                self.emit_error(where, f"mhlo.sharding {text} is {elements} for the op's {results} results")
            elif results == 1 and not isinstance(site.type, ir.TupleType):
                self.emit_error(
                    where,
                    f"{label} - mhlo.sharding {text} is {elements} for one value of type {site.type} (XLA takes "
                    "a tuple sharding for a tuple, or one element per result of an op)",
                )
            return
        # Replicated, manual (shard_map bodies), unknown (left to the compiler) and unreduced (every device holds
        # a partial sum of the whole value) shardings cut no dimension and name no device.
        if hlo.is_replicated() or hlo.is_manual() or hlo.is_unknown() or hlo.is_unreduced():
            return
        devices = hlo.tile_assignment_devices()  # each device once: mhlo.read refuses a repeat
        if partitions is not None:
            outside = sorted(d for d in devices if d >= partitions)
            if outside:
                self.emit_error(
                    where,
                    f"{label} - mhlo.sharding {text} names devices {outside}, not below "
                    f"mhlo.num_partitions = {partitions}",
                )
            elif not hlo.is_maximal() and len(devices) != partitions:
                self.emit_error(
                    where,
                    f"{label} - mhlo.sharding {text} spans {len(devices)} devices, but "
                    f"mhlo.num_partitions is {partitions}",
                )
        if hlo.is_maximal():
            return
        tiles = hlo.tile_assignment_dimensions()
        extra = 1 if hlo.replicate_on_last_tile_dim() else len(hlo.subgroup_types())
        tiles = tiles[: len(tiles) - extra]
        shape = irx.shape(site.type)
        if len(tiles) != len(shape):
            self.emit_error(
                where,
                f"{label} - mhlo.sharding {text} tiles {len(tiles)} dimensions, but the value has rank {len(shape)}",
            )
            return
        for dim, (size, parts) in enumerate(zip(shape, tiles)):
            if size >= 0 and size % parts:
                self.emit_error(
                    where,
                    f"{label} - dim {dim} of size {size} is not divisible by its {parts} tiles in mhlo.sharding {text}",
                )
