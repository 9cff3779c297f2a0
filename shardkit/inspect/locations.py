"""What an MLIR op's location says about where it came from: the jax op name and the Python line.

jax locates each op as ``loc("jit(f)/dot_general"(callsite("f"("x.py":12:8) at ...)))``: a name location
holding the op name around the call stack, innermost frame first. jaxlib's Python bindings cannot take a
location apart (no accessors for name, callsite or file locations), so this reads its printed form. Frames
inside shardkit itself (lowering, ``with_sharding_constraint``) are skipped: the user's line is the answer.
"""

from __future__ import annotations

import functools
import os
import re

from jaxlib.mlir import ir

_NAME = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"[()]')
_FILE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):\d+')
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the shardkit package


def op_name(location: ir.Location | str) -> str:
    """The jax op name a location carries (``jit(f)/dot_general``), or ``""``."""
    match = _NAME.match(str(location))
    return match.group(1) if match else ""


def source(location: ir.Location | str) -> str | None:
    """``file:line`` of the innermost Python frame outside shardkit (else the innermost one), or None."""
    return _source(str(location))


@functools.lru_cache(maxsize=4096)  # a program's ops share a few hundred locations; reports ask for each often
def _source(location: str) -> str | None:
    frames = _FILE.findall(location)
    for file, line in frames:
        if not os.path.abspath(file).startswith(_OWN):
            return f"{file}:{line}"
    return f"{frames[0][0]}:{frames[0][1]}" if frames else None


def short(source: str | None) -> str:
    """``file:line`` for a table: relative to the working directory when the file is under it."""
    if not source:
        return ""
    file, _, line = source.rpartition(":")
    relative = os.path.relpath(file) if os.path.isabs(file) else file
    return f"{file if relative.startswith('..') else relative}:{line}"
