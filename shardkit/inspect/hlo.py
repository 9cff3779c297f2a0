"""Reading the pieces of XLA's HLO text that jaxlib's ``HloModule`` API does not expose.

jaxlib gives the partitioned module as structured objects only down to the instruction: computations,
instructions, opcodes, operands, users and the async-wrapped root. An instruction's shape, replica groups,
channel, metadata, called computations and backend config exist only in its text (``HloInstruction.to_string()``:
one line, or several where an attribute's value spans lines, as a Pallas kernel's ``kernel_metadata`` does), and
source locations only in the stack-frame tables at the top of the module's text. (jax.extend.mlir.hlo_to_stablehlo
translates the module to MLIR, but drops the ``device_ids`` of mesh-form replica groups and the while loops' trip
counts, so it cannot be the source.) This module parses exactly those pieces, in the forms XLA prints them, over
XLA's own structure (``computations``); ``tests/test_inspect_hlo.py`` checks it on real dumps.

An instruction line::

    %all-reduce.2 = f32[2,4]{1,0} all-reduce(%dot.2), channel_id=1, replica_groups=[4,2]<=[8],
        use_global_device_ids=true, to_apply=%add.clone, metadata={op_name="jit(f)/dot_general" stack_frame_id=5}
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from shardkit import _jaxlib
from shardkit.dialects import dtypes
from shardkit.inspect.groups import mesh_axis_groups

# Bytes per element of each HLO primitive type (sub-byte types count as packed); a token holds no data.
_ELEMENT_BYTES = {t.hlo: t.bits / 8 for t in dtypes.ELEMENT_TYPES} | {"token": 0}
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_LAYOUT = re.compile(r"[a-z][a-z0-9]*\[[^\]]*\](?:\{([^}]*)\})?")
_SPACE = re.compile(r"S\((\d+)\)")
HOST_MEMORY_SPACE = 5  # XLA's Layout::kHostMemorySpace: an array in the host's memory (offloaded)
_OPEN, _CLOSE = "{[(", "}])"
# What bracket matching and splitting look at: a quoted string whole (escapes included), a bracket or a comma.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[{}\[\](),]')
_OPERAND = re.compile(r"%([^\s,()%]+)")
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([^\s(]+) \(.*\{$")


@dataclasses.dataclass(frozen=True)
class ArrayShape:
    """One array of an HLO shape: ``f32[2,4]`` is ``ArrayShape("f32", (2, 4))``."""

    dtype: str
    dims: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        if self.dtype not in _ELEMENT_BYTES:
            raise ValueError(f"unknown HLO element type '{self.dtype}'")
        return math.ceil(math.prod(self.dims) * _ELEMENT_BYTES[self.dtype])

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.dims))}]"


def minor_to_major(text: str) -> tuple[tuple[int, ...], ...]:
    """Each array's layout in an HLO shape, as its dimensions minor to major: ``f32[2,4]{0,1:T(8,128)}`` ->
    ``((0, 1),)``; ``()`` for an array printed without one."""
    return tuple(
        tuple(int(d) for d in layout.split(":")[0].split(",") if d.strip()) if layout else ()
        for layout in _LAYOUT.findall(text)
    )


def memory_spaces(text: str) -> tuple[int, ...]:
    """Each array's memory space in an HLO shape: its layout's ``S(n)``, 0 (the device's) where none is printed;
    ``HOST_MEMORY_SPACE`` is the host's, where XLA offloads.

        >>> memory_spaces("(bf16[64,8]{1,0:T(8,128)(2,1)S(5)}, f32[2]{0})")
        (5, 0)
    """
    return tuple(int(m.group(1)) if (m := _SPACE.search(layout)) else 0 for layout in _LAYOUT.findall(text))


def parse_shape(text: str) -> tuple[ArrayShape, ...]:
    """The arrays of an HLO shape, tuples flattened in order: ``(f32[2]{0}, s32[])`` -> two arrays.

    Layouts (``{1,0}``, ``{1,0:T(8,128)}``) are ignored; a bounded dynamic dimension ``<=4`` counts as its bound.
    """
    return tuple(
        ArrayShape(dtype, tuple(int(d.lstrip("<=")) for d in dims.split(",") if d))
        for dtype, dims in _ARRAY.findall(text)
    )


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One parsed instruction line: its name, result shape text, opcode, raw ``key=value`` attributes, the names
    of its operands and, for an instruction without operands, the text between its parentheses (a parameter's
    number, a constant's value)."""

    name: str
    shape: str
    opcode: str
    attributes: dict[str, str]
    operands: tuple[str, ...] = ()
    literal: str = ""

    @functools.cached_property
    def arrays(self) -> tuple[ArrayShape, ...]:
        return parse_shape(self.shape)


def _balanced_end(text: str, start: int) -> int:
    """The index just past the bracket group (or quoted string) that opens at ``text[start]``."""
    depth = 0
    for match in _TOKEN.finditer(text, start):
        c = match.group()
        if c[0] == '"':
            if depth == 0:
                return match.end()
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return match.end()
    raise ValueError(f"unbalanced brackets in HLO text: {text[start : start + 80]!r}")


def _split_top_level(text: str) -> list[str]:
    """``a=1, b={x, y}, c="p, q"`` -> ``['a=1', 'b={x, y}', 'c="p, q"']``."""
    parts, depth, start = [], 0, 0
    for match in _TOKEN.finditer(text):
        c = match.group()
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start : match.start()].strip())
            start = match.end()
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def parse_instruction(line: str) -> Instruction:
    """``%name = SHAPE opcode(operands), key=value, ...`` (``ROOT`` allowed) -> Instruction.

    Raises ValueError naming the line when it does not have that form.
    """
    text = line.strip()
    text = text.removeprefix("ROOT ")
    name, eq, rest = text.partition(" = ")
    if not eq or not name.startswith("%"):
        raise ValueError(f"not an HLO instruction line: {line[:120]!r}")
    shape_end = _balanced_end(rest, 0) if rest.startswith("(") else rest.find(" ")
    shape, rest = rest[:shape_end], rest[shape_end:].lstrip()
    paren = rest.find("(")
    if paren <= 0:
        raise ValueError(f"not an HLO instruction line: {line[:120]!r}")
    opcode = rest[:paren]
    end = _balanced_end(rest, paren)
    inside = rest[paren + 1 : end - 1]
    operands = tuple(_OPERAND.findall(inside)) if opcode != "constant" else ()
    literal = "" if operands else inside
    rest = rest[end:]
    attributes = {}
    for part in _split_top_level(rest.lstrip(", ")):
        key, _, value = part.partition("=")
        attributes[key.strip()] = value.strip()
    if "device_ids" in attributes and "replica_groups" in attributes:
        # mesh-form groups print a top-level comma: ``replica_groups=mesh[...], device_ids=(...) {...}``
        attributes["replica_groups"] += ", device_ids=" + attributes.pop("device_ids")
    return Instruction(name[1:], shape, opcode, attributes, operands, literal)


def computations(module: Any) -> dict[str, list[Instruction]]:
    """Each computation of a module, by name (without ``%``), as its parsed instructions in the order XLA runs them
    (a scheduled module's schedule, its root last; elsewhere each instruction after its operands); the entry
    computation's name is ``entry_name``.

    ``module`` is jaxlib's ``HloModule`` (``executable.hlo_modules()[0]``), or HLO text, which XLA's own parser reads
    first. The structure (which computations, which instructions in which order, each one's operands) is XLA's;
    only each instruction's own text (``HloInstruction.to_string()``) is parsed here, and a parse whose name or
    operands differ from XLA's is a ``ValueError`` naming the instruction: a figure read from a partial program
    (a loop body without its matmuls or its root) is never made. (Reading the module's text line by line cannot
    know where an instruction ends: an attribute can span lines, as a Pallas kernel's ``kernel_metadata`` does.)
    """
    if isinstance(module, str):
        module = _jaxlib.hlo_module(module)
    order = _schedule(module)
    out: dict[str, list[Instruction]] = {}
    for computation in module.computations():
        insts = order.get(computation.name) or _operands_first(computation.instructions())
        out[computation.name] = [_checked(inst) for inst in insts]
    return out


def _operands_first(insts: Sequence[Any]) -> list[Any]:
    """``insts`` (a computation's, in jaxlib's order) with each instruction after its operands, otherwise in the same
    order: jaxlib lists the computation an ``async-start`` wraps with its call before the parameter the call reads.
    The order of a computation outside the schedule is its dataflow only."""
    inside = {inst.name: inst for inst in insts}
    placed: dict[str, Any] = {}

    def place(inst: Any) -> None:
        stack = [(inst, False)]
        while stack:
            current, ready = stack.pop()
            if current.name in placed:
                continue
            if ready:
                placed[current.name] = current
                continue
            stack.append((current, True))
            stack += [(inside[o.name], False) for o in reversed(current.operands()) if o.name in inside]

    for inst in insts:
        place(inst)
    return list(placed.values())


def _schedule(module: Any) -> dict[str, list[Any]]:
    """A scheduled module's instruction order per computation (empty for an unscheduled one); the computations its
    schedule does not hold (fused, applied) keep their own order."""
    schedule = module.schedule()
    out = {}
    for computation in [] if schedule is None else module.computations():
        try:
            out[computation.name] = schedule.sequence(computation)
        except IndexError:  # jaxlib's "raw_hash_map<>::at": not a scheduled computation
            continue
    return out


def _checked(inst: Any) -> Instruction:
    """``inst`` (jaxlib's ``HloInstruction``) parsed from its text, checked against its structure."""
    parsed = parse_instruction(inst.to_string())
    operands = tuple(o.name for o in inst.operands())
    if parsed.name != inst.name or (parsed.opcode != "constant" and parsed.operands != operands):
        raise ValueError(
            f"HLO instruction {inst.name} was read as {parsed.name} with operands {list(parsed.operands)}, where XLA's "
            f"module has {list(operands)}: shardkit's reader does not know this form of instruction "
            f"({inst.to_string()[:200]!r})."
        )
    return parsed


def entry_name(module_text: str) -> str:
    """The name of a module's entry computation; ValueError where its text has none."""
    entry = re.search(r"^ENTRY %?([^\s(]+)", module_text, re.MULTILINE)
    if entry is None:
        raise ValueError("the HLO module has no ENTRY computation")
    return entry.group(1)


# -- attribute values -------------------------------------------------------------------------------------


def _int_lists(text: str) -> list[list[int]]:
    """``{{0,1},{2,3}}`` -> ``[[0, 1], [2, 3]]``; ``{}`` -> ``[]``."""
    return [[int(v) for v in group.split(",") if v.strip()] for group in re.findall(r"\{([\d,\s]*)\}", text[1:-1])]


def _iota(reshape: Sequence[int], perm: Sequence[int] | None) -> np.ndarray:
    """XLA's iota tile assignment: ``iota(prod(reshape))`` reshaped, then transposed by ``perm``."""
    ids = np.arange(math.prod(reshape)).reshape(tuple(reshape))
    return ids.transpose(tuple(perm)) if perm is not None else ids


_IOTA_GROUPS = re.compile(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?$")
_MESH_GROUPS = re.compile(r"mesh\[([^\]]*)\](?:,\s*device_ids=\((.*)\))?\s*\{(.*)\}$")
_MESH_AXIS = re.compile(r"'?([^'=,]+)'?=(\d+)")
_MESH_REF = re.compile(r"'?([^':,]+)'?(?::\((\d+)\)(\d+))?")


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def replica_groups(text: str) -> list[list[int]]:
    """The groups of a ``replica_groups=`` value in any of XLA's three forms.

    - explicit: ``{{0,1},{2,3}}`` (``{}`` is one group of everything; returned as ``[]``);
    - iota: ``[2,4]<=[4,2]T(1,0)``: ``iota(8)`` reshaped to ``[4,2]``, transposed, cut into 2 groups of 4
      -> ``[[0,2,4,6],[1,3,5,7]]``;
    - mesh axes: ``mesh['a'=4,'b'=2], device_ids=([2,4]T(1,0)) {'b'}`` or ``{'a':(1)2}``: the mesh's ids
      (iota, an iota tile assignment, or an explicit list) reshaped to the axis sizes, sub-axes split out,
      the grouped axes moved last (in the order given) and the ids cut into groups of their size.
    """
    text = text.strip()
    if text.startswith("{"):
        return _int_lists(text)
    match = _IOTA_GROUPS.match(text)
    if match:
        groups, size, reshape, perm = match.groups()
        ids = _iota(_ints(reshape), _ints(perm) if perm else None)
        return ids.reshape(int(groups), int(size)).tolist()
    match = _MESH_GROUPS.match(text)
    if match:
        return _mesh_groups(*match.groups())
    raise ValueError(f"unrecognised replica_groups form {text!r}")


def _mesh_ids(device_ids: str | None, total: int) -> np.ndarray:
    """A mesh's ids in logical order: iota, an iota tile assignment ``[2,4]T(1,0)``, or an explicit list."""
    if device_ids is None:
        return np.arange(total)
    iota = re.fullmatch(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", device_ids.strip())
    ids = (
        _iota(_ints(iota.group(1)), _ints(iota.group(2)) if iota.group(2) else None)
        if iota
        else np.array(_ints(device_ids.strip("[] ")))
    )
    if ids.size != total:
        raise ValueError(f"mesh device_ids ({device_ids}) do not have {total} entries")
    return ids.reshape(-1)


def _mesh_groups(axes_text: str, device_ids: str | None, grouped_text: str) -> list[list[int]]:
    axes = [(n, int(s)) for n, s in _MESH_AXIS.findall(axes_text)]
    refs = [(n, (int(p), int(s)) if p else None) for n, p, s in _MESH_REF.findall(grouped_text) if n.strip()]
    ids = _mesh_ids(device_ids, math.prod(s for _, s in axes))
    return mesh_axis_groups(ids, axes, refs)


def source_target_pairs(text: str) -> list[tuple[int, int]]:
    """``{{0,1},{1,0}}`` -> ``[(0, 1), (1, 0)]``."""
    return [(a, b) for a, b in _int_lists(text)]


def called_computations(instruction: Instruction) -> list[str]:
    """Names of the computations an instruction runs: loop body and condition, branches, callee, fused body."""
    names = []
    for key in ("condition", "body", "to_apply", "calls", "true_computation", "false_computation"):
        if key in instruction.attributes:
            names.append(instruction.attributes[key].lstrip("%"))
    if "branch_computations" in instruction.attributes:
        names += [n.strip().lstrip("%") for n in instruction.attributes["branch_computations"].strip("{}").split(",")]
    return names


def known_trip_count(instruction: Instruction) -> int | None:
    """The trip count XLA recorded in a while loop's ``backend_config`` (``known_trip_count.n``), if any."""
    config = instruction.attributes.get("backend_config")
    if not config or not config.startswith("{"):
        return None
    try:
        n = json.loads(config).get("known_trip_count", {}).get("n")
    except json.JSONDecodeError:
        return None
    return int(n) if n is not None else None


# XLA's TPU compiler writes an asynchronous collective as fusions (``xla_tpu_enable_async_collective_fusion``):
# a start (its root the custom call ``AsyncCollectiveStart``), fusions of compute that carry it on
# (``continuation_config`` in their backend config) and a done (``AsyncCollectiveDone``), each holding a copy of it.
ASYNC_START, ASYNC_DONE = "AsyncCollectiveStart", "AsyncCollectiveDone"


def async_role(parsed: Instruction, fused: Sequence[Instruction]) -> str | None:
    """``'start'``, ``'done'`` or ``'continuation'`` where a fusion (``parsed``, calling ``fused``) is a part of an
    asynchronous collective as XLA's TPU compiler writes it (``ASYNC_START``); None for any other fusion."""
    root = fused[-1] if fused else None
    if root is not None and root.opcode == "custom-call":
        target = root.attributes.get("custom_call_target", "").strip('"')
        if target in (ASYNC_START, ASYNC_DONE):
            return "start" if target == ASYNC_START else "done"
    if "continuation_config" in parsed.attributes.get("backend_config", ""):
        return "continuation"
    return None


# XLA's TPU compiler runs a collective across slices (over the data-center network) as a host transfer of the
# "megascale" runtime: a ``send``/``recv`` pair (``is_host_transfer=true``) whose frontend attributes name the
# collective (``_xla_megascale_transfer_type="ALL_REDUCE"``), the slices and devices it spans
# (``_xla_megascale_target="{1,2}x{0:255}"``: slices 1 and 2, devices 0 to 255 of each) and the pair
# (``_xla_host_transfer_rendezvous``).
MEGASCALE_KINDS = {
    "ALL_REDUCE": "all-reduce",
    "ALL_GATHER": "all-gather",
    "REDUCE_SCATTER": "reduce-scatter",
    "ALL_TO_ALL": "all-to-all",
}


@dataclasses.dataclass(frozen=True)
class Megascale:
    """A cross-slice transfer's collective (``MEGASCALE_KINDS``), the slices (as written, 1-based) and the devices
    of each slice it spans, and the name of its send/recv pair."""

    kind: str
    slices: tuple[int, ...]
    devices: tuple[int, ...]
    rendezvous: str


def megascale(instruction: Instruction) -> Megascale | None:
    """The cross-slice collective a ``send`` or ``recv`` of XLA's TPU multi-slice runtime carries, None for any
    other instruction."""
    attrs = instruction.attributes.get("frontend_attributes", "")
    kind = re.search(r'_xla_megascale_transfer_type="([A-Z_]+)"', attrs)
    if kind is None or kind.group(1) not in MEGASCALE_KINDS:
        return None
    target = re.search(r'_xla_megascale_target="\{([^}]*)\}x\{([^}]*)\}"', attrs)
    rendezvous = re.search(r'_xla_host_transfer_rendezvous="([^"]*)"', attrs)
    if target is None or rendezvous is None:
        return None
    return Megascale(
        MEGASCALE_KINDS[kind.group(1)], _ranges(target.group(1)), _ranges(target.group(2)), rendezvous.group(1)
    )


def _ranges(text: str) -> tuple[int, ...]:
    """``1,2`` -> (1, 2); ``0:3`` -> (0, 1, 2, 3)."""
    out: list[int] = []
    for part in text.split(","):
        first, _, last = part.strip().partition(":")
        out += range(int(first), int(last or first) + 1)
    return tuple(out)


def metadata(instruction: Instruction) -> dict[str, str]:
    """``metadata={op_name="jit(f)/dot" stack_frame_id=5}`` -> ``{'op_name': 'jit(f)/dot', 'stack_frame_id': '5'}``."""
    text = instruction.attributes.get("metadata", "{}")[1:-1]
    return {k: _unquote(v) if v.startswith('"') else v for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', text)}


def _unquote(text: str) -> str:
    """A quoted HLO string (C escapes) without its quotes."""
    return re.sub(r"\\(.)", r"\1", text.strip()[1:-1])


# -- source locations --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Frame:
    """A source position: the innermost Python frame an instruction came from."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def stack_frames(module_text: str) -> dict[int, Frame]:
    """The innermost source position of each stack frame id in the tables that open a module's text.

    ``StackFrames`` rows point at ``FileLocations`` rows, which point at ``FileNames`` and ``FunctionNames``.
    Only the frame's own location is kept (the op's line in the user's code); its callers are not needed here.
    """
    header = module_text.split("\n\n%", 1)[0].split("\nENTRY ", 1)[0]
    tables: dict[str, dict[int, str]] = {t: {} for t in _TABLES}
    current = None
    for line in header.splitlines():
        line = line.strip()
        if line in tables:
            current = tables[line]
        elif current is not None and line[:1].isdigit():
            key, _, value = line.partition(" ")
            current[int(key)] = value
    files = {k: _unquote(v) for k, v in tables["FileNames"].items()}
    functions = {k: _unquote(v) for k, v in tables["FunctionNames"].items()}

    def fields(value: str) -> dict[str, int]:
        return {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", value)}

    locations = {k: fields(v) for k, v in tables["FileLocations"].items()}
    frames = {}
    for key, value in tables["StackFrames"].items():
        loc = locations.get(fields(value).get("file_location_id", -1))
        if loc is not None:
            frames[key] = Frame(
                files.get(loc.get("file_name_id"), "?"),
                loc.get("line", 0),
                functions.get(loc.get("function_name_id"), "?"),
            )
    return frames


def source(meta: dict[str, str], frames: dict[int, Frame]) -> Frame | None:
    """Where an instruction came from: its stack frame, or the older ``source_file``/``source_line`` fields."""
    if "stack_frame_id" in meta:
        return frames.get(int(meta["stack_frame_id"]))
    if "source_file" in meta:
        return Frame(meta["source_file"], int(meta.get("source_line", 0)), "")
    return None


def located(start: Iterable[Any], frames: dict[int, Frame]) -> tuple[dict[str, str], Frame] | None:
    """(metadata, source line) of the first of the compiled ``HloInstruction``s ``start`` (jaxlib's:
    ``to_string()`` and ``users()``) or of the instructions downstream of them, nearest first, that has a line;
    None where none has.

    XLA's partitioner names the collectives and copies it inserts after the op that needs them (jaxlib 0.10), or,
    from jaxlib 0.11 on, often after the value they move (``op_name="a"`` for an argument, no line): the op the
    data flows into is then the nearest one that says which line of the program asked for it.
    """
    seen: set[Any] = set()
    frontier = list(start)
    while frontier:
        following = []
        for inst in frontier:
            if inst in seen:
                continue
            seen.add(inst)
            meta = metadata(parse_instruction(inst.to_string()))
            frame = source(meta, frames)
            if frame is not None:
                return meta, frame
            following += inst.users()
        frontier = following
    return None
