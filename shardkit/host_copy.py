"""Host memory for the Array data paths: 64-byte-aligned buffers, recycled, and copies between boxes.

Why recycle. Fresh memory is the cost of every host copy: the kernel zeroes each new page on first touch,
and on a loaded machine that first touch swings from 2x to 20x the copy itself, run to run (a 256 MiB
``np.copyto`` into a prefaulted buffer takes 40-50 ms here; into a fresh one 80 ms typically, and up to 1.5 s).
malloc hands requests this big straight to fresh pages. So the buffers of 64 KiB and more that shardkit
allocates (the pieces it places zero-copy, the host values it gathers) are kept once nothing uses them any
more, up to ``RECYCLE_PER_SIZE`` per size and ``RECYCLE_LIMIT`` bytes in all, and handed out again for the
next request of the same size, already faulted in. A buffer is unused when no Python object references it:
every numpy view of it holds a reference (numpy collapses view chains onto the owner), and so does jaxlib for
as long as a device buffer aliases it (jaxlib drops those references lazily, in ``collect_garbage``, which
the recycler runs first). ``shardkit.clear_caches()`` frees the idle ones.

The copy plans (which region of which source piece fills which region of a target piece) depend only on the
layouts and are memoised. Copies big enough run as row-band tasks on a thread pool: numpy copies release the
GIL, and the first-touch page faults of fresh memory proceed on every core.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from shardkit import _jaxlib
from shardkit.caching import memoize, on_clear

Box = tuple[tuple[int, int], ...]
Copy = tuple[np.ndarray, np.ndarray]  # (destination view, source view)

ALIGNMENT = 64  # jaxlib's CPU client places host memory at this alignment without copying
RECYCLE_MIN_BYTES = 64 << 10  # below this, malloc serves from memory it already touched
RECYCLE_PER_SIZE = 32  # buffers kept per size (each request scans them for an idle one)
RECYCLE_LIMIT = 1 << 30  # bytes of recyclable buffers kept, in use or idle


class _Recycler:
    """Big aligned buffers by size; one is handed out again once nothing references it."""

    def __init__(self, limit: int):
        self.limit = limit
        self._by_size: dict[int, list[np.ndarray]] = {}
        self._held = 0
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 buffer of ``nbytes + ALIGNMENT`` bytes: an idle one of that size, else a new one."""
        if nbytes < RECYCLE_MIN_BYTES:
            return np.empty(nbytes + ALIGNMENT, np.uint8)
        with self._lock:
            _jaxlib.collect_garbage()
            bucket = self._by_size.setdefault(nbytes, [])
            for i in range(len(bucket)):
                if _unused(bucket, i):
                    return bucket[i]
            raw = np.empty(nbytes + ALIGNMENT, np.uint8)
            if len(bucket) >= RECYCLE_PER_SIZE:
                return raw
            if self._held + raw.nbytes > self.limit:
                self._drop_idle()
            if self._held + raw.nbytes <= self.limit:
                bucket.append(raw)
                self._held += raw.nbytes
            return raw

    def _drop_idle(self) -> None:
        for bucket in self._by_size.values():
            for i in reversed(range(len(bucket))):
                if _unused(bucket, i):
                    self._held -= bucket.pop(i).nbytes

    def clear(self) -> None:
        with self._lock:
            self._drop_idle()


def _unused(bucket: list[np.ndarray], i: int) -> bool:
    """Whether ``bucket[i]`` is referenced by nothing but the bucket (getrefcount counts its own argument)."""
    return sys.getrefcount(bucket[i]) == 2


_recycler = _Recycler(RECYCLE_LIMIT)
on_clear(_recycler.clear)


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Uninitialised host memory at a 64-byte boundary (placed by jaxlib's CPU client without copying)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = _recycler.take(nbytes)
    offset = -raw.__array_interface__["data"][0] % ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


# -- copies between boxes ----------------------------------------------------------------------------


Region = tuple[slice, ...]


@memoize()
def _plan(box: Box, source_boxes: tuple[Box, ...]) -> tuple[tuple[int, Region, Region], ...]:
    """(source position, destination region, source region) of every source piece that overlaps the piece at
    ``box``: a pure function of the layouts, so a repeated copy only slices and copies."""
    jobs = []
    for i, src_box in enumerate(source_boxes):
        if src_box == box:  # the common case: a source piece is exactly this piece
            jobs.append((i, (...,), (...,)))
            continue
        lo = [max(a, c) for (a, _), (c, _) in zip(box, src_box)]
        hi = [min(b, d) for (_, b), (_, d) in zip(box, src_box)]
        if any(start >= stop for start, stop in zip(lo, hi)):
            continue
        dst_at = tuple(slice(start - a, stop - a) for start, stop, (a, _) in zip(lo, hi, box))
        src_at = tuple(slice(start - c, stop - c) for start, stop, (c, _) in zip(lo, hi, src_box))
        jobs.append((i, dst_at + (...,), src_at + (...,)))  # `...` keeps 0-d views arrays
    return tuple(jobs)


def _overlaps(out: np.ndarray, box: Box, sources: Sequence[tuple[Box, np.ndarray]]) -> list[Copy]:
    """The (destination view, source view) copies that fill ``out`` (the piece at ``box``) from every source
    piece that overlaps it."""
    if out.size == 0:
        return []
    plan = _plan(box, tuple(b for b, _ in sources))
    return [(out[dst_at], sources[i][1][src_at]) for i, dst_at, src_at in plan]


_PARALLEL_BYTES = 32 << 20  # below this, a thread hand-off costs more than it saves (measured at 4-64 MiB)
_BAND_BYTES = 8 << 20  # one copy task's share of a big piece
_WORKERS = os.cpu_count() or 1
_pool: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    global _pool
    _pool = None  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_pool)


def fill(out: np.ndarray, box: Box, sources: Sequence[tuple[Box, np.ndarray]]) -> list[list[Copy]]:
    """The copies that fill ``out`` (the piece at ``box``), grouped into tasks by row bands of ``out``: each task
    writes one contiguous region, so threads running different tasks never fault in the same fresh pages."""
    if out.ndim == 0 or out.nbytes < 2 * _BAND_BYTES:
        return [_overlaps(out, box, sources)]
    (first, _), rows = box[0], out.shape[0]
    k = min(rows, out.nbytes // _BAND_BYTES)
    cuts = [i * rows // k for i in range(k + 1)]
    return [_overlaps(out[a:b], ((first + a, first + b), *box[1:]), sources) for a, b in itertools.pairwise(cuts)]


def run(tasks: list[list[Copy]]) -> None:
    """Runs the copy tasks, spread over a thread pool when they are big."""
    global _pool

    def one(task: list[Copy]) -> None:
        for dst, src in task:
            np.copyto(dst, src, casting="unsafe")

    if _WORKERS == 1 or sum(d.nbytes for task in tasks for d, _ in task) < _PARALLEL_BYTES:
        for task in tasks:
            one(task)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="shardkit-copy")
    list(_pool.map(one, tasks))
