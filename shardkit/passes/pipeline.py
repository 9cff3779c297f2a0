"""Pipeline text, as mlir-opt and xdsl-opt write it, parsed into ``PassSpec`` trees and printed back.

Grammar::

    pipeline := item (',' item)*
    item     := NAME ('{' option* '}')?          # a pass and its options
              | NAME '(' pipeline ')'            # an anchor: builtin.module(...), func.func(...)
    option   := KEY ('=' VALUE)?                 # options are separated by spaces; KEY alone means true
    VALUE    := '"' ... '"' | '{' ... '}' | text without spaces or '}'   # lists are comma-separated: dims=0,1

``builtin.module(...)`` around a whole pipeline is the module itself and is dropped; other anchors
(``func.func(cse)``) are handed to MLIR as they are. ``print_pipeline(parse_pipeline(t))`` is the normalised
text: options in the order given, single spaces, no ``builtin.module``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence


class PipelineSyntaxError(ValueError):
    """Malformed pipeline text; the message shows the text and a caret under the offending column."""

    def __init__(self, text: str, pos: int, problem: str):
        self.text, self.pos = text, pos
        super().__init__(f"Invalid pass pipeline at column {pos + 1}: {problem}.\n  {text}\n  {' ' * pos}^")


@dataclasses.dataclass(frozen=True)
class PassSpec:
    """One pipeline item: ``name{k=v}`` (``children`` is None) or an anchor ``name(children)``."""

    name: str
    options: tuple[tuple[str, str], ...] = ()
    children: tuple[PassSpec, ...] | None = None

    def leaves(self) -> list[PassSpec]:
        """The passes under this item, anchors looked through (itself, for a pass)."""
        return [self] if self.children is None else [leaf for c in self.children for leaf in c.leaves()]

    def __str__(self) -> str:
        if self.children is not None:
            return f"{self.name}({_join(self.children)})"
        opts = " ".join(f"{k}={v}" for k, v in self.options)
        return f"{self.name}{{{opts}}}" if opts else self.name


def print_pipeline(specs: tuple[PassSpec, ...] | list[PassSpec]) -> str:
    """The normal text of a pipeline; ``parse_pipeline`` reads it back to the same specs."""
    return print_items([str(s) for s in specs])


def print_items(items: Sequence[str]) -> str:
    """Pipeline text from the texts of its items (``cse``, ``func.func(cse)``)."""
    text = ",".join(items)
    if len(items) == 1 and items[0].startswith("builtin.module("):
        return f"builtin.module({text})"  # a nested module: the outer one would be dropped when read back
    return text


def _join(specs: tuple[PassSpec, ...] | list[PassSpec]) -> str:
    return ",".join(map(str, specs))


def parse_pipeline(text: str) -> tuple[PassSpec, ...]:
    """Parses pipeline text.

    Examples:
        >>> print_pipeline(parse_pipeline("builtin.module(propagate{keep-open}, func.func(cse))"))
        'propagate{keep-open=true},func.func(cse)'
    """
    parser = _Parser(text)
    specs = parser.pipeline()
    if parser.pos != len(text):
        raise PipelineSyntaxError(text, parser.pos, f"unexpected '{text[parser.pos]}'")
    if len(specs) == 1 and specs[0].name == "builtin.module" and specs[0].children is not None:
        return specs[0].children
    return specs


_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


class _Parser:
    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = f"'{self.peek()}'" if self.peek() else "the end"
            raise PipelineSyntaxError(self.text, self.pos, f"expected '{char}', found {found}")
        self.pos += 1

    def name(self, what: str) -> str:
        self.skip()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in _NAME_CHARS:
            self.pos += 1
        if start == self.pos:
            found = f"'{self.text[start]}'" if start < len(self.text) else "the end"
            raise PipelineSyntaxError(self.text, start, f"expected a {what}, found {found}")
        return self.text[start : self.pos]

    def pipeline(self) -> tuple[PassSpec, ...]:
        if self.peek() in ("", ")"):
            return ()
        specs = [self.item()]
        while self.peek() == ",":
            self.pos += 1
            specs.append(self.item())
        return tuple(specs)

    def item(self) -> PassSpec:
        name = self.name("pass name")
        if self.peek() == "(":
            self.pos += 1
            children = self.pipeline()
            self.expect(")")
            return PassSpec(name, (), children)
        options: list[tuple[str, str]] = []
        if self.peek() == "{":
            self.pos += 1
            while self.peek() not in ("}", ""):
                key = self.name("option name")
                value = "true"
                if self.peek() == "=":
                    self.pos += 1
                    value = self.value()
                options.append((key, value))
            self.expect("}")
        return PassSpec(name, tuple(options))

    def value(self) -> str:
        self.skip()
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == '"':
                end = self.text.find('"', self.pos + 1)
                if end < 0:
                    raise PipelineSyntaxError(self.text, self.pos, "unterminated string")
                self.pos = end + 1
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                if depth == 0:
                    break
                depth -= 1
            elif c.isspace() and depth == 0:
                break
            self.pos += 1
        if start == self.pos:
            raise PipelineSyntaxError(self.text, start, "expected an option value")
        return self.text[start : self.pos]
