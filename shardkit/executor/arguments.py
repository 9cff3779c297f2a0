"""Call arguments: flattening a call, the key that picks its compiled program, and the checks that hand each
argument leaf to XLA.

jaxlib's ``execute_sharded`` crashes the interpreter on a wrong argument count, a wrong shard shape or a
buffer on the wrong device, and silently misreads a wrong dtype of equal size, so every leaf is checked
before any buffer reaches it. One rule covers ``sk.Array`` and its subclasses (``GlobalDeviceArray``): such
an argument must have the compiled shape and dtype and a sharding equivalent to the compiled one, and its
sharding is part of the call key, so a new sharding compiles anew instead of failing against the old
program; a committed jax Array is held to the same rule (jax reads its sharding so too). numpy arrays,
Python scalars and uncommitted jax Arrays are placed where the program wants them.

Two dispatch paths. The steady state (``jit(f)(x)`` called again like the last time) is ``LastCall``: Arrays
in the same structure, of exactly the class, sharding objects and aval objects of the previous call, checked
by identity and for deletion, then executed; no key is built, nothing is hashed. Any other call runs
``flatten_call``, ``call_key`` and, on a cache hit, ``buffers`` with ``trusted=True``: the key already proved
each Array's shape, dtype and sharding, so only deletion is checked there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from shardkit import _jaxlib
from shardkit.array import (
    Array,
    alive,
    asarray,
    deleted_piece,
    device_dtype,
    device_put,
    is_key,
    sharding_mismatch,
    shared,
    wrap,
)
from shardkit.caching import memoize
from shardkit.lowering import PY_SCALARS, ShapeDtypeStruct
from shardkit.mesh import current_mesh
from shardkit.sharding import Sharding


class ArgumentHandler:
    """Checks one argument leaf and returns the global jaxlib array ``execute_sharded`` takes."""

    __slots__ = ("path", "aval", "sharding")

    def __init__(self, path: str, aval: ShapeDtypeStruct, sharding: Sharding):
        self.path, self.aval, self.sharding = path, aval, sharding

    def __call__(self, x: Any) -> Any:
        aval = self.aval
        if not isinstance(x, Array) and isinstance(x, jax.Array):
            if is_key(x.dtype):  # a typed PRNG key array: the program takes its key data (no copy)
                x = jax.random.key_data(x)
            # A jax Array is read as jax reads it: a committed one is held to its own sharding like a shardkit
            # Array (no copy), an uncommitted one is moved on the devices to where the program wants it.
            x = asarray(x) if x.committed else self._moved(asarray(x))
        if type(x) is Array or isinstance(x, Array):  # exact type first: the dispatch path
            impl_aval = x._impl.aval  # one attribute read instead of x.shape and x.dtype (the dispatch path)
            if impl_aval.shape != aval.shape or impl_aval.dtype != aval.dtype:
                raise self._mismatch(impl_aval.shape, impl_aval.dtype)
            s = x.sharding
            if s is not self.sharding and s != self.sharding and not s.is_equivalent_to(self.sharding, aval.ndim):
                raise sharding_mismatch(self.path, s, self.sharding)
            if not alive(x._impl):
                raise self._deleted(x)
            return x._impl
        if isinstance(x, (np.ndarray, np.generic)) or type(x) in PY_SCALARS:
            dtype = jax.dtypes.canonicalize_dtype(type(x)) if type(x) in PY_SCALARS else device_dtype(x.dtype)
            shape = np.shape(x)
            if shape != aval.shape or dtype != aval.dtype:
                raise self._mismatch(shape, dtype)
            return device_put(np.asarray(x, dtype=aval.dtype), self.sharding)._impl
        raise TypeError(
            f"Argument {self.path} of type {type(x).__name__} is not an array: pass a shardkit Array, a numpy "
            "array or a scalar."
        )

    def _moved(self, x: Array) -> Array:
        if x.shape != self.aval.shape or x.dtype != self.aval.dtype:
            raise self._mismatch(x.shape, x.dtype)
        return device_put(x, self.sharding)

    def _deleted(self, x: Array) -> ValueError:
        device = None if x._impl.is_deleted() else deleted_piece(x)
        if device is None:
            return ValueError(f"Argument {self.path} has been deleted (was it donated to an earlier call?).")
        return ValueError(
            f"Argument {self.path} has a deleted piece: its buffer on {device} was freed (deleting one of an "
            "Array's addressable shards' data frees that piece of the Array)."
        )

    def _mismatch(self, shape: tuple[int, ...], dtype: Any) -> TypeError:
        return TypeError(
            f"Argument {self.path} has shape {tuple(shape)} and dtype {np.dtype(dtype).name}, but the computation "
            f"was compiled for shape {self.aval.shape} and dtype {self.aval.dtype.name}."
        )


def buffers(handlers: Sequence[ArgumentHandler], leaves: Sequence[Any], trusted: bool) -> list[Any]:
    """The global jaxlib array of each leaf. ``trusted``: ``call_key`` matched, so an Array leaf only needs to
    be alive, every device buffer of it (XLA crashes the process on a freed buffer)."""
    if trusted:
        return [
            x._impl if (type(x) is Array or isinstance(x, Array)) and alive(x._impl) else h(x)
            for h, x in zip(handlers, leaves)
        ]
    return [h(x) for h, x in zip(handlers, leaves)]


def call_key(leaves: Sequence[Any], *context: Any) -> tuple[Any, ...]:
    """What decides which compiled program runs a call: ``context`` (tree, static arguments, mesh), then per
    leaf its shape, dtype, weak type and, for an Array, its sharding. One flat tuple: the cheapest key to build
    and hash."""
    key = list(context)
    for x in leaves:
        if type(x) is Array or isinstance(x, Array):
            aval = x._impl.aval  # slot reads instead of property calls: the dispatch path
            key += (Array, aval.shape, aval.dtype, x._weak_type, x._sharding)
        else:
            key.append(_host_key(x))
    return tuple(key)


def _host_key(x: Any) -> Any:
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if t in PY_SCALARS:
        return t
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        # a committed jax Array's sharding picks the program, as an Array's does
        return (t, x.shape, x.dtype, getattr(x, "weak_type", False), x.sharding if x.committed else None)
    return (t, getattr(x, "shape", None), getattr(x, "dtype", None))


@memoize(maxsize=64)
def _leaf_args_tree(n: int) -> Any:
    return jax.tree_util.tree_structure(((0,) * n, {}))


def flatten_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], Any]:
    """``(args, kwargs)`` flattened with shardkit Arrays as leaves, with a shortcut for the dispatch path's common
    case: positional Arrays only, which are leaves themselves."""
    if not kwargs:
        for a in args:
            if not (type(a) is Array or isinstance(a, Array)):
                break
        else:
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


MISS = object()  # LastCall.run: the call does not repeat the memo's signature


class LastCall:
    """The exact objects one all-Array call carried, so the next call like it skips the key.

    Identity is a proof: an Array's aval and sharding objects are immutable, and the outputs of one program
    share its aval and sharding objects, so ``y = f(y)`` loops match every time. Positional Arrays are
    compared as they come; any other call structure is flattened and its tree compared (``tree`` is None for
    the first kind). For ``jit``, whose programs depend on the ``with mesh:`` context (bare PartitionSpecs in
    constraints resolve against it), the context mesh is compared by identity too (``mesh``). Calls with host
    values, Array subclasses or no arguments take the keyed path, and so does a program with side effects,
    whose calls thread jax's effect tokens. A donating program's call is memoized too: ``run`` takes it only
    when each donated Array is passed once and holds buffers no other array holds (``array.shared``), since a
    buffer donated and read in one call crashes jaxlib; anything else goes to the keyed path, which names it.

    ``run`` is the whole steady state in one frame (the check, ``execute_sharded``, one output wrapped): on
    this path every Python step shows in the call's time.
    """

    __slots__ = ("compiled", "tree", "mesh", "signature", "execute", "handlers", "single_output", "donated")

    def __init__(self, compiled: Any, tree: Any, leaves: Sequence[Array], mesh: Any):
        self.compiled, self.tree, self.mesh = compiled, tree, mesh
        self.signature = tuple((x._sharding, x._impl.aval, x._weak_type) for x in leaves)
        self.execute, self.handlers = compiled._executable.execute_sharded, compiled._results
        self.single_output = compiled._out_info[0] if compiled._single_output else None
        self.donated = compiled._donated

    @classmethod
    def of(
        cls,
        compiled: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        leaves: Sequence[Any],
        tree: Any,
        mesh: Any = None,
    ) -> LastCall | None:
        """The memo of a call that just ran through the keyed path, or None where it may not be memoized;
        ``mesh``: the context mesh the program was chosen under (None: any)."""
        if not leaves or compiled._effects or not all(type(x) is Array for x in leaves):
            return None
        positional = not kwargs and len(args) == len(leaves) and all(a is x for a, x in zip(args, leaves))
        return cls(compiled, None if positional else tree, leaves, mesh)

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call's outputs if its Arrays match the memo and are alive, else ``MISS``."""
        if self.mesh is not None and current_mesh() is not self.mesh:
            return MISS
        if self.tree is None:
            if kwargs:
                return MISS
            leaves = args
        else:
            leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
            if tree != self.tree:
                return MISS
        signature = self.signature
        n = len(signature)
        if len(leaves) != n:
            return MISS
        arrays = []
        for i in range(n):  # indexing: cheaper than zip with unpacking on this path
            x = leaves[i]
            sharding, aval, weak = signature[i]
            if type(x) is not Array or x._sharding is not sharding or x._weak_type is not weak:
                return MISS
            impl = x._impl
            if impl.aval is not aval or not alive(impl):  # a deleted piece crashes execute_sharded
                return MISS
            arrays.append(impl)
        donated = self.donated
        for i in donated:
            impl = arrays[i]
            if shared(impl) or sum(a is impl for a in arrays) > 1:
                return MISS
        results = self.execute(arrays).consume_with_handlers(self.handlers)  # _jaxlib.execute, inlined
        if donated:
            self.compiled._delete_donated(leaves)
        if self.single_output is not None:
            sharding, weak = self.single_output
            return wrap(results[0], sharding, weak_type=weak)
        return self.compiled._outputs(results)


def check_donation(leaves: Sequence[Any], donated: Sequence[int], paths: Sequence[str]) -> None:
    """ValueError when a donated leaf's device buffers are also another leaf's (the same Array passed twice, or
    a view of it): XLA would reuse a buffer that the call still reads, and crashes the process.

    The same global array is found by identity; distinct arrays can hold the same buffers only when one was
    made from the other's (``array.share`` records those, and a jax Array leaf may be anything), so only
    such leaves have their buffer addresses compared.
    """
    impls = [_impl_of(x) for x in leaves]
    owner: dict[int, int] = {}
    for i in donated:
        if impls[i] is not None:
            owner.setdefault(id(impls[i]), i)
    for j, impl in enumerate(impls):
        i = owner.get(id(impl), j) if impl is not None else j
        if i != j:
            raise _donated_twice(paths[i], paths[j], "the same array")
    maybe = [j for j, (x, impl) in enumerate(zip(leaves, impls)) if impl is not None and _may_share(x, impl)]
    if len(maybe) < 2 or not any(i in owner.values() for i in maybe):
        return
    buffer_owner: dict[tuple[Any, int], int] = {}
    for i in (i for i in donated if i in maybe):
        for key in _buffer_keys(impls[i]):
            buffer_owner.setdefault(key, i)
    for j in maybe:
        for key in _buffer_keys(impls[j]):
            i = buffer_owner.get(key, j)
            if i != j:
                raise _donated_twice(paths[i], paths[j], f"its buffer on {key[0]}")


def _impl_of(x: Any) -> Any:
    return x._impl if isinstance(x, Array) else x if isinstance(x, jax.Array) else None


def _may_share(x: Any, impl: Any) -> bool:
    return not isinstance(x, Array) or shared(impl)


def _donated_twice(donated: str, other: str, what: str) -> ValueError:
    return ValueError(
        f"Argument {donated} is donated, but {what} is also passed as {other}: a donated buffer is reused for the "
        "results, so it cannot be read by the same call. Pass a separate Array there, or do not donate this one."
    )


def _buffer_keys(impl: Any) -> list[tuple[Any, int]]:
    """(device, buffer address) of each live device buffer of a global jaxlib array."""
    if impl.is_deleted():
        return []
    out = []
    for b in _jaxlib.per_device_arrays(impl):
        if not b.is_deleted():
            (device,) = b.devices()
            out.append((device, b.unsafe_buffer_pointer()))
    return out
