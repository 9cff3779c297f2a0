"""Translations between shardkit's sharding model and MLIR: ``sdy`` (Shardy) and ``mhlo`` (GSPMD) forms.

``context()`` is the one MLIR context shardkit builds its modules and attributes in (a fresh context costs
about 2 ms, and attributes of different contexts must never mix).
"""

from shardkit.dialects import mhlo, sdy
from shardkit.dialects.context import context

__all__ = ["context", "mhlo", "sdy"]
