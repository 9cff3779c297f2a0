"""XLA's schedule of a compiled program, read for the time model: the order its instructions run in, what each one
computes and moves, and which collective each one starts, waits for or runs.

A compiled program is scheduled (``HloModule ... is_scheduled=true``): each computation lists its instructions in
the order the device runs them. ``read`` turns that order into ``Op``s, hardware-free; ``timing.estimate`` prices
them on a profile (``docs/performance_model.md``, *The step*). Per instruction:

- **compute**: the matmul work (``convolution`` and ``dot``, alone or in a fusion), padded to the MXU's tiles, and
  the bytes it reads and writes (``cost._Counter``'s rules: XLA's ``HloCostAnalysis``); for a change of layout (a
  ``copy`` or ``transpose``, alone or the root of a fusion, whose result's dimension order in memory differs from
  its operand's: a transpose in memory) also XLA's TPU compiler's own estimate of its cycles (``estimated_cycles`` in
  its backend config), which the time model takes where it exceeds the bytes' time;
- **kernel**: a Pallas TPU kernel (``tpu_custom_call``): its matmul flops are the cost estimate its author attached
  (``pl.CostEstimate``), else those of the ``tpu.matmul`` ops of its Mosaic body times its grid
  (``iteration_bounds``), branches all counted (a causal kernel's skipped blocks too, as jax's flash attention
  estimates its own forward); its bytes the estimate's, else its operands' and results'. A kernel whose body cannot
  be read is timed by its bytes alone (``Op.estimated`` False). Other custom calls move their operands and results;
- **start** / **done**: the two ends of an asynchronous collective: ``*-start``/``*-done`` pairs, ``async-start``
  /``async-done`` around a collective, and the fusions XLA's TPU compiler writes (``hlo.async_role``: a start, the
  fusions of compute that carry the collective on, a done); compute scheduled between the two runs while it moves;
- **collective**: a synchronous collective, which the device waits for; a collective across slices is a host
  transfer (``hlo.megascale``): its ``send`` starts it, its ``recv-done`` waits for it;
- **loop**: a ``while`` loop's body (and condition), with its trip count.

Free: parameters, constants, tuples and their elements, bitcasts, ids, and the asynchronous copies between memory
spaces (``copy-start``/``copy-done``, ``slice-start``/``slice-done``), which XLA's TPU compiler overlaps with compute.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from shardkit import _jaxlib
from shardkit.inspect import hlo

COLLECTIVES = frozenset({"all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute"})
_FREE = frozenset(
    {
        *("parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "add-dependency"),
        *("opt-barrier", "partition-id", "replica-id", "domain", "copy-start", "copy-done", "slice-start"),
        "slice-done",
    }
)
MXU_SIDE, MXU_ROWS = 128, 8  # [SB-TPU]: one MXU pass is bf16[8,128] @ bf16[128,128] (v6e's 256 side not modelled)
_MATMULS = frozenset({"convolution", "dot"})


@dataclasses.dataclass(frozen=True)
class Op:
    """One scheduled instruction (module docstring).

    Attributes:
        name: the instruction.
        kind: ``'compute'``, ``'kernel'``, ``'start'``, ``'done'``, ``'collective'`` or ``'loop'``.
        matmul: flops of its matrix work, padded to the MXU's ``8 x 128`` tiles (``MXU_ROWS``, ``MXU_SIDE``); a
            kernel's estimated flops.
        bytes: bytes it reads and writes in memory.
        collective: the collective it starts, waits for or runs (``Collective.name`` of the communication report).
        key: what pairs a start with its done.
        body: a loop's scheduled body and condition.
        trips: a loop's trip count (an unknown one counts once).
        estimated: False for a kernel without a cost estimate (priced by its bytes only).
        cycles: for a change of layout, the core cycles XLA's TPU compiler estimates it takes (0: none).
    """

    name: str
    kind: Literal["compute", "kernel", "start", "done", "collective", "loop"]
    matmul: float = 0.0
    bytes: float = 0.0
    collective: str = ""
    key: str = ""
    body: tuple[Op, ...] = ()
    trips: int = 1
    estimated: bool = True
    cycles: float = 0.0


def read(text: str, counter: Any, trips: Mapping[str, int | None]) -> tuple[Op, ...]:
    """The entry computation of the module ``text`` as ``Op``s, in schedule order. ``counter`` is
    ``cost._Counter`` over the module's computations (bytes and flops by XLA's rules); ``trips`` maps each while
    instruction to its trip count (None: unknown)."""
    return _Reader(counter, trips).computation(hlo.entry_name(text))


class _Reader:
    def __init__(self, counter: Any, trips: Mapping[str, int | None]):
        self.counter = counter
        self.computations: dict[str, list[hlo.Instruction]] = counter.computations
        self.trips = trips
        self.memo: dict[str, tuple[Op, ...]] = {}

    def computation(self, name: str) -> tuple[Op, ...]:
        if name not in self.memo:
            table = self.counter.tables.get(name, {})
            ops: list[Op] = []
            for inst in self.computations.get(name, ()):
                ops += self.instruction(inst, table)
            self.memo[name] = tuple(ops)
        return self.memo[name]

    def instruction(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> list[Op]:
        op = inst.opcode
        if op in _FREE:
            return []
        if op == "while":
            body = self.computation(inst.attributes["body"].lstrip("%"))
            body += self.computation(inst.attributes["condition"].lstrip("%"))
            return [Op(inst.name, "loop", body=body, trips=self.trips.get(inst.name) or 1)]
        if op == "call":
            return list(self.computation(inst.attributes["to_apply"].lstrip("%")))
        if op == "conditional":  # the most expensive branch, as cost.py counts it
            branches = [self.computation(n) for n in hlo.called_computations(inst)]
            return list(max(branches, key=lambda b: sum(o.matmul + o.bytes for o in b), default=()))
        if op in COLLECTIVES:
            return [Op(inst.name, "collective", collective=inst.name)]
        if op.endswith("-start") and op[: -len("-start")] in COLLECTIVES:
            return [Op(inst.name, "start", collective=inst.name, key=inst.name)]
        if op.endswith("-done") and op[: -len("-done")] in COLLECTIVES:
            return [Op(inst.name, "done", key=inst.operands[0] if inst.operands else "")]
        if op in ("async-start", "async-done"):
            return self.wrapped(inst, table)
        if op in ("send", "recv", "send-done", "recv-done"):
            return self.transfer(inst, table)
        if op == "fusion":
            return self.fusion(inst, table)
        if op == "custom-call":
            return [self.kernel(inst, table)]
        flops, _, nbytes = self.counter.instruction(inst, table, False)
        return [
            Op(inst.name, "compute", matmul=self.mxu(inst, table, flops), bytes=nbytes, cycles=_relayout(inst, table))
        ]

    def wrapped(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> list[Op]:
        """``async-start``/``async-done`` around a collective (another wrapped op runs as its own compute)."""
        name = inst.attributes.get("calls", "").lstrip("%")
        inner = [i for i in self.computations.get(name, ()) if i.opcode in COLLECTIVES]
        if inst.opcode == "async-start":
            if inner:
                return [Op(inst.name, "start", collective=inner[-1].name, key=inst.name)]
            return list(self.computation(name))
        if inner or self._started(inst, table):
            return [Op(inst.name, "done", key=inst.operands[0] if inst.operands else "")]
        return []

    def transfer(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> list[Op]:
        """A cross-slice collective (``hlo.megascale``): its ``send`` starts it, the ``recv-done`` of its pair waits
        for it; other host transfers and the other halves take no device time."""
        if inst.opcode in ("send", "recv-done"):
            carrier = inst if inst.opcode == "send" else table.get(inst.operands[0]) if inst.operands else None
            transfer = hlo.megascale(carrier) if carrier is not None else None
            if transfer is not None:
                if inst.opcode == "send":
                    return [Op(inst.name, "start", collective=inst.name, key=transfer.rendezvous)]
                return [Op(inst.name, "done", key=transfer.rendezvous)]
        return []

    def _started(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> bool:
        start = table.get(inst.operands[0]) if inst.operands else None
        if start is None:
            return False
        name = start.attributes.get("calls", "").lstrip("%")
        return any(i.opcode in COLLECTIVES for i in self.computations.get(name, ()))

    def fusion(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> list[Op]:
        name = inst.attributes.get("calls", "").lstrip("%")
        fused = self.computations.get(name, [])
        role = hlo.async_role(inst, fused[-1:])
        inner = [i for i in fused if i.opcode in COLLECTIVES]
        if role in ("start", "done"):
            key = _chain(inner[0]) if inner else inst.name
            if role == "start":
                return [Op(inst.name, "start", collective=inner[0].name if inner else "", key=key)]
            return [Op(inst.name, "done", key=key)]
        flops, _, nbytes = self.counter.instruction(inst, table, False)
        matmul = sum(self.mxu(i, self.counter.tables.get(name, {})) for i in fused if i.opcode in _MATMULS)
        if role == "continuation":  # the collective's buffers are carried along, not read or written by the compute
            nbytes = self.continuation_bytes(name, fused, inner)
        root = fused[-1] if fused else None
        cycles = _relayout(inst, table, root, self.counter.tables.get(name, {}))
        ops = [Op(inst.name, "compute", matmul=matmul, bytes=nbytes, cycles=cycles)]
        if role is None:  # a collective fused into a computation of its own runs where the fusion runs
            ops += [Op(i.name, "collective", collective=i.name) for i in inner]
        return ops

    def continuation_bytes(
        self, name: str, fused: Sequence[hlo.Instruction], inner: Sequence[hlo.Instruction]
    ) -> float:
        """What a fusion carrying a collective on reads and writes for its own compute: its parameters and results
        less the collective's (the parameters the collective or the root use as they are, the root's elements
        that are parameters or the collective)."""
        table = self.counter.tables.get(name, {})
        root = fused[-1] if fused else None
        carried = {o for c in inner for o in c.operands} | {c.name for c in inner}
        if root is not None and root.opcode == "tuple":
            carried |= {o for o in root.operands if table.get(o) is not None and table[o].opcode == "parameter"}
            written = [table[o] for o in root.operands if o not in carried and o in table]
        else:
            written = [root] if root is not None and root.name not in carried else []
        read = sum(
            self.counter.parameter_read(name, p) for p in fused if p.opcode == "parameter" and p.name not in carried
        )
        return read + sum(a.nbytes for w in written for a in w.arrays)

    def kernel(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> Op:
        """A custom call: a Pallas TPU kernel's matmul work and bytes (module docstring); another call's bytes."""
        config = _custom_call_config(inst.attributes.get("backend_config", ""))
        operands = sum(a.nbytes for o in inst.operands if o in table for a in table[o].arrays)
        moved = operands + sum(a.nbytes for a in inst.arrays)
        if inst.attributes.get("custom_call_target", "").strip('"') != "tpu_custom_call":
            return Op(inst.name, "compute", bytes=moved)
        estimate = config.get("cost_estimate") or {}
        flops = float(estimate["flops"]) if "flops" in estimate else kernel_flops(config.get("body", ""))
        nbytes = float(estimate.get("bytes_accessed", 0)) or moved
        return Op(inst.name, "kernel", matmul=flops or 0.0, bytes=nbytes, estimated=flops is not None)

    def mxu(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction], flops: float | None = None) -> float:
        """The flops a matmul instruction occupies the MXU for: its own (``counter``'s), times the padding of its
        rows to 8 and of its contracted size and output features to the MXU's side (the book: one ``bf16[8,128] @
        bf16[128,128]`` per pass); 0 for anything else."""
        if inst.opcode not in _MATMULS or not inst.arrays:
            return 0.0
        if flops is None:
            flops = self.counter.instruction(inst, table, True)[0]
        out = math.prod(inst.arrays[0].dims)
        if not flops or not out:
            return 0.0
        rows, features = _rows_features(inst, table)
        contracted = flops / (2 * out)  # per output element, as XLA counts it (a convolution's valid window pairs)
        return flops * _pad(rows, MXU_ROWS) * _pad(round(contracted), MXU_SIDE) * _pad(features, MXU_SIDE)


def _relayout(
    inst: hlo.Instruction,
    table: dict[str, hlo.Instruction],
    root: hlo.Instruction | None = None,
    inner: dict[str, hlo.Instruction] | None = None,
) -> float:
    """XLA's estimated cycles of ``inst`` where it changes a layout: a ``copy``/``transpose`` (for a fusion, its
    ``root``) whose result's dimensions lie in memory in another order than its operand's; 0 otherwise."""
    op, where = (inst, table) if root is None else (root, inner or {})
    if op.opcode not in ("copy", "transpose") or not op.operands or op.operands[0] not in where:
        return 0.0
    if op.opcode == "copy" and hlo.minor_to_major(op.shape) == hlo.minor_to_major(where[op.operands[0]].shape):
        return 0.0
    found = re.search(r'"estimated_cycles":"(\d+)"', inst.attributes.get("backend_config", ""))
    return float(found.group(1)) if found else 0.0


def _pad(n: int, tile: int) -> float:
    """How much longer ``n`` elements take on tiles of ``tile``: ``ceil(n / tile) * tile / n``."""
    return math.ceil(n / tile) * tile / n if n > 0 else 1.0


def _rows_features(inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> tuple[int, int]:
    """(rows, output features) of one matmul: a dot's non-contracted, non-batch left and right elements; a
    convolution's output elements per output feature and its output features (dimension label ``o``)."""
    operands = [table.get(o) for o in inst.operands[:2]]
    if any(o is None or not o.arrays for o in operands):
        return 1, 1
    lhs, rhs = operands[0].arrays[0].dims, operands[1].arrays[0].dims
    if inst.opcode == "dot":

        def free(side: str, dims: Sequence[int]) -> int:  # elements of the side's non-contracted, non-batch dims
            bound = {
                *_dims(inst.attributes.get(f"{side}_contracting_dims")),
                *_dims(inst.attributes.get(f"{side}_batch_dims")),
            }
            return math.prod(n for d, n in enumerate(dims) if d not in bound)

        return free("lhs", lhs), free("rhs", rhs)
    labels = inst.attributes.get("dim_labels", "")
    rhs_labels = labels.split("_", 1)[1].split("->")[0] if "_" in labels and "->" in labels else ""
    if "o" not in rhs_labels:
        return 1, 1
    features = rhs[rhs_labels.index("o")]
    return math.prod(inst.arrays[0].dims) // max(features, 1), features


def _dims(text: str | None) -> list[int]:
    return [int(v) for v in (text or "{}").strip("{}").split(",") if v.strip()]


def _chain(collective: hlo.Instruction) -> str:
    """What names one asynchronous collective across its start, continuation and done fusions: the channel and
    the ``chain_id`` XLA's TPU compiler gives each copy of it."""
    chain = re.search(r'chain_id="([^"]*)"', collective.attributes.get("frontend_attributes", ""))
    return f"{collective.attributes.get('channel_id', '')}/{chain.group(1) if chain else collective.name}"


def _custom_call_config(config: str) -> dict[str, Any]:
    """The ``custom_call_config`` of a custom call's backend config (a Pallas TPU kernel's body and estimate)."""
    if "custom_call_config" not in config or not config.startswith("{"):
        return {}
    try:
        return json.loads(config).get("custom_call_config") or {}
    except json.JSONDecodeError:
        return {}


@functools.lru_cache(maxsize=256)
def kernel_flops(body: str) -> float | None:
    """The matmul flops of one call of a Mosaic kernel whose serialized module is ``body`` (base64 MLIR bytecode):
    ``2 m n k`` per ``tpu.matmul`` of its kernel function (branches included) times its grid's size; None where
    the body cannot be read."""
    if not body:
        return None
    try:
        with _context():
            from jaxlib.mlir import ir

            module = ir.Module.parse(base64.b64decode(body))
            kernels = [op.operation for op in module.body.operations if "iteration_bounds" in op.operation.attributes]
            if not kernels:
                return None
            kernel = kernels[0]
            grid = math.prod(ir.DenseI64ArrayAttr(kernel.attributes["iteration_bounds"]))
            return grid * _matmuls(kernel)
    except Exception:  # a body in a form this jaxlib does not read: the kernel is timed by its bytes
        return None


@functools.cache
def _context() -> Any:
    return _jaxlib.mosaic_context()


def _matmuls(op: Any) -> float:
    """``2 m n k`` summed over the ``tpu.matmul`` ops under ``op``: ``m x n`` the result, ``m x k`` the left side."""
    from jaxlib.mlir import ir

    total = 0.0
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = inner.operation
                if inner.name.endswith("tpu.matmul") and inner.results:
                    out = ir.ShapedType(inner.results[0].type).shape
                    lhs = ir.ShapedType(inner.operands[0].type).shape
                    rows, cols = math.prod(out[:-1]), out[-1]
                    total += 2.0 * rows * cols * (math.prod(lhs) // max(rows, 1))
                total += _matmuls(inner)
    return total
