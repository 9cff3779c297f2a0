"""Running pipelines: resolve names to passes, run them in order, verify, instrument.

Every item of a pipeline becomes one pass object: a shardkit ``Pass`` (built-in, registered or plugin) or,
for any other name, an ``MlirPass`` that hands its text to jaxlib's MLIR PassManager (``canonicalize``,
``cse``, ``sdy-*``; passes that only run on functions are nested under ``func.func`` automatically).
``PassManager.run`` verifies the module after each pass, so a broken module is blamed on the pass that
broke it; it prints the IR before/after chosen passes (and after a failure), records per-pass wall times,
keeps the warnings and remarks passes emitted, and calls an optional callback before and after every pass.

Two ways jaxlib can end the process are kept out: a pass *pipeline* nested on an op it cannot run on
(``func.func(sdy-export-pipeline)``) makes MLIR's pipeline builder call ``report_fatal_error``, so anchors are
checked here before MLIR sees them; and passes that abort on inputs they do not expect run in a child
process (``isolation``), where a crash becomes a diagnostic.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import pickle
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from jaxlib.mlir import ir, passmanager
from jaxlib.mlir.dialects import stablehlo

from shardkit.dialects import context as shardkit_context
from shardkit.dialects.diagnostics import Diagnostic, from_mlir_error
from shardkit.passes import diagnostics, isolation, registry
from shardkit.passes.base import Pass
from shardkit.passes.diagnostics import PassError
from shardkit.passes.isolation import checked, time_limit
from shardkit.passes.pipeline import PassSpec, parse_pipeline, print_items


@dataclasses.dataclass(frozen=True)
class MlirPass:
    """A pass registered in jaxlib's MLIR (C++), run through ``passmanager.PassManager`` by its text."""

    text: str
    nest: bool = False  # the pass runs on func.func, so it is wrapped in func.func(...)

    @property
    def name(self) -> str:
        return parse_pipeline(self.text)[0].name

    def spec(self) -> str:
        return self.text

    def pipeline_text(self) -> str:
        return f"builtin.module(func.func({self.text}))" if self.nest else f"builtin.module({self.text})"

    @property
    def crash_prone(self) -> bool:
        """Whether this pass, or a pass of the pipeline it expands to, is known to abort on some inputs."""
        return not isolation.CRASH_PRONE.isdisjoint(_expanded_names(self.pipeline_text()))

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
        policy = isolation.current_policy()
        if policy == "all" or (policy == "crash-prone" and self.crash_prone):
            job = isolation.Job(
                self.name, self, per_function=self.nest, allow_unregistered=module.context.allow_unregistered_dialects
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
    # jax would); the stablehlo-* ones need their own call. Once per process, whatever context a module is in.
    shardkit_context()
    stablehlo.register_stablehlo_passes()


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


AnyPass = Pass | MlirPass


def resolve(spec: PassSpec, context: ir.Context | None = None) -> AnyPass:
    """The pass object for one pipeline item; unknown names raise UnknownPassError listing close matches."""
    if spec.children is None:
        cls = registry.get_pass(spec.name)
        if cls is not None:
            return cls.from_options(dict(spec.options))
    else:
        inner = [c.name for c in _leaves(spec) if registry.get_pass(c.name) is not None]
        if inner:
            raise ValueError(
                f"Pass '{inner[0]}' is a shardkit pass, which runs on the whole module; "
                f"move it out of '{spec.name}(...)'."
            )
    return MlirPass.resolve(spec, shardkit_context() if context is None else context)


def _leaves(spec: PassSpec) -> list[PassSpec]:
    return [spec] if spec.children is None else [leaf for c in spec.children for leaf in _leaves(c)]


def _picklable(p: AnyPass) -> bool:
    try:
        pickle.dumps(p)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


# phase is "before" or "after"; the callback may print, time or record.
Callback = Callable[[str, AnyPass, ir.Module], None]


class PassManager:
    """Runs a pipeline over a module in place; every run records per-pass wall times (``timing_report``).

    ``isolation`` says which passes run in a child process, where a crash becomes a PassError: one of
    ``isolation.POLICIES`` (``crash-prone`` by default). ``pass_timeout`` (seconds) stops a pass that runs
    longer, as a PassError; it runs every pass in the child (only there can one be stopped), except shardkit
    passes that cannot be pickled.

    Examples:
        >>> from shardkit.dialects import context
        >>> module = ir.Module.parse("func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {"
        ...                          " return %x : tensor<8xf32> }", context())
        >>> pm = PassManager("cse,export-gspmd")
        >>> pm.run(module)
        >>> [name for name, _ in pm.timings]
        ['cse', '(verify)', 'export-gspmd', '(verify)']
    """

    def __init__(
        self,
        pipeline: str | Sequence[AnyPass],
        *,
        verify_each: bool = True,
        print_ir_before_all: bool = False,
        print_ir_after_all: bool = False,
        print_ir_after_failure: bool = False,
        print_ir_before: Sequence[str] = (),
        print_ir_after: Sequence[str] = (),
        print_ir: Callable[[ir.Module], str] = str,
        stream: TextIO | None = None,
        callback: Callback | None = None,
        context: ir.Context | None = None,
        isolation: str | None = None,
        pass_timeout: float | None = None,
    ):
        if isinstance(pipeline, str):
            self.passes = tuple(resolve(spec, context) for spec in parse_pipeline(pipeline))
        else:
            self.passes = tuple(pipeline)
        self.isolation = isolation if isolation is None else checked(isolation)
        with time_limit(pass_timeout):  # checks it
            self.pass_timeout = pass_timeout
        self.verify_each = verify_each
        self.print_ir_before_all = print_ir_before_all
        self.print_ir_after_all = print_ir_after_all
        self.print_ir_after_failure = print_ir_after_failure
        self.print_ir_before = frozenset(print_ir_before)
        self.print_ir_after = frozenset(print_ir_after)
        self.print_ir = print_ir
        self.stream = stream
        self.callback = callback
        self.timings: list[tuple[str, float]] = []
        self.warnings: list[Diagnostic] = []

    def __str__(self) -> str:
        return print_items([p.spec() for p in self.passes])

    def __repr__(self) -> str:
        return f"PassManager({str(self)!r})"

    def _policy(self) -> str:
        if self.pass_timeout is not None:
            return "all"
        return self.isolation or isolation.current_policy()

    def isolated(self, p: AnyPass) -> bool:
        """Whether ``p`` runs in the child process under this manager's policy."""
        policy = self._policy()
        if isinstance(p, MlirPass):
            return policy == "all" or (policy == "crash-prone" and p.crash_prone)
        return policy == "all" and _picklable(p)

    def prestart(self) -> None:
        """Starts the isolation worker now when some pass will need it (it then starts while input is read)."""
        if any(self.isolated(p) for p in self.passes):
            isolation.prestart()

    def _dump(self, title: str, p: AnyPass, module: ir.Module, failed: bool = False) -> None:
        out = self.stream or sys.stderr
        failure = " Failed" if failed else ""
        out.write(f"// -----// IR Dump {title} {p.spec()}{failure} //----- //\n{self.print_ir(module)}\n")

    def _instrument(self, phase: str, p: AnyPass, module: ir.Module) -> None:
        if phase == "before" and (self.print_ir_before_all or p.name in self.print_ir_before):
            self._dump("Before", p, module)
        if phase == "after" and (self.print_ir_after_all or p.name in self.print_ir_after):
            self._dump("After", p, module)
        if self.callback is not None:
            self.callback(phase, p, module)

    def run(self, module: ir.Module) -> None:
        """Runs every pass in order; the first failure raises PassError naming the pass (the module is then
        left as that pass left it: run on a copy to keep the original). Timings and warnings of the passes
        that ran, the failed one included, stay readable after a failure."""
        self.timings, self.warnings = [], []
        with isolation.policy(self._policy()), time_limit(self.pass_timeout):
            for p in self.passes:
                self._run_one(p, module)

    def _run_one(self, p: AnyPass, module: ir.Module) -> None:
        self._instrument("before", p, module)
        start = time.perf_counter()
        try:
            if not isinstance(p, MlirPass) and self.isolated(p):
                job = isolation.Job(p.name, p, allow_unregistered=module.context.allow_unregistered_dialects)
                found = isolation.run(module, job)
            else:
                found = diagnostics.apply_pass(p, module)
        except PassError as e:
            self.timings.append((p.spec(), time.perf_counter() - start))
            self.warnings += [d for d in e.diagnostics if d.severity != "error"]
            if self.print_ir_after_failure and e.what != "crashed":  # a crashed pass left the module as it was
                self._dump("After", p, module, failed=True)
            raise
        elapsed = time.perf_counter() - start
        self.warnings += found
        self.timings.append((p.spec(), elapsed))
        if self.verify_each:
            try:
                module.operation.verify()
            except ir.MLIRError as e:
                if self.print_ir_after_failure:
                    self._dump("After", p, module, failed=True)
                raise PassError(p.name, from_mlir_error(e), "left the module invalid") from None
            finally:
                self.timings.append(("(verify)", time.perf_counter() - start - elapsed))
        self._instrument("after", p, module)

    def timing_report(self) -> str:
        """Per-pass wall time of the last run, MLIR's ``-mlir-timing`` style."""
        return format_timings(self.timings)


def format_timings(timings: Sequence[tuple[str, float]]) -> str:
    """A timing report over (pass, seconds) pairs; repeated names are added up."""
    merged: dict[str, float] = {}
    for name, seconds in timings:
        merged[name] = merged.get(name, 0.0) + seconds
    total = sum(merged.values()) or 1e-12
    rule = "===" + "-" * 60 + "===\n"
    out = io.StringIO()
    out.write(f"{rule}  shardkit pass execution timing report\n{rule}")
    out.write(f"  Total Execution Time: {total * 1e3:.3f} ms\n\n   Wall Time (ms)  ( %)   Name\n")
    for name, seconds in merged.items():
        out.write(f"  {seconds * 1e3:14.3f}  ({100 * seconds / total:5.1f}%)  {name}\n")
    out.write(f"  {total * 1e3:14.3f}  (100.0%)  Total\n")
    return out.getvalue()


def run_pipeline(module: ir.Module, pipeline: str) -> None:
    """Runs pipeline text over ``module`` in place; a failing pass raises PassError naming it.

    Examples:
        >>> from shardkit.dialects import context
        >>> module = ir.Module.parse('sdy.mesh @mesh = <["x"=8]> func.func @main(%x: tensor<8xf32> '
        ...     '{sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> { return %x : tensor<8xf32> }',
        ...     context())
        >>> run_pipeline(module, "export-gspmd")
        >>> 'mhlo.sharding = "{devices=[8]<=[8]}"' in str(module)
        True
    """
    PassManager(pipeline, context=module.context).run(module)
