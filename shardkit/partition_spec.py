"""PartitionSpec: how each dimension of an array maps onto named mesh axes.

A spec is a tuple with one entry per leading array dimension: ``None`` (not sharded), an axis name, or a
tuple of axis names (sharded over their product, major to minor). ``UNCONSTRAINED`` leaves the dimension to
the compiler. Entries are canonicalised so that the same placement has one spelling:
``P(('x',))`` is ``P('x')``, ``P(['x', 'y'])`` is ``P(('x', 'y'))`` and ``P(())`` is ``P(None)``.

Equality follows jax 0.10: a spec equals only another spec with the same entries, so ``P('x', None) !=
P('x')`` and ``P('x') != ('x',)``. Trailing ``None`` entries do not change the placement, so the hash
ignores them: ``P('x', None)`` and ``P('x')`` hash alike, which keeps mixed keys in one bucket.
"""

from __future__ import annotations

from typing import Any, Union

AxisName = str
Entry = Union[None, AxisName, tuple[AxisName, ...], "UnconstrainedSingleton"]


class UnconstrainedSingleton:
    """Marks a dimension whose sharding the compiler may choose (``{?}`` in Shardy)."""

    _instance: UnconstrainedSingleton | None = None

    def __new__(cls) -> UnconstrainedSingleton:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCONSTRAINED"

    def __reduce__(self) -> tuple[Any, ...]:
        return (UnconstrainedSingleton, ())


UNCONSTRAINED = UnconstrainedSingleton()


def _canonical_entry(entry: Any, position: int) -> Entry:
    if entry is None or entry is UNCONSTRAINED:
        return entry
    if isinstance(entry, str):
        return str(entry)  # a str subclass (np.str_) would print as one
    if isinstance(entry, (tuple, list)):
        for name in entry:
            if isinstance(name, (tuple, list)):
                raise ValueError(
                    f"A tuple inside PartitionSpec cannot contain a nested tuple. Got partition: {tuple(entry)!r} "
                    f"and the nested tuple: {tuple(name)!r}"
                )
            if not isinstance(name, str):
                raise TypeError(
                    f"PartitionSpec entry {position} must hold mesh axis names (str), got {name!r} in {tuple(entry)!r}."
                )
        if len(entry) == 0:
            return None
        if len(entry) == 1:
            return str(entry[0])
        return tuple(map(str, entry))
    raise TypeError(
        f"PartitionSpec entry {position} must be None, an axis name, a tuple of axis names or "
        f"P.UNCONSTRAINED, got {entry!r} of type {type(entry).__name__}."
    )


class PartitionSpec(tuple):
    """Tuple describing how to partition an array across a mesh of devices.

    Examples:
        >>> P("x", None)
        P('x', None)
        >>> P(("x", "y"))
        P(('x', 'y'),)
        >>> P("x", None) == P("x"), hash(P("x", None)) == hash(P("x"))
        (False, True)
    """

    __slots__ = ()

    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        return super().__new__(cls, (_canonical_entry(p, i) for i, p in enumerate(partitions)))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("Subclassing PartitionSpec is not allowed.")

    def __repr__(self) -> str:
        return f"P({tuple.__repr__(self)[1:-1]})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionSpec) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        end = len(self)
        while end and self[end - 1] is None:
            end -= 1
        return hash(("PartitionSpec", tuple(self[:end])))

    def __reduce__(self) -> tuple[Any, ...]:
        return (PartitionSpec, tuple(self))

    def __add__(self, other: tuple) -> PartitionSpec:  # type: ignore[override]
        if not isinstance(other, tuple):
            return NotImplemented
        return PartitionSpec(*self, *other)

    def __radd__(self, other: tuple) -> PartitionSpec:
        if not isinstance(other, tuple):
            return NotImplemented
        return PartitionSpec(*other, *self)

    @property
    def partitions(self) -> tuple[Entry, ...]:
        """The entries as a plain tuple (jax 0.10 spelling)."""
        return tuple(self)

    def axes_of(self, dim: int) -> tuple[AxisName, ...]:
        """The mesh axes that shard dimension ``dim``, major to minor (empty when unsharded)."""
        if not isinstance(dim, int) or dim < 0:
            raise ValueError(f"axes_of takes a dimension index, a non-negative int; got {dim!r}.")
        entry = self[dim] if dim < len(self) else None
        if entry is None or entry is UNCONSTRAINED:
            return ()
        return (entry,) if isinstance(entry, str) else entry

    def used_axes(self) -> tuple[AxisName, ...]:
        """Every axis name the spec mentions, in order of appearance (repeats kept)."""
        return tuple(name for dim in range(len(self)) for name in self.axes_of(dim))


P = PartitionSpec
