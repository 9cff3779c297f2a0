"""What one call of a compiled program computes and moves per device, with each loop body counted by its trip count.

XLA's cost analysis (``Compiled.cost_analysis()``: ``flops``, ``transcendentals``, ``bytes accessed``) counts a
while loop's body once whatever its trip count, so a ``lax.scan`` over 12 layers counts as one layer. XLA has
no public per-computation figure to scale by, so ``program_cost`` counts each loop body itself, from the
partitioned HLO, and adds it to XLA's totals ``runs - 1`` more times: ``runs`` is the product of the loop's trip
count and those of the loops around it, the counts the communication report reads (``xla.while_loops``: XLA's
recorded count, else the count of jax's counted loop form). A loop whose trip count is not known (a
``while_loop`` with a data-dependent bound) stays counted once and is marked.

A body's count re-states the rules of XLA's ``HloCostAnalysis`` on the HLO text, per instruction:

- flops: ``2 M N K`` for a dot (result elements times the contracted size), XLA's count of valid (output,
  kernel) position pairs for a convolution (TPU writes most matmuls as convolutions), one per element for
  elementwise ops, compares, selects and converts, none for transcendental ones (``exp``, ``tanh``, ...: counted
  as ``transcendentals``); reductions apply their reducer per reduced element; fusions, calls and async
  wrappers count what they run, a conditional its most expensive branch;
- bytes: operands plus results of each unfused instruction; a fusion reads each parameter once (only the
  slice a ``slice``/``dynamic-slice`` takes) and writes its results (only the update of an in-place
  ``dynamic-update-slice``); parameters, tuples, ``get-tuple-element``, bitcasts and constants move nothing.

What stays approximate: these are the rules of XLA's base analysis, on the arrays' logical sizes; XLA's TPU analysis
counts bytes by rules of its own (on whole programs counted once, flops agree with it to 0.1%, bytes differ by up
to 64%: ``docs/performance_model.md``), so a TPU loop body's bytes are the base rules'. A sort counts ``n log n``,
a custom call only its operands and results, and a loop's condition runs as often as its body (once less than it
does). The part outside loops is XLA's own figure, unchanged; ``tests/test_inspect_cost.py`` checks scans against
the same programs unrolled.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from shardkit.inspect import hlo, locations, schedule as schedule_, xla
from shardkit.inspect.units import aligned, describe_loops, human_bytes

# The keys of XLA's cost analysis that loop bodies scale; every other key is XLA's alone (``ProgramCost.xla``).
KEYS = ("flops", "transcendentals", "bytes accessed")
# How far below XLA's own count of a program's flops shardkit's may be (``ProgramCost.problem``): on the programs
# the tests compile and keep, shardkit's is within 0.1% of XLA's on CPU and on the GPT-2 and MaxText splash TPU steps,
# and 2.5% below it on the kept 16B and 128B decoder steps for TPU (``tests/test_inspect_cost.py``).
AGREEMENT = 0.05


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# XLA's ``HandleElementwiseOp``: one transcendental per element for these, one flop per element for the rest.
_TRANSCENDENTAL = _names(
    "erf exponential exponential-minus-one log log-plus-one logistic power sqrt cbrt rsqrt tanh sine cosine tan atan2"
)
_ELEMENTWISE = _TRANSCENDENTAL | _names(
    "abs add and ceil clamp compare complex convert count-leading-zeros divide floor imag is-finite maximum minimum "
    "multiply negate not or popcnt real reduce-precision remainder round-nearest-afz round-nearest-even select "
    "shift-left shift-right-arithmetic shift-right-logical sign stochastic-convert subtract xor"
)
# Instructions that move no data of their own: names for values held elsewhere, loop bodies counted apart.
_FREE = _names(
    "parameter constant get-tuple-element tuple bitcast after-all add-dependency opt-barrier partition-id replica-id "
    "domain while"
)
_SLICES = frozenset({"slice", "dynamic-slice", "gather"})  # read only what they produce


@dataclasses.dataclass(frozen=True)
class LoopCost:
    """One while loop of a program: its body's own cost and how often it runs.

    Attributes:
        name: the ``while`` instruction.
        op_name: the jax op it came from (``jit(step)/while``).
        source: ``file:line`` of the Python line it came from, when known.
        loops: its trip count, last, after those of the loops around it (outermost first); None where unknown.
        flops, transcendentals, bytes_accessed: one run of its body and condition, per device; the bodies of
            loops inside it are theirs.
    """

    name: str
    op_name: str
    source: str | None
    loops: tuple[int | None, ...]
    flops: float
    transcendentals: float
    bytes_accessed: float

    @property
    def known(self) -> bool:
        """Whether every trip count it runs by is known (if not, it counts as if the unknown ones were 1)."""
        return None not in self.loops

    @property
    def runs(self) -> int:
        """Times its body runs per call of the program (unknown trip counts count once)."""
        return math.prod(t for t in self.loops if t is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "op_name": self.op_name,
            "source": self.source,
            "loops": list(self.loops),
            "runs": self.runs,
            "known": self.known,
            "flops": self.flops,
            "transcendentals": self.transcendentals,
            "bytes_accessed": self.bytes_accessed,
        }


@dataclasses.dataclass(frozen=True)
class ProgramCost(Mapping[str, float]):
    """XLA's cost analysis of a partitioned program with every loop body counted by its trip count.

    A mapping of ``KEYS`` (``cost["flops"]``, as XLA's own analysis is read), so the time model and anything
    else that reads XLA's figures takes it in their place.

    Attributes:
        flops, transcendentals, bytes_accessed: per device per call: XLA's figure plus ``(runs - 1)`` times
            each loop body's own (module docstring).
        xla: XLA's cost analysis as XLA reports it (each loop body once), every key.
        loops: each while loop the program runs, in program order.
        schedule: XLA's schedule of the program, op by op, for the time model (``schedule.read``).
        counted: shardkit's own count of the program's flops with each loop body once, what XLA's ``flops`` counts:
            ``problem`` compares the two.
        kernel_flops: the matmul work of the program's Pallas kernels (``tpu_custom_call``s) per call, each loop's by
            its trips: their author's cost estimates, else counted from their Mosaic bodies (``schedule.Op``).
            XLA's rules and shardkit's count a custom call's bytes only, so ``flops`` leaves them out; the time
            model adds them (``StepTime.flops``).

    Examples:
        >>> def f(ws, x):
        ...     return jax.lax.scan(lambda x, w: (x @ w, None), x, ws)[0]
        >>> ws, x = jnp.ones((4, 32, 32)), jnp.ones((8, 32))
        >>> cost = sk.jit(f).lower(ws, x).compile().cost()
        >>> [(loop.loops, loop.flops) for loop in cost.loops]  # one 8x32 @ 32x32 matmul, and the counter
        [((4,), 16386.0)]
        >>> cost["flops"] == cost.xla["flops"] + 3 * 16386
        True
    """

    flops: float
    transcendentals: float
    bytes_accessed: float
    xla: Mapping[str, float] = dataclasses.field(repr=False)
    loops: tuple[LoopCost, ...] = ()
    schedule: tuple[schedule_.Op, ...] = dataclasses.field(default=(), repr=False)
    counted: float | None = None

    @property
    def kernel_flops(self) -> float:
        return _kernel_flops(self.schedule)

    @property
    def problem(self) -> str | None:
        """Why no figure may be made from this cost: shardkit's count of the program (each loop body once) is more
        than ``AGREEMENT`` below XLA's own count of the same program, so a part of it was not read, and the loop
        bodies it scales are short. None where the two agree (or XLA counts nothing)."""
        xla_flops = float(self.xla.get("flops", 0.0))
        if self.counted is None or not xla_flops or self.counted >= xla_flops * (1 - AGREEMENT):
            return None
        return (
            f"shardkit counts {self.counted:.4g} flops in the program (each loop body once), "
            f"{1 - self.counted / xla_flops:.0%} fewer than XLA's own count of it ({xla_flops:.4g}): a part of the "
            "program was not read, so no time is made from it"
        )

    def __getitem__(self, key: str) -> float:
        if key not in KEYS:
            raise KeyError(key)
        return getattr(self, key.replace(" ", "_"))

    def __iter__(self) -> Iterator[str]:
        return iter(KEYS)

    def __len__(self) -> int:
        return len(KEYS)

    @property
    def unknown(self) -> tuple[LoopCost, ...]:
        """The loops whose trip count is not known, counted once."""
        return tuple(loop for loop in self.loops if not loop.known)

    def to_dict(self) -> dict[str, Any]:
        return {
            **dict(self),
            "xla": {k: self.xla[k] for k in KEYS if k in self.xla},
            "loops": [loop.to_dict() for loop in self.loops],
            "counted": self.counted,
            "kernel_flops": self.kernel_flops,
            "problem": self.problem,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        def figures(values: Sequence[float]) -> str:
            return ", ".join(f"{k} {v:.4g}" for k, v in zip(KEYS, values))

        lines = [f"per device per call: {figures(list(self.values()))}"]
        if self.problem is not None:
            lines.append(f"refused for the time model: {self.problem}")
        if self.loops:
            lines[0] += f"; counting {describe_loops(self.loops)}"
            lines.append(f"XLA's own figures (each loop body once): {figures([self.xla.get(k, 0.0) for k in KEYS])}")
            rows = [
                [
                    loop.name,
                    "x".join("?" if t is None else str(t) for t in loop.loops),
                    f"{loop.flops:.4g}",
                    human_bytes(int(loop.bytes_accessed)),
                    loop.op_name,
                    locations.short(loop.source),
                ]
                for loop in self.loops
            ]
            lines += aligned(["loop", "runs", "flops/run", "bytes/run", "op", "source"], rows)
        return "\n".join(lines) + "\n"


def program_cost(module: Any, xla_cost: Mapping[str, float]) -> ProgramCost:
    """``xla_cost`` (XLA's cost analysis of the partitioned ``HloModule`` ``module``) with each loop body counted by
    its trip count (module docstring)."""
    text = module.to_string()
    counter = _Counter(hlo.computations(module))
    frames = hlo.stack_frames(text)
    loops = []
    found = xla.while_loops(module, text)
    for loop in found:
        inst = loop.instruction
        meta = hlo.metadata(inst)
        frame = hlo.source(meta, frames)
        body, condition = (counter.computation(inst.attributes.get(k, "").lstrip("%")) for k in ("body", "condition"))
        flops, transcendentals, accessed = (b + c for b, c in zip(body, condition))
        source = None if frame is None else str(frame)
        loops.append(LoopCost(inst.name, meta.get("op_name", ""), source, loop.loops, flops, transcendentals, accessed))
    totals = [float(xla_cost.get(k, 0.0)) for k in KEYS]
    for loop in loops:
        for i, own in enumerate((loop.flops, loop.transcendentals, loop.bytes_accessed)):
            totals[i] += (loop.runs - 1) * own
    trips = {loop.instruction.name: loop.loops[-1] for loop in found}
    counted = counter.computation(hlo.entry_name(text))[0] + sum(loop.flops for loop in loops)
    return ProgramCost(
        *totals,
        xla=dict(xla_cost),
        loops=tuple(loops),
        schedule=schedule_.read(text, counter, trips),
        counted=counted,
    )


def _kernel_flops(ops: Sequence[schedule_.Op]) -> float:
    """The kernels' matmul flops of scheduled ops, a loop's body by its trips."""
    return sum(
        op.matmul if op.kind == "kernel" else op.trips * _kernel_flops(op.body) if op.kind == "loop" else 0.0
        for op in ops
    )


Cost = tuple[float, float, float]  # flops, transcendentals, bytes accessed


class _Counter:
    """XLA's ``HloCostAnalysis`` rules (module docstring) over a module's computations, each counted once."""

    def __init__(self, computations: dict[str, list[hlo.Instruction]]):
        self.computations = computations
        self.tables = {name: {i.name: i for i in insts} for name, insts in computations.items()}
        self.memo: dict[tuple[str, bool], Cost] = {}

    def computation(self, name: str, fused: bool = False) -> Cost:
        """One run of computation ``name``: every instruction's cost (in a fusion, flops only: its bytes are the
        fusion's)."""
        key = (name, fused)
        if key not in self.memo:
            table = self.tables.get(name, {})
            total = [0.0, 0.0, 0.0]
            for inst in self.computations.get(name, ()):
                for i, v in enumerate(self.instruction(inst, table, fused)):
                    total[i] += v
            self.memo[key] = (total[0], total[1], total[2])
        return self.memo[key]

    def called(self, inst: hlo.Instruction, key: str, fused: bool = False) -> Cost:
        return self.computation(inst.attributes.get(key, "").lstrip("%"), fused)

    def instruction(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction], fused: bool) -> Cost:
        op = inst.opcode
        elements = _elements(inst)
        flops = transcendentals = 0.0
        if op in _ELEMENTWISE:
            if op in _TRANSCENDENTAL:
                transcendentals = elements
            else:
                flops = elements
        elif op == "dot":
            lhs = _arrays(table, inst.operands[0])[0].dims
            flops = 2.0 * elements * math.prod(lhs[d] for d in _dims(inst.attributes.get("lhs_contracting_dims")))
        elif op == "convolution":
            flops = _convolution_flops(inst, table)
        elif op == "fusion":
            inner = self.called(inst, "calls", fused=True)
            return inner[0], inner[1], 0.0 if fused else self.fusion_bytes(inst, table)
        elif op in ("call", "async-start"):
            return self.called(inst, "to_apply" if op == "call" else "calls", fused)
        elif op == "conditional":
            names = hlo.called_computations(inst)
            branches = [self.computation(n, fused) for n in names] or [(0.0, 0.0, 0.0)]
            return tuple(max(b[i] for b in branches) for i in range(3))  # type: ignore[return-value]
        elif op in ("reduce", "reduce-window", "map", "scatter"):
            applied = self.called(inst, "to_apply", fused=True)
            flops, transcendentals = (_applications(inst, table, elements) * v for v in applied[:2])
        elif op in ("all-reduce", "all-reduce-start", "reduce-scatter"):
            flops = elements
        elif op == "sort":
            n = math.prod(_arrays(table, inst.operands[0])[0].dims) if inst.operands else 0
            flops = n * math.ceil(math.log2(n)) if n > 1 else 0.0
        return flops, transcendentals, 0.0 if fused else _bytes(inst, table)

    def fusion_bytes(self, inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> float:
        """A fusion's bytes: what it reads of each operand (XLA's ``FusionParameterReadBytes``) and writes (of
        an in-place ``dynamic-update-slice`` root, or tuple element, only the update)."""
        name = inst.attributes.get("calls", "").lstrip("%")
        body, inner = self.computations.get(name, []), self.tables.get(name, {})
        read = sum(self.parameter_read(name, p) for p in body if p.opcode == "parameter")
        root = body[-1] if body else None
        if root is not None and root.opcode == "tuple" and len(root.operands) == len(inst.arrays):
            pieces = list(zip([inner.get(o) for o in root.operands], inst.arrays))
        else:
            pieces = [(root, a) for a in inst.arrays[:1]] if len(inst.arrays) == 1 else [(None, a) for a in inst.arrays]
        written = sum(
            _nbytes(inner, r.operands[1]) if r is not None and r.opcode == "dynamic-update-slice" else a.nbytes
            for r, a in pieces
        )
        return read + written

    def parameter_read(self, computation: str, parameter: hlo.Instruction) -> float:
        """Bytes a fused computation reads of one parameter: once for all the users that can share the read,
        only the slice for a slicing user, the update's size for the buffer an in-place update writes into."""
        full = sum(a.nbytes for a in parameter.arrays)
        size, shared = 0.0, False
        for user in self.computations.get(computation, ()):
            if parameter.name not in user.operands:
                continue
            op = user.opcode
            if op == "fusion":
                nested = user.attributes.get("calls", "").lstrip("%")
                number = {p.literal.strip(): p for p in self.computations.get(nested, ()) if p.opcode == "parameter"}
                for k, operand in enumerate(user.operands):
                    if operand == parameter.name and str(k) in number:
                        size += self.parameter_read(nested, number[str(k)])
            elif op in _SLICES and user.operands[0] == parameter.name:
                size += sum(a.nbytes for a in user.arrays)
            elif op == "dynamic-update-slice" and user.operands[0] == parameter.name:
                size += _nbytes(self.tables[computation], user.operands[1])
            elif op in ("broadcast", "reshape"):
                size += full
            elif not shared:
                shared = True
                size += full
        return size


def _bytes(inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> float:
    """Bytes an unfused instruction reads and writes."""
    op = inst.opcode
    if op in _FREE or op.endswith("-done"):
        return 0.0
    indices = sum(_nbytes(table, o) for o in inst.operands[1:])
    if op in _SLICES:
        return 2.0 * sum(a.nbytes for a in inst.arrays) + indices
    if op == "dynamic-update-slice":
        return 2.0 * _nbytes(table, inst.operands[1]) + sum(_nbytes(table, o) for o in inst.operands[2:])
    written = inst.arrays[-1:] if op.endswith("-start") else inst.arrays  # a start's tuple repeats its operands
    return sum(_nbytes(table, o) for o in inst.operands) + sum(a.nbytes for a in written)


def _arrays(table: dict[str, hlo.Instruction], name: str) -> tuple[hlo.ArrayShape, ...]:
    inst = table.get(name)
    return () if inst is None else inst.arrays


def _nbytes(table: dict[str, hlo.Instruction], name: str) -> int:
    return sum(a.nbytes for a in _arrays(table, name))


def _elements(inst: hlo.Instruction) -> float:
    arrays = inst.arrays
    return float(math.prod(arrays[0].dims)) if arrays else 0.0


def _dims(text: str | None) -> list[int]:
    """``{0,2}`` -> ``[0, 2]``."""
    return [int(v) for v in (text or "{}").strip("{}").split(",") if v.strip()]


def _applications(inst: hlo.Instruction, table: dict[str, hlo.Instruction], elements: float) -> float:
    """Times a reduction-like op applies its computation (XLA: reduced elements, window size - 1 per output,
    one per element of a map or per update of a scatter)."""
    op = inst.opcode
    if op == "reduce":
        return math.prod(_arrays(table, inst.operands[0])[0].dims) - elements
    if op == "reduce-window":
        sizes = _window(inst.attributes.get("window", ""))["size"]
        return (math.prod(sizes) - 1) * elements
    if op == "scatter":
        updates = _arrays(table, inst.operands[-1])
        return float(math.prod(updates[0].dims)) if updates else 0.0
    return elements


def _window(text: str) -> dict[str, list[Any]]:
    """``{size=16 stride=15 lhs_dilate=16 pad=0_0}`` -> each field per spatial dimension (XLA's defaults filled)."""
    fields = dict(part.split("=", 1) for part in text.strip("{}").split() if "=" in part)
    n = len(fields.get("size", "").split("x")) if fields.get("size") else 0

    def ints(key: str, default: int) -> list[int]:
        return [int(v) for v in fields[key].split("x")] if key in fields else [default] * n

    pads = [tuple(int(v) for v in p.split("_")) for p in fields["pad"].split("x")] if "pad" in fields else [(0, 0)] * n
    return {
        "size": ints("size", 1),
        "stride": ints("stride", 1),
        "pad": pads,
        "lhs_dilate": ints("lhs_dilate", 1),
        "rhs_dilate": ints("rhs_dilate", 1),
    }


def _convolution_flops(inst: hlo.Instruction, table: dict[str, hlo.Instruction]) -> float:
    """XLA's ``GetConvolutionFlops``: 2 x input features per group x output features x batch per group x, per
    spatial dimension, the (output, kernel) position pairs that land on an input element."""
    lhs_labels, rest = inst.attributes["dim_labels"].split("_", 1)
    rhs_labels, out_labels = rest.split("->")
    lhs, rhs = _arrays(table, inst.operands[0])[0].dims, _arrays(table, inst.operands[1])[0].dims
    out = inst.arrays[0].dims
    window = _window(inst.attributes.get("window", ""))
    groups = int(inst.attributes.get("feature_group_count", 1))
    batch_groups = int(inst.attributes.get("batch_group_count", 1))
    pairs = 1
    for d in range(len(window["size"])):
        label = str(d)
        n_in, n_kernel, n_out = lhs[lhs_labels.index(label)], rhs[rhs_labels.index(label)], out[out_labels.index(label)]
        stride, (low, _), base, dilation = (
            window["stride"][d],
            window["pad"][d],
            window["lhs_dilate"][d],
            window["rhs_dilate"][d],
        )
        undilated = np.arange(n_out)[:, None] * stride - low + np.arange(n_kernel)[None, :] * dilation
        pairs *= int(np.count_nonzero((undilated % base == 0) & (undilated >= 0) & (undilated // base < n_in)))
    features = lhs[lhs_labels.index("f")] // groups
    outputs = out[out_labels.index("f")]
    batch = lhs[lhs_labels.index("b")] // batch_groups
    return 2.0 * features * outputs * batch * pairs
