"""Call arguments: flattening a call, the key that picks its compiled program, and the checks that hand each
argument leaf to XLA.

jaxlib's ``execute_sharded`` crashes the interpreter on a wrong argument count, a wrong shard shape or a
buffer on the wrong device, and silently misreads a wrong dtype of equal size, so every leaf is checked
before any buffer reaches it. An Array argument (jax's Array; shardkit's are jax's) must have the compiled
shape and dtype, and a committed one a sharding equivalent to the compiled one: its sharding is part of the
call key, so a new sharding compiles anew instead of failing against the old program. numpy arrays, Python
scalars and uncommitted Arrays are placed where the program wants them (``place``).

Two dispatch paths. The first call of a signature runs here in Python (``flatten_call``, ``call_key``, the
checks, each device buffer's included) and hands jaxlib's C++ dispatch a record of the signature
(``executor.compiled``); from then on such calls run in C++, as ``jax.jit``'s do, checking what jax checks (an
Array deleted whole; a piece freed through a shard's data is jax's hazard there too). A signature gets no record
where C++ could not check what a call needs: programs with side effects (they thread jax's effect tokens),
typed PRNG key outputs, and, on jaxlib 0.10, a donated Array that may share device buffers with another argument
(``may_share``): that runtime crashes on a buffer donated and read in one call, where later releases' XLA raises
(``_jaxlib.DONATED_TWICE_RAISES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from shardkit import _jaxlib
from shardkit.array import (
    ArgumentTarget,
    argument_target,
    deleted_piece,
    device_dtype,
    device_put,
    is_key,
    piece_shape,
    put_argument,
    sharding_mismatch,
)
from shardkit.caching import memoize
from shardkit.lowering import PY_SCALARS, ShapeDtypeStruct
from shardkit.sharding import Sharding, from_jax


def _is_array(x: Any) -> bool:
    return isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)


class ArgumentHandler:
    """Checks one argument leaf and returns the Array ``execute_sharded`` takes."""

    __slots__ = ("path", "aval", "sharding")

    def __init__(self, path: str, aval: ShapeDtypeStruct, sharding: Sharding):
        self.path, self.aval, self.sharding = path, aval, sharding

    def __call__(self, x: Any) -> Any:
        aval = self.aval
        if _is_array(x):
            if is_key(x.dtype):  # a typed PRNG key array: the program takes its key data (no copy)
                x = jax.random.key_data(x)
            if x.shape != aval.shape or x.dtype != aval.dtype:
                raise self._mismatch(x.shape, x.dtype)
            if x.is_deleted():
                raise ValueError(f"Argument {self.path} has been deleted (was it donated to an earlier call?).")
            dead = deleted_piece(x)
            if dead is not None:
                raise ValueError(f"Argument {self.path} {dead}")
            if not x.committed:  # jax moves an uncommitted Array to where the program wants it
                return device_put(x, self.sharding)
            s = x.sharding
            if s is not self.sharding and s != self.sharding and not self.sharding.is_equivalent_to(s, aval.ndim):
                raise sharding_mismatch(self.path, s, self.sharding)
            return x
        if isinstance(x, (np.ndarray, np.generic)) or type(x) in PY_SCALARS:
            dtype = jax.dtypes.canonicalize_dtype(type(x)) if type(x) in PY_SCALARS else device_dtype(x.dtype)
            shape = np.shape(x)
            if shape != aval.shape or dtype != aval.dtype:
                raise self._mismatch(shape, dtype)
            return device_put(np.asarray(x, dtype=aval.dtype), self.sharding)
        raise TypeError(
            f"Argument {self.path} of type {type(x).__name__} is not an array: pass a jax Array, a numpy array or a "
            "scalar."
        )

    def _mismatch(self, shape: tuple[int, ...], dtype: Any) -> TypeError:
        return TypeError(
            f"Argument {self.path} has shape {tuple(shape)} and dtype {np.dtype(dtype).name}, but the computation "
            f"was compiled for shape {self.aval.shape} and dtype {self.aval.dtype.name}."
        )


def place(x: Any, sharding: Sharding, target: ArgumentTarget | None = None) -> Any:
    """A leaf that is not a committed Array (a numpy array, a Python scalar, an uncommitted Array) placed as
    ``sharding`` for a call that C++ dispatch runs, by ``put_argument`` where the record gave it a ``target``
    (``placements``). The signature proved its shape and dtype but not its byte order (jaxlib keys a numpy dtype by
    kind and width: a ``>f4`` array has ``float32``'s signature); both ways convert it, as a signature's first call
    does (``device_dtype``)."""
    if target is not None:
        return put_argument(x, target)
    return device_put(x, sharding)


def placements(leaves: Sequence[Any], shardings: Sequence[Sharding], num_devices: int) -> list[ArgumentTarget | None]:
    """Per leaf of a signature's first call, the target C++ dispatch hands ``place`` with that leaf on the later calls
    (``_jaxlib.fast_path``), or None. For a program on one device C++ places a leaf that is not an Array itself, as
    the raw bytes of its dtype's kind and width, so a later ``>f4`` array in a ``float32`` leaf's place would be read
    as garbage (under ``jax.jit`` too); a numpy leaf wider than a byte gets a target, so that C++ hands it over. On
    more devices C++ hands every such leaf over anyway; a Python scalar is native and of another signature (weakly
    typed), and a one-byte dtype has no byte order."""
    if num_devices != 1:
        return [None] * len(leaves)
    return [
        argument_target(x, s) if isinstance(x, (np.ndarray, np.generic)) and x.dtype.itemsize > 1 else None
        for x, s in zip(leaves, shardings)
    ]


def buffers(handlers: Sequence[ArgumentHandler], leaves: Sequence[Any]) -> list[Any]:
    """The Array each leaf hands to ``execute_sharded``."""
    return [h(x) for h, x in zip(handlers, leaves)]


def call_key(leaves: Sequence[Any], *context: Any) -> tuple[Any, ...]:
    """What decides which compiled program runs a call: ``context`` (tree, static arguments, mesh), then per
    leaf its shape, dtype, weak type and, for a committed Array, its sharding (an uncommitted one goes where the
    program wants it). One flat tuple: the cheapest key to build and hash."""
    key = list(context)
    for x in leaves:
        t = type(x)
        if t is np.ndarray:
            key.append((x.shape, x.dtype))
        elif t in PY_SCALARS:
            key.append(t)
        elif _is_array(x):
            aval = x.aval
            key.append((aval.shape, aval.dtype, aval.weak_type, x.sharding if x.committed else None))
        else:
            key.append((t, getattr(x, "shape", None), getattr(x, "dtype", None)))
    return tuple(key)


@memoize(maxsize=64)
def _leaf_args_tree(n: int) -> Any:
    return jax.tree_util.tree_structure(((0,) * n, {}))


def flatten_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], Any]:
    """``(args, kwargs)`` flattened with Arrays as leaves, with a shortcut for the common case: positional Arrays
    only, which are leaves themselves."""
    if not kwargs and all(isinstance(a, jax.Array) for a in args):
        return list(args), _leaf_args_tree(len(args))
    return jax.tree_util.tree_flatten((args, kwargs))


def leaf_paths(tree: Any) -> list[str]:
    """How errors name each leaf of an ``(args, kwargs)`` tree: ``args[0]``, ``kwargs['w'][1]``."""
    dummy = jax.tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
    out = []
    for path, _ in jax.tree_util.tree_flatten_with_path(dummy)[0]:
        head, rest = path[0].idx, path[1:]
        out.append(("args" if head == 0 else "kwargs") + jax.tree_util.keystr(rest))
    return out


# -- donation ------------------------------------------------------------------------------------------------


def _pieces(x: Any) -> tuple[Any, ...] | None:
    """What two Arrays must have in common to hold one device buffer: a buffer has one shape and dtype and lies
    on one device, so (piece shape, dtype, devices) of an Array leaf; None for any other leaf."""
    if not _is_array(x) or is_key(x.dtype):
        return None
    s = x.sharding
    shardkit_sharding = s if isinstance(s, Sharding) else from_jax(s, x.ndim)
    return piece_shape(shardkit_sharding, x.shape), x.dtype, s.device_set


def may_share(leaves: Sequence[Any], donated: Sequence[int]) -> list[tuple[int, int]]:
    """The pairs (donated leaf, other leaf) that could hold a device buffer in common: the same Array, or Arrays
    built over each other's pieces (``make_array_from_single_device_arrays``, a reshard that kept pieces in
    place), which only Arrays of one piece shape and dtype on common devices can be."""
    pieces = [_pieces(x) for x in leaves]
    out = []
    for i in donated:
        mine = pieces[i]
        if mine is None:
            continue
        for j, theirs in enumerate(pieces):
            if j != i and theirs is not None and theirs[:2] == mine[:2] and theirs[2] & mine[2]:
                out.append((i, j))
    return out


def check_donation(leaves: Sequence[Any], pairs: Sequence[tuple[int, int]], paths: Sequence[str]) -> None:
    """ValueError when a donated leaf's device buffers are also another leaf's (``may_share``'s pairs, checked by
    identity, then buffer by buffer): XLA would reuse a buffer that the call still reads, and jaxlib 0.10 then
    crashes the process (0.12 raises)."""
    for i, j in pairs:
        if leaves[i] is leaves[j]:
            raise _donated_twice(paths[i], paths[j], "the same array")
    for i, j in pairs:
        mine = set(_buffer_keys(leaves[i]))
        for key in _buffer_keys(leaves[j]):
            if key in mine:
                raise _donated_twice(paths[i], paths[j], f"its buffer on {key[0]}")


def _donated_twice(donated: str, other: str, what: str) -> ValueError:
    return ValueError(
        f"Argument {donated} is donated, but {what} is also passed as {other}: a donated buffer is reused for the "
        "results, so it cannot be read by the same call. Pass a separate Array there, or do not donate this one."
    )


def _buffer_keys(x: Any) -> list[tuple[Any, int]]:
    """(device, buffer address) of each live device buffer of an Array, in its device order."""
    if x.is_deleted():
        return []
    out = []
    for b in _jaxlib.per_device_arrays(x):
        if not b.is_deleted():
            (device,) = b.devices()
            out.append((device, b.unsafe_buffer_pointer()))
    return out
