"""``Compiled``: a loaded executable with its argument and result handlers, built once and kept.

Calling it: each argument leaf goes through its handler (``arguments``: checks, then the global jaxlib array),
then ``execute_sharded``, then ``consume_with_handlers`` turns each output's buffers into one global jaxlib
array, which ``shardkit.array.wrap`` makes an ``sk.Array`` without copying. Its shardings are the ones XLA
compiled, shown as the user's own sharding objects wherever those are equivalent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax

from shardkit import _jaxlib
from shardkit._jaxlib import HloSharding
from shardkit.array import Array, jaxlib_sharding, wrap
from shardkit.executor.arguments import ArgumentHandler, buffers, check_donation, flatten_call, leaf_paths
from shardkit.lowering import LoweredModule, ShapeDtypeStruct
from shardkit.sharding import Sharding, from_hlo

Device = Any


class Compiled:
    """A compiled sharded program: inspect it (``as_text``, shardings, analyses) or call it.

    Examples:
        >>> compiled = sk.jit(lambda a: a * 2, out_shardings=s).lower(x).compile()
        >>> y = compiled(x)          # an sk.Array sharded as s
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
        "_out_info",
        "_single_output",
        "_donated",
    )

    def __init__(self, lowered: LoweredModule, executable: Any):
        self._executable = executable
        self._lowered = lowered
        devices = lowered.device_assignment
        params = executable.get_parameter_shardings() or []
        outputs = executable.get_output_shardings() or []

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
        paths = leaf_paths(lowered.in_tree)
        self._handlers = tuple(ArgumentHandler(p, a, s) for p, a, s in zip(paths, lowered.in_avals, self._in_flat))
        self._results = [
            _jaxlib.result_handler(
                jax.core.ShapedArray(a.shape, a.dtype, weak_type=a.weak_type), jaxlib_sharding(s, a.ndim)
            )
            for a, s in zip(lowered.out_avals, self._out_flat)
        ]
        self._out_info = tuple((s, a.weak_type) for s, a in zip(self._out_flat, lowered.out_avals))
        self._single_output = lowered.out_tree.num_nodes == 1 and lowered.out_tree.num_leaves == 1
        self._donated = tuple(i for i, d in enumerate(lowered.donated) if d)

    # -- inspection --------------------------------------------------------------------------------------

    def as_text(self) -> str:
        """The HLO after SPMD partitioning (per-device shapes, collectives)."""
        return self._executable.hlo_modules()[0].to_string()

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

    def memory_analysis(self) -> Any:
        """XLA's per-device memory statistics (argument, output, temp sizes), or None when unavailable."""
        try:
            return self._executable.get_compiled_memory_stats()
        except Exception:  # backends without memory stats raise jaxlib errors
            return None

    @property
    def executable(self) -> Any:
        """jaxlib's LoadedExecutable."""
        return self._executable

    # -- calling -----------------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves, tree = flatten_call(args, kwargs)
        if tree != self._lowered.in_tree:
            expected = self._lowered.in_tree
            raise TypeError(
                f"Compiled {self._lowered.name} takes (args, kwargs) structured as {expected} "
                f"({expected.num_leaves} arrays), but was called with {tree} ({tree.num_leaves} arrays). "
                "Static arguments are not passed to a Compiled."
            )
        return self._call_flat(leaves)

    def _call_flat(self, leaves: Sequence[Any], trusted: bool = False) -> Any:
        """Runs on flat argument leaves.

        ``trusted``: ``jit`` found this call's ``arguments.call_key`` in its cache. Every Python step here is on
        the dispatch path, so the common cases take the shortest route.
        """
        if self._donated:
            check_donation(leaves, self._donated, [h.path for h in self._handlers])
        results = _jaxlib.execute(self._executable, buffers(self._handlers, leaves, trusted), self._results)
        for i in self._donated:
            if isinstance(leaves[i], Array) and not leaves[i].is_deleted():
                leaves[i].delete()
        if self._single_output:
            s, weak = self._out_info[0]
            return wrap(results[0], s, weak_type=weak)
        outs = [wrap(r, s, weak_type=w) for r, (s, w) in zip(results, self._out_info)]
        return jax.tree_util.tree_unflatten(self._lowered.out_tree, outs)
