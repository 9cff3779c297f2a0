"""XLA's own auto-sharding as a baseline: the shardings XLA chooses for a program's open arguments and results.

XLA has an auto-sharding pass derived from Alpa (an integer program over each op's sharding strategies on a
device mesh), switched on per compile by the build option ``use_auto_spmd_partitioning`` with the mesh's shape
and device ids. jax used it for its ``AUTO`` shardings and no longer exposes it; ``xla_autoshard`` sets it on a
compile of a shardkit program for a target and reports what came out: the shardings XLA chose, its partitioned
program, how long the compile took, and the modelled step time and memory of the result.

What XLA does with the option (measured on jax 0.10.2, 0.11.2 and 0.12.0.1 with their libtpu releases 0.0.42,
0.0.48 and 0.0.50, and on XLA's CPU compiler): it accepts it and records it in the module's configuration, then
partitions the program with GSPMD's sharding propagation alone. The auto-sharding pass is not built into these
compilers (open-source XLA adds it only to Google-internal GPU builds; libtpu has no pass or solver of that name,
and XLA's pass dump shows none running), so open shardings come back replicated, with or without a mesh shape, a
memory budget (``LIBTPU_INIT_ARGS=--xla_tpu_auto_spmd_partitioning_memory_budget_gb=...``) or libtpu's
``--xla_tpu_spmd_auto_partitioning``, and a program too large to replicate fails for want of memory instead of
being sharded. ``XlaAutoResult.partitioned`` says whether anything was sharded, so a compiler that has the pass
shows up as such. The option needs XLA's GSPMD partitioner: with Shardy's, XLA aborts the process (no
auto-partitioner is registered), so a Shardy-form program is compiled in its GSPMD form (``export-gspmd``).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Sequence
from typing import Any

from jaxlib.mlir import ir

from shardkit import _jaxlib
from shardkit.dialects import copy_module, irx
from shardkit.executor import Compiled, Target, bind_target, compile_lowered, target as make_target
from shardkit.executor.targets import profile_name
from shardkit.inspect import MemoryReport, StepTime
from shardkit.inspect.timing import human_seconds
from shardkit.inspect.units import human_bytes
from shardkit.lowering import LoweredModule
from shardkit.mesh import AbstractMesh
from shardkit.passes import run_pipeline
from shardkit.stages import Lowered

_AXES = ("x", "y", "z", "w")


@dataclasses.dataclass(frozen=True)
class XlaAutoResult:
    """What XLA's auto-sharding made of a program on a target.

    Attributes:
        compiled: XLA's program (compile-only for a target not at hand): ``as_text()``, ``communication()``, ...
        mesh_shape: the device mesh XLA's auto-sharding was given (partitions in row-major order).
        in_shardings, out_shardings: the shardings XLA chose, as shardkit shardings in the arguments' and
            results' trees (``(args, kwargs)`` for the arguments).
        in_hlo, out_hlo: the same as XLA's HLO sharding text, one per flat argument and result.
        compile_seconds: the XLA compile, wall time.
        step: the modelled step time on the target's hardware profile (``communication().time(...)`` with the
            program's cost, loop bodies counted by their trip counts); None for a CPU target without ``hardware``.
        memory: bytes per device (``Compiled.memory()``).
    """

    compiled: Compiled
    mesh_shape: tuple[int, ...]
    in_shardings: Any
    out_shardings: Any
    in_hlo: tuple[str, ...]
    out_hlo: tuple[str, ...]
    compile_seconds: float
    step: StepTime | None
    memory: MemoryReport

    @property
    def partitioned(self) -> bool:
        """Whether XLA sharded anything: an argument or result not replicated, or a collective in the program."""
        replicated = all(text == "{replicated}" for text in self.in_hlo + self.out_hlo)
        return not replicated or bool(self.compiled.communication().collectives)

    def __str__(self) -> str:
        lines = [
            f"XLA's auto-sharding on {self.compiled.target} over mesh {'x'.join(map(str, self.mesh_shape))}: "
            f"compiled in {self.compile_seconds:.2f} s; "
            + ("sharded" if self.partitioned else "nothing sharded (every argument and result replicated)"),
            "  arguments: " + ", ".join(self.in_hlo),
            "  results:   " + ", ".join(self.out_hlo),
        ]
        if self.step is not None:
            lines.append(f"  step: {human_seconds(self.step.step)} on {self.step.hardware.name} (modelled)")
        lines.append(f"  memory: {human_bytes(self.memory.total)} per device")
        return "\n".join(lines) + "\n"


def xla_autoshard(
    lowered: Lowered,
    target: str | Target,
    mesh_shape: Sequence[int] | None = None,
    *,
    hardware: str | None = None,
) -> XlaAutoResult:
    """Compiles ``lowered`` for ``target`` with XLA's auto-sharding on, and reports the shardings XLA chose.

    Leave open what XLA should choose: a ``None`` in ``jit``'s ``in_shardings``/``out_shardings`` (lowered under
    ``with mesh:`` for a program of that mesh), or a program lowered without any sharding, which is partitioned
    for the target's device count. Shardings the program gives are kept. What XLA does with the option on the
    supported releases is in the module docstring: it leaves open shardings replicated.

    Args:
        lowered: a shardkit ``Lowered`` (``sk.jit(f).lower(...)``).
        target: the machine (``'tpu-v5e:4x4'``, ``'cpu:8'``; ``shardkit.executor.targets``).
        mesh_shape: the device mesh XLA chooses over, its product the target's device count; default the program's
            mesh, else a TPU slice's chip grid (``(4, 4)`` for ``tpu-v5e:4x4``), else one axis of every device.
        hardware: the profile the step is timed on; default the TPU target's own (a CPU target has none).

    Examples:
        >>> def f(x, w):
        ...     return x @ w
        >>> with sk.make_mesh((2, 4), ("x", "y")):
        ...     lowered = sk.jit(f, in_shardings=None, out_shardings=None).lower(jnp.ones((8, 16)), jnp.ones((16, 4)))
        >>> result = xla_autoshard(lowered, "cpu:8")
        >>> result.mesh_shape, result.in_hlo, result.partitioned  # XLA's CPU compiler has no auto-sharding pass
        ((2, 4), ('{replicated}', '{replicated}'), False)
    """
    if not isinstance(lowered, Lowered):
        raise TypeError(f"lowered must be a shardkit Lowered (sk.jit(f).lower(...)), got {type(lowered).__name__}.")
    machine = make_target(target, lowered._lowered.num_partitions)
    count = len(machine.devices)
    program = _open_program(lowered._lowered.for_platform(machine.platform), count)
    shape = _mesh_shape(mesh_shape, program, machine)
    if program.mesh is None or program.mesh.size != count:
        names = _AXES[: len(shape)] if len(shape) <= len(_AXES) else tuple(f"a{i}" for i in range(len(shape)))
        program = dataclasses.replace(program, mesh=AbstractMesh(shape, names))
    bound = bind_target(program, machine)
    start = time.perf_counter()
    executable = compile_lowered(bound, auto_mesh=shape)
    seconds = time.perf_counter() - start
    compiled = Compiled(bound, executable)
    profile = hardware or profile_name(machine.name)
    step = None if profile is None else compiled.communication().time(profile)
    return XlaAutoResult(
        compiled,
        shape,
        compiled.input_shardings,
        compiled.output_shardings,
        _hlo_texts(executable.get_parameter_shardings(), len(bound.in_avals)),
        _hlo_texts(executable.get_output_shardings(), len(bound.out_avals)),
        seconds,
        step,
        compiled.memory(),
    )


def _open_program(lowered: LoweredModule, count: int) -> LoweredModule:
    """``lowered`` in the GSPMD form XLA's auto-sharding needs; a program of one partition (whose shardings, if
    any, are over one device) partitioned for ``count`` devices. Another count stays: binding checks it against
    the target's."""
    module = copy_module(lowered.module)
    if irx.meshes(module) or any(irx.SDY_SHARDING in site.shardings for site in irx.walk_shardings(module)):
        run_pipeline(module, "export-gspmd")
    program = lowered.with_module(module)
    if lowered.num_partitions != 1 or count == 1:
        return program
    with module.context:
        irx.set_attr(module.operation, irx.NUM_PARTITIONS, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), count))
    return dataclasses.replace(program, num_partitions=count, mesh=None)


def _mesh_shape(given: Sequence[int] | None, program: LoweredModule, machine: Target) -> tuple[int, ...]:
    count = len(machine.devices)
    if given is None:
        if program.mesh is not None and program.mesh.size == count:
            return tuple(program.mesh.shape.values())
        grid = re.match(r"tpu-[a-z0-9]+:([0-9x]+)(?:,slices=([0-9]+))?$", machine.name)
        if grid:
            chips = tuple(int(n) for n in grid.group(1).split("x") if int(n) > 1)
            return ((int(grid.group(2)),) if grid.group(2) else ()) + (chips or (1,))
        return (count,)
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise TypeError(f"mesh_shape must be a sequence of axis sizes such as (4, 4) or None, got {given!r}.")
    if not given or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in given):
        raise ValueError(f"mesh_shape={tuple(given)!r} must be positive axis sizes, at least one.")
    if math.prod(given) != count:
        raise ValueError(
            f"mesh_shape={tuple(given)!r} has {math.prod(given)} devices, but target {machine.name} has {count}."
        )
    return tuple(given)


def _hlo_texts(protos: Sequence[Any] | None, count: int) -> tuple[str, ...]:
    """XLA's sharding text of the last ``count`` protos (effect tokens lead the executable's own)."""
    return tuple(str(_jaxlib.hlo_from_proto(p)) for p in list(protos or [])[-count:]) if count else ()
