"""What every report says the same way: the collective kinds, in the order reports list them, byte counts,
aligned columns, and how loop bodies were counted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardkit.inspect import locations

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "all-slice")


def human_bytes(n: int) -> str:
    """``n`` bytes in the largest binary unit it reaches, as reports print sizes.

    Examples:
        >>> human_bytes(1536), human_bytes(3 << 20), human_bytes(12)
        ('1.5 KiB', '3.0 MiB', '12 B')
    """
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def aligned(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Rows padded into left-aligned columns under ``header``."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def describe_loops(loops: Sequence[Any]) -> str:
    """How the loop bodies of a program's cost (``cost.LoopCost``) are counted, in words: ``'2 loop bodies by their
    trip counts (12, 12 runs)'``, then the loops of unknown trip count, counted once; ``''`` without loops."""
    counted = [loop for loop in loops if loop.known]
    unknown = [loop for loop in loops if not loop.known]
    parts = []
    if counted:
        runs = ", ".join(str(loop.runs) for loop in counted)
        parts.append(f"{len(counted)} loop bod{'ies' if len(counted) != 1 else 'y'} by their trip counts ({runs} runs)")
    if unknown:
        where = ", ".join(loop.name + (f" at {locations.short(loop.source)}" * bool(loop.source)) for loop in unknown)
        parts.append(f"{len(unknown)} loop{'s' * (len(unknown) != 1)} of unknown trip count once ({where})")
    return "; ".join(parts)
