"""Shardy's propagated module, read for why data moves: each value's sharding as a PartitionSpec, where each
mesh axis on it came from, and the cause of each reshard and all-reduce of the plan.

Origins are Shardy's own (``debug-sharding-origins``): every value records, per mesh axis, the user sharding that
put the axis there (``input: 3``, ``output: 0``, ``constraint_2``, ``mc_0_input: 1``). A reshard's two shardings
are its operand's (what the producer gives) and its own (what the consumer needs); an all-reduce's are the two
operands of the contraction whose dimension both shard, or the reduced operand. Each mesh axis of either sharding
is traced to its origin: the value's own record, else the nearest value (through ops, calls and returns) that
records the axis. An argument, result or constraint that fixes a sharding outright (a replicated
``out_shardings``, say) is named as such.

A side that lacks axes the other has (replicated, or less sharded) has no record for them: Shardy records the
axes a value has. ``kept_off`` finds what keeps them off, from the shardings propagation gave each op
(``keep_propagated``, before the reshard passes re-shard ops to settle conflicts).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import irx, sdy as sdy_forms
from shardkit.inspect import locations, shardy
from shardkit.inspect.explanation import Cause, Origin, Sharded, Value, line_key
from shardkit.mesh import AbstractMesh
from shardkit.sharding import NamedSharding

_ORIGINS = "sdy.sharding_origins"
_ORIGIN_NAME = "sdy.sharding_origin_name"
_CONTRACTIONS = {"stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"}
_PROPAGATED = "shardkit.propagated"
# On a sharding constraint: [operand number, in-sharding] of the shard_map operand it was put on (``explain.py``'s
# ``constrain_shard_map_operands``): the constraint's origin is named as that shard_map input.
SHARD_MAP_INPUT = "shardkit.shard_map_input"
_SEARCH_LIMIT = 400  # values visited when what an axis came from (or what kept it off) is not on the value itself


def keep_propagated(module: ir.Module) -> None:
    """Records on each op the mesh axes propagation gave its results, which ``PropagatedModule.kept_off`` reads:
    ``sdy-insert-explicit-reshards`` then re-shards ops to settle conflicts, so the sharding an op computes in is no
    longer the one propagation's fixed point gave its result."""
    with module.context:
        for op in irx.ops(module):
            if op.results:
                axes = [sorted(_bases(shardy.sharding_of(v))) for v in op.results]
                op.attributes[_PROPAGATED] = ir.ArrayAttr.get(
                    [ir.ArrayAttr.get(list(map(ir.StringAttr.get, a))) for a in axes]
                )


class PropagatedModule:
    """The propagated module with origins, read: shardings as PartitionSpecs, each axis's origin, the causes."""

    def __init__(self, module: ir.Module):
        self.symbols = ir.SymbolTable(module.operation)
        self.main = self.symbols["main"]
        self.meshes = irx.meshes(module)
        self.named: dict[str, ir.Operation] = {}
        self.callers: dict[str, list[ir.Operation]] = collections.defaultdict(list)
        self.module = module
        for op in irx.ops(module):
            if _ORIGIN_NAME in op.attributes:
                self.named.setdefault(ir.StringAttr(op.attributes[_ORIGIN_NAME]).value, op)
            elif op.name == "func.call":
                self.callers[ir.FlatSymbolRefAttr(op.attributes["callee"]).value].append(op)
        self._where: dict[str, str | None] = {}
        self._main_args = irx.value_attrs(self.main, "arg")
        self._given = functools.cache(self._given)  # type: ignore[method-assign]
        self.spec = functools.cache(self.spec)  # type: ignore[method-assign]  # a few shardings, asked for often

    # -- values, shardings, lines

    def spec(self, tensor: sdy_forms.SdyTensorSharding | None) -> str:
        """``P('data', None, 'model')``, every dimension listed; Shardy's text where a PartitionSpec cannot say it."""
        if tensor is None:
            return "P()"
        mesh = self.meshes.get(tensor.mesh) if isinstance(tensor.mesh, str) else tensor.mesh
        try:
            spec = NamedSharding.from_sdy(tensor, _abstract(mesh.axes)).spec
        except (ValueError, TypeError, AttributeError):
            return str(tensor)
        entries = [*spec, *[None] * (len(tensor.dims) - len(spec))]
        if not any(entries):
            return "P()"
        text = "P(" + ", ".join(repr(e) for e in entries) + ")"
        return text + (f" unreduced {{{', '.join(map(str, tensor.unreduced))}}}" if tensor.unreduced else "")

    def source(self, op: ir.Operation) -> str | None:
        """The op's Python line, or (inside a nested function) the line of the first call of that function."""
        found = locations.source(op.location)
        if found is not None:
            return found
        func = irx.function_of(op)
        if func is None:
            return None
        name = ir.StringAttr(func.attributes["sym_name"]).value
        if name not in self._where:
            self._where[name] = None  # a recursive call finds nothing rather than looping
            calls = self.callers.get(name, [])
            self._where[name] = next((s for s in map(self.source, calls) if s), None)
        return self._where[name]

    def value(self, value: ir.Value) -> Value:
        type_ = str(shardy.array_shape(value.type)) if isinstance(value.type, ir.RankedTensorType) else str(value.type)
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            index = ir.BlockArgument(value).arg_number
            name = ir.StringAttr(parent.attributes["sym_name"]).value if parent.name == "func.func" else parent.name
            arg = locations.op_name(value.location) if parent.name == "func.func" else ""
            return Value("@" + name if parent.name == "func.func" else name, index, type_, arg, self._first_use(value))
        op = owner.operation
        return Value(op.name, ir.OpResult(value).result_number, type_, locations.op_name(op.location), self.source(op))

    def _first_use(self, value: ir.Value, depth: int = 4) -> str | None:
        """The first line (lowest line number) that uses ``value``, looking through the reshards and sdy ops
        that the passes located nowhere."""
        found = []
        for use in value.uses:
            user = use.owner.operation
            line = self.source(user)
            if line is None and depth and user.name.startswith("sdy.") and user.results:
                line = self._first_use(user.results[0], depth - 1)
            if line is not None:
                found.append(line)
        return min(found, key=lambda s: (line_key(s) or ("", 0))[1], default=None)

    def op_text(self, op: ir.Operation) -> str:
        name = locations.op_name(op.location).rsplit("/", 1)[-1] or op.name.split(".")[-1]
        where = self.source(op)
        return f"{name} at {locations.short(where)}" if where else name

    # -- origins

    def origins_of(self, value: ir.Value) -> dict[str, str]:
        """Axis -> origin name, as Shardy recorded them for this value (``self`` resolved)."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            index = ir.BlockArgument(value).arg_number
            if parent.name == "func.func":
                is_main = parent == self.main.operation
                return _names(self._main_args[index].get(_ORIGINS), f"input: {index}") if is_main else {}
            own = _own_name(parent, f"_input: {index}")
            return _names(_nth(parent.attributes, "sdy.block_arg_sharding_origins", index), own)
        op = owner.operation
        index = ir.OpResult(value).result_number
        attrs = op.attributes
        if _ORIGINS in attrs:
            attr = attrs[_ORIGINS]
            attr = attr if isinstance(attr, ir.DictAttr) else _nth(attrs, _ORIGINS, index)
            return _names(attr, _own_name(op))
        return _names(_nth(attrs, "sdy.result_sharding_origins", index), _own_name(op, f"_output: {index}"))

    def _neighbours(self, value: ir.Value) -> list[ir.Value]:
        out: list[ir.Value] = []
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            if parent.name == "func.func" and parent != self.main.operation:
                index = ir.BlockArgument(value).arg_number
                name = ir.StringAttr(parent.attributes["sym_name"]).value
                out += [call.operands[index] for call in self.callers.get(name, [])]
        else:
            op = owner.operation
            if op.name == "func.call":
                callee = self.symbols[ir.FlatSymbolRefAttr(op.attributes["callee"]).value]
                out.append(_returned(callee.operation)[ir.OpResult(value).result_number])
            out += list(op.operands)
        for use in value.uses:
            user = use.owner.operation
            if user.name == "func.return":
                func = irx.function_of(user)
                if func is not None and func != self.main.operation:
                    name = ir.StringAttr(func.attributes["sym_name"]).value
                    out += [call.results[use.operand_number] for call in self.callers.get(name, [])]
            else:
                out += list(user.results)
        return out

    def find(self, seeds: Sequence[ir.Value], axis: str, blocked: Iterable[ir.Value] = ()) -> str | None:
        """The origin of ``axis`` on the nearest value (breadth first from ``seeds``) that records one."""
        seen = set(blocked) | set(seeds)
        queue = collections.deque(seeds)
        while queue and len(seen) < _SEARCH_LIMIT:
            value = queue.popleft()
            origin = _for_axis(self.origins_of(value), axis)
            if origin is not None:
                return origin
            for nxt in self._neighbours(value):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return None

    def origin(self, name: str, axes: tuple[str, ...] = ()) -> Origin | None:
        """The Origin an origin name stands for (``input: 3``, ``output: 0``, ``constraint_2``, ``mc_0_input: 1``)."""
        given = self._given(name)
        if given is None:
            return None
        return dataclasses.replace(given[0], axes=axes) if axes else given[0]

    def _given(self, name: str) -> tuple[Origin, sdy_forms.SdyTensorSharding | None] | None:
        """The user sharding an origin name stands for: as an Origin fixing the whole value, and the sharding."""
        match = re.fullmatch(r"(input|output): (\d+)", name)
        if match:
            return (self._argument if match.group(1) == "input" else self._result)(int(match.group(2)))
        match = re.fullmatch(r"(mc_\d+)_(input|output): (\d+)", name)
        if match and match.group(1) in self.named:
            op, side, index = self.named[match.group(1)], match.group(2), int(match.group(3))
            key = "in_shardings" if side == "input" else "out_shardings"
            attr = sdy.TensorShardingPerValueAttr(op.attributes[key]).shardings[index]
            tensor = sdy_forms.SdyTensorSharding.from_attr(attr)
            label = f"{'in' if side == 'input' else 'out'}_specs[{index}]"
            return Origin(f"shard_map {side}", index, label, self.spec(tensor), self.source(op)), tensor
        if name in self.named and "sharding" in self.named[name].attributes:
            op = self.named[name]
            tensor = sdy_forms.SdyTensorSharding.from_attr(op.attributes["sharding"])
            if SHARD_MAP_INPUT in op.attributes:
                return self._shard_map_input(op)
            number = int(name.rsplit("_", 1)[1]) if name.rsplit("_", 1)[-1].isdigit() else 0
            label = locations.op_name(op.location)
            return Origin("constraint", number, label, self.spec(tensor), self.source(op)), tensor
        return None

    def _shard_map_input(self, constraint: ir.Operation) -> tuple[Origin, sdy_forms.SdyTensorSharding]:
        """The shard_map input a constraint of ``constrain_shard_map_operands`` stands for (its number and
        in-sharding, recorded on it; its location is the shard_map's)."""
        index, attr = ir.ArrayAttr(constraint.attributes[SHARD_MAP_INPUT])
        tensor = sdy_forms.SdyTensorSharding.from_attr(attr)
        number = ir.IntegerAttr(index).value
        return Origin(
            "shard_map input", number, f"in_specs[{number}]", self.spec(tensor), self.source(constraint)
        ), tensor

    def _argument(self, index: int) -> tuple[Origin, sdy_forms.SdyTensorSharding | None]:
        arg = self.main.regions[0].blocks[0].arguments[index]
        label = locations.op_name(arg.location) or f"argument {index}"
        tensor = shardy.sharding_of(arg)
        return Origin("argument", index, label, self.spec(tensor), self._first_use(arg)), tensor

    def _result(self, index: int) -> tuple[Origin, sdy_forms.SdyTensorSharding | None]:
        attrs = irx.value_attrs(self.main, "res")[index]
        info = attrs.get("jax.result_info")
        label = ir.StringAttr(info).value if info is not None else f"result {index}"
        tensor = sdy_forms.SdyTensorSharding.from_attr(attrs[irx.SDY_SHARDING]) if irx.SDY_SHARDING in attrs else None
        owner = _returned(self.main.operation)[index].owner
        source = None if isinstance(owner, ir.Block) else self.source(owner.operation)
        return Origin("result", index, label, self.spec(tensor), source), tensor

    def side(
        self,
        role: str,
        value: ir.Value,
        tensor: sdy_forms.SdyTensorSharding | None,
        axes: Sequence[str] | None = None,
        *,
        seeds: Sequence[ir.Value] | None = None,
        blocked: Iterable[ir.Value] = (),
        pinned: Sequence[Origin] = (),
    ) -> Sharded:
        """A sharding and the origins of its ``axes`` (default: all it holds), searched from ``seeds``."""
        axes = list(_axis_names(tensor)) if axes is None else list(axes)
        by_origin: dict[str, list[str]] = {}
        for axis in axes:
            name = self.find(list(seeds) if seeds is not None else [value], axis, blocked)
            if name is not None:
                by_origin.setdefault(name, []).append(axis)
        found = [self.origin(name, tuple(group)) for name, group in by_origin.items()]
        return _adding(Sharded(role, self.spec(tensor)), [o for o in found if o is not None] + list(pinned))

    def pinned(self, value: ir.Value) -> list[Origin]:
        """The user sharding that fixes ``value``'s sharding outright: an argument of main, a constraint."""
        return self._origins(self._pins(value))

    def needs(self, user: ir.Operation, operand: int) -> list[Origin]:
        """The user sharding a consumer fixes: main's result, a constraint, a shard_map's in_specs."""
        return self._origins(self._needed(user, operand))

    def kept_off(
        self, value: ir.Value, tensor: sdy_forms.SdyTensorSharding | None, other: sdy_forms.SdyTensorSharding | None
    ) -> list[Origin]:
        """The user shardings that keep ``other``'s mesh axes off ``value`` (sharded ``tensor``), which Shardy
        records nowhere (a value records the axes it has, not those it lacks): among the values of ``value``'s shape
        that propagation left without any of them (reshards inserted after it looked through), the nearest
        constraint, argument, result or shard_map boundary whose sharding closes each dimension to the axes
        ``other`` has there. Propagation is a fixed point, so those are what stopped the axes reaching ``value``."""
        lacking = [_bases_of(d) - _bases(tensor) for d in other.dims] if other is not None else []
        bases = set().union(*lacking)
        shape = irx.shape(value.type)
        frontier, seen = [value], {value}
        while bases and frontier and len(seen) < _SEARCH_LIMIT:
            names = [n for v in frontier for n in self._pins(v)]
            names += [n for v in frontier for u in v.uses for n in self._needed(u.owner.operation, u.operand_number)]
            givens = [g for g in map(self._given, dict.fromkeys(names)) if g is not None]
            found = [origin for origin, given in givens if _keeps_off(given, lacking)]
            if found:
                return found
            following = []
            for v in frontier:
                for nxt in self._neighbours(v):
                    if nxt not in seen and irx.shape(nxt.type) == shape and not bases & _propagated(nxt):
                        seen.add(nxt)
                        following.append(nxt)
            frontier = following
        return []

    def _origins(self, names: Iterable[str]) -> list[Origin]:
        return [o for o in map(self.origin, names) if o is not None]

    def _pins(self, value: ir.Value) -> list[str]:
        """The origin names of what ``pinned`` finds."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            parent = owner.owner.operation
            return [f"input: {ir.BlockArgument(value).arg_number}"] if parent == self.main.operation else []
        return self._fixed_by(owner.operation, f"output: {ir.OpResult(value).result_number}")

    def _needed(self, user: ir.Operation, operand: int) -> list[str]:
        """The origin names of what ``needs`` finds."""
        if user.name == "func.return" and irx.function_of(user) == self.main.operation:
            return [f"output: {operand}"]
        return self._fixed_by(user, f"input: {operand}")

    def _fixed_by(self, op: ir.Operation, port: str) -> list[str]:
        """The origin name of a constraint or a shard_map boundary (its ``port``: ``input: 0``, ``output: 1``), if
        ``op`` is one."""
        if _ORIGIN_NAME not in op.attributes or op.name not in ("sdy.sharding_constraint", "sdy.manual_computation"):
            return []
        name = ir.StringAttr(op.attributes[_ORIGIN_NAME]).value
        return [name if op.name == "sdy.sharding_constraint" else f"{name}_{port}"]

    # -- causes

    def cause(self, op: ir.Operation) -> Cause:
        """Why the plan holds ``op``: an ``sdy.reshard``, an ``sdy.all_reduce``, or a collective a shard_map calls."""
        if op.name == "sdy.reshard":
            return self._reshard(op)
        if op.name == "sdy.all_reduce":
            return self._all_reduce(op)
        return self._explicit(op)

    def _reshard(self, op: ir.Operation) -> Cause:
        operand, result = op.operands[0], op.results[0]
        before, after = shardy.sharding_of(operand), sdy_forms.SdyTensorSharding.from_attr(op.attributes["sharding"])
        uses = [(u.owner.operation, u.operand_number) for u in result.uses]
        user, number = uses[0] if uses else (None, 0)
        have = self.side("producer", operand, before, blocked=[result], pinned=self.pinned(operand))
        seeds = [v for u, _ in uses for v in (*u.results, *u.operands) if v != result]
        pinned = self.needs(user, number) if user else []
        need = self.side("consumer", result, after, seeds=seeds, blocked=[operand, result], pinned=pinned)
        final = _through_reshards(user)  # what the value goes to after a chain of reshards (into a maximal sharding)
        reason = _reshard_reason(self, operand, final, have, need)  # from the axes each has, not those kept off
        have = _adding(have, self.kept_off(operand, before, after))
        need = _adding(need, self.kept_off(result, after, before))
        return Cause(reason, self.value(operand), have, need, self._consumer(final))

    def _consumer(self, user: ir.Operation | None) -> str:
        if user is None:
            return ""
        if user.name == "func.return":
            func = irx.function_of(user)
            name = ir.StringAttr(func.attributes["sym_name"]).value if func is not None else "?"
            return "the result of main" if name == "main" else f"the result of @{name}"
        if user.name == "func.call":
            return f"the call of @{ir.FlatSymbolRefAttr(user.attributes['callee']).value} at " + locations.short(
                self.source(user)
            )
        return self.op_text(user)

    def _first_user(self, value: ir.Value) -> str:
        """The first op that uses ``value``, named as ``_consumer`` names it (empty if none)."""
        return self._consumer(next((u.owner.operation for u in value.uses), None))

    def _all_reduce(self, op: ir.Operation) -> Cause:
        partial, result = op.operands[0], op.results[0]
        axes = tuple(_ref_text(n, s) for n, s in irx.axis_refs(str(op.attributes["reduction_axes"])))
        after = sdy_forms.SdyTensorSharding.from_attr(op.attributes["out_sharding"])
        consumer = self._first_user(result)
        owner = partial.owner
        producer = None if isinstance(owner, ir.Block) else owner.operation
        gradient = producer is not None and "transpose(" in locations.op_name(producer.location)
        if producer is not None and producer.name in _CONTRACTIONS and len(producer.operands) >= 2:
            lhs, rhs = producer.operands[0], producer.operands[1]
            have = self.side("lhs", lhs, shardy.sharding_of(lhs), axes, pinned=self.pinned(lhs))
            need = self.side("rhs", rhs, shardy.sharding_of(rhs), axes, pinned=self.pinned(rhs))
            reason = "gradient" if gradient else "contracting"
            return Cause(reason, self.value(partial), have, need, consumer, axes)
        source = producer.operands[0] if producer is not None and producer.operands else partial
        lookup = producer is not None and producer.name in ("stablehlo.gather", "stablehlo.scatter")
        reason = "gradient" if gradient else "lookup" if lookup else "reduction"
        return self._operand_cause(reason, partial, source, axes, after, consumer)

    def _operand_cause(
        self,
        reason: str,
        value: ir.Value,
        operand: ir.Value,
        axes: tuple[str, ...],
        after: sdy_forms.SdyTensorSharding | None,
        consumer: str,
    ) -> Cause:
        """An op's communication for one operand: the operand's sharding with the origins of its ``axes``, and the
        sharding ``value`` (the op's result) gets."""
        have = self.side("operand", operand, shardy.sharding_of(operand), axes, pinned=self.pinned(operand))
        return Cause(reason, self.value(value), have, Sharded("result", self.spec(after)), consumer, axes)

    def _explicit(self, op: ir.Operation) -> Cause:
        operand = op.operands[0]
        parent = op.parent
        while parent is not None and parent.name not in ("sdy.manual_computation", "func.func"):
            parent = parent.parent
        pinned: list[Origin] = []
        if parent is not None and parent.name == "sdy.manual_computation" and _ORIGIN_NAME in parent.attributes:
            name = ir.StringAttr(parent.attributes[_ORIGIN_NAME]).value
            count = len(sdy.TensorShardingPerValueAttr(parent.attributes["in_shardings"]).shardings)
            pinned = [o for o in (self.origin(f"{name}_input: {i}") for i in range(count)) if o]
        spec = self.spec(shardy.sharding_of(operand))
        return Cause("explicit", self.value(operand), Sharded("operand", spec, tuple(pinned)), Sharded("result", spec))

    def sites(self, lines: set[tuple[str, int] | None]) -> dict[tuple[str, int], list[Cause]]:
        """For XLA's collectives that Shardy's plan does not hold: the ops at their lines that read an operand
        sharded on some axis, each as a ``partitioner`` cause, a reduce's sharded reduced dimensions first as a
        ``reduction`` cause (a reduction Shardy leaves to XLA, such as argmax's, which no all-reduce computes)."""
        lines.discard(None)
        out: dict[tuple[str, int], list[Cause]] = {}
        if not lines:
            return out
        for op in irx.ops(self.module):
            if not op.name.startswith("stablehlo.") or not op.results or not op.operands:
                continue
            key = line_key(self.source(op))
            if key not in lines:
                continue
            result = op.results[0]
            after = shardy.sharding_of(result)
            operand = next((v for v in op.operands if _axis_names(shardy.sharding_of(v))), None)
            if operand is None:  # a host callback's result, on its one device, sent to every device of its user's mesh
                fed = next((v for v in op.operands if _from_callback(v)), None)
                mesh = self.meshes.get(after.mesh) if after is not None and isinstance(after.mesh, str) else None
                if fed is not None and mesh is not None and mesh.axes:
                    axes = tuple(name for name, _ in mesh.axes)
                    cause = self._operand_cause("callback-result", result, fed, axes, after, self.op_text(op))
                    out.setdefault(key, []).append(cause)
                continue
            tensor = shardy.sharding_of(operand)
            found = out.setdefault(key, [])
            if op.name == "stablehlo.custom_call":  # XLA cannot look into it: it takes its operands whole
                reason = "callback" if _is_host_callback(op) else "kernel"
                found.append(self._operand_cause(reason, result, operand, _axis_names(tensor), after, self.op_text(op)))
                continue
            if op.name == "stablehlo.reduce":
                reduced = _axis_names(tensor, ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
                if reduced:
                    cause = self._operand_cause("reduction", result, operand, reduced, after, self._first_user(result))
                    found.append(cause)
            found.append(
                self._operand_cause("partitioner", result, operand, _axis_names(tensor), after, self.op_text(op))
            )
        return out


def _reshard_reason(
    facts: PropagatedModule, operand: ir.Value, user: ir.Operation | None, have: Sharded, need: Sharded
) -> str:
    owner = operand.owner
    producer = None if isinstance(owner, ir.Block) else owner.operation
    kinds = [o.kind for o in need.origins], [o.kind for o in have.origins]
    if "sdy.manual_computation" in (getattr(user, "name", ""), getattr(producer, "name", "")) or any(
        k.startswith("shard_map") for side in kinds for k in side
    ):
        return "shard_map"
    if user is not None and user.name == "stablehlo.custom_call":
        return "callback" if _is_host_callback(user) else "kernel"
    if _from_callback(operand):  # jax 0.11+ constrains a callback's result to replicated itself, then its users'
        return "callback-result"
    if user is not None and user.name == "func.return" and irx.function_of(user) == facts.main.operation:
        return "out-sharding"
    in_callee = isinstance(owner, ir.Block) and owner.owner.operation != facts.main.operation
    at_call = user is not None and user.name in ("func.call", "func.return")
    if at_call or in_callee or (producer is not None and producer.name == "func.call"):
        return "call"
    if user is not None and user.name == "sdy.sharding_constraint":
        return "constraint"
    for side in kinds:
        for kind, reason in (("constraint", "constraint"), ("result", "out-sharding"), ("argument", "in-sharding")):
            if kind in side:
                return reason
    return "operands"


def _is_host_callback(op: ir.Operation) -> bool:
    """Whether ``op`` is the custom call jax makes for a host callback (``jax.pure_callback``, ``io_callback``,
    ``jax.debug.print``: ``xla_ffi_python_cpu_callback`` and its kin), which XLA runs on one device."""
    return op.name == "stablehlo.custom_call" and "callback" in ir.StringAttr(op.attributes["call_target_name"]).value


def _from_callback(value: ir.Value) -> bool:
    """Whether ``value`` is a host callback's result (through the reshards Shardy makes after it)."""
    owner = value.owner
    while not isinstance(owner, ir.Block) and owner.name in ("sdy.reshard", "sdy.sharding_constraint"):
        owner = owner.operands[0].owner
    return not isinstance(owner, ir.Block) and _is_host_callback(owner.operation)


def _through_reshards(user: ir.Operation | None) -> ir.Operation | None:
    """``user``, or where it is a reshard Shardy made (no user constraint: it has no origin name), the first user
    after the reshards that follow it (Shardy reshards a value to a host callback's one device in two steps:
    replicated, then onto the device)."""
    seen = 0
    made = ("sdy.reshard", "sdy.sharding_constraint")
    while user is not None and user.name in made and _ORIGIN_NAME not in user.attributes and seen < 8:
        uses = list(user.results[0].uses)
        user = uses[0].owner.operation if uses else None
        seen += 1
    return user


def _adding(side: Sharded, origins: Iterable[Origin]) -> Sharded:
    """``side`` with ``origins`` added after its own, one per user sharding: an origin of named axes says more
    than the same one fixing the whole value, so the first of each stays."""
    unique: dict[tuple[str, int], Origin] = {}
    for o in (*side.origins, *origins):
        unique.setdefault((o.kind, o.index), o)
    return dataclasses.replace(side, origins=tuple(unique.values()))


def _returned(func: ir.Operation) -> list[ir.Value]:
    return list(list(func.regions[0].blocks[0].operations)[-1].operands)


def _own_name(op: ir.Operation, manual: str = "") -> str | None:
    """What ``self`` stands for in ``op``'s origins: its origin name (a shard_map's, with ``manual`` added)."""
    if _ORIGIN_NAME not in op.attributes:
        return None
    name = ir.StringAttr(op.attributes[_ORIGIN_NAME]).value
    return name + manual if op.name == "sdy.manual_computation" else name


def _nth(attrs: Any, key: str, index: int) -> ir.Attribute | None:
    if key not in attrs:
        return None
    array = ir.ArrayAttr(attrs[key])
    return array[index] if index < len(array) else None


def _names(attr: ir.Attribute | None, own: str | None) -> dict[str, str]:
    """``{data = "input: 22", model = "self"}`` -> ``{'data': 'input: 22', 'model': own}``."""
    if attr is None:
        return {}
    entries = ir.DictAttr(attr)
    out = {}
    for i in range(len(entries)):
        named = entries[i]
        text = ir.StringAttr(named.attr).value
        if text == "self":
            if own is None:
                continue
            text = own
        out[named.name] = text
    return out


def _for_axis(origins: dict[str, str], axis: str) -> str | None:
    if axis in origins:
        return origins[axis]
    base = axis.split(":", 1)[0]
    return next((v for k, v in origins.items() if k.split(":", 1)[0] == base), None)


def _ref_text(name: str, sub: tuple[int, int] | None) -> str:
    return name if sub is None else f"{name}:({sub[0]}){sub[1]}"


def _axis_names(tensor: sdy_forms.SdyTensorSharding | None, dims: Iterable[int] | None = None) -> tuple[str, ...]:
    """The (sub-)axes that shard ``tensor``'s dimensions (those numbered ``dims``; default all)."""
    if tensor is None:
        return ()
    chosen = tensor.dims if dims is None else [tensor.dims[d] for d in dims]
    return tuple(_ref_text(a.name, a.sub) for d in chosen for a in d.axes)


def _bases(tensor: sdy_forms.SdyTensorSharding | None) -> set[str]:
    """The mesh axes (whole, for sub-axes) that shard ``tensor``'s dimensions."""
    return set() if tensor is None else set().union(*map(_bases_of, tensor.dims))


def _bases_of(dim: sdy_forms.SdyDim) -> set[str]:
    return {a.name for a in dim.axes}


def _keeps_off(tensor: sdy_forms.SdyTensorSharding | None, lacking: Sequence[set[str]]) -> bool:
    """Whether a user sharding keeps the axes ``lacking[d]`` off each dimension ``d``: closed there, without them."""
    if tensor is None or len(tensor.dims) != len(lacking):
        return False
    return all(not d.is_open and not names & _bases_of(d) for d, names in zip(tensor.dims, lacking) if names)


def _propagated(value: ir.Value) -> set[str]:
    """The mesh axes propagation gave ``value`` (``keep_propagated``); none for the result of an op inserted after
    it (a reshard, looked through)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return _bases(shardy.sharding_of(value))
    attrs = owner.operation.attributes
    if _PROPAGATED not in attrs:
        return set()
    kept = ir.ArrayAttr(ir.ArrayAttr(attrs[_PROPAGATED])[ir.OpResult(value).result_number])
    return {ir.StringAttr(a).value for a in kept}


@functools.cache
def _abstract(axes: tuple[tuple[str, int], ...]) -> AbstractMesh:
    return AbstractMesh(tuple(s for _, s in axes), tuple(n for n, _ in axes))
