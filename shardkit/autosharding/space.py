"""What the search chooses from: meshes, the argument groups it shards together, and each group's shardings.

- **Meshes.** Every ordered factorisation of the device count into 1 to 3 named axes of at least 2 devices
  (``x``, ``y``, ``z``, major first), unless the caller or the program fixes one. The order matters: the target
  lays the mesh onto its torus major axis first, so ``(16, 16)`` and ``(2, 128)`` put an axis's collectives on
  different links.
- **Groups.** Each free argument leaf (one without a sharding the user gave) is a sharding decision. Leaves at
  the same place inside subtrees that mirror each other (the same keys, shapes and dtypes) from different
  arguments or parents (``params['w1']``, ``m['w1']``, ``v['w1']``; a parameter and optax's moments of it inside
  one train state) are tied (``program.mirrored``): one decision for the group, as the values they hold are
  updated together and a layout that splits them only adds reshards. Whole arguments are never tied (``f(x, w)``
  with equal shapes keeps two decisions), nor are mirrors under one parent (two dense layers of one shape).
- **Layer boundaries.** A value a loop of ``@main`` carries from one iteration to the next (a scanned layer's
  activations, their gradient on the way back) is a decision too, one per shape and dtype: a constraint at the
  start of the loop's body (``sdy.sharding_constraint``), or open. Only rank-2 or larger values that change each
  iteration and are not stacked over the iterations (a leading dimension of the trip count: the scanned weights,
  the saved residuals) are boundaries; a boundary is never stored.
- **A layout** gives each group either ``OPEN`` (Shardy's propagation decides) or a ``Choice``: per dimension,
  the mesh axes that split it (major first), and whether it is a storage sharding (held split, gathered where it
  is used: ZeRO/FSDP) or one the computation follows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import NamedTuple

AXIS_NAMES = ("x", "y", "z")
OPEN = None  # a group whose sharding Shardy's propagation decides

DimAxes = tuple[str, ...]  # the mesh axes splitting one dimension, major first
Spec = tuple[DimAxes, ...]  # one entry per dimension


class Choice(NamedTuple):
    """A group's sharding: per dimension the mesh axes splitting it; ``storage`` marks a sharding that holds the
    value split without imposing it on the computation (Shardy priority 1, after every unprioritised sharding:
    where the value is used with another sharding, the value is gathered, as FSDP/ZeRO gathers a parameter)."""

    spec: Spec
    storage: bool = False


Layout = tuple[Choice | None, ...]  # one entry per group; None: open


@dataclasses.dataclass(frozen=True)
class MeshShape:
    """A mesh by its axis names and sizes, major first (no devices: the target lays it out)."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(self.sizes)

    @property
    def axes(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.names, self.sizes))

    def size_of(self, axes: Sequence[str]) -> int:
        """Devices the named axes span together."""
        sizes = dict(self.axes)
        return math.prod(sizes[a] for a in axes)

    def __str__(self) -> str:
        return " ".join(f"{n}={s}" for n, s in self.axes) or "(one device)"


def mesh_shapes(devices: int, max_axes: int = 3) -> list[MeshShape]:
    """The meshes of ``devices`` devices with 1 to ``max_axes`` axes of at least 2 each, every order.

    Examples:
        >>> [str(m) for m in mesh_shapes(8)]
        ['x=8', 'x=2 y=4', 'x=4 y=2', 'x=2 y=2 z=2']
        >>> len(mesh_shapes(256)), [str(m) for m in mesh_shapes(1)]
        (29, ['x=1'])
    """
    if devices < 1:
        raise ValueError(f"a mesh needs at least one device, got {devices}.")
    if devices == 1:
        return [MeshShape(AXIS_NAMES[:1], (1,))]
    found: list[tuple[int, ...]] = []

    def split(rest: int, prefix: tuple[int, ...]) -> None:
        if len(prefix) == max_axes - 1 or rest < 4:
            if rest >= 2 or not prefix:
                found.append(prefix + (rest,))
            return
        found.append(prefix + (rest,))
        for d in range(2, rest // 2 + 1):
            if rest % d == 0:
                split(rest // d, prefix + (d,))

    split(devices, ())
    found.sort(key=lambda s: (len(s), s))
    return [MeshShape(AXIS_NAMES[: len(s)], s) for s in found]


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One argument of the program (a leaf of the function's argument tree).

    Attributes:
        index: its position among the program's arguments.
        path: where it is in the arguments (``params['w1']``, ``args[2]``).
        shape, dtype: global shape and element type (numpy's name).
        itemsize: bytes per element.
        fixed: the sharding the user gave, per dimension the mesh axes (kept as given), or None when free.
        group: the group it belongs to (None for a fixed leaf).
    """

    index: int
    path: str
    shape: tuple[int, ...]
    dtype: str
    itemsize: float
    fixed: Spec | None = None
    group: int | None = None

    @property
    def nbytes(self) -> int:
        return int(math.prod(self.shape) * self.itemsize)


@dataclasses.dataclass(frozen=True)
class Group:
    """Free leaves that take one sharding decision together (module docstring)."""

    index: int
    name: str
    shape: tuple[int, ...]
    leaves: tuple[int, ...]
    nbytes: int  # of all its leaves (of a boundary: of the value, once)
    sites: tuple[tuple[int, int], ...] = ()  # a layer boundary's: (loop of @main, its carried value)

    @property
    def boundary(self) -> bool:
        """Whether the group is an intermediate at a layer boundary (a loop's carried value), not arguments."""
        return bool(self.sites)

    def __str__(self) -> str:
        return self.name


def group_leaves(leaves: Sequence[Leaf], keys: Sequence[tuple | None]) -> tuple[list[Leaf], list[Group]]:
    """Ties free leaves whose ``keys`` agree (None: never tied) into groups, largest group first."""
    by_key: dict[object, list[Leaf]] = {}
    for leaf, key in zip(leaves, keys):
        if leaf.fixed is None:
            by_key.setdefault(("tied", key) if key is not None else ("own", leaf.index), []).append(leaf)
    members = sorted(by_key.values(), key=lambda ls: (-sum(x.nbytes for x in ls), ls[0].index))
    groups, out = [], list(leaves)
    for g, ls in enumerate(members):
        name = ls[0].path if len(ls) == 1 else f"{ls[0].path} (+{len(ls) - 1} tied)"
        groups.append(Group(g, name, ls[0].shape, tuple(x.index for x in ls), sum(x.nbytes for x in ls)))
        for x in ls:
            out[x.index] = dataclasses.replace(x, group=g)
    return out, groups


def replicated(rank: int) -> Spec:
    return tuple(() for _ in range(rank))


def spec_text(spec: Spec | Choice | None) -> str:
    """A spec (or a choice) as PartitionSpec prints: ``P('x')``, ``P(None, ('x', 'y'))``, ``open``; a storage
    choice ends in ``stored``.

    Examples:
        >>> spec_text((("x",), ())), spec_text(((), ("x", "y"))), spec_text(((), ())), spec_text(None)
        ("P('x')", "P(None, ('x', 'y'))", 'P()', 'open')
        >>> spec_text(Choice(((), ("x",)), storage=True))
        "P(None, 'x') stored"
    """
    if spec is None:
        return "open"
    if isinstance(spec, Choice):
        return spec_text(spec.spec) + (" stored" if spec.storage and any(spec.spec) else "")
    while spec and not spec[-1]:
        spec = spec[:-1]
    parts = ["None" if not d else repr(d[0]) if len(d) == 1 else "(" + ", ".join(map(repr, d)) + ")" for d in spec]
    return "P(" + ", ".join(parts) + ")"
