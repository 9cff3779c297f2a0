"""Compiling a sharded module with XLA through jaxlib's client, for the module's device assignment.

The client is the devices' own (``device.client``), so whatever platform the mesh is on is the one compiled
for. The device assignment is always passed: without it XLA runs partition i on device i, which crashes on
a permuted mesh. The partitioner (Shardy or GSPMD) follows the dialect the module carries, so a module that
passes rewrote from one form to the other still compiles correctly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax.extend.backend
import numpy as np

from shardkit import _jaxlib
from shardkit.dialects import copy_module, irx
from shardkit.executor import cache
from shardkit.executor.targets import device_memory
from shardkit.inspect import memory, sharding_table
from shardkit.lowering import LoweredModule
from shardkit.mesh import check_devices
from shardkit.passes import run_pipeline


def compile_options(
    devices: Sequence[Any],
    *,
    shardy: bool,
    in_specified: Sequence[bool],
    out_specified: Sequence[bool],
    auto_mesh: Sequence[int] | None = None,
    overrides: Mapping[str, str | bool] | None = None,
) -> _jaxlib.CompileOptions:
    """jax's flag-derived options (public ``jax.extend``) with SPMD partitioning over ``devices``.

    Where a sharding was left to the compiler (None), XLA may choose it (``allow_spmd_sharding_propagation``).
    ``devices`` must be jax Devices of one backend, at least one (XLA aborts the process on an empty assignment).
    ``auto_mesh``: turn on XLA's auto-sharding over a mesh of that shape, partitions in row-major order (GSPMD
    only: with Shardy XLA aborts the process, so that is a ValueError here). ``overrides``: compiler options by
    name, as ``jax.stages.Lowered.compile(compiler_options=...)`` passes them (XLA's debug options, a backend's
    own flags: ``xla_tpu_enable_async_collective_fusion``).
    """
    devices = check_devices(devices, "The devices to compile for")
    ids = np.array([[d.id for d in devices]])
    options = jax.extend.backend.get_compile_options(
        num_replicas=1, num_partitions=len(devices), device_assignment=ids, env_options_overrides=_checked(overrides)
    )
    build = options.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = shardy
    build.allow_spmd_sharding_propagation_to_parameters = [not s for s in in_specified]
    build.allow_spmd_sharding_propagation_to_output = [not s for s in out_specified]
    if auto_mesh is not None:
        if shardy:
            raise ValueError(
                "XLA's auto-sharding runs with the GSPMD partitioner only (with Shardy's, XLA aborts the process): "
                "compile the program in the GSPMD form (the export-gspmd pass)."
            )
        if math.prod(auto_mesh) != len(devices):
            raise ValueError(f"auto_mesh={tuple(auto_mesh)} has {math.prod(auto_mesh)} devices, not {len(devices)}.")
        _jaxlib.auto_spmd_partitioning(options, auto_mesh, range(len(devices)))
    return options


def _checked(overrides: Mapping[str, str | bool] | None) -> dict[str, str | bool] | None:
    if overrides is None:
        return None
    if not isinstance(overrides, Mapping):
        raise TypeError(f"compiler_options must be a mapping of option names to values, got {overrides!r}.")
    for name, value in overrides.items():
        if not isinstance(name, str) or not isinstance(value, (str, bool, int, float)):
            raise TypeError(
                f"compiler_options must map option names (str) to str, bool, int or float values, got {name!r}: "
                f"{value!r}."
            )
    return {name: value if isinstance(value, (str, bool)) else str(value) for name, value in overrides.items()} or None


def _refused(lowered: LoweredModule, error: Exception) -> memory.MemoryReport:
    """The memory report of a program XLA refused for want of memory, from Shardy's propagated plan (of its Shardy
    form, for a program compiled in the GSPMD form)."""
    module = copy_module(lowered.module)
    run_pipeline(module, "propagate" if irx.uses_shardy(module) else "import-gspmd,propagate")
    return memory.from_plan(
        sharding_table(module, lowered.mesh),
        target=lowered.target,
        num_devices=lowered.num_partitions,
        capacity=device_memory(lowered),
        error=memory.summary(error),
    )


def compile_lowered(
    lowered: LoweredModule,
    auto_mesh: Sequence[int] | None = None,
    overrides: Mapping[str, str | bool] | None = None,
) -> Any:
    """The loaded executable of ``lowered`` (in-memory cache per module and compiler options, then the persistent
    cache); with ``auto_mesh``, XLA's auto-sharding on (``compile_options``), the result not kept in the module's
    cache."""
    devices = lowered.device_assignment
    if devices is None:
        raise ValueError(
            f"{lowered.name} was lowered for an AbstractMesh ({lowered.mesh}) only, so it has no devices to compile "
            "for. Compile it for a target (compile(target='cpu') or e.g. 'tpu-v5e:4x4'), or lower it with concrete "
            "shardings or inside `with mesh:` for a mesh of that shape."
        )
    _check_platform(lowered, devices)
    options = _checked(overrides)
    memo = (devices, tuple(sorted(options.items())) if options else ())
    exe = lowered.executables.get(memo) if auto_mesh is None else None
    if exe is not None:
        return exe
    if len(devices) != lowered.num_partitions:
        raise ValueError(
            f"{lowered.name} was partitioned for {lowered.num_partitions} devices (mhlo.num_partitions), but its "
            f"device assignment has {len(devices)}: {list(devices)}."
        )
    shardy = irx.uses_shardy(lowered.module)
    if auto_mesh is not None and shardy:  # a module without shardings is in either form: auto-sharding needs GSPMD's
        shardy = any(site.shardings for site in irx.walk_shardings(lowered.module))
    options = compile_options(
        devices,
        shardy=shardy,
        in_specified=[s is not None for s in lowered.in_shardings],
        out_specified=[s is not None for s in lowered.out_shardings],
        auto_mesh=auto_mesh,
        overrides=options,
    )
    callbacks = list(lowered.effects.host_callbacks)  # the module names them by index; XLA needs them to run it
    directory = None if lowered.target else cache.cache_dir()  # the persistent cache holds runnable programs
    key = None
    if directory is not None:
        text = lowered.module.operation.get_asm(binary=True, enable_debug_info=False)
        key = cache.cache_key(text, options, devices)
        exe = cache.load(directory, key, _jaxlib.device_list(devices), options, callbacks)
    if exe is None:
        try:
            exe = _jaxlib.compile_for(devices, lowered.module, options, callbacks)
        except jax.errors.JaxRuntimeError as e:
            if lowered.target is None or not memory.is_out_of_memory(e):
                raise
            raise memory.OutOfMemoryError(_refused(lowered, e)) from None
        if key is not None:
            cache.store(directory, key, exe)
    if auto_mesh is None:
        lowered.executables[memo] = exe
    return exe


def _check_platform(lowered: LoweredModule, devices: Sequence[Any]) -> None:
    """A body jax lowered for another platform (``jit(platform=...)``) compiles only for devices of that one."""
    wanted = lowered.platform
    if wanted is None:
        return
    have = devices[0].platform
    if have != wanted and not (have == "gpu" and wanted in ("cuda", "rocm")):
        raise ValueError(
            f"{lowered.name} was lowered for platform {wanted!r} (jit's platform), but the devices it compiles for "
            f"are {have} devices; compile it for a {wanted} target (compile(target=...)) or lower it for {have}."
        )
