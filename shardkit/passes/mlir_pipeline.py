"""jaxlib's MLIR passes: how a pipeline item becomes one (``MlirPass``), and what MLIR says of a pipeline.

Any name that is not a shardkit pass is handed to jaxlib's MLIR PassManager by its text (``canonicalize``,
``cse``, ``sdy-*``); a pass that runs only on functions is nested under ``func.func`` automatically. MLIR's
Python bindings cannot list passes or their options, so what is known of one is read from MLIR's own print of
a pipeline: whether a name is a pass (``is_mlir_pass``), its options with their defaults (``printed_pass``),
the passes a pipeline expands to (for the isolation policy), and the op a pass is restricted to.

MLIR's pipeline builder ends the process (``report_fatal_error``) for a pass *pipeline* nested on an op it
cannot run on (``func.func(sdy-export-pipeline)``), so anchors are checked here before MLIR sees them
(``_check_anchors``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import sys
import tempfile
from collections.abc import Iterator

from jaxlib.mlir import ir, passmanager
from jaxlib.mlir.dialects import mhlo, stablehlo

from shardkit.dialects import context as shardkit_context
from shardkit.dialects.diagnostics import from_mlir_error
from shardkit.passes import diagnostics, isolation, registry
from shardkit.passes.diagnostics import PassError
from shardkit.passes.pipeline import PassSpec, parse_pipeline


@dataclasses.dataclass(frozen=True)
class MlirPass:
    """A pass registered in jaxlib's MLIR (C++), run through ``passmanager.PassManager`` by its text."""

    text: str
    nest: bool = False  # the pass runs on func.func, so it is wrapped in func.func(...)

    @property
    def name(self) -> str:
        """The pass's name (``func.func(cse)``: ``cse``); for a text of several passes their names
        (``cse,canonicalize``), so a report names the whole pipeline, not its first pass."""
        return ",".join(leaf.name for spec in parse_pipeline(self.text) for leaf in spec.leaves())

    def spec(self) -> str:
        return self.text

    def pipeline_text(self) -> str:
        return f"builtin.module(func.func({self.text}))" if self.nest else f"builtin.module({self.text})"

    @property
    def crash_prone(self) -> bool:
        """Whether this pass, or a pass of the pipeline it expands to, is known to abort on some inputs."""
        return not isolation.CRASH_PRONE.isdisjoint(_expanded_names(self.pipeline_text()))

    def steps(self) -> tuple[MlirPass, ...]:
        """The passes this one runs, each alone (``func.func(a,b)`` as ``func.func(a)``, ``func.func(b)``), when
        they are several: the items of its text, or what a registered pipeline expands to; () when MLIR cannot
        say. Passes MLIR does not register on their own (``sdy-save-module``) are left out: they cannot run alone.
        The isolation worker runs a crashed pipeline again step by step to name the pass that crashed."""
        printed = _expansion(self.pipeline_text())
        if printed is None:
            return ()
        steps = []
        for item in parse_pipeline(printed):
            for leaf in item.children if item.children is not None else (item,):
                if is_mlir_pass(leaf.name):
                    steps.append(MlirPass(f"{item.name}({leaf})" if leaf is not item else str(leaf)))
        return tuple(steps) if len(steps) > 1 else ()

    @classmethod
    def resolve(cls, spec: PassSpec, context: ir.Context) -> MlirPass:
        """The MLIR pass for ``spec``, nested when MLIR says it must be; UnknownPassError naming what MLIR
        does not know (for an anchor such as ``func.func(...)``, the unknown pass inside it)."""
        _register_mlir_passes()
        if spec.children is not None:
            _check_anchors(spec, context)
        text = str(spec)
        for candidate in (cls(text), cls(text, nest=True)):
            try:
                _parse(candidate.pipeline_text(), context)
                return candidate
            except ValueError as e:
                message = str(e)
                unknown = _UNREGISTERED.search(message)
                if unknown is not None:
                    raise registry.UnknownPassError(
                        unknown.group(1), [*registry.pass_names(), *registry.MLIR_PASSES]
                    ) from None
                if "did you intend to nest" not in message:
                    raise ValueError(f"MLIR pass '{spec.name}' rejected its options: {_first_line(message)}") from None
        raise ValueError(f"MLIR pass '{spec.name}' cannot run on a module nor on its functions.")

    def apply(self, module: ir.Module) -> None:
        refused = isolation.entry_error(module, _expanded_names(self.pipeline_text()) | {self.name})
        if refused is not None:  # Shardy would abort: say why, located, instead of reporting a crash
            diagnostics.emit(refused, self.name)
            return
        if isolation.isolated(self):
            job = isolation.Job(
                self.name,
                self,
                per_function=self.nest,
                allow_unregistered=module.context.allow_unregistered_dialects,
                verify=False,  # MLIR's PassManager verifies after every pass
            )
            for found in isolation.run(module, job):
                diagnostics.emit(found, self.name)
        else:
            self.run_on(module.operation)

    def run_on(self, op: ir.Operation) -> None:
        """Runs in this process on ``op``: the module, or (for a nested pass) one of its functions."""
        text = self.pipeline_text() if op.name == "builtin.module" else f"{op.name}({self.text})"
        try:
            with op.context:
                passmanager.PassManager.parse(text).run(op)
        except ir.MLIRError as e:
            raise PassError(self.name, from_mlir_error(e)) from None


@functools.cache
def _register_mlir_passes() -> None:
    # Building shardkit's context registers MLIR's core and Shardy passes (with jax's dialects, as importing
    # jax would); the stablehlo-* and mhlo-* ones need their own calls (jaxlib 0.11 moved mhlo-flatten-tuple from
    # the first set to the mhlo one). Once per process, whatever context a module is in.
    shardkit_context()
    stablehlo.register_stablehlo_passes()
    mhlo.register_mhlo_passes()


_UNREGISTERED = re.compile(r"'([^']+)' does not refer to a registered pass")


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), text)


def _parse(pipeline: str, context: ir.Context) -> passmanager.PassManager:
    """MLIR's parse of ``pipeline``; its complaints, which pass pipelines print straight to stderr, go into the
    ValueError instead."""
    said: list[str] = []
    with context, _stderr_captured(said):
        try:
            return passmanager.PassManager.parse(pipeline)
        except ValueError as e:
            error = e
    words = " ".join(line.strip() for line in said if line.strip())
    raise ValueError(f"{words}\n{error}" if words else str(error)) from None


@contextlib.contextmanager
def _stderr_captured(lines: list[str]) -> Iterator[None]:
    """Redirects file descriptor 2 (where C++ code writes) to a file for the block, then appends its lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines += sink.read().decode("utf-8", "replace").splitlines()


@functools.lru_cache(maxsize=256)
def _printed(pipeline: str) -> str:
    """MLIR's own print of ``pipeline``: options with their defaults, pass pipelines expanded; ValueError if
    MLIR rejects it. Only for pipelines MLIR reports errors on (see ``_check_anchors``)."""
    _register_mlir_passes()
    return str(_parse(pipeline, shardkit_context()))


def _expansion(pipeline: str) -> str | None:
    try:
        return _printed(pipeline)
    except ValueError:
        return None


_PASS_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def is_mlir_pass(name: str) -> bool:
    """Whether jaxlib registers an MLIR pass or pass pipeline called ``name``."""
    if not _PASS_NAME.fullmatch(name):
        return False
    try:
        _printed(f"builtin.module({name})")
    except ValueError as e:
        return _UNREGISTERED.search(str(e)) is None  # a pass that needs options or nesting is still a pass
    return True


def printed_pass(text: str) -> str | None:
    """One MLIR pass as MLIR prints it, every option spelled out (``canonicalize{max-iterations=10 ...}``;
    nested ``func.func(...)`` when it runs on functions; a pipeline as the passes it runs), None if unknown."""
    if not is_mlir_pass(parse_pipeline(text)[0].name):
        return None
    for pipeline in (f"builtin.module({text})", f"builtin.module(func.func({text}))"):
        try:
            return " ".join(_printed(pipeline)[len("builtin.module(") : -1].split())
        except ValueError as e:
            if "did you intend to nest" not in str(e):
                return None
    return None


def _expanded_names(pipeline: str) -> frozenset[str]:
    return frozenset(_top_level_items(_expansion(pipeline) or "", recurse=True))


def _top_level_items(printed: str, recurse: bool = False) -> list[str]:
    """The pass names in a printed pipeline, options dropped: those directly inside its outer anchor, or all."""
    names, depth, token, braces = [], 0, [], 0
    for c in printed:
        if braces or c == "{":
            braces += {"{": 1, "}": -1}.get(c, 0)
            continue
        if c in "(),":
            if token and c != "(" and (depth == 1 or recurse):
                names.append("".join(token).strip())
            token = []
            depth += {"(": 1, ")": -1}.get(c, 0)
            continue
        token.append(c)
    return [n for n in names if n]


def _check_anchors(spec: PassSpec, context: ir.Context, anchor: str | None = None) -> None:
    r"""Rejects a pass nested on an op it cannot run on, naming both, before MLIR sees it.

    MLIR reports a misplaced *pass* as an ordinary (if cryptic) error, but a *pipeline* adds its passes from C++
    and calls ``report_fatal_error`` on one that does not fit the anchor. So every pipeline under an anchor other
    than ``builtin.module`` is expanded at the top level (where it is built for) and each of its passes is
    tried on the anchor alone, where MLIR answers with an error instead.
    """
    anchor = spec.name if spec.children is not None else anchor
    for child in spec.children or ():
        if child.children is not None:
            _check_anchors(child, context, child.name)
            continue
        if anchor == "builtin.module" or not is_mlir_pass(child.name):
            continue
        printed = _expansion(f"builtin.module({child.name})")
        items = _top_level_items(printed) if printed is not None else [child.name]
        what = "Pass" if items == [child.name] else "Pass pipeline"
        for item in items:
            op = _misfit(anchor, item)
            if op is not None:
                its = "it" if item == child.name else f"its pass '{item}'"
                raise ValueError(
                    f"{what} '{child.name}' cannot run nested on '{anchor}': {its} runs on '{op}'. Put it at the "
                    f"top level of the pipeline, outside '{anchor}(...)'."
                )


def _misfit(anchor: str, item: str) -> str | None:
    """The op ``item`` is restricted to when that is not ``anchor``; None when it can run there. A nested anchor
    inside a pipeline may nest deeper; a plain pass is tried alone on the anchor, where MLIR answers with an error."""
    if "(" in item:
        return None
    try:
        _printed(f"builtin.module({anchor}({item}))")
    except ValueError as e:
        restricted = _RESTRICTED.search(str(e))
        return restricted.group(1) if restricted else None  # other errors (options) are MLIR's to report
    return None


_RESTRICTED = re.compile(r"restricted to '([^']+)'")
