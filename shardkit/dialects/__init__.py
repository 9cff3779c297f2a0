"""MLIR for shardkit: the ``sdy`` (Shardy) and ``mhlo`` (GSPMD) sharding forms, and ``irx``, the IR helpers
lowering, passes and the executor share (op walks, attribute names, the mesh table, ``walk_shardings``).

``context()`` is the one MLIR context shardkit builds its modules and attributes in (a fresh context costs
about 2 ms, and attributes of different contexts must never mix).
"""

from shardkit.dialects import irx, mhlo, sdy
from shardkit.dialects.context import context, copy_module

__all__ = ["context", "copy_module", "irx", "mhlo", "sdy"]
