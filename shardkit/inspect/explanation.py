"""What an explanation of a communication report is: for each collective, the value it moves, the two shardings
that meet, the reason (``REASONS``) and where each sharding came from (an ``Origin``: the argument, result or
sharding constraint, with its Python line). Printed one line per collective, as JSON, or drawn.

``explain.py`` builds these records; ``propagated.py`` reads them off Shardy's propagated module and
``matching.py`` ties XLA's collectives to them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

from shardkit.inspect import locations, notebook
from shardkit.inspect.communication import Collective, CommunicationReport
from shardkit.inspect.units import human_bytes

REASONS = {
    "constraint": "a sharding constraint disagrees with propagation",
    "in-sharding": "an argument's sharding disagrees with what its users need",
    "out-sharding": "a result's sharding disagrees with what its producer gives",
    "contracting": "a contracting dimension sharded on both sides",
    "gradient": "a gradient reduction (the backward pass sums per-shard contributions)",
    "reduction": "a reduction over a sharded axis",
    "lookup": "a gather or scatter into a dimension sharded across devices (each holds some rows; results summed)",
    "uneven": "an uneven dimension padded",
    "shard_map": "a shard_map boundary",
    "explicit": "a collective the program writes (in a shard_map)",
    "call": "a call boundary: a nested function's argument or result sharding",
    "operands": "an op whose operands' shardings disagree",
    "partitioner": "XLA's partitioner communicates inside an op whose operand is sharded",
    "kernel": "an opaque kernel (a Pallas/Mosaic tpu_custom_call, any custom call): XLA runs it whole on each device, "
    "so its sharded operands are gathered for it",
    "callback": "a host callback (jax.pure_callback, io_callback, jax.debug.print): jax runs it on one device, so XLA "
    "gathers its sharded operands to that device",
    "callback-result": "a host callback's result, made on the one device jax runs the callback on, sent to the devices "
    "that use it",
}


@dataclasses.dataclass(frozen=True)
class Origin:
    """A user sharding that put axes on a value (or fixed its sharding outright).

    Attributes:
        kind: ``"argument"``, ``"result"``, ``"constraint"``, ``"shard_map input"`` or ``"shard_map output"``.
        index: the argument or result number, the constraint's number, or the shard_map operand/result.
        name: what the user calls it: ``params['head']``, ``result[0]['head']``, the constraint's jax op.
        spec: the sharding given there, as a PartitionSpec on the module's mesh.
        source: ``file:line`` (an argument: the first line that uses it).
        axes: the mesh axes it explains; ``()`` when it fixes the sharding as a whole.
    """

    kind: str
    index: int
    name: str
    spec: str
    source: str | None
    axes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """What the text and the page call it: ``argument params['head']``, ``constraint``, and an argument or result
        without a name by its number, ``argument 3``."""
        if self.kind == "constraint":
            return self.kind
        return self.name if self.name == f"{self.kind} {self.index}" else f"{self.kind} {self.name}"

    def __str__(self) -> str:
        where = f" at {locations.short(self.source)}" if self.source else ""
        return f"{self.label} {self.spec}{where}"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "axes": list(self.axes), "label": self.label}


@dataclasses.dataclass(frozen=True)
class Sharded:
    """One of the two shardings that meet: its role, the sharding, and the origins of its axes."""

    role: str  # "producer" / "consumer" (a reshard), "lhs" / "rhs" (a contraction), "operand" / "result"
    spec: str
    origins: tuple[Origin, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "spec": self.spec, "origins": [o.to_dict() for o in self.origins]}


@dataclasses.dataclass(frozen=True)
class Value:
    """A value in the module: the op defining it (``@main`` for an argument), which result, its global type,
    the jax op and the Python line (for an op in a nested function: its call's line)."""

    op: str
    index: int
    type: str
    op_name: str = ""
    source: str | None = None

    def __str__(self) -> str:
        name = self.op_name.rsplit("/", 1)[-1] or self.op.split(".")[-1]
        where = f" at {locations.short(self.source)}" if self.source else ""
        return f"{name} {self.type}{where}"


@dataclasses.dataclass(frozen=True)
class Cause:
    """Why Shardy moves data here: one reshard or all-reduce of its plan (or, for XLA, an op it partitions)."""

    reason: str  # a key of REASONS
    value: Value
    have: Sharded
    need: Sharded
    consumer: str = ""  # the op that needs ``need`` (its name and line)
    axes: tuple[str, ...] = ()  # an all-reduce's reduction axes

    @property
    def origins(self) -> tuple[Origin, ...]:
        return self.have.origins + self.need.origins

    def because(self) -> str:
        """The cause as a clause: ``because ...``."""
        have, need = _origin_text(self.have), _origin_text(self.need)
        axes = _axes_text(self.axes)
        if self.reason in ("contracting", "gradient") and self.have.role == "lhs":
            grad = "the gradient " if self.reason == "gradient" else ""
            return (
                f"because {grad}{self.value} contracts a dimension sharded over {axes} on both operands: "
                f"{self.have.spec}{have} and {self.need.spec}{need}"
            )
        if self.have.role == "operand" and self.need.role == "result":
            what = "the gradient " if self.reason == "gradient" else ""
            if self.reason == "lookup":  # a scatter is the lookup's backward: it adds rows into the operand
                verb = "scatters into" if self.value.op.endswith("scatter") else "looks up"
                return f"because {self.value} {verb} rows of an operand sharded over {axes}: {self.have.spec}{have}"
            if self.reason == "kernel":
                return (
                    f"because {self.value} is an opaque kernel, run whole on each device, and its operand is sharded "
                    f"over {axes}: {self.have.spec}{have}"
                )
            if self.reason == "callback":
                return (
                    f"because {self.value} is a host callback, which jax runs on one device, and its operand is "
                    f"sharded over {axes}: {self.have.spec}{have}"
                )
            if self.reason == "callback-result":
                return f"because {self.value} reads a host callback's result, made on one device, as {self.need.spec}"
            if self.reason == "partitioner":
                return (
                    f"because XLA's partitioner communicates inside {self.value}, whose operand is sharded over "
                    f"{axes}: {self.have.spec}{have}"
                )
            return f"because {what}{self.value} reduces over {axes}: its operand is {self.have.spec}{have}"
        if self.reason == "explicit":
            return f"because the shard_map body calls it on {self.value}{have}"
        consumer = f"{self.consumer} needs" if self.consumer else "its user needs"
        if self.reason == "kernel":
            consumer = f"the opaque kernel {self.consumer}, run whole on each device, needs"
        if self.reason == "callback":
            consumer = f"the host callback {self.consumer}, run on one device, needs"
        value = (
            f"{self.value}, a host callback's result, made on one device,"
            if self.reason == "callback-result"
            else self.value
        )
        return f"because {value} is {self.have.spec}{have} where {consumer} {self.need.spec}{need}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "value": dataclasses.asdict(self.value),
            "have": self.have.to_dict(),
            "need": self.need.to_dict(),
            "consumer": self.consumer,
            "axes": list(self.axes),
        }


@dataclasses.dataclass(frozen=True)
class Item:
    """One collective of the report and why it is there (``causes`` empty: ``unexplained`` says why not)."""

    collective: Collective
    causes: tuple[Cause, ...]
    notes: tuple[str, ...] = ()
    unexplained: str = ""

    @property
    def reasons(self) -> tuple[str, ...]:
        found = [c.reason for c in self.causes] + ["uneven" for n in self.notes if n.startswith("uneven")]
        return tuple(dict.fromkeys(found))

    @property
    def summary(self) -> str:
        """One line: what, over which axes, of what, where, and why."""
        c = self.collective
        over = "" if c.over in ("-", "?") else f" over {c.over}"
        results = ", ".join(map(str, c.results[:2])) + (", ..." if len(c.results) > 2 else "")
        source = c.source or next((x.value.source for x in self.causes if x.value.source), None)
        where = f" at {locations.short(source)}" if source else ""
        head = f"{c.kind}{over} of {results}{where}"
        if not self.causes:
            return f"{head}: not explained: {self.unexplained}"
        because = "; and ".join(dict.fromkeys(x.because() for x in self.causes[:3]))
        more = f" (and {len(self.causes) - 3} more)" if len(self.causes) > 3 else ""
        notes = "".join(f"; {n}" for n in self.notes)
        return f"{head} {because}{more}{notes}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "collective": self.collective.to_dict(),
            "summary": self.summary,
            "reasons": list(self.reasons),
            "causes": [c.to_dict() for c in self.causes],
            "notes": list(self.notes),
            "unexplained": self.unexplained,
        }


@dataclasses.dataclass(frozen=True)
class Explanation:
    """Every collective of a report with its causes; printed, one summary line per collective.

    Examples:
        >>> mesh = sk.make_mesh((4, 2), ("x", "y"))
        >>> x = sk.ShapeDtypeStruct((16, 8), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
        >>> why = sk.jit(lambda a: a.sum(0)).lower(x).communication().explain()
        >>> [(i.collective.kind, i.reasons) for i in why.items]
        [('all-reduce', ('reduction',))]
        >>> [(o.kind, o.name, o.spec, o.axes) for o in why.items[0].causes[0].origins]
        [('argument', 'a', "P('x', 'y')", ('x',))]
    """

    report: CommunicationReport
    items: tuple[Item, ...]

    @property
    def unexplained(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if not i.causes)

    def __str__(self) -> str:
        lines = [f"{self.report.title}: why each of {len(self.items)} collectives is there"]
        lines += [f"  {n}  {item.summary}" for n, item in enumerate(self.items)]
        if self.unexplained:
            lines.append(f"{len(self.unexplained)} not explained (listed above with the reason)")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.report.stage, "collectives": [i.to_dict() for i in self.items]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    _repr_html_ = notebook.text

    def save_image(self, path: str | os.PathLike) -> None:
        """Each collective (bar: bytes sent per device) tied to its line and the lines its shardings came from
        (PNG or SVG by suffix; needs ``shardkit[viz]``)."""
        from shardkit.inspect import images

        rows = self.items or ()
        figure = images.new_figure(13, 0.9 + 0.42 * max(len(rows), 1))
        axes = figure.add_subplot()
        sent = [max(i.collective.wire_bytes * i.collective.executions, 0) for i in rows]
        top = max(sent, default=0) or 1
        for n, (item, amount) in enumerate(zip(rows, sent)):
            c = item.collective
            axes.barh(n, 0.25 * amount / top, left=0.0, color="#4c72b0" if item.causes else "#c44e52", height=0.6)
            label = f"{c.kind} {c.over} {human_bytes(amount)}"
            axes.text(0.26, n, label, va="center", fontsize=7)
            source = c.source or next((x.value.source for x in item.causes if x.value.source), None)
            lines = " + ".join(dict.fromkeys(locations.short(o.source) for x in item.causes for o in x.origins))
            text = f"{locations.short(source) or '?'}  <-  {lines or item.unexplained or '?'}"
            axes.text(0.5, n, text, va="center", fontsize=7)
        axes.set_xlim(0, 1.6)
        axes.set_ylim(len(rows) - 0.5, -0.5)
        axes.set_axis_off()
        axes.set_title(f"{self.report.title}: each collective, its line <- where its shardings came from", fontsize=9)
        images.save_figure(figure, path)


def _axes_text(axes: Sequence[str]) -> str:
    return repr(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(repr, axes)) + ")"


def _origin_text(side: Sharded) -> str:
    return f" ({'; '.join(dict.fromkeys(map(str, side.origins)))})" if side.origins else ""


def line_key(source: str | None) -> tuple[str, int] | None:
    """``(file name, line)`` of a ``file:line`` source, None without one: how a collective's line, a value's and an
    op's are compared (XLA and the StableHLO module may name the same file by other paths).

    Examples:
        >>> line_key("/home/me/model.py:73"), line_key("model.py"), line_key(None)
        (('model.py', 73), None, None)
    """
    if not source or ":" not in source:
        return None
    file, _, line = source.rpartition(":")
    return (os.path.basename(file), int(line)) if line.isdigit() else None
