"""The tools' input: reading it (MLIR text or bytecode, or XLA's HLO text), cutting it into ``// -----`` chunks
(shardkit-opt's ``--split-input-file``) and parsing each (``dialects.parsing``, in the isolation worker where
parsing may crash), so shardkit-opt and shardkit-report read the same inputs with the same errors."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from jaxlib.mlir import ir

from shardkit.dialects import parsing
from shardkit.dialects.diagnostics import Diagnostic
from shardkit.passes import isolation

BYTECODE_MAGIC = b"ML\xefR"
_SPLIT = re.compile(r"^// -----", re.MULTILINE)


class InputError(ValueError):
    """The input cannot be read as MLIR text or bytecode."""


@dataclasses.dataclass(frozen=True)
class Chunk:
    """One unit of work: MLIR text whose first line is line ``first_line`` of the file, or bytecode."""

    text: str
    first_line: int = 1
    bytecode: bytes | None = None


def read(path: str, stdin: Any) -> bytes:
    """The bytes of the input file, or of ``stdin`` for ``-`` (OSError when it cannot be read)."""
    if path != "-":
        with open(path, "rb") as f:
            return f.read()
    stream = getattr(stdin, "buffer", stdin)
    data = stream.read()
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data


def decode(data: bytes, name: str) -> str | bytes:
    """The input as text, or as bytes when it is MLIR bytecode; InputError when it is neither."""
    if data.startswith(BYTECODE_MAGIC):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(
            f"input '{name}' is neither UTF-8 text nor MLIR bytecode: byte 0x{data[e.start]:02x} "
            f"at line {line}, column {col} is not valid UTF-8"
        ) from None


def chunks(source: str | bytes, split: bool) -> list[Chunk]:
    """Each ``// -----`` chunk (when ``split``) with the number of its first line, or the whole input."""
    if isinstance(source, bytes):
        return [Chunk("", 1, source)]
    if not split:
        return [Chunk(source)]
    found, start, line = [], 0, 1
    for match in _SPLIT.finditer(source):
        found.append(Chunk(source[start : match.start()], line))
        line += source.count("\n", start, match.start())
        end = source.find("\n", match.start())
        start = len(source) if end < 0 else end + 1
        line += 1
    found.append(Chunk(source[start:], line))
    return found


def parse(
    ctx: ir.Context, chunk: Chunk, name: str, path: str | None = None
) -> tuple[ir.Module | None, list[Diagnostic]]:
    """The chunk's module (None when it does not parse) and the diagnostics parsing it reported, named ``name``;
    ``path``: the file the chunk is the whole of, whose name its locations then carry."""
    data = chunk.text if chunk.bytecode is None else chunk.bytecode
    return isolation.parse(parsing.Input(data, name, chunk.first_line, path), ctx)
