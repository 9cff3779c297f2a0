"""Host-local <-> global conversions and gathers for programs that run one process per host.

jax's ``multihost_utils`` helpers (as the jax.Array migration guide describes them), shardkit's way. A
host-local value is what one process sees: its arrays span only the process's part of the mesh
(``mesh.local_mesh``). Each helper maps a pytree (jax.tree_util) with one PartitionSpec per leaf (a single spec
applies to every leaf).

In one process the local mesh is the whole mesh, so local and global shapes agree; the conversions then
only re-label buffers. ``process_allgather`` across processes needs a compiled collective, which it gets
from ``shardkit.jit``: this module sits above the staged API, beside the tools.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from shardkit import _jaxlib
from shardkit.array import Array, make_array_from_process_local_data, relabel, reshard
from shardkit.mesh import Mesh
from shardkit.partition_spec import PartitionSpec, axes_of
from shardkit.sharding import GSPMDSharding, NamedSharding
from shardkit.stages import jit


def _map(fn: Any, tree: Any, pspecs: Any) -> Any:
    if isinstance(pspecs, PartitionSpec):
        return jax.tree_util.tree_map(lambda x: fn(x, pspecs), tree)
    if pspecs is None:
        raise ValueError(
            "`None` is not a valid input to the pspecs argument. Use PartitionSpec() to replicate the input."
        )
    return jax.tree_util.tree_map(fn, tree, pspecs, is_leaf=lambda x: isinstance(x, (PartitionSpec, Array)))


def _rescaled(shape: tuple[int, ...], mesh: Mesh, spec: PartitionSpec, *, to_global: bool) -> tuple[int, ...]:
    """``shape`` with each dimension scaled by (pieces over the whole mesh) / (pieces over the local mesh)."""
    out = []
    for dim, n in enumerate(shape):
        axes = axes_of(spec, dim)
        whole = math.prod(mesh.axis_size(a) for a in axes)
        local = math.prod(mesh.local_mesh.axis_size(a) for a in axes)
        out.append(n * whole // local if to_global else n * local // whole)
    return tuple(out)


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """Each process's local arrays -> global Arrays over ``global_mesh``, sharded as ``pspecs`` say.

    A local dimension cut into k pieces on this process's devices and n pieces overall grows by n / k.
    An Array already laid out over the local mesh keeps its buffers (no copy).

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> host_local_array_to_global_array(np.arange(8.0), mesh, P("x")).sharding.spec
        P('x',)
    """

    def one(x: Any, spec: PartitionSpec) -> Array:
        if isinstance(x, Array) and not x.is_fully_addressable:
            return x
        sharding = NamedSharding(global_mesh, spec)
        local_sharding = NamedSharding(global_mesh.local_mesh, spec)
        global_shape = _rescaled(np.shape(x), global_mesh, spec, to_global=True)
        if isinstance(x, Array) and x.sharding.is_equivalent_to(local_sharding, x.ndim):
            return relabel(x, global_shape, sharding)
        return make_array_from_process_local_data(sharding, x, global_shape)

    return _map(one, local_inputs, pspecs)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """Global Arrays -> this process's part, as Arrays over ``global_mesh.local_mesh`` (no copy).

    As in jax, an Array that is already fully addressable (always, in one process) is returned as is.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> x = device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
        >>> global_array_to_host_local_array(x, mesh, P("x")) is x
        True
    """

    def one(x: Any, spec: PartitionSpec) -> Array:
        if isinstance(x, Array) and x.is_fully_addressable:
            return x
        sharding = NamedSharding(global_mesh, spec)
        if not isinstance(x, Array):
            return host_local_array_to_global_array(x, global_mesh.local_mesh, spec)
        if not x.sharding.is_equivalent_to(sharding, x.ndim):
            x = reshard(x, sharding)
        local_sharding = NamedSharding(global_mesh.local_mesh, spec)
        return relabel(x, _rescaled(x.shape, global_mesh, spec, to_global=False), local_sharding)

    return _map(one, global_inputs, pspecs)


def _replicated(x: Array) -> Array:
    """``x`` copied whole onto every device, through a compiled identity (the collective crosses processes)."""
    s = x.sharding
    target = (
        NamedSharding(s.mesh, PartitionSpec(), memory_kind=s.memory_kind)
        if s.mesh is not None
        else GSPMDSharding.get_replicated(s.device_assignment, memory_kind=s.memory_kind)
    )
    return jit(lambda a: a, out_shardings=target)(x)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process gets the whole value of each leaf, as numpy.

    A global Array that spans several processes is gathered whole (``tiled=True`` is required). Anything
    else is one process's value: the processes' values are stacked on a new leading axis, or concatenated
    along axis 0 when ``tiled``.

    Examples:
        >>> process_allgather(np.arange(3.0)).shape   # one process: stacked on a new axis of size 1
        (1, 3)
    """

    def one(x: Any) -> np.ndarray:
        if isinstance(x, Array) and not x.is_fully_addressable:
            if not tiled:
                raise ValueError("Gathering global non-fully-addressable arrays only supports tiled=True.")
            return np.asarray(_replicated(x).addressable_data(0))
        value = np.asarray(x)
        if jax.process_count() == 1:
            return value if tiled else value[np.newaxis]
        if value.ndim == 0 or not tiled:
            value = value[np.newaxis]
        devices = np.array(jax.devices()).reshape(jax.process_count(), jax.local_device_count())
        mesh = Mesh(devices, ("processes", "local_devices"))
        stacked = host_local_array_to_global_array(value, mesh, PartitionSpec("processes"))
        return np.asarray(_replicated(stacked).addressable_data(0))

    return jax.tree_util.tree_map(one, in_tree)


def sync_global_devices(name: str, *, timeout_seconds: float = 300) -> None:
    """Blocks until every process has reached ``sync_global_devices(name)``.

    The processes meet at the coordination service's barrier ``name``, which raises ``RuntimeError`` after
    ``timeout_seconds`` rather than hanging on a peer that never comes (a mismatched ``name`` times out the
    same way). With one process it returns at once.
    """
    if jax.process_count() == 1:
        return
    try:
        _jaxlib.coordination_barrier(f"shardkit.sync_global_devices:{name}", int(timeout_seconds * 1000))
    except Exception as e:  # jaxlib raises its own XlaRuntimeError types
        raise RuntimeError(
            f"sync_global_devices({name!r}) failed after waiting up to {timeout_seconds} s for the other "
            f"{jax.process_count() - 1} processes: {e}"
        ) from e
