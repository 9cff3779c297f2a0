"""What every report says the same way: the collective kinds, in the order reports list them, byte counts, and
aligned columns."""

from __future__ import annotations

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
