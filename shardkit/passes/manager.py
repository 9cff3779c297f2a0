"""Running pipelines: resolve names to passes, run them in order, verify, instrument.

Every item of a pipeline becomes one pass object: a shardkit ``Pass`` (built-in, registered or plugin) or,
for any other name, an ``MlirPass`` (``mlir_pipeline``) that hands its text to jaxlib's MLIR PassManager.
``PassManager.run`` verifies the module after each pass, so a broken module is blamed on the pass that
broke it; it prints the IR where an ``IRPrinting`` asks, records per-pass wall times, keeps the warnings and
remarks passes emitted, and calls an optional callback before and after every pass. Passes that abort on
inputs they do not expect run in a child process (``isolation``), where a crash becomes a diagnostic.
"""

from __future__ import annotations

import dataclasses
import io
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from jaxlib.mlir import ir

from shardkit.dialects import context as shardkit_context
from shardkit.dialects.diagnostics import Diagnostic, from_mlir_error
from shardkit.passes import diagnostics, isolation, registry
from shardkit.passes.base import Pass
from shardkit.passes.diagnostics import PassError
from shardkit.passes.isolation import checked, time_limit
from shardkit.passes.mlir_pipeline import MlirPass
from shardkit.passes.pipeline import PassSpec, parse_pipeline, print_items

AnyPass = Pass | MlirPass


def resolve(spec: PassSpec, context: ir.Context | None = None) -> AnyPass:
    """The pass object for one pipeline item; unknown names raise UnknownPassError listing close matches."""
    if spec.children is None:
        cls = registry.get_pass(spec.name)
        if cls is not None:
            return cls.from_options(dict(spec.options))
    else:
        inner = [c.name for c in spec.leaves() if registry.get_pass(c.name) is not None]
        if inner:
            raise ValueError(
                f"Pass '{inner[0]}' is a shardkit pass, which runs on the whole module; "
                f"move it out of '{spec.name}(...)'."
            )
    return MlirPass.resolve(spec, shardkit_context() if context is None else context)


# phase is "before" or "after"; the callback may print, time or record.
Callback = Callable[[str, AnyPass, ir.Module], None]


@dataclasses.dataclass(frozen=True)
class IRPrinting:
    """Where a PassManager prints the module, as mlir-opt's ``--mlir-print-ir-*`` options ask: before or after
    every pass (``before_all``, ``after_all``), before or after the passes named in ``before`` / ``after``, and
    after a pass that failed (``after_failure``). ``render`` makes the text (MLIR's default print: ``str``) and
    ``stream`` takes it (stderr when None).

    Examples:
        >>> IRPrinting(after=["cse"]).after
        frozenset({'cse'})
    """

    before_all: bool = False
    after_all: bool = False
    after_failure: bool = False
    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    render: Callable[[ir.Module], str] = str
    stream: TextIO | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "before", frozenset(self.before))
        object.__setattr__(self, "after", frozenset(self.after))

    def before_pass(self, p: AnyPass, module: ir.Module) -> None:
        if self.before_all or p.name in self.before:
            self._dump("Before", p, module)

    def after_pass(self, p: AnyPass, module: ir.Module) -> None:
        if self.after_all or p.name in self.after:
            self._dump("After", p, module)

    def after_failed(self, p: AnyPass, module: ir.Module) -> None:
        if self.after_failure:
            self._dump("After", p, module, " Failed")

    def _dump(self, title: str, p: AnyPass, module: ir.Module, failure: str = "") -> None:
        out = self.stream or sys.stderr
        out.write(f"// -----// IR Dump {title} {p.spec()}{failure} //----- //\n{self.render(module)}\n")


class PassManager:
    """Runs a pipeline over a module in place; every run records per-pass wall times (``timing_report``).

    ``isolation`` says which passes run in a child process, where a crash becomes a PassError: one of
    ``isolation.POLICIES`` (``crash-prone`` by default). ``pass_timeout`` (seconds) stops a pass that runs
    longer, as a PassError; it runs every pass in the child (only there can one be stopped), except shardkit
    passes that cannot be pickled. ``ir_printing`` says where the module is printed (``IRPrinting``; nowhere by
    default).

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
        ir_printing: IRPrinting | None = None,
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
        self.ir_printing = IRPrinting() if ir_printing is None else ir_printing
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
        return isolation.isolated(p, self._policy())

    def prestart(self) -> None:
        """Starts the isolation worker now when some pass will need it (it then starts while input is read)."""
        if any(self.isolated(p) for p in self.passes):
            isolation.prestart()

    def _instrument(self, phase: str, p: AnyPass, module: ir.Module) -> None:
        if phase == "before":
            self.ir_printing.before_pass(p, module)
        else:
            self.ir_printing.after_pass(p, module)
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
        try:  # an MlirPass isolates itself (its apply asks the same rule), so it does inside a shardkit pass too
            if not isinstance(p, MlirPass) and self.isolated(p):
                job = isolation.Job(p.name, p, allow_unregistered=module.context.allow_unregistered_dialects)
                found = isolation.run(module, job)
            else:
                found = diagnostics.apply_pass(p, module)
        except PassError as e:
            self.timings.append((p.spec(), time.perf_counter() - start))
            self.warnings += [d for d in e.diagnostics if d.severity != "error"]
            if e.what != "crashed":  # a crashed pass left the module as it was
                self.ir_printing.after_failed(p, module)
            raise
        elapsed = time.perf_counter() - start
        self.warnings += found
        self.timings.append((p.spec(), elapsed))
        if self.verify_each:
            try:
                module.operation.verify()
            except ir.MLIRError as e:
                self.ir_printing.after_failed(p, module)
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
