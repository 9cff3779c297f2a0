"""``ShapeDtypeStruct``: an array's shape, dtype and (optionally) sharding, for lowering without data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from shardkit.array import is_key
from shardkit.caching import memoize
from shardkit.sharding import Sharding, canonical_shape, physical_sharding


class ShapeDtypeStruct(jax.ShapeDtypeStruct):
    """What ``jit(...).lower`` needs to know about an argument, without its data. It is a
    ``jax.ShapeDtypeStruct`` (jax and the libraries on it, orbax's restore targets among them, take it), whose
    sharding, if any, is shardkit's.

    ``sharding`` is used as the argument's own placement (like a committed Array's); ``weak_type`` marks a
    value that came from a Python scalar (jax promotes it weakly). ``dtype`` may be a typed PRNG key's
    (``jax.random.key(0).dtype``): the program then takes the key's data (``physical``).

    Examples:
        >>> x = ShapeDtypeStruct((8, 2), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
        >>> print(sk.jit(lambda a: a * 2).lower(x).as_text())
        module @jit__lambda attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
          sdy.mesh @mesh = <["x"=4, "y"=2]>
          func.func public @main(%arg0: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) ...
        ...
    """

    __slots__ = ()

    def __init__(self, shape: Sequence[int], dtype: Any, *, sharding: Sharding | None = None, weak_type: bool = False):
        if sharding is not None and not isinstance(sharding, Sharding):
            raise TypeError(f"ShapeDtypeStruct sharding must be a shardkit Sharding or None, got {sharding!r}.")
        shape = canonical_shape(shape)
        if sharding is not None:
            sharding.check_compatible_aval(shape)  # shardkit's message, before jax's own check
        super().__init__(
            shape, dtype if is_key(dtype) else np.dtype(dtype), sharding=sharding, weak_type=bool(weak_type)
        )

    def __repr__(self) -> str:
        extra = "" if self.sharding is None else f", sharding={self.sharding}"
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{extra}{weak})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype, self.sharding, self.weak_type) == (
            other.shape,
            other.dtype,
            other.sharding,
            other.weak_type,
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.sharding, self.weak_type))


# Python scalars an argument may be, and whether jax gives each a weak type (bool is the strong one).
PY_SCALARS = {bool: False, int: True, float: True, complex: True}


@memoize()
def physical(aval: ShapeDtypeStruct) -> ShapeDtypeStruct:
    """What XLA holds for a value: a key array's data (shape and dtype as jax lays it out), any other value itself.

    Examples:
        >>> physical(ShapeDtypeStruct((4,), jax.random.key(0).dtype))
        ShapeDtypeStruct(shape=(4, 2), dtype=uint32)
    """
    if not is_key(aval.dtype):
        return aval
    data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(aval.shape, aval.dtype))
    return ShapeDtypeStruct(data.shape, data.dtype)


def physical_shardings(
    shardings: Sequence[Sharding | None], avals: Sequence[ShapeDtypeStruct]
) -> tuple[Sharding | None, ...]:
    """Each value's sharding of what XLA holds: a key array's covers its key data, whose extra trailing dimensions
    are never cut (as jax lays a sharded key array out)."""
    return tuple(
        s if s is None or not is_key(a.dtype) else physical_sharding(s, a.ndim, physical(a).ndim - a.ndim)
        for s, a in zip(shardings, avals)
    )
