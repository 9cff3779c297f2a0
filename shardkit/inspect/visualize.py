"""Pictures of a sharding in the terminal, in the manner of ``jax.debug.visualize_array_sharding``.

An array is drawn as a grid of its tiles: rank 1 as one row, rank 2 as rows x columns, and (where jax
raises) rank > 2 with the leading dimensions flattened into rows, so tile ``(i, j, k)`` of a ``(2, 2, 4)``
tiling is row ``i * 2 + j``, column ``k``; a scalar is one tile. Each tile names the devices holding it
(``CPU 0,4``: two replicas). With ``rich`` installed (and a terminal to draw in) the tiles are coloured boxes
sized like jax's; otherwise a plain box-drawing grid. In a notebook (Jupyter, Colab) ``visualize`` shows a
``TileView``, the same tiles as coloured HTML boxes, as jax's picture (drawn through rich) shows there.
"""

from __future__ import annotations

import dataclasses
import html
import importlib.util
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from shardkit.sharding import Sharding, from_jax

# Tile colours (tab20-like), shared with the images so a device's tile looks the same everywhere.
PALETTE = (
    "#393B79",
    "#637939",
    "#8C6D31",
    "#843C39",
    "#7B4173",
    "#5254A3",
    "#8CA252",
    "#BD9E39",
    "#AD494A",
    "#A55194",
    "#6B6ECF",
    "#B5CF6B",
    "#E7BA52",
    "#D6616B",
    "#CE6DBD",
    "#9C9EDE",
    "#CEDB9C",
    "#E7CB94",
    "#E7969C",
    "#DE9ED6",
)


@dataclasses.dataclass(frozen=True)
class TileGrid:
    """The tiles of an array laid out in two dimensions.

    Attributes:
        devices: ``devices[r][c]``: sorted ids of the devices holding the tile at row ``r``, column ``c``.
        heights, widths: each row's and column's share of the array (they sum to 1).
        platform: the devices' platform, upper-case (``CPU``), for labels.
    """

    devices: tuple[tuple[tuple[int, ...], ...], ...]
    heights: tuple[float, ...]
    widths: tuple[float, ...]
    platform: str

    def label(self, r: int, c: int) -> str:
        return f"{self.platform} {','.join(map(str, self.devices[r][c]))}"


def _chunk(size: int, index: Any) -> tuple[int, int]:
    """(chunk number, chunk length) of one dimension's index of a shard."""
    if isinstance(index, int):
        return index, 1
    start = 0 if index.start is None else index.start
    stop = size if index.stop is None else index.stop
    length = max(stop - start, 1)
    return start // length, length


def tile_grid(sharding: Sharding, shape: Sequence[int]) -> TileGrid:
    """How ``sharding`` tiles an array of ``shape``, as a two-dimensional grid (see the module docstring)."""
    if not isinstance(sharding, Sharding):
        raise TypeError(f"visualize needs a shardkit Sharding (or an Array), got {type(sharding).__name__}.")
    shape = tuple(int(s) for s in shape)
    cells: dict[tuple[int, ...], set[int]] = {}
    lengths: dict[tuple[int, ...], tuple[int, ...]] = {}
    for device, index in sharding.devices_indices_map(shape).items():
        chunks = [_chunk(size, i) for size, i in zip(shape, index)]
        key = tuple(c for c, _ in chunks)
        cells.setdefault(key, set()).add(device.id)
        lengths[key] = tuple(n for _, n in chunks)
    counts = [max(k[d] for k in cells) + 1 for d in range(len(shape))]
    lead, last = counts[:-1], counts[-1:] or [1]
    rows, cols = math.prod(lead), last[0]
    grid = [[()] * cols for _ in range(rows)]
    heights, widths = [1.0 / rows] * rows, [1.0 / cols] * cols
    for key, devs in cells.items():
        r = int(np.ravel_multi_index(key[:-1], lead)) if lead else 0
        c = key[-1] if key else 0
        grid[r][c] = tuple(sorted(devs))
        if len(shape) == 2:
            heights[r] = lengths[key][0] / shape[0]
        if shape:
            widths[c] = lengths[key][-1] / shape[-1]
    platform = next(iter(sharding.device_set)).platform.upper()
    return TileGrid(tuple(map(tuple, grid)), tuple(heights), tuple(widths), platform)


def sharding_text(sharding: Sharding, shape: Sequence[int]) -> str:
    """The plain-text picture: a box-drawing grid, one line per row of tiles, equal column widths.

    Examples:
        >>> mesh = sk.make_mesh((2, 2), ("x", "y"), devices=sk.devices()[:4])
        >>> print(sharding_text(NamedSharding(mesh, P("x", None)), (4, 6)), end="")
        ┌─────────┐
        │ CPU 0,1 │
        ├─────────┤
        │ CPU 2,3 │
        └─────────┘
    """
    grid = tile_grid(sharding, shape)
    labels = [[grid.label(r, c) for c in range(len(grid.widths))] for r in range(len(grid.heights))]
    width = max(len(s) for row in labels for s in row) + 2
    cols = len(grid.widths)

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join(["─" * width] * cols) + right

    lines = [rule("┌", "┬", "┐")]
    for r, row in enumerate(labels):
        if r:
            lines.append(rule("├", "┼", "┤"))
        lines.append("│" + "│".join(s.center(width) for s in row) + "│")
    lines.append(rule("└", "┴", "┘"))
    return "\n".join(lines) + "\n"


def _rich_table(grid: TileGrid, width: int = 60) -> Any:
    """Coloured boxes whose widths and heights follow the tiles' shares of the array (at least the label)."""
    import rich.padding
    import rich.style
    import rich.table

    table = rich.table.Table(show_header=False, padding=0, pad_edge=False, box=None)
    height = 2 * len(grid.heights) + 1 if len(grid.heights) > 1 else 1
    for r, height_share in enumerate(grid.heights):
        lines = max(round(height_share * height), 1)
        row = []
        for c, width_share in enumerate(grid.widths):
            label = grid.label(r, c)
            cols = max(round(width_share * width), len(label) + 2)
            top, left = (lines - 1) // 2, (cols - len(label)) // 2
            color = PALETTE[(r * len(grid.widths) + c) % len(PALETTE)]
            row.append(
                rich.padding.Padding(
                    label,
                    (top, cols - len(label) - left, lines - 1 - top, left),
                    style=rich.style.Style(bgcolor=color, color="white"),
                )
            )
        table.add_row(*row)
    return table


class TileView:
    """How a sharding tiles an array, for a notebook: shown there (``_repr_html_``) as coloured boxes sized by each
    tile's share of the array and naming the devices that hold it; printed, the plain grid.

    Examples:
        >>> view = TileView(NamedSharding(mesh4x2, P("x", None)), (8, 4))
        >>> print(view, end="")
        ┌─────────┐
        │ CPU 0,1 │
        ├─────────┤
        │ CPU 2,3 │
        ├─────────┤
        │ CPU 4,5 │
        ├─────────┤
        │ CPU 6,7 │
        └─────────┘
        >>> view._repr_html_().count("CPU ")
        4
    """

    def __init__(self, sharding: Sharding, shape: Sequence[int]):
        self.sharding = sharding
        self.shape = tuple(shape)
        self.grid = tile_grid(sharding, self.shape)

    def __str__(self) -> str:
        return sharding_text(self.sharding, self.shape)

    def __repr__(self) -> str:
        return f"TileView({self.sharding!r}, {self.shape})"

    def _repr_html_(self) -> str:
        grid, mono = self.grid, "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px"
        rows = " ".join(f"{max(h, 0.04):.4f}fr" for h in grid.heights)
        cols = " ".join(f"{max(w, 0.04):.4f}fr" for w in grid.widths)
        boxes = "".join(
            f"<div style='background:{PALETTE[(r * len(grid.widths) + c) % len(PALETTE)]};color:#fff;display:flex;"
            f"align-items:center;justify-content:center;text-align:center;{mono}'>{html.escape(grid.label(r, c))}</div>"
            for r in range(len(grid.heights))
            for c in range(len(grid.widths))
        )
        spec = "" if getattr(self.sharding, "spec", None) is None else f" {self.sharding.spec}"
        title = html.escape(f"{type(self.sharding).__name__}{spec} over an array of shape {self.shape}")
        width, height = min(120 + 90 * len(grid.widths), 720), min(40 + 36 * len(grid.heights), 480)
        return (
            f"<div><div style='color:#5f6b7a;margin-bottom:4px'>{title}</div><div style='display:grid;"
            f"grid-template-rows:{rows};grid-template-columns:{cols};gap:2px;width:{width}px;height:{height}px'>"
            f"{boxes}</div></div>"
        )


def _notebook_display() -> Callable[[Any], None] | None:
    """IPython's ``display`` where this runs in a notebook kernel (Jupyter's or Colab's shell), else None."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or type(shell).__name__ not in ("ZMQInteractiveShell", "Shell"):
        return None
    from IPython.display import display

    return display


def visualize(
    value: Any, shape: Sequence[int] | None = None, *, use_rich: bool | None = None, file: TextIO | None = None
) -> None:
    """Prints how an Array (or a Sharding over an array of ``shape``) is laid out over devices.

    Args:
        value: an Array (its sharding and shape; a jax sharding is read as shardkit's), or a ``Sharding``
            together with ``shape``.
        shape: the global shape, required with a Sharding.
        use_rich: coloured boxes with ``rich`` (default: when it is installed and ``file`` is a terminal),
            else the plain box grid (which also reads right in a log or a pipe).
        file: where to print (default: stdout; in a notebook, with neither ``use_rich`` nor ``file`` given, the
            tiles are shown as a ``TileView`` instead).

    Examples:
        >>> mesh = sk.make_mesh((2, 2), ("x", "y"), devices=sk.devices()[:4])
        >>> sk.visualize(sk.device_put(np.zeros((4, 6)), NamedSharding(mesh, P(None, "y"))), use_rich=False)
        ┌─────────┬─────────┐
        │ CPU 0,2 │ CPU 1,3 │
        └─────────┴─────────┘
    """
    if isinstance(value, Sharding):
        if shape is None:
            raise TypeError("visualize(sharding) needs the array's shape: visualize(sharding, shape=(8, 4)).")
        sharding = value
    elif hasattr(value, "sharding") and hasattr(value, "shape"):
        shape = value.shape if shape is None else shape
        sharding = value.sharding if isinstance(value.sharding, Sharding) else from_jax(value.sharding, len(shape))
    else:
        raise TypeError(f"visualize takes an Array or a Sharding, got {type(value).__name__}.")
    display = _notebook_display() if file is None and use_rich is None else None
    if display is not None:
        display(TileView(sharding, shape))
        return
    out = file or sys.stdout
    if use_rich is None:
        use_rich = importlib.util.find_spec("rich") is not None and out.isatty()
    if not use_rich:
        out.write(sharding_text(sharding, shape))
        return
    import rich.console

    rich.console.Console(file=out).print(_rich_table(tile_grid(sharding, shape)))
