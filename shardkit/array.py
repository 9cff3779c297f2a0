"""Arrays: jax's own Array (jaxlib's ``ArrayImpl``) holding the buffers, a shardkit Sharding saying where they lie.

There is one Array type in the process, jax's: ``shardkit.Array`` is ``jax.Array``. Every path here returns jax's
``ArrayImpl`` whose ``sharding`` is the shardkit Sharding that shardkit decided (kind, mesh, spec, memory kind);
jax's methods (indexing, ``addressable_shards``, ``np.asarray``, operators) read the layout through that
sharding's index maps, and jax's C++ dispatch takes the array as its own. The buffers are this process's
per-device pieces in the sharding's addressable device order: exactly what ``execute_sharded`` takes.

Data paths, all written against the sharding model's index maps:
- host -> devices (``device_put``, ``make_array_from_callback``): each distinct piece is copied once into
  64-byte-aligned memory that shardkit owns, then placed without a second copy (on CPU jaxlib aliases
  aligned host memory, so placing the caller's memory directly would let later writes to it change the
  Array);
- devices -> host (``device_get``): each distinct piece is read once into the result, replicas skipped;
- devices -> devices (resharding): a device keeps its buffer when it already holds its new piece, gets a
  device-to-device copy when another device holds that piece, and only pieces that exist nowhere whole are
  assembled, by a compiled program (``executor.reshard``) or on the host.

Pieces are handled as boxes, ``((start, stop), ...)`` per dimension. A PmapSharding index drops its mapped
dimension (``(i, slice(None))``); XLA has no rank-dropping sharding, so such an Array's device buffers keep
that dimension with size 1 (the equivalent tiled GSPMD layout) and a shard's ``data`` has that shape too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.core import ShapedArray

from shardkit import _jaxlib
from shardkit.caching import memoize
from shardkit.host_copy import Box, aligned_empty, fill, run
from shardkit.mesh import is_device
from shardkit.sharding import (
    Sharding,
    SingleDeviceSharding,
    as_sharding,
    canonical_shape,
    from_jax,
    is_sharding_like,
    physical_sharding,
)

Shape = tuple[int, ...]
Index = tuple[Any, ...]
Device = Any

Array = jax.Array  # the one Array type: jax's (``isinstance(x, shardkit.Array)`` holds for every jax Array)
Shard = _jaxlib.shard_class()  # what ``Array.addressable_shards`` holds: device, index, replica_id, data


@memoize()
def shaped_array(shape: Shape, dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(shape, dtype, weak_type=weak_type)


def new_array(
    shape: Shape, dtype: np.dtype, sharding: Sharding, buffers: Sequence[Any], weak_type: bool = False
) -> Array:
    """jax's Array over per-device buffers already in ``sharding``'s addressable device order (no checks, no
    copies): what every path here and the executor's reshard end in."""
    return _jaxlib.array_impl(shaped_array(shape, dtype, weak_type), sharding, buffers)


@memoize(maxsize=None)
def _on_device(device: Device) -> SingleDeviceSharding:
    return SingleDeviceSharding(device)


# -- boxes: where each local device's piece sits ---------------------------------------------------------


class _Layout(NamedTuple):
    devices: tuple[Device, ...]  # this process's devices, in the sharding's device order
    boxes: tuple[Box, ...]  # the piece each of them holds
    first: tuple[int, ...]  # position of the first device holding the same piece
    piece_shape: Shape  # shape of a device buffer (a PmapSharding's mapped dimension kept, size 1)

    @property
    def distinct(self) -> list[int]:
        return [p for p, f in enumerate(self.first) if p == f]


def _box(index: Index, shape: Shape) -> Box:
    out = []
    for entry, n in zip(index, shape):
        if isinstance(entry, slice):
            start, stop, _ = entry.indices(n)
            out.append((start, stop))
        else:
            out.append((int(entry), int(entry) + 1))
    return tuple(out)


def _full(shape: Shape) -> Box:
    return tuple((0, n) for n in shape)


def _short(shape: Shape, dtype: np.dtype) -> str:
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]"


@memoize()
def _layout(sharding: Sharding, shape: Shape) -> _Layout:
    index_map = sharding.addressable_devices_indices_map(shape)
    devices = tuple(index_map)
    boxes = tuple(_box(index_map[d], shape) for d in devices)
    seen: dict[Box, int] = {}
    first = tuple(seen.setdefault(b, p) for p, b in enumerate(boxes))
    piece = tuple(hi - lo for lo, hi in boxes[0]) if boxes else sharding.shard_shape(shape)
    return _Layout(devices, boxes, first, piece)


def piece_shape(sharding: Sharding, shape: Shape) -> Shape:
    """The shape of each device buffer of an Array of ``shape`` laid out as ``sharding``."""
    return _layout(sharding, shape).piece_shape


@memoize()
def _holds_every_piece(sharding: Sharding, shape: Shape) -> bool:
    """Whether this process's devices hold every distinct piece (so it can build the whole value)."""
    everywhere = {_box(i, shape) for i in sharding.devices_indices_map(shape).values()}
    return everywhere == set(_layout(sharding, shape).boxes)


def _sharding_of(x: Array) -> Sharding:
    """The shardkit Sharding of an Array: its own where shardkit placed it, else jax's converted."""
    s = x.sharding
    return s if isinstance(s, Sharding) else from_jax(s, x.ndim)


# -- host memory (shardkit.host_copy: aligned, recycled buffers and copies between boxes) -----------------


def _owned_pieces(layout: _Layout, dtype: np.dtype, sources_of: Callable[[int], Sequence]) -> list[np.ndarray]:
    """One aligned host piece that shardkit owns per local device, replicas included: a replica never shares
    memory with another device's piece (a donated buffer may be written in place, and its replicas must not
    change)."""
    pieces = [aligned_empty(layout.piece_shape, dtype) for _ in layout.devices]
    run([task for out, box, f in zip(pieces, layout.boxes, layout.first) for task in fill(out, box, sources_of(f))])
    return pieces


def _put(
    sharding: Sharding, shape: Shape, dtype: np.dtype, layout: _Layout, pieces: list[np.ndarray], weak: bool = False
) -> Array:
    """An Array from shardkit-owned host pieces, one per local device, placed without copying."""
    aval = shaped_array(shape, dtype, weak)
    if not pieces:  # none of the array lives on this process
        return _jaxlib.array_impl(aval, sharding, [])
    if sharding.is_fully_replicated and len(pieces) > 1:
        # batched_device_put places a fully replicated value once and lets every device share that memory.
        return _jaxlib.array_impl(aval, sharding, [_put_one(p, d) for p, d in zip(pieces, layout.devices)])
    return _jaxlib.put_host_pieces(aval, sharding, pieces, layout.devices)


def _put_one(piece: np.ndarray, device: Device) -> Array:
    single = _on_device(device)
    return _put(single, piece.shape, piece.dtype, _layout(single, piece.shape), [piece])


def _to_host(buffers: Sequence[Any]) -> list[np.ndarray]:
    for b in buffers:
        b.copy_to_host_async()  # starts every transfer before waiting for the first
    return [np.asarray(b) for b in buffers]


# -- devices -> host ---------------------------------------------------------------------------------------


def device_get(x: Any) -> Any:
    """Every Array in ``x`` (an Array, or a pytree of them) as a read-only numpy array, as ``jax.device_get`` gives
    it, by shardkit's gather: each distinct piece is read once, replicas skipped, into recycled aligned host
    memory on a thread pool (``np.asarray(x)`` is jax's own gather; ``benchmarks/bench_arrays.py`` compares the
    two). Other leaves come back as they are.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> x = device_put(np.arange(16.0).reshape(8, 2), NamedSharding(mesh, P("x", "y")))
        >>> device_get({"x": x, "n": 3})["x"][3]
        array([6., 7.], dtype=float32)
    """
    return jax.tree_util.tree_map(lambda v: _gather(v) if isinstance(v, jax.Array) else v, x)


def _gather(x: Array) -> np.ndarray:
    if isinstance(x, jax.core.Tracer):
        raise TypeError(f"device_get needs concrete Arrays, got the tracer {x} (inside a jax transformation).")
    if is_key(x.dtype):
        raise TypeError(f"device_get of a typed PRNG key array ({x.dtype}): jax.random.key_data(keys) gives its data.")
    check_alive(x)
    shape, sharding = x.shape, _sharding_of(x)
    layout = _layout(sharding, shape)
    if not layout.devices or (not sharding.is_fully_addressable and not _holds_every_piece(sharding, shape)):
        raise RuntimeError(
            "Fetching the value of an Array that spans non-addressable (non process local) devices is not "
            "possible. Use shardkit.multihost.process_allgather to gather the global array, or inspect "
            "this process's pieces with .addressable_shards."
        )
    buffers = _jaxlib.per_device_arrays(x)
    if sharding.is_fully_replicated:
        value = np.asarray(buffers[0]).reshape(shape)  # zero-copy on CPU
    else:
        distinct = layout.distinct
        pieces = _to_host([buffers[p] for p in distinct])
        value = aligned_empty(shape, x.dtype)  # recycled once no one holds this value any more
        run(fill(value, _full(shape), [(layout.boxes[p], v) for p, v in zip(distinct, pieces)]))
    value.flags.writeable = False
    return value


# -- placing host values -------------------------------------------------------------------------------------


def _host_value(x: Any) -> tuple[np.ndarray, np.dtype, bool]:
    """(numpy value, canonical dtype, weak_type) of a host value: Python scalars are weakly typed, as in jax."""
    weak = isinstance(x, (int, float, complex)) and not isinstance(x, (bool, np.generic))
    value = np.asarray(x)
    dtype = device_dtype(value.dtype)
    if weak and isinstance(x, int) and not np.can_cast(np.min_scalar_type(x), dtype):
        raise OverflowError(f"Python int {x} too large to convert to {dtype}.")
    return value, dtype, weak


def _as_sharding(sharding: Any, ndim: int) -> Sharding:
    if sharding is None:
        return _on_device(jax.devices()[0])
    if is_device(sharding):
        return _on_device(sharding)
    if is_sharding_like(sharding):
        return as_sharding(sharding, ndim, "device_put")
    raise TypeError(
        f"device_put needs a shardkit or jax Sharding, a PartitionSpec under `with mesh:`, a Device or None; "
        f"got {sharding!r}."
    )


def device_put(x: Any, sharding: Any = None) -> Any:
    """``x`` (an array, or a pytree of arrays) placed as ``sharding`` says: a Sharding (shardkit's, jax's, or a bare
    PartitionSpec under ``with mesh:``), a Device, None (the first device), or a pytree of those matching a
    prefix of ``x``'s tree, as ``jax.device_put`` takes them.

    Each leaf may be a numpy array or scalar, or a jax Array (resharded: buffers that already hold their piece
    are kept, others are copied device to device, and only pieces no device holds whole are assembled). Host
    data is copied, so writing to ``x`` afterwards never changes the Array. The result is jax's Array whose
    sharding is shardkit's.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> x = device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
        >>> [s.index for s in x.addressable_shards[:3]]
        [(slice(0, 2, None),), (slice(0, 2, None),), (slice(2, 4, None),)]
        >>> tree = device_put({"w": np.ones((8, 2)), "b": np.zeros(2)}, {"w": NamedSharding(mesh, P("x")), "b": None})
        >>> tree["w"].sharding.spec, tree["b"].sharding.device
        (P('x',), CpuDevice(id=0))
    """
    if isinstance(x, (jax.Array, np.ndarray, np.generic, int, float, complex)):
        return _put_leaf(x, sharding)
    leaves, tree = jax.tree_util.tree_flatten(x)
    try:
        targets = jax.tree.broadcast(sharding, x, is_leaf=lambda s: is_sharding_like(s) or is_device(s))
    except (ValueError, TypeError) as e:
        raise ValueError(f"device_put's shardings are not a prefix of the value's tree: {e}") from None
    flat_targets = jax.tree_util.tree_leaves(targets, is_leaf=lambda s: is_sharding_like(s) or is_device(s))
    return jax.tree_util.tree_unflatten(tree, [_put_leaf(v, s) for v, s in zip(leaves, flat_targets)])


def is_key(dtype: Any) -> bool:
    """Whether ``dtype`` is an extended dtype (a typed PRNG key's, ``key<fry>``): the value is a key array, which
    XLA holds as its key data (``jax.random.key_data``: the array's shape plus trailing dimensions, uint32)."""
    return jax.dtypes.issubdtype(dtype, jax.dtypes.extended)


def _put_leaf(x: Any, sharding: Any) -> Array:
    if isinstance(x, jax.Array) and is_key(x.dtype):
        return _put_keys(x, sharding)
    if isinstance(x, jax.Array):
        x = asarray(x)
        if sharding is None:
            return x
        return reshard(x, _as_sharding(sharding, x.ndim))
    return _from_host(x, sharding)


def _put_keys(keys: jax.Array, sharding: Any) -> jax.Array:
    """A typed PRNG key array placed as ``sharding`` says, as jax's key array (what ``jax.device_put`` returns):
    its key data is placed, with the data's extra trailing dimensions whole, and wrapped back without a copy."""
    data = jax.random.key_data(keys)
    if sharding is not None:
        target = _as_sharding(sharding, keys.ndim)
        sharding = physical_sharding(target, keys.ndim, data.ndim - keys.ndim)
    return _jaxlib.wrap_keys(_put_leaf(data, sharding), keys.dtype)


def _from_host(x: Any, sharding: Any) -> Array:
    value, dtype, weak = _host_value(x)
    sharding = _as_sharding(sharding, value.ndim)
    shape = value.shape
    layout = _layout(sharding, shape)
    full = _full(shape)
    pieces = _owned_pieces(layout, dtype, lambda pos: [(full, value)])
    return _put(sharding, shape, dtype, layout, pieces, weak)


class ArgumentTarget(NamedTuple):
    """Where a call's numpy argument goes on a one-device sharding, worked out once per signature so that
    ``put_argument`` does no more than it must on every call: jax's canonical dtype, the aval, the device, and jax's
    own sharding of it, which jaxlib reads in C++ where it asks a shardkit kind through Python (a call measured 1.8x
    ``jax.jit``'s with shardkit's sharding, 1.3x with jax's; only the call ever sees that Array)."""

    dtype: np.dtype
    aval: ShapedArray
    device: Device
    sharding: jax.sharding.SingleDeviceSharding


def argument_target(x: np.ndarray | np.generic, sharding: Sharding) -> ArgumentTarget:
    """The target of numpy values of ``x``'s signature (shape, canonical dtype) on the one-device ``sharding``."""
    (device,) = sharding.device_assignment
    dtype = device_dtype(x.dtype)
    target = jax.sharding.SingleDeviceSharding(device, memory_kind=sharding.memory_kind)
    return ArgumentTarget(dtype, shaped_array(np.shape(x), dtype, False), device, target)


def put_argument(x: np.ndarray | np.generic, target: ArgumentTarget) -> Array:
    """A numpy value of the signature ``target`` was made for, as one call's argument: in native byte order (a
    ``>f4`` array has ``float32``'s signature; it is converted, a copy) and copied by jaxlib as it places it. Only the
    call holds the Array, so it takes none of ``device_put``'s recycled memory (about a fifth of its cost)."""
    value = np.asarray(x, target.dtype)
    return _jaxlib.put_host_pieces(target.aval, target.sharding, [value], [target.device], copy=True)


# -- resharding ------------------------------------------------------------------------------------------


_device_reshard: list[Callable[[Array, Sharding], Array | None]] = []


def use_device_reshard(fn: Callable[[Array, Sharding], Array | None]) -> None:
    """Installs the reshard by a compiled program (``shardkit.executor.reshard``, which needs lowering and the
    executor, both above this module): ``fn(x, sharding)`` returns the resharded Array, or None to leave it
    to the paths here."""
    _device_reshard[:] = [fn]


def reshard(x: Array, sharding: Sharding) -> Array:
    """``x`` laid out as ``sharding``: kept buffers, device-to-device
    copies, and the pieces no device holds whole assembled by the installed device reshard (a compiled program)
    or, where it declines, on the host. Kept buffers are shared with ``x``, as jax shares them between an Array
    and one built from its pieces."""
    check_alive(x)
    if not isinstance(x.sharding, Sharding):  # placed by jax: the same buffers under shardkit's form of its sharding
        x = asarray(x)
    shape, dtype, source = x.shape, x.dtype, x.sharding
    if sharding == source:
        return x
    src, dst = _layout(source, shape), _layout(sharding, shape)
    buffers = _jaxlib.per_device_arrays(x)
    holders: dict[Box, list[int]] = {}
    for pos, box in enumerate(src.boxes):
        holders.setdefault(box, []).append(pos)
    out: list[Any] = [None] * len(dst.devices)
    copies: list[int] = []  # dst positions filled by a device-to-device copy
    assemble: list[int] = []  # dst positions whose piece no device holds whole
    for pos, (device, box) in enumerate(zip(dst.devices, dst.boxes)):
        candidates = holders.get(box)
        if candidates is None:
            assemble.append(pos)
            continue
        here = [p for p in candidates if src.devices[p] == device]
        if here:
            out[pos] = buffers[here[0]]
        else:
            out[pos] = buffers[candidates[0]]
            copies.append(pos)
    if assemble and _device_reshard:
        moved = _device_reshard[0](x, sharding)
        if moved is not None:
            return moved
    if assemble and not _holds_every_piece(source, shape):
        raise ValueError(
            f"Cannot reshard an Array of shape {shape} that spans other processes' devices from {source} "
            f"to {sharding}: the new pieces on devices {[dst.devices[p].id for p in assemble]} are not held "
            "whole by any local device."
        )
    if copies:
        moved = _jaxlib.copy_to_devices(
            [out[p] for p in copies], [dst.devices[p] for p in copies], [_on_device(dst.devices[p]) for p in copies]
        )
        for p, b in zip(copies, moved):
            out[p] = b
    if assemble:
        distinct = src.distinct
        sources = list(zip((src.boxes[p] for p in distinct), _to_host([buffers[p] for p in distinct])))
        if len(assemble) == len(dst.devices):
            pieces = _owned_pieces(dst, dtype, lambda pos: sources)
            return _put(sharding, shape, dtype, dst, pieces, x.weak_type)
        for p in assemble:
            piece = aligned_empty(dst.piece_shape, dtype)
            run(fill(piece, dst.boxes[p], sources))
            out[p] = _put_one(piece, dst.devices[p])
    return new_array(shape, dtype, sharding, out, x.weak_type)


def relabel(x: Array, shape: Shape, sharding: Sharding) -> Array:
    """This process's device buffers of ``x`` as an Array of another global ``shape`` and ``sharding`` that places
    the same pieces on the same local devices (a host-local view of a global Array, or the reverse): no copy."""
    return new_array(shape, x.dtype, sharding, _jaxlib.per_device_arrays(x), x.weak_type)


# -- jax interop -----------------------------------------------------------------------------------------


def asarray(x: Any) -> Array:
    """``x`` as an Array whose sharding is shardkit's: an Array placed by shardkit is returned as it is; another
    jax Array becomes one over the same device buffers (no copy; both then hold them), committed where it is;
    anything else (a list too, as ``jnp.asarray`` reads it) is placed on the first device as one array.

    Examples:
        >>> asarray(jax.numpy.arange(4)).sharding
        SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        if is_key(x.dtype):
            raise TypeError(
                f"A typed PRNG key array ({x.dtype}) stays jax's key array: shardkit's arrays hold numbers. sk.jit "
                "and sk.device_put take key arrays as they are; jax.random.key_data(keys) gives their data."
            )
        if isinstance(x.sharding, Sharding) and x.committed:
            if x.is_deleted():
                raise RuntimeError(f"Array has been deleted with shape={_short(x.shape, x.dtype)}.")
            return x
        check_alive(x)  # its buffers are read
        return new_array(x.shape, x.dtype, _sharding_of(x), _jaxlib.per_device_arrays(x), x.weak_type)
    return _from_host(x, None)


def check_alive(x: Array) -> None:
    """RuntimeError for an Array deleted whole (jax's message) or with a piece freed through a shard's data,
    before shardkit's paths read its buffers."""
    if x.is_deleted():
        raise RuntimeError(f"Array has been deleted with shape={_short(x.shape, x.dtype)}.")
    dead = deleted_piece(x)
    if dead is not None:
        raise RuntimeError(f"Array of shape={_short(x.shape, x.dtype)} {dead}")


def deleted_piece(x: Array) -> str | None:
    """What is wrong with ``x`` when one of its pieces was freed while ``x`` itself is not deleted (jax's
    ``is_deleted`` reads the first buffer only, and XLA meets the freed one: jaxlib 0.10 crashes, 0.12 raises and
    leaves the devices hung), as the end of a sentence; None when every piece lives."""
    for b in _jaxlib.per_device_arrays(x):
        if b.is_deleted():
            (device,) = b.sharding.device_set  # devices() refuses a deleted array
            return (
                f"has a deleted piece: its buffer on {device} was freed (deleting one of an Array's addressable "
                "shards' data frees that piece of the Array)."
            )
    return None


def sharding_mismatch(path: str, got: Any, expected: Sharding) -> ValueError:
    """The one error for an Array argument whose sharding is not the one a computation takes (at lowering,
    against ``in_shardings``; at a call, against what XLA compiled): shardkit never reshards silently."""
    return ValueError(
        f"Argument {path} is sharded as {got} over devices {[d.id for d in got._device_assignment]}, but the "
        f"computation takes {expected} over devices {[d.id for d in expected.device_assignment]}. Move it with "
        "sk.device_put(x, sharding) first."
    )


# -- constructor checks ---------------------------------------------------------------------------------


def _single_device(a: Any, i: int) -> tuple[Any, Device]:
    if not isinstance(a, jax.Array) or isinstance(a, jax.core.Tracer):
        raise TypeError(f"Per-device array {i} must be a jax Array on one device, got {type(a).__name__}.")
    if a.is_deleted():
        raise ValueError(f"Per-device array {i} has been deleted.")
    devices = a.devices()
    if len(devices) != 1:
        raise ValueError(
            f"Per-device array {i} must live on one device, but it spans {len(devices)}: "
            f"{sorted(d.id for d in devices)}."
        )
    return a, next(iter(devices))


def _checked(shape: Shape, sharding: Sharding, arrays: Sequence[Any], dtype: Any) -> Array:
    """Validates per-device arrays against the sharding (jax's ``ArrayImpl`` constructor checks, with shardkit's
    messages) and builds the Array over them."""
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding must be a shardkit Sharding, got {type(sharding).__name__}.")
    if not isinstance(arrays, (Sequence, np.ndarray)):
        raise TypeError(f"arrays must be a sequence of single-device arrays, got {arrays!r}.")
    arrays = [_single_device(a, i) for i, a in enumerate(arrays)]
    dtype = _requested_dtype(dtype, arrays[0][0].dtype if arrays else None, "make_array_from_single_device_arrays")
    for a, device in arrays:
        if a.dtype != dtype:
            raise ValueError(
                "Input buffers to `Array` must have matching dtypes. "
                f"Got {a.dtype}, expected {dtype} for the array on device {device}."
            )
    layout = _layout(sharding, shape)
    if len(arrays) != len(layout.devices):
        raise ValueError(
            f"Expected {len(layout.devices)} per-device arrays (this is how many devices are addressable by the "
            f"sharding), but got {len(arrays)}."
        )
    by_device = {device: a for a, device in arrays}
    if len(by_device) != len(arrays):
        repeated = sorted({d.id for _, d in arrays if sum(d == e for _, e in arrays) > 1})
        raise ValueError(f"Per-device arrays must be on distinct devices, but devices {repeated} hold more than one.")
    expected_devices, given_devices = set(layout.devices), set(by_device)
    if expected_devices != given_devices:
        msg = "Addressable devices and per-device arrays devices do not match."
        if expected_devices - given_devices:
            missing = sorted(d.id for d in expected_devices - given_devices)
            msg += f" Sharding contains devices {missing} that are not present in per-device arrays."
        if given_devices - expected_devices:
            extra = sorted(d.id for d in given_devices - expected_devices)
            msg += f" Per-device arrays contain devices {extra} that are not present in the sharding."
        raise ValueError(msg)
    expected = sharding.shard_shape(shape)
    for a, device in arrays:
        if a.shape != expected:
            raise ValueError(
                f"Expected shard shape {expected} doesn't match the single device array shape {a.shape} on "
                f"device {device}. Shape of Array is {_short(shape, dtype)} with sharding {sharding}."
            )
    ordered = [by_device[d] for d in layout.devices]
    if expected != layout.piece_shape:  # PmapSharding: buffers keep the mapped dimension
        pieces = [aligned_empty(layout.piece_shape, dtype) for _ in ordered]
        for piece, host in zip(pieces, _to_host(ordered)):
            np.copyto(piece, host.reshape(layout.piece_shape))
        return _put(sharding, shape, dtype, layout, pieces)
    return new_array(shape, dtype, sharding, ordered)  # shares the caller's buffers, as jax's constructor does


# -- constructors --------------------------------------------------------------------------------------


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *, dtype: Any = None
) -> Array:
    """An Array from one single-device array per addressable device of ``sharding`` (no copies: the Array and the
    single-device arrays then hold the same buffers, as with jax's function of the same name).

    ``shape`` is the global shape; it double-checks what ``sharding`` and the arrays' shapes imply. ``dtype``
    must match the arrays' (it is required only where this process holds none of the array).

    Examples:
        >>> mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
        >>> s = NamedSharding(mesh, P("x", "y"))
        >>> data = np.arange(64).reshape(8, 8)
        >>> arrays = [jax.device_put(data[i], d) for d, i in s.addressable_devices_indices_map((8, 8)).items()]
        >>> make_array_from_single_device_arrays((8, 8), s, arrays).shape
        (8, 8)
    """
    return _checked(canonical_shape(shape), sharding, arrays, dtype)


def _requested_dtype(dtype: Any, found: np.dtype | None, fname: str) -> np.dtype:
    """The Array's dtype: the one requested, which must match the pieces' (``found``), else theirs."""
    if dtype is None:
        if found is None:
            raise ValueError(
                f"If the Array has no addressable shards, `dtype` must be provided via the `dtype` argument to "
                f"`shardkit.{fname}`."
            )
        return found
    dtype = device_dtype(np.dtype(dtype))
    if found is not None and found != dtype:
        raise ValueError(
            f"If `dtype` is provided to `shardkit.{fname}`, it must match the dtype of the addressable shards. "
            f"Got dtype={dtype} and shard dtype={found}."
        )
    return dtype


@memoize(maxsize=None)
def device_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a host value of ``dtype`` has on devices: jax's canonical one, in native byte order. Every
    path that takes host data asks this one function (``device_put``, jit arguments, their lowering).

    TypeError for what devices cannot hold (objects, strings, dates, records). A non-native byte order
    (``>i4`` on a little-endian host) is converted, as numpy's ``astype`` does (jax 0.10 refuses it).
    """
    if dtype.kind == "O":
        raise TypeError("Arrays of Python objects cannot be placed on devices.")
    native = dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype
    canonical = np.dtype(jax.dtypes.canonicalize_dtype(native))
    if not jax.numpy.isdtype(canonical, ("bool", "numeric")):
        raise TypeError(f"Arrays of dtype {dtype} cannot be placed on devices: only bool and numeric dtypes can.")
    return canonical


def make_array_from_callback(
    shape: Sequence[int], sharding: Sharding, data_callback: Callable[[Index], Any], dtype: Any = None
) -> Array:
    """An Array whose pieces come from ``data_callback(index)``, called once per distinct local piece.

    The callback may return anything numpy can read; its data is copied, so the caller may reuse it.
    ``dtype`` must match the callback's values (it is required only where this process holds none of the array).

    Examples:
        >>> data = np.arange(64).reshape(8, 8)
        >>> mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
        >>> arr = make_array_from_callback((8, 8), NamedSharding(mesh, P("x", "y")), lambda i: data[i])
        >>> arr.addressable_data(0).shape
        (4, 2)
    """
    shape = canonical_shape(shape)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding must be a shardkit Sharding, got {type(sharding).__name__}.")
    if not callable(data_callback):
        raise TypeError(f"data_callback must be a function of an index, got {data_callback!r}.")
    layout = _layout(sharding, shape)
    index_map = sharding.addressable_devices_indices_map(shape)
    expected = sharding.shard_shape(shape)
    values: dict[int, np.ndarray] = {}
    for pos in layout.distinct:
        value = np.asarray(data_callback(index_map[layout.devices[pos]]))
        this = device_dtype(value.dtype)
        if not values:
            dtype = _requested_dtype(dtype, this, "make_array_from_callback")
        if this != dtype:
            raise ValueError(
                f"Input buffers to `Array` must have matching dtypes. Got {this}, expected {dtype} for the "
                f"piece of device {layout.devices[pos]}."
            )
        if value.shape != expected:
            raise ValueError(
                f"Expected shard shape {expected} doesn't match the single device array shape {value.shape} for "
                f"device {layout.devices[pos]}. Shape of Array is {_short(shape, dtype)} with sharding {sharding}."
            )
        values[pos] = value.reshape(layout.piece_shape)
    if not values:
        dtype = _requested_dtype(dtype, None, "make_array_from_callback")
    pieces = _owned_pieces(layout, dtype, lambda pos: [(layout.boxes[pos], values[pos])])
    return _put(sharding, shape, dtype, layout, pieces)


def make_array_from_process_local_data(
    sharding: Sharding, local_data: Any, global_shape: Sequence[int] | None = None
) -> Array:
    """An Array from the data this process holds, placed where ``sharding`` wants it.

    Each dimension of ``local_data`` either equals the global one, or is the span of the indices this
    process's devices hold along it (then the pieces are packed in index order). With ``global_shape=None``
    the global shape is inferred from how many distinct slices the whole sharding has per dimension.

    Examples:
        >>> mesh = make_mesh((2, 4), ("x", "y"))
        >>> s = NamedSharding(mesh, P(("x", "y")))
        >>> local = np.arange(16 * 32).reshape(16, 32)
        >>> make_array_from_process_local_data(s, local, (16, 32)).addressable_data(0).shape
        (2, 32)
    """
    if not isinstance(sharding, Sharding):
        raise TypeError(f"sharding must be a shardkit Sharding, got {sharding!r}.")
    local_data = np.asarray(local_data)
    local_shape = local_data.shape
    if global_shape is None:
        global_shape = _local_to_global_shape(sharding, local_shape)
    global_shape = canonical_shape(global_shape)
    if len(global_shape) != len(local_shape):
        raise ValueError(f"global_shape {global_shape} and local data shape {local_shape} differ in rank.")
    shard_shape = _layout(sharding, global_shape).piece_shape  # a pmap's mapped dimension kept, of size 1
    starts = _local_starts(sharding, global_shape)
    full_dim = []
    for i, (data_dim, global_dim) in enumerate(zip(local_shape, global_shape)):
        full_dim.append(data_dim == global_dim)
        if data_dim != global_dim and data_dim != len(starts[i]) * shard_shape[i]:
            raise ValueError(
                "Invalid host data, each dimension should match either global or process shape. In dimension "
                f"{i}, the process data has {data_dim} elements. Process addresses {len(starts[i]) * shard_shape[i]} "
                f"elements and global_shape={global_shape}."
            )

    def local_piece(index: Index) -> np.ndarray:
        at: list[slice | int] = []
        for i, (entry, (lo, hi)) in enumerate(zip(index, _box(index, global_shape))):
            if not full_dim[i]:
                lo = starts[i].index(lo) * shard_shape[i]
                hi = lo + shard_shape[i]
            at.append(slice(lo, hi) if isinstance(entry, slice) else lo)  # an int drops a mapped dimension
        return local_data[tuple(at)]

    return make_array_from_callback(global_shape, sharding, local_piece)


def _local_starts(sharding: Sharding, shape: Shape) -> list[list[int]]:
    """Per dimension, the sorted distinct starts of the pieces this process holds."""
    boxes = _layout(sharding, shape).boxes
    return [sorted({b[i][0] for b in boxes}) for i in range(len(shape))]


def _local_to_global_shape(sharding: Sharding, local_shape: Shape) -> Shape:
    """Global size per dimension = local size * (distinct slices overall / distinct slices held here)."""
    # Pieces have the same size, so the counts can be taken on any shape divisible by the tiling; a mapped
    # dimension (pmap's) has exactly one index per device.
    mapped = sharding.mapped_dims
    probe = tuple(sharding.num_devices * (1 if d in mapped else max(n, 1)) for d, n in enumerate(local_shape))
    everywhere = [{_box(i, probe)[d] for i in sharding.devices_indices_map(probe).values()} for d in range(len(probe))]
    here = _local_starts(sharding, probe)
    out = []
    for d, n in enumerate(local_shape):
        total, held = len(everywhere[d]), len(here[d])
        if (n * total) % held:
            raise ValueError(
                f"Cannot infer global_shape: dimension {d} of the local data ({n}) does not split over {held} "
                "local slices. Pass global_shape."
            )
        out.append(n * total // held)
    return tuple(out)
