"""XLA's HLO text (``HloModule m, entry_computation_layout=...``, what ``--xla_dump_to`` and XLA's SPMD tests
write) as a StableHLO module, through XLA's own HLO parser and HLO -> StableHLO translation, every
``sharding={...}`` kept as ``mhlo.sharding``.

XLA's HLO parser reads shardings with the sharding parser that aborts the process on malformed tile
assignments, so every ``sharding={...}`` in the text is checked by shardkit's rules first (``mhlo.parse``).
The module's partition count (``num_partitions=N`` in the header) is not carried by the translation; it is set
as ``mhlo.num_partitions``.

Examples:
    >>> text = '''HloModule m, num_partitions=8
    ... ENTRY main {
    ...   x = f32[8] parameter(0), sharding={devices=[8]<=[8]}
    ...   ROOT y = f32[8] negate(x), sharding={devices=[8]<=[8]}
    ... }'''
    >>> is_hlo_text(text)
    True
    >>> print(to_stablehlo(text, context(), "<string>"))
    module @m attributes {... mhlo.num_partitions = 8 : i32...} {
      func.func @main(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[8]<=[8]}"}) -> ...
    ...
"""

from __future__ import annotations

import re

from jaxlib.mlir import ir

from shardkit import _jaxlib
from shardkit.dialects import diagnostics, irx, mhlo

_HEADER = re.compile(r"\A\s*(?://[^\n]*\n\s*)*HloModule\s")
_PARTITIONS = re.compile(r"\bnum_partitions=(\d+)")
_REPLICAS = re.compile(r"\breplica_count=(\d+)")


def is_hlo_text(text: str) -> bool:
    """Whether ``text`` is an HLO module (its first non-comment word is ``HloModule``)."""
    return bool(_HEADER.match(text))


def shardings(text: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of every ``sharding={...}`` in HLO text, braces matched."""
    out = []
    for match in re.finditer(r"\bsharding=\{", text):
        start = match.end() - 1
        depth = 0
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        line_start = text.rfind("\n", 0, start) + 1
        out.append((text.count("\n", 0, start) + 1, start - line_start + 1, text[start : end + 1]))
    return out


class HloTextError(ValueError):
    """HLO text that does not load: ``where``, the ``line`` and ``col`` (0 when unknown) and the ``reason``."""

    def __init__(self, where: str, line: int, col: int, reason: str):
        super().__init__(f"{diagnostics.position(where, line, col)}: {reason}")
        self.where, self.line, self.col, self.reason = where, line, col, reason


_XLA_POSITION = re.compile(r"was parsing (\d+):(\d+): error: ([^\n]*)")


def to_stablehlo(text: str, context: ir.Context, where: str) -> ir.Module:
    """The StableHLO module of HLO ``text`` in ``context``; HloTextError at the line of what is wrong (a
    malformed sharding, or what XLA's parser says)."""
    for line, col, sharding in shardings(text):
        try:
            mhlo.parse(sharding)
        except ValueError as e:
            raise HloTextError(where, line, col, str(e)) from None
    header = text[: text.find("\n")] if "\n" in text else text
    try:
        data = _jaxlib.hlo_text_to_stablehlo(text)
    except Exception as e:  # jaxlib's own error type; its message names the line and column
        found = _XLA_POSITION.search(str(e))
        if found is None:
            raise HloTextError(where, 0, 0, f"XLA cannot parse the HLO module: {str(e).splitlines()[0]}") from None
        line, col, reason = found.groups()
        reason = reason.replace(", error: ", "; ")
        raise HloTextError(where, int(line), int(col), f"XLA cannot parse the HLO module: {reason}") from None
    module = ir.Module.parse(data, context)
    i32 = ir.IntegerType.get_signless(32, context)
    for key, pattern in ((irx.NUM_PARTITIONS, _PARTITIONS), (irx.NUM_REPLICAS, _REPLICAS)):
        found = pattern.search(header)
        if found is not None and key not in module.operation.attributes:
            module.operation.attributes[key] = ir.IntegerAttr.get(i32, int(found.group(1)))
    return module
