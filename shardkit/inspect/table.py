"""The per-value sharding table: one row per value of a Shardy-form module, with its sharding and source line.

After propagation every value Shardy shards carries ``sdy.sharding``; a value without the attribute is
replicated, which the text leaves implicit and the table says. Each sharding is given as Shardy wrote it, as
a shardkit ``NamedSharding`` on the module's mesh and as a ``PartitionSpec`` (where a PartitionSpec can say
it: sub-axes, priorities and unreduced axes cannot).

Values listed: function arguments, and the results of ops in function bodies and in the bodies of
control flow (``while``, ``case``, ``sdy.manual_computation``, ...); the scalar bodies of reductions, sorts
and scatters are left out.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import copy_module, dtypes, irx, sdy as sdy_forms
from shardkit.inspect import hlo, locations, notebook
from shardkit.inspect.communication import aligned
from shardkit.mesh import AbstractMesh
from shardkit.partition_spec import PartitionSpec
from shardkit.passes import run_pipeline
from shardkit.sharding import NamedSharding

_BODIES = {
    "func.func",
    "stablehlo.while",
    "stablehlo.case",
    "stablehlo.if",
    "sdy.manual_computation",
    "sdy.named_computation",
}
_SKIP = {"func.return", "stablehlo.return", "sdy.return", "sdy.mesh"}


@dataclasses.dataclass(frozen=True)
class ValueSharding:
    """One value: where it is defined, its type, its sharding and the Python line it came from.

    Attributes:
        op: the defining op (``stablehlo.dot_general``), or ``@main`` for an argument of ``main``.
        index: result (or argument) number.
        shape, dtype: the global type.
        sdy: the ``#sdy.sharding<...>`` text, or ``""`` when the value has no sharding attribute.
        sharding: a NamedSharding on the module's mesh (``P()`` for a replicated value); None where a
            PartitionSpec cannot express it (``sdy`` says it all).
        replicated: no mesh axis shards the value (with or without an attribute).
        op_name, source: the jax op and ``file:line`` from the op's location.
        pieces: how many pieces each dimension is split into (sub-axes included); None where the mesh is unknown.
    """

    op: str
    index: int
    shape: tuple[int, ...]
    dtype: str
    sdy: str
    sharding: NamedSharding | None
    replicated: bool
    op_name: str = ""
    source: str | None = None
    pieces: tuple[int, ...] | None = None

    @property
    def spec(self) -> PartitionSpec | None:
        return None if self.sharding is None else self.sharding.spec

    @property
    def line(self) -> int | None:
        return None if self.source is None else int(self.source.rsplit(":", 1)[1])

    @property
    def shard_shape(self) -> tuple[int, ...] | None:
        """The piece one device holds: each dimension split into its ``pieces``, rounded up as XLA pads an uneven
        dimension (None where the mesh is unknown)."""
        if self.pieces is None:
            return None
        return tuple(-(-dim // n) for dim, n in zip(self.shape, self.pieces))

    @property
    def array(self) -> hlo.ArrayShape:
        """The per-device array as XLA's reports write it (``f32[16,8]``; the global shape where the mesh is
        unknown)."""
        element = dtypes.BY_MLIR.get(self.dtype) or dtypes.BY_HLO.get(self.dtype)  # the table says i1 as pred
        dtype = self.dtype if element is None else element.hlo
        return hlo.ArrayShape(dtype, self.shape if self.shard_shape is None else self.shard_shape)

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "index": self.index,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "sdy": self.sdy,
            "spec": None if self.spec is None else [_entry(e) for e in self.spec],
            "replicated": self.replicated,
            "op_name": self.op_name,
            "source": self.source,
            "shard_shape": None if self.shard_shape is None else list(self.shard_shape),
            "bytes_per_device": nbytes(self.array),
        }


def nbytes(array: hlo.ArrayShape) -> int | None:
    """Bytes of ``array``, None for an element type XLA's reports do not size (a token, a tuple)."""
    try:
        return array.nbytes
    except ValueError:
        return None


def _entry(e: Any) -> Any:
    return list(e) if isinstance(e, tuple) else e


@dataclasses.dataclass(frozen=True)
class ShardingTable:
    """Every value's sharding; filter by source or op, print as a table, or dump as JSON.

    Examples:
        >>> mesh = sk.make_mesh((4, 2), ("x", "y"))
        >>> x = sk.ShapeDtypeStruct((16, 8), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
        >>> table = sk.jit(lambda a: jnp.tanh(a) * 2).lower(x).run_passes("propagate").shardings()
        >>> [str(r.spec) for r in table.filter(op="tanh")]
        ["P('x', 'y')"]
    """

    rows: tuple[ValueSharding, ...]

    def __iter__(self) -> Iterator[ValueSharding]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def filter(
        self, *, file: str | None = None, lines: tuple[int, int] | None = None, op: str | None = None
    ) -> ShardingTable:
        """The rows whose source file ends with ``file``, whose line is in ``lines`` (inclusive) and whose op
        or jax op name contains ``op``."""

        def keep(r: ValueSharding) -> bool:
            if file is not None and (r.source is None or not r.source.rsplit(":", 1)[0].endswith(file)):
                return False
            if lines is not None and (r.line is None or not lines[0] <= r.line <= lines[1]):
                return False
            return op is None or op in r.op or op in r.op_name

        return ShardingTable(tuple(r for r in self.rows if keep(r)))

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps([r.to_dict() for r in self.rows], indent=indent)

    _repr_html_ = notebook.text

    def __str__(self) -> str:
        rows = []
        for r in self.rows:
            spec = str(r.spec) if r.spec is not None else r.sdy or str(PartitionSpec())
            note = "" if not r.replicated else "replicated" if r.sdy else "replicated (no attribute)"
            rows.append(
                [
                    r.op,
                    str(r.index),
                    f"{r.dtype}[{','.join(map(str, r.shape))}]",
                    spec,
                    note,
                    r.op_name,
                    locations.short(r.source),
                ]
            )
        header = ["op", "#", "type", "sharding", "", "jax op", "source"]
        return "\n".join(aligned(header, rows, indent="")) + "\n"


def sharding_table(module: ir.Module, mesh: Any = None) -> ShardingTable:
    """The table of a Shardy-form module (usually after ``propagate``).

    Args:
        module: the module; not changed.
        mesh: the shardkit Mesh or AbstractMesh whose axes the module's ``sdy.mesh`` names; default: an
            AbstractMesh built from the ``sdy.mesh`` itself.

    Raises:
        ValueError: when the module is in the GSPMD form (run ``import-gspmd`` first).
    """
    if not irx.uses_shardy(module):
        raise ValueError(
            "the module is in the GSPMD form (mhlo.sharding); the sharding table reads Shardy's "
            "sdy.sharding: run the passes 'import-gspmd,propagate' first."
        )
    meshes = irx.meshes(module)
    rows: list[ValueSharding] = []
    for func in irx.ops(module, "func.func"):
        name = sdy_forms.symbol_ref(ir.StringAttr(func.attributes["sym_name"]).value)
        args = func.regions[0].blocks[0].arguments
        for i, attrs in enumerate(irx.value_attrs(func, "arg")):
            rows.append(_row(name, i, args[i].type, attrs.get(irx.SDY_SHARDING), meshes, mesh, args[i].location))
        _body_rows(func, meshes, mesh, rows)
    return ShardingTable(tuple(rows))


def propagated_table(module: ir.Module, mesh: Any = None) -> ShardingTable:
    """The table of ``module`` (not changed) after Shardy's propagation: every value's sharding as Shardy
    completes it (a GSPMD-form module is imported first)."""
    module = copy_module(module)
    if not irx.uses_shardy(module):
        run_pipeline(module, "import-gspmd")
    run_pipeline(module, "propagate")
    return sharding_table(module, mesh)


def _body_rows(parent: ir.Operation, meshes: dict, mesh: Any, rows: list[ValueSharding]) -> None:
    for region in parent.regions:
        for block in region.blocks:
            for op in block.operations:
                op = op.operation
                if op.name in _SKIP or not op.results and op.name not in _BODIES:
                    continue
                rows += op_rows(op, meshes, mesh)
                if op.name in _BODIES:
                    _body_rows(op, meshes, mesh, rows)


def op_rows(op: ir.Operation, meshes: dict, mesh: Any = None) -> list[ValueSharding]:
    """One row per result of ``op`` (``meshes``: the module's, ``irx.meshes(module)``)."""
    shardings = _result_shardings(op)
    return [
        _row(op.name, i, result.type, shardings[i] if shardings else None, meshes, mesh, op.location)
        for i, result in enumerate(op.results)
    ]


def _result_shardings(op: ir.Operation) -> list[ir.Attribute] | None:
    attrs = op.attributes
    if irx.SDY_SHARDING in attrs:
        return list(sdy.TensorShardingPerValueAttr(attrs[irx.SDY_SHARDING]).shardings)
    for key in ("out_sharding", "sharding"):  # sdy collectives, reshard; sharding_constraint
        if key in attrs:
            return [attrs[key]]
    if "out_shardings" in attrs:  # sdy.manual_computation
        return list(sdy.TensorShardingPerValueAttr(attrs["out_shardings"]).shardings)
    return None


def _row(
    op: str, index: int, type_: ir.Type, attr: ir.Attribute | None, meshes: dict, mesh: Any, location: ir.Location
) -> ValueSharding:
    shape = tuple(type_.shape) if isinstance(type_, ir.RankedTensorType) else ()
    dtype = str(type_.element_type) if isinstance(type_, ir.RankedTensorType) else str(type_)
    text, sharding, replicated, pieces = "", None, True, None
    if attr is not None:
        tensor = sdy_forms.SdyTensorSharding.from_attr(attr)
        text = str(tensor)
        replicated = not any(d.axes for d in tensor.dims)
        sdy_mesh = meshes.get(tensor.mesh) if isinstance(tensor.mesh, str) else tensor.mesh
        target = _mesh_for(sdy_mesh, mesh)
        if target is not None:
            try:
                sharding = NamedSharding.from_sdy(tensor, target)
            except ValueError:
                sharding = None
        if sdy_mesh is not None:
            sizes = dict(sdy_mesh.axes)
            pieces = tuple(math.prod(r.sub[1] if r.sub else sizes.get(r.name, 1) for r in d.axes) for d in tensor.dims)
    else:
        named = next(iter(meshes.values()), None)
        target = _mesh_for(named, mesh) if named is not None else mesh
        sharding = NamedSharding(target, PartitionSpec()) if target is not None else None
        pieces = (1,) * len(shape)
    return ValueSharding(
        op,
        index,
        shape,
        _short_dtype(dtype),
        text,
        sharding,
        replicated,
        locations.op_name(location),
        locations.source(location),
        pieces,
    )


def _mesh_for(sdy_mesh: sdy_forms.SdyMesh | None, mesh: Any) -> Any:
    """The user's mesh when it is the one ``sdy_mesh`` describes, else an AbstractMesh of it (None: maximal)."""
    if sdy_mesh is None or sdy_mesh.is_maximal:
        return None
    if mesh is not None and tuple(mesh.shape_tuple) == tuple(sdy_mesh.axes) and sdy_mesh.device_ids is None:
        return mesh
    if sdy_mesh.device_ids is not None:
        return None
    return AbstractMesh.from_sdy(sdy_mesh)


def _short_dtype(element: str) -> str:
    return re.sub(r"^i1$", "pred", element)
