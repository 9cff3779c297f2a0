"""Compile targets: the machines a program compiles for without being at hand.

A target is a list of compile-only devices. ``tpu-<generation>:<chips>`` is a TPU slice from libtpu's compiler
(the ``shardkit[tpu]`` extra; it compiles on a machine without TPUs), ``cpu:<N>`` is N virtual CPU devices of a
private CPU client (more than jax's own backend has). A program compiled for a target is everything but
runnable: its partitioned HLO, communication, memory and cost analyses.

==================== ============================================ ======================================
spec                 devices                                      example
==================== ============================================ ======================================
``tpu-v4:AxBxC``     one per chip (megacore), 3-D torus           ``tpu-v4:4x4x4`` (64 chips)
``tpu-v5p:AxBxC``    one per chip (megacore), 3-D torus           ``tpu-v5p:8x16x16`` (2,048 chips)
``tpu-v5e:AxB``      one per chip, 2-D                            ``tpu-v5e:16x16`` (256 chips)
``tpu-v6e:AxB``      one per chip, 2-D                            ``tpu-v6e:16x16``
``...,slices=K``     K such slices joined by the data-center net  ``tpu-v5e:16x16,slices=2``
``cpu:N``            N virtual CPU devices                        ``cpu:256``
``cpu``              as many CPU devices as the program has partitions
==================== ============================================ ======================================

Binding: a program's mesh is laid onto a TPU target's chips by jax's ``mesh_utils.create_device_mesh``, the
layout ``jax.make_mesh`` gives on that slice (each mesh axis along physical torus axes where the shapes allow); on
several slices by ``create_hybrid_device_mesh``, the first axis the slice count divides running across the slices
(the data-center network) and the rest inside each; in device order where neither finds a layout; on ``cpu:N`` in
device order.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
import os
import re
from typing import Any

import numpy as np

from shardkit import _jaxlib
from shardkit.inspect.hardware import Hardware, Topology, hardware
from shardkit.lowering import LoweredModule
from shardkit.lowering.load import rebind
from shardkit.mesh import AbstractMesh, Mesh

Device = Any

# generation -> (libtpu's topology name prefix, its chip configuration, the dimensions a slice has)
_TPU = {
    "v4": ("v4", "megacore", 3),
    "v5p": ("v5p", "megacore", 3),
    "v5e": ("v5e", "default", 2),
    "v6e": ("v6e", "default", 2),
}
_SPEC = re.compile(
    r"^(?:tpu-(?P<gen>[a-z0-9]+):(?P<dims>[0-9x]+)(?:,slices=(?P<slices>[0-9]+))?|cpu(?::(?P<n>[0-9]+))?)$"
)
# libtpu looks for the TPU host it runs on at load (metadata server, worker names, accelerator type) and logs an
# error for each on a machine without TPUs; compiling for a topology needs none of them (the output is the same).
# It also takes a machine-wide lock (/tmp/libtpu_lockfile) for the process's life, which would keep a second
# process from compiling for a target while a first one (a long compile, a test run) holds it. Set only once jax's
# own backend is up, so they never reach a real TPU host's libtpu.
_NO_TPU_HOST = {
    "TPU_SKIP_MDS_QUERY": "1",
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TPU_ACCELERATOR_TYPE": "v5litepod-4",
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
}
MAX_CPU_DEVICES = _jaxlib.MAX_VIRTUAL_CPU_DEVICES
MAX_TPU_DEVICES = 65536  # above the largest multi-slice jobs published (about 50,000 chips); libtpu would make
# as many devices as asked (262,144 for tpu-v5p:64x64x64) and a compile for them would not end in useful time


@dataclasses.dataclass(frozen=True, eq=False)
class Target:
    """A machine to compile for: its name and its compile-only devices, in the target's own order.

    Attributes:
        name: the spec it was made from, canonical (``tpu-v5e:16x16``, ``cpu:256``).
        platform: ``tpu`` or ``cpu``.
        generation: the TPU generation (``v5e``) or None.
        devices: one per partition a program compiled for it has.
    """

    name: str
    platform: str
    generation: str | None
    devices: tuple[Device, ...]

    def __repr__(self) -> str:
        return f"Target({self.name!r}, {len(self.devices)} devices)"

    def mesh(self, mesh: Mesh | AbstractMesh) -> Mesh:
        """``mesh``'s axes over this target's devices, laid out on the physical topology (module docstring)."""
        shape = tuple(mesh.shape.values())
        grid = None
        if self.platform == "tpu":
            from jax.experimental import mesh_utils

            slices = len({getattr(d, "slice_index", 0) for d in self.devices})
            try:
                if slices > 1:  # the first axis the slices divide runs across them, the rest inside each
                    axis = next((i for i, n in enumerate(shape) if n % slices == 0), None)
                    if axis is not None:
                        dcn = tuple(slices if i == axis else 1 for i in range(len(shape)))
                        ici = tuple(n // d for n, d in zip(shape, dcn))
                        grid = mesh_utils.create_hybrid_device_mesh(ici, dcn, list(self.devices))
                else:
                    grid = mesh_utils.create_device_mesh(shape, list(self.devices))
            except (ValueError, NotImplementedError, AssertionError):  # no physical layout of this shape
                grid = None
        if grid is None:
            grid = np.empty(len(self.devices), dtype=object)
            grid[:] = self.devices
            grid = grid.reshape(shape)
        return Mesh(grid, tuple(mesh.shape), axis_types=mesh.axis_types)


def target(spec: str | Target, partitions: int | None = None) -> Target:
    """The target ``spec`` names (the module docstring's table); ``partitions`` fills in a bare ``cpu``.

    Examples:
        >>> target("cpu:16")
        Target('cpu:16', 16 devices)
        >>> target("cpu", partitions=4).name
        'cpu:4'
    """
    if isinstance(spec, Target):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"target must be a target name such as 'tpu-v5e:16x16' or 'cpu:256', got {spec!r}.")
    match = _SPEC.match(spec.strip())
    if match is None:
        raise ValueError(
            f"target {spec!r} is not a target name: expected 'tpu-<generation>:<chips>[,slices=K]' (generations "
            f"{', '.join(_TPU)}; e.g. 'tpu-v5e:16x16', 'tpu-v5p:8x16x16') or 'cpu:<devices>' (e.g. 'cpu:256')."
        )
    if match["gen"] is None:
        n = partitions if match["n"] is None else int(match["n"])
        if n is None:
            raise ValueError("target 'cpu' takes its device count from a program; name it: 'cpu:<devices>'.")
        return _cpu(n)
    return _tpu(match["gen"], match["dims"], int(match["slices"] or 1))


@functools.cache
def _cpu(n: int) -> Target:
    if not 1 <= n <= MAX_CPU_DEVICES:
        raise ValueError(f"target cpu:{n} must have between 1 and {MAX_CPU_DEVICES} devices.")
    return Target(f"cpu:{n}", "cpu", None, _jaxlib.virtual_cpu_devices(n))


@functools.cache
def _tpu(generation: str, dims: str, slices: int) -> Target:
    name = f"tpu-{generation}:{dims}" + (f",slices={slices}" if slices != 1 else "")
    if generation not in _TPU:
        raise ValueError(f"target {name!r}: unknown TPU generation {generation!r}; expected one of {', '.join(_TPU)}.")
    prefix, chip_config, rank = _TPU[generation]
    sizes = dims.split("x")
    if len(sizes) != rank or not all(s.isdigit() and int(s) > 0 for s in sizes):
        example = "x".join(["4"] * rank)
        raise ValueError(f"target {name!r}: a {generation} slice has {rank} dimensions of chips, e.g. '{example}'.")
    if slices < 1:
        raise ValueError(f"target {name!r}: slices must be at least 1.")
    expected = math.prod(int(s) for s in sizes) * slices
    if expected > MAX_TPU_DEVICES:
        raise ValueError(f"target {name!r} has {expected:,} chips; a target may have at most {MAX_TPU_DEVICES:,}.")
    devices = _tpu_devices(name, f"{prefix}:{dims}", chip_config, slices)
    if len(devices) != expected:
        raise ValueError(f"target {name!r}: libtpu made {len(devices)} devices, not one per chip ({expected}).")
    return Target(name, "tpu", generation, tuple(devices))


def _tpu_devices(name: str, topology: str, chip_config: str, slices: int) -> list[Device]:
    """libtpu's compile-only devices of a slice (jax's public topology API loads libtpu's compiler)."""
    if importlib.util.find_spec("libtpu") is None:
        raise ValueError(
            f"target {name!r} needs libtpu's TPU compiler, which is not installed: pip install 'shardkit[tpu]'."
        )
    import jax
    from jax.experimental import topologies

    jax.devices()  # this process's own backend first: a TPU host's libtpu finds its TPUs undisturbed
    for key, value in _NO_TPU_HOST.items():
        os.environ.setdefault(key, value)

    try:
        return topologies.get_topology_desc(
            topology, platform="tpu", chip_config_name=chip_config, num_slices=slices
        ).devices
    except Exception as e:  # libtpu's own error type: a slice shape it does not make
        reason = str(e).split(": ", 1)[-1].split("\n")[0]
        raise ValueError(f"target {name!r}: libtpu makes no such slice: {reason}") from None


def profile_name(name: str | None) -> str | None:
    """The hardware profile a target is timed and sized on (``tpu-v5e:16x16`` -> ``tpu-v5e``); None for a CPU
    target or none.

    Examples:
        >>> profile_name("tpu-v5p:8x16x16,slices=2"), profile_name("cpu:256")
        ('tpu-v5p', None)
    """
    if name is None or not name.startswith("tpu-"):
        return None
    return name.split(":", 1)[0]


def tpu_profile(lowered: LoweredModule) -> Hardware | None:
    """The hardware profile of ``lowered``'s TPU target, None where it has none."""
    name = profile_name(lowered.target)
    return None if name is None else hardware(name)


def device_memory(lowered: LoweredModule) -> int | None:
    """Bytes of memory one device of ``lowered``'s TPU target has (its profile's HBM); None elsewhere (CPU
    devices share the host's memory)."""
    profile = tpu_profile(lowered)
    return None if profile is None else profile.hbm_bytes


def device_topology(lowered: LoweredModule) -> Topology | None:
    """Where the chips of ``lowered``'s TPU target sit (coordinates, wraparound, slices), for the time model."""
    profile = tpu_profile(lowered)
    return None if profile is None else Topology.from_devices(lowered.device_assignment, profile)


def bind(lowered: LoweredModule, spec: str | Target) -> LoweredModule:
    """``lowered`` on the devices of the target ``spec`` names: its mesh laid onto the target (partition i keeps
    its mesh position), shardings read again from the module."""
    t = target(spec, lowered.num_partitions)
    if len(t.devices) != lowered.num_partitions:
        raise ValueError(
            f"{lowered.name} is partitioned for {lowered.num_partitions} devices, but target {t.name} has "
            f"{len(t.devices)}; compile it for a target of {lowered.num_partitions} devices."
        )
    if t.platform == "tpu" and lowered.effects.host_callbacks:
        raise ValueError(
            f"{lowered.name} calls back to Python on the host (jax.debug.print, io_callback), which a TPU target "
            "compiled from this machine cannot hold (jax's callbacks are lowered for this process's platform); "
            "compile the program without them, or for a cpu target."
        )
    mesh = lowered.mesh
    if mesh is None or mesh.size != len(t.devices):
        return rebind(lowered, t.devices, None, t.name)
    placed = t.mesh(mesh)
    if lowered.device_assignment is None or not isinstance(mesh, Mesh):
        devices = placed.flat_devices
    else:  # partition i goes where its device sits in the program's mesh
        position = {d: i for i, d in enumerate(mesh.flat_devices)}
        devices = tuple(placed.flat_devices[position[d]] for d in lowered.device_assignment)
    return rebind(lowered, devices, placed, t.name)
