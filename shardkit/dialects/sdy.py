"""Shardy form: meshes as ``sdy.mesh`` and shardings as ``#sdy.sharding``, both directions.

Values are first built as small frozen dataclasses whose ``str()`` is the exact MLIR text jax 0.10 prints
(``#sdy.sharding<@mesh, [{"x"}, {}]>``), so they can be read and tested without an MLIR context; only
``.build()`` makes jaxlib MLIR attributes (with ``jaxlib.mlir.dialects.sdy``), and ``from_attr`` reads them
back. This module knows the Shardy form only: each sharding kind converts itself (``Sharding.to_sdy``), and
``SdyTensorSharding.to_hlo`` / ``hlo_to_sdy`` translate between this form and the GSPMD one.

Mesh order. A ``Mesh`` always prints in logical iota order, ``<["x"=4, "y"=2]>``, however its devices are
permuted: the physical order is the compile-time device assignment (the mesh's flat device list), which
is what lets meshes of equal shape lower to the same text. ``device_ids=[...]`` appears only when the
logical order itself is not iota, as for a mesh derived from an explicit HLO tile assignment.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit._jaxlib import HloSharding
from shardkit.dialects import mhlo
from shardkit.dialects.hlo_check import MAX_DEVICES

_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def symbol_ref(name: str) -> str:
    """``@name`` as MLIR prints a symbol reference: bare when ``name`` is an identifier, quoted and escaped otherwise.

    Examples:
        >>> print(symbol_ref("mesh_0"), symbol_ref("a b"), symbol_ref('mesh"'))
        @mesh_0 @"a b" @"mesh\\22"
    """
    return f"@{name}" if _BARE_ID.fullmatch(name) else f"@{_quote(name)}"


def _quote(name: str) -> str:
    """``name`` as MLIR prints a string (``llvm::printEscapedString``): printable ASCII as is, a backslash
    doubled, every other byte of its UTF-8 (a quote, a tab, ``é``) as ``\\XX``."""
    if name.isascii() and name.isprintable() and '"' not in name and "\\" not in name:
        return f'"{name}"'
    out = []
    for byte in name.encode():
        if byte == 0x5C:
            out.append("\\\\")
        elif 0x20 <= byte < 0x7F and byte != 0x22:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


def _utf8(read: Callable[[], str]) -> str:
    """A name read from an attribute: MLIR strings are bytes (``"\\FF"`` parses), and the bindings raise a bare
    RuntimeError for bytes that are not UTF-8."""
    try:
        return read()
    except RuntimeError:
        raise ValueError("an axis or mesh name in the attribute is not valid UTF-8") from None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True, slots=True)
class SdyMesh:
    """``<["x"=4, "y"=2]>``; ``device_ids`` only when the logical device order is not iota."""

    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        """Shardy's rules for a mesh attribute (its parser enforces them; ``MeshAttr.get`` does not)."""
        if not isinstance(self.axes, (tuple, list)):
            raise TypeError(f"SdyMesh axes must be (name, size) pairs, got {self.axes!r}.")
        axes = tuple(a if type(a) is tuple else tuple(a) if isinstance(a, list) else a for a in self.axes)
        seen: set[str] = set()
        size = 1
        for axis in axes:
            if type(axis) is not tuple or len(axis) != 2 or not isinstance(axis[0], str) or not _is_int(axis[1]):
                raise TypeError(f"SdyMesh axes are (str, int) pairs, got {axis!r} in {self.axes!r}.")
            name, n = axis
            if n < 1:
                raise ValueError(f"sdy mesh axis {_quote(name)} must have a size of at least 1, got {n}.")
            if name in seen:
                raise ValueError(f"sdy mesh axis names must be unique, but {name!r} repeats in {axes!r}.")
            seen.add(name)
            size *= n
        if size > MAX_DEVICES:
            raise ValueError(f"sdy mesh {axes!r} has {size} positions; at most {MAX_DEVICES} are supported.")
        object.__setattr__(self, "axes", axes)
        ids = self.device_ids
        if ids is not None:
            if not isinstance(ids, (tuple, list)) or not all(_is_int(i) for i in ids):
                raise TypeError(f"SdyMesh device_ids must be a sequence of ints or None, got {ids!r}.")
            ids = tuple(ids)
            if not axes:
                if len(ids) > 1 or any(i < 0 or i >= MAX_DEVICES for i in ids):
                    raise ValueError(f"a mesh without axes takes one device id in 0..{MAX_DEVICES - 1}, got {ids}.")
            elif sorted(ids) != list(range(size)):
                raise ValueError(
                    f"sdy mesh {SdyMesh(axes).body} has {size} positions, so its device_ids must list each of "
                    f"0..{size - 1} once, got {list(ids)}."
                )
            object.__setattr__(
                self, "device_ids", None if not ids or (axes and list(ids) == list(range(size))) else ids
            )

    @property
    def body(self) -> str:
        axes = ", ".join(f"{_quote(n)}={s}" for n, s in self.axes)
        ids = "" if self.device_ids is None else f", device_ids=[{', '.join(map(str, self.device_ids))}]"
        return f"<[{axes}]{ids}>"

    def __str__(self) -> str:
        return f"#sdy.mesh{self.body}"

    @property
    def size(self) -> int:
        return math.prod(s for _, s in self.axes)

    @property
    def is_maximal(self) -> bool:
        return not self.axes and self.device_ids is not None

    def default_name(self) -> str:
        """The symbol name jax gives such a mesh: ``mesh``, ``empty_mesh`` or ``maximal_mesh_<id>``."""
        if self.is_maximal:
            return f"maximal_mesh_{self.device_ids[0]}"
        return "mesh" if self.axes else "empty_mesh"

    def build(self) -> sdy.MeshAttr:
        ids = [] if self.device_ids is None else list(self.device_ids)
        return sdy.MeshAttr.get([sdy.MeshAxisAttr.get(n, s) for n, s in self.axes], ids)

    @classmethod
    def from_attr(cls, attr: ir.Attribute) -> SdyMesh:
        mesh = sdy.MeshAttr(attr)
        axes = tuple((_utf8(lambda a=a: a.name), a.size) for a in map(sdy.MeshAxisAttr, mesh.axes))
        ids = tuple(mesh.device_ids)
        return cls(axes, ids or None)


@dataclasses.dataclass(frozen=True, slots=True)
class SdyAxisRef:
    """An axis, or the sub-axis ``"x":(pre_size)size`` of it."""

    name: str
    sub: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"SdyAxisRef name must be a str, got {self.name!r}.")
        if self.sub is not None:
            if not isinstance(self.sub, (tuple, list)) or len(self.sub) != 2 or not all(map(_is_int, self.sub)):
                raise TypeError(f"SdyAxisRef sub must be None or (pre_size, size) ints, got {self.sub!r}.")
            object.__setattr__(self, "sub", tuple(self.sub))

    def __str__(self) -> str:
        return _quote(self.name) + ("" if self.sub is None else f":({self.sub[0]}){self.sub[1]}")

    def check(self) -> None:
        """Shardy's rules for a sub-axis that need no mesh: pre-size at least 1, size greater than 1."""
        if self.sub is not None and (self.sub[0] < 1 or self.sub[1] <= 1 or self.sub[0] * self.sub[1] > MAX_DEVICES):
            raise ValueError(
                f"sub-axis {self} needs a pre-size of at least 1 and a size greater than 1 (product at most "
                f"{MAX_DEVICES})."
            )

    def build(self) -> sdy.AxisRefAttr:
        self.check()
        if self.sub is None:
            return sdy.AxisRefAttr.get(self.name)
        return sdy.AxisRefAttr.get(self.name, sdy.SubAxisInfoAttr.get(*self.sub))

    @classmethod
    def from_attr(cls, attr: ir.Attribute) -> SdyAxisRef:
        ref = sdy.AxisRefAttr(attr)
        if ref.sub_axis_info is None:
            return cls(_utf8(lambda: ref.name))
        info = sdy.SubAxisInfoAttr(ref.sub_axis_info)
        return cls(_utf8(lambda: ref.name), (info.pre_size, info.size))


def _axis_refs(names: Sequence[str | SdyAxisRef]) -> tuple[SdyAxisRef, ...]:
    if isinstance(names, str) or not isinstance(names, (tuple, list)):
        raise TypeError(f"Axes are a sequence of axis names or SdyAxisRefs, got {names!r}.")
    return tuple(n if isinstance(n, SdyAxisRef) else SdyAxisRef(n) for n in names)


@dataclasses.dataclass(frozen=True, slots=True)
class SdyDim:
    """One dimension: ``{"x", "y"}`` (closed), ``{"x", ?}`` / ``{?}`` (open), with an optional priority."""

    axes: tuple[SdyAxisRef, ...] = ()
    is_open: bool = False
    priority: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "axes", _axis_refs(self.axes))
        if not isinstance(self.is_open, bool):
            raise TypeError(f"SdyDim is_open must be a bool, got {self.is_open!r}.")
        if self.priority is not None and (not _is_int(self.priority) or not 0 <= self.priority < 2**63):
            raise ValueError(f"SdyDim priority must be None or an int in 0..2**63-1, got {self.priority!r}.")

    def __str__(self) -> str:
        parts = [str(a) for a in self.axes] + (["?"] if self.is_open else [])
        prio = "" if self.priority is None else f"p{self.priority}"
        return "{" + ", ".join(parts) + "}" + prio

    def build(self) -> sdy.DimensionShardingAttr:
        return sdy.DimensionShardingAttr.get(
            [a.build() for a in self.axes], is_closed=not self.is_open, priority=self.priority
        )

    @classmethod
    def from_attr(cls, attr: ir.Attribute) -> SdyDim:
        dim = sdy.DimensionShardingAttr(attr)
        return cls(tuple(map(SdyAxisRef.from_attr, dim.axes)), not dim.is_closed, dim.priority)


MeshRef = str | SdyMesh


@dataclasses.dataclass(frozen=True, slots=True)
class SdyTensorSharding:
    """``#sdy.sharding<@mesh, [{"x"}, {}], replicated={"y"}>``; ``mesh`` is a symbol name or an inlined SdyMesh."""

    mesh: MeshRef
    dims: tuple[SdyDim, ...]
    replicated: tuple[SdyAxisRef, ...] = ()
    unreduced: tuple[SdyAxisRef, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.mesh, str):
            if not self.mesh:
                raise ValueError("SdyTensorSharding's mesh symbol name must not be empty.")
        elif not isinstance(self.mesh, SdyMesh):
            raise TypeError(f"SdyTensorSharding's mesh must be a symbol name or an SdyMesh, got {self.mesh!r}.")
        if not isinstance(self.dims, (tuple, list)) or not all(isinstance(d, SdyDim) for d in self.dims):
            raise TypeError(f"SdyTensorSharding dims must be a sequence of SdyDim, got {self.dims!r}.")
        object.__setattr__(self, "dims", tuple(self.dims))
        object.__setattr__(self, "replicated", _axis_refs(self.replicated))
        object.__setattr__(self, "unreduced", _axis_refs(self.unreduced))

    @property
    def axis_refs(self) -> tuple[SdyAxisRef, ...]:
        """Every axis the sharding uses: its dimensions', then the replicated and unreduced ones."""
        return tuple(a for d in self.dims for a in d.axes) + self.replicated + self.unreduced

    def check(self, mesh: SdyMesh | None = None) -> None:
        """Shardy's verifier rules, raising ValueError: each axis used once, no sub-axis overlapping another
        or its full axis; with ``mesh`` (the one it names) also that each axis is in it and each sub-axis
        divides its axis. (jaxlib builds attributes that break them without complaint, and Shardy's passes
        assume them.)"""
        seen: dict[str, list[SdyAxisRef]] = {}
        for ref in self.axis_refs:
            ref.check()
            for other in seen.get(ref.name, ()):
                if other.sub is None or ref.sub is None or _overlap(other.sub, ref.sub):
                    raise ValueError(f"{self} uses axis {_quote(ref.name)} twice ({other} and {ref}).")
            seen.setdefault(ref.name, []).append(ref)
        if mesh is None or mesh.is_maximal:
            return
        sizes = dict(mesh.axes)
        for ref in self.axis_refs:
            if ref.name not in sizes:
                raise ValueError(f"{self} names axis {_quote(ref.name)}, which mesh {mesh.body} does not have.")
            if ref.sub is not None and (sizes[ref.name] % (ref.sub[0] * ref.sub[1]) or ref.sub[1] == sizes[ref.name]):
                raise ValueError(
                    f"sub-axis {ref} of {self} does not split axis {_quote(ref.name)} of size {sizes[ref.name]}: its "
                    "pre-size times size must divide the axis size, and its size must be smaller."
                )

    @property
    def open_dims(self) -> tuple[int, ...]:
        """The dimensions left to the compiler (``{?}`` or ``{"x", ?}``)."""
        return tuple(i for i, d in enumerate(self.dims) if d.is_open)

    @property
    def body(self) -> str:
        """The text inside ``#sdy.sharding``, as ops such as ``sdy.sharding_constraint`` print it."""
        mesh = symbol_ref(self.mesh) if isinstance(self.mesh, str) else f"mesh{self.mesh.body}"
        text = f"<{mesh}, [{', '.join(map(str, self.dims))}]"
        for key, axes in (("replicated", self.replicated), ("unreduced", self.unreduced)):
            if axes:
                text += f", {key}={{{', '.join(map(str, axes))}}}"
        return text + ">"

    def __str__(self) -> str:
        return f"#sdy.sharding{self.body}"

    def build(self) -> sdy.TensorShardingAttr:
        self.check(None if isinstance(self.mesh, str) else self.mesh)
        mesh = self.mesh if isinstance(self.mesh, str) else self.mesh.build()
        return sdy.TensorShardingAttr.get(
            mesh,
            [d.build() for d in self.dims],
            replicated_axes=[a.build() for a in self.replicated],
            unreduced_axes=[a.build() for a in self.unreduced],
        )

    @classmethod
    def from_attr(cls, attr: ir.Attribute) -> SdyTensorSharding:
        t = sdy.TensorShardingAttr(attr)
        ref = t.mesh_or_ref
        mesh: MeshRef = _utf8(lambda: ref.value) if isinstance(ref, ir.FlatSymbolRefAttr) else SdyMesh.from_attr(ref)
        return cls(
            mesh,
            tuple(map(SdyDim.from_attr, t.dimension_shardings)),
            tuple(map(SdyAxisRef.from_attr, t.replicated_axes)),
            tuple(map(SdyAxisRef.from_attr, t.unreduced_axes)),
        )

    def to_hlo(self, mesh: SdyMesh) -> HloSharding:
        """The GSPMD form of this sharding on ``mesh`` (the mesh it names), positions numbering the devices as
        ``mesh.device_ids`` orders them. Open dimensions and priorities do not matter to GSPMD.

        Raises ValueError for what GSPMD cannot say here: sub-axes, unreduced axes, axes not in the mesh.

        Examples:
            >>> SdyTensorSharding("mesh", (SdyDim(("y",)), SdyDim())).to_hlo(SdyMesh((("x", 4), ("y", 2))))
            {devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}
        """
        if mesh.is_maximal:
            return mhlo.parse(f"{{maximal device={mesh.device_ids[0]}}}")
        names = dict(mesh.axes)
        for i, dim in enumerate(self.dims):
            for axis in dim.axes:
                if axis.sub is not None:
                    raise ValueError(
                        f"dimension {i} is sharded over the sub-axis {axis}, which GSPMD export does not split"
                    )
                if axis.name not in names:
                    raise ValueError(
                        f"dimension {i} names axis {_quote(axis.name)}, which mesh {mesh.body} does not have"
                    )
        self.check(mesh)
        if self.unreduced:
            raise ValueError(f"unreduced axes {{{', '.join(map(str, self.unreduced))}}} have no GSPMD form here")
        hlo = mhlo.tile(mesh.axes, [[a.name for a in dim.axes] for dim in self.dims])
        return hlo if mesh.device_ids is None else mhlo.permuted(hlo, mesh.device_ids)

    @classmethod
    def parse(cls, text: str, context: ir.Context) -> SdyTensorSharding:
        """Reads ``#sdy.sharding<...>`` text: MLIR's parser reports malformed text (``ir.MLIRError``, located),
        ValueError text that is empty or another attribute.

        Examples:
            >>> SdyTensorSharding.parse('#sdy.sharding<@mesh, [{"x"}, {}]>', context()).dims[0]
            SdyDim(axes=(SdyAxisRef(name='x', sub=None),), is_open=False, priority=None)
        """
        if not isinstance(text, str):
            raise TypeError(f"SdyTensorSharding.parse takes text, got {text!r}.")
        if not isinstance(context, ir.Context):
            raise TypeError(f"SdyTensorSharding.parse needs an MLIR context (ir.Context), got {context!r}.")
        if not text.strip():  # MLIR's parser returns a null attribute for no text, and using it segfaults
            raise ValueError("SdyTensorSharding.parse got no text; expected '#sdy.sharding<@mesh, [...]>'.")
        with context:
            attr = ir.Attribute.parse(text)
            if not sdy.TensorShardingAttr.isinstance(attr):
                raise ValueError(f"Expected an #sdy.sharding attribute, got {attr}.")
            return cls.from_attr(attr)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two sub-axes ``(pre_size, size)`` of one axis share a factor: [pre, pre*size) ranges intersect."""
    return a[0] < b[0] * b[1] and b[0] < a[0] * a[1]


# -- the GSPMD form -> this one ------------------------------------------------------------------------------


def hlo_to_sdy(hlo: HloSharding, ndim: int, mesh_name: str | None = None) -> tuple[SdyMesh, SdyTensorSharding]:
    """A mesh and sharding equivalent to an HloSharding whose positions are the device assignment.

    One mesh axis per tiled dimension (``_axis_<dim>``) and one for the copies (``_replicas``); the mesh's
    logical order is the tile assignment itself, so ``device_ids`` is printed only when it is not iota. A
    maximal sharding gets ``<[], device_ids=[k]>`` with a rank-0 sharding (Shardy requires that).
    ``mesh_name`` defaults to the name jax would give the mesh. ValueError for what has no such form: a tuple
    sharding (``mhlo.TupleShardingError``: convert its elements), manual, unknown and unreduced shardings.

    Examples:
        >>> mesh, tensor = hlo_to_sdy(mhlo.parse("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"), 2)
        >>> print(mesh.body, tensor)
        <["_axis_0"=2, "_replicas"=4], device_ids=[0, 2, 4, 6, 1, 3, 5, 7]> #sdy.sharding<@mesh, [{"_axis_0"}, {}]>
    """
    hlo = mhlo.one_value(hlo, "hlo_to_sdy")
    if hlo.is_maximal() and not hlo.is_replicated():
        mesh = SdyMesh((), tuple(hlo.tile_assignment_devices()))
        return mesh, SdyTensorSharding(mesh_name or mesh.default_name(), ())
    tiling = mhlo.tiling(hlo, ndim)
    if tiling is None:
        mesh = SdyMesh(())
        return mesh, SdyTensorSharding(mesh_name or mesh.default_name(), (SdyDim(),) * ndim)
    parts, copies = tiling
    axes = [(f"_axis_{d}", p) for d, p in enumerate(parts) if p > 1]
    if copies > 1:
        axes.append(("_replicas", copies))
    mesh = SdyMesh(tuple(axes), tuple(hlo.tile_assignment_devices()))
    dims = tuple(SdyDim((f"_axis_{d}",) if p > 1 else ()) for d, p in enumerate(parts))
    return mesh, SdyTensorSharding(mesh_name or mesh.default_name(), dims)
