"""The modelled step as a trace in Chrome's Trace Event Format (JSON), which Perfetto's UI and XProf's trace viewer
open: ``StepTime.save_trace(path)``, ``shardkit-report --trace``.

The JSON object form: ``traceEvents`` holds one process (the program on its hardware) with one thread per row of
``StepTime.timeline()`` (the compute, then each set of mesh axes), named by metadata events (``ph: "M"``:
``process_name``, ``thread_name``, ``thread_sort_index``), and one complete event (``ph: "X"``) per bar: the
compute, and each collective's hidden part (under the compute) and exposed part (after it), with the collective's
kind, bytes, runs, links and Python line in ``args``. Times are microseconds, as the format counts them; nothing is
measured: every duration is the time model's (``docs/performance_model.md``).
"""

from __future__ import annotations

import json
import os
from typing import Any

PID = 1
StepTime = Any  # timing.StepTime, which imports this module to write its trace


def events(step: StepTime) -> dict[str, Any]:
    """The trace of ``step`` as a JSON object (``traceEvents``, ``displayTimeUnit``, ``otherData``).

    Examples:
        >>> x = sk.ShapeDtypeStruct((16, 8), np.float32, sharding=NamedSharding(mesh4x2, P("x", "y")))
        >>> step = sk.jit(lambda a: a.sum()).lower(x).compile().communication().time("h100")
        >>> [(e["ph"], e["name"]) for e in events(step)["traceEvents"] if e["ph"] == "X"]
        [('X', 'compute'), ('X', "all-reduce over 'y' (exposed)"), ('X', "all-reduce over 'x' (exposed)")]
    """
    segments = step.timeline()
    compute = [s.row for s in segments if s.index is None]
    rows = dict.fromkeys([*compute, *(t.collective.over for t in step.collectives)])
    tid = {row: i + 1 for i, row in enumerate(rows)}
    out: list[dict[str, Any]] = [
        _meta("process_name", 0, {"name": f"{step.title} on {step.hardware.name} (modelled by shardkit)"}),
    ]
    for row, i in tid.items():
        label = row if row in compute else f"collectives over {row}"
        out += [_meta("thread_name", i, {"name": label}), _meta("thread_sort_index", i, {"sort_index": i})]
    for s in segments:
        event = {"ph": "X", "pid": PID, "tid": tid[s.row], "ts": s.start * 1e6, "dur": s.seconds * 1e6}
        if s.index is None:
            out.append({**event, "name": "compute", "cat": "compute", "args": _compute_args(step)})
            continue
        t = step.collectives[s.index]
        c = t.collective
        args = {
            "index": s.index,
            "kind": c.kind,
            "over": c.over,
            "operands": ", ".join(map(str, c.operands)),
            "results": ", ".join(map(str, c.results)),
            "bytes sent per device": c.wire_bytes,
            "runs": c.executions,
            "seconds per run": t.seconds,
            "links": t.links,
            "hops": t.hops,
            "op": c.op_name,
            "source": c.source,
        }
        out.append({**event, "name": f"{c.kind} over {c.over} ({s.part})", "cat": s.part, "args": args})
    other = {"step seconds": step.step, "exposed seconds": step.exposed, "hardware": step.hardware.name}
    return {"traceEvents": out, "displayTimeUnit": "ns", "otherData": other}


def save(step: StepTime, path: str | os.PathLike) -> None:
    """Writes ``events(step)`` as JSON to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(events(step), f, indent=1)


def _meta(kind: str, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "M", "pid": PID, "tid": tid, "name": kind, "args": args}


def _compute_args(step: StepTime) -> dict[str, Any]:
    return {
        "compute seconds": step.compute,
        "memory seconds": step.memory,
        "flops": step.flops,
        "bytes accessed": step.bytes_accessed,
    }
