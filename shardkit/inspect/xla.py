"""The communication report of a compiled program, read from the partitioned HLO module XLA will run.

The module's structure comes from jaxlib's ``HloModule`` API (computations, instructions, opcodes, operands,
users, async-wrapped roots); the per-instruction details from ``shardkit.inspect.hlo``. The walk starts at
the entry computation and follows every called computation (loop bodies and conditions, calls, branches,
async wrappers, fusions), so a collective is reported once per place the program runs it, with the trip
counts of the loops around it.
"""

from __future__ import annotations

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
    entry = re.search(r"^ENTRY %?([^\s(]+)", text, re.MULTILINE)
    if entry is None:
        raise ValueError(f"HLO module {module.name} has no ENTRY computation")
    reader = _Reader(module, hlo.stack_frames(text), devices, mesh)
    reader.walk(entry.group(1), ())
    axes = None if mesh is None else tuple((str(n), int(s)) for n, s in mesh.shape_tuple)
    ids = () if mesh is None else tuple(d.id for d in mesh.devices.flat)
    program = None if source is None else (source, mesh, devices)
    return CommunicationReport("xla", axes, len(devices), tuple(reader.found), ids, program)


class _Reader:
    def __init__(self, module: Any, frames: dict[int, hlo.Frame], devices: Sequence[Any], mesh: Any):
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
                self.found.append(self.collective(inst, *_COLLECTIVES[op], loops))
            elif op == _Op.kAsyncStart and inst.async_wrapped_root().opcode in _COLLECTIVES:
                root = inst.async_wrapped_root()
                self.found.append(self.collective(root, _COLLECTIVES[root.opcode][0], True, loops))
            elif op in _CALLERS:
                parsed = hlo.parse_instruction(inst.to_string())
                inner = loops + (hlo.known_trip_count(parsed),) if op == _Op.kWhile else loops
                for callee in hlo.called_computations(parsed):
                    if callee in self.computations:
                        self.walk(callee, inner)

    def collective(self, inst: Any, kind: str, is_async: bool, loops: tuple[int | None, ...]) -> Collective:
        parsed = hlo.parse_instruction(inst.to_string())
        operands = tuple(a for o in inst.operands() for a in hlo.parse_instruction(o.to_string()).arrays)
        results = parsed.arrays
        if inst.opcode in _DONE:  # a start's own shape bundles operands and buffers; its done holds the result
            done = next((u for u in inst.users() if u.opcode == _DONE[inst.opcode]), None)
            results = hlo.parse_instruction(done.to_string()).arrays if done is not None else results[-1:]
        meta = hlo.metadata(parsed)
        frame = hlo.source(meta, self.frames)
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
