"""A pass's findings: a shardkit pass calls ``self.emit_error(op, message)``; the PassManager collects every finding
of the pass (C++ passes' warnings and remarks too, through the context's handlers) and then raises one
``PassError`` holding them all. The findings are ``dialects.diagnostics.Diagnostic``s.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from typing import Any

from jaxlib.mlir import ir

from shardkit.dialects.diagnostics import Diagnostic, captured


class PassError(ValueError):
    """A pass failed; ``pass_name`` names it and ``diagnostics`` holds its findings, located at ops."""

    def __init__(self, pass_name: str, diagnostics: Sequence[Diagnostic], what: str = "failed"):
        self.pass_name = pass_name
        self.diagnostics = tuple(diagnostics)
        self.what = what
        lines = "".join(f"\n  {d}" + "".join(f"\n    {n}" for n in d.notes) for d in self.diagnostics)
        super().__init__(f"Pass '{pass_name}' {what}:{lines}")

    def __reduce__(self):  # the isolation worker sends PassErrors back to the parent
        return type(self), (self.pass_name, self.diagnostics, self.what)


_collector: contextvars.ContextVar[list[Diagnostic] | None] = contextvars.ContextVar("shardkit_diags", default=None)


@contextlib.contextmanager
def collecting(context: ir.Context | None = None) -> Iterator[list[Diagnostic]]:
    """Collects what passes report inside the block: shardkit passes' ``emit_*`` and, given the ``context``,
    the warnings, remarks and uncaptured errors C++ code emits into it (the PassManager wraps every pass in one).
    """
    with contextlib.ExitStack() as stack:
        found = stack.enter_context(captured(context)) if context is not None else []
        token = _collector.set(found)
        try:
            yield found
        finally:
            _collector.reset(token)


def emit(diagnostic: Diagnostic, pass_name: str) -> None:
    """Records a diagnostic; outside a PassManager an error raises PassError at once."""
    found = _collector.get()
    if found is not None:
        found.append(diagnostic)
    elif diagnostic.severity == "error":
        raise PassError(pass_name, [diagnostic])


def apply_pass(p: Any, module: ir.Module) -> list[Diagnostic]:
    """Runs one pass in place and returns what it reported; raises PassError (with everything it reported)
    when it reported an error or raised ValueError, or when the IR was too deep or too big to handle."""
    with collecting(module.context) as found:
        try:
            p.apply(module)
        except PassError as e:
            raise PassError(p.name, [*found, *e.diagnostics], e.what) from None
        except ValueError as e:
            raise PassError(p.name, [*found, Diagnostic("error", str(e))]) from e
        except RecursionError:
            raise PassError(
                p.name, [*found, Diagnostic("error", "the IR is nested too deeply for this pass")]
            ) from None
        except MemoryError:
            raise PassError(p.name, [*found, Diagnostic("error", "out of memory")]) from None
    if any(d.severity == "error" for d in found):
        raise PassError(p.name, found)
    return found
