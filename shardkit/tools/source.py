"""shardkit-opt's input: reading it (text or MLIR bytecode) and cutting it into ``// -----`` chunks (each is
checked with ``dialects.nesting`` before MLIR parses it)."""

from __future__ import annotations

import dataclasses
import re

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
