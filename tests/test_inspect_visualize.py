"""Pictures of shardings: the terminal grid (against jax.debug.visualize_sharding) and PNG/SVG images."""

from __future__ import annotations

import io
import re
import sys

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.inspect import communication_image, sharding_image, sharding_text, tile_grid, visualize
from shardkit.inspect.communication import Collective, CommunicationReport
from shardkit.inspect.hlo import ArrayShape
from tests.jax_oracle import jax_named

DEVS = jax.devices()
MESH = sk.make_mesh((4, 2), ("x", "y"))
MESH_P = sk.Mesh(np.array([DEVS[i] for i in [3, 1, 7, 5, 0, 2, 4, 6]], dtype=object).reshape(4, 2), ("x", "y"))


def test_plain_text_golden():
    mesh = sk.make_mesh((2, 2), ("x", "y"), devices=DEVS[:4])
    assert sharding_text(sk.NamedSharding(mesh, P("x", None)), (4, 6)) == (
        "┌─────────┐\n│ CPU 0,1 │\n├─────────┤\n│ CPU 2,3 │\n└─────────┘\n"
    )
    assert sharding_text(sk.NamedSharding(mesh, P(None, "y")), (4, 6)) == (
        "┌─────────┬─────────┐\n│ CPU 0,2 │ CPU 1,3 │\n└─────────┴─────────┘\n"
    )


def jax_labels(shape, sharding) -> list[list[str]]:
    """The tile labels jax draws (without colour: a box grid), row by row."""
    out = io.StringIO()
    real = sys.stdout
    sys.stdout = out
    try:
        jax.debug.visualize_sharding(shape, sharding, use_color=False, max_width=200)
    finally:
        sys.stdout = real
    return [re.findall(r"CPU [\d,]+", line) for line in out.getvalue().splitlines() if "CPU" in line]


CASES = [
    (P("x", "y"), (8, 4)),
    (P("x"), (8, 4)),
    (P(None, "y"), (8, 6)),
    (P(("x", "y")), (16,)),
    (P("y"), (8,)),
    (P(("y", "x"), None), (16, 2)),
    (P(None, ("x", "y")), (4, 16)),
    (P(), (8, 4)),
]


@pytest.mark.parametrize("mesh", [MESH, MESH_P], ids=["iota", "permuted"])
@pytest.mark.parametrize("spec, shape", CASES, ids=str)
def test_tiles_match_jax(mesh, spec, shape):
    grid = tile_grid(sk.NamedSharding(mesh, spec), shape)
    mine = [[grid.label(r, c) for c in range(len(grid.widths))] for r in range(len(grid.heights))]
    assert mine == jax_labels(shape, jax_named(sk.NamedSharding(mesh, spec)))


def test_any_sharding_kind_and_rank():
    positional = sk.PositionalSharding(np.array(DEVS).reshape(2, 4))
    kinds = [
        sk.GSPMDSharding(DEVS, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
        sk.SingleDeviceSharding(DEVS[5]),
        positional,
    ]
    grid = tile_grid(kinds[0], (6, 4))
    assert grid.devices == (((0, 1, 2, 3),), ((4, 5, 6, 7),))
    assert tile_grid(kinds[1], (3, 3)).devices == (((5,),),)
    assert tile_grid(kinds[2], (4, 8)).devices == (((0,), (1,), (2,), (3,)), ((4,), (5,), (6,), (7,)))
    # rank 3: leading dimensions flattened into rows, row-major
    grid = tile_grid(sk.NamedSharding(MESH, P("y", "x", None)), (4, 8, 2))
    assert [g[0] for g in grid.devices] == [(0,), (2,), (4,), (6,), (1,), (3,), (5,), (7,)]
    assert tile_grid(sk.NamedSharding(MESH, P()), ()).devices == ((tuple(range(8)),),)
    # tile sizes follow the array's split
    grid = tile_grid(sk.NamedSharding(MESH, P(None, "y")), (8, 6))
    assert grid.widths == (0.5, 0.5) and grid.heights == (1.0,)


def test_visualize_prints_arrays_and_shardings():
    x = sk.device_put(np.zeros((8, 4), np.float32), sk.NamedSharding(MESH, P("x", "y")))
    out = io.StringIO()
    sk.visualize(x, use_rich=False, file=out)
    assert out.getvalue() == sharding_text(x.sharding, (8, 4))
    out = io.StringIO()
    visualize(sk.NamedSharding(MESH, P("x")), shape=(8, 4), use_rich=True, file=out)
    assert [line.split() for line in out.getvalue().splitlines() if line.strip()] == [
        ["CPU", "0,1"],
        ["CPU", "2,3"],
        ["CPU", "4,5"],
        ["CPU", "6,7"],
    ]


def test_visualize_errors():
    with pytest.raises(TypeError, match=r"needs the array's shape: visualize\(sharding, shape=\(8, 4\)\)"):
        visualize(sk.NamedSharding(MESH, P("x")))
    with pytest.raises(TypeError, match="takes an Array or a Sharding, got list"):
        visualize([1, 2])
    with pytest.raises(TypeError, match="needs a shardkit Sharding"):
        tile_grid(jax_named(sk.NamedSharding(MESH, P("x"))), (8,))


# -- images ---------------------------------------------------------------------------------------------------


def test_sharding_png_size_and_colours(tmp_path):
    from PIL import Image as image  # the viz extra, which the test command installs

    path = tmp_path / "s.png"
    sharding_image(sk.NamedSharding(MESH, P("x", "y")), (8, 4), path)
    with image.open(path) as png:
        assert png.format == "PNG"
        width, height = png.size
        assert 300 < width < 2000 and 300 < height < 2000
        colours = {c for _, c in png.convert("RGB").getcolors(maxcolors=1 << 20)}
    # the eight tiles are drawn in the first eight palette colours
    from shardkit.inspect.visualize import PALETTE

    wanted = {tuple(int(p[i : i + 2], 16) for i in (1, 3, 5)) for p in PALETTE[:8]}
    assert wanted <= colours


def test_svg_and_report_image(tmp_path):
    sharding_image(sk.NamedSharding(MESH, P("x")), (8, 4), tmp_path / "s.svg")
    assert (tmp_path / "s.svg").read_text().lstrip().startswith("<?xml")
    a = ArrayShape("f32", (8,))
    collective = Collective("all-reduce", "c", (a,), (a,), ("y",), 2)
    report = CommunicationReport("xla", (("x", 4), ("y", 2)), 8, (collective,))
    communication_image(report, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="must end in .png or .svg"):
        communication_image(report, tmp_path / "c.jpg")


def test_images_without_matplotlib_name_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match=r"shardkit\[viz\]"):
        sharding_image(sk.NamedSharding(MESH, P("x")), (8, 4), tmp_path / "s.png")
    # the text forms need neither rich nor matplotlib
    monkeypatch.setitem(sys.modules, "rich", None)
    out = io.StringIO()
    visualize(sk.NamedSharding(MESH, P("x")), (8, 4), use_rich=False, file=out)
    assert "CPU 6,7" in out.getvalue()
