"""``autoshard(f, *args, target=...)``: lower once, search, confirm the best few by compiling, answer a Plan.

The same search runs on a module whose arguments' shardings are open (``autoshard_module``), for the
``auto-partition`` pass and ``shardkit-report --autoshard``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax

from shardkit.autosharding import model, workers as workers_
from shardkit.autosharding.plan import Confirmed, Plan
from shardkit.autosharding.program import Program, from_function, from_module, written
from shardkit.autosharding.search import Candidate, Search, describe
from shardkit.autosharding.space import MeshShape
from shardkit.autosharding.workers import Pool
from shardkit.executor import targets
from shardkit.inspect import OutOfMemoryError
from shardkit.inspect.hardware import hardware as profile
from shardkit.inspect.units import human_bytes
from shardkit.mesh import Mesh
from shardkit.stages import load

CPU_HARDWARE = "h100"  # a cpu:N target has no hardware profile; its candidates are timed as GPUs in nodes of 8
CONFIRM = 2


def autoshard(
    fun: Callable,
    *args: Any,
    target: str | Any,
    mesh: Any = None,
    memory_limit: int | None = None,
    hardware: str | None = None,
    donate_argnums: int | Sequence[int] = (),
    confirm: int = CONFIRM,
    workers: int = 2,
) -> Plan:
    """Searches the shardings of ``fun(*args)`` for ``target`` and returns the fastest layout that fits.

    Args:
        fun: the function (jax traces it once, without shardings).
        *args: its arguments: arrays or ShapeDtypeStructs (pytrees of them). One that carries a sharding over a mesh
            keeps it, and its mesh is the plan's.
        target: the machine (``'tpu-v5e:16x16'``, ``'tpu-v5p:8x16x16'``, ``'cpu:8'``; ``docs/targets.md``).
        mesh: the mesh to lay the program on (a Mesh or AbstractMesh with as many devices as the target); default:
            searched among every mesh of 1 to 3 axes.
        memory_limit: bytes per device every candidate must fit; default the target's HBM (none for ``cpu:N``).
        hardware: the profile the time model uses; default the target's (``cpu:N``: ``'h100'``, GPUs in nodes of 8).
        donate_argnums: arguments whose buffers the program may reuse (as ``jit``'s).
        confirm: how many of the best candidates to compile for the target (0: trust the estimate).
        workers: processes evaluating candidates at once (0: in this process).

    Returns:
        A ``Plan``: ``plan.mesh``, ``plan.in_shardings``, ``plan.out_shardings``, ``plan.constraints``,
        ``plan.jit()``, ``plan.lower()``, ``plan.step_time``, ``plan.memory_per_device``, ``plan.table()``,
        ``plan.explain()``.

    Raises:
        ValueError: an unknown target, a mesh of another device count, a memory limit no candidate meets (naming
            the smallest footprint found), a sharding the user gave that the mesh cannot split.

    Examples:
        >>> f = lambda x, w: (x @ w).sum()
        >>> x, w = np.ones((64, 32), np.float32), np.ones((32, 16), np.float32)
        >>> plan = sk.autoshard(f, x, w, target="cpu:8", confirm=0, workers=0)
        >>> plan.mesh.size, float(plan.jit()(x, w))
        (8, 32768.0)
    """
    start = time.perf_counter()
    if not callable(fun):
        raise TypeError(f"autoshard's fun must be a function, got {type(fun).__name__}: {fun!r}.")
    if hasattr(fun, "lower") and hasattr(fun, "__wrapped__"):  # a jit: its shardings would be ignored
        raise TypeError(
            f"autoshard takes the function itself, not {fun!r}: pass its __wrapped__ (the plan's jit() stages it)."
        )
    donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    _counts(confirm, workers)
    machine, limit = _machine(target, hardware, memory_limit)
    workers_.start(workers)  # their start-up overlaps the lowering
    program, lowered = from_function(fun, args, donate, machine.target.platform)
    user_mesh = _user_mesh(args)
    meshes = _meshes(program, machine, mesh, user_mesh)
    return _search(
        program,
        machine,
        meshes,
        limit,
        confirm=confirm,
        workers=workers,
        start=start,
        fun=fun,
        args=args,
        donate=donate,
        user_mesh=_kept_mesh(user_mesh, meshes) if user_mesh is not None else mesh if isinstance(mesh, Mesh) else None,
        out_tree=_out_tree(lowered),
    )


def autoshard_module(
    module: Any,
    *,
    target: str | Any,
    memory_limit: int | None = None,
    hardware: str | None = None,
    confirm: int = CONFIRM,
    workers: int = 2,
) -> Plan:
    """``autoshard`` for a module (an ``ir.Module`` or a ``Lowered``) whose free arguments have no sharding or
    only open dimensions; ``plan.lower()`` is the module with the plan written in."""
    start = time.perf_counter()
    if hasattr(module, "compiler_ir"):
        module = module.compiler_ir()
    _counts(confirm, workers)
    machine, limit = _machine(target, hardware, memory_limit)
    program = from_module(module)
    meshes = _meshes(program, machine, None, None)
    return _search(program, machine, meshes, limit, confirm=confirm, workers=workers, start=start)


def _search(
    program: Program,
    machine: model.Machine,
    meshes: list[MeshShape] | None,
    limit: int | None,
    *,
    confirm: int,
    workers: int,
    start: float,
    fun: Callable | None = None,
    args: tuple = (),
    donate: tuple[int, ...] = (),
    user_mesh: Any = None,
    out_tree: Any = None,
) -> Plan:
    with Pool(program, workers if program.groups else 0) as pool:
        search = Search(program, machine, memory_limit=limit, evaluate=pool.evaluate)
        ranked = search.run(meshes)
    if not ranked:
        reasons = "; ".join(f"{m}: {e}" for m, _, e in search.failures[:3])
        raise ValueError(f"autoshard found no layout Shardy could plan for {machine.target.name}: {reasons}")
    plan = Plan(
        fun=fun,
        args=args,
        donate_argnums=donate,
        program=program,
        machine=machine,
        candidates=ranked,
        chosen=ranked[0],
        confirmed={},
        memory_limit=limit,
        user_mesh=user_mesh,
        search_seconds=0.0,
        evaluations=search.stats.evaluations,
        out_tree=out_tree,
    )
    plan.plan_seconds = search.stats.seconds
    chosen = _confirm(plan, ranked, confirm, limit)
    failed = [c.error for c in plan.confirmed.values() if (c.error or "").startswith("XLA could not compile")]
    if chosen is None and failed and len(failed) == len(plan.confirmed):
        raise ValueError(
            f"autoshard: none of the {len(failed)} best layouts compiled for {machine.target.name}: {failed[0]}"
        )
    missed = [c for c in ranked if c.key in plan.confirmed and (limit is None or c.estimate.peak <= limit)]
    if chosen is None and missed:
        first = plan.confirmed[missed[0].key]
        xla = first.error or f"{_human(first.peak)} per device"
        peaks = sorted(c.estimate.peak for c in missed)
        raise ValueError(
            f"autoshard: the {len(missed)} best layouts for {machine.target.name} fit memory_limit={limit} "
            f"({_human(limit)} per device) by the estimate ({_human(peaks[0])} to {_human(peaks[-1])}), but none "
            f"does in XLA's program (the first, mesh {missed[0].mesh}: {xla}): the estimate misses what XLA holds "
            f"for this program. Confirm more of them (confirm={len(plan.confirmed) + confirm}), raise the limit or "
            "use a bigger target."
        )
    if chosen is None:
        smallest = min(ranked, key=lambda c: _footprint(plan, c))
        raise ValueError(
            f"memory_limit={limit} ({_human(limit)} per device) is below every layout's footprint on "
            f"{machine.target.name}: the smallest found is {_human(_footprint(plan, smallest))} per device "
            f"(mesh {smallest.mesh}, {describe(smallest, plan.program)}); raise the limit or use a bigger target."
        )
    plan.chosen = chosen
    plan.search_seconds = time.perf_counter() - start
    return plan


def _confirm(plan: Plan, ranked: list[Candidate], count: int, limit: int | None) -> Candidate | None:
    """Compiles the best ``count`` distinct candidates for the target (more while none fits) and returns the one
    whose XLA program models fastest among those that fit; without compiles, the best estimate that fits."""
    fitting = [c for c in ranked if limit is None or c.estimate.peak <= limit]
    if count == 0:
        return fitting[0] if fitting else None
    tried, distinct = 0, []
    for c in ranked:
        if any(_same(c, d) for d in distinct):
            continue
        distinct.append(c)
        plan.confirmed[c.key] = _compile(plan, c, limit)
        tried += 1
        fits = [d for d in distinct if plan.confirmed[d.key].fits]
        if tried >= count and fits:
            break
        if tried >= count + 4:  # nothing that fits among the best: stop looking
            break
    fits = [d for d in distinct if plan.confirmed[d.key].fits]
    if not fits:
        return None
    return min(fits, key=lambda d: plan.confirmed[d.key].step)


def _same(a: Candidate, b: Candidate) -> bool:
    """Too alike to spend a compile on both: estimates within 0.1% in time and 1% in memory (the same layout on
    another order of its mesh, a small argument replicated rather than split); the compiles go to candidates
    that differ."""
    ea, eb = a.estimate, b.estimate
    return math.isclose(ea.step, eb.step, rel_tol=1e-3) and math.isclose(ea.peak, eb.peak, rel_tol=1e-2)


def _compile(plan: Plan, c: Candidate, limit: int | None) -> Confirmed:
    start = time.perf_counter()
    try:  # the module the search planned, with its mesh, shardings and priorities written in
        compiled = load(written(plan.program, c)).compile(target=plan.machine.target)
    except OutOfMemoryError as e:
        return Confirmed(None, None, None, None, None, False, time.perf_counter() - start, str(e).splitlines()[1])
    except Exception as e:  # noqa: BLE001  (XLA refusing one candidate rules that candidate out, not the search)
        reason = f"XLA could not compile it: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return Confirmed(None, None, None, None, None, False, time.perf_counter() - start, reason)
    seconds = time.perf_counter() - start
    report = compiled.communication()
    step = report.time(plan.machine.hardware)  # loop bodies counted by their trip counts (Compiled.cost)
    memory = compiled.memory()
    fits = limit is None or memory.within(limit)
    return Confirmed(
        step.step, step.compute, step.memory, step.communication, memory.total, fits, seconds, compiled=compiled
    )


def _footprint(plan: Plan, c: Candidate) -> int:
    confirmed = plan.confirmed.get(c.key)
    return confirmed.peak if confirmed is not None and confirmed.peak is not None else c.estimate.peak


def _human(n: int | None) -> str:
    return "no limit" if n is None else human_bytes(n)


def _counts(confirm: Any, workers: Any) -> None:
    for name, value, what in (("confirm", confirm, "candidates"), ("workers", workers, "processes")):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"autoshard's {name} must be a number of {what} >= 0, got {value!r}.")


def _machine(target: Any, hardware: str | None, memory_limit: int | None) -> tuple[model.Machine, int | None]:
    if isinstance(target, str) and target.strip().startswith("cpu") and ":" not in target:
        raise ValueError(f"target={target!r}: name the device count to search for, e.g. 'cpu:8'.")
    t = targets.target(target)
    name = hardware or targets.profile_name(t.name) or CPU_HARDWARE
    try:
        hw = profile(name)
    except ValueError as e:
        raise ValueError(f"hardware={name!r}: {e}") from None
    if memory_limit is not None and (
        isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit <= 0
    ):
        raise ValueError(f"memory_limit must be a positive number of bytes per device, got {memory_limit!r}.")
    capacity = hw.hbm_bytes if t.platform == "tpu" else None
    limit = memory_limit if memory_limit is not None else capacity
    return model.Machine(t, hw, limit), limit


def _user_mesh(args: Sequence[Any]) -> Any:
    """The mesh of the first argument leaf that carries a NamedSharding."""
    for leaf in jax.tree_util.tree_leaves(tuple(args)):
        mesh = getattr(getattr(leaf, "sharding", None), "mesh", None)
        if mesh is not None:
            return mesh
    return None


def _meshes(program: Program, machine: model.Machine, mesh: Any, user_mesh: Any) -> list[MeshShape] | None:
    """The meshes to search: the one the program fixes or the caller names (checked against the target), or None
    (every mesh of the target's device count)."""
    n = machine.devices
    fixed = None
    if program.mesh is not None:
        _, sdy_mesh = program.mesh
        fixed = MeshShape(tuple(a for a, _ in sdy_mesh.axes), tuple(s for _, s in sdy_mesh.axes))
        if fixed.size != n and mesh is None:
            return _resized(program, fixed, n, machine.target.name)
    if mesh is not None:
        shape = getattr(mesh, "shape", None)
        if not hasattr(mesh, "axis_names") or not hasattr(shape, "items"):
            raise TypeError(f"mesh must be a Mesh or AbstractMesh, got {type(mesh).__name__}: {mesh!r}.")
        given = MeshShape(tuple(shape.keys()), tuple(shape.values()))
        if given.size != n:
            raise ValueError(
                f"mesh {given} has {given.size} devices, but target {machine.target.name} has {n}; give a mesh of "
                f"{n} devices."
            )
        if fixed is not None and given != fixed:
            raise ValueError(f"mesh {given} differs from the mesh {fixed} the given shardings name.")
        fixed = given
    if fixed is not None:
        return [fixed]
    return None


def _kept_mesh(user_mesh: Any, meshes: list[MeshShape] | None) -> Any:
    """The user's mesh where the plan keeps it; None where the search re-plans over the target (``_resized``)."""
    return user_mesh if meshes is None or any(m.size == user_mesh.size for m in meshes) else None


def _resized(program: Program, given: MeshShape, n: int, target: str) -> list[MeshShape]:
    """The meshes of ``n`` devices with the axes of ``given`` (the mesh the program's shardings and constraints
    name, built for another device count: a trainer's rules name axes, not sizes), each axis ``given`` uses (its
    size above 1) any size, the others 1, every given sharding still dividing its dimensions: the search re-plans
    over the target on them.

    Examples:
        >>> from shardkit.autosharding.program import Program
        >>> p = Program(None, (), (), (), None, ())
        >>> [str(m) for m in _resized(p, MeshShape(("data", "stage", "fsdp"), (2, 1, 4)), 8, "t")]
        ['data=1 stage=1 fsdp=8', 'data=2 stage=1 fsdp=4', 'data=4 stage=1 fsdp=2', 'data=8 stage=1 fsdp=1']
    """
    used = [i for i, s in enumerate(given.sizes) if s > 1]
    found, refused = [], []
    for sizes in _factorizations(n, len(used)):
        shape = list(given.sizes)
        for i, size in zip(used, sizes):
            shape[i] = size
        candidate = MeshShape(given.names, tuple(1 if i not in used else s for i, s in enumerate(shape)))
        split = [leaf for leaf in program.leaves if leaf.fixed is not None and not _divides(candidate, leaf)]
        (refused if split else found).append((candidate, split))
    if not found:
        mesh, split = refused[0] if refused else (given, [])
        example = f" (on {mesh}: {split[0].path}, {split[0].shape}, over {split[0].fixed})" if split else ""
        raise ValueError(
            f"the program's mesh {given} (from the shardings it was given) has {given.size} devices and target "
            f"{target} has {n}: no mesh of its axes over {n} devices divides every given sharding{example}; give "
            f"shardings over a mesh of {n} devices, or none."
        )
    return [mesh for mesh, _ in found]


def _factorizations(n: int, k: int) -> list[tuple[int, ...]]:
    """Every way to write ``n`` as an ordered product of ``k`` positive integers (``k = 0``: only ``n = 1``)."""
    if k == 0:
        return [()] if n == 1 else []
    return [(d, *rest) for d in range(1, n + 1) if n % d == 0 for rest in _factorizations(n // d, k - 1)]


def _divides(mesh: MeshShape, leaf: Any) -> bool:
    """Whether ``leaf``'s given sharding splits each dimension evenly on ``mesh``."""
    return all(dim % mesh.size_of(axes) == 0 for dim, axes in zip(leaf.shape, leaf.fixed))


def _out_tree(lowered: Any) -> Any:
    _, tree = jax.tree_util.tree_flatten(lowered.out_shardings, is_leaf=lambda x: x is None)
    return tree


__all__ = ["autoshard", "autoshard_module"]
