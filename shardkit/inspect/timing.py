"""Time per collective and per step, from a communication report, a hardware profile and where devices sit.

``estimate(report, hardware, topology, cost)`` (``CommunicationReport.time``) prices each collective on the
links its groups use; ``docs/performance_model.md`` has the model, its sources and its validation.

Each group of a collective is split by slice (TPU) or node (GPU): ``k`` slices with ``m`` devices each. The
part inside a slice is the collective over ``m`` devices on the fast links (ICI, NVLink), the part across is
the collective over ``k`` on ``1/m`` of the bytes on the slow network (DCN, InfiniBand); the two overlap
(scaling book, part 12: ``T = max(T_node, T_scale-out)``). Bytes on the wire are the report's ring formulas.

- **TPU, inside a slice.** The group's chips span ``e_i`` chips along torus dimension ``i``. A dimension whose
  ring closes (wraparound, spanned fully) carries ``2 W`` per chip (both directions), an open line ``W`` (its
  end link carries ``n - 1`` shards one way, as a one-way ring does); dimensions add their bandwidth (``V / (W
  n_axes)``), and groups sharing a box share its links. Latency: a fixed cost per collective plus one per hop
  crossed, ``e_i // 2`` on a ring and ``e_i - 1`` on a line per dimension, twice for an all-reduce (both terms
  fitted to the scaling book's measured small AllGathers on v5e: ``hardware.py``). An all-to-all costs ``B
  max_i(e_i / bw_i) / 4`` (bisection); a collective-permute ``d B / W`` over its longest torus distance ``d``.
- **GPU, inside a node.** NVSwitch: every GPU egresses ``W`` to any other, so a ring runs at ``W`` per GPU;
  latency is NCCL's ring model, ``base + steps * step`` (``2 (n - 1)`` steps for an all-reduce, ``n - 1``
  otherwise).

**Step.** With the program's schedule (``Compiled.cost()``'s ``schedule``: XLA's order of instructions,
``schedule.py``), the step is walked op by op on clocks for the device and for each set of links. An op takes its
roofline, ``max(matmul flops / peak, bytes / HBM bandwidth)`` (its matmul work padded to the MXU's tiles; a Pallas
kernel by its own cost estimate). An asynchronous collective starts when its start is reached and its links are
free (``lane``: collectives over the same mesh axes, or permutes with the same pairs, one after another), runs
while the ops scheduled before its done run, and its done waits for what is left: that wait is its exposed time. A
synchronous collective holds the device for all of its time. A loop body is walked twice (a collective its previous
iteration started may finish in it) and the second walk, its steady state, counts once per trip. Without a schedule
(a cost given as a mapping, such as XLA's own analysis), compute time is the program's ``flops`` over the peak,
memory time its ``bytes accessed`` over HBM bandwidth, and an async collective hides behind ``max(compute,
memory)`` in program order until that time is used up: ``step = max(compute, memory) + exposed``. Without a cost
analysis every collective is exposed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from shardkit.inspect import notebook
from shardkit.inspect.hardware import Hardware, Topology, hardware as profile
from shardkit.inspect.schedule import Op
from shardkit.inspect.units import aligned, describe_loops, human_bytes

# A communication report and its collectives (``communication.py``, which calls this module, so not imported),
# and a loop of a program's cost (``cost.py``, which reads XLA's program through the report's reader).
Collective = Any
CommunicationReport = Any
LoopCost = Any


@dataclasses.dataclass(frozen=True)
class CollectiveTime:
    """One collective's modelled time.

    Attributes:
        index: its position in the report.
        collective: the report's entry.
        links: what its slowest group crosses: ``'ici'``, ``'dcn'``, ``'ici+dcn'``, ``'nvlink'``, ``'ib'``,
            ``'nvlink+ib'``, ``'chip'`` (devices of one chip), ``'-'`` (moves nothing).
        hops: ICI hops (TPU) or ring steps (GPU) whose latency it pays.
        bandwidth: the bytes/s one device's wire bytes move at.
        seconds: one execution.
        exposed: seconds per call of the program not hidden behind compute (the module's overlap rule).
    """

    index: int
    collective: Collective
    links: str
    hops: int
    bandwidth: float
    seconds: float
    exposed: float = 0.0

    @property
    def total(self) -> float:
        """Seconds per call of the program (every execution)."""
        return self.seconds * self.collective.executions

    def to_dict(self) -> dict[str, Any]:
        c = self.collective
        return {
            "index": self.index,
            "kind": c.kind,
            "name": c.name,
            "over": c.over,
            "wire_bytes_per_device": c.wire_bytes,
            "executions": c.executions,
            "is_async": c.is_async,
            "links": self.links,
            "hops": self.hops,
            "bandwidth": self.bandwidth,
            "seconds": self.seconds,
            "total_seconds": self.total,
            "exposed_seconds": self.exposed,
        }


COMPUTE = "compute / memory"  # the timeline's first row


@dataclasses.dataclass(frozen=True)
class Segment:
    """One bar of the step's timeline (``StepTime.timeline``): its row (``COMPUTE`` or a collective's mesh axes, as
    ``Collective.over`` prints them), when it starts and how long it takes (seconds), which ``part`` it is
    (``compute``, ``hidden`` or ``exposed``) and the collective's index (None for the compute)."""

    row: str
    start: float
    seconds: float
    part: str
    index: int | None


@dataclasses.dataclass(frozen=True)
class StepTime:
    """A program's modelled step: each collective's time, compute and memory time, and what is exposed.

    Attributes:
        hardware: the profile used.
        title: the report's title (``XLA's partitioned program``).
        collectives: one entry per collective of the report, in program order.
        flops, bytes_accessed: the program's cost per device (None without one): ``Compiled.cost()``'s, each
            loop body counted by its trip count and its Pallas kernels' work added (``ProgramCost.kernel_flops``), or
            XLA's cost analysis as given.
        compute, memory: ``flops / peak`` and ``bytes_accessed / HBM bandwidth`` (0 without a cost analysis).
        loops: the program's while loops and how their bodies were counted (``cost.LoopCost``; empty for a cost
            without them, such as XLA's own analysis, which counts each body once).
        scheduled: the step walked on XLA's schedule (module docstring), None without one.
        busy: seconds the device spends per call on ``'matmul'`` ops (their MXU time above their memory time),
            ``'memory'``-bound ops and ``'kernels'`` (custom calls), on the schedule; empty without one.
        unestimated: the kernels without a cost estimate of their own, timed by their bytes alone.
        refused: why the model gives this program no step (a figure that cannot be true: ``check``), else None;
            ``step`` then raises ``ImpossibleEstimate`` and the reports print the reason in its place.
        warnings: what makes the step less certain than the model's validation (``check``), each said wherever the
            step is printed.
    """

    hardware: Hardware
    title: str
    collectives: tuple[CollectiveTime, ...]
    flops: float | None = None
    bytes_accessed: float | None = None
    compute: float = 0.0
    memory: float = 0.0
    loops: tuple[LoopCost, ...] = ()
    scheduled: float | None = None
    busy: tuple[tuple[str, float], ...] = ()
    unestimated: tuple[str, ...] = ()
    refused: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def communication(self) -> float:
        """Seconds of communication per call, overlapped or not."""
        return sum(t.total for t in self.collectives)

    @property
    def exposed(self) -> float:
        """Seconds of communication per call not hidden behind compute."""
        return sum(t.exposed for t in self.collectives)

    @property
    def step(self) -> float:
        """The step estimate: walked on XLA's schedule where there is one, else ``max(compute, memory) + exposed``.

        Raises:
            ImpossibleEstimate: the model refused the program (``refused``).
        """
        if self.refused is not None:
            raise ImpossibleEstimate(self.refused)
        return self._modelled

    @property
    def _modelled(self) -> float:
        return self.scheduled if self.scheduled is not None else max(self.compute, self.memory) + self.exposed

    @property
    def utilization(self) -> float | None:
        """The program's own flops over what the chip does at its peak in the step (its hardware FLOP utilization:
        MFU where every flop is the model's); None without a cost or a step."""
        if self.refused is not None or not self.flops or not self._modelled:
            return None
        return self.flops / (self._modelled * self.hardware.flops)

    def by_axes(self) -> dict[str, float]:
        """Communication seconds per call per set of mesh axes (as ``Collective.over`` prints it)."""
        out: dict[str, float] = {}
        for t in self.collectives:
            out[t.collective.over] = out.get(t.collective.over, 0.0) + t.total
        return out

    def to_dict(self) -> dict[str, Any]:
        refused = self.refused is not None
        return {
            "hardware": self.hardware.name,
            "title": self.title,
            "step_seconds": None if refused else self.step,
            "refused": self.refused,
            "warnings": list(self.warnings),
            "utilization": self.utilization,
            "compute_seconds": self.compute,
            "memory_seconds": self.memory,
            "communication_seconds": self.communication,
            "exposed_seconds": self.exposed,
            "flops": self.flops,
            "bytes_accessed": self.bytes_accessed,
            "loops": [loop.to_dict() for loop in self.loops],
            "scheduled": self.scheduled is not None,
            "busy_seconds": dict(self.busy),
            "unestimated_kernels": list(self.unestimated),
            "collectives": [t.to_dict() for t in self.collectives],
            "by_axes": self.by_axes(),
            "timeline": [] if refused else [dataclasses.asdict(s) for s in self.timeline()],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return format_step(self)

    _repr_html_ = notebook.text

    def timeline(self) -> tuple[Segment, ...]:
        """The step laid out in time, as its picture, the report page and the trace draw it: the device's busy time
        from 0 (``max(compute, memory)``, or on XLA's schedule the step less what is exposed), each collective on its
        axes' row in program order, the part hidden under the compute from 0 on, the exposed part after the compute.
        On the schedule a collective's exposed time can exceed its own (it waited for its links), and then nothing
        of it is hidden. Raises ``ImpossibleEstimate`` where the model refused the program."""
        busy = max(self.compute, self.memory) if self.scheduled is None else self.step - self.exposed
        out = [Segment(COMPUTE, 0.0, busy, "compute", None)] if busy > 0 else []
        hidden_at, exposed_at = 0.0, max(busy, 0.0)
        for t in self.collectives:
            hidden, row = max(t.total - t.exposed, 0.0), t.collective.over
            if hidden:
                out.append(Segment(row, hidden_at, hidden, "hidden", t.index))
            if t.exposed:
                out.append(Segment(row, exposed_at, t.exposed, "exposed", t.index))
            hidden_at, exposed_at = hidden_at + hidden, exposed_at + t.exposed
        return tuple(out)

    def save_trace(self, path: str | os.PathLike) -> None:
        """The timeline as a Chrome/Perfetto trace (JSON that Perfetto's UI and XProf's trace viewer open;
        ``shardkit.inspect.trace``)."""
        from shardkit.inspect import trace

        trace.save(self, path)

    def save_image(self, path: str | os.PathLike) -> None:
        """The step's timeline by mesh axis (PNG or SVG by suffix; needs ``shardkit[viz]``): compute on one row,
        each collective on its axes' row in program order, the parts hidden under compute light, the exposed
        parts red after it, and a line at the step estimate."""
        timeline_image(self, path)


def estimate(
    report: CommunicationReport,
    hardware: str | Hardware,
    topology: Topology | None = None,
    cost: Mapping[str, float] | None = None,
) -> StepTime:
    """The modelled time of each collective of ``report`` and of the step (see the module docstring).

    Args:
        report: a communication report whose collectives name their device groups (``compile().communication()``).
        hardware: a profile name (``'tpu-v5e'``, ``'h100'``, ...: ``hardware.PROFILES``) or a ``Hardware``.
        topology: where the devices sit; default ``report.topology``, else ``Topology.default`` (GPU nodes of
            consecutive ids; a TPU slice shaped like the mesh).
        cost: the program's cost (``'flops'``, ``'bytes accessed'``): ``Compiled.cost()`` (loop bodies counted by
            their trip counts) or XLA's cost analysis as it reports it; default ``report.cost``.

    Examples:
        >>> x = sk.ShapeDtypeStruct((16, 8), np.float32, sharding=NamedSharding(mesh4x2, P("x", "y")))
        >>> report = sk.jit(lambda a: a.sum()).lower(x).compile().communication()
        >>> step = estimate(report, "h100")
        >>> [(t.collective.over, t.links, t.hops) for t in step.collectives]
        [("'y'", 'nvlink', 2), ("'x'", 'nvlink', 6)]
        >>> round(step.collectives[0].seconds * 1e6, 1)  # 8.4 us + 2 steps x 3.4 us + 4 bytes at 370 GB/s
        15.2
    """
    hw = profile(hardware)
    if topology is None:
        topology = report.topology
    if topology is None:
        ids = report.device_ids or tuple(range(report.num_devices))
        topology = Topology.default(ids, hw, [s for _, s in report.mesh or ()])
    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a Topology or None, got {type(topology).__name__}: {topology!r}.")
    cost = report.cost if cost is None else cost
    flops, accessed = _cost(cost)
    compute, memory = (flops or 0.0) / hw.flops, (accessed or 0.0) / hw.hbm_bandwidth
    loops = tuple(getattr(cost, "loops", ()))
    times = [collective_time(c, hw, topology, i) for i, c in enumerate(report.collectives)]
    ops = getattr(cost, "schedule", ())
    if ops:
        clock = walk(
            ops,
            hw,
            {t.collective.name: t.seconds for t in times},
            {t.collective.name: lane(t.collective) for t in times},
        )
        clock.settle()  # the program ends when what it started has finished
        sharing = Counter(t.collective.name for t in times)  # a collective run from two call sites: one name
        times = [
            dataclasses.replace(t, exposed=clock.exposed[t.collective.name] / sharing[t.collective.name]) for t in times
        ]
        busy = tuple((k, clock.busy[k]) for k in ("matmul", "memory", "kernels") if clock.busy[k])
        step = StepTime(
            hw,
            report.title,
            tuple(times),
            flops,
            accessed,
            compute,
            memory,
            loops,
            clock.t,
            busy,
            tuple(sorted(clock.unestimated)),
        )
        return check(step, cost, clock.busy[_UNESTIMATED])
    budget = max(compute, memory)
    for i, t in enumerate(times):
        hidden = min(budget, t.total) if t.collective.is_async else 0.0
        budget -= hidden
        times[i] = dataclasses.replace(t, exposed=t.total - hidden)
    return check(StepTime(hw, report.title, tuple(times), flops, accessed, compute, memory, loops), cost)


class ImpossibleEstimate(ValueError):
    """A modelled figure that cannot be true (``check``): the reports print the reason in its place."""


_UNESTIMATED = "unestimated kernels"  # the walk's busy time in kernels timed by their bytes alone


def check(step: StepTime, cost: Mapping[str, float] | None, unestimated: float = 0.0) -> StepTime:
    """``step`` refused where a figure of it cannot be true, and warned where it is less certain than the model's
    validation (``docs/performance_model.md``, *Figures the model refuses*):

    - refused: a cost read from part of the program (``ProgramCost.problem``: shardkit's count of its flops below
      XLA's own), or a step shorter than the program's own flops take at the chip's peak (above 100% of peak);
    - warned: kernels without a cost estimate (``unestimated`` seconds of the step, timed by their bytes alone).

    Examples:
        >>> slow = StepTime(profile("tpu-v5e"), "p", (), flops=1.97e14, compute=1.0, scheduled=2.0)
        >>> check(slow, None).utilization
        0.5
        >>> check(dataclasses.replace(slow, scheduled=0.5), None).step
        Traceback (most recent call last):
        ...
        shardkit.inspect.timing.ImpossibleEstimate: the modelled step (500.00 ms) is shorter than ... above 100% of peak
    """
    refused = getattr(cost, "problem", None)
    modelled = step._modelled
    if refused is None and step.flops and modelled < step.compute * (1 - 1e-9):
        refused = (
            f"the modelled step ({human_seconds(modelled)}) is shorter than the program's own {step.flops:.4g} flops "
            f"take at {step.hardware.name}'s peak ({human_seconds(step.compute)}): "
            f"{step.flops / (modelled * step.hardware.flops):.0%} of peak, and no program runs above 100% of peak"
        )
    warnings = list(step.warnings)
    if step.unestimated and refused is None:
        warnings.append(
            f"{len(step.unestimated)} kernels without a cost estimate ({unestimated / modelled:.0%} of the step) are "
            "timed by their bytes alone: where their compute takes longer, the step is longer"
        )
    return dataclasses.replace(step, refused=refused, warnings=tuple(warnings))


@dataclasses.dataclass
class Clock:
    """The state of a walk over a schedule: the device's time, when each set of links is next free, the
    asynchronous collectives in flight (key -> (when they finish, name)), and the totals per call."""

    t: float = 0.0
    links: dict[Hashable, float] = dataclasses.field(default_factory=dict)
    pending: dict[str, tuple[float, str]] = dataclasses.field(default_factory=dict)
    exposed: Counter = dataclasses.field(default_factory=Counter)
    busy: Counter = dataclasses.field(default_factory=Counter)
    unestimated: set = dataclasses.field(default_factory=set)

    def run(self, seconds: float, lane: Hashable) -> float:
        """A collective started now on ``lane``'s links: when it ends (after what holds those links)."""
        end = max(self.t, self.links.get(lane, 0.0)) + seconds
        self.links[lane] = end
        return end

    def wait(self, end: float, name: str, scale: float = 1.0) -> None:
        """The device waits for collective ``name`` to end at ``end``: the wait is its exposed time (``scale``
        times in the totals)."""
        if end > self.t:
            self.exposed[name] += (end - self.t) * scale
            self.t = end

    def settle(self, scale: float = 1.0) -> float:
        """Waits for every collective in flight, in the order they finish, and returns the time waited. Each is
        exposed by what it alone adds (of two in flight at once on other links, the later is charged only what it
        runs past the earlier), so the exposed totals and the busy time still sum to the clock; totals count
        ``scale`` times."""
        start = self.t
        for end, name in sorted(self.pending.values()):
            self.wait(end, name, scale)
        self.pending.clear()
        return self.t - start


def walk(
    ops: Sequence[Op],
    hw: Hardware,
    seconds: Mapping[str, float],
    lanes: Mapping[str, Hashable] | None = None,
    clock: Clock | None = None,
    scale: float = 1.0,
) -> Clock:
    """Walks ``ops`` (``schedule.Op``s) on ``hw``, ``seconds`` per run of each collective by name, each on the links
    ``lanes`` names (collectives on the same links run one after another; default: all on one) (module docstring);
    totals count ``scale`` times (a loop's trips)."""
    clock = Clock() if clock is None else clock
    lanes = lanes or {}
    for op in ops:
        if op.kind in ("compute", "kernel"):
            mxu, hbm = op.matmul / (hw.flops * hw.matmul_efficiency), op.bytes / hw.hbm_bandwidth
            if op.cycles and hw.clock:  # a transpose in memory: XLA's own estimate where the bytes' time is less
                hbm = max(hbm, op.cycles / hw.clock)
            kind = "kernels" if op.kind == "kernel" else "matmul" if mxu >= hbm and mxu else "memory"
            clock.busy[kind] += max(mxu, hbm) * scale
            clock.t += max(mxu, hbm)
            if not op.estimated:
                clock.unestimated.add(op.name)
                clock.busy[_UNESTIMATED] += max(mxu, hbm) * scale
        elif op.kind == "start":
            end = clock.run(seconds.get(op.collective, 0.0), lanes.get(op.collective, ""))
            clock.pending[op.key] = (end, op.collective)
        elif op.kind == "done":
            clock.wait(*clock.pending.pop(op.key, (clock.t, "")), scale)
        elif op.kind == "collective":
            clock.wait(clock.run(seconds.get(op.collective, 0.0), lanes.get(op.collective, "")), op.collective, scale)
        elif op.kind == "loop":
            _loop(op, hw, seconds, lanes, clock, scale)
    return clock


def _loop(
    op: Op, hw: Hardware, seconds: Mapping[str, float], lanes: Mapping[str, Hashable], clock: Clock, scale: float
) -> None:
    """A loop's body walked once to reach its steady state (what it leaves in flight), then again counted per trip;
    what the last trip leaves in flight is waited for when the loop ends."""
    first = walk(op.body, hw, seconds, lanes, Clock(), 0.0)
    carried = {k: (end - first.t, name) for k, (end, name) in first.pending.items()}
    busy = {lane: max(0.0, free - first.t) for lane, free in first.links.items()}
    steady = walk(op.body, hw, seconds, lanes, Clock(links=busy, pending=carried), scale * op.trips)
    trip = steady.t
    tail = steady.settle(scale)
    clock.t += trip * op.trips + tail
    clock.links = {lane: max(free, clock.t) for lane, free in clock.links.items()}
    clock.exposed.update(steady.exposed)
    clock.busy.update(steady.busy)
    clock.unestimated |= steady.unestimated


def lane(c: Collective) -> Hashable:
    """The links a collective holds, for the walk: a collective-permute its own pairs (a permute one way along a
    ring and one the other way use different links, as XLA's bidirectional windowed matmuls send them), any other
    collective the mesh axes (or, without a mesh, the device groups) it runs over."""
    if c.kind == "collective-permute":
        return ("pairs", c.groups)
    return ("over", c.over) if c.axes is not None else ("groups", c.groups)


def _cost(cost: Mapping[str, float] | None) -> tuple[float | None, float | None]:
    if cost is None:
        return None, None
    if not isinstance(cost, Mapping):
        raise TypeError(
            f"cost must be the program's cost (Compiled.cost(), XLA's cost analysis: a mapping) or None, got "
            f"{type(cost).__name__}."
        )
    out = []
    for key in ("flops", "bytes accessed"):
        value = cost.get(key, 0.0)
        if not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"cost[{key!r}]={value!r} must be a number >= 0.")
        out.append(float(value))
    return out[0] + getattr(cost, "kernel_flops", 0.0), out[1]


def collective_time(c: Collective, hw: Hardware, topology: Topology, index: int = 0) -> CollectiveTime:
    """One execution of ``c``: its slowest group's time on ``hw`` laid out as ``topology``."""
    if c.wire_bytes == 0:
        return CollectiveTime(index, c, "-", 0, 0.0, 0.0)
    if not c.groups:
        raise ValueError(
            f"collective {index} ({c.kind} {c.name}) names no device groups, which the time model needs: time "
            "the report of the compiled program (compile().communication()), not Shardy's plan."
        )
    missing = sorted({d for g in c.groups for d in g} - _known(topology))
    if missing:
        raise ValueError(f"topology does not place devices {missing[:8]} that collective {index} ({c.name}) uses.")
    groups = [c.groups] if c.kind == "collective-permute" else c.groups  # a permute's pairs are one pattern
    return max((_group(c, hw, topology, g, index) for g in groups), key=lambda t: t.seconds)


def _known(topology: Topology) -> set[int]:
    return set(topology.coords) if topology.coords else set(topology.slices)


def _group(c: Collective, hw: Hardware, topo: Topology, group: Sequence[Any], index: int) -> CollectiveTime:
    """The time of one group (for a collective-permute: all its (source, target) pairs)."""
    near_name, far_name = ("ici", "dcn") if hw.kind == "tpu" else ("nvlink", "ib")
    if c.kind == "collective-permute":
        pairs = [p for p in group if p[0] != p[1]]
        far = [p for p in pairs if topo.slice_of(p[0]) != topo.slice_of(p[1])]
        if far:
            return _timed(index, c, hw, far_name, 0, c.bytes / hw.network_bandwidth, 1)
        if hw.kind == "gpu":
            return _timed(index, c, hw, near_name, 1, c.bytes / _fast(hw), 0)
        hops = max(_distance(topo, *p) for p in pairs)
        return _timed(index, c, hw, near_name, hops, hops * c.bytes / _fast(hw), 0)
    members: dict[int, list[int]] = {}
    for d in group:
        members.setdefault(topo.slice_of(d), []).append(d)
    k, local = len(members), next(iter(members.values()))
    m = len(local)
    near, hops, name = 0.0, 0, near_name
    if m > 1:
        near, hops, name = _near(dataclasses.replace(c, group_size=m), hw, topo, local)
    far, far_steps = 0.0, 0
    if k > 1:
        far = dataclasses.replace(c, group_size=k).wire_bytes / m / hw.network_bandwidth
        far_steps = _steps(c.kind, k)
        name = far_name if m == 1 else f"{name}+{far_name}"
    return _timed(index, c, hw, name, hops, max(near, far), far_steps)


def _timed(index: int, c: Collective, hw: Hardware, links: str, hops: int, transfer: float, far: int) -> CollectiveTime:
    latency = hw.latency + hops * hw.hop_latency + far * hw.network_hop_latency
    bandwidth = c.wire_bytes / transfer if transfer else math.inf
    return CollectiveTime(index, c, links, hops, bandwidth, latency + transfer)


def _fast(hw: Hardware) -> float:
    return hw.link_bandwidth * hw.link_efficiency


def _steps(kind: str, n: int) -> int:
    """Ring steps of NCCL's model: ``2 (n - 1)`` for an all-reduce, ``n - 1`` otherwise."""
    return 2 * (n - 1) if kind == "all-reduce" else n - 1


def _near(c: Collective, hw: Hardware, topo: Topology, group: Sequence[int]) -> tuple[float, int, str]:
    """(transfer seconds, hops or steps, links) of ``c`` over ``group``, all in one slice or node."""
    if hw.kind == "gpu":
        return c.wire_bytes / _fast(hw), _steps(c.kind, c.group_size), "nvlink"
    chips = {topo.coords[d] for d in group}
    if len(chips) == 1:
        return c.wire_bytes / hw.hbm_bandwidth, 0, "chip"
    per_chip = len(group) / len(chips)  # devices of one chip share its links
    dims = [i for i in range(len(topo.shape)) if len({p[i] for p in chips}) > 1]
    extents = [_extent(sorted({p[i] for p in chips}), topo.shape[i], topo.wraps[i]) for i in dims]
    rings = [topo.wraps[i] and e == topo.shape[i] for i, e in zip(dims, extents)]
    bandwidths = [_fast(hw) * (2 if ring else 1) for ring in rings]
    sharing = math.prod(extents) / len(chips) * per_chip  # concurrent groups in one box share its links
    if c.kind == "all-to-all":
        seconds = c.bytes * max(e / b for e, b in zip(extents, bandwidths)) / 4 * sharing
        return seconds, max(extents) // 2, "ici"
    hops = sum(e // 2 if ring else e - 1 for e, ring in zip(extents, rings))
    return c.wire_bytes * sharing / sum(bandwidths), hops * (2 if c.kind == "all-reduce" else 1), "ici"


def _extent(values: Sequence[int], size: int, wraps: bool) -> int:
    """Chips a group spans along one dimension: ``max - min + 1``, or on a ring the shortest arc covering it."""
    if not wraps:
        return values[-1] - values[0] + 1
    gaps = [(values[(i + 1) % len(values)] - v) % size for i, v in enumerate(values)]
    return size - max(gaps) + 1


def _distance(topo: Topology, a: int, b: int) -> int:
    """Torus hops between devices ``a`` and ``b``."""
    hops = 0
    for x, y, size, wraps in zip(topo.coords[a], topo.coords[b], topo.shape, topo.wraps):
        d = abs(x - y)
        hops += min(d, size - d) if wraps else d
    return hops


# -- text ---------------------------------------------------------------------------------------------------


def human_seconds(s: float) -> str:
    """``s`` seconds in the unit that reads best.

    Examples:
        >>> human_seconds(0.00068), human_seconds(8e-6), human_seconds(1.5), human_seconds(0)
        ('680.0 us', '8.0 us', '1.50 s', '0')
    """
    if s == 0:
        return "0"
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if s >= scale:
            return f"{s / scale:.2f} {unit}"
    return f"{s / 1e-6:.1f} us"


def format_step(step: StepTime) -> str:
    """The step as one line of totals (or why there is none), its warnings, a table of collectives, and
    communication by mesh axes."""
    hw = step.hardware
    if step.refused is not None:
        lines = [f"{step.title} on {hw.name}: no modelled step: {step.refused}"]
    elif step.scheduled is not None:
        busy = ", ".join(f"{k} {human_seconds(v)}" for k, v in step.busy) or "nothing"
        lines = [
            f"{step.title} on {hw.name}: step {human_seconds(step.step)} on XLA's schedule = busy ({busy}) + "
            f"{human_seconds(step.exposed)} exposed communication (of {human_seconds(step.communication)}); "
            f"program totals: compute {human_seconds(step.compute)}, memory {human_seconds(step.memory)}"
            + ("" if step.utilization is None else f"; its flops at {step.utilization:.0%} of peak")
        ]
    else:
        basis = (
            f"max(compute {human_seconds(step.compute)}, memory {human_seconds(step.memory)})"
            if step.flops is not None
            else "no cost analysis, so no compute time"
        )
        lines = [
            f"{step.title} on {hw.name}: step {human_seconds(step.step)} = {basis} + "
            f"{human_seconds(step.exposed)} exposed communication (of {human_seconds(step.communication)})"
        ]
    lines += [f"warning: {w}" for w in step.warnings]
    if step.loops:
        lines.append(f"compute and memory count {describe_loops(step.loops)}")
    if not step.collectives:
        return "\n".join(lines) + "\n"
    rows = [
        [
            str(t.index),
            t.collective.kind + (" (async)" if t.collective.is_async else ""),
            t.collective.over,
            human_bytes(t.collective.wire_bytes),
            str(t.collective.executions),
            t.links,
            str(t.hops),
            "-" if math.isinf(t.bandwidth) or not t.bandwidth else f"{t.bandwidth / 1e9:.1f}",
            human_seconds(t.seconds),
            human_seconds(t.total),
            "-" if step.refused else human_seconds(t.exposed),
        ]
        for t in step.collectives
    ]
    lines += aligned(
        ["#", "kind", "over", "sent/device", "runs", "links", "hops", "GB/s", "time/run", "total", "exposed"], rows
    )
    lines.append("by mesh axes:")
    lines += aligned(["", "communication"], [[k, human_seconds(v)] for k, v in step.by_axes().items()])
    return "\n".join(lines) + "\n"


# -- picture ------------------------------------------------------------------------------------------------


def timeline_image(step: StepTime, path: str | os.PathLike) -> None:
    """Draws ``step.save_image``'s timeline (see there)."""
    from shardkit.inspect import images

    segments = step.timeline()
    rows = [COMPUTE, *dict.fromkeys(t.collective.over for t in step.collectives)]
    figure = images.new_figure(11, 1.2 + 0.45 * len(rows))
    axes = figure.add_subplot()
    y = {name: i for i, name in enumerate(rows)}
    us = 1e6  # draw in microseconds
    colours = {"compute": "#4c72b0", "hidden": "#a6cee3", "exposed": "#e31a1c"}
    for s in segments:
        edge = None if s.part == "compute" else "white"
        axes.barh(y[s.row], s.seconds * us, left=s.start * us, color=colours[s.part], height=0.6, edgecolor=edge)
    axes.axvline(step.step * us, color="black", linestyle="--", linewidth=1)
    axes.set_yticks(range(len(rows)), rows, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("microseconds (light: hidden under compute; red: exposed, after it; in program order)")
    axes.set_title(
        f"{step.title} on {step.hardware.name}: step {human_seconds(step.step)} (dashed), "
        f"{human_seconds(step.exposed)} of {human_seconds(step.communication)} communication exposed",
        fontsize=9,
    )
    images.save_figure(figure, path)
