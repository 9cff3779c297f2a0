"""Why each collective is there: the value it moves, the two shardings that meet, the reason, and where each
sharding came from (which argument, result or sharding constraint, at which Python line).

Shardy's own origin tracking gives the answer. On a copy of the module, jaxlib's ``sdy-propagation-pipeline``
runs with ``debug-sharding-origins`` on (the pipeline's passes as jaxlib prints them, that flag set), so every
value records, per mesh axis, which user sharding put the axis there. Then the plan's passes run as
``shardy.report`` runs them: every place two shardings disagree becomes an ``sdy.reshard`` (a partial sum an
``sdy.all_reduce``), which is explained here, op by op (``propagated.py``), before ``sdy-reshard-to-collectives``
turns each reshard into the collectives it needs, located at the reshard (a tag in that location ties them back).
Crash-prone passes run isolated, as every shardkit pipeline does. XLA's program is explained through the plan
(``matching.py``).

The records (``Explanation``, ``Item``, ``Cause``, ``Sharded``, ``Origin``, ``Value``, ``REASONS``) live in
``explanation.py`` and are importable from here.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from shardkit.dialects import copy_module, irx, sdy as sdy_forms
from shardkit.inspect import communication, locations, shardy
from shardkit.inspect.communication import CommunicationReport
from shardkit.inspect.explanation import REASONS, Cause, Explanation, Item, Origin, Sharded, Value, line_key
from shardkit.inspect.matching import XlaMatcher, align
from shardkit.inspect.propagated import SHARD_MAP_INPUT, PropagatedModule, keep_propagated
from shardkit.passes import MlirPass, PassManager, run_pipeline
from shardkit.passes.mlir_pipeline import printed_pass
from shardkit.passes.propagate import reshards_to_constraints

__all__ = ["REASONS", "Cause", "Explanation", "Item", "Origin", "Sharded", "Value", "analyse", "explain"]

_TAG_ATTR = "shardkit.explain"
_TAG_LOC = re.compile(r'^loc\("shardkit\.explain#(\d+)"(?:\((.*)\))?\)$', re.DOTALL)


def explain(report: CommunicationReport) -> Explanation:
    """The explanation of a report from ``Lowered.communication()`` or ``Compiled.communication()``.

    Raises:
        ValueError: the report carries no StableHLO module (``xla_report`` called without ``source``).
    """
    if report.program is None:
        raise ValueError(
            f"report of stage {report.stage!r} has no StableHLO module to explain it from: build it with "
            "Compiled.communication() or Lowered.communication() (or pass source= to xla_report)."
        )
    module, mesh, devices = report.program
    lines = {c.source for c in report.collectives if c.source} if report.stage == "xla" else set()
    plan, causes, sites = analyse(module, mesh, devices, lines)
    if report.stage == "shardy":
        items = align(report.collectives, plan.collectives, causes)
    else:
        matcher = XlaMatcher(plan.collectives, causes, sites)
        items = [matcher.item(c) for c in report.collectives]
    return Explanation(report, tuple(items))


def analyse(
    module: ir.Module, mesh: Any = None, devices: Sequence[Any] | None = None, lines: Iterable[str] = ()
) -> tuple[CommunicationReport, list[Cause | None], dict[tuple[str, int], list[Cause]]]:
    """Shardy's plan for ``module`` (not changed) with the cause of each of its collectives, and, for each Python
    line in ``lines``, the ops there that read a sharded operand (what XLA's partitioner may communicate for)."""
    if "main" not in ir.SymbolTable(module.operation):
        raise ValueError("the module has no function @main to explain")
    module = copy_module(module)
    if not irx.uses_shardy(module):
        run_pipeline(module, "import-gspmd")
    constrain_shard_map_operands(module)
    PassManager([MlirPass(_propagation_with_origins())], context=module.context).run(module)  # one (isolated) job
    reshards_to_constraints(module)
    keep_propagated(module)
    run_pipeline(module, "sdy-insert-explicit-reshards{enable-full-version=true}")
    facts = PropagatedModule(module)
    causes: list[Cause] = []
    for op in irx.ops(module, ("sdy.reshard", "sdy.all_reduce", *irx.STABLEHLO_COLLECTIVES)):
        causes.append(facts.cause(op))
        _tag(op, len(causes) - 1)
    sites = facts.sites({line_key(s) for s in lines})
    run_pipeline(module, "sdy-reshard-to-collectives")
    plan, ops = shardy.read(module, mesh, devices)
    found: list[Cause | None] = []
    collectives = []
    for c, op in zip(plan.collectives, ops):
        tag, untagged = _tag_of(op)
        found.append(None if tag is None else causes[tag])
        collectives.append(dataclasses.replace(c, op_name=locations.op_name(untagged)))
    return dataclasses.replace(plan, collectives=tuple(collectives)), found, sites


communication.EXPLAIN = explain


def constrain_shard_map_operands(module: ir.Module) -> None:
    """Puts a sharding constraint to a shard_map's in-sharding on each operand that has no sharding of its own.

    jaxlib's ``sdy-apply-sharding-constraints`` makes that same constraint itself where such an operand is a data-flow
    edge (a function argument, a loop's value: every ``shard_map`` MaxText's splash attention runs in a scanned layer)
    and then, recording origins, reads the origin name of the constraint it made, which it never set (Shardy's
    ``overrideOriginsToSelf``): a SIGSEGV on jaxlib 0.12. A constraint already there is named like any other; the
    reader names its origin as the shard_map's input (``PropagatedModule``, ``SHARD_MAP_INPUT``). The pass's own
    conditions are kept: a closed in-sharding, no other constraint or shard_map asking another sharding of the value.
    """
    for mc in irx.ops(module, "sdy.manual_computation"):
        shardings = list(sdy.TensorShardingPerValueAttr(mc.attributes["in_shardings"]).shardings)
        for index, (operand, sharding) in enumerate(zip(list(mc.operands), shardings)):
            if shardy.sharding_of(operand) is not None or sdy_forms.SdyTensorSharding.from_attr(sharding).open_dims:
                continue
            asked = (_asks(use.owner, use.operand_number) for use in operand.uses)
            if any(a is not None and a != sharding for a in asked):
                continue
            with ir.InsertionPoint(mc), mc.location:
                constraint = sdy.ShardingConstraintOp(operand, sharding)
            number = ir.IntegerAttr.get(ir.IntegerType.get_signless(64, mc.context), index)
            constraint.operation.attributes[SHARD_MAP_INPUT] = ir.ArrayAttr.get([number, sharding], mc.context)
            mc.operands[index] = constraint.result


def _asks(user: Any, number: int) -> ir.Attribute | None:
    """The sharding a constraint or a shard_map asks of its operand ``number``; None for any other op."""
    user = user.operation
    if user.name == "sdy.sharding_constraint":
        return user.attributes["sharding"]
    if user.name == "sdy.manual_computation":
        return sdy.TensorShardingPerValueAttr(user.attributes["in_shardings"]).shardings[number]
    return None


@functools.cache
def _propagation_with_origins() -> str:
    """jaxlib's sdy-propagation-pipeline as its passes, recording sharding origins (sdy-save-module, a dump to
    a directory not given, is left out: it is not registered on its own)."""
    text = printed_pass("sdy-propagation-pipeline") or "sdy-propagation-pipeline"
    text = text.replace("sdy-save-module,", "").replace(",sdy-save-module", "")
    return text.replace("debug-sharding-origins=false", "debug-sharding-origins=true")


def _tag(op: ir.Operation, index: int) -> None:
    """Marks ``op`` as the ``index``-th cause: an attribute where the op survives ``sdy-reshard-to-collectives``,
    its location (which the collectives a reshard becomes inherit) where it does not."""
    if op.name != "sdy.reshard":
        op.attributes[_TAG_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64, op.context), index)
        return
    with op.context:
        location = ir.Location.name(f"shardkit.explain#{index}", childLoc=op.location)
        with ir.InsertionPoint(op):
            new = ir.Operation.create(
                "sdy.reshard",
                results=[op.results[0].type],
                operands=[op.operands[0]],
                attributes={"sharding": op.attributes["sharding"]},
                loc=location,
            )
    irx.replace(op, new.results)


def _tag_of(op: ir.Operation) -> tuple[int | None, str]:
    """The cause index a collective carries, and its location as it was before tagging."""
    text = str(op.location)
    if _TAG_ATTR in op.attributes:
        return ir.IntegerAttr(op.attributes[_TAG_ATTR]).value, text
    match = _TAG_LOC.match(text)
    if match is None:
        return None, text
    return int(match.group(1)), f"loc({match.group(2)})" if match.group(2) else "loc(unknown)"
