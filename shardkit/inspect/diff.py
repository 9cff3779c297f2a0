"""What changed between two versions of a sharded program: value shardings, collectives, bytes per mesh axis.

Values and collectives are matched by what survives an edit of the program, not by SSA names: a value by its
op, result number, type, jax op name and Python line (the k-th such value of one program with the k-th of the
other); a collective by its kind, mesh axes, jax op name and line. Each side is a ``Lowered`` (Shardy's plan),
a ``Compiled`` (XLA's program), a ``CommunicationReport`` either made, an ``ir.Module`` or a ``.mlir`` file (Shardy's
plan). Two XLA programs are compared as XLA runs them; any other pair as Shardy plans them.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from jaxlib.mlir import ir

from shardkit.dialects import context, parsing
from shardkit.inspect import locations, notebook, page, shardy
from shardkit.inspect.communication import Collective, CommunicationReport, Totals
from shardkit.inspect.table import ValueSharding, propagated_table
from shardkit.inspect.units import aligned, human_bytes
from shardkit.passes import isolation


@dataclasses.dataclass(frozen=True)
class ValueChange:
    """A value whose sharding differs: where it is, and its PartitionSpec (or Shardy text) before and after."""

    op: str
    index: int
    type: str
    op_name: str
    source: str | None
    before: str
    after: str

    @property
    def is_user_sharding(self) -> bool:
        """An argument of main, a result or a sharding constraint: a sharding the user wrote."""
        return self.op in ("@main", "sdy.sharding_constraint") or self.op.startswith("result ")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ProgramDiff:
    """The differences between two programs (empty: ``not diff``).

    Attributes:
        stage: ``"xla"`` or ``"shardy"``: which collectives are compared.
        values: the values whose sharding changed, in the order of the second program.
        added, removed: collectives only in the second / only in the first program.
        resized: (before, after) pairs of matched collectives whose per-device arrays changed.
        by_axes: per set of mesh axes, bytes sent per device per call (before, after).

    Examples:
        >>> mesh = sk.make_mesh((4, 2), ("x", "y"))
        >>> x = sk.ShapeDtypeStruct((16, 8), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
        >>> f = lambda spec: sk.jit(lambda a: sk.with_sharding_constraint(a * 2, NamedSharding(mesh, spec)))
        >>> bool(sk.inspect.diff(f(P("x", "y")).lower(x), f(P("x", "y")).lower(x)))
        False
        >>> d = sk.inspect.diff(f(P("x", "y")).lower(x), f(P("x")).lower(x))
        >>> [(v.op, v.before, v.after) for v in d.values if v.is_user_sharding]
        [('sdy.sharding_constraint', "P('x', 'y')", "P('x',)")]
        >>> [(c.kind, c.over) for c in d.added]
        [('all-slice', "'y'"), ('all-gather', "'y'")]
    """

    stage: str
    values: tuple[ValueChange, ...]
    added: tuple[Collective, ...]
    removed: tuple[Collective, ...]
    resized: tuple[tuple[Collective, Collective], ...]
    by_axes: dict[str, tuple[int, int]]
    reports: tuple[CommunicationReport, ...] = dataclasses.field(default=(), repr=False, compare=False)

    _repr_html_ = notebook.text

    def to_html(
        self,
        path: str | os.PathLike | None = None,
        *,
        names: tuple[str, str] = ("before", "after"),
        hardware: str | None = None,
        explain: bool = True,
    ) -> page.Page:
        """One self-contained page of the diff (``docs/inspect.md``): what changed, then the two programs side by side
        (each with its mesh, values, collectives and why; the modelled step on ``hardware`` for XLA's programs);
        written to ``path`` when given."""

        def side(report: CommunicationReport, name: str) -> dict[str, Any]:
            step = report.time(hardware) if hardware and report.stage == "xla" else None
            return page.program(report, name=name, step=step, explain=explain)

        programs = [side(r, n) for r, n in zip(self.reports, names)]
        title = f"What changed from {names[0]} to {names[1]}"
        return page.save(page.program_page("diff", programs, title, diff=self.to_dict()), path)

    def __bool__(self) -> bool:
        return bool(self.values or self.added or self.removed or self.resized)

    @property
    def constraints(self) -> tuple[ValueChange, ...]:
        """The changed shardings the user wrote (arguments, results, constraints)."""
        return tuple(v for v in self.values if v.is_user_sharding)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "values": [v.to_dict() for v in self.values],
            "added": [c.to_dict() for c in self.added],
            "removed": [c.to_dict() for c in self.removed],
            "resized": [{"before": a.to_dict(), "after": b.to_dict()} for a, b in self.resized],
            "by_axes": {k: {"before": a, "after": b} for k, (a, b) in self.by_axes.items()},
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        if not self:
            return "no differences\n"
        lines = []
        if self.values:
            lines.append(f"{len(self.values)} value shardings changed ({len(self.constraints)} written by the user):")
            rows = [
                [v.op, str(v.index), v.type, v.before, v.after, _clip(v.op_name), locations.short(v.source)]
                for v in self.values
            ]
            lines += aligned(["op", "#", "type", "before", "after", "jax op", "source"], rows)
        for title, found in (("added", self.added), ("removed", self.removed)):
            if found:
                lines.append(f"collectives {title}:")
                header = ["kind", "over", "result/device", "sent/device", "op", "source"]
                lines += aligned(header, [_row(c) for c in found])
        if self.resized:
            lines.append("collectives resized:")
            rows = [
                [a.kind, a.over, _shapes(a), _shapes(b), f"{a.wire_bytes:,}", f"{b.wire_bytes:,}"]
                + [locations.short(b.source)]
                for a, b in self.resized
            ]
            lines += aligned(["kind", "over", "before", "after", "sent before", "sent after", "source"], rows)
        lines.append("bytes sent per device per call, by mesh axes:")
        rows = [[k, human_bytes(a), human_bytes(b)] for k, (a, b) in self.by_axes.items()]
        lines += aligned(["", "before", "after"], rows)
        return "\n".join(lines) + "\n"


def _clip(text: str, width: int = 50) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _shapes(c: Collective) -> str:
    return ", ".join(map(str, c.results))


def _row(c: Collective) -> list[str]:
    return [c.kind, c.over, _shapes(c), f"{c.wire_bytes:,}", _clip(c.op_name), locations.short(c.source)]


# -- building ---------------------------------------------------------------------------------------------------


def diff(a: Any, b: Any) -> ProgramDiff:
    """What changed from program ``a`` to program ``b`` (see the module docstring for what each may be)."""
    first, second = _report(a, "a"), _report(b, "b")
    if first.stage != second.stage:  # compare like with like: Shardy's plan of both
        first, second = (_plan(r) if r.stage == "xla" else r for r in (first, second))
    values = _value_changes(_table(first), _table(second))
    added, removed, resized = _collective_changes(first.collectives, second.collectives)
    before, after = first.by_axes(), second.by_axes()
    zero = Totals()
    by_axes = {k: (before.get(k, zero).wire_bytes, after.get(k, zero).wire_bytes) for k in {**before, **after}}
    return ProgramDiff(first.stage, values, added, removed, resized, by_axes, (first, second))


def _report(program: Any, name: str) -> CommunicationReport:
    if isinstance(program, CommunicationReport):
        report = program
    elif isinstance(program, (str, os.PathLike)):
        path = os.fspath(program)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ValueError(f"diff argument {name}: could not read {path!r}: {e.strerror}") from None
        module, found = isolation.parse(parsing.Input(text, path, path=path), context())  # as every reader parses
        if module is None:
            errors = "; ".join(str(d) for d in found if d.severity == "error")
            raise ValueError(f"diff argument {name}: {path!r} is not an MLIR module: {errors}")
        report = shardy.report(module)
    elif isinstance(program, ir.Module):
        report = shardy.report(program)
    elif callable(getattr(program, "communication", None)):
        report = program.communication()
    else:
        raise TypeError(
            f"diff argument {name} must be a Lowered, a Compiled, a CommunicationReport, an ir.Module or a path to a "
            f".mlir file, got {type(program).__name__}."
        )
    if report.program is None:
        raise ValueError(f"diff argument {name}: the report has no StableHLO module to read value shardings from.")
    return report


def _plan(report: CommunicationReport) -> CommunicationReport:
    module, mesh, devices = report.program
    return shardy.report(module, mesh, devices)


def _table(report: CommunicationReport) -> list[ValueSharding]:
    module, mesh, _ = report.program
    return list(propagated_table(module, mesh))


def _line(source: str | None) -> tuple[str, str] | None:
    if not source:
        return None
    file, _, line = source.rpartition(":")
    return os.path.basename(file), line


def _pairs(before: Sequence[Any], after: Sequence[Any], key: Callable[[Any], Hashable]) -> tuple[list, list, list]:
    """(matched pairs, only in ``before``, only in ``after``): the k-th of each key with the k-th of the other."""
    pending: dict[Hashable, collections.deque] = collections.defaultdict(collections.deque)
    for item in before:
        pending[key(item)].append(item)
    pairs, added = [], []
    for item in after:
        queue = pending.get(key(item))
        if queue:
            pairs.append((queue.popleft(), item))
        else:
            added.append(item)
    return pairs, [i for q in pending.values() for i in q], added


def _value_key(row: ValueSharding) -> Hashable:
    return row.op, row.index, row.shape, row.dtype, row.op_name, _line(row.source)


def _spec(row: ValueSharding) -> str:
    return str(row.spec) if row.spec is not None else row.sdy or "P()"


def _value_changes(before: list[ValueSharding], after: list[ValueSharding]) -> tuple[ValueChange, ...]:
    pairs, _, _ = _pairs(before, after, _value_key)
    out = []
    for a, b in pairs:
        if _spec(a) != _spec(b):
            type_ = f"{b.dtype}[{','.join(map(str, b.shape))}]"
            out.append(ValueChange(b.op, b.index, type_, b.op_name, b.source, _spec(a), _spec(b)))
    return tuple(out)


def _collective_key(c: Collective) -> Hashable:
    return c.kind, c.over, c.op_name, _line(c.source)


def _collective_changes(
    before: Sequence[Collective], after: Sequence[Collective]
) -> tuple[tuple[Collective, ...], tuple[Collective, ...], tuple[tuple[Collective, Collective], ...]]:
    pairs, removed, added = _pairs(before, after, _collective_key)
    resized = tuple((a, b) for a, b in pairs if (a.operands, a.results) != (b.operands, b.results))
    return tuple(added), tuple(removed), resized
