"""One self-contained HTML page per program: the reports' own JSON, embedded once, drawn by a small inlined script.

A page is read instead of the tables: the mesh laid on the devices (a TPU slice's chips where they sit on the
torus) with the tiles of the selected value painted on it; every value's sharding, piece per device, bytes and
Python line, searchable and sortable, each linked to the collectives that move it and why; the modelled step as
a timeline by mesh axis; memory per device; for a plan its candidates, for a diff both programs side by side.

The numbers come from one place: the ``to_dict()`` of each report (``CommunicationReport``, ``Explanation``,
``ShardingTable``, ``MemoryReport``, ``StepTime``, the plan's ``CandidateTable`` and ``Explanation``,
``ProgramDiff``), embedded as one JSON document that the script (``web/page.js``, with ``web/page.css``) reads.
Nothing is fetched: the page opens from a file, offline. ``docs/inspect.md`` says how to read each panel.
"""

from __future__ import annotations

import functools
import html
import json
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

from shardkit.inspect.communication import CommunicationReport
from shardkit.inspect.table import propagated_table

_WEB = pathlib.Path(__file__).with_name("web")


class Page:
    """An HTML page (``html``): ``save(path)`` writes it; in a notebook it shows in a frame of its own.

    Examples:
        >>> page = Page("<!doctype html><title>t</title>")
        >>> page.html[:15], len(page._repr_html_()) > len(page.html)
        ('<!doctype html>', True)
    """

    __slots__ = ("html",)

    def __init__(self, html_text: str):
        self.html = html_text

    def save(self, path: str | os.PathLike) -> Page:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html)
        return self

    def _repr_html_(self) -> str:
        """The page in an iframe (its script and styles stay apart from the notebook's)."""
        return (
            f'<iframe srcdoc="{html.escape(self.html, quote=True)}" style="width:100%;height:760px;border:1px solid '
            '#ccc" sandbox="allow-scripts"></iframe>'
        )

    def __repr__(self) -> str:
        return f"<shardkit Page, {len(self.html):,} characters>"


def program(
    communication: CommunicationReport,
    *,
    name: str = "",
    explanation: Any = None,
    table: Any = None,
    memory: Any = None,
    step: Any = None,
    explain: bool = True,
    performance: Any = None,
) -> dict[str, Any]:
    """The data of one program: its mesh and devices, the communication report and (unless ``explain`` is False)
    why each collective is there, the per-value table after propagation, and, where given, its memory report and
    modelled step.

    Args:
        communication: XLA's report (``Compiled.communication()``) or Shardy's plan (``Lowered.communication()``);
            its StableHLO module gives the per-value table.
        name: what to call the program (the page's title and, in a diff, its side).
        explanation: ``communication.explain()``, table: the per-value ``ShardingTable`` after propagation, when
            already made.
        memory: a ``MemoryReport``; step: a ``StepTime``; performance: a trainer's count of its work at that step
            (``shardkit.maxtext.Performance``).
    """
    if explanation is None and explain and communication.program is not None:
        explanation = communication.explain()
    if table is None and communication.program is not None:
        module, mesh, _ = communication.program
        table = propagated_table(module, mesh)
    return {
        "name": name or communication.title,
        "mesh": mesh_data(communication),
        "communication": communication.to_dict(),
        "explanation": None if explanation is None else explanation.to_dict(),
        "table": None if table is None else [r.to_dict() for r in table.rows],
        "memory": None if memory is None else memory.to_dict(),
        "step": None if step is None else step.to_dict(),
        "performance": None if performance is None else performance.to_dict(),
    }


def mesh_data(report: CommunicationReport) -> dict[str, Any]:
    """The mesh's axes, its devices in mesh order, and where a TPU slice's chips sit (``coords`` by device id, the
    torus' ``shape`` and ``wraps``, each device's slice where there are several), for the mesh panel."""
    ids = list(report.device_ids) or list(range(report.num_devices))
    topology = report.topology
    placed = topology is not None and topology.coords and all(i in topology.coords for i in ids)
    slices = {str(i): topology.slices.get(i, 0) for i in ids} if placed else {}
    return {
        "axes": [[n, s] for n, s in report.mesh or ()],
        "device_ids": ids,
        "coords": {str(i): list(topology.coords[i]) for i in ids} if placed else None,
        "torus": list(topology.shape) if placed else None,
        "wraps": list(topology.wraps) if placed else None,
        "slices": slices if len(set(slices.values())) > 1 else None,
    }


def render(data: Mapping[str, Any], title: str) -> Page:
    """The page: ``data`` (``{"kind": "program" | "plan" | "diff", "programs": [...], ...}``) embedded once as JSON,
    the script and styles inlined."""
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    css, js = _assets()
    return Page(
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{css}</style></head>\n<body>\n"
        "<noscript>This report draws itself with JavaScript; the same numbers are in the JSON below.</noscript>\n"
        f'<script type="application/json" id="shardkit-data">{payload}</script>\n'
        f"<script>{js}</script>\n</body></html>\n"
    )


@functools.cache
def _assets() -> tuple[str, str]:
    return (_WEB / "page.css").read_text(encoding="utf-8"), (_WEB / "page.js").read_text(encoding="utf-8")


def program_page(kind: str, programs: Sequence[Mapping[str, Any]], title: str, **extra: Any) -> Page:
    """``render`` of a page of ``kind`` over ``programs`` (one, or two for a diff) and any ``extra`` sections."""
    return render({"kind": kind, "title": title, "programs": list(programs), **extra}, title)


def save(page: Page, path: str | os.PathLike | None) -> Page:
    """``page``, written to ``path`` first when one is given (what every ``to_html(path)`` returns)."""
    return page if path is None else page.save(path)
