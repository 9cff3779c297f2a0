"""Refusing MLIR text nested deep enough to overflow MLIR's recursive parser and printer.

MLIR parses and prints nested regions, attributes and types by recursion on the C++ stack; an input nested
a few thousand levels deep (``[[[[...`` in an attribute, regions inside regions) ends the process with
SIGSEGV. ``too_deep`` finds the first bracket deeper than ``MAX_DEPTH`` so that every path that parses a
user's text (shardkit-opt, ``sk.load``, shardkit-report) reports it as a located error instead. Measured with
jaxlib 0.10.2 on an 8 MiB stack: nested ``[`` crash the parser between 6,000 and 8,000 levels, nested regions
(two brackets a level) between 4,000 and 5,000 brackets, nested ``tuple<`` between 10,000 and 30,000; real
programs stay below a hundred.
"""

from __future__ import annotations

import re

import numpy as np

MAX_DEPTH = 1000
MESSAGE = f"nesting deeper than {MAX_DEPTH} levels; MLIR's recursive parser would overflow the stack"
_STRINGS_AND_COMMENTS = re.compile(rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|//[^\n]*')  # "..." with \-escapes
_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord(c) for c in "[{(<"]] = 1
_STEP[[ord(c) for c in "]})>"]] = -1


def too_deep(text: str, first_line: int = 1, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """``(line, column)`` of the first bracket nested deeper than ``limit``, or None (columns count bytes, as
    MLIR's do).

    Brackets in strings and comments, and the ``>`` of ``->`` and ``>=``, the ``<`` of ``<=``, do not count; a
    closing bracket with nothing open is ignored. With ``step`` +1 per opener and -1 per closer, such a depth
    is ``S - min(0, running min of S)`` for the prefix sums ``S``: a few numpy passes, even over megabytes.
    """
    raw = text.encode("utf-8")
    data = np.frombuffer(raw, dtype=np.uint8)
    step = _STEP[data]
    spans = np.array([m.span() for m in _STRINGS_AND_COMMENTS.finditer(raw)], dtype=np.int64).reshape(-1, 2)
    edges = np.zeros(len(raw) + 1, dtype=np.int64)
    edges[spans[:, 0]] += 1
    edges[spans[:, 1]] -= 1
    step[np.cumsum(edges[:-1]) > 0] = 0
    before, after = np.roll(data, 1), np.roll(data, -1)
    step[(data == ord(">")) & ((before == ord("-")) | (after == ord("=")))] = 0
    step[(data == ord("<")) & (after == ord("="))] = 0
    sums = np.cumsum(step, dtype=np.int64)
    over = np.flatnonzero(sums - np.minimum(np.minimum.accumulate(sums), 0) > limit)
    if not over.size:
        return None
    at = int(over[0])
    line_start = raw.rfind(b"\n", 0, at) + 1
    return first_line + raw.count(b"\n", 0, at), at - line_start + 1
