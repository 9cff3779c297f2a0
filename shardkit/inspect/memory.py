"""The memory report: what one device holds for a compiled program, against what the target device has.

Totals are XLA's own (``CompiledMemoryStats`` of the compiled executable): arguments, outputs, the part of
the outputs that reuses donated arguments (aliased), temporaries, the program's code, what XLA keeps in the host's
memory (``host``: arrays a remat policy or a ``device_put`` offloads), and the peak where the backend reports one
that is the device's (TPU does). Not taken as one: XLA's CPU backend's "peak", which leaves the temporaries out, and
XLA's peak of a program that offloads, which counts the host's memory as the device's (measured on TPU v5e
targets, jax 0.10 to 0.12: it is the arguments and outputs plus the host's bytes, above everything the device
holds at once). There, and where no peak is reported, the report prints ``total``, arguments + outputs - aliased +
temporaries + code, everything on the device live at once, an upper bound, labelled as such. A TPU compiler places
every buffer in the device's memory at compile time and refuses a program that does not fit, so a program
compiled for a TPU fits even where that upper bound is above the chip's memory (the report says which).

The largest buffers are read from the partitioned HLO XLA compiled: every array an instruction of the entry
computation, or of a loop, branch or call it runs, materializes (the insides of fusions are not buffers), with
its per-device shape, the jax op and the Python line. When XLA refuses the program for want of memory
(TPU compilers check at compile time), there is no compiled program to read: the report then says XLA's
message, and its largest buffers are the values of Shardy's propagated plan, per device
(``from_plan``), which is what the partitioner will materialize at most.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from shardkit import _jaxlib
from shardkit.inspect import hlo, notebook
from shardkit.inspect.communication import aligned
from shardkit.inspect.table import ShardingTable
from shardkit.inspect.units import human_bytes

_Op = _jaxlib.hlo_opcodes()
_RUNS = {_Op.kWhile, _Op.kCall, _Op.kConditional}  # computations whose instructions allocate their own buffers
_NO_BUFFER = {_Op.kTuple, _Op.kGetTupleElement, _Op.kBitcast, _Op.kParameter, _Op.kConstant}
LARGEST = 10


@dataclasses.dataclass(frozen=True)
class Buffer:
    """One array a device holds: its per-device shape, what it is, and where it came from.

    Attributes:
        name: the HLO instruction (or, in a plan, the op and result number).
        shape: per-device dtype and dims.
        kind: ``argument``, ``output``, ``temporary`` or ``host`` (any of those, in the host's memory: offloaded);
            in a plan ``argument`` or ``value``.
        op_name, source: the jax op and ``file:line`` it came from, when known.
    """

    name: str
    shape: hlo.ArrayShape
    kind: str
    op_name: str = ""
    source: str | None = None

    @property
    def bytes(self) -> int:
        return self.shape.nbytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": str(self.shape),
            "bytes": self.bytes,
            "kind": self.kind,
            "op_name": self.op_name,
            "source": self.source,
        }


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    """Bytes per device of a compiled program (print it, ``to_json()``).

    Attributes:
        target: what it was compiled for (``tpu-v5e:16x16``, ``cpu:256``), None for this process's devices.
        num_devices: partitions.
        arguments, outputs, aliased, temporaries, code: XLA's sizes per device, in bytes.
        peak: XLA's peak per device where the backend reports one that is the device's, else None.
        capacity: the device's memory (a target's HBM per chip), None where unknown.
        largest: the largest buffers, largest first.
        error: XLA's message when it refused to compile the program for want of memory, else None.
        host: bytes XLA keeps in the host's memory (offloaded arguments, outputs and temporaries), not the device's.
        placed: whether XLA placed every buffer in the device's memory at compile time (TPU), so that the program
            fits whatever the upper bound says.
    """

    target: str | None
    num_devices: int
    arguments: int
    outputs: int
    aliased: int
    temporaries: int
    code: int
    peak: int | None
    capacity: int | None
    largest: tuple[Buffer, ...]
    error: str | None = None
    host: int = 0
    placed: bool = False

    @property
    def total(self) -> int:
        """The device's peak, or where XLA gives none, everything on the device live at once (module
        docstring)."""
        if self.peak:
            return self.peak
        return self.arguments + self.outputs - self.aliased + self.temporaries + self.code

    @property
    def fits(self) -> bool | None:
        """Whether the program fits the device (None where the capacity is unknown)."""
        if self.error is not None:
            return False
        return None if self.capacity is None else self.within(self.capacity)

    def within(self, limit: int) -> bool:
        """Whether the program fits ``limit`` bytes per device: its peak or upper bound is within it, or XLA placed
        it in the device's memory (``placed``) and the limit is no less than that memory."""
        if self.error is not None:
            return False
        return self.total <= limit or (self.placed and self.capacity is not None and limit >= self.capacity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "num_devices": self.num_devices,
            **{k: getattr(self, k) for k in ("arguments", "outputs", "aliased", "temporaries", "code", "host", "peak")},
            "total": self.total,
            "capacity": self.capacity,
            "fits": self.fits,
            "error": self.error,
            "largest": [b.to_dict() for b in self.largest],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    _repr_html_ = notebook.text

    def __str__(self) -> str:
        where = self.target or "this process's devices"
        lines = [f"Memory per device of the program compiled for {where} ({self.num_devices} devices)"]
        if self.error is not None:
            lines.append(f"  DOES NOT FIT: XLA refused it: {self.error}")
        else:
            rows = [
                ["arguments", human_bytes(self.arguments)],
                [
                    "outputs",
                    human_bytes(self.outputs) + (f" ({human_bytes(self.aliased)} aliased)" if self.aliased else ""),
                ],
                ["temporaries", human_bytes(self.temporaries)],
                ["code", human_bytes(self.code)],
                *([["host (offloaded)", f"{human_bytes(self.host)}, in the host's memory"]] if self.host else []),
                ["peak" if self.peak else "total (upper bound)", human_bytes(self.total)],
            ]
            if self.capacity is not None:
                share = f"{100 * self.total / self.capacity:.1f}%"
                if self.total > self.capacity and self.fits:  # an upper bound above what XLA placed
                    used = f"the upper bound is {share} of it; XLA placed every buffer in it: fits"
                else:
                    used = f"{share} used: {'fits' if self.fits else 'DOES NOT FIT'}"
                rows.append(["capacity", f"{human_bytes(self.capacity)} ({used})"])
            lines += aligned(["", "bytes"], rows)[1:]
        if self.largest:
            source = "Shardy's plan, per device" if self.error is not None else "XLA's program"
            lines.append(f"largest buffers ({source}):")
            rows = [[b.kind, str(b.shape), human_bytes(b.bytes), b.op_name, b.source or ""] for b in self.largest]
            lines += aligned(["kind", "shape", "bytes", "op", "source"], rows, "    ")
        return "\n".join(lines) + "\n"


def report(
    executable: Any,
    *,
    target: str | None,
    num_devices: int,
    capacity: int | None,
    top: int = LARGEST,
    platform: str = "tpu",
) -> MemoryReport:
    """The memory report of a compiled executable (loaded or compile-only) for devices of ``platform``."""
    stats = executable.get_compiled_memory_stats()
    module = executable.hlo_modules()[0]
    host = _host(stats)
    return MemoryReport(
        target=target,
        num_devices=num_devices,
        arguments=stats.argument_size_in_bytes,
        outputs=stats.output_size_in_bytes,
        aliased=stats.alias_size_in_bytes,
        temporaries=stats.temp_size_in_bytes,
        code=stats.generated_code_size_in_bytes,
        peak=_peak(stats, platform, host),
        capacity=capacity,
        largest=_largest(buffers(module), top),
        host=host,
        placed=platform == "tpu",
    )


def _host(stats: Any) -> int:
    """Bytes XLA keeps in the host's memory: its host arguments and outputs (less those aliased) and temporaries."""
    sizes = [getattr(stats, f"host_{k}_size_in_bytes", 0) for k in ("argument", "output", "alias", "temp")]
    return sizes[0] + sizes[1] - sizes[2] + sizes[3]


def _peak(stats: Any, platform: str, host: int) -> int | None:
    """XLA's peak, where it is the device's. XLA's CPU backend reports the arguments and outputs alone (no
    temporaries), which is no peak of a program that has temporaries, and sometimes a few bytes more than those (a
    MaxText step: 585.7 KiB beside 7.6 MiB of temporaries): a CPU program's is never taken, nor that of a program
    that keeps ``host`` bytes in the host's memory (module docstring); elsewhere a peak no larger than what the
    arguments and outputs hold is not taken either."""
    if platform == "cpu" or host:
        return None
    peak = getattr(stats, "peak_memory_in_bytes", 0)
    held = stats.argument_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes
    return peak if peak and (peak > held or not stats.temp_size_in_bytes) else None


def buffers(module: Any) -> list[Buffer]:
    """Every array the partitioned ``HloModule`` materializes per device (module docstring)."""
    text = module.to_string()
    frames = hlo.stack_frames(text)
    computations = {c.name: c for c in module.computations()}
    entry = re.search(r"^ENTRY %?([^\s(]+)", text, re.MULTILINE)
    if entry is None:
        raise ValueError(f"HLO module {module.name} has no ENTRY computation")
    outputs = _entry_outputs(text[entry.start() :])
    found: list[Buffer] = []

    def walk(name: str, is_entry: bool) -> None:
        for inst in computations[name].instructions():
            op = inst.opcode
            argument = is_entry and op == _Op.kParameter
            if op in _NO_BUFFER and not argument:
                continue
            parsed = hlo.parse_instruction(inst.to_string())
            if op in _RUNS:
                for callee in hlo.called_computations(parsed):
                    if callee in computations:
                        walk(callee, False)
            if argument:
                kind = "argument"
            else:
                kind = "output" if is_entry and inst.name in outputs else "temporary"
            meta = hlo.metadata(parsed)
            frame = hlo.source(meta, frames)
            if frame is None and not argument:  # XLA's own copies and collectives: the line that asked for them
                meta, frame = hlo.located(inst.users(), frames) or (meta, None)
            for shape, space in zip(parsed.arrays, hlo.memory_spaces(parsed.shape)):
                where = "host" if space == hlo.HOST_MEMORY_SPACE else kind
                found.append(Buffer(parsed.name, shape, where, meta.get("op_name", ""), _str(frame)))

    walk(entry.group(1), True)
    return found


def _entry_outputs(entry: str) -> set[str]:
    """The instructions whose arrays the entry computation returns: its ROOT, or the elements of its ROOT tuple
    (jaxlib's HloComputation does not name its root)."""
    root = re.search(r"^\s*ROOT %(\S+) = .*?\b(tuple)?\(([^)]*)\)", entry, re.MULTILINE)
    if root is None:
        return set()
    if root.group(2):
        return {o.strip().lstrip("%") for o in root.group(3).split(",")}
    return {root.group(1)}


def from_plan(
    table: ShardingTable, *, target: str | None, num_devices: int, capacity: int | None, error: str, top: int = LARGEST
) -> MemoryReport:
    """The report of a program XLA refused for want of memory: XLA's message, and the largest per-device values
    of Shardy's propagated plan (``table``: ``Lowered.run_passes("propagate").shardings()``)."""
    found = []
    for row in table.rows:
        kind = "argument" if row.op == "@main" else "value"
        found.append(Buffer(f"{row.op}#{row.index}", row.array, kind, row.op_name, row.source))
    return MemoryReport(target, num_devices, 0, 0, 0, 0, 0, None, capacity, _largest(found, top), error=error)


def _largest(found: Iterable[Buffer], top: int) -> tuple[Buffer, ...]:
    """The ``top`` largest, a row once: XLA's in-place updates of one buffer (a loop's stacked activations, written
    layer by layer) read as the same array again from the same line."""
    rows = {(b.kind, b.shape, b.op_name, b.source): b for b in sorted(found, key=lambda b: b.bytes)}
    return tuple(sorted(rows.values(), key=lambda b: -b.bytes)[:top])


def _str(frame: hlo.Frame | None) -> str | None:
    return None if frame is None else str(frame)


class OutOfMemoryError(ValueError):
    """XLA refused to compile a program for a target because it does not fit the device's memory; ``report`` is
    the memory report (XLA's message and the largest per-device values, with their lines), also the message."""

    def __init__(self, report: MemoryReport):
        super().__init__(str(report))
        self.report = report


def is_out_of_memory(error: Exception) -> bool:
    """XLA's compile-time refusal for want of device memory (TPU: ``RESOURCE_EXHAUSTED: Ran out of memory``)."""
    return str(error).startswith("RESOURCE_EXHAUSTED") and "memory" in str(error).lower()


def summary(error: Exception) -> str:
    """XLA's out-of-memory message without its status code prefix, on one line: from libtpu 0.0.48 (jax 0.11) the
    message also carries XLA's error code and name (``E1000: CompileTimeHbmOom: Ran out of memory ...``), which
    are dropped so that the message reads the same whichever libtpu wrote it.

        >>> summary(RuntimeError("RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM"))
        'Ran out of memory on HBM'
    """
    message = str(error).split(": ", 1)[-1]
    return re.sub(r"\s+", " ", re.sub(r"^E\d+: \w+: ", "", message)).strip()
