"""Seeing what a sharded program does: the communication report, the per-value sharding table, pictures.

- ``xla_report(hlo_module, devices, mesh)``: every collective of the partitioned program XLA compiled;
  ``shardy_report(module, mesh)``: the collectives Shardy's own passes would insert (the plan before XLA).
  Both are a ``CommunicationReport``: a table when printed, ``to_json()``, ``save_image(path)``.
- ``memory_report(executable, ...)``: bytes per device of a compiled program and its largest buffers.
- ``program_cost(hlo_module, xla_cost)``: XLA's cost analysis with each loop body counted by its trip count.
- ``report.time(hardware)``: each collective's and the step's modelled time on a named ``Hardware`` profile
  (``hardware('tpu-v5e')``) laid out as a ``Topology``: a ``StepTime`` (``docs/performance_model.md``).
- ``sharding_table(module, mesh)``: one row per value of a (propagated) Shardy module.
- ``report.explain()`` (``explain.py``): why each collective is there, down to the arguments, results and
  constraints whose shardings meet; ``diff(a, b)``: what changed between two programs.
- ``visualize(array_or_sharding, shape)``: the tiles in the terminal (a ``TileView`` in a notebook);
  ``sharding_image`` and ``communication_image`` draw PNG/SVG with the optional extra ``shardkit[viz]``.

``Compiled.communication()``, ``Lowered.communication()`` and ``Lowered.shardings()`` call these; every report
shows itself in a notebook (``notebook.py``), and ``to_html()`` on a ``Lowered``, ``Compiled``, plan or diff is
one self-contained page (``page.py``); ``trace.py`` and ``model_explorer.py`` export for Perfetto and Model
Explorer.
"""

from shardkit.inspect.communication import Collective, CommunicationReport, Totals
from shardkit.inspect.cost import LoopCost, ProgramCost, program_cost
from shardkit.inspect.diff import ProgramDiff, ValueChange, diff
from shardkit.inspect.explain import Cause, Explanation, Item, Origin, Sharded, Value
from shardkit.inspect.hardware import Hardware, Topology, hardware
from shardkit.inspect.images import communication_image, sharding_image
from shardkit.inspect.memory import Buffer, MemoryReport, OutOfMemoryError, report as memory_report
from shardkit.inspect.shardy import report as shardy_report
from shardkit.inspect.table import ShardingTable, ValueSharding, sharding_table
from shardkit.inspect.timing import CollectiveTime, ImpossibleEstimate, StepTime
from shardkit.inspect.units import KINDS
from shardkit.inspect.visualize import TileView, sharding_text, tile_grid, visualize
from shardkit.inspect.xla import report as xla_report

__all__ = [
    "KINDS",
    "LoopCost",
    "ProgramCost",
    "program_cost",
    "Buffer",
    "MemoryReport",
    "OutOfMemoryError",
    "Collective",
    "CollectiveTime",
    "CommunicationReport",
    "Hardware",
    "ImpossibleEstimate",
    "Cause",
    "Explanation",
    "Item",
    "Origin",
    "ProgramDiff",
    "Sharded",
    "Value",
    "ValueChange",
    "diff",
    "ShardingTable",
    "StepTime",
    "Topology",
    "TileView",
    "Totals",
    "ValueSharding",
    "communication_image",
    "hardware",
    "memory_report",
    "sharding_image",
    "sharding_table",
    "sharding_text",
    "shardy_report",
    "tile_grid",
    "visualize",
    "xla_report",
]
