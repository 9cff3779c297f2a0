"""The pre-jax.Array names (``GlobalDeviceArray``), as a thin view over jax's Array.

A ``GlobalDeviceArray`` is one Array whose sharding is ``NamedSharding(mesh, P(*mesh_axes))``, built the way the
jax.Array migration guide maps it: the constructor is ``make_array_from_single_device_arrays`` and
``from_callback`` is ``make_array_from_callback``; ``local_shards``/``local_data`` are the Array's
``addressable_shards``/``addressable_data``. The GDA API's instance attributes have no place on jax's Array class,
so a GDA is a view that holds one (``.array``); jax and shardkit take it wherever they take that Array: it is a
pytree over it (under a trace, the function sees the traced Array itself, as a GDA argument of ``pjit`` was an
array to its body), numpy reads it through ``__array__`` and ``jnp`` functions through ``__jax_array__``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from shardkit.array import Array, Index, Shard, make_array_from_callback, make_array_from_single_device_arrays
from shardkit.mesh import Mesh
from shardkit.partition_spec import PartitionSpec
from shardkit.sharding import NamedSharding, index_key


def _sharding(mesh: Mesh, mesh_axes: Sequence[Any]) -> NamedSharding:
    spec = mesh_axes if isinstance(mesh_axes, PartitionSpec) else PartitionSpec(*mesh_axes)
    return NamedSharding(mesh, spec)


class GlobalDeviceArray:
    """A logical array sharded over a mesh's devices (and processes), by mesh axis names per dimension.

    Args:
        global_shape: the global shape.
        global_mesh: the mesh over every process's devices.
        mesh_axes: per dimension, a mesh axis name, a tuple of names or None (a PartitionSpec works too).
        device_buffers: one single-device array per local device of the mesh.

    Examples:
        >>> mesh = make_mesh((4, 2), ("x", "y"))
        >>> data = np.arange(64).reshape(8, 8)
        >>> gda = GlobalDeviceArray.from_callback((8, 8), mesh, P("x", "y"), lambda index: data[index])
        >>> gda.local_shards[0].data.shape, gda.mesh_axes
        ((2, 4), P('x', 'y'))
        >>> out = sk.jit(lambda x: x @ x.T)(gda)   # the function sees the Array; it returns an Array
        >>> out.shape, type(gda.array) is type(out)
        ((8, 8), True)
    """

    __slots__ = ("array",)
    array: Array  # the jax Array this GDA views

    def __init__(
        self, global_shape: Sequence[int], global_mesh: Mesh, mesh_axes: Sequence[Any], device_buffers: Sequence[Any]
    ):
        self.array = make_array_from_single_device_arrays(
            global_shape, _sharding(global_mesh, mesh_axes), device_buffers
        )

    @classmethod
    def _of(cls, arr: Array) -> GlobalDeviceArray:
        out = cls.__new__(cls)
        out.array = arr
        return out

    @classmethod
    def from_callback(
        cls,
        global_shape: Sequence[int],
        global_mesh: Mesh,
        mesh_axes: Sequence[Any],
        data_callback: Callable[[Index], Any],
    ) -> GlobalDeviceArray:
        """Calls ``data_callback(index)`` once per distinct local piece (as ``make_array_from_callback``)."""
        return cls._of(make_array_from_callback(global_shape, _sharding(global_mesh, mesh_axes), data_callback))

    @classmethod
    def from_batched_callback(
        cls,
        global_shape: Sequence[int],
        global_mesh: Mesh,
        mesh_axes: Sequence[Any],
        data_callback: Callable[[list[Index]], Sequence[Any]],
    ) -> GlobalDeviceArray:
        """Calls ``data_callback(indices)`` once with every distinct local index; it returns one value each."""
        sharding = _sharding(global_mesh, mesh_axes)
        local = sharding.addressable_devices_indices_map(tuple(global_shape)).values()
        indices = list({index_key(i): i for i in local}.values())
        values = {index_key(i): v for i, v in zip(indices, data_callback(indices))}
        return cls._of(make_array_from_callback(global_shape, sharding, lambda index: values[index_key(index)]))

    @classmethod
    def from_batched_callback_with_devices(
        cls,
        global_shape: Sequence[int],
        global_mesh: Mesh,
        mesh_axes: Sequence[Any],
        data_callback: Callable[[list[tuple[Index, tuple[Any, ...]]]], Sequence[Any]],
    ) -> GlobalDeviceArray:
        """Calls ``data_callback`` once with ``(index, devices)`` for every distinct local index (``devices``: the
        local devices that hold it); it returns the single-device arrays already placed, one per local device.

        Examples:
            >>> mesh = make_mesh((4, 2), ("x", "y"))
            >>> data = np.arange(16.0).reshape(8, 2)
            >>> def put(batch):
            ...     return [jax.device_put(data[index], d) for index, devices in batch for d in devices]
            >>> GlobalDeviceArray.from_batched_callback_with_devices((8, 2), mesh, P("x"), put).local_shards[1].index
            (slice(0, 2, None), slice(None, None, None))
        """
        sharding = _sharding(global_mesh, mesh_axes)
        holders: dict[tuple[Any, ...], tuple[Index, list[Any]]] = {}
        for device, index in sharding.addressable_devices_indices_map(tuple(global_shape)).items():
            holders.setdefault(index_key(index), (index, []))[1].append(device)
        arrays = data_callback([(index, tuple(devices)) for index, devices in holders.values()])
        return cls(global_shape, global_mesh, mesh_axes, arrays)

    # -- the GDA attributes, read off the Array ------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def size(self) -> int:
        return self.array.size

    @property
    def sharding(self) -> NamedSharding:
        return self.array.sharding

    @property
    def mesh(self) -> Mesh:
        return self.array.sharding.mesh

    @property
    def mesh_axes(self) -> PartitionSpec:
        return self.array.sharding.spec

    @property
    def is_fully_replicated(self) -> bool:
        return self.array.is_fully_replicated

    @property
    def local_shards(self) -> list[Shard]:
        return self.array.addressable_shards

    @property
    def global_shards(self) -> list[Shard]:
        return self.array.global_shards

    def local_data(self, index: int) -> Array:
        return self.array.addressable_data(index)

    def block_until_ready(self) -> GlobalDeviceArray:
        self.array.block_until_ready()
        return self

    def delete(self) -> None:
        self.array.delete()

    def is_deleted(self) -> bool:
        return self.array.is_deleted()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.asarray(self.array, dtype=dtype, **({} if copy is None else {"copy": copy}))

    def __jax_array__(self) -> Array:
        return self.array

    def __repr__(self) -> str:
        return f"GlobalDeviceArray(shape={self.shape}, dtype={self.dtype.name}, mesh_axes={self.mesh_axes})"


def _unflatten(_: None, children: Sequence[Any]) -> Any:
    """A GDA again over a concrete Array of a mesh sharding; anything else (a tracer, under a trace) as it is."""
    (x,) = children
    concrete = isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)
    return GlobalDeviceArray._of(x) if concrete and getattr(x.sharding, "mesh", None) is not None else x


jax.tree_util.register_pytree_node(GlobalDeviceArray, lambda g: ((g.array,), None), _unflatten)

__all__ = ["GlobalDeviceArray"]
