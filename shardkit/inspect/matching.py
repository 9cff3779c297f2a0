"""XLA's collectives matched to Shardy's plan, whose collectives ``propagated.py`` explains.

Each XLA collective is matched to Shardy's collectives of the same kind, mesh axes and element types at the same
source line, those of its per-device shapes first (up to dimensions of size 1: a scanned layer's slice of its
stacked weights keeps the layer dimension in XLA's program); an all-reduce XLA combined from several, operand by
operand; else to one of its per-device shapes up to XLA's padding of an uneven dimension, or of the value it gathers
whole (wherever XLA located it); then to one it is a step of (XLA runs an all-gather over ('x', 'y') as one over
'y', then one over 'x'), at its line; then to any of the plan's collectives at its line; then to one it is a step of
anywhere (XLA may locate a step at the line of the op that reads it); last, to the op at its line whose operand is
sharded over its axes (XLA's partitioner communicates inside that op; over a reduce's sharded reduced dimensions, as
for an argmax that Shardy leaves to XLA, that is a reduction). The notes say how XLA's collective differs from the
plan's it is matched to, whichever step matched it. What stays unmatched is listed with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from shardkit.inspect.communication import Collective
from shardkit.inspect.explanation import Cause, Item, line_key

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


def _same(a: Collective, b: Collective) -> bool:
    return (a.kind, a.axes, a.operands, a.results) == (b.kind, b.axes, b.operands, b.results)


def align(reported: Sequence[Collective], planned: Sequence[Collective], causes: Sequence[Cause | None]) -> list[Item]:
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


class XlaMatcher:
    """Finds, for each collective of XLA's program, the causes in Shardy's plan (see the module docstring)."""

    def __init__(
        self, planned: Sequence[Collective], causes: Sequence[Cause | None], sites: dict[tuple[str, int], list[Cause]]
    ):
        self.plan = [(c, cause) for c, cause in zip(planned, causes) if cause is not None]
        self.sites = sites

    def _line(self, c: Collective, cause: Cause) -> tuple[str, int] | None:
        return line_key(c.source or cause.value.source)

    def item(self, c: Collective) -> Item:
        """XLA's collective ``c`` with the causes it is matched to (or, unmatched, why not)."""
        line = line_key(c.source)
        axes = set(c.axes or ())
        same = [(p, x) for p, x in self.plan if p.kind == c.kind and set(p.axes or ()) == axes]
        at_line = [
            (p, x) for p, x in same if line is not None and self._line(p, x) == line and _dtypes(p) == _dtypes(c)
        ]
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
        # differs between releases); one it is a step of, at its line; another kind or axes at its line; one it is
        # a step of anywhere; without a line, the value it gathers whole. A host callback at its line (no collective of
        # the plan: None) ranks second: a gather of its operand to the callback's device, or its whole result sent from
        # there to all (XLA's all-reduce of it with zeros from the other devices)
        result = str(c.results[0]) if c.results else ""
        sites = [x for x in self.sites.get(line, []) if all(_within(a, x.axes) for a in axes)] if line else []
        callback = [
            (None, x)
            for x in sites
            if (x.reason, c.kind) == ("callback", "all-gather")
            or ((x.reason, c.kind) == ("callback-result", "all-reduce") and x.value.type == result)
        ]
        overlapping = [(p, x) for p, x in self.plan if axes & set(p.axes or ())]
        steps = [(p, x) for p, x in self.plan if _step_of(c, p)]
        pools = (
            sorted(at_line, key=lambda px: _fit(c, px[0])),
            callback,
            sorted((px for px in same if _fit(c, px[0]) < 2), key=lambda px: _fit(c, px[0])),
            [(p, x) for p, x in same if x.value.type == result],
            [(p, x) for p, x in steps if line is not None and self._line(p, x) == line],
            [(p, x) for p, x in overlapping if line is not None and self._line(p, x) == line],
            steps,
            [(p, x) for p, x in overlapping if line is None and x.value.type == result],
        )
        for pool in pools:
            if pool:
                p, x = pool[0]
                return Item(c, (x,), () if p is None else _notes(c, p, x))
        if sites:
            tail = c.op_name.rsplit("/", 1)[-1]
            best = next((x for x in sites if x.value.op_name.rsplit("/", 1)[-1] in tail), sites[0])
            return Item(c, (best,))
        why = "XLA gives it no source line and no collective of Shardy's plan has its kind, axes and shapes"
        if line is not None:
            why = "no collective of Shardy's plan, and no op reading an operand sharded over its axes, is at its line"
        return Item(c, (), unexplained=why)


def _fit(xla: Collective, plan: Collective) -> int:
    """How well XLA's per-device shapes fit the plan's: 0 equal, 1 equal up to XLA's padding or to dimensions of
    size 1 (a scanned layer's slice of its stacked weights keeps the layer dimension in XLA's program, not in
    Shardy's plan of the loop's body), 2 not."""
    if (xla.operands, xla.results) == (plan.operands, plan.results):
        return 0
    padded = _padded(xla.operands, plan.operands, xla.group_size) and _padded(xla.results, plan.results, xla.group_size)
    unit = (_squeezed(xla.operands), _squeezed(xla.results)) == (_squeezed(plan.operands), _squeezed(plan.results))
    return 1 if padded or unit else 2


def _dtypes(c: Collective) -> tuple[str, ...]:
    return tuple(a.dtype for a in c.operands)


def _squeezed(arrays: Sequence[Any]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((a.dtype, tuple(d for d in a.dims if d != 1)) for a in arrays)


def _step_of(xla: Collective, plan: Collective) -> bool:
    """Whether XLA's collective is one step of the plan's: the same kind over some of its axes, each per-device
    shape between the plan's operand and result (XLA runs an all-gather over ('x', 'y') as one over 'y', then one
    over 'x')."""
    if xla.kind != plan.kind or not xla.axes or not plan.axes or set(xla.axes) >= set(plan.axes):
        return False
    if not all(_within(a, plan.axes) for a in xla.axes):
        return False
    return all(_between(arrays, plan.operands, plan.results) for arrays in (xla.operands, xla.results))


def _between(arrays: Sequence[Any], ends: Sequence[Any], other_ends: Sequence[Any]) -> bool:
    """Per-device arrays each between ``ends`` and ``other_ends``, dimension by dimension."""
    if not len(arrays) == len(ends) == len(other_ends):
        return False
    for a, b, c in zip(arrays, ends, other_ends):
        if not a.dtype == b.dtype == c.dtype or not len(a.dims) == len(b.dims) == len(c.dims):
            return False
        if any(not min(y, z) <= x <= max(y, z) for x, y, z in zip(a.dims, b.dims, c.dims)):
            return False
    return True


def _notes(xla: Collective, plan: Collective, cause: Cause) -> tuple[str, ...]:
    """How XLA's collective differs from the plan's it is explained by (the same whichever step matched them)."""
    notes = []
    step = _step_of(xla, plan)
    if step:
        notes.append(f"XLA runs Shardy's {plan.kind} over {plan.over} in steps, this one over {xla.over}")
    elif (xla.kind, set(xla.axes or ())) != (plan.kind, set(plan.axes or ())):
        chose = f"{xla.kind} over {xla.over}"
        notes.append(f"Shardy plans {plan.kind} over {plan.over} for it; XLA's partitioner chose {chose}")
    fit = _fit(xla, plan)
    if fit == 1 and xla.results != plan.results:
        dims = [f"{b} to {a}" for r, q in zip(xla.results, plan.results) for a, b in zip(r.dims, q.dims) if a != b]
        notes.append(f"uneven: XLA pads {', '.join(dims)} to split it evenly over {xla.over}")
    elif fit == 2 and not step and xla.results and str(xla.results[0]) == cause.value.type:
        notes.append("XLA rematerializes the whole value")
    return tuple(notes)
