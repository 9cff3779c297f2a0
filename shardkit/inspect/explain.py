"""Why each collective is there: the value it moves, the two shardings that meet, the reason, and where each
sharding came from (which argument, result or sharding constraint, at which Python line).

Shardy's own origin tracking gives the answer. On a copy of the module, jaxlib's ``sdy-propagation-pipeline``
runs with ``debug-sharding-origins`` on (the pipeline's passes as jaxlib prints them, that flag set), so every
value records, per mesh axis, which user sharding put the axis there: ``input: 3`` (argument 3 of ``main``),
``output: 0``, ``constraint_2`` (the constraint op named so) or ``mc_0_input: 1`` (in_specs of a
``shard_map``). Then the plan's passes run as ``shardy.report`` runs them: every place two shardings disagree
becomes an ``sdy.reshard`` (a partial sum an ``sdy.all_reduce``), which is explained here, op by op, before
``sdy-reshard-to-collectives`` turns each reshard into the collectives it needs, located at the reshard (a tag
in that location ties them back). Crash-prone passes run isolated, as every shardkit pipeline does.

A reshard's two shardings are its operand's (what the producer gives) and its own (what the consumer needs);
an all-reduce's are the two operands of the contraction whose dimension both shard, or the reduced operand.
Each mesh axis of either sharding is traced to its origin: the value's own record, else the nearest value
(through ops, calls and returns) that records the axis. An argument, result or constraint that fixes a sharding
outright (a replicated ``out_shardings``, say) is named as such.

XLA's program is explained through the plan. Each XLA collective is matched to Shardy's collectives of the same
kind and mesh axes at the same source line, those of its per-device shapes first; an all-reduce XLA combined
from several, operand by operand; else to one of its per-device shapes up to XLA's padding of an uneven
dimension, or of the value it gathers whole (wherever XLA located it); then to any of the plan's collectives at
its line; last, to the op at its line whose operand is sharded over its axes (XLA's partitioner communicates
inside that op; over a reduce's sharded reduced dimensions, as for an argmax that Shardy leaves to XLA, that is
a reduction). The notes say how XLA's collective differs from the plan's it is matched to, whichever step
matched it. What stays unmatched is listed with the reason.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import copy_module, irx, sdy as sdy_forms
from shardkit.inspect import communication, locations, shardy
from shardkit.inspect.communication import Collective, CommunicationReport
from shardkit.inspect.units import human_bytes
from shardkit.mesh import AbstractMesh
from shardkit.passes import MlirPass, PassManager, run_pipeline
from shardkit.passes.mlir_pipeline import printed_pass
from shardkit.passes.propagate import reshards_to_constraints
from shardkit.sharding import NamedSharding

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
}

_ORIGINS = "sdy.sharding_origins"
_ORIGIN_NAME = "sdy.sharding_origin_name"
_TAG_ATTR = "shardkit.explain"
_TAG_LOC = re.compile(r'^loc\("shardkit\.explain#(\d+)"(?:\((.*)\))?\)$', re.DOTALL)
_CONTRACTIONS = {"stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"}
_SEARCH_LIMIT = 400  # values visited when an axis's origin is not recorded on the value itself


# -- the explanation ------------------------------------------------------------------------------------------


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

    def __str__(self) -> str:
        where = f" at {locations.short(self.source)}" if self.source else ""
        name = "" if self.kind == "constraint" else f" {self.name}"
        return f"{self.kind}{name} {self.spec}{where}"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "axes": list(self.axes)}


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
            if self.reason == "lookup":
                return f"because {self.value} looks up rows of an operand sharded over {axes}: {self.have.spec}{have}"
            return f"because {what}{self.value} reduces over {axes}: its operand is {self.have.spec}{have}"
        if self.reason == "explicit":
            return f"because the shard_map body calls it on {self.value}{have}"
        consumer = f"{self.consumer} needs" if self.consumer else "its user needs"
        return f"because {self.value} is {self.have.spec}{have} where {consumer} {self.need.spec}{need}"

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

    def save_image(self, path: str | os.PathLike) -> None:
        """Each collective (bar: bytes sent per device) tied to its line and the lines its shardings came from
        (PNG or SVG by suffix; needs ``shardkit[viz]``)."""
        from shardkit.inspect import images

        rows = self.items or ()
        figure = images._figure(13, 0.9 + 0.42 * max(len(rows), 1))
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
        images._save(figure, path)


def _axes_text(axes: Sequence[str]) -> str:
    return repr(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(repr, axes)) + ")"


def _origin_text(side: Sharded) -> str:
    return f" ({'; '.join(dict.fromkeys(map(str, side.origins)))})" if side.origins else ""


# -- entry points -----------------------------------------------------------------------------------------------


def explain(report: CommunicationReport) -> Explanation:
    """The explanation of a report from ``Lowered.communication()`` or ``Compiled.communication()``.

    Raises:
        ValueError: the report carries no StableHLO module (``xla_report`` called without ``source``).
    """
    if report.program is None:
        raise ValueError(
            f"report of stage {report.stage!r} has no StableHLO module to explain it from: build it with "
            "Compiled.communication() or Lowered.communication() (or pass source= to xla_report)."
        )
    module, mesh, devices = report.program
    lines = {c.source for c in report.collectives if c.source} if report.stage == "xla" else set()
    plan, causes, sites = analyse(module, mesh, devices, lines)
    if report.stage == "shardy":
        items = _align(report.collectives, plan.collectives, causes)
    else:
        matcher = _XlaMatcher(plan.collectives, causes, sites)
        items = [matcher.item(c) for c in report.collectives]
    return Explanation(report, tuple(items))


def analyse(
    module: ir.Module, mesh: Any = None, devices: Sequence[Any] | None = None, lines: Iterable[str] = ()
) -> tuple[CommunicationReport, list[Cause | None], dict[tuple[str, int], list[Cause]]]:
    """Shardy's plan for ``module`` (not changed) with the cause of each of its collectives, and, for each Python
    line in ``lines``, the ops there that read a sharded operand (what XLA's partitioner may communicate for)."""
    if "main" not in ir.SymbolTable(module.operation):
        raise ValueError("the module has no function @main to explain")
    module = copy_module(module)
    if not irx.uses_shardy(module):
        run_pipeline(module, "import-gspmd")
    PassManager([MlirPass(_propagation_with_origins())], context=module.context).run(module)  # one (isolated) job
    reshards_to_constraints(module)
    run_pipeline(module, "sdy-insert-explicit-reshards{enable-full-version=true}")
    facts = _Facts(module)
    causes: list[Cause] = []
    for op in irx.ops(module, ("sdy.reshard", "sdy.all_reduce", *irx.STABLEHLO_COLLECTIVES)):
        causes.append(facts.cause(op))
        _tag(op, len(causes) - 1)
    sites = facts.sites({_line_key(s) for s in lines})
    run_pipeline(module, "sdy-reshard-to-collectives")
    plan, ops = shardy.read(module, mesh, devices)
    found: list[Cause | None] = []
    collectives = []
    for c, op in zip(plan.collectives, ops):
        tag, untagged = _tag_of(op)
        found.append(None if tag is None else causes[tag])
        collectives.append(dataclasses.replace(c, op_name=locations.op_name(untagged)))
    return dataclasses.replace(plan, collectives=tuple(collectives)), found, sites


communication.EXPLAIN = explain


@functools.cache
def _propagation_with_origins() -> str:
    """jaxlib's sdy-propagation-pipeline as its passes, recording sharding origins (sdy-save-module, a dump to
    a directory not given, is left out: it is not registered on its own)."""
    text = printed_pass("sdy-propagation-pipeline") or "sdy-propagation-pipeline"
    text = text.replace("sdy-save-module,", "").replace(",sdy-save-module", "")
    return text.replace("debug-sharding-origins=false", "debug-sharding-origins=true")


def _tag(op: ir.Operation, index: int) -> None:
    """Marks ``op`` as the ``index``-th cause: an attribute where the op survives ``sdy-reshard-to-collectives``,
    its location (which the collectives a reshard becomes inherit) where it does not."""
    if op.name != "sdy.reshard":
        op.attributes[_TAG_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64, op.context), index)
        return
    with op.context:
        location = ir.Location.name(f"shardkit.explain#{index}", childLoc=op.location)
        with ir.InsertionPoint(op):
            new = ir.Operation.create(
                "sdy.reshard",
                results=[op.results[0].type],
                operands=[op.operands[0]],
                attributes={"sharding": op.attributes["sharding"]},
                loc=location,
            )
    irx.replace(op, new.results)


def _tag_of(op: ir.Operation) -> tuple[int | None, str]:
    """The cause index a collective carries, and its location as it was before tagging."""
    text = str(op.location)
    if _TAG_ATTR in op.attributes:
        return ir.IntegerAttr(op.attributes[_TAG_ATTR]).value, text
    match = _TAG_LOC.match(text)
    if match is None:
        return None, text
    return int(match.group(1)), f"loc({match.group(2)})" if match.group(2) else "loc(unknown)"


def _line_key(source: str | None) -> tuple[str, int] | None:
    if not source or ":" not in source:
        return None
    file, _, line = source.rpartition(":")
    return (os.path.basename(file), int(line)) if line.isdigit() else None


# -- reading the module ---------------------------------------------------------------------------------------


class _Facts:
    """The propagated module with origins, read: shardings as PartitionSpecs, each axis's origin, the causes."""

    def __init__(self, module: ir.Module):
        self.symbols = ir.SymbolTable(module.operation)
        self.main = self.symbols["main"]
        self.meshes = irx.meshes(module)
        self.named: dict[str, ir.Operation] = {}
        self.callers: dict[str, list[ir.Operation]] = collections.defaultdict(list)
        self.module = module
        for op in irx.ops(module):
            if _ORIGIN_NAME in op.attributes:
                self.named.setdefault(ir.StringAttr(op.attributes[_ORIGIN_NAME]).value, op)
            elif op.name == "func.call":
                self.callers[ir.FlatSymbolRefAttr(op.attributes["callee"]).value].append(op)
        self._where: dict[str, str | None] = {}
        self._main_args = irx.value_attrs(self.main, "arg")
        self.argument = functools.cache(self.argument)  # type: ignore[method-assign]
        self.result = functools.cache(self.result)  # type: ignore[method-assign]
        self.spec = functools.cache(self.spec)  # type: ignore[method-assign]  # a few shardings, asked for often

    # -- values, shardings, lines

    def spec(self, tensor: sdy_forms.SdyTensorSharding | None) -> str:
        """``P('data', None, 'model')``, every dimension listed; Shardy's text where a PartitionSpec cannot say it."""
        if tensor is None:
            return "P()"
        mesh = self.meshes.get(tensor.mesh) if isinstance(tensor.mesh, str) else tensor.mesh
        try:
            spec = NamedSharding.from_sdy(tensor, _abstract(mesh.axes)).spec
        except (ValueError, TypeError, AttributeError):
            return str(tensor)
        entries = [*spec, *[None] * (len(tensor.dims) - len(spec))]
        if not any(entries):
            return "P()"
        text = "P(" + ", ".join(repr(e) for e in entries) + ")"
        return text + (f" unreduced {{{', '.join(map(str, tensor.unreduced))}}}" if tensor.unreduced else "")

    def source(self, op: ir.Operation) -> str | None:
        """The op's Python line, or (inside a nested function) the line of the first call of that function."""
        found = locations.source(op.location)
        if found is not None:
            return found
        func = _function_of(op)
        if func is None:
            return None
        name = ir.StringAttr(func.attributes["sym_name"]).value
        if name not in self._where:
            self._where[name] = None  # a recursive call finds nothing rather than looping
            calls = self.callers.get(name, [])
            self._where[name] = next((s for s in map(self.source, calls) if s), None)
        return self._where[name]

    def value(self, value: ir.Value) -> Value:
        type_ = str(shardy.array_shape(value.type)) if isinstance(value.type, ir.RankedTensorType) else str(value.type)
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            index = ir.BlockArgument(value).arg_number
            name = ir.StringAttr(parent.attributes["sym_name"]).value if parent.name == "func.func" else parent.name
            arg = locations.op_name(value.location) if parent.name == "func.func" else ""
            return Value("@" + name if parent.name == "func.func" else name, index, type_, arg, self._first_use(value))
        op = owner.operation
        return Value(op.name, ir.OpResult(value).result_number, type_, locations.op_name(op.location), self.source(op))

    def _first_use(self, value: ir.Value, depth: int = 4) -> str | None:
        """The first line (lowest line number) that uses ``value``, looking through the reshards and sdy ops
        that the passes located nowhere."""
        found = []
        for use in value.uses:
            user = use.owner.operation
            line = self.source(user)
            if line is None and depth and user.name.startswith("sdy.") and user.results:
                line = self._first_use(user.results[0], depth - 1)
            if line is not None:
                found.append(line)
        return min(found, key=lambda s: (_line_key(s) or ("", 0))[1], default=None)

    def op_text(self, op: ir.Operation) -> str:
        name = locations.op_name(op.location).rsplit("/", 1)[-1] or op.name.split(".")[-1]
        where = self.source(op)
        return f"{name} at {locations.short(where)}" if where else name

    # -- origins

    def origins_of(self, value: ir.Value) -> dict[str, str]:
        """Axis -> origin name, as Shardy recorded them for this value (``self`` resolved)."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            index = ir.BlockArgument(value).arg_number
            if parent.name == "func.func":
                is_main = parent == self.main.operation
                return _names(self._main_args[index].get(_ORIGINS), f"input: {index}") if is_main else {}
            own = _own_name(parent, f"_input: {index}")
            return _names(_nth(parent.attributes, "sdy.block_arg_sharding_origins", index), own)
        op = owner.operation
        index = ir.OpResult(value).result_number
        attrs = op.attributes
        if _ORIGINS in attrs:
            attr = attrs[_ORIGINS]
            attr = attr if isinstance(attr, ir.DictAttr) else _nth(attrs, _ORIGINS, index)
            return _names(attr, _own_name(op))
        return _names(_nth(attrs, "sdy.result_sharding_origins", index), _own_name(op, f"_output: {index}"))

    def _neighbours(self, value: ir.Value) -> list[ir.Value]:
        out: list[ir.Value] = []
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            if parent.name == "func.func" and parent != self.main.operation:
                index = ir.BlockArgument(value).arg_number
                name = ir.StringAttr(parent.attributes["sym_name"]).value
                out += [call.operands[index] for call in self.callers.get(name, [])]
        else:
            op = owner.operation
            if op.name == "func.call":
                callee = self.symbols[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
                out.append(_returned(callee.operation)[ir.OpResult(value).result_number])
            out += list(op.operands)
        for use in value.uses:
            user = use.owner.operation
            if user.name == "func.return":
                func = _function_of(user)
                if func is not None and func != self.main.operation:
                    name = ir.StringAttr(func.attributes["sym_name"]).value
                    out += [call.results[use.operand_number] for call in self.callers.get(name, [])]
            else:
                out += list(user.results)
        return out

    def find(self, seeds: Sequence[ir.Value], axis: str, blocked: Iterable[ir.Value] = ()) -> str | None:
        """The origin of ``axis`` on the nearest value (breadth first from ``seeds``) that records one."""
        seen = set(blocked) | set(seeds)
        queue = collections.deque(seeds)
        while queue and len(seen) < _SEARCH_LIMIT:
            value = queue.popleft()
            origin = _for_axis(self.origins_of(value), axis)
            if origin is not None:
                return origin
            for nxt in self._neighbours(value):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return None

    def origin(self, name: str, axes: tuple[str, ...] = ()) -> Origin | None:
        """The Origin an origin name stands for (``input: 3``, ``output: 0``, ``constraint_2``, ``mc_0_input: 1``)."""
        match = re.fullmatch(r"(input|output): (\d+)", name)
        if match:
            return (self.argument if match.group(1) == "input" else self.result)(int(match.group(2)), axes)
        match = re.fullmatch(r"(mc_\d+)_(input|output): (\d+)", name)
        if match and match.group(1) in self.named:
            op, side, index = self.named[match.group(1)], match.group(2), int(match.group(3))
            key = "in_shardings" if side == "input" else "out_shardings"
            attr = sdy.TensorShardingPerValueAttr(op.attributes[key]).shardings[index]
            spec = self.spec(sdy_forms.SdyTensorSharding.from_attr(attr))
            name = f"{'in' if side == 'input' else 'out'}_specs[{index}]"
            return Origin(f"shard_map {side}", index, name, spec, self.source(op), axes)
        if name in self.named and "sharding" in self.named[name].attributes:
            op = self.named[name]
            tensor = sdy_forms.SdyTensorSharding.from_attr(op.attributes["sharding"])
            number = int(name.rsplit("_", 1)[1]) if name.rsplit("_", 1)[-1].isdigit() else 0
            name = locations.op_name(op.location)
            return Origin("constraint", number, name, self.spec(tensor), self.source(op), axes)
        return None

    def argument(self, index: int, axes: tuple[str, ...] = ()) -> Origin:
        arg = self.main.regions[0].blocks[0].arguments[index]
        name = locations.op_name(arg.location) or f"argument {index}"
        return Origin("argument", index, name, self.spec(shardy.sharding_of(arg)), self._first_use(arg), axes)

    def result(self, index: int, axes: tuple[str, ...] = ()) -> Origin:
        attrs = irx.value_attrs(self.main, "res")[index]
        info = attrs.get("jax.result_info")
        name = ir.StringAttr(info).value if info is not None else f"result {index}"
        tensor = sdy_forms.SdyTensorSharding.from_attr(attrs[irx.SDY_SHARDING]) if irx.SDY_SHARDING in attrs else None
        returned = _returned(self.main.operation)[index]
        owner = returned.owner
        source = None if isinstance(owner, ir.Block) else self.source(owner.operation)
        return Origin("result", index, name, self.spec(tensor), source, axes)

    def side(
        self,
        role: str,
        value: ir.Value,
        tensor: sdy_forms.SdyTensorSharding | None,
        axes: Sequence[str] | None = None,
        *,
        seeds: Sequence[ir.Value] | None = None,
        blocked: Iterable[ir.Value] = (),
        pinned: Sequence[Origin] = (),
    ) -> Sharded:
        """A sharding and the origins of its ``axes`` (default: all it holds), searched from ``seeds``."""
        axes = list(_axis_names(tensor)) if axes is None else list(axes)
        by_origin: dict[str, list[str]] = {}
        for axis in axes:
            name = self.find(list(seeds) if seeds is not None else [value], axis, blocked)
            if name is not None:
                by_origin.setdefault(name, []).append(axis)
        found = [self.origin(name, tuple(group)) for name, group in by_origin.items()]
        unique: dict[tuple[str, int], Origin] = {}
        for o in (*found, *pinned):  # an origin of named axes says more than the same one fixing the whole
            if o is not None:
                unique.setdefault((o.kind, o.index), o)
        return Sharded(role, self.spec(tensor), tuple(unique.values()))

    def pinned(self, value: ir.Value) -> list[Origin]:
        """The user sharding that fixes ``value``'s sharding outright: an argument of main, a constraint."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            if parent == self.main.operation:
                return [self.argument(ir.BlockArgument(value).arg_number)]
            return []
        return self._fixed_by(owner.operation, f"output: {ir.OpResult(value).result_number}")

    def needs(self, user: ir.Operation, operand: int) -> list[Origin]:
        """The user sharding a consumer fixes: main's result, a constraint, a shard_map's in_specs."""
        if user.name == "func.return" and _function_of(user) == self.main.operation:
            return [self.result(operand)]
        return self._fixed_by(user, f"input: {operand}")

    def _fixed_by(self, op: ir.Operation, port: str) -> list[Origin]:
        """The origin a constraint or a shard_map boundary (its ``port``: ``input: 0``, ``output: 1``) records
        under its origin name, if ``op`` is one."""
        if _ORIGIN_NAME not in op.attributes:
            return []
        name = ir.StringAttr(op.attributes[_ORIGIN_NAME]).value
        if op.name == "sdy.sharding_constraint":
            found = self.origin(name)
        elif op.name == "sdy.manual_computation":
            found = self.origin(f"{name}_{port}")
        else:
            return []
        return [found] if found else []

    # -- causes

    def cause(self, op: ir.Operation) -> Cause:
        if op.name == "sdy.reshard":
            return self._reshard(op)
        if op.name == "sdy.all_reduce":
            return self._all_reduce(op)
        return self._explicit(op)

    def _reshard(self, op: ir.Operation) -> Cause:
        operand, result = op.operands[0], op.results[0]
        before, after = shardy.sharding_of(operand), sdy_forms.SdyTensorSharding.from_attr(op.attributes["sharding"])
        uses = [(u.owner.operation, u.operand_number) for u in result.uses]
        user, number = uses[0] if uses else (None, 0)
        have = self.side("producer", operand, before, blocked=[result], pinned=self.pinned(operand))
        seeds = [v for u, _ in uses for v in (*u.results, *u.operands) if v != result]
        pinned = self.needs(user, number) if user else []
        need = self.side("consumer", result, after, seeds=seeds, blocked=[operand, result], pinned=pinned)
        reason = _reshard_reason(self, operand, user, have, need)
        return Cause(reason, self.value(operand), have, need, self._consumer(user))

    def _consumer(self, user: ir.Operation | None) -> str:
        if user is None:
            return ""
        if user.name == "func.return":
            func = _function_of(user)
            name = ir.StringAttr(func.attributes["sym_name"]).value if func is not None else "?"
            return "the result of main" if name == "main" else f"the result of @{name}"
        if user.name == "func.call":
            return f"the call of @{ir.FlatSymbolRefAttr(user.attributes['callee']).value} at " + locations.short(
                self.source(user)
            )
        return self.op_text(user)

    def _first_user(self, value: ir.Value) -> str:
        """The first op that uses ``value``, named as ``_consumer`` names it (empty if none)."""
        return self._consumer(next((u.owner.operation for u in value.uses), None))

    def _all_reduce(self, op: ir.Operation) -> Cause:
        partial, result = op.operands[0], op.results[0]
        axes = tuple(_ref_text(n, s) for n, s in irx.axis_refs(str(op.attributes["reduction_axes"])))
        after = sdy_forms.SdyTensorSharding.from_attr(op.attributes["out_sharding"])
        consumer = self._first_user(result)
        owner = partial.owner
        producer = None if isinstance(owner, ir.Block) else owner.operation
        gradient = producer is not None and "transpose(" in locations.op_name(producer.location)
        if producer is not None and producer.name in _CONTRACTIONS and len(producer.operands) >= 2:
            lhs, rhs = producer.operands[0], producer.operands[1]
            have = self.side("lhs", lhs, shardy.sharding_of(lhs), axes, pinned=self.pinned(lhs))
            need = self.side("rhs", rhs, shardy.sharding_of(rhs), axes, pinned=self.pinned(rhs))
            reason = "gradient" if gradient else "contracting"
            return Cause(reason, self.value(partial), have, need, consumer, axes)
        source = producer.operands[0] if producer is not None and producer.operands else partial
        lookup = producer is not None and producer.name in ("stablehlo.gather", "stablehlo.scatter")
        reason = "gradient" if gradient else "lookup" if lookup else "reduction"
        return self._operand_cause(reason, partial, source, axes, after, consumer)

    def _operand_cause(
        self,
        reason: str,
        value: ir.Value,
        operand: ir.Value,
        axes: tuple[str, ...],
        after: sdy_forms.SdyTensorSharding | None,
        consumer: str,
    ) -> Cause:
        """An op's communication for one operand: the operand's sharding with the origins of its ``axes``, and the
        sharding ``value`` (the op's result) gets."""
        have = self.side("operand", operand, shardy.sharding_of(operand), axes, pinned=self.pinned(operand))
        return Cause(reason, self.value(value), have, Sharded("result", self.spec(after)), consumer, axes)

    def _explicit(self, op: ir.Operation) -> Cause:
        operand = op.operands[0]
        parent = op.parent
        while parent is not None and parent.name not in ("sdy.manual_computation", "func.func"):
            parent = parent.parent
        pinned: list[Origin] = []
        if parent is not None and parent.name == "sdy.manual_computation" and _ORIGIN_NAME in parent.attributes:
            name = ir.StringAttr(parent.attributes[_ORIGIN_NAME]).value
            count = len(sdy.TensorShardingPerValueAttr(parent.attributes["in_shardings"]).shardings)
            pinned = [o for o in (self.origin(f"{name}_input: {i}") for i in range(count)) if o]
        spec = self.spec(shardy.sharding_of(operand))
        return Cause("explicit", self.value(operand), Sharded("operand", spec, tuple(pinned)), Sharded("result", spec))

    def sites(self, lines: set[tuple[str, int] | None]) -> dict[tuple[str, int], list[Cause]]:
        """For XLA's collectives that Shardy's plan does not hold: the ops at their lines that read an operand
        sharded on some axis, each as a ``partitioner`` cause, a reduce's sharded reduced dimensions first as a
        ``reduction`` cause (a reduction Shardy leaves to XLA, such as argmax's, which no all-reduce computes)."""
        lines.discard(None)
        out: dict[tuple[str, int], list[Cause]] = {}
        if not lines:
            return out
        for op in irx.ops(self.module):
            if not op.name.startswith("stablehlo.") or not op.results or not op.operands:
                continue
            key = _line_key(self.source(op))
            if key not in lines:
                continue
            operand = next((v for v in op.operands if _axis_names(shardy.sharding_of(v))), None)
            if operand is None:
                continue
            result, tensor = op.results[0], shardy.sharding_of(operand)
            after = shardy.sharding_of(result)
            found = out.setdefault(key, [])
            if op.name == "stablehlo.reduce":
                reduced = _axis_names(tensor, ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
                if reduced:
                    cause = self._operand_cause("reduction", result, operand, reduced, after, self._first_user(result))
                    found.append(cause)
            found.append(
                self._operand_cause("partitioner", result, operand, _axis_names(tensor), after, self.op_text(op))
            )
        return out


def _reshard_reason(facts: _Facts, operand: ir.Value, user: ir.Operation | None, have: Sharded, need: Sharded) -> str:
    owner = operand.owner
    producer = None if isinstance(owner, ir.Block) else owner.operation
    kinds = [o.kind for o in need.origins], [o.kind for o in have.origins]
    if "sdy.manual_computation" in (getattr(user, "name", ""), getattr(producer, "name", "")) or any(
        k.startswith("shard_map") for side in kinds for k in side
    ):
        return "shard_map"
    if user is not None and user.name == "func.return" and _function_of(user) == facts.main.operation:
        return "out-sharding"
    in_callee = isinstance(owner, ir.Block) and owner.owner.operation != facts.main.operation
    at_call = user is not None and user.name in ("func.call", "func.return")
    if at_call or in_callee or (producer is not None and producer.name == "func.call"):
        return "call"
    if user is not None and user.name == "sdy.sharding_constraint":
        return "constraint"
    for side in kinds:
        for kind, reason in (("constraint", "constraint"), ("result", "out-sharding"), ("argument", "in-sharding")):
            if kind in side:
                return reason
    return "operands"


def _function_of(op: ir.Operation) -> ir.Operation | None:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent


def _returned(func: ir.Operation) -> list[ir.Value]:
    return list(list(func.regions[0].blocks[0].operations)[-1].operands)


def _own_name(op: ir.Operation, manual: str = "") -> str | None:
    """What ``self`` stands for in ``op``'s origins: its origin name (a shard_map's, with ``manual`` added)."""
    if _ORIGIN_NAME not in op.attributes:
        return None
    name = ir.StringAttr(op.attributes[_ORIGIN_NAME]).value
    return name + manual if op.name == "sdy.manual_computation" else name


def _nth(attrs: Any, key: str, index: int) -> ir.Attribute | None:
    if key not in attrs:
        return None
    array = ir.ArrayAttr(attrs[key])
    return array[index] if index < len(array) else None


def _names(attr: ir.Attribute | None, own: str | None) -> dict[str, str]:
    """``{data = "input: 22", model = "self"}`` -> ``{'data': 'input: 22', 'model': own}``."""
    if attr is None:
        return {}
    entries = ir.DictAttr(attr)
    out = {}
    for i in range(len(entries)):
        named = entries[i]
        text = ir.StringAttr(named.attr).value
        if text == "self":
            if own is None:
                continue
            text = own
        out[named.name] = text
    return out


def _for_axis(origins: dict[str, str], axis: str) -> str | None:
    if axis in origins:
        return origins[axis]
    base = axis.split(":", 1)[0]
    return next((v for k, v in origins.items() if k.split(":", 1)[0] == base), None)


_SUB_AXIS = re.compile(r"(.*):\((\d+)\)(\d+)")


def _within(axis: str, axes: Sequence[str]) -> bool:
    """Whether the (sub-)axis ``axis`` lies within one of ``axes``: itself, its whole axis, or a sub-axis of the
    same axis around it (``'x:(1)2'`` lies within ``'x'`` and ``'x:(1)4'``; Shardy's pre-size counts from the
    major end)."""
    part = _SUB_AXIS.fullmatch(axis)
    if part is None:
        return axis in axes
    name, pre, size = part.group(1), int(part.group(2)), int(part.group(3))
    for other in axes:
        around = _SUB_AXIS.fullmatch(other)
        if other == name or (
            around is not None
            and around.group(1) == name
            and int(around.group(2)) <= pre
            and pre * size <= int(around.group(2)) * int(around.group(3))
        ):
            return True
    return False


def _ref_text(name: str, sub: tuple[int, int] | None) -> str:
    return name if sub is None else f"{name}:({sub[0]}){sub[1]}"


def _axis_names(tensor: sdy_forms.SdyTensorSharding | None, dims: Iterable[int] | None = None) -> tuple[str, ...]:
    """The (sub-)axes that shard ``tensor``'s dimensions (those numbered ``dims``; default all)."""
    if tensor is None:
        return ()
    chosen = tensor.dims if dims is None else [tensor.dims[d] for d in dims]
    return tuple(_ref_text(a.name, a.sub) for d in chosen for a in d.axes)


@functools.cache
def _abstract(axes: tuple[tuple[str, int], ...]) -> AbstractMesh:
    return AbstractMesh(tuple(s for _, s in axes), tuple(n for n, _ in axes))


# -- matching ---------------------------------------------------------------------------------------------------


def _same(a: Collective, b: Collective) -> bool:
    return (a.kind, a.axes, a.operands, a.results) == (b.kind, b.axes, b.operands, b.results)


def _align(reported: Sequence[Collective], planned: Sequence[Collective], causes: Sequence[Cause | None]) -> list[Item]:
    """The report's collectives (Shardy's plan) with the causes of the same collectives in the explained plan."""
    free = list(range(len(planned)))
    items = []
    for c in reported:
        index = next((i for i in free if _same(c, planned[i])), None)
        if index is None or causes[index] is None:
            items.append(Item(c, (), unexplained="no reshard or all-reduce of Shardy's plan produced it"))
            continue
        free.remove(index)
        items.append(Item(c, (causes[index],)))
    return items


def _padded(xla: Sequence[Any], plan: Sequence[Any], slack: int) -> bool:
    """Per-device arrays equal, or XLA's padded up by less than ``slack`` per dimension."""
    if len(xla) != len(plan):
        return False
    for a, b in zip(xla, plan):
        if a.dtype != b.dtype or len(a.dims) != len(b.dims):
            return False
        if any(not 0 <= x - y < max(slack, 1) for x, y in zip(a.dims, b.dims)):
            return False
    return True


class _XlaMatcher:
    """Finds, for each collective of XLA's program, the causes in Shardy's plan (see the module docstring)."""

    def __init__(
        self, planned: Sequence[Collective], causes: Sequence[Cause | None], sites: dict[tuple[str, int], list[Cause]]
    ):
        self.plan = [(c, cause) for c, cause in zip(planned, causes) if cause is not None]
        self.sites = sites

    def _line(self, c: Collective, cause: Cause) -> tuple[str, int] | None:
        return _line_key(c.source or cause.value.source)

    def item(self, c: Collective) -> Item:
        line = _line_key(c.source)
        axes = set(c.axes or ())
        same = [(p, x) for p, x in self.plan if p.kind == c.kind and set(p.axes or ()) == axes]
        at_line = [(p, x) for p, x in same if line is not None and self._line(p, x) == line]
        if len(c.operands) > 1 and c.kind == "all-reduce":  # combined by XLA: each operand on its own
            causes = []
            for operand in c.operands:
                pool = [(p, x) for p, x in at_line + same if p.operands == (operand,)]
                if pool:
                    causes.append(pool[0][1])
            if causes:
                return Item(c, tuple(dict.fromkeys(causes)), (f"XLA combined {len(c.operands)} all-reduces",))
        # the plan's collectives, best evidence first: the same kind and axes at its line (its per-device shapes
        # first), or anywhere with its shapes (up to padding) or with the value it gathers whole (XLA's line for it
        # differs between releases); another kind or axes at its line; without a line, the value it gathers whole
        result = str(c.results[0]) if c.results else ""
        overlapping = [(p, x) for p, x in self.plan if axes & set(p.axes or ())]
        pools = (
            sorted(at_line, key=lambda px: _fit(c, px[0])),
            sorted((px for px in same if _fit(c, px[0]) < 2), key=lambda px: _fit(c, px[0])),
            [(p, x) for p, x in same if x.value.type == result],
            [(p, x) for p, x in overlapping if line is not None and self._line(p, x) == line],
            [(p, x) for p, x in overlapping if line is None and x.value.type == result],
        )
        for pool in pools:
            if pool:
                p, x = pool[0]
                return Item(c, (x,), _notes(c, p, x))
        sites = [x for x in self.sites.get(line, []) if all(_within(a, x.axes) for a in axes)] if line else []
        if sites:
            tail = c.op_name.rsplit("/", 1)[-1]
            best = next((x for x in sites if x.value.op_name.rsplit("/", 1)[-1] in tail), sites[0])
            return Item(c, (best,))
        why = "XLA gives it no source line and no collective of Shardy's plan has its kind, axes and shapes"
        if line is not None:
            why = "no collective of Shardy's plan, and no op reading an operand sharded over its axes, is at its line"
        return Item(c, (), unexplained=why)


def _fit(xla: Collective, plan: Collective) -> int:
    """How well XLA's per-device shapes fit the plan's: 0 equal, 1 equal up to XLA's padding, 2 not."""
    if (xla.operands, xla.results) == (plan.operands, plan.results):
        return 0
    padded = _padded(xla.operands, plan.operands, xla.group_size) and _padded(xla.results, plan.results, xla.group_size)
    return 1 if padded else 2


def _notes(xla: Collective, plan: Collective, cause: Cause) -> tuple[str, ...]:
    """How XLA's collective differs from the plan's it is explained by (the same whichever step matched them)."""
    notes = []
    if (xla.kind, set(xla.axes or ())) != (plan.kind, set(plan.axes or ())):
        chose = f"{xla.kind} over {xla.over}"
        notes.append(f"Shardy plans {plan.kind} over {plan.over} for it; XLA's partitioner chose {chose}")
    fit = _fit(xla, plan)
    if fit == 1 and xla.results != plan.results:
        dims = [f"{b} to {a}" for r, q in zip(xla.results, plan.results) for a, b in zip(r.dims, q.dims) if a != b]
        notes.append(f"uneven: XLA pads {', '.join(dims)} to split it evenly over {xla.over}")
    elif fit == 2 and xla.results and str(xla.results[0]) == cause.value.type:
        notes.append("XLA rematerializes the whole value")
    return tuple(notes)
