"""The ``Pass`` base class: a frozen dataclass whose fields are its typed options.

A pass is written as (xDSL's shape)::

    @dataclasses.dataclass(frozen=True)
    class ShardLeadingDim(Pass):
        \"\"\"Shards every argument's leading dimension over one mesh axis.\"\"\"   # --help shows this line

        name = "shard-leading-dim"
        axis: str = "x"                                                   # option ``axis``

        def apply(self, module: ir.Module) -> None: ...

Option ``keep-open`` is field ``keep_open``; values are written as in MLIR pipelines: ``true``/``false``,
numbers, words, and comma-separated lists for tuple fields (``dims=0,1``). A ``Literal[...]`` field takes one of
its values (the error lists them), an ``X | None`` field is an ``X`` that may be left unset, and a field's
``metadata={"help": "..."}`` is its line in ``shardkit-opt --list-passes``. ``spec()`` prints a pass back to the
text it parses from, with only the options that differ from their defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

from jaxlib.mlir import ir

from shardkit.passes import diagnostics

_SCALARS = (bool, int, float, str)


@dataclasses.dataclass(frozen=True)
class Pass:
    """Base class of shardkit passes; subclasses are frozen dataclasses with a ``name``."""

    name: ClassVar[str]

    def apply(self, module: ir.Module) -> None:
        """Transforms ``module`` in place; findings go through ``emit_error`` (raising makes the pass fail too)."""
        raise NotImplementedError(f"Pass {type(self).__name__} does not implement apply(module).")

    # -- diagnostics ------------------------------------------------------------------------------------

    def emit_error(self, where: ir.Operation | ir.OpView | ir.Location, message: str) -> None:
        """Reports an error located at an op (``'func.func' op <message>``); the pass then fails."""
        diagnostics.emit(diagnostics.Diagnostic.at(where, message), self.name)

    def emit_warning(self, where: ir.Operation | ir.OpView | ir.Location, message: str) -> None:
        diagnostics.emit(diagnostics.Diagnostic.at(where, message, "warning"), self.name)

    # -- options ----------------------------------------------------------------------------------------

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring: what ``shardkit-opt --help`` lists."""
        doc = cls.__doc__ or ""
        return doc.strip().split("\n", 1)[0] if doc.strip() else ""

    def __post_init__(self) -> None:
        """Checks a pass built in Python against its Literal options, as ``from_options`` checks option text."""
        for key, hint in self.option_types().items():
            allowed = _kind(hint)[2]
            value = getattr(self, key.replace("-", "_"))
            values = value if isinstance(value, tuple) else (value,)
            if allowed is not None and value is not None and any(v not in allowed for v in values):
                choices = ", ".join(map(_print_scalar, allowed))
                raise ValueError(f"Option '{key}' of pass '{self.name}' expects one of {choices}, got {value!r}.")

    @classmethod
    def option_types(cls) -> dict[str, type]:
        """Option name (``keep-open``) -> field type (bool, int, float, str, a tuple of one of them, a Literal of
        their values, or any of these ``| None``)."""
        return _option_types(cls)

    @classmethod
    def option_help(cls) -> dict[str, str]:
        """Option name -> its help line: the field's ``metadata["help"]`` (``dataclasses.field(default=...,
        metadata={"help": "..."})``), empty when it has none."""
        return {f.name.replace("_", "-"): f.metadata.get("help", "") for f in dataclasses.fields(cls)}

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Pass:
        """The pass configured from option text, e.g. ``{"keep-open": "true"}``; errors name the option."""
        known = cls.option_types()
        kwargs = {}
        for key, text in options.items():
            if key not in known:
                choices = ", ".join(known) or "none"
                raise ValueError(f"Pass '{cls.name}' has no option '{key}'; its options are: {choices}.")
            kwargs[key.replace("-", "_")] = _parse_value(cls.name, key, known[key], text)
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as e:
            raise ValueError(f"Pass '{cls.name}' rejected its options {dict(options)}: {e}") from e

    def options(self) -> dict[str, str]:
        """The options that differ from their defaults, as text."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.default is dataclasses.MISSING or value != f.default:
                out[f.name.replace("_", "-")] = _print_value(value)
        return out

    def spec(self) -> str:
        """``name{opt=value ...}``: the text that parses back to this pass."""
        opts = " ".join(f"{k}={v}" for k, v in self.options().items())
        return f"{self.name}{{{opts}}}" if opts else self.name


@functools.cache
def _option_types(cls: type[Pass]) -> dict[str, type]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"Pass class {cls.__name__} must be a @dataclasses.dataclass(frozen=True).")
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        try:
            _kind(hint)
        except TypeError:
            raise TypeError(
                f"Option {f.name!r} of pass '{cls.name}' has type {hint}; options must be bool, int, float, str, "
                "tuple[<one of those>, ...], a Literal of one of those, or any of these | None."
            ) from None
        out[f.name.replace("_", "-")] = hint
    return out


def _kind(hint: Any) -> tuple[type, bool, tuple[Any, ...] | None]:
    """(scalar type, whether a list, the allowed values of a Literal or None) of an option's type; ``X | None``
    reads as ``X`` (None is the unset default). TypeError for any other type."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        if len(args) != 1:
            raise TypeError(hint)
        return _kind(args[0])
    if typing.get_origin(hint) is tuple:
        kind, is_list, allowed = _kind(args[0])
        if is_list or len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(hint)
        return kind, True, allowed
    if typing.get_origin(hint) is typing.Literal:
        kinds = {type(a) for a in args}
        if len(kinds) != 1 or not kinds <= set(_SCALARS):
            raise TypeError(hint)
        return kinds.pop(), False, tuple(args)
    if hint not in _SCALARS:
        raise TypeError(hint)
    return hint, False, None


def _parse_scalar(kind: type, text: str) -> Any:
    if kind is bool:
        if text not in ("true", "false", "1", "0"):
            raise ValueError(text)
        return text in ("true", "1")
    if kind is str and len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return kind(text)


def _parse_value(pass_name: str, key: str, hint: Any, text: str) -> Any:
    kind, is_list, allowed = _kind(hint)
    try:
        if is_list:
            values = tuple(_parse_scalar(kind, t.strip()) for t in text.split(",") if t.strip())
        else:
            values = (_parse_scalar(kind, text),)
        if allowed is not None and any(v not in allowed for v in values):
            raise ValueError(text)
        return values if is_list else values[0]
    except ValueError:
        if allowed is not None:
            what = "one of " + ", ".join(map(_print_scalar, allowed))
            what = f"a list of {what}" if is_list else what
        else:
            what = (
                f"a list of {kind.__name__}" if is_list else ("true or false" if kind is bool else f"a {kind.__name__}")
            )
        raise ValueError(f"Option '{key}' of pass '{pass_name}' expects {what}, got '{text}'.") from None


def _print_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and (not value or any(c in value for c in ' ,{}()"=')):
        return '"' + value + '"'
    return str(value)


def _print_value(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(map(_print_scalar, value))
    return _print_scalar(value)
