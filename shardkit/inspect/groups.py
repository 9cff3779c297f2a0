"""Which devices a collective runs between, and which mesh axes that is.

XLA names a collective's participants by ids whose meaning depends on the op (``GetCollectiveOpGroupMode``
in XLA): without ``channel_id`` they are replica ids (cross-replica); with ``channel_id`` they are partition
ids, except that ``use_global_device_ids=true`` makes them flattened ids ``replica * num_partitions +
partition``, and ``use_global_device_ids=false`` on an op that has the field makes each group of replicas
span every partition. shardkit compiles with one replica, so a flattened id is a partition id and a
cross-replica group never leaves its partition. Partition ``p`` runs on ``device_assignment[p]``.

A set of groups is "over" mesh axes ``A`` when each group is exactly the devices whose mesh coordinates
agree on every other axis, i.e. the groups are the rows of the mesh along ``A``. Sub-axes count too: a
group may vary along ``x:(pre)size`` (Shardy's notation, which XLA's mesh-form replica groups share):
``pre`` is the product of the sizes of the parts of ``x`` major to it, so on an axis of size ``n`` it is the
part ``(x // (n // (pre * size))) % size``; on ``x=4``, ``x:(1)2`` is the major half and ``x:(2)2`` the minor
one. The order of the axes is the order the members are listed in (major first), which is what an all-gather
concatenates by.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Groups = list[list[int]]


def partition_groups(groups: Groups, *, channel: bool, global_ids: bool | None, num_partitions: int) -> Groups:
    """The groups of partition ids an op with these attributes communicates within (one replica).

    ``global_ids`` is ``use_global_device_ids`` for the ops that have it (all-reduce, all-gather,
    reduce-scatter) and None for those that do not (all-to-all); ``groups`` ``[]`` means one group of all.
    """
    everyone = list(range(num_partitions))
    if not channel:  # cross-replica: with one replica, every partition is its own group
        return [[p] for p in everyone]
    if global_ids is False:  # cross-replica-and-partition: replica groups, each spanning every partition
        return [everyone for _ in (groups or [[0]])]
    return groups or [everyone]


def mesh_axis_groups(
    ids: np.ndarray, axes: Sequence[tuple[str, int]], grouped: Sequence[tuple[str, tuple[int, int] | None]]
) -> Groups:
    """The groups of ids that vary along ``grouped`` (sub-)axes of a mesh, XLA's and Shardy's way.

    ``ids`` are the mesh's ids in logical (row-major) order; ``grouped`` lists ``(axis, None)`` for a whole
    axis or ``(axis, (pre, size))`` for a sub-axis, in the order the members are listed (major first). Each
    axis is split into the pieces its sub-axes cut it into, the grouped pieces are moved last and the ids
    are cut into groups of their size.

    Examples:
        >>> ids = np.arange(8)  # the mesh ["x"=4, "y"=2], in row-major order
        >>> mesh_axis_groups(ids, [("x", 4), ("y", 2)], [("y", None)])
        [[0, 1], [2, 3], [4, 5], [6, 7]]
        >>> mesh_axis_groups(ids, [("x", 4), ("y", 2)], [("x", (1, 2))])  # x's major half: x and x + 2
        [[0, 4], [1, 5], [2, 6], [3, 7]]
        >>> mesh_axis_groups(ids, [("x", 4), ("y", 2)], [("x", (2, 2))])  # x's minor half: x and x + 1
        [[0, 2], [1, 3], [4, 6], [5, 7]]
    """
    names = [n for n, _ in axes]
    sizes = [s for _, s in axes]
    unknown = [n for n, _ in grouped if n not in names]
    if unknown:
        raise ValueError(f"axes {unknown} are not in the mesh {dict(axes)}")
    cuts: dict[int, set[int]] = {}  # per axis, the strides its pieces start at
    for name, sub in grouped:
        if sub is not None:
            axis = names.index(name)
            pre, size = sub
            cuts.setdefault(axis, {1, sizes[axis]}).update({sizes[axis] // pre, sizes[axis] // (pre * size)})
    dims, piece_of = [], {}
    for axis, full in enumerate(sizes):
        bounds = sorted(cuts.get(axis, {1, full}), reverse=True)  # strides, major piece first
        if full == 1:  # an axis of size 1 (XLA's TPU meshes have them) is one piece of size 1
            bounds = [1, 1]
        for hi, lo in itertools.pairwise(bounds):
            piece_of[(axis, lo, hi // lo)] = len(dims)
            dims.append(hi // lo)
    picked = []
    for name, sub in grouped:
        axis = names.index(name)
        full = sizes[axis]
        picked.append(piece_of[(axis, 1, full) if sub is None else (axis, full // (sub[0] * sub[1]), sub[1])])
    order = [d for d in range(len(dims)) if d not in picked] + picked
    per_group = math.prod(dims[d] for d in picked)
    return np.asarray(ids).reshape(dims).transpose(order).reshape(-1, per_group).tolist()


def mesh_positions(devices: Sequence[Any], mesh: Any) -> np.ndarray | None:
    """``positions[p]`` = mesh coordinates of partition ``p``'s device, or None when the mesh lacks one."""
    where = {d.id: idx for idx, d in np.ndenumerate(mesh.devices)}
    if any(d.id not in where for d in devices):
        return None
    return np.array([where[d.id] for d in devices], dtype=np.int64).reshape(len(devices), mesh.devices.ndim)


def _varying(coords: np.ndarray, size: int) -> tuple[int, int] | None:
    """``(stride, count)`` of the part of an axis of ``size`` that one group's values along it cover, or None if
    not one part: the values ``(x // stride) % count``.

    E.g. values {1, 3} of an axis of size 4 are ``(x // 2) % 2`` with ``x % 2 == 1``: stride 2, the sub-axis
    ``(1)2``.
    """
    values = np.unique(coords)
    if len(values) == 1:
        return (1, 1)
    steps = np.diff(values)
    stride, count = int(steps[0]), len(values)
    if not (steps == stride).all() or size % (stride * count) or (values[0] // stride) % count:
        return None
    return stride, count


def axes_of(
    groups: Groups, positions: np.ndarray, names: Sequence[str], sizes: Sequence[int]
) -> tuple[str, ...] | None:
    """The mesh (sub-)axes the groups vary over, in the members' order: e.g. ``('data', 'model')``,
    ``('x:(1)2',)``; ``()`` for groups of one; None when the groups are not rows of the mesh."""
    if not groups or any(len(g) != len(groups[0]) for g in groups):
        return None
    first = positions[groups[0]]
    parts = [_varying(first[:, a], sizes[a]) for a in range(len(sizes))]
    if any(p is None for p in parts):
        return None
    involved = [a for a, (_, count) in enumerate(parts) if count > 1]
    if math.prod(parts[a][1] for a in involved) != len(groups[0]):
        return None

    def key(coord: np.ndarray) -> tuple[int, ...]:  # equal exactly for partitions in one group
        out = []
        for a, (stride, count) in enumerate(parts):
            out += [coord[a] // (stride * count), coord[a] % stride] if count > 1 else [coord[a]]
        return tuple(int(v) for v in out)

    classes: dict[tuple[int, ...], set[int]] = {}
    for p in range(len(positions)):
        classes.setdefault(key(positions[p]), set()).add(p)
    if not {frozenset(g) for g in groups} <= {frozenset(c) for c in classes.values()}:
        return None

    def label(a: int) -> str:  # Shardy's (pre)size: pre is the product of the parts major to this one
        stride, count = parts[a]
        return names[a] if count == sizes[a] else f"{names[a]}:({sizes[a] // (stride * count)}){count}"

    digits = {a: (first[:, a] // parts[a][0]) % parts[a][1] for a in involved}
    for order in itertools.permutations(involved):  # the order that lists the members row-major
        rank = np.zeros(len(first), dtype=np.int64)
        for a in order:
            rank = rank * parts[a][1] + digits[a]
        if (rank == np.arange(len(first))).all():
            return tuple(label(a) for a in order)
    return tuple(label(a) for a in involved)


def axes_of_pairs(pairs: Sequence[tuple[int, int]], positions: np.ndarray, names: Sequence[str]) -> tuple[str, ...]:
    """The mesh axes along which a collective-permute's sources and targets differ (mesh order)."""
    moved = {a for s, t in pairs for a in range(len(names)) if positions[s][a] != positions[t][a]}
    return tuple(names[a] for a in sorted(moved))
