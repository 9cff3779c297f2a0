"""Checks HLO sharding text and ``OpSharding`` protos before jaxlib sees them.

XLA's sharding parser and ``HloSharding``'s constructors check little, and what they do not check aborts the
process: ``{devices=[4,2]<=[2]}`` (sizes that disagree) parses, then aborts when its tile assignment is
read; negative dimensions corrupt the heap and crash a later, unrelated call; duplicate subgroup types or
``last_tile_dim_replicate`` with ``last_tile_dims`` fail a CHECK; huge dimensions throw ``std::bad_alloc``;
``num_devices()`` of a tuple sharding aborts. So text is read here first, with the grammar XLA prints, and
checked as XLA's ``HloSharding::Validate`` would check it against its own device count; only text that
passes reaches ``HloSharding.from_string``.

Grammar (whitespace between tokens is free)::

    sharding   := single | '{' single (',' single)* '}'                      (the second: a tuple)
    single     := '{' kind extra* '}'
    kind       := 'replicated' | 'manual' | 'unknown' | 'unreduced' | 'maximal' 'device=' INT
                | 'devices=' '[' INTS ']' assignment [subgroups]
    assignment := '<=' '[' INTS ']' ['T' '(' INTS ')']                       (iota: reshape, transpose)
                | INTS                                                       (an explicit device list)
    subgroups  := 'last_tile_dim_replicate' | 'last_tile_dims=' '{' TYPE (',' TYPE)* '}'
    extra      := 'metadata=' '{' ... '}' | 'shard_as' INT | 'shard_like' INT

Checks: every dimension is positive and the device count at most ``MAX_DEVICES``; an iota's reshape has the
tile assignment's product and its transpose is a permutation; an explicit list holds each of 0..n-1 once;
subgroup types are distinct and at most as many as the dimensions; a maximal device is in 0..MAX_DEVICES-1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from shardkit import _jaxlib
from shardkit.caching import memoize

MAX_DEVICES = 1 << 20  # far beyond any machine; bounds what a tile assignment may make XLA allocate

_TOKEN = re.compile(r'\s*(?:(-?\d+)|([A-Za-z_][A-Za-z0-9_]*=?)|("(?:[^"\\]|\\.)*")|(<=|[{}\[\](),]))')
_KINDS = ("replicated", "manual", "unknown", "unreduced")
_SUBGROUP_TYPES = ("replicated", "manual", "unreduced")


class _Tokens:
    """The text's tokens with their columns; ``error`` raises ValueError naming the column. A character no token
    starts with ends the tokens, and reading past the last one raises the error naming it (so what comes before
    it is reported first)."""

    def __init__(self, text: str):
        self.items: list[tuple[str, int]] = []
        self.bad: ValueError | None = None
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                rest = text[pos:]
                if not rest.isspace():
                    pos += len(rest) - len(rest.lstrip())
                    self.bad = ValueError(f"at column {pos + 1}: unexpected character {text[pos]!r}")
                break
            self.items.append((m.group(m.lastindex), m.start(m.lastindex)))
            pos = m.end()
        self.i = 0

    def peek(self) -> str | None:
        if self.i < len(self.items):
            return self.items[self.i][0]
        if self.bad is not None:
            raise self.bad
        return None

    def take(self) -> str:
        if self.i >= len(self.items):
            raise self.bad or ValueError("the text ends early")
        self.i += 1
        return self.items[self.i - 1][0]

    def error(self, message: str, at: int | None = None) -> ValueError:
        """ValueError at token ``at`` (default: the current one)."""
        at = self.i if at is None else at
        if at >= len(self.items):
            return ValueError(f"at the end: {message}")
        return ValueError(f"at column {self.items[at][1] + 1}: {message}")

    def expect(self, token: str) -> None:
        if self.peek() != token:
            raise self.error(f"expected {token!r}, got {self.peek() or 'the end'!r}")
        self.i += 1

    def integer(self, what: str) -> int:
        token = self.peek()
        if token is None or not token.lstrip("-").isdigit():
            raise self.error(f"expected an integer ({what}), got {token or 'the end'!r}")
        self.i += 1
        return int(token)

    def integers(self, what: str) -> list[int]:
        out = [self.integer(what)]
        while self.peek() == ",":
            self.i += 1
            out.append(self.integer(what))
        return out


@memoize(maxsize=4096)
def check_text(text: str) -> None:
    """Raises ValueError (naming the column and what is wrong) unless ``text`` is a well-formed HLO sharding."""
    tokens = _Tokens(text)
    if not tokens.items and tokens.bad is None:
        raise ValueError("the text is empty; expected a sharding such as '{replicated}'")
    tokens.expect("{")
    if tokens.peek() == "{":
        _single(tokens, lbrace_taken=False)
        while tokens.peek() == ",":
            tokens.take()
            _single(tokens, lbrace_taken=False)
        tokens.expect("}")
    elif tokens.peek() == "}":
        raise tokens.error("an empty tuple sharding has no elements")
    else:
        _single(tokens, lbrace_taken=True)
    if tokens.peek() is not None:
        raise tokens.error(f"unexpected {tokens.peek()!r} after the sharding")


def _single(tokens: _Tokens, lbrace_taken: bool) -> None:
    if not lbrace_taken:
        tokens.expect("{")
    word = tokens.peek()
    if word in _KINDS:
        tokens.take()
    elif word == "maximal":
        tokens.take()
        tokens.expect("device=")
        device = tokens.integer("the device")
        if not 0 <= device < MAX_DEVICES:
            raise tokens.error(f"maximal device {device} is not in 0..{MAX_DEVICES - 1}", at=tokens.i - 1)
    elif word == "devices=":
        start = tokens.i
        tokens.take()
        try:
            _tiled(tokens)
        except _TilingError as e:
            raise tokens.error(str(e), at=start) from None
    elif word == "mesh":
        raise tokens.error(
            "XLA's mesh-axes form ({mesh[...], [...]}) is read from HloSharding objects and OpSharding protos "
            "(XLA converts those to tiles), not from text, whose malformed forms abort XLA's parser; write the "
            "tile form ({devices=[...]...})"
        )
    else:
        raise tokens.error(
            f"expected replicated, manual, unknown, unreduced, maximal or devices=, got {word or 'the end'!r}"
        )
    seen: set[str] = set()
    while tokens.peek() in ("metadata=", "shard_as", "shard_like"):
        word = tokens.take()
        if word in seen or {word, *seen} >= {"shard_as", "shard_like"}:
            raise tokens.error(f"{word} repeats or conflicts with an earlier attribute")
        seen.add(word)
        if word == "metadata=":
            _skip_braces(tokens)
        else:
            tokens.integer(f"the {word} group")
    tokens.expect("}")


def _tiled(tokens: _Tokens) -> None:
    tokens.expect("[")
    dims = tokens.integers("a tile assignment dimension")
    tokens.expect("]")
    reshape = perm = devices = None
    if tokens.peek() == "<=":
        tokens.take()
        tokens.expect("[")
        reshape = tokens.integers("an iota reshape dimension")
        tokens.expect("]")
        if tokens.peek() == "T":
            tokens.take()
            tokens.expect("(")
            perm = tokens.integers("an iota transpose position")
            tokens.expect(")")
    else:
        devices = tokens.integers("a device")
    subgroups: list[str] = []
    if tokens.peek() == "last_tile_dim_replicate":
        tokens.take()
        subgroups = ["replicated"]
    elif tokens.peek() == "last_tile_dims=":
        tokens.take()
        tokens.expect("{")
        if tokens.peek() == "}":
            raise tokens.error("last_tile_dims={} names no subgroup type")
        subgroups.append(tokens.take())
        while tokens.peek() == ",":
            tokens.take()
            subgroups.append(tokens.take())
        tokens.expect("}")
    try:
        check_tiling(dims, devices, reshape, perm, subgroups)
    except ValueError as e:
        raise _TilingError(str(e)) from None


class _TilingError(Exception):
    """A well-formed tile assignment that is not valid; reported at its ``devices=``."""


def _skip_braces(tokens: _Tokens) -> None:
    tokens.expect("{")
    depth = 1
    while depth:
        token = tokens.take()
        depth += {"{": 1, "}": -1}.get(token, 0)


def check_tiling(
    dims: Sequence[int],
    devices: Sequence[int] | None,
    reshape: Sequence[int] | None,
    perm: Sequence[int] | None,
    subgroups: Sequence[str],
) -> None:
    """What XLA's ``HloSharding::Validate`` requires of a tile assignment over its own device count.

    ``dims``: the tile assignment's shape; ``devices``: its explicit device list, or None for the iota form
    ``reshape`` / ``perm``; ``subgroups``: the types of its trailing subgroup dimensions.
    """
    if not dims:
        raise ValueError("a tile assignment needs at least one dimension")
    if any(d < 1 for d in dims):
        raise ValueError(f"tile assignment dimensions must be positive, got {list(dims)}")
    n = math.prod(dims)
    if n > MAX_DEVICES:
        raise ValueError(f"tile assignment {list(dims)} spans {n} devices; at most {MAX_DEVICES} are supported")
    if devices is None:
        reshape = list(reshape or ())
        if not reshape or any(d < 1 for d in reshape) or math.prod(reshape) != n:
            raise ValueError(
                f"the iota reshape {reshape} must be positive sizes whose product is {n} (of {list(dims)})"
            )
        if perm is not None and sorted(perm) != list(range(len(reshape))):
            raise ValueError(f"the iota transpose {list(perm)} is not a permutation of 0..{len(reshape) - 1}")
    elif sorted(devices) != list(range(n)):
        raise ValueError(
            f"a tile assignment of shape {list(dims)} must list each device 0..{n - 1} exactly once, got "
            f"{_short(devices)}"
        )
    unknown = [t for t in subgroups if t not in _SUBGROUP_TYPES]
    if unknown:
        raise ValueError(f"unknown subgroup type {unknown[0]!r}; expected one of {', '.join(_SUBGROUP_TYPES)}")
    if len(set(subgroups)) != len(subgroups):
        raise ValueError(f"subgroup types {list(subgroups)} repeat")
    if len(subgroups) > len(dims):
        raise ValueError(f"{len(subgroups)} subgroup types for a tile assignment of rank {len(dims)}")


def _short(values: Sequence[int]) -> str:
    values = list(values)
    return str(values) if len(values) <= 16 else f"[{', '.join(map(str, values[:16]))}, ...] ({len(values)} entries)"


_TYPE_NAMES = {
    _jaxlib.OpShardingType.REPLICATED: "replicated",
    _jaxlib.OpShardingType.MANUAL: "manual",
    _jaxlib.OpShardingType.UNREDUCED: "unreduced",
}


def check_wire_format(data: bytes) -> None:
    """Raises ValueError unless ``data`` is a well-formed protobuf message at the wire level (every field a valid
    key with a known wire type whose value fits in the bytes): protobuf's own parser, as jaxlib binds it, reports
    nothing on garbage, which would read as some sharding."""
    i, n = 0, len(data)

    def varint() -> int:
        nonlocal i
        value, shift = 0, 0
        while True:
            if i >= n or shift > 63:
                raise ValueError(f"a varint runs past byte {i}")
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while i < n:
        at = i
        key = varint()
        field, wire = key >> 3, key & 7
        if field == 0 or wire not in (0, 1, 2, 5):
            raise ValueError(f"byte {at} holds no field key (field {field}, wire type {wire})")
        if wire == 0:
            varint()
        else:
            size = {1: 8, 5: 4}.get(wire) or varint()
            if i + size > n:
                raise ValueError(f"field {field} at byte {at} runs past the end")
            i += size


def check_proto(proto: Any) -> None:
    """Raises ValueError unless an ``OpSharding`` proto is well formed (its tuple elements each, when a tuple)."""
    kind = proto.type
    T = _jaxlib.OpShardingType
    if kind == T.TUPLE:
        if not proto.tuple_shardings:
            raise ValueError("an empty tuple sharding has no elements")
        for i, element in enumerate(proto.tuple_shardings):
            if element.type == T.TUPLE:
                raise ValueError(f"tuple element {i} is itself a tuple")
            try:
                check_proto(element)
            except ValueError as e:
                raise ValueError(f"tuple element {i}: {e}") from None
    elif kind == T.MAXIMAL:
        devices = list(proto.tile_assignment_devices)
        if len(devices) != 1 or not 0 <= devices[0] < MAX_DEVICES:
            raise ValueError(f"a maximal sharding needs one device in 0..{MAX_DEVICES - 1}, got {devices}")
    elif kind == T.OTHER:
        iota = list(proto.iota_reshape_dims)
        perm = list(proto.iota_transpose_perm)
        if iota and proto.tile_assignment_devices:
            raise ValueError("the proto has both iota_reshape_dims and tile_assignment_devices")
        if iota and len(perm) != len(iota):
            raise ValueError(f"iota_transpose_perm {perm} does not match iota_reshape_dims {iota}")
        subgroups = [_TYPE_NAMES.get(t, str(t)) for t in proto.last_tile_dims]
        if proto.replicate_on_last_tile_dim:
            if subgroups:
                raise ValueError("the proto has both replicate_on_last_tile_dim and last_tile_dims")
            subgroups = ["replicated"]
        devices = None if iota else list(proto.tile_assignment_devices)
        check_tiling(list(proto.tile_assignment_dimensions), devices, iota, perm or None, subgroups)
