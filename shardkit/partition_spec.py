"""PartitionSpec: how each dimension of an array maps onto named mesh axes. It is jax's own class.

A spec has one entry per leading array dimension: ``None`` (not sharded), an axis name, or a tuple of axis
names (sharded over their product, major to minor). ``UNCONSTRAINED`` leaves the dimension to the compiler.
Entries are canonical, so the same placement has one spelling: ``P(('x',))`` is ``P('x')``, ``P(['x',
'y'])`` is ``P(('x', 'y'))`` and ``P(())`` is ``P(None)``. A spec equals only a spec with the same entries
(``P('x', None) != P('x')``, ``P('x') != ('x',)``): jax interns specs and compares them by identity.

Why jax's class and not a shardkit one: jax refuses a subclass of it, and jax's functions check for it
(``jax.shard_map``'s ``in_specs``, ``jax.sharding.NamedSharding``, ``with_sharding_constraint`` of a bare
spec), so ``from shardkit import P`` must give the class those checks accept. jax's class accepts entries
of any type and ``unreduced=``/``reduced=`` axes; shardkit checks a spec where it is used
(``check_entries``): entries are axis names, and shardkit does not model unreduced or reduced axes.
"""

from __future__ import annotations

from typing import Any

import jax

PartitionSpec = jax.sharding.PartitionSpec
P = PartitionSpec
UNCONSTRAINED = PartitionSpec.UNCONSTRAINED

AxisName = str


def check_entries(spec: PartitionSpec) -> None:
    """TypeError unless each entry is None, UNCONSTRAINED, an axis name (str) or a tuple of them; ValueError
    for unreduced or reduced axes, which shardkit does not model.

    Examples:
        >>> check_entries(P("x", ("y", 1)))
        Traceback (most recent call last):
        ...
        TypeError: PartitionSpec entry 1 must hold mesh axis names (str), got 1 in ('y', 1).
    """
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"Expected a PartitionSpec, got {spec!r} of type {type(spec).__name__}.")
    if spec.unreduced or spec.reduced:
        raise ValueError(
            f"{spec} has unreduced or reduced axes, which shardkit does not model: use a spec of axis names only."
        )
    for position, entry in enumerate(spec):
        if entry is None or entry is UNCONSTRAINED or isinstance(entry, str):
            continue
        if isinstance(entry, tuple):
            for name in entry:
                if not isinstance(name, str):
                    raise TypeError(
                        f"PartitionSpec entry {position} must hold mesh axis names (str), got {name!r} in {entry!r}."
                    )
            continue
        raise TypeError(
            f"PartitionSpec entry {position} must be None, an axis name, a tuple of axis names or "
            f"P.UNCONSTRAINED, got {entry!r} of type {type(entry).__name__}."
        )


def axes_of(spec: PartitionSpec, dim: int) -> tuple[AxisName, ...]:
    """The mesh axes that shard dimension ``dim``, major to minor (empty when unsharded or unconstrained); the
    spec is checked first (``check_entries``).

    Examples:
        >>> axes_of(P(("x", "y"), None), 0), axes_of(P("x"), 3)
        (('x', 'y'), ())
    """
    check_entries(spec)
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
        raise ValueError(f"axes_of takes a dimension index, a non-negative int; got {dim!r}.")
    return _axes(spec, dim)


def _axes(spec: PartitionSpec, dim: int) -> tuple[AxisName, ...]:
    entry = spec[dim] if dim < len(spec) else None
    if entry is None or entry is UNCONSTRAINED:
        return ()
    return (entry,) if isinstance(entry, str) else entry


def used_axes(spec: PartitionSpec) -> tuple[AxisName, ...]:
    """Every axis name the spec mentions, in order of appearance (repeats kept); the spec is checked first.

    Examples:
        >>> used_axes(P(("x", "y"), None, "z"))
        ('x', 'y', 'z')
        >>> used_axes(P(...))
        Traceback (most recent call last):
        ...
        TypeError: PartitionSpec entry 0 must be None, an axis name, ... got Ellipsis of type ellipsis.
    """
    check_entries(spec)
    return tuple(name for dim in range(len(spec)) for name in _axes(spec, dim))


def as_spec(value: Any, what: str) -> PartitionSpec:
    """``value`` as a PartitionSpec: a spec itself, or a tuple or list of entries (TypeError naming ``what``)."""
    if isinstance(value, PartitionSpec):
        return value
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{what} needs a PartitionSpec (or a tuple of its entries), got {value!r}.")
    return PartitionSpec(*value)
