"""The search: which mesh, and which sharding for each free argument, minimise the modelled step.

A state is a mesh and a layout (per group: open, or per dimension the mesh axes that split it). A *move*
changes one group on one mesh axis: the axis leaves the group, or shards another of its dimensions, or the
group goes open (Shardy's propagation decides) or closed and replicated (a layer boundary's group likewise:
constrained or open, never stored). The search descends by moves, each round in two steps: every move from the
current state is evaluated (independent candidates, evaluated together), then the best move of each group that
gained is applied at once and kept if it beats the best single move (else only that one is kept). Rounds repeat
until no move gains 0.2%.

1. **One axis.** The descent runs first on the mesh with one axis over every device, from every group open:
   what to split at all (the batch of a training step, then its parameters and optimizer state: data
   parallelism, then ZeRO/FSDP, come out of the moves, not out of a recipe). When everything open is over the
   memory limit and no single move from it fits (a model whose replicated state alone does not fit), it starts
   instead from every large group stored over the axis (ZeRO-3's layout), if that is better: one move at a time
   cannot climb out of that hole. Where one move fits (a training step whose activations alone are too large
   replicated: the batch split), it starts open.
2. **Layouts on every mesh.** That layout is priced on every mesh of the target's device count with its axis
   replaced by all of the mesh's axes (the same sharding, laid onto the torus another way; a Shardy plan names
   axes, so this needs no new plan).
3. **More axes.** On the best of those meshes, and on the mesh whose axes match the torus's own dimensions,
   the descent continues with the minor axes free to move away from the major one (a second and third axis for
   another dimension: tensor, sequence or expert parallelism, and their mixes with the first). On a target of
   several slices that mesh's major axis is the slices' (the data-center network between them) and every axis is
   free: storage can leave the slow axis, as data parallelism across slices and FSDP inside each does. There the
   descent starts from the better of the spread layout and every large group stored inside each slice (over the
   axes after the slices'): a weight the whole device count divides no dimension of stays replicated on one axis,
   and one move at a time does not store it inside the slices.

Every candidate is kept with its estimate; candidates over the memory limit rank after every one that fits,
the smallest footprint first, and steps within ``GAIN`` of each other rank by footprint too. A program whose
mesh is fixed (the user's shardings name one) is searched on that mesh only, every axis free.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Sequence

from shardkit.autosharding import model
from shardkit.autosharding.model import Estimate, Machine, Reading
from shardkit.autosharding.program import Program
from shardkit.autosharding.space import Choice, Layout, MeshShape, Spec, mesh_shapes, replicated

_log = logging.getLogger("shardkit.autosharding")
GAIN = 0.002  # a move must beat the current state by this fraction of its step
ROUNDS = 4  # descent rounds per stage at most
HOPELESS = 3.0  # a move that made the step this many times longer is not tried again
STORED = 0.01  # groups holding this fraction of the free arguments' bytes may also be stored (sharded, gathered)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One evaluated layout on one order of its mesh.

    Attributes:
        mesh: the mesh, in the order it is laid onto the target.
        layout: per group, its spec (axis names of ``mesh``) or None (open).
        reading: Shardy's plan of it, per device.
        estimate: the modelled step on ``mesh``'s order.
        found: how the search reached it (``one axis``, ``on every mesh``, ``more axes``, ``given``).
    """

    mesh: MeshShape
    layout: Layout
    reading: Reading
    estimate: Estimate
    found: str

    @property
    def key(self) -> tuple:
        return (self.mesh, self.layout)


@dataclasses.dataclass
class Stats:
    evaluations: int = 0
    priced: int = 0
    seconds: float = 0.0


class Search:
    """One search over a program for a machine (module docstring)."""

    def __init__(
        self,
        program: Program,
        machine: Machine,
        *,
        memory_limit: int | None,
        evaluate: Callable[[Sequence[tuple[MeshShape, Layout]]], list[Reading | Exception]] | None = None,
    ):
        self.program = program
        self.machine = machine
        self.limit = memory_limit
        self._evaluate = evaluate or _serial(program)
        arguments = [g for g in program.groups if not g.boundary]
        total = sum(g.nbytes for g in arguments) or 1
        self.big = {g.index for g in arguments if g.nbytes >= STORED * total}  # the groups that may be stored
        self.worse: dict[tuple[int, Choice | None], float] = {}  # (group, choice) -> its step over the state's
        self.readings: dict[tuple, Reading | Exception] = {}
        self.candidates: dict[tuple, Candidate] = {}
        self.stats = Stats()
        self.failures: list[tuple[MeshShape, Layout, Exception]] = []

    # evaluating

    def score(self, c: Candidate) -> tuple[float, float, int]:
        """Lower is better: bytes over the memory limit first, then the modelled step, then the footprint."""
        over = 0.0 if self.limit is None else max(0.0, c.estimate.peak - self.limit)
        return over, c.estimate.step, c.estimate.peak

    def better(self, a: Candidate, b: Candidate | None) -> bool:
        """Whether ``a`` beats ``b`` by more than the noise of the model."""
        if b is None:
            return True
        (oa, sa, _), (ob, sb, _) = self.score(a), self.score(b)
        if oa != ob:
            return oa < ob
        return sa < sb * (1 - GAIN)

    def evaluate(self, states: Sequence[tuple[MeshShape, Layout]], found: str) -> list[Candidate | None]:
        """Each state's candidate (None where Shardy could not plan it); plans already made are reused."""
        todo = [s for s in dict.fromkeys(states) if (s[0], s[1]) not in self.readings]
        if todo:
            start = time.perf_counter()
            for state, reading in zip(todo, self._evaluate(todo)):
                self.readings[state] = reading
                if isinstance(reading, Exception):
                    self.failures.append((state[0], state[1], reading))
            self.stats.evaluations += len(todo)
            self.stats.seconds += time.perf_counter() - start
        return [self.priced(mesh, layout, self.readings[(mesh, layout)], found) for mesh, layout in states]

    def priced(self, mesh: MeshShape, layout: Layout, reading: Reading | Exception, found: str) -> Candidate | None:
        if isinstance(reading, Exception):
            return None
        key = (mesh, layout)
        if key not in self.candidates:
            estimate = model.price(reading, mesh, self.machine)
            self.candidates[key] = Candidate(mesh, layout, reading, estimate, found)
            self.stats.priced += 1
        return self.candidates[key]

    # moves

    def moves(self, mesh: MeshShape, layout: Layout, axes: Sequence[str]) -> list[Layout]:
        """Every layout one move away on the free ``axes`` (module docstring), but those a move of the same group
        to the same choice already made far worse (``HOPELESS`` times the step it was tried against)."""
        out: list[Layout] = []
        sizes = dict(mesh.axes)
        for g, group in enumerate(self.program.groups):
            choice = layout[g]
            rank = len(group.shape)
            stored = g in self.big
            options: list[Choice | None] = []
            if choice is not None:
                options.append(None)
            if choice is None or any(choice.spec):
                options.append(Choice(replicated(rank)))
            base = choice.spec if choice is not None else replicated(rank)
            if choice is not None and any(base) and stored:
                options.append(Choice(base, not choice.storage))
            kinds = (False, True) if choice is None and stored else (choice.storage if choice else False,)
            for axis in axes:
                if sizes[axis] < 2:
                    continue
                without = tuple(tuple(a for a in dim if a != axis) for dim in base)
                if without != base:
                    options.append(Choice(without, choice.storage if choice else False))
                for d in range(rank):
                    dims = list(without)
                    dims[d] = _ordered(dims[d] + (axis,), mesh.names)
                    spec = tuple(dims)
                    if spec != base and _divides(group.shape, spec, sizes):
                        options += [Choice(spec, storage) for storage in kinds]
            for option in dict.fromkeys(options):
                if option != choice and self.worse.get((g, option), 0.0) < HOPELESS:
                    out.append(layout[:g] + (option,) + layout[g + 1 :])
        return out

    def descend(self, mesh: MeshShape, layout: Layout, axes: Sequence[str], found: str) -> Candidate | None:
        """Rounds of moves on ``axes`` from ``layout`` until none gains (module docstring)."""
        (current,) = self.evaluate([(mesh, layout)], found)
        if current is None:
            return None
        for _ in range(ROUNDS):
            layouts = self.moves(mesh, current.layout, axes)
            results = [c for c in self.evaluate([(mesh, x) for x in layouts], found) if c is not None]
            for c in results:
                g = _changed(current.layout, c.layout)
                if g is not None and self.score(c)[0] == self.score(current)[0]:
                    self.worse[(g, c.layout[g])] = c.estimate.step / max(current.estimate.step, 1e-12)
            gains = [c for c in results if self.better(c, current)]
            _log.debug(
                "round on %s over %s: %d moves, %d gain; step %.3g s; %s",
                mesh,
                axes,
                len(layouts),
                len(gains),
                current.estimate.step,
                self.stats,
            )
            if not gains:
                break
            gains.sort(key=self.score)
            best_single = gains[0]
            per_group: dict[int, Candidate] = {}
            for c in gains:
                g = _changed(current.layout, c.layout)
                if g is not None and g not in per_group:
                    per_group[g] = c
            nxt = best_single
            if len(per_group) > 1:
                merged = list(current.layout)
                for g, c in per_group.items():
                    merged[g] = c.layout[g]
                (combined,) = self.evaluate([(mesh, tuple(merged))], found)
                if combined is not None and self.better(combined, best_single):
                    nxt = combined
            current = nxt
        return current

    # the search

    def run(self, meshes: Sequence[MeshShape] | None) -> list[Candidate]:
        """Searches the given meshes (None: every mesh of the target's device count; each on its own where the
        program names its mesh's axes) and returns every candidate, best first."""
        if meshes is not None and (len(meshes) == 1 or self.program.mesh is not None):
            for mesh in meshes:  # the given mesh, or the program's own axes resized to the target (api._resized)
                self.descend(mesh, self.start(mesh, "given mesh"), mesh.names, "given mesh")
            return self.ranked()
        all_meshes = list(meshes) if meshes is not None else mesh_shapes(self.machine.devices)
        flat = next((m for m in all_meshes if len(m.names) == 1), None) or MeshShape(("x",), (self.machine.devices,))
        first = self.descend(flat, self.start(flat, "one axis"), flat.names, "one axis")
        if first is None:
            return self.ranked()
        # 2. the one-axis layout on every mesh (priced from the same plan where it names whole axes)
        spread = []
        for mesh in all_meshes:
            if mesh == flat or len(mesh.names) == 1:
                continue
            c = self.spread(first, mesh)
            if c is not None:
                spread.append(c)
        # 3. more axes: on the mesh whose axes are the torus's dimensions, else on the best of the others
        spread.sort(key=self.score)
        aligned = self.torus_aligned(all_meshes)
        chosen = [c for c in spread if c.mesh in aligned] or spread[:1]
        for c in chosen:
            across = self.machine.slices > 1 and c.mesh.sizes[0] == self.machine.slices
            if across:  # also from storage inside each slice (the better of the two)
                (inside,) = self.evaluate([(c.mesh, self.stored(c.mesh, c.mesh.names[1:], c.layout))], "more axes")
                c = inside if inside is not None and self.better(inside, c) else c
            # across slices every axis is free: a layout may leave the slices' axis (the data-center network)
            self.descend(c.mesh, c.layout, c.mesh.names if across else c.mesh.names[1:], "more axes")
        return self.ranked()

    def start(self, mesh: MeshShape, found: str) -> Layout:
        """Where a descent starts: every decision open; or, when that is over the memory limit and no single move
        from it fits, the better of it and every large decision stored over all of ``mesh``'s axes on its largest
        dimension they divide (ZeRO-3's layout: from everything replicated, one move at a time cannot reach a
        program that fits). Where one move fits (the batch split: data parallelism), the descent starts open, and
        its first round is the moves already planned here."""
        empty: Layout = tuple(None for _ in self.program.groups)
        (open_,) = self.evaluate([(mesh, empty)], found)
        if open_ is None or self.limit is None or open_.estimate.peak <= self.limit:
            return empty
        one_move = self.evaluate([(mesh, x) for x in self.moves(mesh, empty, mesh.names)], found)
        if any(c is not None and c.estimate.peak <= self.limit for c in one_move):
            return empty
        stored = self.stored(mesh, mesh.names, empty)
        (seed,) = self.evaluate([(mesh, stored)], found)
        return stored if seed is not None and self.better(seed, open_) else empty

    def stored(self, mesh: MeshShape, axes: Sequence[str], base: Layout) -> Layout:
        """``base`` with every large decision stored over ``axes`` on its largest dimension they divide (ZeRO-3's
        layout over those axes); decisions no dimension of which they divide keep ``base``'s."""
        sizes = dict(mesh.axes)
        out = list(base)
        for g, group in enumerate(self.program.groups):
            dims = [d for d in range(len(group.shape)) if _divides(group.shape[d : d + 1], (tuple(axes),), sizes)]
            if g in self.big and dims:
                d = max(dims, key=lambda d: group.shape[d])
                out[g] = Choice(tuple(tuple(axes) if i == d else () for i in range(len(group.shape))), storage=True)
        return tuple(out)

    def spread(self, one: Candidate, mesh: MeshShape) -> Candidate | None:
        """``one``'s layout (on a one-axis mesh) with its axis replaced by all of ``mesh``'s axes."""
        (axis,) = one.mesh.names
        names = mesh.names
        layout = tuple(
            None if c is None else Choice(tuple(names if axis in dim else () for dim in c.spec), c.storage)
            for c in one.layout
        )
        sizes = dict(mesh.axes)
        if not all(c is None or _divides(g.shape, c.spec, sizes) for c, g in zip(layout, self.program.groups)):
            return None
        reading = _renamed(one.reading, axis, names)
        if reading is None:
            (c,) = self.evaluate([(mesh, layout)], "on every mesh")
            return c
        self.readings.setdefault((mesh, layout), reading)
        return self.priced(mesh, layout, self.readings[(mesh, layout)], "on every mesh")

    def torus_aligned(self, meshes: Sequence[MeshShape]) -> list[MeshShape]:
        """The meshes whose axes are the target's torus dimensions (in order), when it has any; on several slices,
        the slices' axis first (the target lays a mesh's major axis across its slices)."""
        dims = self.machine.torus_shape
        if dims and self.machine.slices > 1:
            dims = (self.machine.slices, *dims)
        return [m for m in meshes if dims and len(m.sizes) > 1 and m.sizes == dims]

    def ranked(self) -> list[Candidate]:
        """Every candidate, best first by ``score``; but steps within ``GAIN`` of the first of a run (the noise the
        descent ignores) are a tie, which the smaller footprint wins: the estimate cannot tell them apart, and the
        headroom is what XLA may need beyond the estimate (its footprint runs 8-21% below XLA's on the decoders)."""
        runs: list[list[Candidate]] = []
        for c in sorted(self.candidates.values(), key=self.score):
            if runs and not self.better(runs[-1][0], c):
                runs[-1].append(c)
            else:
                runs.append([c])
        return [c for run in runs for c in sorted(run, key=lambda c: c.estimate.peak)]


def _serial(program: Program) -> Callable[[Sequence[tuple[MeshShape, Layout]]], list[Reading | Exception]]:
    def run(states: Sequence[tuple[MeshShape, Layout]]) -> list[Reading | Exception]:
        out: list[Reading | Exception] = []
        for mesh, layout in states:
            try:
                out.append(model.evaluate(program, mesh, layout))
            except Exception as e:  # noqa: BLE001  (Shardy refusing one candidate ends that candidate only)
                out.append(e)
        return out

    return run


def _ordered(axes: Sequence[str], names: Sequence[str]) -> tuple[str, ...]:
    """Axes on one dimension, in mesh order (major first)."""
    return tuple(sorted(axes, key=names.index))


def _divides(shape: Sequence[int], spec: Spec, sizes: dict[str, int]) -> bool:
    return all(n % math.prod(sizes[a] for a in dim) == 0 for n, dim in zip(shape, spec))


def _changed(a: Layout, b: Layout) -> int | None:
    diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return diff[0] if len(diff) == 1 else None


def _renamed(reading: Reading, axis: str, names: Sequence[str]) -> Reading | None:
    """A one-axis plan's reading with ``axis`` replaced by ``names`` (all of a mesh's axes, major first); None
    when it names a part of the axis (a sub-axis), which has no such replacement."""
    grouped = []
    for refs in reading.grouped:  # (sites carry over: the loops are the same)
        if refs and refs[0] in ("groups", "pairs"):
            return None
        out = []
        for name, sub in refs:
            if sub is not None:
                return None
            out += [(n, None) for n in names] if name == axis else [(name, sub)]
        grouped.append(tuple(out))
    collectives = tuple(
        dataclasses.replace(c, axes=tuple(n for n, _ in g)) for c, g in zip(reading.collectives, grouped)
    )

    def spec(s: Spec | None) -> Spec | None:
        return None if s is None else tuple(tuple(names) if axis in dim else dim for dim in s)

    return dataclasses.replace(
        reading,
        collectives=collectives,
        grouped=tuple(grouped),
        in_specs=tuple(spec(s) for s in reading.in_specs),
        out_specs=tuple(spec(s) for s in reading.out_specs),
    )


def describe(c: Candidate, program: Program) -> str:
    """A candidate's layout in one line: each group it shards with its spec, and each open group Shardy's
    propagation sharded with that spec, marked ``(open)`` (replicated groups left out)."""
    from shardkit.autosharding.space import spec_text

    parts = []
    for g, choice in zip(program.groups, c.layout):
        name = g.name.split(" ")[0]
        if g.boundary:
            if choice is not None:
                parts.append(f"{name}: {spec_text(choice)} (constraint)")
            continue
        if choice is not None:
            if any(choice.spec):
                parts.append(f"{name}: {spec_text(choice)}")
            continue
        spec = c.reading.in_specs[g.leaves[0]]
        if spec is None or any(spec):
            parts.append(f"{name}: {spec_text(spec) if spec is not None else 'sub-axes'} (open)")
    return ", ".join(parts) or "replicated"
