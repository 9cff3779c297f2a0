"""The communication report: every collective of a sharded program, with sizes, mesh axes and totals.

Two readers fill it: ``xla.report`` from the partitioned module XLA compiled (what will run), and
``shardy.report`` from the collectives Shardy's own passes insert into the StableHLO (the plan before XLA).
Both give the same ``CommunicationReport``, so the two can be printed and compared side by side.

Bytes on the wire, per device and per execution, with the usual ring algorithms over a group of ``n``
devices (``B_in``/``B_out``: the operand/result bytes one device holds):

=================== ===============================
all-reduce          ``2 (n-1)/n * B_in``  (reduce-scatter, then all-gather)
all-gather          ``(n-1)/n * B_out``
reduce-scatter      ``(n-1)/n * B_in``
all-to-all          ``(n-1)/n * B_in``
collective-permute  ``B_in`` when the device sends to another device, else 0
all-slice (Shardy)  0 (each device keeps a slice of what it holds)
=================== ===============================

A collective inside loops runs ``product of trip counts`` times per call of the program. The trip count is the
one XLA records, else (XLA's TPU compiler records none) the count of a loop of jax's counted form read from the
loop itself (``xla._Reader.counted_trips``); where neither is known the collective is counted once and marked.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from shardkit.inspect import locations, notebook
from shardkit.inspect.hlo import ArrayShape
from shardkit.inspect.units import KINDS, aligned, human_bytes

if TYPE_CHECKING:
    from shardkit.inspect.hardware import Hardware, Topology


@dataclasses.dataclass(frozen=True)
class Collective:
    """One collective op: what it moves per device, between which devices, from where in the source.

    Attributes:
        kind: one of ``KINDS``.
        name: the HLO instruction name (XLA) or the op's result name (Shardy).
        operands, results: per-device arrays (dtype and shape).
        axes: the mesh axes the groups run over, major first (``('data', 'model')``, sub-axes as
            ``'x:(1)2'``); ``()`` when no device talks to another; None when the groups are not along mesh axes.
        group_size: devices per group.
        groups: the groups as device ids; a collective-permute's (source, target) pairs. XLA side only:
            Shardy's plan names its groups by axes.
        op_name: the jax op it came from (``jit(step)/dot_general``).
        source: ``file:line`` of the Python line it came from, when known.
        is_async: issued as an async start/done pair.
        loops: trip count of each enclosing loop, outermost first (None where unknown).
        moves_data: False for a collective-permute whose every device sends only to itself.
    """

    kind: str
    name: str
    operands: tuple[ArrayShape, ...]
    results: tuple[ArrayShape, ...]
    axes: tuple[str, ...] | None
    group_size: int
    groups: tuple[tuple[int, ...], ...] = ()
    op_name: str = ""
    source: str | None = None
    is_async: bool = False
    loops: tuple[int | None, ...] = ()
    moves_data: bool = True

    @property
    def bytes(self) -> int:
        """Operand bytes one device holds."""
        return sum(a.nbytes for a in self.operands)

    @property
    def wire_bytes(self) -> int:
        """Bytes one device sends per execution (ring formulas, see the module docstring)."""
        n = self.group_size
        if n <= 1 or not self.moves_data or self.kind == "all-slice":
            return 0
        if self.kind == "collective-permute":
            return self.bytes
        if self.kind == "all-gather":
            return (n - 1) * sum(a.nbytes for a in self.results) // n
        return (2 if self.kind == "all-reduce" else 1) * (n - 1) * self.bytes // n

    @property
    def executions(self) -> int:
        """Times it runs per call of the program (unknown trip counts count once)."""
        return math.prod(t for t in self.loops if t is not None)

    @property
    def over(self) -> str:
        """``'model'``, ``('data','model')``, ``-`` (no communication) or ``?`` (not along mesh axes)."""
        if self.axes is None:
            return "?"
        if not self.axes:
            return "-"
        if len(self.axes) == 1:
            return repr(self.axes[0])
        return "(" + ",".join(map(repr, self.axes)) + ")"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "axes": None if self.axes is None else list(self.axes),
            "group_size": self.group_size,
            "groups": [list(g) for g in self.groups],
            "operands": [str(a) for a in self.operands],
            "results": [str(a) for a in self.results],
            "bytes_per_device": self.bytes,
            "wire_bytes_per_device": self.wire_bytes,
            "executions": self.executions,
            "loops": list(self.loops),
            "is_async": self.is_async,
            "op_name": self.op_name,
            "source": self.source,
            "over": self.over,
        }


@dataclasses.dataclass(frozen=True)
class Totals:
    """Collectives of one kind or over one set of axes: how many ops, how many runs per call, bytes sent."""

    ops: int = 0
    executions: int = 0
    wire_bytes: int = 0

    def add(self, c: Collective) -> Totals:
        return Totals(self.ops + 1, self.executions + c.executions, self.wire_bytes + c.wire_bytes * c.executions)


@dataclasses.dataclass(frozen=True)
class CommunicationReport:
    """The collectives of one sharded program, in program order, and their totals.

    Attributes:
        stage: ``"xla"`` (the partitioned program XLA compiled) or ``"shardy"`` (Shardy's plan in StableHLO).
        mesh: the mesh's axes as ``(name, size)`` pairs, or None when there is none to name groups by.
        num_devices: devices the program runs on.
        collectives: one entry per collective op, in the order the program issues them.
        device_ids: the mesh's device ids in mesh (row-major) order; empty without a concrete mesh.
        program: ``(StableHLO module, mesh, devices)`` the report was made from, which ``explain()`` reads;
            None for a report made from XLA's program alone.
        topology: where the devices sit (chip coordinates, slices, nodes), for ``time()``; None when unknown.
        cost: XLA's cost analysis of the program (``'flops'``, ``'bytes accessed'``), for ``time()``.

    Examples:
        XLA sums an array split over both axes in two steps; Shardy plans one all-reduce over both:

        >>> mesh = sk.make_mesh((4, 2), ("x", "y"))
        >>> x = sk.ShapeDtypeStruct((16, 8), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
        >>> lowered = sk.jit(lambda a: a.sum()).lower(x)
        >>> [(c.kind, c.over, c.wire_bytes) for c in lowered.compile().communication().collectives]
        [('all-reduce', "'y'", 4), ('all-reduce', "'x'", 6)]
        >>> [(c.kind, c.over, c.wire_bytes) for c in lowered.communication().collectives]
        [('all-reduce', "('x','y')", 7)]
    """

    stage: str
    mesh: tuple[tuple[str, int], ...] | None
    num_devices: int
    collectives: tuple[Collective, ...]
    device_ids: tuple[int, ...] = ()
    program: Any = dataclasses.field(default=None, repr=False, compare=False)
    topology: Topology | None = dataclasses.field(default=None, repr=False, compare=False)
    cost: Mapping[str, float] | None = dataclasses.field(default=None, repr=False, compare=False)

    def explain(self) -> Any:
        """Why each collective is there: the value, the two shardings that meet, the reason and where each
        sharding came from: an ``Explanation`` (``shardkit.inspect.explain``, which installs itself as
        ``EXPLAIN`` when the package loads: it reads Shardy's plan, so it sits above this module)."""
        return EXPLAIN(self)

    def time(
        self,
        hardware: str | Hardware,
        topology: Topology | None = None,
        cost: Mapping[str, float] | None = None,
    ) -> Any:
        """Modelled time of each collective and of the step on ``hardware`` (``'tpu-v5e'``, ``'h100'``, ...;
        ``shardkit.inspect.timing``): a ``timing.StepTime``; ``topology`` and ``cost`` default to the report's
        own."""
        from shardkit.inspect import timing

        return timing.estimate(self, hardware, topology, cost)

    def _totals(self, key: Callable[[Collective], str]) -> dict[str, Totals]:
        out: dict[str, Totals] = {}
        for c in self.collectives:
            out[key(c)] = out.get(key(c), Totals()).add(c)
        return out

    def by_kind(self) -> dict[str, Totals]:
        """Totals per kind, in ``KINDS`` order."""
        totals = self._totals(lambda c: c.kind)
        return {k: totals[k] for k in KINDS if k in totals}

    def by_axes(self) -> dict[str, Totals]:
        """Totals per set of mesh axes (as ``Collective.over`` prints it)."""
        return self._totals(lambda c: c.over)

    @property
    def title(self) -> str:
        """What the report describes: ``XLA's partitioned program`` or ``Shardy's plan (before XLA)``."""
        return _TITLES.get(self.stage, self.stage)

    @property
    def wire_bytes(self) -> int:
        """Bytes one device sends per call of the program."""
        return sum(c.wire_bytes * c.executions for c in self.collectives)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON; ``title`` and ``columns`` are the text report's, which the report page shows too."""
        return {
            "stage": self.stage,
            "title": self.title,
            "columns": COLUMNS,
            "mesh": None if self.mesh is None else dict(self.mesh),
            "num_devices": self.num_devices,
            "device_ids": list(self.device_ids),
            "wire_bytes_per_device": self.wire_bytes,
            "collectives": [c.to_dict() for c in self.collectives],
            "by_kind": {k: dataclasses.asdict(t) for k, t in self.by_kind().items()},
            "by_axes": {k: dataclasses.asdict(t) for k, t in self.by_axes().items()},
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return format_report(self)

    _repr_html_ = notebook.text

    def save_image(self, path: str) -> None:
        """A picture of the mesh with the bytes each axis carries (PNG or SVG by suffix; needs ``shardkit[viz]``)."""
        from shardkit.inspect import images

        images.communication_image(self, path)


# -- text ---------------------------------------------------------------------------------------------------

_TITLES = {"xla": "XLA's partitioned program", "shardy": "Shardy's plan (before XLA)"}
# The collectives table's column labels, by what each shows: the text table's header and the page's (``to_dict``).
COLUMNS = {
    "index": "#",
    "kind": "kind",
    "over": "over",
    "operands": "operand/device",
    "results": "result/device",
    "bytes": "bytes/device",
    "sent": "sent/device",
    "runs": "runs",
    "op": "op",
    "source": "source",
}
EXPLAIN: Callable[[CommunicationReport], Any] | None = None  # set by shardkit.inspect.explain on import


def _runs(c: Collective) -> str:
    if not c.loops:
        return "1"
    return "x".join("?" if t is None else str(t) for t in c.loops)


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _shapes(arrays: Iterable[ArrayShape]) -> str:
    return ", ".join(map(str, arrays))


def format_report(report: CommunicationReport) -> str:
    """The report as an aligned table, then totals by kind and by mesh axes."""
    mesh = " ".join(f"{n}={s}" for n, s in report.mesh) if report.mesh else "no mesh"
    count = len(report.collectives)
    title = (
        f"{report.title}: {count} collective{'s' * (count != 1)} on "
        f"{report.num_devices} devices ({mesh}); {human_bytes(report.wire_bytes)} sent per device per call"
    )
    lines = [title]
    if not report.collectives:
        return lines[0] + "\n"
    rows = [
        [
            str(i),
            c.kind + (" (async)" if c.is_async else ""),
            c.over,
            _shapes(c.operands),
            _shapes(c.results),
            f"{c.bytes:,}",
            f"{c.wire_bytes:,}",
            _runs(c),
            _clip(c.op_name),
            locations.short(c.source),
        ]
        for i, c in enumerate(report.collectives)
    ]
    lines += aligned(list(COLUMNS.values()), rows)
    for title, totals in (("by kind", report.by_kind()), ("by mesh axes", report.by_axes())):
        lines.append(f"{title}:")
        lines += aligned(
            ["", "ops", "runs", "sent/device"],
            [[k, str(t.ops), str(t.executions), human_bytes(t.wire_bytes)] for k, t in totals.items()],
        )
    return "\n".join(lines) + "\n"
