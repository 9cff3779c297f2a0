"""shardkit-opt: runs a pass pipeline over a StableHLO/sdy/mhlo .mlir file and prints the result.

A drop-in for mlir-opt and sdy_opt in RUN lines: ``shardkit-opt [FILE|-] [-p PIPELINE | -PASS[=OPTIONS]...]
[-o OUT] [--split-input-file] [--verify-diagnostics] ...`` (``--help`` lists every option, ``--list-passes``
every pass; docs/shardkit-opt.md describes both). Problems in the input are diagnostics printed as mlir-opt
prints them (``file:line:col: error: ...``, the source line, a caret) with exit code 1; problems with the
command line or files are one line ``shardkit-opt: error: ...`` with exit code 1; never a traceback.
A pass that crashes (jaxlib's C++ passes abort on some inputs) runs in a child process and is reported as
``pass 'X' crashed (SIGABRT) on 'func.func' @main`` at that function; so does parsing input that jaxlib's
verifiers are known to crash on (``isolation.CRASH_PRONE_SYNTAX``), and then every pass over it. Output that
would not parse back is reported instead of written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import sys
from collections.abc import Iterator, Sequence
from typing import BinaryIO, TextIO

from jaxlib.mlir import ir

from shardkit.dialects import context, diagnostics, irx, parsing
from shardkit.dialects.diagnostics import Diagnostic
from shardkit.passes import IRPrinting, PassError, PassManager, isolation
from shardkit.passes.manager import format_timings
from shardkit.tools import catalog, cli, expected, source
from shardkit.tools.main import ToolMain
from shardkit.tools.render import SourceMgr

_PARSER_BUFFER = re.compile(r'"-":(?=\d+:\d+)')
_OP_TEXT = re.compile(r'(%[^=]+ = )?"?[A-Za-z_][\w$]*\.[\w$.]+"?[ (<{]')  # "%1 = func.call @f(...", '"a.b"(...'
_AT_OP = re.compile(r"'([\w$.]+)' op ")  # MLIR's emitError at an op: "'func.func' op arg 0 - ..."
_VERBOSITY = {"errors": ("error",), "warnings": ("error", "warning"), "remarks": ("error", "warning", "remark")}


@dataclasses.dataclass
class _Result:
    """What one chunk produced: its diagnostics, and its output unless it failed."""

    found: list[Diagnostic]
    output: str | bytes | None = None


class OptMain(ToolMain):
    """The tool as an object, so tests drive it in-process: ``OptMain(["x.mlir", "-p", "cse"]).run()``.

    Its argv goes through ``cli.normalize`` first (mlir-opt's one-dash options and pass flags). ``--help`` exits
    (SystemExit 0) from the constructor, as argparse does; every other outcome is the exit code ``run`` returns.
    """

    def __init__(
        self,
        argv: Sequence[str] | None = None,
        *,
        stdin: TextIO | BinaryIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ):
        self.usage_error: str | None = None
        self.name = "<stdin>"
        self.pass_flags: list[str] = []
        tokens: list[str] = []
        try:
            tokens, self.pass_flags = cli.normalize(sys.argv[1:] if argv is None else argv, catalog.is_pass)
        except cli.UsageError as e:
            self.usage_error = str(e)
        epilog = catalog.help_epilog() if "--help" in tokens else ""  # (it loads every pass and plugin)
        try:  # the streams are set before the arguments are parsed, so a usage error can be reported
            super().__init__(cli.arg_parser(epilog), tokens, stdin=stdin, stdout=stdout, stderr=stderr)
        except cli.UsageError as e:
            self.usage_error = self.usage_error or str(e)

    def run(self) -> int:
        if self.usage_error is not None:
            return self.error(self.usage_error)
        args = self.args
        if args.list_passes:
            self.stdout.write(catalog.list_passes())
            return 0
        if self.pass_flags and args.pass_pipeline:
            return self.error(
                "-p/--pass-pipeline cannot be combined with passes given as flags "
                f"({', '.join('-' + p for p in self.pass_flags)})"
            )
        if args.emit_bytecode and args.output == "-" and not hasattr(self.stdout, "buffer"):
            return self.error("--emit-bytecode writes bytes; give -o FILE (this stdout takes text only)")
        name = self.name = "<stdin>" if args.input == "-" else args.input
        try:
            data = source.read(args.input, self.stdin)
            text = source.decode(data, name)
        except OSError as e:
            return self.error(f"could not open input file '{args.input}': {e.strerror}")
        except source.InputError as e:
            return self.error(str(e))
        ctx = context()
        with self._context_flags(ctx), isolation.policy(args.isolate_passes):
            try:
                pm = self._pass_manager(ctx)
            except ValueError as e:  # syntax, unknown pass, bad option, misplaced pipeline, broken plugin
                return self.error(str(e))
            pm.prestart()
            if args.dump_pass_pipeline:
                self.stderr.write(catalog.dump_pipeline(pm))
            return self._run_chunks(ctx, pm, text, name)

    @contextlib.contextmanager
    def _context_flags(self, ctx: ir.Context) -> Iterator[None]:
        """The context as the flags ask, for this run only (the context is shared with the rest of shardkit)."""
        allowed = ctx.allow_unregistered_dialects
        ctx.allow_unregistered_dialects = allowed or self.args.allow_unregistered_dialect
        if self.args.mlir_disable_threading:
            ctx.enable_multithreading(False)
        try:
            yield
        finally:
            ctx.allow_unregistered_dialects = allowed
            if self.args.mlir_disable_threading:
                ctx.enable_multithreading(True)  # as jax made it (it gives its contexts a thread pool)

    def _pass_manager(self, ctx: ir.Context) -> PassManager:
        args = self.args
        return PassManager(
            args.pass_pipeline or ",".join(self.pass_flags),
            context=ctx,
            verify_each=args.verify_each != "false",
            ir_printing=IRPrinting(
                before_all=args.print_ir_before_all,
                after_all=args.print_ir_after_all,
                after_failure=args.print_ir_after_failure,
                render=self._print,
                stream=self.stderr,
            ),
            pass_timeout=args.pass_timeout,  # isolation: the run's policy (``run``), "all" for crash-prone input
        )

    def _print(self, module: ir.Module) -> str:
        args = self.args
        text = module.operation.get_asm(
            enable_debug_info=args.mlir_print_debuginfo,
            print_generic_op_form=args.mlir_print_op_generic,
            use_local_scope=args.mlir_print_local_scope,
            large_elements_limit=args.mlir_elide_elementsattrs_if_larger,
        )
        if args.mlir_print_debuginfo:  # the bindings parse every buffer as "-"; locations name the input
            quoted = self.name.replace("\\", "\\\\").replace('"', '\\"')
            text = _PARSER_BUFFER.sub(lambda _: f'"{quoted}":', text)
        return text

    def _run_chunks(self, ctx: ir.Context, pm: PassManager, text: str | bytes, name: str) -> int:
        args = self.args
        sources = SourceMgr({name: text if isinstance(text, str) else ""})
        outputs, timings, failed = [], [], False
        chunks = source.chunks(text, args.split_input_file)
        path = None if args.input == "-" or len(chunks) > 1 else args.input  # MLIR reads a whole file itself
        for chunk in chunks:
            result = self._run_chunk(ctx, pm, chunk, name, path)
            timings += pm.timings
            if result.output is not None:
                outputs.append(result.output)
            if args.verify_diagnostics:
                verifier = expected.Verifier(
                    chunk.text, name, chunk.first_line, only_expected=args.verify_diagnostics == "only-expected"
                )
                for diag in result.found:
                    verifier.process(_without_op_dumps(diag))
                for problem in verifier.finish():
                    self.stderr.write(sources.render(problem.where, span=problem.span))
                    failed = True
            else:
                shown = _VERBOSITY[args.mlir_diagnostic_verbosity_level]
                for diag in result.found:
                    if diag.severity in shown:
                        self.stderr.write(sources.render(diag))
                failed |= any(d.severity == "error" for d in result.found)
        if args.timing:
            self.stderr.write(format_timings(timings))
        return self._write(outputs, failed)

    def _write(self, outputs: list[str | bytes], failed: bool) -> int:
        args = self.args
        if args.emit_bytecode:
            data = b"// -----\n".join(outputs)
        else:
            data = "// -----\n".join(outputs)
        try:
            if args.output == "-":
                (self.stdout.buffer if args.emit_bytecode else self.stdout).write(data)
            elif not failed:  # as mlir-opt, an output file is only written for a run that succeeded
                with open(
                    args.output, "wb" if args.emit_bytecode else "w", encoding=None if args.emit_bytecode else "utf-8"
                ) as out:
                    out.write(data)
        except OSError as e:
            return self.error(f"could not write output file '{args.output}': {e.strerror}")
        return 1 if failed else 0

    def _run_chunk(self, ctx: ir.Context, pm: PassManager, chunk: source.Chunk, name: str, path: str | None) -> _Result:
        module, found = source.parse(ctx, chunk, name, path)
        if module is None:
            return _Result(found)
        suspect = isolation.crash_prone_syntax(chunk.bytecode or chunk.text)
        policy = "all" if suspect and isolation.current_policy() == "crash-prone" else isolation.current_policy()
        try:
            with isolation.policy(policy):  # input jaxlib's verifiers may crash on is verified in the worker only
                pm.run(module)
        except PassError as e:
            return _Result(found + [_at_module(d, e, module, chunk).renamed(name) for d in e.diagnostics])
        found += [d.renamed(name) for d in pm.warnings]
        printed = self._print(module)
        unparsable = _does_not_parse_back(printed, module, ctx, name)
        if unparsable:
            return _Result(found + unparsable)
        if self.args.emit_bytecode:
            data = io.BytesIO()
            module.operation.write_bytecode(data)
            return _Result(found, data.getvalue())
        return _Result(found, printed + "\n")


def _at_module(diag: Diagnostic, error: PassError, module: ir.Module, chunk: source.Chunk) -> Diagnostic:
    """A pass's finding named by the pass (a crash or a timeout names it already) when it is on the module or at no
    op, and placed at the module. The module MLIR makes around a chunk's top-level ops has no line: such findings
    are placed where its text starts, as mlir-opt places a failure on a module (``file.mlir:1:1``). A finding at
    another op that has no location stays where it is (``@unknown``)."""
    at_op = _AT_OP.match(diag.message)
    op_name = at_op.group(1) if at_op else None
    if diag.located and op_name != "builtin.module":
        return diag
    file, line, col = diagnostics.op_position(module.operation)
    if op_name not in (None, "builtin.module"):
        line = col = 0
    elif not line and chunk.bytecode is None:
        line, col = chunk.first_line, 1
    named = error.what in ("crashed", "timed out")
    message = diag.message if named else f"pass '{error.pass_name}' failed: {diag.message}"
    notes = tuple(n if n.located else dataclasses.replace(n, line=line, col=col) for n in diag.notes)
    return dataclasses.replace(diag, message=message, file=diag.file or file, line=line, col=col, notes=notes)


def _without_op_dumps(diag: Diagnostic) -> Diagnostic:
    """The diagnostic without the notes that only print an op: mlir-opt turns MLIR's print-op-on-diagnostic off
    under -verify-diagnostics (so tests need not expect them), which jaxlib's bindings cannot do, so they are
    dropped here: ``see current operation: ...`` notes, and notes at the diagnostic's own location that are the
    op itself (Shardy's warnings attach those)."""

    def is_dump(note: Diagnostic) -> bool:
        same_place = (note.file, note.line, note.col) == (diag.file, diag.line, diag.col)
        return note.message.startswith("see current operation:") or (same_place and _OP_TEXT.match(note.message))

    return dataclasses.replace(diag, notes=tuple(n for n in diag.notes if not is_dump(n)))


def _does_not_parse_back(printed: str, module: ir.Module, ctx: ir.Context, name: str) -> list[Diagnostic]:
    """Errors at each op holding an attribute whose printed form does not parse back, when the printed module
    does not; shardkit-opt must never write output that it (or mlir-opt) cannot read."""
    parsed, found = isolation.parse(parsing.Input(printed, name), ctx)
    if parsed is not None:
        return []
    first = next(d for d in found if d.severity == "error")
    culprits = []
    for op in irx.ops(module):
        for attr_name in list(op.attributes):
            text = str(op.attributes[attr_name])
            try:
                ir.Attribute.parse(text, ctx)
            except ir.MLIRError as e:
                reason = diagnostics.from_mlir_error(e)[0].message
                culprits.append(
                    Diagnostic.at(
                        op, f"attribute '{attr_name}' prints as {text}, which does not parse back: {reason}"
                    ).renamed(name)
                )
    if culprits:
        return culprits
    return [
        Diagnostic(
            "error",
            f"the result does not parse back (line {first.line} of the output: {first.message})",
            *diagnostics.op_position(module.operation),
        ).renamed(name)
    ]


def main() -> None:
    """Console entry point of ``shardkit-opt``; a bug in shardkit is one line asking for a report, too."""
    try:
        code = OptMain().run()
    except Exception as e:  # noqa: BLE001  (the last line of defence; tests drive OptMain and see the exception)
        sys.stderr.write(f"shardkit-opt: error: internal error, please report it: {type(e).__name__}: {e}\n")
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
