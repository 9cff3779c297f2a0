"""A search's answer: the chosen layout, how to run it, every candidate evaluated, and why the winner won.

``Plan`` holds the chosen mesh and shardings (``in_shardings``, ``out_shardings`` and ``constraints``: the
arguments held as storage shardings, written at Shardy priority 1, and the layer boundaries constrained), makes
them a program (``jit()``, ``lower()``), and reports: ``step_time`` and ``memory_per_device`` (XLA's compiled
program for the target where the search confirmed the winner, the fast estimate otherwise), ``table()`` (every
candidate with its modelled time, bytes and memory: text, ``to_json()``, ``save_image(path)``), and ``explain()``
(what the winner avoids or adds against the runner-up).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from shardkit.autosharding.model import Estimate, Machine
from shardkit.autosharding.program import Program
from shardkit.autosharding.search import GAIN, Candidate, describe
from shardkit.autosharding.space import Choice, Spec, spec_text
from shardkit.inspect import locations, notebook, page, timing
from shardkit.inspect.units import aligned, human_bytes

TABLE_ROWS = 20  # rows the printed table shows (to_json has every candidate)


def human_seconds(s: float) -> str:
    """``inspect.timing.human_seconds``, and nanoseconds below a microsecond (a small program's steps).

    Examples:
        >>> human_seconds(2.5e-8), human_seconds(3e-5), human_seconds(0.0123)
        ('25 ns', '30.0 us', '12.30 ms')
    """
    return f"{s * 1e9:.0f} ns" if 0 < s < 1e-6 else timing.human_seconds(s)


@dataclasses.dataclass(frozen=True)
class Confirmed:
    """A candidate compiled for the target: XLA's program, timed by the same time model, and its memory.

    Attributes:
        step, compute, memory, communication: modelled seconds of XLA's program
            (``compiled.communication().time(hardware)``, loops by trip count); None when XLA refused it.
        peak: XLA's bytes per device (``compiled.memory().total``), None when refused.
        fits: within the memory limit (False when XLA refused the program for want of memory).
        seconds: how long the compile took.
        error: XLA's reason when it refused the program.
    """

    step: float | None
    compute: float | None
    memory: float | None
    communication: float | None
    peak: int | None
    fits: bool
    seconds: float
    error: str | None = None
    compiled: Any = dataclasses.field(default=None, repr=False, compare=False)


@dataclasses.dataclass(frozen=True)
class Constraint:
    """What a plan writes into the program beyond its in and out shardings: an argument held as a storage
    sharding (Shardy priority 1): split across the mesh as ``sharding`` says, gathered where it is used
    (``kind`` ``"stored"``); or a layer boundary, a value the loops carry, constrained at the start of each loop's
    body (``"boundary"``: ``path`` is ``carry<shape x dtype>``)."""

    path: str
    sharding: Any
    kind: str = "stored"

    def __str__(self) -> str:
        if self.kind == "boundary":
            return f"{self.path}: {self.sharding.spec} at each loop's start (a layer boundary's constraint)"
        return f"{self.path}: {self.sharding.spec} stored (priority 1: gathered where used)"


class Plan:
    """The layout ``autoshard`` chose (see the module docstring); ``print(plan)`` summarises it.

    Attributes:
        candidates: every candidate evaluated, best first (``Candidate``: mesh, layout, Shardy's reading, the
            estimate); ``chosen`` is the winner.
        confirmed: the candidates compiled for the target, by ``Candidate.key``.
        target: the target's name; ``hardware`` the profile the time model used.
        memory_limit: bytes per device the plan had to fit (None: no limit).
        search_seconds: wall time of the whole search (lowering, estimates, compiles).
        evaluations: candidates Shardy planned.
        plan_seconds: of the search's wall time, what the Shardy plans of the candidates took (``where_time``).
    """

    def __init__(
        self,
        *,
        fun: Callable | None,
        args: tuple[Any, ...],
        donate_argnums: tuple[int, ...],
        program: Program,
        machine: Machine,
        candidates: Sequence[Candidate],
        chosen: Candidate,
        confirmed: dict[tuple, Confirmed],
        memory_limit: int | None,
        user_mesh: Any,
        search_seconds: float,
        evaluations: int,
        out_tree: Any = None,
        plan_seconds: float = 0.0,
    ):
        self.fun = fun
        self.out_tree = out_tree
        self.args = args
        self.donate_argnums = donate_argnums
        self.program = program
        self.machine = machine
        self.candidates = tuple(candidates)
        self.chosen = chosen
        self.confirmed = confirmed
        self.memory_limit = memory_limit
        self.target = machine.target.name
        self.hardware = machine.hardware.name
        self._user_mesh = user_mesh
        self.search_seconds = search_seconds
        self.evaluations = evaluations
        self.plan_seconds = plan_seconds

    def where_time(self) -> dict[str, float]:
        """Where the search's wall time went: ``'compiles'`` (the confirming compiles for the target), ``'plans'``
        (Shardy's plans of the candidates, in the worker processes), ``'rest'`` (lowering, pricing, the rest)."""
        compiles = sum(c.seconds for c in self.confirmed.values())
        return {
            "compiles": compiles,
            "plans": self.plan_seconds,
            "rest": max(0.0, self.search_seconds - compiles - self.plan_seconds),
        }

    def _took(self) -> str:
        spent = self.where_time()
        return (
            f"{self.search_seconds:.1f} s (compiles {spent['compiles']:.1f} s, Shardy plans {spent['plans']:.1f} s, "
            f"lowering and the rest {spent['rest']:.1f} s)"
        )

    # -- the answer --------------------------------------------------------------------------------------

    @property
    def mesh(self) -> Any:
        """The chosen mesh: the user's (when their shardings named one), else an ``AbstractMesh`` the target lays
        onto its chips (``jit()`` takes this process's devices when it has as many)."""
        return mesh_for(self.chosen, self._user_mesh)

    def _specs(self, c: Candidate) -> list[Spec | None]:
        """Per argument, the spec the candidate gives it: its group's choice, or what Shardy chose for an open one
        (None for a fixed argument, which keeps its own sharding)."""
        out: list[Spec | None] = []
        for leaf in self.program.leaves:
            if leaf.group is None:
                out.append(None)
                continue
            choice = c.layout[leaf.group]
            out.append(choice.spec if choice is not None else c.reading.in_specs[leaf.index])
        return out

    @property
    def in_shardings(self) -> Any:
        """The arguments' shardings, as the arguments' tree (a fixed argument keeps the user's sharding)."""
        return self._in_shardings(self.chosen, self.mesh)

    def _in_shardings(self, c: Candidate, mesh: Any) -> Any:
        import jax

        from shardkit.partition_spec import P
        from shardkit.sharding import NamedSharding

        leaves, tree = jax.tree_util.tree_flatten(self.args)
        specs = self._specs(c)
        out = []
        for leaf, arg, spec in zip(self.program.leaves, leaves, specs):
            given = getattr(arg, "sharding", None)
            if leaf.group is None and getattr(given, "mesh", mesh).size != mesh.size:  # over the target (_resized)
                out.append(NamedSharding(mesh, given.spec))
            elif leaf.group is None:
                out.append(given)
            else:  # (a sharding over parts of axes, which no PartitionSpec says, is left to the compiler)
                out.append(None if spec is None else NamedSharding(mesh, P(*_partition(spec))))
        return jax.tree_util.tree_unflatten(tree, out)

    @property
    def out_shardings(self) -> Any:
        """The results' shardings as Shardy's propagation gives them on the chosen layout, one per output leaf
        (None where one cannot be written as mesh axes: the compiler then chooses it again)."""
        return self._out_shardings(self.chosen, self.mesh)

    def _out_shardings(self, c: Candidate, mesh: Any) -> list[Any]:
        from shardkit.partition_spec import P
        from shardkit.sharding import NamedSharding

        return [None if s is None else NamedSharding(mesh, P(*_partition(s))) for s in c.reading.out_specs]

    @property
    def constraints(self) -> tuple[Constraint, ...]:
        """What the plan writes beyond in and out shardings (module docstring): one storage sharding per argument
        of a stored group, one constraint per layer boundary it chooses."""
        return self._constraints(self.chosen, self.mesh)

    def _constraints(self, c: Candidate, mesh: Any) -> tuple[Constraint, ...]:
        from shardkit.partition_spec import P
        from shardkit.sharding import NamedSharding

        out = []
        for leaf in self.program.leaves:
            choice = c.layout[leaf.group] if leaf.group is not None else None
            if choice is not None and choice.storage and any(choice.spec):
                out.append(Constraint(leaf.path, NamedSharding(mesh, P(*_partition(choice.spec)))))
        for g in self.program.groups:
            choice = c.layout[g.index]
            if g.boundary and choice is not None:
                out.append(Constraint(g.name, NamedSharding(mesh, P(*_partition(choice.spec))), "boundary"))
        return tuple(out)

    @property
    def estimate(self) -> Estimate:
        """The fast model's estimate of the chosen layout."""
        return self.chosen.estimate

    @property
    def compiled(self) -> Any:
        """The chosen layout compiled for the target (compile-only), where the search confirmed it; else None."""
        confirmed = self.confirmed.get(self.chosen.key)
        return None if confirmed is None else confirmed.compiled

    @property
    def step_time(self) -> float:
        """Modelled seconds per step: of XLA's program compiled for the target where confirmed, else the
        estimate."""
        confirmed = self.confirmed.get(self.chosen.key)
        return confirmed.step if confirmed is not None and confirmed.step is not None else self.chosen.estimate.step

    @property
    def memory_per_device(self) -> int:
        """Bytes per device: XLA's where confirmed, else the estimate."""
        confirmed = self.confirmed.get(self.chosen.key)
        return confirmed.peak if confirmed is not None and confirmed.peak is not None else self.chosen.estimate.peak

    # -- as a program ------------------------------------------------------------------------------------

    def jit(self) -> Any:
        """``sk.jit`` of the function with the plan's shardings (on this process's devices when it has as many
        as the mesh, else on the abstract mesh: lower it and compile for the target). A plan that stores
        arguments returns a ``PlannedJit``, whose lowering also writes their priorities."""
        if self.fun is None:
            raise ValueError("this plan was made from a module, not a function: it has no jit (use lower())")
        return self._jit(self.chosen, local=True)

    def _jit(self, c: Candidate, *, local: bool) -> Any:
        from shardkit.mesh import AbstractMesh
        from shardkit.stages import jit

        mesh = mesh_for(c, self._user_mesh, local=local)
        stored = [leaf.index for leaf in self.program.leaves if _stored(c, leaf)]
        boundaries = self.program.boundary_constraints(c.layout)
        if (stored or boundaries) and isinstance(mesh, AbstractMesh):  # written into a lowering for devices
            mesh = self.machine.target.mesh(mesh)
        jitted = jit(
            self.fun,
            in_shardings=tuple(self._in_shardings(c, mesh)),
            out_shardings=_tree_of_outputs(self, c, mesh),
            donate_argnums=self.donate_argnums,
        )
        return PlannedJit(jitted, stored, boundaries) if stored or boundaries else jitted

    def lower(self) -> Any:
        """The plan lowered for the function's arguments (or, for a module, the module with the plan written in):
        ``.compile(target=plan.target)`` compiles it for the target, ``.as_text()`` shows it."""
        return self._lower(self.chosen)

    def _lower(self, c: Candidate, *, local: bool = True) -> Any:
        if self.fun is None:
            from shardkit.autosharding.program import written
            from shardkit.stages import load

            return load(written(self.program, c))
        return self._jit(c, local=local).lower(*self.args)

    # -- reports -----------------------------------------------------------------------------------------

    def table(self) -> CandidateTable:
        """Every candidate evaluated, best first: text (the first ``TABLE_ROWS``), ``to_json()``,
        ``save_image(path)``."""
        return CandidateTable(self)

    def explain(self) -> Explanation:
        """Why the winner beats the runner-up: the collectives it avoids or adds, compute, traffic, memory."""
        return explain(self)

    def to_html(self, path: str | os.PathLike | None = None, *, explain: bool = True) -> page.Page:
        """One self-contained page of the plan (``docs/inspect.md``): every candidate's modelled step against its
        memory per device (the winner, the runner-up, XLA's confirmed programs), why the winner wins, and the chosen
        program's page (XLA's compiled program where the search confirmed it, else Shardy's plan); written to
        ``path`` when given."""
        compiled = self.compiled
        if compiled is not None:
            communication = compiled.communication()
            step, memory = communication.time(self.machine.hardware), compiled.memory()
        else:
            communication, step, memory = self.lower().communication(), None, None
        data = page.program(communication, name="the chosen layout", memory=memory, step=step, explain=explain)
        sections = {"table": self.table().to_dict(), "explanation": self.explain().to_dict()}
        title = f"autoshard plan for {self.target}: mesh {self.chosen.mesh}"
        return page.save(page.program_page("plan", [data], title, plan=sections), path)

    def _repr_html_(self) -> str:
        """A notebook's compact view: the plan as printed, its candidates folded (``to_html()`` is the full page)."""
        body = notebook.pre(str(self)) + notebook.details("the candidates", str(self.table()))
        return notebook.card("autoshard plan", [], body, "to_html() gives the full report page")

    def __str__(self) -> str:
        c = self.chosen
        confirmed = self.confirmed.get(c.key)
        where = "XLA's program" if confirmed is not None and confirmed.step is not None else "estimate"
        lines = [
            f"Plan for {self.target} ({self.machine.devices} devices, timed on {self.hardware}): mesh {c.mesh}",
            f"  step {human_seconds(self.step_time)} ({where}), {human_bytes(self.memory_per_device)} per device"
            + (f" of {human_bytes(self.memory_limit)}" if self.memory_limit else ""),
            f"  {describe(c, self.program)}",
        ]
        for constraint in self.constraints:
            lines.append(f"  {constraint}")
        lines.append(
            f"  searched {len(self.candidates)} candidates ({self.evaluations} Shardy plans, "
            f"{len(self.confirmed)} compiled) in {self._took()}"
        )
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"<Plan {self.target} mesh {self.chosen.mesh}: {describe(self.chosen, self.program)}>"


class PlannedJit:
    """``sk.jit`` of a function with a plan's shardings whose lowering also stores some arguments (Shardy
    priority 1 on their sharded dimensions) or constrains layer boundaries (a constraint at the start of a loop's
    body), which ``in_shardings`` cannot say; called, it compiles once per argument signature."""

    def __init__(
        self,
        jitted: Any,
        stored: Sequence[int],
        boundaries: Sequence[tuple[tuple[tuple[int, int], ...], Spec]] = (),
    ):
        self.jitted = jitted
        self.stored = tuple(stored)
        self.boundaries = tuple(boundaries)
        self._compiled: dict[Any, Any] = {}

    def lower(self, *args: Any) -> Any:
        from shardkit.autosharding.program import constrain_boundaries, with_priorities
        from shardkit.dialects import irx

        lowered = self.jitted.lower(*args)
        module = with_priorities(lowered.compiler_ir(), self.stored)
        if self.boundaries:
            names = [n for n, m in irx.meshes(module).items() if m.axes]
            if not names:
                raise ValueError("a plan's layer boundaries need the mesh its shardings name; the lowering has none")
            constrain_boundaries(module, names[0], self.boundaries)
        return lowered.with_module(module)

    def __call__(self, *args: Any) -> Any:
        import jax

        leaves, tree = jax.tree_util.tree_flatten(args)
        key = (tree, tuple((getattr(x, "shape", ()), str(getattr(x, "dtype", type(x)))) for x in leaves))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self.lower(*args).compile()
        return compiled(*args)

    def __repr__(self) -> str:
        return (
            f"<PlannedJit of {self.jitted!r}, {len(self.stored)} stored arguments, "
            f"{len(self.boundaries)} layer boundaries>"
        )


def mesh_for(c: Candidate, user_mesh: Any, *, local: bool = False) -> Any:
    """The mesh of a candidate: the user's, or an AbstractMesh (with ``local``, a Mesh of this process's devices
    when it has exactly as many)."""
    from shardkit import mesh as mesh_

    if user_mesh is not None:
        return user_mesh
    if local:
        import jax

        if len(jax.devices()) == c.mesh.size:
            return mesh_.make_mesh(c.mesh.sizes, c.mesh.names)
    return mesh_.AbstractMesh(c.mesh.sizes, c.mesh.names)


def _stored(c: Candidate, leaf: Any) -> bool:
    choice = c.layout[leaf.group] if leaf.group is not None else None
    return choice is not None and choice.storage and any(choice.spec)


def _partition(spec: Spec) -> tuple[Any, ...]:
    """A spec as PartitionSpec entries: None, an axis name, or a tuple of them."""
    return tuple(None if not d else d[0] if len(d) == 1 else tuple(d) for d in spec)


def _tree_of_outputs(plan: Plan, c: Candidate, mesh: Any) -> Any:
    """The out_shardings argument of ``jit``: the propagated result shardings when every one can be written,
    else None (the compiler chooses them, as the search's plan did)."""
    outs = plan._out_shardings(c, mesh)
    tree = plan.out_tree
    if not outs or any(s is None for s in outs) or tree is None or tree.num_leaves != len(outs):
        return None
    import jax

    return jax.tree_util.tree_unflatten(tree, outs)


# -- the table -------------------------------------------------------------------------------------------


class CandidateTable:
    """Every candidate of a plan with its estimate and, where compiled, XLA's figures (``Plan.table``)."""

    def __init__(self, plan: Plan):
        self.plan = plan

    def alike(self) -> list[list[int]]:
        """The candidates (by rank) in groups of equal estimates (time, memory and bytes sent: the same program in
        effect, e.g. one layout on several orders of its mesh, or equivalent shardings of a dimension of size
        one), each group in rank order with the chosen or a compiled one first, groups by their best rank."""
        plan = self.plan
        groups: dict[tuple, list[int]] = {}
        for rank, c in enumerate(plan.candidates):
            groups.setdefault(alike_key(c), []).append(rank)

        def first(rank: int) -> tuple[int, int]:
            c = plan.candidates[rank]
            return (0 if c.key == plan.chosen.key else 1 if c.key in plan.confirmed else 2, rank)

        return sorted((sorted(g, key=first) for g in groups.values()), key=min)

    def rows(self) -> list[dict[str, Any]]:
        """Every candidate, best first, as data (``alike``: the rank of the row that stands for its group)."""
        standing = {rank: group[0] for group in self.alike() for rank in group}
        out = []
        for rank, c in enumerate(self.plan.candidates):
            e = c.estimate
            confirmed = self.plan.confirmed.get(c.key)
            fits = None if self.plan.memory_limit is None else e.peak <= self.plan.memory_limit
            out.append(
                {
                    "rank": rank,
                    "alike": standing[rank],
                    "chosen": c.key == self.plan.chosen.key,
                    "mesh": dict(c.mesh.axes),
                    "layout": {g.name: spec_text(choice) for g, choice in zip(self.plan.program.groups, c.layout)},
                    "summary": describe(c, self.plan.program),
                    "found": c.found,
                    "step_seconds": e.step,
                    "compute_seconds": e.compute,
                    "memory_seconds": e.memory,
                    "communication_seconds": e.communication,
                    "wire_bytes_per_device": e.wire_bytes,
                    "peak_bytes_per_device": e.peak,
                    "fits": fits,
                    "xla": None
                    if confirmed is None
                    else {
                        "step_seconds": confirmed.step,
                        "peak_bytes_per_device": confirmed.peak,
                        "fits": confirmed.fits,
                        "compile_seconds": confirmed.seconds,
                        "error": confirmed.error,
                    },
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        p = self.plan
        return {
            "target": p.target,
            "hardware": p.hardware,
            "devices": p.machine.devices,
            "memory_limit": p.memory_limit,
            "search_seconds": p.search_seconds,
            "search_seconds_by_part": p.where_time(),
            "evaluations": p.evaluations,
            "candidates": self.rows(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    _repr_html_ = notebook.text

    def __str__(self) -> str:
        p = self.plan
        limit = f", limit {human_bytes(p.memory_limit)} per device" if p.memory_limit else ""
        groups = self.alike()
        lines = [
            f"autoshard for {p.target} on {p.hardware}: {len(p.candidates)} candidates ({p.evaluations} Shardy "
            f"plans, {len(p.confirmed)} compiled) in {p.search_seconds:.1f} s{limit}; {len(groups)} distinct, the "
            f"first {min(TABLE_ROWS, len(groups))} best first (* chosen; alike: candidates with the same estimate):"
        ]
        rows_data = self.rows()
        rows = []
        for group in groups[:TABLE_ROWS]:
            rank = group[0]
            row, c = rows_data[rank], p.candidates[rank]
            xla = row["xla"]
            if xla is None:
                xla_text = "-"
            elif xla["step_seconds"] is None:
                xla_text = "refused"
            else:
                xla_text = f"{human_seconds(xla['step_seconds'])} {human_bytes(xla['peak_bytes_per_device'])}"
            rows.append(
                [
                    ("*" if row["chosen"] else "") + str(rank),
                    str(c.mesh),
                    human_seconds(c.estimate.step),
                    human_seconds(c.estimate.compute),
                    human_seconds(c.estimate.memory),
                    human_seconds(c.estimate.communication),
                    human_bytes(c.estimate.wire_bytes),
                    human_bytes(c.estimate.peak),
                    {None: "-", True: "yes", False: "NO"}[row["fits"]],
                    xla_text,
                    str(len(group) - 1),
                    row["summary"],
                ]
            )
        header = ["#", "mesh", "step", "compute", "memory", "comm", "sent/dev", "mem/dev", "fits", "XLA step, mem"]
        lines += aligned([*header, "alike", "layout"], rows)
        return "\n".join(lines) + "\n"

    def save_image(self, path: str | os.PathLike, rows: int = TABLE_ROWS) -> None:
        """The best ``rows`` distinct candidates as bars: the modelled step split into its compute-or-memory part and
        its communication, XLA's step as a dot where compiled, the chosen one outlined (PNG or SVG;
        ``shardkit[viz]``)."""
        from shardkit.inspect import images

        p = self.plan
        shown = [p.candidates[group[0]] for group in self.alike()[:rows]]
        figure = images.new_figure(10, 1.2 + 0.32 * len(shown))
        axes = figure.add_subplot()
        ms = 1e3
        for i, c in enumerate(shown):
            e = c.estimate
            busy = max(e.compute, e.memory)
            chosen = c.key == p.chosen.key
            edge = "black" if chosen else "none"
            axes.barh(i, busy * ms, color="#4c72b0", edgecolor=edge, height=0.7)
            axes.barh(i, e.communication * ms, left=busy * ms, color="#dd8452", edgecolor=edge, height=0.7)
            confirmed = p.confirmed.get(c.key)
            if confirmed is not None and confirmed.step is not None:
                axes.plot(confirmed.step * ms, i, "o", color="black", markersize=4)
        labels = [f"{c.mesh} | {describe(c, p.program)}"[:70] for c in shown]
        axes.set_yticks(range(len(shown)), labels, fontsize=7)
        axes.invert_yaxis()
        axes.set_xlabel("modelled step, ms (blue: max(compute, memory); orange: communication; dot: XLA's program)")
        axes.set_title(
            f"autoshard for {p.target} on {p.hardware}: the best {len(shown)} distinct of {len(p.candidates)}",
            fontsize=9,
        )
        images.save_figure(figure, path)


# -- why the winner wins ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Difference:
    """One collective (by kind, line and jax op) whose time per step differs between winner and runner-up."""

    kind: str
    source: str | None
    op_name: str
    shapes: str
    winner_seconds: float
    runner_up_seconds: float

    @property
    def verb(self) -> str:
        if not self.winner_seconds:
            return "avoids"
        if not self.runner_up_seconds:
            return "adds"
        return "spends less on" if self.winner_seconds < self.runner_up_seconds else "spends more on"


@dataclasses.dataclass(frozen=True)
class Side:
    """One side of an explanation: a candidate and its figures per step and per device, from the explanation's
    basis (XLA's compiled program where both sides were compiled, else the estimate)."""

    candidate: Candidate
    step: float
    compute: float
    memory: float
    communication: float
    peak: int

    @classmethod
    def of(cls, c: Candidate, confirmed: Confirmed | None) -> Side:
        if confirmed is not None and confirmed.step is not None:
            return cls(c, confirmed.step, confirmed.compute, confirmed.memory, confirmed.communication, confirmed.peak)
        e = c.estimate
        return cls(c, e.step, e.compute, e.memory, e.communication, e.peak)

    def to_dict(self, program: Program) -> dict[str, Any]:
        c = self.candidate
        return {
            "mesh": dict(c.mesh.axes),
            "layout": describe(c, program),
            "step_seconds": self.step,
            "compute_seconds": self.compute,
            "memory_seconds": self.memory,
            "communication_seconds": self.communication,
            "peak_bytes_per_device": self.peak,
        }


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The winner against the runner-up (``Plan.explain``): step times, the collectives whose time differs most,
    compute, memory traffic and memory per device, all from one basis (``basis``)."""

    winner: Side
    runner_up: Side | None
    basis: str
    differences: tuple[Difference, ...]
    program: Program = dataclasses.field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "basis": self.basis,
            "winner": self.winner.to_dict(self.program),
            "runner_up": None if self.runner_up is None else self.runner_up.to_dict(self.program),
            "differences": [{**dataclasses.asdict(d), "verb": d.verb} for d in self.differences],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    _repr_html_ = notebook.text

    def __str__(self) -> str:
        w, r = self.winner, self.runner_up
        head = f"The plan (mesh {w.candidate.mesh}: {describe(w.candidate, self.program)})"
        if r is None:
            return head + " is the only candidate that fits.\n"
        lines = [
            f"{head} beats the runner-up (mesh {r.candidate.mesh}: {describe(r.candidate, self.program)}) by "
            f"{human_seconds(r.step - w.step)} per step ({human_seconds(w.step)} against {human_seconds(r.step)}, "
            f"{self.basis}):"
        ]
        for d in self.differences:
            where = f" at {locations.short(d.source)}" if d.source else ""
            amount = (
                human_seconds(d.winner_seconds or d.runner_up_seconds)
                if d.verb in ("avoids", "adds")
                else f"{human_seconds(d.winner_seconds)} against {human_seconds(d.runner_up_seconds)}"
            )
            lines.append(f"  it {d.verb} {d.kind} of {d.shapes}{where} ({amount} per step)")
        figures = [("compute", w.compute, r.compute), ("memory traffic", w.memory, r.memory)]
        largest = max(figures, key=lambda f: abs(f[1] - f[2]))
        for label, a, b in figures:
            if abs(a - b) > 0.01 * max(w.step, r.step, 1e-12) or (not self.differences and (label, a, b) == largest):
                lines.append(f"  {label}: {human_seconds(a)} against {human_seconds(b)} per step")
        lines.append(f"  communication: {human_seconds(w.communication)} against {human_seconds(r.communication)}")
        lines.append(f"  memory per device: {human_bytes(w.peak)} against {human_bytes(r.peak)}")
        return "\n".join(lines) + "\n"


def explain(plan: Plan, top: int = 6) -> Explanation:
    """``Plan.explain`` (see there): on XLA's programs where both sides were compiled, else on the estimates."""
    winner, runner = plan.chosen, _runner_up(plan)
    cw = plan.confirmed.get(winner.key)
    cr = plan.confirmed.get(runner.key) if runner is not None else None
    compiled = all(c is not None and c.step is not None and c.compiled is not None for c in (cw, cr))
    if not compiled:
        cw = cr = None
    basis = "XLA's programs for the target, modelled" if compiled else "the estimates"
    differences: list[Difference] = []
    if runner is not None:
        site = (
            (lambda c, conf: _by_xla_site(plan, conf))
            if compiled
            else (lambda c, conf: _by_site(zip(c.reading.collectives, c.estimate.by_collective)))
        )
        a, b = site(winner, cw), site(runner, cr)
        for key in set(a) | set(b):
            (ta, shapes_a), (tb, shapes_b) = a.get(key, (0.0, "")), b.get(key, (0.0, ""))
            if abs(ta - tb) > 1e-9:
                kind, source, op_name = key
                differences.append(Difference(kind, source, op_name, shapes_a or shapes_b, ta, tb))
        differences.sort(key=lambda d: -abs(d.winner_seconds - d.runner_up_seconds))
    sides = Side.of(winner, cw), None if runner is None else Side.of(runner, cr)
    return Explanation(sides[0], sides[1], basis, tuple(differences[:top]), plan.program)


def alike_key(c: Candidate) -> tuple:
    """Equal for candidates whose estimates agree (time to 3 digits, memory and bytes sent to 4 KiB): one program
    in effect (one layout on several orders of its mesh; a dimension of size one sharded or not)."""
    e = c.estimate
    return float(f"{e.step:.3e}"), e.peak >> 12, e.wire_bytes >> 12


def _runner_up(plan: Plan) -> Candidate | None:
    """The best candidate unlike the winner that fits: a compiled one where there is one, else the best estimate.
    Unlike: another estimate, by more than the search's least gain where any candidate differs that much (a
    layout a few nanoseconds off the winner's is the same choice, and explains nothing)."""
    limit = plan.memory_limit
    mine, step = alike_key(plan.chosen), plan.chosen.estimate.step
    fitting = [c for c in plan.candidates if alike_key(c) != mine and (limit is None or c.estimate.peak <= limit)]
    others = [c for c in fitting if abs(c.estimate.step - step) > GAIN * step] or fitting
    confirmed = [c for c in others if c.key in plan.confirmed and plan.confirmed[c.key].step is not None]
    if confirmed:
        return min(confirmed, key=lambda c: plan.confirmed[c.key].step)
    return min(others, key=lambda c: c.estimate.step) if others else None


def _by_xla_site(plan: Plan, confirmed: Confirmed) -> dict[tuple, tuple[float, str]]:
    """A compiled program's collectives by site (``_by_site``), timed as its step is."""
    step = confirmed.compiled.communication().time(plan.machine.hardware)
    return _by_site(((t.collective, t.total) for t in step.collectives), unnamed=True)


def _by_site(timed: Any, unnamed: bool = False) -> dict[tuple, tuple[float, str]]:
    """Seconds per step of ``(collective, seconds)`` pairs by (kind, line, jax op), with the first one's per-device
    shapes and the axes it runs over (``unnamed``: also where it names none, as ``?``)."""
    out: dict[tuple, tuple[float, str]] = {}
    for col, seconds in timed:
        key = (col.kind, col.source, col.op_name)
        t, shapes = out.get(key, (0.0, ""))
        runs = f" x{col.executions}" if col.executions > 1 else ""
        over = f" over {col.over}" if col.axes or unnamed else ""
        out[key] = (t + seconds, shapes or f"{', '.join(map(str, col.operands))}{over}{runs}")
    return out


__all__ = ["CandidateTable", "Choice", "Confirmed", "Constraint", "Explanation", "Plan", "PlannedJit", "Side"]
