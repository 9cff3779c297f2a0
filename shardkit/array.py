"""Array: one logical array laid out over devices, as per-device jaxlib buffers plus a shardkit Sharding.

An ``Array`` keeps a global jaxlib ``xc.ArrayImpl`` (``_impl``) whose sharding is ``jaxlib_sharding(sharding,
ndim)`` and whose buffers are this process's per-device pieces in the sharding's addressable device order:
exactly what ``execute_sharded`` takes, so a compiled call rebuilds nothing. Other processes' pieces are
never held; ``global_shards`` lists them with ``data=None``.

Data paths, all written against the sharding model's index maps:
- host -> devices (``device_put``, ``make_array_from_callback``): each distinct piece is copied once into
  64-byte-aligned memory that shardkit owns, then placed without a second copy (on CPU jaxlib aliases
  aligned host memory, so placing the caller's memory directly would let later writes to it change the
  Array);
- devices -> host (``np.asarray``): each distinct piece is read once into the result, replicas skipped;
- devices -> devices (resharding): a device keeps its buffer when it already holds its new piece, gets a
  device-to-device copy when another device holds that piece, and only pieces that exist nowhere whole are
  assembled on the host from the pieces that overlap them.

Pieces are handled as boxes, ``((start, stop), ...)`` per dimension. A PmapSharding index drops its mapped
dimension (``(i, slice(None))``); XLA has no rank-dropping sharding, so such an Array's device buffers keep
that dimension with size 1 (the equivalent tiled GSPMD layout) and ``Shard.data`` has that shape too.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Callable, Iterator, Sequence
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

# -- the jaxlib side of a sharding ----------------------------------------------------------------------


@memoize()
def jaxlib_sharding(sharding: Sharding, ndim: int) -> _jaxlib.JaxlibSharding:
    """The jaxlib sharding an Array of rank ``ndim`` hands to XLA: the HLO form over the device assignment.

    Every kind maps the same way, PmapSharding included (its HLO tiles the mapped dimension, so its device
    buffers keep that dimension with size 1).
    """
    return _jaxlib.gspmd_sharding(sharding.device_assignment, sharding.to_hlo(ndim), sharding.memory_kind)


@memoize()
def shaped_array(shape: Shape, dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(shape, dtype, weak_type=weak_type)


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


@memoize()
def _holds_every_piece(sharding: Sharding, shape: Shape) -> bool:
    """Whether this process's devices hold every distinct piece (so it can build the whole value)."""
    everywhere = {_box(i, shape) for i in sharding.devices_indices_map(shape).values()}
    return everywhere == set(_layout(sharding, shape).boxes)


# -- host memory (shardkit.host_copy: aligned, recycled buffers and copies between boxes) -----------------


def _owned_pieces(layout: _Layout, dtype: np.dtype, sources_of: Callable[[int], Sequence]) -> list[np.ndarray]:
    """One aligned host piece that shardkit owns per local device, replicas included: a replica never shares
    memory with another device's piece (a donated buffer may be written in place, and its replicas must not
    change)."""
    pieces = [aligned_empty(layout.piece_shape, dtype) for _ in layout.devices]
    run([task for out, box, f in zip(pieces, layout.boxes, layout.first) for task in fill(out, box, sources_of(f))])
    return pieces


def _put(sharding: Sharding, shape: Shape, dtype: np.dtype, layout: _Layout, pieces: list[np.ndarray]) -> Any:
    """A global jaxlib array from shardkit-owned host pieces, one per local device, placed without copying."""
    aval, target = shaped_array(shape, dtype, False), jaxlib_sharding(sharding, len(shape))
    if not pieces:  # none of the array lives on this process
        return _jaxlib.array_impl(aval, target, [])
    if sharding.is_fully_replicated and len(pieces) > 1:
        # batched_device_put places a fully replicated value once and lets every device share that memory.
        return _jaxlib.array_impl(aval, target, [_put_one(p, d) for p, d in zip(pieces, layout.devices)])
    return _jaxlib.put_host_pieces(aval, target, pieces, layout.devices)


def _put_one(piece: np.ndarray, device: Device) -> Any:
    single = _on_device(device)
    return _put(single, piece.shape, piece.dtype, _layout(single, piece.shape), [piece])


def _to_host(buffers: Sequence[Any]) -> list[np.ndarray]:
    for b in buffers:
        b.copy_to_host_async()  # starts every transfer before waiting for the first
    return [np.asarray(b) for b in buffers]


# -- Shard -------------------------------------------------------------------------------------------------


class Shard:
    """One piece of an Array: the device holding it, its index into the global array, and its data.

    ``replica_id`` numbers the copies of one piece (0 for the first device in device order holding it);
    ``data`` is a single-device ``Array``, or None for another process's device.
    """

    __slots__ = ("_global_shape", "_sharding", "data", "device")

    def __init__(self, device: Device, sharding: Sharding, global_shape: Shape, data: Array | None = None):
        self.device = device
        self.data = data
        self._sharding = sharding
        self._global_shape = global_shape

    @property
    def index(self) -> Index:
        return self._sharding.devices_indices_map(self._global_shape)[self.device]

    @property
    def replica_id(self) -> int:
        return self._sharding.replica_ids(self._global_shape)[self.device]

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, data={self.data})"


# -- Array -------------------------------------------------------------------------------------------------


class Array(jax.Array):
    """A global array sharded over devices: a ``jax.Array`` whose sharding is shardkit's.

    jax takes it as one of its own arrays (a pytree leaf, an argument of ``jax.jit`` and ``jnp`` functions, a
    value for ``jax.typeof``), and its operators and methods are a jax Array's, computed on the devices.

    Construct from per-device arrays (the checks below), or with ``device_put``,
    ``make_array_from_callback``, ``make_array_from_single_device_arrays`` or
    ``make_array_from_process_local_data``.

    Args:
        shape: the global shape.
        sharding: how the pieces are laid out.
        arrays: one single-device array (shardkit or jax) per addressable device of ``sharding``, in any order.
        dtype: the expected dtype; by default that of the first array.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> x = device_put(np.arange(16.0).reshape(8, 2), NamedSharding(mesh, P("x", "y")))
        >>> x.addressable_shards[1].index, x.addressable_data(1).shape
        ((slice(0, 2, None), slice(1, 2, None)), (2, 1))
    """

    __slots__ = ("_impl", "_npy", "_sharding", "_shards", "_view", "_weak_type")
    __hash__ = None  # type: ignore[assignment]  # mutable via delete(), like jax.Array

    def __init__(self, shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *, dtype: Any = None):
        init(self, *_checked(canonical_shape(shape), sharding, arrays, dtype))

    # -- what the array is ----------------------------------------------------------------------------

    @property
    def shape(self) -> Shape:
        return self._impl.shape

    @property
    def dtype(self) -> np.dtype:
        return self._impl.dtype

    @property
    def ndim(self) -> int:
        return len(self._impl.shape)

    @property
    def size(self) -> int:
        return math.prod(self._impl.shape)

    @property
    def sharding(self) -> Sharding:
        return self._sharding

    @property
    def device(self) -> Device | Sharding:
        """The one device of a single-device array, else its sharding (as a jax Array's ``device``)."""
        self._check_if_deleted()
        return self._sharding.device_assignment[0] if self._sharding.num_devices == 1 else self._sharding

    @property
    def committed(self) -> bool:
        """Always True: a shardkit Array stays where it was placed (jax moves only uncommitted arrays)."""
        return True

    @property
    def aval(self) -> ShapedArray:
        """jax's abstract value of the array (shape, dtype, weak type)."""
        return shaped_array(self._impl.shape, self._impl.dtype, self._weak_type)

    @property
    def weak_type(self) -> bool:
        return self._weak_type

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        return self._sharding.is_fully_addressable

    # -- lifetime ---------------------------------------------------------------------------------------

    def delete(self) -> None:
        """Frees the device buffers now; every later use of the array raises RuntimeError."""
        self._impl.delete()
        self._npy = None
        self._shards = None
        self._view = None

    def is_deleted(self) -> bool:
        """Whether the array, or any of this process's pieces of it, has been freed. Deleting one piece
        (``x.addressable_data(i).delete()``) frees that piece of ``x`` too; jax 0.10 still reports such an array
        as not deleted, and crashes the process when it is used."""
        return not alive(self._impl)

    def _check_if_deleted(self) -> None:
        if alive(self._impl):
            return
        if self._impl.is_deleted():
            raise RuntimeError(f"Array has been deleted with shape={_short(self.shape, self.dtype)}.")
        raise RuntimeError(
            f"Array of shape={_short(self.shape, self.dtype)} has a deleted piece: its buffer on "
            f"{deleted_piece(self)} was freed (deleting one of its addressable shards' data frees that piece of "
            "the Array)."
        )

    def block_until_ready(self) -> Array:
        self._check_if_deleted()
        self._impl.block_until_ready()
        return self

    def copy_to_host_async(self) -> None:
        """Starts copying each distinct piece to the host, so a later ``np.asarray`` waits less."""
        self._check_if_deleted()
        buffers = _jaxlib.per_device_arrays(self._impl)
        for p in _layout(self._sharding, self.shape).distinct:
            buffers[p].copy_to_host_async()

    def on_device_size_in_bytes(self) -> int:
        """Bytes of device memory over all devices (replicas included)."""
        self._check_if_deleted()
        return _jaxlib.per_device_arrays(self._impl)[0].on_device_size_in_bytes() * self._sharding.num_devices

    # -- shards -----------------------------------------------------------------------------------------

    def devices(self) -> frozenset[Device]:
        self._check_if_deleted()
        return self._sharding.device_set

    @property
    def addressable_shards(self) -> list[Shard]:
        """This process's shards, in the sharding's device order."""
        self._check_if_deleted()
        if self._shards is None:
            shape = self.shape
            self._shards = [
                Shard(d, self._sharding, shape, wrap(b, _on_device(d), weak_type=self._weak_type))
                for d, b in zip(_layout(self._sharding, shape).devices, _jaxlib.per_device_arrays(self._impl))
            ]
            share(self._impl)
        return self._shards

    @property
    def global_shards(self) -> list[Shard]:
        """Every device's shard in device order; ``data`` is None on other processes' devices."""
        local = {s.device: s for s in self.addressable_shards}
        if len(local) == self._sharding.num_devices:
            return list(self.addressable_shards)
        return [local.get(d) or Shard(d, self._sharding, self.shape) for d in self._sharding.device_assignment]

    def addressable_data(self, index: int) -> Array:
        """The single-device Array on this process's ``index``-th device."""
        return self.addressable_shards[index].data

    # -- host values --------------------------------------------------------------------------------------

    @property
    def _value(self) -> np.ndarray:
        """The whole value on the host, read-only and cached; each distinct piece is read once."""
        self._check_if_deleted()
        if self._npy is not None:
            return self._npy
        shape, sharding = self.shape, self._sharding
        layout = _layout(sharding, shape)
        buffers = _jaxlib.per_device_arrays(self._impl)
        if not layout.devices or (not sharding.is_fully_addressable and not _holds_every_piece(sharding, shape)):
            raise RuntimeError(
                "Fetching the value of an Array that spans non-addressable (non process local) devices is not "
                "possible. Use shardkit.multihost.process_allgather to gather the global array, or inspect "
                "this process's pieces with .addressable_shards."
            )
        if sharding.is_fully_replicated:
            value = np.asarray(buffers[0]).reshape(shape)  # zero-copy on CPU
        else:
            distinct = layout.distinct
            pieces = _to_host([buffers[p] for p in distinct])
            value = aligned_empty(shape, self.dtype)  # recycled once no one holds this value any more
            run(fill(value, _full(shape), [(layout.boxes[p], v) for p, v in zip(distinct, pieces)]))
        value.flags.writeable = False
        self._npy = value
        return value

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.asarray(self._value, dtype=dtype, **({} if copy is None else {"copy": copy}))

    def tolist(self) -> Any:
        return self._value.tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return self._value.tobytes(order)

    def __repr__(self) -> str:
        dtype_str = f"dtype={self.dtype.name}" + (", weak_type=True" if self._weak_type else "")
        if self.is_deleted():
            return f"Array(shape={self.shape}, {dtype_str}, deleted=True)"
        if not (self.is_fully_addressable or self.is_fully_replicated) or not self._sharding.addressable_devices:
            return f"Array(shape={self.shape}, {dtype_str})"
        prefix = "Array("
        width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ", max_line_width=width)
        last_line = len(body) - body.rfind("\n") + 1
        sep = " " * len(prefix) if last_line + len(dtype_str) + 2 > width else " "
        return f"{prefix}{body},{sep}{dtype_str})"

    def __str__(self) -> str:
        return str(self._value)

    def __format__(self, format_spec: str) -> str:
        value = self._value
        return format(value if value.ndim else value[()], format_spec)

    # -- Python protocols (numpy's semantics and errors) ---------------------------------------------

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator[Array]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self) -> bool:
        return bool(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        return operator.index(self._value)

    def __getitem__(self, idx: Any) -> Array:
        """A piece of the array. An index that selects exactly one stored piece returns that device's buffer
        (no copy, as jax does); any other index is jax's indexing, on the devices."""
        self._check_if_deleted()
        box = _as_box(idx, self.shape)
        if box is not None:
            layout = _layout(self._sharding, self.shape)
            if box == _full(self.shape):
                return self
            for pos, b in enumerate(layout.boxes):
                if b == box:
                    return self.addressable_data(pos)
        return _as_shardkit(self.to_jax()[idx])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle, (np.array(self._value), self._sharding, self._weak_type))

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._single_buffer("__dlpack__").__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[Any, int]:
        return self._single_buffer("__dlpack_device__").__dlpack_device__()

    def unsafe_buffer_pointer(self) -> int:
        """The device address of a single-device array's buffer."""
        return self._single_buffer("unsafe_buffer_pointer()", ValueError).unsafe_buffer_pointer()

    def _single_buffer(self, what: str, error: type[Exception] = BufferError) -> Any:
        self._check_if_deleted()
        if self._sharding.num_devices != 1:
            raise error(
                f"{what} can only pack an array on a single device, but this Array's sharding spans "
                f"{self._sharding.num_devices} devices. Use .addressable_data(i) for one device's piece."
            )
        return _jaxlib.per_device_arrays(self._impl)[0]

    # -- interop --------------------------------------------------------------------------------------

    def __jax_array__(self) -> jax.Array:
        """What ``jnp`` functions that read array-likes before tracing take: the zero-copy jax view."""
        return self.to_jax()

    def to_jax(self) -> jax.Array:
        """The same device buffers as a ``jax.Array`` (no copy): deleting either deletes both. Made once per
        Array: jax asks for it on every call of a ``jax.jit`` function the Array goes into."""
        self._check_if_deleted()
        if self._view is None:
            target = self._sharding.to_jax(self.ndim)
            share(self._impl)
            self._view = _jaxlib.array_impl(
                shaped_array(self.shape, self.dtype, self._weak_type), target, _jaxlib.per_device_arrays(self._impl)
            )
        return self._view


# -- device buffers held by more than one array ------------------------------------------------------------

# The global jaxlib arrays (by id) whose device buffers another array may hold too: one whose per-device arrays
# were handed out (addressable shards, to_jax) or came from the caller (per-device arrays, a jax Array), and
# both sides of a reshard or relabel that kept buffers. Deleting one holder frees those pieces of the others,
# so only these can lose a piece while the first buffer lives on (jaxlib's is_deleted looks at that one);
# every other array needs no per-buffer check, which matters: a fresh result's per-device arrays cost ~50 us
# to read the first time.
_SHARING_BUFFERS: dict[int, Any] = {}


def share(*impls: Any) -> None:
    """Records that another array may hold the device buffers of each of ``impls``."""
    for impl in impls:
        key = id(impl)
        if key not in _SHARING_BUFFERS:

            def forget(ref: weakref.ref, key: int = key) -> None:
                if _SHARING_BUFFERS.get(key) is ref:  # not a newer array that reuses the id
                    del _SHARING_BUFFERS[key]

            _SHARING_BUFFERS[key] = weakref.ref(impl, forget)


def shared(impl: Any) -> bool:
    """Whether another array may hold some of ``impl``'s device buffers (see ``share``)."""
    return id(impl) in _SHARING_BUFFERS


def alive(impl: Any) -> bool:
    """Whether a global jaxlib array and every one of its device buffers is still allocated (the dispatch path
    asks before each call: XLA crashes the process on a freed buffer). A dictionary lookup unless the
    buffers are shared; then about 0.6 us for 8 local buffers."""
    if impl.is_deleted():
        return False
    if id(impl) not in _SHARING_BUFFERS:
        return True
    buffers = _jaxlib.per_device_arrays(impl)
    return not buffers or not any(map(type(buffers[0]).is_deleted, buffers))  # unbound: half a methodcaller's cost


def deleted_piece(x: Array) -> Device | None:
    """The local device whose piece of ``x`` was freed while the rest of ``x`` lives on, or None."""
    for device, buffer in zip(_layout(x._sharding, x.shape).devices, _jaxlib.per_device_arrays(x._impl)):
        if buffer.is_deleted():
            return device
    return None


def init(arr: Array, impl: Any, sharding: Sharding, weak_type: bool) -> None:
    arr._impl = impl
    arr._sharding = sharding
    arr._weak_type = weak_type
    arr._npy = None
    arr._shards = None
    arr._view = None


def relabel(x: Array, shape: Shape, sharding: Sharding) -> Array:
    """This process's device buffers of ``x`` as an Array of another global ``shape`` and ``sharding`` that places
    the same pieces on the same local devices (a host-local view of a global Array, or the reverse): no copy."""
    impl = _jaxlib.array_impl(
        shaped_array(shape, x.dtype, x.weak_type), jaxlib_sharding(sharding, x.ndim), _jaxlib.per_device_arrays(x._impl)
    )
    share(x._impl, impl)
    return wrap(impl, sharding, weak_type=x.weak_type)


def sharding_mismatch(path: str, got: Sharding, expected: Sharding) -> ValueError:
    """The one error for an Array argument whose sharding is not the one a computation takes (at lowering,
    against ``in_shardings``; at a call, against what XLA compiled): shardkit never reshards silently."""
    return ValueError(
        f"Argument {path} is sharded as {got} over devices {[d.id for d in got.device_assignment]}, but the "
        f"computation takes {expected} over devices {[d.id for d in expected.device_assignment]}. Move it with "
        "sk.device_put(x, sharding) first."
    )


def wrap(impl: Any, sharding: Sharding, *, weak_type: bool = False) -> Array:
    """An Array over a global jaxlib array that already matches ``sharding``: no checks, no copies.

    The executor's result handlers call this on every output, so it only fills the slots.
    """
    arr = Array.__new__(Array)
    init(arr, impl, sharding, weak_type)
    return arr


def _unpickle(value: np.ndarray, sharding: Sharding, weak_type: bool) -> Array:
    return _from_host(value, sharding, weak_type)


def _as_box(idx: Any, shape: Shape) -> Box | None:
    """The box an index of plain slices selects, or None when it drops, strides or fancy-indexes anything."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    if len(idx) > len(shape) or not all(isinstance(s, slice) for s in idx):
        return None
    if any(s.step not in (None, 1) for s in idx):
        return None
    return _box(idx + (slice(None),) * (len(shape) - len(idx)), shape)


# -- constructor checks ---------------------------------------------------------------------------------


def _single_device(a: Any, i: int) -> tuple[Any, Device]:
    if isinstance(a, Array):
        a = a._impl
    if not isinstance(a, jax.Array):
        raise TypeError(f"Per-device array {i} must be a shardkit or jax Array on one device, got {type(a).__name__}.")
    if a.is_deleted():
        raise ValueError(f"Per-device array {i} has been deleted.")
    devices = a.devices()
    if len(devices) != 1:
        raise ValueError(
            f"Per-device array {i} must live on one device, but it spans {len(devices)}: "
            f"{sorted(d.id for d in devices)}."
        )
    return a, next(iter(devices))


def _checked(shape: Shape, sharding: Sharding, arrays: Sequence[Any], dtype: Any) -> tuple[Any, Sharding, bool]:
    """Validates per-device arrays against the sharding (jax's ``ArrayImpl`` constructor checks) and builds the impl."""
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
        return _put(sharding, shape, dtype, layout, pieces), sharding, False
    impl = _jaxlib.array_impl(shaped_array(shape, dtype, False), jaxlib_sharding(sharding, len(shape)), ordered)
    share(impl)  # the caller keeps the per-device arrays
    return impl, sharding, False


# -- constructors --------------------------------------------------------------------------------------


def make_array_from_single_device_arrays(
    shape: Sequence[int], sharding: Sharding, arrays: Sequence[Any], *, dtype: Any = None
) -> Array:
    """An Array from one single-device array per addressable device of ``sharding`` (no copies).

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
    return Array(shape, sharding, arrays, dtype=dtype)


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
    return wrap(_put(sharding, shape, dtype, layout, pieces), sharding)


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

    Each leaf may be a numpy array or scalar, a shardkit Array (resharded: buffers that already hold their piece
    are kept, others are copied device to device, and only pieces no device holds whole go through the host) or
    a jax Array (wrapped without copying, then resharded). Host data is copied, so writing to ``x`` afterwards
    never changes the Array.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> x = device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
        >>> [s.index for s in x.addressable_shards[:3]]
        [(slice(0, 2, None),), (slice(0, 2, None),), (slice(2, 4, None),)]
        >>> tree = device_put({"w": np.ones((8, 2)), "b": np.zeros(2)}, {"w": NamedSharding(mesh, P("x")), "b": None})
        >>> tree["w"].sharding.spec, tree["b"].sharding.device
        (P('x',), CpuDevice(id=0))
    """
    if isinstance(x, (Array, jax.Array, np.ndarray, np.generic, int, float, complex)):
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
    if isinstance(x, (Array, jax.Array)):
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
    return _jaxlib.wrap_keys(_put_leaf(data, sharding).to_jax(), keys.dtype)


def _from_host(x: Any, sharding: Any, weak_type: bool | None = None) -> Array:
    value, dtype, weak = _host_value(x)
    sharding = _as_sharding(sharding, value.ndim)
    shape = value.shape
    layout = _layout(sharding, shape)
    full = _full(shape)
    pieces = _owned_pieces(layout, dtype, lambda pos: [(full, value)])
    weak = weak if weak_type is None else weak_type
    return wrap(_put(sharding, shape, dtype, layout, pieces), sharding, weak_type=weak)


# -- resharding ------------------------------------------------------------------------------------------


_device_reshard: list[Callable[[Array, Sharding], Array | None]] = []


def use_device_reshard(fn: Callable[[Array, Sharding], Array | None]) -> None:
    """Installs the reshard by a compiled program (``shardkit.executor.reshard``, which needs lowering and the
    executor, both above this module): ``fn(x, sharding)`` returns the resharded Array, or None to leave it
    to the paths here."""
    _device_reshard[:] = [fn]


def reshard(x: Array, sharding: Sharding) -> Array:
    """``x`` laid out as ``sharding``: kept buffers, device-to-device copies, and the pieces no device holds
    whole assembled by the installed device reshard (a compiled program) or, where it declines, on the host."""
    x._check_if_deleted()
    shape, dtype = x.shape, x.dtype
    if sharding == x._sharding:
        return x
    src, dst = _layout(x._sharding, shape), _layout(sharding, shape)
    buffers = _jaxlib.per_device_arrays(x._impl)
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
    if assemble and not _holds_every_piece(x._sharding, shape):
        raise ValueError(
            f"Cannot reshard an Array of shape {shape} that spans other processes' devices from {x._sharding} "
            f"to {sharding}: the new pieces on devices {[dst.devices[p].id for p in assemble]} are not held "
            "whole by any local device."
        )
    if copies:
        moved = _jaxlib.copy_to_devices(
            [out[p] for p in copies],
            [dst.devices[p] for p in copies],
            [jaxlib_sharding(_on_device(dst.devices[p]), len(shape)) for p in copies],
        )
        for p, b in zip(copies, moved):
            out[p] = b
    if assemble:
        distinct = src.distinct
        sources = list(zip((src.boxes[p] for p in distinct), _to_host([buffers[p] for p in distinct])))
        if len(assemble) == len(dst.devices):
            pieces = _owned_pieces(dst, dtype, lambda pos: sources)
            return wrap(_put(sharding, shape, dtype, dst, pieces), sharding, weak_type=x._weak_type)
        for p in assemble:
            piece = aligned_empty(dst.piece_shape, dtype)
            run(fill(piece, dst.boxes[p], sources))
            out[p] = _put_one(piece, dst.devices[p])
    impl = _jaxlib.array_impl(shaped_array(shape, dtype, False), jaxlib_sharding(sharding, len(shape)), out)
    share(x._impl, impl)  # pieces already in place are kept, not copied
    return wrap(impl, sharding, weak_type=x._weak_type)


# -- jax interop -----------------------------------------------------------------------------------------


def asarray(x: Any) -> Array:
    """``x`` as a shardkit Array: a jax Array is wrapped without copying its device buffers (both then share
    them); a shardkit Array is returned as is; anything else (a list too, as ``jnp.asarray`` reads it) is
    placed on the first device as one array.

    Examples:
        >>> asarray(jax.numpy.arange(4)).sharding
        SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """
    if isinstance(x, Array):
        return x
    if isinstance(x, jax.Array):
        if is_key(x.dtype):
            raise TypeError(
                f"A typed PRNG key array ({x.dtype}) stays jax's key array: a shardkit Array holds numbers. sk.jit "
                "and sk.device_put take key arrays as they are; jax.random.key_data(keys) gives their data."
            )
        if x.is_deleted():
            raise RuntimeError(f"Array has been deleted with shape={_short(x.shape, x.dtype)}.")
        sharding = from_jax(x.sharding, x.ndim)
        impl = _jaxlib.array_impl(
            shaped_array(x.shape, x.dtype, x.weak_type), jaxlib_sharding(sharding, x.ndim), _jaxlib.per_device_arrays(x)
        )
        share(impl)  # the jax Array holds the same buffers
        return wrap(impl, sharding, weak_type=x.weak_type)
    return _from_host(x, None)


def _as_shardkit(out: Any) -> Any:
    """jax's concrete committed results as shardkit Arrays (zero copy); tracers and everything else as they are.

    An uncommitted result stays jax's: jax puts such a value (``x.imag`` of a real array, a constant) on the
    default device and moves it to wherever it is used next, while a shardkit Array stays where it is, so
    wrapping it would pin a one-device piece that later operations over the mesh refuse (as jax would refuse a
    committed one)."""
    return jax.tree_util.tree_map(
        lambda v: asarray(v) if isinstance(v, jax.Array) and not isinstance(v, jax.core.Tracer) and v.committed else v,
        out,
    )


class _Results:
    """A jax helper object (``x.at[i]``) whose methods' results come back as shardkit Arrays."""

    __slots__ = ("_helper",)

    def __init__(self, helper: Any):
        self._helper = helper

    def __getitem__(self, idx: Any) -> _Results:
        return _Results(self._helper[idx])

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._helper, name)
        return lambda *args, **kwargs: _as_shardkit(method(*args, **kwargs))


def _forward_method(name: str) -> Callable[..., Any]:
    def method(self: Array, *args: Any, **kwargs: Any) -> Any:
        return _as_shardkit(getattr(self.to_jax(), name)(*args, **kwargs))

    method.__name__ = name
    method.__doc__ = f"``jax.Array.{name}`` on the zero-copy jax view; results are shardkit Arrays."
    return method


def _forward_property(name: str) -> property:
    if name == "at":
        return property(lambda self: _Results(self.to_jax().at), doc="``jax.Array.at``, giving shardkit Arrays.")
    return property(lambda self: _as_shardkit(getattr(self.to_jax(), name)), doc=f"``jax.Array.{name}``.")


def _forward_jax_array_api(cls: type[Array]) -> None:
    """Gives ``cls`` every operator, method and property of a jax Array that it does not define itself (``x * 2``,
    ``x.mean()``, ``x.reshape``, ``x.at[i].set(v)``, ...), computed on the devices by jax on the zero-copy jax view,
    as jax computes them on its own Arrays (same values, same output sharding), and handed back as shardkit Arrays.
    """
    methods, properties = _jaxlib.jax_array_api()
    for name in methods:
        if name not in cls.__dict__:
            setattr(cls, name, _forward_method(name))
    for name in properties:
        if name not in cls.__dict__:
            setattr(cls, name, _forward_property(name))


def register_array_type(cls: type[Array]) -> None:
    """Makes jax take ``cls`` (``Array`` or a subclass: jax's dispatch tables are by exact type) as one of its own
    arrays: its abstract value is ``x.aval`` and a computation receives its zero-copy jax view."""
    _jaxlib.register_array_type(cls, _aval_of, _jax_view)


def _aval_of(x: Array) -> ShapedArray:
    return x.aval


def _jax_view(x: Array) -> jax.Array:
    return x.to_jax()


_forward_jax_array_api(Array)
register_array_type(Array)
