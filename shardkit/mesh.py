"""Mesh, AbstractMesh and the mesh context.

A ``Mesh`` is an n-d array of devices with one name per axis; an ``AbstractMesh`` keeps only the names and
sizes, so programs lowered against it carry no devices and can be bound to any mesh of the same shape at
compile time. Both are interned and immutable: equal arguments give the same object, which makes them cheap
dictionary keys for every cache downstream.

``with mesh:`` pushes the mesh on a thread-local stack (``current_mesh()`` reads the top). A nested mesh
shadows the outer one for the duration of the block, as ``ResourceEnv.with_mesh`` does in jax's ``mesh.py``.
"""

from __future__ import annotations

import collections
import contextlib
import math
import operator
import threading
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import jax
import numpy as np

from shardkit import _jaxlib
from shardkit.caching import memoize
from shardkit.dialects.hlo_check import MAX_DEVICES
from shardkit.dialects.sdy import SdyMesh

# How an axis takes part in sharding (Auto, Explicit, Manual): jax's own enum, so a mesh's axis types mean the same
# to jax and to shardkit. shardkit propagates only Auto axes for now.
AxisType = jax.sharding.AxisType


def _canonical_axis_names(axis_names: str | Sequence[str]) -> tuple[str, ...]:
    if not isinstance(axis_names, (str, Sequence, np.ndarray)):
        raise TypeError(f"axis_names must be a str or a sequence of str, got {axis_names!r}.")
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"Mesh axis names must be str, got {name!r} in {names!r}.")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"Mesh axis names must be unique, but {duplicates} appear more than once in {names!r}.")
    return names


def _canonical_axis_types(axis_types: Any, n: int) -> tuple[AxisType, ...]:
    if axis_types is None:
        return (AxisType.Auto,) * n
    if isinstance(axis_types, AxisType):
        axis_types = (axis_types,) * n
    axis_types = tuple(axis_types)
    for t in axis_types:
        if not isinstance(t, AxisType):
            raise TypeError(f"axis_types must be AxisType values, got {t!r}.")
    if len(axis_types) != n:
        raise ValueError(f"Got {len(axis_types)} axis_types {axis_types!r} for {n} mesh axes.")
    return axis_types


class _MeshShape:
    """What Mesh and AbstractMesh share: names, sizes, types and their derived views."""

    axis_names: tuple[str, ...]
    axis_sizes: tuple[int, ...]
    axis_types: tuple[AxisType, ...]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Cannot set {name!r}: {type(self).__name__} objects are immutable.")

    @cached_property
    def shape(self) -> collections.OrderedDict[str, int]:
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

    @cached_property
    def shape_tuple(self) -> tuple[tuple[str, int], ...]:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes) if self.axis_names else 0

    @property
    def empty(self) -> bool:
        return self.size == 0

    def axis_size(self, name: str) -> int:
        return self.axis_sizes[self.axis_names.index(name)]

    def to_sdy(self) -> SdyMesh:
        """The Shardy mesh: names and sizes in logical (iota) order; the devices belong to the device assignment.

        Examples:
            >>> make_mesh((4, 2), ("x", "y")).to_sdy().body
            '<["x"=4, "y"=2]>'
        """
        return self._sdy

    @cached_property
    def _sdy(self) -> SdyMesh:
        return SdyMesh(self.shape_tuple)

    @cached_property
    def axes_mesh(self) -> AbstractMesh:
        """The abstract mesh of these axes naming no device kind: what lowered text depends on (a module names axes,
        never devices), so programs over meshes of one shape, abstract or concrete, lower alike.

        Examples:
            >>> make_mesh((4, 2), ("x", "y")).axes_mesh is AbstractMesh((4, 2), ("x", "y"))
            True
        """
        return AbstractMesh(self.axis_sizes, self.axis_names, axis_types=self.axis_types)

    def _shape_str(self) -> str:
        sizes = ", ".join(f"'{n}': {s}" for n, s in self.shape_tuple)
        return f"{sizes}, axis_types={self.axis_types!r}" if sizes else f"axis_types={self.axis_types!r}"


_MESHES: dict[tuple, Mesh] = {}


class Mesh(_MeshShape, jax.sharding.Mesh):
    """An n-d array of devices with a name per axis; ``with mesh:`` (or ``@mesh`` on a function) makes it the
    current mesh, where bare PartitionSpecs name its axes.

    A ``jax.sharding.Mesh`` too, so jax takes it wherever it takes a mesh (``jax.sharding.NamedSharding(mesh,
    spec)``, ``jax.set_mesh``, ``jax.shard_map(mesh=...)``, and the libraries that hand a user's mesh to them).

    Args:
        devices: an array (or nested sequence) of jaxlib devices; its rank must equal ``len(axis_names)``.
        axis_names: one name per device-array axis.
        axis_types: one ``AxisType`` per axis (``Auto`` by default, as for ``jax.sharding.Mesh``).

    Examples:
        >>> mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
        >>> mesh.shape_tuple
        (('x', 4), ('y', 2))
        >>> with mesh:
        ...     assert current_mesh() is mesh
        >>> @mesh
        ... def inside():
        ...     return current_mesh()
        >>> inside() is mesh
        True
    """

    devices: np.ndarray

    def __new__(
        cls,
        devices: np.ndarray | Sequence[Any],
        axis_names: str | Sequence[str],
        *,
        axis_types: AxisType | Sequence[AxisType] | None = None,
    ) -> Mesh:
        if not isinstance(devices, np.ndarray):
            devices = np.array(devices, dtype=object)
        names = _canonical_axis_names(axis_names)
        if devices.ndim != len(names):
            raise ValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the length of its second "
                f"argument (`axis_names`), but got devices.ndim == {devices.ndim} and "
                f"len(axis_names) == {len(names)} (axis_names={names!r})."
            )
        types = _canonical_axis_types(axis_types, len(names))
        flat = tuple(devices.flat) if devices.ndim else ()
        key = (names, devices.shape, flat, types)
        mesh = _MESHES.get(key)
        if mesh is not None:
            return mesh
        if names:
            for name, size in zip(names, devices.shape):
                if size == 0:
                    raise ValueError(
                        f"Mesh axis {name!r} has size 0 in devices of shape {devices.shape}: every axis "
                        "needs at least one device."
                    )
            check_devices(flat, "Mesh devices")
        mesh = object.__new__(cls)  # not jax's constructor: shardkit's checks and interning are its own
        frozen = np.empty(devices.shape, dtype=object)
        if flat:
            frozen.flat[:] = flat
        frozen.flags.writeable = False
        object.__setattr__(mesh, "devices", frozen)
        object.__setattr__(mesh, "axis_names", names)
        object.__setattr__(mesh, "axis_types", types)
        _MESHES[key] = mesh
        return mesh

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle_mesh, (device_refs(self.flat_devices), self.axis_sizes, self.axis_names, self.axis_types))

    def __eq__(self, other: object) -> bool:
        """Equal to any mesh (shardkit's or jax's) of the same devices, axis names and axis types: jax's rule, whose
        meshes are interned on those and compare by identity."""
        if self is other:
            return True
        if not isinstance(other, jax.sharding.Mesh):
            return False
        return (
            self.axis_names == other.axis_names
            and self.axis_sizes == other.axis_sizes
            and self.axis_types == other.axis_types
            and self.flat_devices == tuple(other.devices.flat)
        )

    def __hash__(self) -> int:
        """The hash of the jax mesh it equals: jax interns its meshes and hashes them by identity, and this one
        holds its jax twin (``to_jax``), so every jax mesh equal to it is that object while it lives."""
        return hash(self._jax_mesh)

    def __repr__(self) -> str:
        return f"Mesh(axis_sizes={self.axis_sizes!r}, axis_names={self.axis_names!r}, axis_types={self.axis_types!r})"

    def __str__(self) -> str:
        return f"Mesh({self._shape_str()})"

    def __enter__(self) -> Mesh:
        # jax's own mesh context too, so jax code inside (jax.shard_map without mesh=, bare PartitionSpecs in
        # jax.jit) sees the same mesh.
        jax_context = jax.sharding.set_mesh(self.to_jax())
        jax_context.__enter__()
        _STACK.meshes.append((self, jax_context))
        return self

    def __exit__(self, *exc: object) -> bool:
        _, jax_context = _STACK.meshes.pop()
        jax_context.__exit__(*exc)
        return False

    @cached_property
    def flat_devices(self) -> tuple[Any, ...]:
        """The devices in mesh order: the compile-time device assignment of programs on this mesh (none for the
        empty mesh, whose 0-d device array holds None)."""
        return tuple(self.devices.flat) if self.axis_names else ()

    @cached_property
    def device_ids(self) -> np.ndarray:
        if self.empty:
            raise ValueError("An empty Mesh has no device_ids.")
        ids = np.array([d.id for d in self.flat_devices], dtype=np.int64).reshape(self.devices.shape)
        ids.flags.writeable = False
        return ids

    @cached_property
    def local_devices(self) -> list[Any]:
        """The mesh's devices that this process can address, in mesh order."""
        return [d for d in self.flat_devices if is_local(d)]

    @cached_property
    def is_multi_process(self) -> bool:
        return len(self.flat_devices) != len(self.local_devices)

    @property
    def local_mesh(self) -> Mesh:
        """The sub-mesh of this process's devices; they must form a contiguous subcube of the mesh."""
        return _local_mesh(self, _process_index(self))

    @cached_property
    def abstract_mesh(self) -> AbstractMesh:
        """The mesh without its devices, naming their kind as jax's does (so the two are one abstract mesh)."""
        device = self._jax_mesh.abstract_mesh.abstract_device if self.axis_names else None
        return AbstractMesh(self.axis_sizes, self.axis_names, axis_types=self.axis_types, abstract_device=device)

    @cached_property
    def _internal_device_list(self) -> Any:
        """jaxlib's device list of the mesh, which jax's shardings read from a Mesh (jax 0.10 builds it on first
        use, 0.11 on in its constructor, which shardkit's meshes do not run)."""
        return _jaxlib.device_list(self.flat_devices)

    @cached_property
    def _jax_mesh(self) -> Any:
        return jax.sharding.Mesh(self.devices, self.axis_names, axis_types=self.axis_types)

    def to_jax(self) -> Any:
        """The same mesh as a ``jax.sharding.Mesh`` (the same devices, names and axis types)."""
        return self._jax_mesh

    @classmethod
    def from_jax(cls, mesh: Any) -> Mesh:
        """The shardkit mesh with a ``jax.sharding.Mesh``'s devices, axis names and axis types."""
        return cls(mesh.devices, tuple(mesh.axis_names), axis_types=tuple(mesh.axis_types))

    @classmethod
    def from_sdy(cls, mesh: SdyMesh, devices: Sequence[Any]) -> Mesh:
        """The Mesh of a Shardy mesh whose positions are ``devices`` (the device assignment): ``device_ids``, when
        given, say which position each logical mesh entry holds."""
        if mesh.is_maximal:
            raise ValueError(f"sdy mesh {mesh.body} is maximal (one device, no axes): it has no Mesh equivalent.")
        devices = list(devices)
        if mesh.size != len(devices):
            raise ValueError(f"sdy mesh {mesh.body} has {mesh.size} devices, but {len(devices)} were given.")
        order = mesh.device_ids if mesh.device_ids is not None else range(mesh.size)
        return AbstractMesh.from_sdy(SdyMesh(mesh.axes)).bind([devices[i] for i in order])


def _unpickle_mesh(refs: tuple, sizes: tuple[int, ...], names: tuple[str, ...], types: tuple[AxisType, ...]) -> Mesh:
    if not names:
        return EMPTY_MESH
    grid = np.empty(len(refs), dtype=object)
    grid[:] = lookup_devices(refs)
    return Mesh(grid.reshape(sizes), names, axis_types=types)


def check_devices(devices: Sequence[Any], what: str) -> tuple[Any, ...]:
    """``devices`` as a tuple once each is a jax Device, all of one backend and none repeated.

    TypeError naming ``what`` and the entry for anything that is not a Device (an int, a str, None); ValueError
    for no devices, a repeated device, or devices of two backends (one computation runs on one client).

    Examples:
        >>> check_devices([jax.devices()[0], 1], "Mesh devices")
        Traceback (most recent call last):
        ...
        TypeError: Mesh devices must be jax Devices (such as jax.devices()[0]), but entry 1 is 1 (int).
    """
    devices = tuple(devices)
    if not devices:
        raise ValueError(f"{what} must name at least one device, got none.")
    # Set-wise first (a mesh may have thousands of devices); the loops below only name the culprit.
    if not all(issubclass(t, _device_type()) for t in set(map(type, devices))):
        i, d = next((i, d) for i, d in enumerate(devices) if not is_device(d))
        raise TypeError(
            f"{what} must be jax Devices (such as jax.devices()[0]), but entry {i} is {d!r} ({type(d).__name__})."
        )
    if len(set(map(_CLIENT, devices))) > 1:
        first = devices[0]
        i, d = next((i, d) for i, d in enumerate(devices) if d.client != first.client)
        raise ValueError(
            f"{what} mix backends (clients): entry 0 is {first} ({first.platform}) and entry {i} is {d} "
            f"({d.platform}); one computation runs on the devices of one client."
        )
    if len(set(devices)) != len(devices):
        seen: set[Any] = set()
        repeated = [d for d in devices if d in seen or seen.add(d)]
        raise ValueError(f"{what} must be unique, but {sorted(set(repeated), key=str)} appear more than once.")
    return devices


def check_device(device: Any, what: str) -> Any:
    """``device`` once it is a jax Device; TypeError naming ``what`` otherwise."""
    if not is_device(device):
        raise TypeError(f"{what} must be a jax Device (such as jax.devices()[0]), got {device!r}.")
    return device


def _device_type() -> type:
    return jax.Device


def is_device(value: Any) -> bool:
    """Whether ``value`` is a jax Device (this process's, another client's, or a compile-only TPU device)."""
    return isinstance(value, _device_type())


_CLIENT = operator.attrgetter("client")


def device_refs(devices: Sequence[Any]) -> tuple[tuple[str, int], ...]:
    """(platform, id) per device: how pickles name devices, since jaxlib Device objects do not pickle."""
    return tuple((d.platform, d.id) for d in devices)


def lookup_devices(refs: Sequence[tuple[str, int]]) -> list[Any]:
    """The live devices named by ``device_refs``; ValueError naming those this process does not have."""
    live = {}
    for platform in {p for p, _ in refs}:
        with contextlib.suppress(RuntimeError):
            live.update({(platform, d.id): d for d in jax.devices(platform)})
    missing = [r for r in refs if tuple(r) not in live]
    if missing:
        raise ValueError(f"Cannot unpickle: devices {missing} (platform, id) do not exist in this process.")
    return [live[tuple(r)] for r in refs]


def is_local(device: Any) -> bool:
    """Whether this process can address ``device``."""
    return device.process_index == device.client.process_index()


def _process_index(mesh: Mesh) -> int:
    if mesh.empty:
        return 0
    return mesh.flat_devices[0].client.process_index()


@memoize(maxsize=128)
def _local_mesh(mesh: Mesh, process_index: int) -> Mesh:
    if mesh.empty:
        return mesh
    is_local = np.array([d.process_index == process_index for d in mesh.flat_devices]).reshape(mesh.devices.shape)
    if not is_local.any():
        raise ValueError(f"Process {process_index} owns no device of {mesh}.")
    hull = []
    for axis in range(mesh.devices.ndim):
        others = tuple(a for a in range(mesh.devices.ndim) if a != axis)
        hit = np.flatnonzero(is_local.any(axis=others))
        hull.append(slice(int(hit[0]), int(hit[-1]) + 1))
    # The smallest box holding every local device is all local exactly when the local devices form a
    # contiguous subcube; otherwise the box also holds other processes' devices.
    if not is_local[tuple(hull)].all():
        raise ValueError(
            f"The devices of process {process_index} must form a contiguous subcube of the global device "
            f"mesh {mesh}, but the smallest box holding them, {tuple((s.start, s.stop) for s in hull)}, also "
            "holds devices of other processes."
        )
    return Mesh(mesh.devices[tuple(hull)], mesh.axis_names, axis_types=mesh.axis_types)


_ABSTRACT_MESHES: dict[tuple, AbstractMesh] = {}


class AbstractMesh(_MeshShape, jax.sharding.AbstractMesh):
    """A mesh's axis names and sizes, without devices (a ``jax.sharding.AbstractMesh`` too); a concrete mesh's
    (``Mesh.abstract_mesh``) also names its devices' kind (``abstract_device``), as jax's does.

    Accepts jax 0.4's form ``AbstractMesh((("x", 4), ("y", 2)))`` and jax 0.10's
    ``AbstractMesh((4, 2), ("x", "y"))``.

    Examples:
        >>> AbstractMesh((("x", 4), ("y", 2))) is AbstractMesh((4, 2), ("x", "y"))
        True
    """

    abstract_device: Any

    def __new__(
        cls,
        axis_sizes: Sequence[int] | Sequence[tuple[str, int]],
        axis_names: Sequence[str] | None = None,
        *,
        axis_types: AxisType | Sequence[AxisType] | None = None,
        abstract_device: Any = None,
    ) -> AbstractMesh:
        if not isinstance(axis_sizes, (Sequence, np.ndarray)):
            raise TypeError(f"AbstractMesh axis_sizes must be a sequence, got {axis_sizes!r}.")
        if axis_names is None:
            pairs = tuple(axis_sizes)
            if not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
                raise TypeError(
                    "AbstractMesh takes either a shape tuple ((name, size), ...) or (axis_sizes, axis_names); "
                    f"got {axis_sizes!r}."
                )
            axis_names = tuple(n for n, _ in pairs)
            axis_sizes = tuple(s for _, s in pairs)
        names = _canonical_axis_names(axis_names)
        sizes = tuple(axis_sizes)
        for name, size in zip(names, sizes):
            if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
                raise ValueError(f"AbstractMesh axis {name!r} must have a positive integer size, got {size!r}.")
        if len(sizes) != len(names):
            raise ValueError(f"AbstractMesh got {len(sizes)} axis sizes {sizes!r} for {len(names)} names {names!r}.")
        sizes = tuple(int(s) for s in sizes)
        if math.prod(sizes) > MAX_DEVICES:  # XLA's tile arithmetic overflows (and aborts) long before 2**63
            raise ValueError(
                f"AbstractMesh {dict(zip(names, sizes))} has {math.prod(sizes)} positions; at most {MAX_DEVICES} "
                "are supported."
            )
        types = _canonical_axis_types(axis_types, len(names))
        key = (names, sizes, types, abstract_device)
        mesh = _ABSTRACT_MESHES.get(key)
        if mesh is None:
            mesh = object.__new__(cls)
            object.__setattr__(mesh, "axis_names", names)
            object.__setattr__(mesh, "axis_sizes", sizes)
            object.__setattr__(mesh, "axis_types", types)
            object.__setattr__(mesh, "abstract_device", abstract_device)
            # the jax AbstractMesh it is, kept alive: jax interns its meshes and compares and hashes them by
            # identity, so every such jax mesh is this twin while it lives, and hashes as this one
            twin = jax.sharding.AbstractMesh(sizes, names, axis_types=types, abstract_device=abstract_device)
            object.__setattr__(mesh, "_jax", twin)
            object.__setattr__(mesh, "_hash", hash(twin))  # interned and immutable: hashed once
            mesh = _ABSTRACT_MESHES.setdefault(key, mesh)
        return mesh

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle_abstract_mesh, (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device))

    def __eq__(self, other: object) -> bool:
        """Equal to the abstract mesh (shardkit's or jax's) of the same axis names, sizes, types and device kind:
        jax's rule, whose abstract meshes are interned on those and compare by identity."""
        return self is other or other is self._jax  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        device = self.abstract_device
        kind = "" if device is None else f", device_kind={device.device_kind}, platform={device.platform}"
        return f"AbstractMesh({self._shape_str()}{kind})"

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def bind(self, devices: Sequence[Any]) -> Mesh:
        """The Mesh of this shape over ``devices``, placed in order (how lowering binds an AbstractMesh)."""
        return _bound(self, tuple(devices))

    def to_jax(self) -> Any:
        """The same mesh as a ``jax.sharding.AbstractMesh``."""
        return self._jax  # type: ignore[attr-defined]

    @classmethod
    def from_jax(cls, mesh: Any) -> AbstractMesh:
        """The AbstractMesh with a ``jax.sharding.AbstractMesh``'s axis names, sizes, axis types and device kind."""
        return cls(
            tuple(mesh.axis_sizes),
            tuple(mesh.axis_names),
            axis_types=tuple(mesh.axis_types),
            abstract_device=mesh.abstract_device,
        )

    @classmethod
    def from_sdy(cls, mesh: SdyMesh) -> AbstractMesh:
        """The AbstractMesh of a Shardy mesh; one with ``device_ids`` needs devices (``Mesh.from_sdy``)."""
        if mesh.device_ids is not None:
            raise ValueError(f"sdy mesh {mesh.body} has explicit device_ids; bind it to devices with Mesh.from_sdy.")
        return cls(tuple(s for _, s in mesh.axes), tuple(n for n, _ in mesh.axes))

    def _no_devices(self, what: str) -> Any:
        raise ValueError(f"AbstractMesh does not implement {what}: it has axis names and sizes but no devices.")

    devices = property(lambda self: self._no_devices("devices"))
    device_ids = property(lambda self: self._no_devices("device_ids"))
    local_devices = property(lambda self: self._no_devices("local_devices"))
    local_mesh = property(lambda self: self._no_devices("local_mesh"))
    is_multi_process = property(lambda self: self._no_devices("is_multi_process"))
    flat_devices = property(lambda self: self._no_devices("devices"))

    def __enter__(self) -> Any:
        return self._no_devices("__enter__ (only a concrete Mesh can be a context)")

    def __exit__(self, *exc: object) -> bool:
        return False


def mesh_from_jax(mesh: Any) -> Mesh | AbstractMesh:
    """A jax mesh (concrete or abstract) as shardkit's."""
    return Mesh.from_jax(mesh) if isinstance(mesh, jax.sharding.Mesh) else AbstractMesh.from_jax(mesh)


def _unpickle_abstract_mesh(
    sizes: tuple[int, ...], names: tuple[str, ...], types: tuple[AxisType, ...], device: Any = None
) -> AbstractMesh:
    return AbstractMesh(sizes, names, axis_types=types, abstract_device=device)


@memoize(maxsize=256)
def _bound(mesh: AbstractMesh, devices: tuple[Any, ...]) -> Mesh:
    if len(devices) != mesh.size:
        raise ValueError(f"{mesh} has {mesh.size} positions, but {len(devices)} devices were given.")
    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    return Mesh(grid.reshape(mesh.axis_sizes), mesh.axis_names, axis_types=mesh.axis_types)


class _MeshStack(threading.local):
    def __init__(self) -> None:
        self.meshes: list[tuple[Mesh, Any]] = []  # (mesh, the jax mesh context entered with it)


_STACK = _MeshStack()
_jax_mesh_in_scope = _jaxlib.jax_mesh_reader()
EMPTY_MESH = Mesh(np.empty((), dtype=object), ())


def current_mesh() -> Mesh:
    """The innermost ``with mesh:`` of this thread; else the mesh of jax's context (``jax.set_mesh``, which jax
    code in a program shardkit runs reads too), as shardkit's, also while shardkit's function is being traced
    (bare PartitionSpecs in it name that mesh's axes); else the empty mesh."""
    if _STACK.meshes:
        return _STACK.meshes[-1][0]
    jax_mesh = _jax_mesh_in_scope()
    return EMPTY_MESH if jax_mesh.empty else _as_shardkit_mesh(jax_mesh)


@memoize(maxsize=64)
def _as_shardkit_mesh(mesh: jax.sharding.Mesh) -> Mesh:
    return mesh if isinstance(mesh, Mesh) else Mesh.from_jax(mesh)


def make_mesh(
    axis_shapes: Sequence[int],
    axis_names: Sequence[str],
    *,
    devices: Sequence[Any] | None = None,
    axis_types: AxisType | Sequence[AxisType] | None = None,
) -> Mesh:
    """A mesh of ``axis_shapes`` over ``devices`` (default: all of jax's devices), in device-list order.

    Unlike ``jax.make_mesh`` (Explicit axes by default in 0.10), axes are ``Auto`` unless told otherwise.

    Examples:
        >>> make_mesh((4, 2), ("x", "y")).shape_tuple
        (('x', 4), ('y', 2))
    """
    if not isinstance(axis_shapes, (Sequence, np.ndarray)) or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in axis_shapes
    ):
        raise TypeError(f"make_mesh axis_shapes must be a sequence of ints, got {axis_shapes!r}.")
    axis_shapes = tuple(int(s) for s in axis_shapes)
    names = _canonical_axis_names(axis_names)
    if any(s < 1 for s in axis_shapes):
        raise ValueError(f"make_mesh axis sizes must be positive, got {axis_shapes!r} for axes {names!r}.")
    if len(axis_shapes) != len(names):
        raise ValueError(
            f"make_mesh got {len(axis_shapes)} axis sizes {axis_shapes!r} for {len(names)} names {names!r}."
        )
    if devices is None:
        devices = jax.devices()
    if not isinstance(devices, (Sequence, np.ndarray)):
        raise TypeError(f"make_mesh devices must be a sequence of jax Devices, got {devices!r}.")
    devices = list(devices)
    need = math.prod(axis_shapes)
    if need > len(devices):
        raise ValueError(
            f"make_mesh needs {need} devices for axis sizes {axis_shapes!r} {names!r}, but only {len(devices)} "
            "were given."
        )
    grid = np.empty(need, dtype=object)
    grid[:] = devices[:need]
    return Mesh(grid.reshape(axis_shapes), names, axis_types=axis_types)
