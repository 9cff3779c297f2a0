"""The communication report of a compiled program, read from the partitioned HLO module XLA will run.

The module's structure comes from jaxlib's ``HloModule`` API (computations, instructions, opcodes, operands,
users, async-wrapped roots); the per-instruction details from ``shardkit.inspect.hlo``. The walk starts at
the entry computation and follows every called computation (loop bodies and conditions, calls, branches,
async wrappers, fusions), so a collective is reported once per place the program runs it, with the trip
counts of the loops around it.

XLA's TPU compiler writes an asynchronous collective as fusions (``xla_tpu_enable_async_collective_fusion``): a
start (its root the custom call ``AsyncCollectiveStart``), fusions of compute that carry it on
(``continuation_config`` in their backend config) and a done (``AsyncCollectiveDone``), each holding a copy of the
collective; it is reported once, at its start, as asynchronous. A collective across slices of a multi-slice
target is a host transfer of XLA's multi-slice runtime (``hlo.megascale``), reported at its ``send``, asynchronous
(its ``recv-done`` waits for it), between the devices of equal position in each slice.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from shardkit import _jaxlib
from shardkit.inspect import groups as groups_, hlo
from shardkit.inspect.communication import Collective, CommunicationReport

_Op = _jaxlib.hlo_opcodes()
# opcode -> (kind, issued asynchronously); the *-done halves and async-done carry nothing new.
_COLLECTIVES = {
    _Op.kAllReduce: ("all-reduce", False),
    _Op.kAllReduceStart: ("all-reduce", True),
    _Op.kAllGather: ("all-gather", False),
    _Op.kAllGatherStart: ("all-gather", True),
    _Op.kReduceScatter: ("reduce-scatter", False),
    _Op.kAllToAll: ("all-to-all", False),
    _Op.kCollectivePermute: ("collective-permute", False),
    _Op.kCollectivePermuteStart: ("collective-permute", True),
}
_DONE = {
    _Op.kAllReduceStart: _Op.kAllReduceDone,
    _Op.kAllGatherStart: _Op.kAllGatherDone,
    _Op.kCollectivePermuteStart: _Op.kCollectivePermuteDone,
}
_HAS_GLOBAL_IDS = {"all-reduce", "all-gather", "reduce-scatter"}
_CALLERS = {_Op.kWhile, _Op.kCall, _Op.kConditional, _Op.kAsyncStart, _Op.kFusion, _Op.kCustomCall}


def report(module: Any, devices: Sequence[Any], mesh: Any = None, source: Any = None) -> CommunicationReport:
    """Every collective of a partitioned ``HloModule`` (``executable.hlo_modules()[0]``).

    Args:
        module: jaxlib's HloModule after SPMD partitioning.
        devices: the device assignment, in partition order (partition ``p`` runs on ``devices[p]``).
        mesh: a shardkit ``Mesh`` over those devices to name the groups by; None reports device groups only.
        source: the sharded StableHLO module XLA compiled, for ``explain()``; None when not at hand.
    """
    text = module.to_string()
    reader = _Reader(module, hlo.stack_frames(text), devices, mesh)
    reader.walk(hlo.entry_name(text), ())
    axes = None if mesh is None else tuple((str(n), int(s)) for n, s in mesh.shape_tuple)
    ids = () if mesh is None else tuple(d.id for d in mesh.devices.flat)
    program = None if source is None else (source, mesh, devices)
    return CommunicationReport("xla", axes, len(devices), tuple(reader.found), ids, program)


@dataclasses.dataclass(frozen=True)
class Loop:
    """A while loop as the program runs it (once per place: a loop in a computation called twice is two).

    Attributes:
        instruction: the ``while`` instruction (its ``body`` and ``condition`` attributes name the computations).
        loops: the trip count of this loop, last, after those of the loops around it; None where unknown.
    """

    instruction: hlo.Instruction
    loops: tuple[int | None, ...]


def while_loops(module: Any, text: str | None = None) -> list[Loop]:
    """Every while loop a partitioned ``HloModule`` runs, in program order, with the trip counts the
    communication report counts its collectives by (XLA's recorded count, else ``_Reader.counted_trips``).
    ``text``: the module's ``to_string()``, where the caller has it."""
    reader = _Reader(module, {}, (), None, collectives=False)
    reader.walk(hlo.entry_name(module.to_string() if text is None else text), ())
    return reader.loops


class _Reader:
    def __init__(
        self, module: Any, frames: dict[int, hlo.Frame], devices: Sequence[Any], mesh: Any, collectives: bool = True
    ):
        self.collectives = collectives
        self.loops: list[Loop] = []
        self.computations = {c.name: c for c in module.computations()}
        self.frames = frames
        self.devices = devices
        self.positions = None if mesh is None else groups_.mesh_positions(devices, mesh)
        self.names = () if mesh is None else tuple(mesh.axis_names)
        self.sizes = () if mesh is None else tuple(s for _, s in mesh.shape_tuple)
        self.found: list[Collective] = []

    def walk(self, name: str, loops: tuple[int | None, ...]) -> None:
        for inst in self.computations[name].instructions():
            op = inst.opcode
            if op in _COLLECTIVES:
                if self.collectives:
                    self.found.append(self.collective(inst, *_COLLECTIVES[op], loops))
            elif op == _Op.kSend:
                parsed = hlo.parse_instruction(inst.to_string())
                transfer = hlo.megascale(parsed)
                if transfer is not None and self.collectives:
                    self.found.append(self.across_slices(inst, parsed, transfer, loops))
            elif op == _Op.kAsyncStart and inst.async_wrapped_root().opcode in _COLLECTIVES:
                if self.collectives:
                    root = inst.async_wrapped_root()
                    self.found.append(self.collective(root, _COLLECTIVES[root.opcode][0], True, loops))
            elif op in _CALLERS:
                parsed = hlo.parse_instruction(inst.to_string())
                role = hlo.async_role(parsed, self.fused_parsed(inst)) if op == _Op.kFusion else None
                if role is not None:  # one asynchronous collective in start, continuation and done fusions
                    if role == "start" and self.collectives:
                        inner = next(i for i in self.fused(inst) if i.opcode in _COLLECTIVES)
                        self.found.append(self.collective(inner, _COLLECTIVES[inner.opcode][0], True, loops))
                    continue
                if op == _Op.kWhile:
                    trips = hlo.known_trip_count(parsed)  # XLA's own count, 0 included
                    inner = loops + (self.counted_trips(inst, parsed) if trips is None else trips,)
                    self.loops.append(Loop(parsed, inner))
                else:
                    inner = loops
                for callee in hlo.called_computations(parsed):
                    if callee in self.computations:
                        self.walk(callee, inner)

    def counted_trips(self, loop: Any, parsed: hlo.Instruction) -> int | None:
        """The trip count of a counted loop XLA recorded none for (its TPU compiler records none): counter
        element ``k`` of the loop's tuple starts at a constant ``c``, the condition is ``counter < n`` for a
        constant ``n`` and the body adds a constant ``s``, as jax's ``fori_loop`` and ``scan`` write it (``s = 1``)
        and XLA's TPU compiler its windowed matmul loops (``s = 2``): ``ceil((n - c) / s)``. None for any other
        form."""
        condition = self.computations.get(parsed.attributes.get("condition", "").lstrip("%"))
        body = self.computations.get(parsed.attributes.get("body", "").lstrip("%"))
        if condition is None or body is None or not loop.operands() or loop.operands()[0].opcode != _Op.kTuple:
            return None
        compares = [op for op in map(self.op, condition.instructions()) if op[0] == _Op.kCompare]
        if len(compares) != 1 or "direction=LT" not in compares[0][1]:
            return None
        counter, bound = compares[0][2]
        k, n = _element(counter), _constant(bound)
        if k is None or n is None:
            return None
        start = _constant(_uncopied(loop.operands()[0].operands()[k]))
        roots = [i for i in body.instructions() if i.opcode == _Op.kTuple and not i.users()]
        if start is None or len(roots) != 1 or len(roots[0].operands()) <= k:
            return None
        opcode, _, operands = self.op(roots[0].operands()[k])
        if opcode != _Op.kAdd:
            return None
        a, b = operands
        step = _constant(b) if _element(a) == k else _constant(a) if _element(b) == k else None
        if step is None or step < 1:
            return None
        return max(-(-(n - start) // step), 0)

    def op(self, inst: Any) -> tuple[Any, str, list[Any]]:
        """(opcode, text, operands) of ``inst`` past its copies; a fusion that wraps one op (XLA's CPU compiler
        wraps a loop's compare and add) as that op, on the fusion's operands."""
        inst = _uncopied(inst)
        operands = [_uncopied(o) for o in inst.operands()]
        if inst.opcode != _Op.kFusion:
            return inst.opcode, inst.to_string(), operands
        inner = [i for i in self.fused(inst) if i.opcode != _Op.kParameter]
        if len(inner) != 1:
            return inst.opcode, inst.to_string(), operands
        numbers = [_parameter_number(p) for p in inner[0].operands()]
        if None in numbers or any(n >= len(operands) for n in numbers):
            return inst.opcode, inst.to_string(), operands
        return inner[0].opcode, inner[0].to_string(), [operands[n] for n in numbers]

    def fused_parsed(self, fusion: Any) -> list[hlo.Instruction]:
        """The instructions of the computation a fusion calls, parsed, only where its root is a custom call (the
        one form ``async_role`` reads the inside of)."""
        inner = self.fused(fusion)
        if not inner or inner[-1].opcode != _Op.kCustomCall:
            return []
        return [hlo.parse_instruction(inner[-1].to_string())]

    def fused(self, fusion: Any) -> list[Any]:
        """The instructions of the computation a fusion calls."""
        name = hlo.parse_instruction(fusion.to_string()).attributes.get("calls", "").lstrip("%")
        return list(self.computations[name].instructions()) if name in self.computations else []

    def collective(self, inst: Any, kind: str, is_async: bool, loops: tuple[int | None, ...]) -> Collective:
        parsed = hlo.parse_instruction(inst.to_string())
        operands = tuple(a for o in inst.operands() for a in hlo.parse_instruction(o.to_string()).arrays)
        results = parsed.arrays
        if inst.opcode in _DONE:  # a start's own shape bundles operands and buffers; its done holds the result
            done = next((u for u in inst.users() if u.opcode == _DONE[inst.opcode]), None)
            results = hlo.parse_instruction(done.to_string()).arrays if done is not None else results[-1:]
        meta, frame = self.located(inst, hlo.metadata(parsed))
        attrs = parsed.attributes
        channel = "channel_id" in attrs
        num = len(self.devices)
        if kind == "collective-permute":
            pairs = hlo.source_target_pairs(attrs.get("source_target_pairs", "{}"))
            if not channel:  # cross-replica pairs with one replica: each device sends to itself
                pairs = [(p, p) for p in range(num)]
            moving = [(s, t) for s, t in pairs if s != t]
            axes = None if self.positions is None else groups_.axes_of_pairs(moving, self.positions, self.names)
            groups = tuple((s, t) for s, t in pairs)
            return self._make(
                kind,
                parsed,
                operands,
                results,
                axes,
                2 if moving else 1,
                groups,
                meta,
                frame,
                is_async,
                loops,
                moves_data=bool(moving),
            )
        global_ids = attrs.get("use_global_device_ids") == "true" if kind in _HAS_GLOBAL_IDS else None
        raw = hlo.replica_groups(attrs.get("replica_groups", "{}"))
        parts = groups_.partition_groups(raw, channel=channel, global_ids=global_ids, num_partitions=num)
        axes = None if self.positions is None else groups_.axes_of(parts, self.positions, self.names, self.sizes)
        return self._make(
            kind, parsed, operands, results, axes, len(parts[0]), tuple(map(tuple, parts)), meta, frame, is_async, loops
        )

    def across_slices(
        self, inst: Any, parsed: hlo.Instruction, transfer: hlo.Megascale, loops: tuple[int | None, ...]
    ) -> Collective:
        """A cross-slice collective of XLA's multi-slice runtime (its ``send``): each device with the devices at its
        position in the other slices the transfer names."""
        by_slice: dict[int, list[int]] = {}
        for p, device in enumerate(self.devices):
            by_slice.setdefault(int(getattr(device, "slice_index", 0) or 0), []).append(p)
        order = sorted(by_slice)
        first = min(transfer.slices, default=0)
        slices = [order[s - first] for s in transfer.slices if 0 <= s - first < len(order)]
        width = min(len(by_slice[s]) for s in slices) if slices else 0
        parts = [[sorted(by_slice[s], key=lambda p: self.devices[p].id)[i] for s in slices] for i in range(width)]
        parts = [g for i, g in enumerate(parts) if i in transfer.devices] or [[p] for p in range(len(self.devices))]
        arrays = parsed.arrays[:1]
        meta, frame = self.located(inst, hlo.metadata(parsed))
        axes = None if self.positions is None else groups_.axes_of(parts, self.positions, self.names, self.sizes)
        groups = tuple(map(tuple, parts))
        return self._make(transfer.kind, parsed, arrays, arrays, axes, len(groups[0]), groups, meta, frame, True, loops)

    def located(self, inst: Any, meta: dict[str, str]) -> tuple[dict[str, str], hlo.Frame | None]:
        """The metadata and source line of a collective: its own; else those of the nearest op downstream of an
        op that reads it (in a fusion, the fused op that reads it, not the root the fusion is named after); else
        those of the op that computes the value it moves.

        XLA's partitioner names a collective it inserts after the op that needs it (jaxlib 0.10) or not at all;
        from jaxlib 0.11 on, often after the value it moves instead (``op_name="a"`` for an argument, no line) or
        the op that computed it. Looking downstream first, then upstream, finds the line 0.10 gives where 0.11
        gives none, and the line 0.11 gives where 0.10 gives none.
        """
        frame = hlo.source(meta, self.frames)
        if frame is not None:
            return meta, frame
        for user in inst.users():
            for reader in (*self.fused_parameters(user, inst), user):
                found = hlo.located([reader], self.frames)
                if found is not None:
                    return found
        for operand in inst.operands():
            computed = hlo.metadata(hlo.parse_instruction(operand.to_string()))
            frame = hlo.source(computed, self.frames)
            if frame is not None:
                return computed, frame
        return meta, None

    def fused_parameters(self, fusion: Any, operand: Any) -> list[Any]:
        """The parameters that stand for ``operand`` in the computation ``fusion`` calls (none if not a fusion)."""
        if fusion.opcode != _Op.kFusion:
            return []
        numbers = {n for n, o in enumerate(fusion.operands()) if o == operand}
        return [i for i in self.fused(fusion) if i.opcode == _Op.kParameter and _parameter_number(i) in numbers]

    def _make(
        self, kind, parsed, operands, results, axes, size, groups, meta, frame, is_async, loops, moves_data=True
    ) -> Collective:
        ids = tuple(tuple(self.devices[p].id for p in g) for g in groups)
        return Collective(
            kind,
            parsed.name,
            operands,
            results,
            axes,
            size,
            ids,
            meta.get("op_name", ""),
            None if frame is None else str(frame),
            is_async,
            loops,
            moves_data,
        )


def _uncopied(inst: Any) -> Any:
    """``inst`` with the copies XLA put in front of it looked through."""
    while inst.opcode == _Op.kCopy and inst.operands():
        inst = inst.operands()[0]
    return inst


def _parameter_number(inst: Any) -> int | None:
    """``k`` where ``inst`` is ``parameter(k)`` of its computation, else None."""
    match = re.search(r"\bparameter\((\d+)\)", inst.to_string())
    return int(match.group(1)) if match else None


def _constant(inst: Any) -> int | None:
    """The value of an integer scalar constant, else None."""
    if inst.opcode != _Op.kConstant:
        return None
    match = re.search(r"\bconstant\((-?\d+)\)", inst.to_string())
    return int(match.group(1)) if match else None


def _element(inst: Any) -> int | None:
    """``k`` where ``inst`` is element ``k`` of its computation's tuple parameter, else None."""
    if inst.opcode != _Op.kGetTupleElement or _uncopied(inst.operands()[0]).opcode != _Op.kParameter:
        return None
    match = re.search(r"\bindex=(\d+)", inst.to_string())
    return int(match.group(1)) if match else None
