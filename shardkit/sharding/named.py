"""NamedSharding: a mesh plus a PartitionSpec, the kind jax programs use most.

Its canonical form is Shardy's: each dimension is cut over named mesh axes. ``to_sdy`` says that directly,
and ``to_hlo`` tiles the mesh's logical (iota) order over those axes, so a mesh over permuted devices gives
the same HLO text, its order belonging to the device assignment. ``from_sdy`` and ``from_hlo`` go back.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import jax

from shardkit._jaxlib import HloSharding
from shardkit.caching import memoize
from shardkit.dialects import mhlo
from shardkit.dialects.sdy import SdyDim, SdyMesh, SdyTensorSharding
from shardkit.mesh import AbstractMesh, AxisType, Mesh, mesh_from_jax
from shardkit.partition_spec import UNCONSTRAINED, PartitionSpec, as_spec, axes_of, check_entries, used_axes
from shardkit.sharding.base import Device, check_memory_kind, kind


class DuplicateSpecError(ValueError):
    """A mesh axis appears more than once in a PartitionSpec."""

    def __init__(self, message: str, *, axes: tuple[str, ...], spec: PartitionSpec):
        super().__init__(message)
        self.axes, self.spec = axes, spec


@memoize(maxsize=1024)
def _check_spec(mesh: Mesh | AbstractMesh, spec: PartitionSpec) -> None:
    check_entries(spec)
    used = used_axes(spec)
    for name in used:
        if name not in mesh.axis_names:
            raise ValueError(
                f"Resource axis: {name} of {spec} is not found in mesh: {mesh.axis_names}. "
                f"Use one of the mesh's axis names."
            )
    duplicates = tuple(sorted({n for n in used if used.count(n) > 1}))
    if duplicates:
        raise DuplicateSpecError(
            f"A mesh axis can shard at most one array dimension, but {spec} uses "
            f"{', '.join(repr(a) for a in duplicates)} more than once.",
            axes=duplicates,
            spec=spec,
        )
    if UNCONSTRAINED in spec and AxisType.Auto not in mesh.axis_types:
        raise ValueError(f"{spec} cannot use P.UNCONSTRAINED: no axis of the mesh is Auto ({mesh.axis_types}).")


@kind
class NamedSharding(jax.sharding.NamedSharding):
    """A mesh plus a PartitionSpec saying which mesh axes shard which array dimensions.

    It is a ``jax.sharding.NamedSharding`` (with shardkit's checks, index math, equality and pickling), so jax
    and the libraries on it take it wherever they take jax's: orbax's sharding metadata, ``jax.jit`` results
    over arrays shardkit placed (named on the same mesh and spec), ``jax.sharding.reshard``.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> s = NamedSharding(mesh, P("x", "y"))
        >>> s.shard_shape((8, 2))
        (2, 1)
    """

    def __init__(
        self,
        mesh: Mesh | AbstractMesh,
        spec: PartitionSpec | Sequence[Any] | None = None,
        *,
        memory_kind: str | None = None,
    ):
        if isinstance(mesh, (jax.sharding.Mesh, jax.sharding.AbstractMesh)):
            mesh = mesh_from_jax(mesh)
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(
                f"NamedSharding needs a Mesh or AbstractMesh (shardkit's or jax's), got {type(mesh).__name__}."
            )
        spec = PartitionSpec() if spec is None else as_spec(spec, "NamedSharding")
        if isinstance(mesh, Mesh) and mesh.empty:
            raise ValueError(f"NamedSharding needs a mesh with devices, got the empty mesh {mesh}.")
        _check_spec(mesh, spec)
        first = None if isinstance(mesh, AbstractMesh) else mesh.flat_devices[0]
        super().__init__(mesh, spec, memory_kind=check_memory_kind(memory_kind, first))

    def __repr__(self) -> str:
        mem = "" if self._memory_kind is None else f", memory_kind={self._memory_kind}"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec}{mem})"

    def _key(self) -> tuple[Any, ...]:
        return (self.mesh, self.spec, self._memory_kind)

    # -- devices ------------------------------------------------------------------------------------------

    @property
    def is_concrete(self) -> bool:
        return isinstance(self.mesh, Mesh)

    def _need_devices(self, what: str) -> None:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"{what} is not available for a NamedSharding over an AbstractMesh ({self.mesh}).")

    @property
    def device_assignment(self) -> tuple[Device, ...]:
        self._need_devices("The device assignment")
        return self.mesh.flat_devices

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    def bind(self, devices: Sequence[Device]) -> NamedSharding:
        """Over an AbstractMesh: the same spec over the Mesh that places ``devices`` in the mesh's shape."""
        if self.is_concrete:
            return self
        return NamedSharding(self.mesh.bind(devices), self.spec, memory_kind=self._memory_kind)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.axis_size(n) == 1 for n in used_axes(self.spec))

    def _tile_description(self, dim: int) -> str:
        axes = axes_of(self.spec, dim)
        sizes = "*".join(str(self.mesh.axis_size(a)) for a in axes)
        return f"mesh axes {axes} (sizes {sizes})"

    # -- conversions --------------------------------------------------------------------------------------

    def _check_rank(self, ndim: int) -> None:
        if len(self.spec) > ndim:
            hint = " For scalars the PartitionSpec should be P()." if ndim == 0 else ""
            raise ValueError(
                f"Sharding {self} is only valid for values of rank at least {len(self.spec)}, but was applied "
                f"to a value of rank {ndim}.{hint}"
            )

    @memoize()
    def to_hlo(self, ndim: int) -> HloSharding:
        self._check_rank(ndim)
        return mhlo.tile(self.mesh.shape_tuple, [axes_of(self.spec, d) for d in range(ndim)])

    def to_sdy(self, ndim: int) -> tuple[SdyMesh, SdyTensorSharding]:
        """The mesh in logical order and one dimension sharding per array dimension (``{?}`` where open)."""
        self._check_rank(ndim)
        mesh = self.mesh.to_sdy()
        dims = [SdyDim()] * ndim
        for i, entry in enumerate(self.spec):
            dims[i] = SdyDim(is_open=True) if entry is UNCONSTRAINED else SdyDim(axes_of(self.spec, i))
        return mesh, SdyTensorSharding(mesh.default_name(), tuple(dims))

    @memoize()
    def to_jax(self, ndim: int | None = None) -> jax.sharding.NamedSharding:
        return jax.sharding.NamedSharding(self.mesh.to_jax(), self.spec, memory_kind=self._memory_kind)

    @classmethod
    def from_jax(cls, sharding: jax.sharding.NamedSharding) -> NamedSharding:
        """The shardkit NamedSharding of a jax one: the same mesh (devices, names, axis types) and spec."""
        return cls(sharding.mesh, sharding.spec, memory_kind=sharding.memory_kind)

    def abstract_key(self, ndim: int) -> Any:
        return (NamedSharding, self.mesh.axes_mesh, self.spec, self._memory_kind)

    @property
    def unconstrained_dims(self) -> tuple[int, ...]:
        return tuple(i for i, e in enumerate(self.spec) if e is UNCONSTRAINED)

    def with_unconstrained_dim(self, dim: int) -> NamedSharding:
        entries = list(self.spec) + [None] * max(0, dim - len(self.spec))
        entries.insert(dim, UNCONSTRAINED)
        return self.with_spec(PartitionSpec(*entries))

    @classmethod
    def from_sdy(cls, tensor: SdyTensorSharding, mesh: Mesh | AbstractMesh) -> NamedSharding:
        """The NamedSharding of a tensor sharding on ``mesh`` (the mesh its symbol names).

        PartitionSpec cannot say everything Shardy can: sub-axes, priorities, open dimensions that already
        hold axes and unreduced axes raise ValueError naming the dimension. ``replicated={...}`` is implied.

        Examples:
            >>> NamedSharding.from_sdy(SdyTensorSharding("mesh", (SdyDim(), SdyDim(("x",)))), mesh4x2).spec
            P(None, 'x')
        """
        entries: list[Any] = []
        for i, dim in enumerate(tensor.dims):
            if any(a.sub is not None for a in dim.axes) or dim.priority is not None or (dim.is_open and dim.axes):
                raise ValueError(
                    f"Dimension {i} of {tensor} ({dim}) has sub-axes, a priority or an open dimension with axes, "
                    "which a PartitionSpec cannot express."
                )
            entries.append(UNCONSTRAINED if dim.is_open else tuple(a.name for a in dim.axes) or None)
        if tensor.unreduced:
            raise ValueError(f"{tensor} has unreduced axes, which shardkit's PartitionSpec does not model.")
        while entries and entries[-1] is None:
            entries.pop()
        return cls(mesh, PartitionSpec(*entries))

    @classmethod
    def from_hlo(cls, mesh: Mesh | AbstractMesh, hlo: HloSharding, ndim: int) -> NamedSharding | None:
        """A NamedSharding over ``mesh`` equivalent to ``hlo`` (positions numbering the mesh's devices in order),
        or None when no PartitionSpec over the mesh is.

        Each tiled dimension's tile count must be the product of an ordered choice of unused mesh axes, so the
        candidates are few and each is checked against the HLO itself.

        Examples:
            >>> NamedSharding.from_hlo(mesh4x2, mhlo.parse("{devices=[4,1,2]<=[8] last_tile_dim_replicate}"), 2).spec
            P('x',)
        """
        return _from_hlo(mesh, repr(mhlo.one_value(hlo, "NamedSharding.from_hlo")), ndim)

    def with_spec(self, spec: PartitionSpec | Sequence[Any]) -> NamedSharding:
        return NamedSharding(self.mesh, spec, memory_kind=self._memory_kind)


_MAX_SEARCH_AXES = 6  # beyond this many axes of size > 1 the ordered choices grow too many; GSPMD form then


@memoize(maxsize=1024)
def _from_hlo(mesh: Mesh | AbstractMesh, hlo_text: str, ndim: int) -> NamedSharding | None:
    hlo = mhlo.parse(hlo_text)
    tiling = mhlo.tiling(hlo, ndim)
    if tiling is None:
        return NamedSharding(mesh, PartitionSpec())
    parts, _ = tiling
    axes = [(n, s) for n, s in mesh.shape_tuple if s > 1]
    if len(axes) > _MAX_SEARCH_AXES:
        return None

    def choices(p: int, free: list[tuple[str, int]]) -> list[tuple[str, ...]]:
        out = [()] if p == 1 else []
        for k in range(1, len(free) + 1):
            for combo in itertools.permutations(free, k):
                if math.prod(s for _, s in combo) == p:
                    out.append(tuple(n for n, _ in combo))
        return out

    def search(dim: int, used: frozenset[str], entries: tuple) -> NamedSharding | None:
        if dim == ndim:
            while entries and entries[-1] is None:
                entries = entries[:-1]
            candidate = NamedSharding(mesh, PartitionSpec(*entries))
            return candidate if mhlo.equivalent(candidate.to_hlo(ndim), hlo) else None
        free = [a for a in axes if a[0] not in used]
        for names in choices(parts[dim], free):
            entry = None if not names else names[0] if len(names) == 1 else names
            found = search(dim + 1, used | set(names), entries + (entry,))
            if found is not None:
                return found
        return None

    return search(0, frozenset(), ())
