"""Notebook views: the compact HTML a Jupyter or Colab cell shows for shardkit's objects (``_repr_html_``).

Compact by default: a report shows its text table (the numbers ``print`` shows, from the same code), a program a
card of its key figures; ``to_html()`` on a ``Lowered``, ``Compiled``, plan or diff gives the full page
(``page.py``), which a notebook shows in a frame. An array's tiles are ``visualize.TileView``'s.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from shardkit.inspect.units import human_bytes

_STYLE = "font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;line-height:1.35"


def pre(text_block: str) -> str:
    """Printed text as a notebook shows it: monospace, columns kept, scrolled sideways when wide."""
    return f"<pre style='{_STYLE};margin:4px 0;white-space:pre;overflow-x:auto'>{html.escape(text_block)}</pre>"


def text(report: Any) -> str:
    """A report as a notebook shows it: its printed table, under the report's kind (every report's
    ``_repr_html_``)."""
    return f"<div><b>{html.escape(type(report).__name__)}</b>{pre(str(report))}</div>"


def card(title: str, facts: Sequence[tuple[str, str]], body: str = "", hint: str = "") -> str:
    """A program's key figures as a small table under ``title``, then ``body`` (HTML) and a ``hint`` line."""
    rows = "".join(
        f"<tr><td style='color:#5f6b7a;padding:1px 12px 1px 0'>{html.escape(k)}</td>"
        f"<td style='{_STYLE};padding:1px 0'>{html.escape(v)}</td></tr>"
        for k, v in facts
    )
    note = f"<div style='color:#5f6b7a;margin-top:4px'>{html.escape(hint)}</div>" if hint else ""
    return f"<div><b>{html.escape(title)}</b><table style='margin:4px 0'>{rows}</table>{body}{note}</div>"


def details(summary: str, text_block: str) -> str:
    """``text_block`` (a report's printed text) folded under ``summary``: open it to read."""
    return f"<details><summary>{html.escape(summary)}</summary>{pre(text_block)}</details>"


def communication_facts(report: Any) -> list[tuple[str, str]]:
    """The communication figures every program card shows."""
    return [
        ("collectives", f"{len(report.collectives)} ({report.title})"),
        ("sent per device per call", human_bytes(report.wire_bytes)),
    ]
