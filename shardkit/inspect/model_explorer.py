"""A program for Google's Model Explorer (``ai-edge-model-explorer``), with Shardy's plan painted on its graph.

``export(report, directory)`` writes three files:

- ``<name>.mlir``: the StableHLO module with Shardy's plan written in (``shardy.planned``: propagated, so every op
  carries its ``sdy.sharding``; every conflict a reshard, each reshard the ``sdy`` collectives it needs, which
  become nodes of the graph), with locations (Model Explorer groups nodes by their jax op names). Each op also
  carries ``shardkit.line`` (its Python line) and ``shardkit.per_device`` (its results per device), each collective
  ``shardkit.sent`` (bytes sent per device per call, runs and mesh axes), which Model Explorer lists among a
  node's attributes;
- ``<name>.bytes.json``: node data (Model Explorer's ``ModelNodeData`` JSON: per graph, a value per node) of each
  op's result bytes per device;
- ``<name>.sent.json``: node data of each collective's bytes sent per device per call.

Open the module in Model Explorer and add the two files as node data. Its MLIR adapter names a function's nodes
by a counter over its ops (an op before the ops of its regions, terminators included; an op inside a region
counts its own regions' ops only when it is Shardy's), arguments ``arg<i>``; ``node_ids`` walks the same way, which
the tests check against the adapter itself (``tests/test_report_exports.py``).
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
from collections.abc import Iterator

from jaxlib.mlir import ir

from shardkit.dialects import irx
from shardkit.inspect import locations, shardy
from shardkit.inspect.communication import CommunicationReport
from shardkit.inspect.table import nbytes, op_rows
from shardkit.inspect.units import human_bytes

# white for the least, the report page's red for the most (Model Explorer interpolates between stops)
GRADIENT = [{"stop": 0, "bgColor": "#f4f6f8"}, {"stop": 1, "bgColor": "#d9412b"}]


def export(report: CommunicationReport, directory: str | os.PathLike, name: str = "program") -> dict[str, pathlib.Path]:
    """Writes ``<name>.mlir``, ``<name>.bytes.json`` and ``<name>.sent.json`` (see the module docstring) into
    ``directory`` and returns their paths by kind (``module``, ``bytes``, ``sent``).

    Args:
        report: ``Lowered.communication()`` or ``Compiled.communication()``: its StableHLO module is planned.
    """
    if report.program is None:
        raise ValueError("the report has no StableHLO module to export: use Lowered/Compiled.communication()")
    module, mesh, devices = report.program
    if not irx.uses_shardy(module):
        raise ValueError("the module is in the GSPMD form (mhlo.sharding): Model Explorer's plan needs Shardy's")
    planned = shardy.planned(module)
    plan, ops = shardy.read(planned, mesh, devices)
    sent = {op.operation: c for c, op in zip(plan.collectives, ops)}
    meshes = irx.meshes(planned)
    sizes: dict[str, dict[str, dict[str, float]]] = {}
    wires: dict[str, dict[str, dict[str, float]]] = {}
    with planned.context:
        for graph, node, op in node_ids(planned):
            c = sent.get(op)  # before the op gains attributes: an Operation hashes by what it holds
            rows = op_rows(op, meshes, mesh)
            held = [r.array for r in rows if nbytes(r.array) is not None]
            source = locations.source(op.location)
            if source:
                op.attributes["shardkit.line"] = ir.StringAttr.get(source)
            if held:
                op.attributes["shardkit.per_device"] = ir.StringAttr.get(", ".join(map(str, held)))
                sizes.setdefault(graph, {})[node] = {"value": sum(a.nbytes for a in held)}
            if c is not None:
                text = f"{human_bytes(c.wire_bytes)} per device x {c.executions} over {c.over}"
                op.attributes["shardkit.sent"] = ir.StringAttr.get(text)
                wires.setdefault(graph, {})[node] = {"value": c.wire_bytes * c.executions}
    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        k: out / f"{name}{suffix}"
        for k, suffix in (("module", ".mlir"), ("bytes", ".bytes.json"), ("sent", ".sent.json"))
    }
    paths["module"].write_text(planned.operation.get_asm(enable_debug_info=True), encoding="utf-8")
    for kind, values in (("bytes", sizes), ("sent", wires)):
        data = {graph: {"results": results, "gradient": GRADIENT} for graph, results in values.items()}
        paths[kind].write_text(json.dumps(data, indent=1), encoding="utf-8")
    return paths


def node_ids(module: ir.Module) -> Iterator[tuple[str, str, ir.Operation]]:
    """``(graph id, node id, op)`` of every op Model Explorer's MLIR adapter makes a node of (module docstring): a
    graph per function, named after it."""
    for func in irx.ops(module, "func.func"):
        graph = ir.StringAttr(func.attributes["sym_name"]).value
        counter = itertools.count()
        for op in func.regions[0].blocks[0].operations:
            for node in _visit(op.operation, False):
                yield graph, str(next(counter)), node


def _visit(op: ir.Operation, nested: bool) -> Iterator[ir.Operation]:
    """``op``, then the ops of its regions the adapter makes nodes of (see the module docstring), in its order."""
    yield op
    if nested and not op.name.startswith("sdy."):
        return
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from _visit(inner.operation, True)
