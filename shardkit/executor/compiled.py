"""``Compiled``: a loaded executable with its argument and result handlers, built once and kept.

Calling it: jaxlib's C++ dispatch (``_jaxlib.cpp_dispatch``) computes the call's signature; the first call of a
signature runs ``call_flat`` here, where each argument leaf goes through its handler (``arguments``: checks, then
the Array ``execute_sharded`` takes) and ``consume_with_handlers`` turns each output's buffers into jax's Array
carrying the output's shardkit Sharding; it hands C++ a record of the signature, and later calls of it run in
C++ (``arguments`` says which signatures get none). The shardings are the ones XLA compiled, shown as the
user's own sharding objects wherever those are equivalent.
"""

from __future__ import annotations

import dataclasses
import operator
import os
from collections.abc import Sequence
from typing import Any

import jax

from shardkit import _jaxlib
from shardkit._jaxlib import HloSharding
from shardkit.executor.arguments import (
    ArgumentHandler,
    buffers,
    check_donation,
    flatten_call,
    leaf_paths,
    may_share,
    place,
    placements,
)
from shardkit.executor.targets import device_memory, device_topology, profile_name
from shardkit.inspect import (
    CommunicationReport,
    MemoryReport,
    ProgramCost,
    memory_report,
    notebook,
    page,
    program_cost,
    xla_report,
)
from shardkit.inspect.units import human_bytes
from shardkit.lowering import LoweredModule, ShapeDtypeStruct
from shardkit.mesh import is_local
from shardkit.sharding import Sharding, from_hlo

Device = Any


class Compiled:
    """A compiled sharded program: inspect it (``as_text``, shardings, analyses) or call it.

    Examples:
        >>> compiled = sk.jit(lambda a: a * 2, out_shardings=s).lower(x).compile()
        >>> y = compiled(x)          # jax's Array, sharded as s
        >>> compiled.output_shardings
        NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P('x', 'y'), memory_kind=device)
    """

    __slots__ = (
        "_executable",
        "_lowered",
        "_in_flat",
        "_out_flat",
        "_handlers",
        "_results",
        "_out_avals",
        "_donated",
        "_effects",
        "_local_devices",
        "_dispatch",
        "_cost",
        "_hlo",
    )

    def __init__(self, lowered: LoweredModule, executable: Any):
        self._executable = executable
        self._lowered = lowered
        devices = lowered.device_assignment
        tokens = len(lowered.effects.ordered)  # effect tokens lead the executable's parameters and outputs
        params = (executable.get_parameter_shardings() or [])[tokens:]
        outputs = (executable.get_output_shardings() or [])[tokens:]

        def chosen(requested: Sequence[Sharding | None], protos: Sequence[Any], avals: Sequence[ShapeDtypeStruct]):
            # What XLA compiled is the truth (a pass may have changed the shardings after lowering, and
            # feeding buffers of another layout crashes execute_sharded); the requested sharding object is
            # kept wherever it is equivalent, so users see their own mesh and spec back.
            out = []
            for i, (s, aval) in enumerate(zip(requested, avals)):
                if i < len(protos):
                    compiled = from_hlo(_jaxlib.hlo_from_proto(protos[i]), devices, lowered.mesh, aval.ndim)
                    if s is None or not s.is_equivalent_to(compiled, aval.ndim):
                        s = compiled
                elif s is None:
                    s = from_hlo(HloSharding.replicate(), devices, lowered.mesh, aval.ndim)
                out.append(s)
            return tuple(out)

        self._in_flat = chosen(lowered.in_shardings, params, lowered.in_avals)
        self._out_flat = chosen(lowered.out_shardings, outputs, lowered.out_avals)
        self._cost: ProgramCost | None | bool = False  # not yet counted
        self._hlo: Any = None  # XLA's partitioned HloModule, fetched on first use (jaxlib rebuilds it each time)
        if lowered.target is None:
            self._prepare_calls(lowered)
        else:
            self._dispatch = self._refuse_call

    def _prepare_calls(self, lowered: LoweredModule) -> None:
        """The argument and result handlers a call runs through (a compile-only program has none)."""
        devices = lowered.device_assignment
        paths = leaf_paths(lowered.in_tree)
        self._handlers = tuple(ArgumentHandler(p, a, s) for p, a, s in zip(paths, lowered.in_avals, self._in_flat))
        self._out_avals = tuple(
            jax.core.ShapedArray(a.shape, a.dtype, weak_type=a.weak_type) for a in lowered.out_avals
        )
        self._results = [_jaxlib.result_handler(a, s) for a, s in zip(self._out_avals, self._out_flat)]
        self._donated = tuple(i for i, d in enumerate(lowered.donated) if d)
        self._effects = lowered.effects if lowered.effects.any else None
        self._local_devices = [d for d in devices if is_local(d)]
        self._dispatch = _jaxlib.cpp_dispatch(lowered.name, None, self._cache_miss, (), (), "shardkit.Compiled", place)

    def _execute_with_effects(self, arguments: list[Any]) -> list[Any]:
        """Runs a program with side effects as jax runs its own: each ordered effect's current token goes in
        first (shared with jax, so effects stay ordered across jax and shardkit calls) and comes back out, and
        the call's runtime token is recorded for ``jax.effects_barrier()``."""
        ordered, devices = self._effects.ordered, self._local_devices
        tokens = _jaxlib.effect_tokens(ordered, devices)
        token_buffers, results, runtime = _jaxlib.execute_with_tokens(
            self._executable, [*tokens, *arguments], len(ordered), self._results
        )
        _jaxlib.record_effect_tokens(ordered, devices, token_buffers, runtime)
        return results

    # -- inspection --------------------------------------------------------------------------------------

    def as_text(self) -> str:
        """The HLO after SPMD partitioning (per-device shapes, collectives)."""
        return self._hlo_module().to_string()

    def _hlo_module(self) -> Any:
        """XLA's partitioned ``HloModule``: jaxlib builds it anew on each ``hlo_modules()`` (0.3 s for a GPT step on
        256 chips), so it is kept."""
        if self._hlo is None:
            self._hlo = self._executable.hlo_modules()[0]
        return self._hlo

    @property
    def input_shardings(self) -> Any:
        """``(args, kwargs)`` shardings, as the arguments' tree."""
        return jax.tree_util.tree_unflatten(self._lowered.in_tree, self._in_flat)

    @property
    def output_shardings(self) -> Any:
        return jax.tree_util.tree_unflatten(self._lowered.out_tree, self._out_flat)

    def cost_analysis(self) -> dict[str, float] | None:
        """XLA's cost estimates (flops, bytes accessed, ...), or None when the backend has none."""
        try:
            return dict(self._executable.cost_analysis())
        except Exception:  # backends without cost analysis raise jaxlib errors
            return None

    def cost(self) -> ProgramCost | None:
        """XLA's cost analysis with every loop body counted by its trip count (XLA's counts each once: a scan over
        12 layers as one layer): a mapping of ``flops``, ``transcendentals`` and ``bytes accessed`` per device
        per call, with ``.loops`` (each loop's own cost and trip counts) and ``.xla`` (XLA's figures as reported);
        None when the backend has no cost analysis (``shardkit.inspect.cost``)."""
        if self._cost is False:
            xla_cost = self.cost_analysis()
            self._cost = None if xla_cost is None else program_cost(self._hlo_module(), xla_cost)
        return self._cost

    def memory_analysis(self) -> Any:
        """XLA's per-device memory statistics (argument, output, temp sizes), or None when unavailable."""
        try:
            return self._executable.get_compiled_memory_stats()
        except Exception:  # backends without memory stats raise jaxlib errors
            return None

    def memory(self) -> MemoryReport:
        """Bytes per device (arguments, outputs, temporaries, peak) against the target's memory, and the largest
        buffers with their op and Python line (print it, ``to_json()``)."""
        lowered = self._lowered
        return memory_report(
            self._executable,
            target=lowered.target,
            num_devices=lowered.num_partitions,
            capacity=device_memory(lowered),
            platform=lowered.device_assignment[0].platform,
        )

    def communication(self) -> CommunicationReport:
        """Every collective of the partitioned program, its bytes, mesh axes, loops and source lines
        (print it, ``to_json()``, ``save_image(path)``); ``time(hardware)`` models it, on a TPU target's own
        chip layout and with the program's cost (``cost()``: XLA's, loop bodies counted by their trip counts)."""
        lowered = self._lowered
        report = xla_report(self._hlo_module(), lowered.device_assignment, lowered.mesh, lowered.module)
        return dataclasses.replace(report, topology=device_topology(lowered), cost=self.cost())

    def to_html(
        self, path: str | os.PathLike | None = None, *, hardware: str | None = None, explain: bool = True
    ) -> page.Page:
        """One self-contained page of this program (``docs/inspect.md``): its mesh on the devices, every value's
        tiles, its collectives and why (``explain``), the modelled step on ``hardware`` (default: a TPU target's
        own; none for CPU devices) and memory per device; written to ``path`` when given."""
        communication = self.communication()
        hardware = hardware or profile_name(self.target)
        data = page.program(
            communication,
            name=self._lowered.name,
            memory=self.memory(),
            step=None if hardware is None else communication.time(hardware),
            explain=explain,
        )
        where = self.target or "this process's devices"
        return page.save(page.program_page("program", [data], f"{self._lowered.name}: XLA's program for {where}"), path)

    def _repr_html_(self) -> str:
        """A notebook's compact view: the target, the mesh, what the program communicates and holds per device, the
        two reports folded (``to_html()`` is the full page)."""
        report, memory = self.communication(), self.memory()
        mesh = self._lowered.mesh
        capacity = f" of {human_bytes(memory.capacity)}" if memory.capacity else ""
        facts = [
            ("target", self.target or "this process's devices"),
            ("mesh", "none" if mesh is None else " ".join(f"{n}={s}" for n, s in mesh.shape.items())),
            *notebook.communication_facts(report),
            ("memory per device", human_bytes(memory.total) + capacity),
        ]
        body = notebook.details("collectives", str(report)) + notebook.details("memory per device", str(memory))
        return notebook.card(f"Compiled {self._lowered.name}", facts, body, "to_html() gives the full report page")

    @property
    def executable(self) -> Any:
        """jaxlib's LoadedExecutable (an ``Executable``, not loaded, for a compile-only target)."""
        return self._executable

    @property
    def device_assignment(self) -> tuple[Any, ...]:
        """The device each partition runs on, in partition order (a target's compile-only devices)."""
        return tuple(self._lowered.device_assignment)

    @property
    def target(self) -> str | None:
        """The compile-only target compiled for (``tpu-v5e:16x16``, ``cpu:256``), or None for this process's
        devices."""
        return self._lowered.target

    # -- calling -----------------------------------------------------------------------------------------

    # A call is jaxlib's C++ dispatch itself (made in ``_prepare_calls``): Python looks ``__call__`` up on the
    # class, and a C-level getter hands back the dispatch callable, so no Python frame runs.
    __call__ = property(operator.attrgetter("_dispatch"), doc="Calls the program on its arguments' tree.")

    def _refuse_call(self, *args: Any, **kwargs: Any) -> Any:
        """What calling a compile-only program does."""
        have = jax.devices()
        raise ValueError(
            f"Compiled {self._lowered.name} was compiled for target {self._lowered.target}, whose "
            f"{self._lowered.num_partitions} devices this process does not have (it has {len(have)} "
            f"{have[0].platform} devices): it can be inspected (as_text, communication, memory, "
            "cost_analysis), not called."
        )

    def _cache_miss(self, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """A call C++ dispatch has no record for: checked and run here; (outputs, the signature's record)."""
        leaves, tree = flatten_call(args, kwargs)
        if tree != self._lowered.in_tree:
            expected = self._lowered.in_tree
            takes = ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in self._lowered.in_avals)
            pruned = (
                f" Its @main takes {takes}: jax.jit drops the arguments a function does not use, and its lowered text "
                "does not say which; load jax's Lowered itself (sk.load(jax.jit(f).lower(...))) or a jax.export "
                "artifact of it, which say."
                if tree.num_leaves > expected.num_leaves
                else ""
            )
            raise TypeError(
                f"Compiled {self._lowered.name} takes (args, kwargs) structured as {expected} "
                f"({expected.num_leaves} arrays), but was called with {tree} ({tree.num_leaves} arrays). "
                f"Static arguments are not passed to a Compiled.{pruned}"
            )
        return self.call_flat(leaves)

    def call_flat(self, leaves: Sequence[Any]) -> tuple[Any, Any]:
        """Runs on flat argument leaves: (the outputs in their tree, the record C++ dispatch runs later calls of
        this signature from, or None where it may not: ``arguments``).

        ``execute_sharded`` plus ``consume_with_handlers`` is jax's own dispatch path below ``jax.jit``: the
        outputs come back as jax's Arrays without a per-device Python step.
        """
        pairs = may_share(leaves, self._donated) if self._donated else ()
        if pairs:
            check_donation(leaves, pairs, [h.path for h in self._handlers])
        arguments = buffers(self._handlers, leaves)
        if self._effects is None:
            results = _jaxlib.execute(self._executable, arguments, self._results)
        else:
            results = self._execute_with_effects(arguments)
        self._delete_donated(leaves)
        outputs = self._outputs(results)
        if self._effects is not None or self._lowered.out_keys or (pairs and not _jaxlib.DONATED_TWICE_RAISES):
            return outputs, None
        return outputs, _jaxlib.fast_path(
            self._executable,
            self._lowered.out_tree,
            self._in_flat,
            self._out_flat,
            self._out_avals,
            placements(leaves, self._in_flat, len(self._lowered.device_assignment)),
        )

    def _delete_donated(self, leaves: Sequence[Any]) -> None:
        """Deletes the donated Arrays whose buffers XLA took, and only those, as under ``jax.jit``: the runtime
        takes the buffers of each parameter the executable aliases to an output (the array then says it is
        deleted), which is all that C++ dispatch's calls delete too; one that XLA could not reuse stays alive
        (lowering warned about it). ``delete`` also drops the array's hold on the taken buffers, which is what
        C++ dispatch checks (jaxlib 0.10 crashes on them otherwise, under ``jax.jit`` too)."""
        for i in self._donated:
            x = leaves[i]
            if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) and x.is_deleted():
                x.delete()

    def _outputs(self, results: list[Any]) -> Any:
        """The outputs in their tree (a typed PRNG key output as jax's key array over its data)."""
        for i, dtype in enumerate(self._lowered.out_keys):
            if dtype is not None:
                results[i] = _jaxlib.wrap_keys(results[i], dtype)
        return jax.tree_util.tree_unflatten(self._lowered.out_tree, results)
