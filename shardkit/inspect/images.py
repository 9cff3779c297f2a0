"""Images (PNG, SVG; by the path's suffix) of a sharding over an array and of a communication report.

matplotlib comes with the optional extra ``shardkit[viz]``; without it these raise ImportError naming the
extra, and the text forms (``print(report)``, ``sk.visualize``) still work. Figures are drawn on
matplotlib's object API (``Figure`` + Agg canvas), so nothing touches pyplot's global state.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from shardkit.inspect.units import KINDS, human_bytes
from shardkit.inspect.visualize import PALETTE, tile_grid
from shardkit.sharding import Sharding

_FORMATS = {".png": "png", ".svg": "svg"}


def new_figure(width: float, height: float) -> Any:
    """A matplotlib figure of ``width`` x ``height`` inches drawn off-screen (no display needed), for every picture
    the reports make; matplotlib is optional (``shardkit[viz]``)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("images need matplotlib: pip install 'shardkit[viz]'") from e
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure: Any, path: str | os.PathLike) -> None:
    """Writes ``figure`` as PNG or SVG, as ``path``'s suffix says (any other suffix is a ValueError)."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in _FORMATS:
        raise ValueError(f"image path {os.fspath(path)!r} must end in .png or .svg.")
    figure.savefig(path, format=_FORMATS[suffix], bbox_inches="tight")


def sharding_image(
    sharding: Sharding, shape: Sequence[int], path: str | os.PathLike, *, title: str | None = None
) -> None:
    """Draws ``sharding`` over an array of ``shape``: one box per tile, sized by its share of the array and
    labelled with the devices holding it (several devices: replicas of that tile).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "rows.png")
        >>> sharding_image(NamedSharding(sk.make_mesh((4, 2), ("x", "y")), P("x", None)), (8, 4), path)
        >>> open(path, "rb").read(4)
        b'\x89PNG'
    """
    grid = tile_grid(sharding, shape)
    rows, cols = len(grid.heights), len(grid.widths)
    figure = new_figure(min(2 + 1.6 * cols, 16), min(1 + 0.9 * rows, 12))
    axes = figure.add_subplot()
    tops = np.concatenate([[0], np.cumsum(grid.heights)])
    lefts = np.concatenate([[0], np.cumsum(grid.widths)])
    for r in range(rows):
        for c in range(cols):
            color = PALETTE[(r * cols + c) % len(PALETTE)]
            axes.add_patch(_rectangle((lefts[c], tops[r]), grid.widths[c], grid.heights[r], color))
            devices = grid.devices[r][c]
            text = grid.label(r, c) + (f"\n{len(devices)} replicas" if len(devices) > 1 else "")
            axes.text(
                lefts[c] + grid.widths[c] / 2,
                tops[r] + grid.heights[r] / 2,
                text,
                ha="center",
                va="center",
                color="white",
                fontsize=9,
            )
    axes.set_xlim(0, 1)
    axes.set_ylim(1, 0)
    axes.set_axis_off()
    spec = "" if sharding.spec is None else f" {sharding.spec}"
    axes.set_title(title or f"{type(sharding).__name__}{spec} over an array of shape {tuple(shape)}", fontsize=9)
    save_figure(figure, path)


def _rectangle(corner: tuple[float, float], width: float, height: float, color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle(corner, width, height, facecolor=color, edgecolor="white", linewidth=2)


def communication_image(report: Any, path: str | os.PathLike) -> None:
    """The mesh (devices on a grid, each axis labelled with the bytes a device sends over it per call) next to
    the bytes per set of mesh axes, stacked by collective kind.

    A 1-D mesh is one row, 2-D rows x columns, higher ranks fold every axis after the first into columns.
    """
    figure = new_figure(11, 4.2)
    mesh_axes, bars = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    by_axes = report.by_axes()
    if report.mesh:
        names = [n for n, _ in report.mesh]
        sizes = [s for _, s in report.mesh]
        rows, cols = (1, sizes[0]) if len(sizes) == 1 else (sizes[0], int(np.prod(sizes[1:])))
        for r in range(rows):
            for c in range(cols):
                k = r * cols + c
                label = f"device {report.device_ids[k]}" if report.device_ids else f"position {k}"
                mesh_axes.add_patch(_rectangle((c, r), 1, 1, PALETTE[k % len(PALETTE)]))
                mesh_axes.text(c + 0.5, r + 0.5, label, ha="center", va="center", color="white", fontsize=8)
        sent = {n: by_axes.get(repr(n)) for n in names}
        labels = [f"{n} ({s}): {_amount(sent[n])}" for n, s in zip(names, sizes)]
        if len(names) == 1:
            mesh_axes.set_xlabel(labels[0])
        else:
            mesh_axes.set_ylabel(labels[0])
            mesh_axes.set_xlabel(" x ".join(labels[1:]))
        mesh_axes.set_xlim(0, cols)
        mesh_axes.set_ylim(rows, 0)
        mesh_axes.set_aspect("equal")
        mesh_axes.set_xticks([])
        mesh_axes.set_yticks([])
        mesh_axes.set_title("the mesh; bytes a device sends per call along each axis", fontsize=9)
    else:
        mesh_axes.set_axis_off()
        mesh_axes.set_title("no mesh to place devices on", fontsize=9)
    groups = list(by_axes)
    left = np.zeros(len(groups))
    for i, kind in enumerate(KINDS):
        values = np.array(
            [
                sum(c.wire_bytes * c.executions for c in report.collectives if c.kind == kind and c.over == g)
                for g in groups
            ],
            dtype=float,
        )
        if values.any():
            bars.barh(groups, values, left=left, color=PALETTE[(i * 3) % len(PALETTE)], label=kind)
            left += values
    bars.set_xlabel("bytes sent per device per call")
    bars.set_title(
        f"{report.title}: {len(report.collectives)} collectives, {human_bytes(report.wire_bytes)} per device",
        fontsize=9,
    )
    if groups:
        bars.legend(fontsize=8)
    save_figure(figure, path)


def _amount(totals: Any) -> str:
    return "0 B" if totals is None else human_bytes(totals.wire_bytes)
