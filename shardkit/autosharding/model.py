"""The fast estimate: what one candidate costs per step and per device, without compiling it.

A candidate (a program, a mesh and a layout of its free arguments) is written into a copy of the module, and
Shardy plans it as XLA's partitioner will: propagation, ``sdy-insert-explicit-reshards`` and
``sdy-reshard-to-collectives`` (the passes of ``Lowered.communication()``, about 60 ms on the GPT step). One walk
over the planned module then reads, per device:

- **communication**: each collective Shardy inserted (``inspect.shardy.read``), run as many times as the
  ``stablehlo.while`` loops around it iterate (a loop's trip count is read from its condition: a counter that
  starts at a constant and is compared ``<`` a constant, as jax's ``scan`` and ``fori_loop`` write it);
- **compute**: 2 x result x contracted elements for each ``dot_general``, one operation per element for the
  rest, times the loops' trip counts;
- **memory traffic**: the bytes the ops that XLA does not fuse into their neighbours read and write
  (contractions, reductions, gathers, scatters, slices and updates of loop state, collectives), plus the
  arguments read and the results written once (elementwise chains fuse: their traffic is their ends');
- **footprint**: the largest total of values alive at once, in program order (a value lives from its op to its
  last use, a donated argument until its last use, every other argument and each result to the end; a loop's
  or a call's own temporaries on top of what is alive around it).

``price`` then times the collectives on the target's links for a physical order of the mesh's axes (a Shardy
plan names axes, not devices, so one plan is priced on every order of its mesh): each collective's slowest group
on the torus, as ``inspect.timing`` models it. The step estimate is ``max(compute, memory) + communication``:
every collective counts as exposed, as XLA's TPU programs run most of theirs synchronously (the compiled
programs of the GPT step, measured: all but one of 27 collectives synchronous).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir

from shardkit.autosharding.program import Program, element_type
from shardkit.autosharding.space import Layout, MeshShape, Spec
from shardkit.dialects import irx
from shardkit.inspect import groups as groups_, locations, shardy, timing
from shardkit.inspect.communication import Collective
from shardkit.inspect.hardware import Hardware, Topology
from shardkit.passes import PassManager

PLAN = "propagate,sdy-insert-explicit-reshards{enable-full-version=true},sdy-reshard-to-collectives"

# ops whose operands and results XLA materializes in memory (elementwise ops fuse into these or into each other)
_MATERIALIZED = frozenset(
    {
        "stablehlo.dot_general",
        "stablehlo.convolution",
        "stablehlo.reduce",
        "stablehlo.reduce_window",
        "stablehlo.select_and_scatter",
        "stablehlo.gather",
        "stablehlo.scatter",
        "stablehlo.dynamic_slice",
        "stablehlo.dynamic_update_slice",
        "stablehlo.sort",
        "stablehlo.fft",
        "stablehlo.custom_call",
        "stablehlo.concatenate",
        "stablehlo.transpose",
        *irx.SDY_COLLECTIVES,
        *irx.STABLEHLO_COLLECTIVES,
    }
)
# ops that are not elementwise work XLA fuses with its neighbours: results of functions, loops and calls, and the
# data movement and collectives of Shardy's plan
_NOT_ELEMENTWISE = frozenset(
    {
        "func.return",
        "func.call",
        "stablehlo.return",
        "stablehlo.while",
        "stablehlo.optimization_barrier",
        "sdy.return",
        "sdy.sharding_constraint",
        "sdy.reshard",
        "stablehlo.reshape",
        "stablehlo.iota",
        "stablehlo.constant",
    }
)
_IN_PLACE = frozenset({"stablehlo.dynamic_update_slice", "stablehlo.scatter", "stablehlo.while"})
_EFFECTS = frozenset(
    {
        "stablehlo.custom_call",
        "stablehlo.rng",
        "stablehlo.rng_bit_generator",
        "stablehlo.infeed",
        "stablehlo.outfeed",
        "stablehlo.send",
        "stablehlo.recv",
        "stablehlo.optimization_barrier",
        *irx.SDY_COLLECTIVES,
        *irx.STABLEHLO_COLLECTIVES,
    }
)
_NO_FLOPS = frozenset(
    {
        "stablehlo.constant",
        "stablehlo.broadcast_in_dim",
        "stablehlo.reshape",
        "stablehlo.transpose",
        "stablehlo.slice",
        "stablehlo.dynamic_slice",
        "stablehlo.dynamic_update_slice",
        "stablehlo.concatenate",
        "stablehlo.iota",
        "stablehlo.convert",
        "stablehlo.bitcast_convert",
        "stablehlo.gather",
        "stablehlo.return",
        "func.return",
        "func.call",
        "stablehlo.while",
        "stablehlo.optimization_barrier",
        "sdy.sharding_constraint",
        "sdy.reshard",
        *irx.SDY_COLLECTIVES,
    }
)


@dataclasses.dataclass(frozen=True)
class Reading:
    """What Shardy's plan of one candidate says, per device, before it is timed on any device order.

    Attributes:
        collectives: the plan's collectives, each with the trip count of the loops around it as its ``loops``.
        grouped: per collective, the (sub-)axes its groups vary over (``(name, (pre, size) or None)``).
        sites: per collective, the loop it runs in (0: none; XLA combines the collectives of one kind over the
            same axes in one loop body, so they pay one latency) and whether it gathers only what contractions
            read (a TPU compiler gathers such an f32 operand in bf16, the precision the contraction reads).
        flops, bytes_accessed: per step (module docstring).
        peak: the largest total of live values, bytes.
        arguments: bytes of the arguments one device holds.
        in_specs, out_specs: per argument and result of ``@main``, the sharding Shardy gave it (per dimension
            the mesh axes; None where a sub-axis or an inlined mesh cannot be written as axes).
    """

    collectives: tuple[Collective, ...]
    grouped: tuple[tuple[tuple[str, tuple[int, int] | None], ...], ...]
    sites: tuple[tuple[int, bool], ...]
    flops: float
    bytes_accessed: float
    peak: int
    arguments: int
    in_specs: tuple[Spec | None, ...]
    out_specs: tuple[Spec | None, ...]


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A candidate's modelled step on one device order of its mesh.

    Attributes:
        mesh: the mesh, in the order its axes are laid onto the target.
        step: ``max(compute, memory) + communication`` seconds.
        compute, memory, communication: seconds per step.
        by_collective: per collective of the reading, its seconds per step (every run).
        peak: bytes per device at the largest moment (estimate).
        wire_bytes: bytes one device sends per step.
    """

    mesh: MeshShape
    step: float
    compute: float
    memory: float
    communication: float
    by_collective: tuple[float, ...]
    peak: int
    wire_bytes: int


class Machine:
    """The target a search prices candidates on: its devices, its hardware profile, where its chips sit, and the
    memory a device may use (``capacity``: the limit, None for none)."""

    def __init__(self, target: Any, hardware: Hardware, capacity: int | None):
        self.target = target
        self.hardware = hardware
        self.capacity = capacity
        self.devices = len(target.devices)
        self._tpu = target.platform == "tpu"
        self._topology = Topology.from_devices(target.devices, hardware) if self._tpu else None
        self.torus_shape: tuple[int, ...] = self._topology.shape if self._topology is not None else ()
        # slices joined by the data-center network (a multi-slice TPU target), 1 otherwise
        self.slices = len(set(self._topology.slices.values())) if self._topology is not None else 1

    def __repr__(self) -> str:
        return f"Machine({self.target.name}, {self.hardware.name})"

    @functools.cache  # noqa: B019  (a machine lives as long as its search)
    def grid(self, mesh: MeshShape) -> np.ndarray:
        """The device ids of ``mesh``'s positions (shape: its sizes), laid out as the target lays a mesh out."""
        from shardkit.mesh import AbstractMesh

        if self._tpu:
            placed = self.target.mesh(AbstractMesh(mesh.sizes, mesh.names))
            return np.vectorize(lambda d: d.id, otypes=[np.int64])(placed.devices)
        return np.array([d.id for d in self.target.devices], dtype=np.int64).reshape(mesh.sizes)

    @functools.cache  # noqa: B019
    def topology(self, mesh: MeshShape) -> Topology:
        if self._topology is not None:
            return self._topology
        ids = self.grid(mesh).reshape(-1).tolist()
        if self.hardware.kind == "gpu":
            return Topology.default(ids, self.hardware)
        sizes = [s for s in mesh.sizes if s > 1] or [1]
        if len(sizes) > self.hardware.torus_rank:  # more axes than the torus has dimensions: fold the minor ones
            sizes = [*sizes[: self.hardware.torus_rank - 1], math.prod(sizes[self.hardware.torus_rank - 1 :])]
        return Topology.default(ids, self.hardware, sizes)

    @property
    def tpu(self) -> bool:
        return self._tpu

    @functools.cache  # noqa: B019
    def spans(self, mesh: MeshShape, grouped: tuple) -> int:
        """How many torus dimensions one group of a collective over ``grouped`` axes of ``mesh`` spans."""
        if not self._tpu or not grouped or grouped[0] in ("groups", "pairs"):
            return 0
        ids = self.grid(mesh).reshape(-1)
        group = groups_.mesh_axis_groups(ids, mesh.axes, list(grouped))[0]
        coords = [self._topology.coords[int(d)] for d in group]
        return sum(len({c[i] for c in coords}) > 1 for i in range(len(coords[0])))

    @functools.cache  # noqa: B019
    def line(self, mesh: MeshShape, kind: str, grouped: tuple) -> tuple[float, float]:
        """(latency, seconds per wire byte) of one run of a collective of ``kind`` over ``grouped`` axes of
        ``mesh``: the time model's line between two probes on a sample of the groups (they are translates)."""
        if not grouped:
            return 0.0, 0.0
        return self._line(mesh, kind, grouped)

    def _line(self, mesh: MeshShape, kind: str, grouped: tuple) -> tuple[float, float]:
        ids = self.grid(mesh).reshape(-1)
        if grouped[0] in ("groups", "pairs"):  # a collective the program itself holds names partition ids
            groups = [[int(ids[p]) for p in g] for g in grouped[1]]
            if grouped[0] == "pairs":
                c = Collective(kind, "probe", (_flat(1 << 20),), (_flat(1 << 20),), None, 2, tuple(map(tuple, groups)))
                t = timing.collective_time(c, self.hardware, self.topology(mesh)).seconds
                return 0.0, t / c.wire_bytes
        else:
            groups = groups_.mesh_axis_groups(ids, mesh.axes, list(grouped))
        size = len(groups[0])
        step = max(1, len(groups) // 8)
        sample = tuple(tuple(g) for g in groups[::step])
        if kind in ("collective-permute", "all-slice"):
            kind = "all-to-all"  # a permute between Shardy's tiles: priced as the exchange over its axes
        probe = []
        for nbytes in (1 << 20, 1 << 26):
            # an all-gather's wire bytes are (n-1)/n of its result; the others' are of the operand
            per = nbytes * size // max(size - 1, 1) if kind in ("all-gather", "reduce-scatter", "all-to-all") else 0
            if kind == "all-reduce":
                per = nbytes * size // max(2 * (size - 1), 1)
            shape = _flat(per)
            c = Collective(kind, "probe", (shape,), (shape,), None, size, sample)
            probe.append((c.wire_bytes, timing.collective_time(c, self.hardware, self.topology(mesh)).seconds))
        (w0, t0), (w1, t1) = probe
        slope = (t1 - t0) / (w1 - w0) if w1 != w0 else 0.0
        return t0 - slope * w0, slope


def _flat(nbytes: int) -> Any:
    from shardkit.inspect.hlo import ArrayShape

    return ArrayShape("u8", (max(nbytes, 1),))


@functools.lru_cache(maxsize=8)
def _pass_manager() -> PassManager:
    from shardkit.dialects import context

    return PassManager(PLAN, context=context())


def plan(program: Program, mesh: MeshShape, layout: Layout) -> ir.Module:
    """The candidate's module after Shardy's plan (propagation, explicit reshards, collectives)."""
    module = program.instance(mesh, layout)
    _pass_manager().run(module)
    return module


def read(planned: ir.Module, program: Program) -> Reading:
    """The per-device reading of a planned module (module docstring)."""
    walker = _Walker(planned)
    main = ir.SymbolTable(planned.operation)["main"]
    flops, accessed, peak = walker.function(main, donated=program.donated)
    arguments = sum(walker.nbytes(a) for a in main.regions[0].blocks[0].arguments)
    in_specs = tuple(
        _spec(a.get(irx.SDY_SHARDING), t) for a, t in zip(irx.value_attrs(main, "arg"), irx.value_types(main, "arg"))
    )
    out_specs = tuple(
        _spec(a.get(irx.SDY_SHARDING), t) for a, t in zip(irx.value_attrs(main, "res"), irx.value_types(main, "res"))
    )
    collectives = tuple(c for c, _, _ in walker.found)
    grouped = tuple(g for _, g, _ in walker.found)
    sites = tuple(site for _, _, site in walker.found)
    return Reading(collectives, grouped, sites, flops, accessed, peak, arguments, in_specs, out_specs)


def price(reading: Reading, mesh: MeshShape, machine: Machine) -> Estimate:
    """The reading timed on ``mesh``'s order of axes laid onto ``machine`` (module docstring)."""
    hw = machine.hardware
    times, wire, combined = [], 0, set()
    for c, g, (loop, dots) in zip(reading.collectives, reading.grouped, reading.sites):
        kind, nbytes = c.kind, c.wire_bytes
        if machine.tpu and dots and c.results and c.results[0].dtype == "f32":
            nbytes //= 2  # gathered in bf16, what the contraction reads at its default precision
        if machine.tpu and kind == "all-gather" and machine.spans(mesh, g) > 1:
            kind, nbytes = "all-reduce", 2 * nbytes  # XLA's TPU compiler runs such a gather as an all-reduce
        latency, per_byte = machine.line(mesh, kind, g)
        key = (loop, kind, g)
        seconds = per_byte * nbytes + (0.0 if key in combined or not nbytes else latency)
        if nbytes:
            combined.add(key)
        times.append(seconds * c.executions)
        wire += nbytes * c.executions
    times = tuple(times)
    compute, memory = reading.flops / hw.flops, reading.bytes_accessed / hw.hbm_bandwidth
    communication = sum(times)
    return Estimate(
        mesh, max(compute, memory) + communication, compute, memory, communication, times, reading.peak, wire
    )


def evaluate(program: Program, mesh: MeshShape, layout: Layout) -> Reading:
    return read(plan(program, mesh, layout), program)


# -- reading the planned module --------------------------------------------------------------------------------

_VALUE = re.compile(r"<@?(\"[^\"]*\"|[\w$.]+|mesh<[^>]*>), \[((?:\{[^{}]*\}p?\d*(?:, )?)*)\]")
_DIMS = re.compile(r"\{([^{}]*)\}")


def _spec(attr: ir.Attribute | None, type_: ir.Type) -> Spec | None:
    """A function argument's or result's sharding as axes per dimension (replicated when it has none)."""
    if attr is None:
        return tuple(() for _ in range(irx.rank(type_)))
    found = _VALUE.search(str(attr))
    if found is None:
        return None
    spec = []
    for dim in _DIMS.findall(found.group(2)):
        refs = irx.axis_refs(dim)
        if any(sub is not None for _, sub in refs):
            return None
        spec.append(tuple(name for name, _ in refs))
    return tuple(spec)


class _Walker:
    """One pass over a planned module: local sizes of values, trip counts of loops, the collectives and how often
    they run, flops, traffic and footprint (module docstring)."""

    def __init__(self, module: ir.Module):
        self.symbols = ir.SymbolTable(module.operation)
        self.axes = {n: s for m in irx.meshes(module).values() for n, s in m.axes}
        self.partitions = irx.module_int(module, irx.NUM_PARTITIONS) or 1
        self._parsed: dict[str, list[tuple[int, ...]]] = {}
        self._local: dict[Any, tuple[int, float]] = {}  # value -> (elements, bytes) one device holds
        self._texts: dict[Any, Any] = {}
        self._constants: dict[Any, bool] = {}
        self._functions: dict[str, tuple[float, float, int, list]] = {}
        self._mult = 1
        self._loop = 0  # the loop being walked (its number in walk order), 0 outside loops
        self._loops = 0
        self.found: list[tuple[Collective, tuple, tuple[int, bool]]] = []  # (collective, its axes or groups, site)

    # sizes

    def _divisors(self, text: str) -> list[tuple[int, ...]]:
        found = self._parsed.get(text)
        if found is None:
            found = []
            for _, dims in _VALUE.findall(text):
                per_dim = []
                for dim in _DIMS.findall(dims):
                    parts = 1
                    for name, sub in irx.axis_refs(dim):
                        parts *= sub[1] if sub is not None else self.axes.get(name, 1)
                    per_dim.append(parts)
                found.append(tuple(per_dim))
            self._parsed[text] = found
        return found

    def _op_text(self, op: ir.Operation) -> str | None:
        """The text of the sharding attribute an op gives its results (per value, or one for all)."""
        found = self._texts.get(op, False)
        if found is False:
            attrs = op.attributes
            found = None
            for key in ("out_sharding", "sharding", irx.SDY_SHARDING):
                if key in attrs:
                    found = str(attrs[key])
                    break
            self._texts[op] = found
        return found

    def _value_texts(self, func: ir.Operation, kind: str) -> list[str | None]:
        """The sharding texts of a function's arguments (``kind`` ``"arg"``) or results (``"res"``)."""
        found = self._texts.get((func, kind))
        if found is None:
            found = [str(a[irx.SDY_SHARDING]) if irx.SDY_SHARDING in a else None for a in irx.value_attrs(func, kind)]
            self._texts[(func, kind)] = found
        return found

    def parts(self, value: ir.Value) -> tuple[int, ...]:
        """How many ways each dimension of ``value`` is split (empty: replicated)."""
        if isinstance(value, ir.OpResult):
            op = value.owner.operation
            text = self._op_text(op)
            number = value.result_number
            if text is None and op.name == "func.call":  # a call's results are sharded as its callee returns them
                callee = self.symbols[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
                text = self._value_texts(callee, "res")[number]
                number = 0
            if text is None:
                return ()
            per_value = self._divisors(text)
            number = number if text.startswith("#sdy.sharding_per_value") else 0
        else:
            parent = value.owner.owner.operation
            number = ir.BlockArgument(value).arg_number
            if parent.name == "func.func":
                text = self._value_texts(parent, "arg")[number]
                number = 0
            elif parent.name == "stablehlo.while":
                text = self._op_text(parent)
            else:
                text = None
            if text is None:
                return ()
            per_value = self._divisors(text)
        return per_value[number] if number < len(per_value) else ()

    def local(self, value: ir.Value) -> tuple[int, float]:
        """(elements, bytes) one device holds of ``value``: none of a value computed from constants alone, which
        XLA folds, fuses into its users or sinks into the loops that carry it unchanged."""
        found = self._local.get(value)
        if found is None:
            t = value.type
            if (
                not isinstance(t, ir.RankedTensorType)
                or self.constant(value)
                or self.expanded(value)
                or self.fused(value)
            ):
                found = (0, 0.0)
            else:
                elements = math.prod(self.dims(value))
                found = (elements, elements * element_type(t)[1])
            self._local[value] = found
        return found

    def nbytes(self, value: ir.Value) -> int:
        return int(self.local(value)[1])

    def held(self, value: ir.Value) -> int:
        """Bytes ``value`` takes in memory: none where XLA fuses it into its readers (``fused``)."""
        return 0 if self.fused(value) else self.nbytes(value)

    def dims(self, value: ir.Value) -> tuple[int, ...]:
        """The shape of the piece of ``value`` one device holds (a dimension split unevenly: its largest piece)."""
        parts = self.parts(value)
        return tuple(-(-n // parts[i]) if i < len(parts) else n for i, n in enumerate(value.type.shape))

    def local_shape(self, value: ir.Value) -> Any:
        from shardkit.inspect.hlo import ArrayShape

        return ArrayShape(shardy.array_shape(value.type).dtype, self.dims(value))

    def fused(self, value: ir.Value) -> bool:
        """Whether ``value`` is an elementwise result that only elementwise ops and reductions read (in its own
        block), which XLA fuses into one kernel with them instead of writing it out."""
        if not isinstance(value, ir.OpResult):
            return False
        op = value.owner.operation
        if op.name in _MATERIALIZED or op.regions or op.name in _NOT_ELEMENTWISE:
            return False
        uses = list(value.uses)
        if not uses:
            return False
        for use in uses:
            user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if user.name in _NOT_ELEMENTWISE or user.regions and user.name != "stablehlo.reduce":
                return False
            if user.name in _MATERIALIZED and user.name != "stablehlo.reduce":
                return False
            if user.parent != op.parent:
                return False
        return True

    def expanded(self, value: ir.Value) -> bool:
        """Whether ``value`` is a broadcast of a smaller value (or a call's result that its callee returns as one),
        which XLA fuses into its users instead of writing out."""
        if not isinstance(value, ir.OpResult):
            return False
        op = value.owner.operation
        if op.name == "func.call":
            callee = self.symbols[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
            returned = _terminator(callee.regions[0].blocks[0]).operands[value.result_number]
            return self.expanded(returned)
        if op.name != "stablehlo.broadcast_in_dim":
            return False
        source = op.operands[0].type
        return isinstance(source, ir.RankedTensorType) and 2 * math.prod(source.shape) <= math.prod(value.type.shape)

    def constant(self, value: ir.Value) -> bool:
        """Whether ``value`` is computed from constants alone (through any op without regions or effects, calls
        of such functions, and loops that carry it unchanged)."""
        found = self._constants.get(value)
        if found is not None:
            return found
        self._constants[value] = False  # a cycle through a loop is not constant
        found = False
        if isinstance(value, ir.OpResult):
            op = value.owner.operation
            name = op.name
            if name in ("stablehlo.constant", "sdy.constant", "stablehlo.iota"):
                found = True
            elif name == "stablehlo.while":
                k = value.result_number
                body = op.regions[1].blocks[0]
                yielded = _terminator(body).operands[k]
                found = yielded == body.arguments[k] and self.constant(op.operands[k])
            elif name not in _EFFECTS and (not op.regions or name == "stablehlo.reduce"):
                found = all(self.constant(v) for v in op.operands)
        else:
            block = value.owner
            parent = block.owner.operation
            if parent.name == "stablehlo.while" and block == parent.regions[1].blocks[0]:
                k = ir.BlockArgument(value).arg_number
                found = _terminator(block).operands[k] == value and self.constant(parent.operands[k])
        self._constants[value] = found
        return found

    # trip counts

    @staticmethod
    def trip_count(loop: ir.Operation) -> int:
        """jax's counted loop's trip count (``inspect.shardy.trip_count``); 1 for any other loop (counted once)."""
        found = shardy.trip_count(loop)
        return 1 if found is None else found

    # collectives

    def collective(self, op: ir.Operation) -> None:
        """Records one collective op, run ``self._mult`` times per step. An all-reduce whose one use slices its
        result over the same axes is recorded as the reduce-scatter XLA makes of the pair (its
        ``ReduceScatterCreator``), and the slice as nothing."""
        name = op.name
        where = (locations.op_name(op.location), locations.source(op.location))
        operands = tuple(self.local_shape(v) for v in op.operands)
        results = tuple(self.local_shape(v) for v in op.results)
        site = (self._loop, name == "sdy.all_gather" and _contracted(op.results[0]))
        if name in irx.SDY_COLLECTIVES:
            kind = irx.SDY_COLLECTIVES[name]
            if kind == "all-to-all":
                refs = [r for text, _, _ in _PARAMS.findall(str(op.attributes["params"])) for r in irx.axis_refs(text)]
            elif kind == "collective-permute":
                refs = [r for dim in irx.dim_axis_refs(op.attributes["out_sharding"]) for r in dim]
            else:
                refs = [r for dim in irx.dim_axis_refs(op.attributes[irx.SDY_COLLECTIVE_AXES[name]]) for r in dim]
            size = math.prod(sub[1] if sub else self.axes.get(n, 1) for n, sub in refs)
            labels = tuple(n if sub is None else f"{n}:({sub[0]}){sub[1]}" for n, sub in refs)
            c = Collective(kind, name, operands, results, labels, size, (), *where, False, (self._mult,))
            self.found.append((c, tuple(refs), site))
            return
        kind = irx.STABLEHLO_COLLECTIVES[name]
        raw = irx.replica_groups(op) if kind != "collective-permute" else []
        if isinstance(raw, tuple):  # mesh axes
            refs = raw[1]
            size = math.prod(sub[1] if sub else self.axes.get(n, 1) for n, sub in refs)
            c = Collective(kind, name, operands, results, None, size, (), *where, False, (self._mult,))
            self.found.append((c, tuple(refs), site))
            return
        if kind == "collective-permute":
            pairs = np.array(ir.DenseIntElementsAttr(op.attributes["source_target_pairs"])).reshape(-1, 2)
            groups = tuple(tuple(int(v) for v in p) for p in pairs if p[0] != p[1]) or ((0,),)
            c = Collective(kind, name, operands, results, None, 2, (), *where, False, (self._mult,))
            self.found.append((c, ("pairs", groups), site))
            return
        channel = "channel_handle" in op.attributes
        global_ids = ("use_global_device_ids" in op.attributes) if kind != "all-to-all" else None
        groups = groups_.partition_groups(raw, channel=channel, global_ids=global_ids, num_partitions=self.partitions)
        c = Collective(kind, name, operands, results, None, len(groups[0]), (), *where, False, (self._mult,))
        self.found.append((c, ("groups", tuple(tuple(g) for g in groups)), site))

    # the walk

    def function(self, func: ir.Operation, donated: Sequence[bool] | None = None) -> tuple[float, float, int]:
        """(flops, bytes accessed, peak bytes) of ``func`` per call. For ``@main`` (``donated`` given) the peak
        counts its arguments (a non-donated one lives to the end) and the traffic their reads and the results'
        writes; for a function it calls, the peak is what it adds to its arguments."""
        block = func.regions[0].blocks[0]
        args = list(block.arguments)
        if donated is None:
            flops, accessed, peak = self.block(block, args)
            return flops, accessed, max(0, peak - sum(self.nbytes(a) for a in args))
        keep = {a for a, d in zip(args, donated) if not d}
        flops, accessed, peak = self.block(block, args, keep)
        accessed += sum(self.nbytes(a) for a in args)
        return flops, accessed + sum(self.nbytes(v) for v in _terminator(block).operands), peak

    def block(
        self, block: ir.Block, arguments: Sequence[ir.Value] = (), keep: frozenset | set = frozenset()
    ) -> tuple[float, float, int]:
        """(flops, bytes accessed, peak) of a block whose ``arguments`` are alive when it starts (those in
        ``keep`` until it ends, the others until their last use), at ``self._mult`` runs per step."""
        ops = [o.operation for o in block.operations]
        here = set(arguments)
        for op in ops:
            here.update(op.results)
        last: dict[Any, int] = {}
        for i, op in enumerate(ops):
            for v in _uses(op):
                if v in here:
                    last[v] = i
        live = sum(self.nbytes(a) for a in arguments)
        peak, flops, accessed = live, 0.0, 0.0
        dying: dict[int, list[Any]] = {}
        for v, i in last.items():
            if v not in keep:
                dying.setdefault(i, []).append(v)
        returned = set(ops[-1].operands) if ops else set()
        for i, op in enumerate(ops):
            name = op.name
            inner_peak = 0
            if name == "stablehlo.while":
                saved = self._mult, self._loop
                self._loops += 1
                self._mult, self._loop = self._mult * self.trip_count(op), self._loops
                body = op.regions[1].blocks[0]
                f, b, p = self.block(body, list(body.arguments))
                self._mult, self._loop = saved
                state = sum(self.nbytes(a) for a in body.arguments)
                flops, accessed, inner_peak = flops + f, accessed + b, max(0, p - state)
            elif name == "func.call":
                if not all(self.constant(r) for r in op.results):
                    f, b, inner_peak = self._call(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
                    flops, accessed = flops + f, accessed + b
            elif op.regions and name not in ("stablehlo.reduce", "stablehlo.sort", "stablehlo.scatter"):
                for region in op.regions:
                    for inner in region.blocks:
                        f, b, p = self.block(inner)
                        flops, accessed, inner_peak = flops + f, accessed + b, max(inner_peak, p)
            elif name in irx.SDY_COLLECTIVES or name in irx.STABLEHLO_COLLECTIVES:
                self.collective(op)
            flops += self._flops(op)
            kept = [r for r in op.results if r in last or r in returned]  # XLA drops the rest
            if name in _MATERIALIZED:
                accessed += self._traffic(op, sum(self.nbytes(r) for r in kept)) * self._mult
            produced = sum(self.held(r) for r in kept)
            freed = sum(self.held(v) for v in dying.get(i, ()))
            grows = produced
            if name not in _MATERIALIZED or name in _IN_PLACE:
                # fused elementwise chains, updates, calls and loops reuse the buffers of operands dying here
                grows = max(0, produced - freed)
            peak = max(peak, live + grows + inner_peak)
            live += produced - freed
        return flops, accessed, peak

    def _call(self, name: str) -> tuple[float, float, int]:
        """A called function's flops, traffic and peak at this call site (walked once per function, at one run
        per step, and scaled to this site's runs), its collectives recorded again for this site."""
        found = self._functions.get(name)
        if found is None:
            saved, self._mult = self._mult, 1
            saved_loop, self._loop = self._loop, 0
            start = len(self.found)
            f, b, p = self.function(self.symbols[name])
            found = self._functions[name] = (f, b, p, self.found[start:])
            del self.found[start:]
            self._mult, self._loop = saved, saved_loop
        f, b, p, collectives = found
        for c, g, (loop, dots) in collectives:  # a callee is inlined: its collectives run in the caller's loop
            self.found.append(
                (dataclasses.replace(c, loops=(c.executions * self._mult,)), g, (loop or self._loop, dots))
            )
        return f * self._mult, b * self._mult, p

    def _traffic(self, op: ir.Operation, produced: int) -> int:
        """Bytes ``op`` reads and writes: its operands and results, but only the part of a buffer that a slice,
        an update in place or a lookup touches."""
        name = op.name
        if name == "stablehlo.dynamic_slice":
            return 2 * produced
        if name == "stablehlo.gather":
            return 2 * produced + self.nbytes(op.operands[1])
        if name == "stablehlo.dynamic_update_slice":
            return 2 * self.nbytes(op.operands[1])
        if name == "stablehlo.scatter":
            return 2 * sum(self.nbytes(v) for v in op.operands[len(op.operands) // 2 :])
        return produced + sum(self.nbytes(v) for v in op.operands)

    def _flops(self, op: ir.Operation) -> float:
        name = op.name
        if name in _NO_FLOPS or not op.results:
            return 0.0
        if name == "stablehlo.dot_general":
            lhs = self.dims(op.operands[0])
            contracting = _ints(op.attributes["dot_dimension_numbers"], "lhs_contracting_dimensions")
            return 2.0 * self.local(op.results[0])[0] * math.prod(lhs[d] for d in contracting) * self._mult
        if name == "stablehlo.convolution":
            kernel = self.local(op.operands[1])[0]
            features = max(1, op.results[0].type.shape[-1])
            return 2.0 * self.local(op.results[0])[0] * kernel / features * self._mult
        return sum(self.local(r)[0] for r in op.results) * self._mult


_PASS_THROUGH = frozenset(
    {"stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.convert", "stablehlo.slice"}
)


def _contracted(value: ir.Value, depth: int = 0) -> bool:
    """Whether every use of ``value`` (through reshapes, transposes, broadcasts, converts and slices) is an operand
    of a contraction at its default precision."""
    uses = list(value.uses)
    if not uses or depth > 8:
        return False
    for use in uses:
        op = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if op.name in ("stablehlo.dot_general", "stablehlo.convolution"):
            if "HIGHEST" in str(op.attributes["precision_config"]) if "precision_config" in op.attributes else False:
                return False
        elif op.name in _PASS_THROUGH:
            if not all(_contracted(r, depth + 1) for r in op.results):
                return False
        else:
            return False
    return True


def _terminator(block: ir.Block) -> ir.Operation:
    ops = list(block.operations)
    return ops[-1].operation


_PARAMS = re.compile(r"\{([^{}]*)\}:\s*(\d+)->(\d+)")


def _uses(op: ir.Operation) -> list[ir.Value]:
    """The values ``op`` reads, its regions' reads included."""
    found = list(op.operands)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                found += _uses(inner.operation)
    return found


def _ints(attr: ir.Attribute, field: str) -> list[int]:
    found = re.search(field + r" = \[([0-9, ]*)\]", str(attr))
    return [int(x) for x in found.group(1).split(",") if x.strip()] if found else []
