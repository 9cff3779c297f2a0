"""Running a pass in a child process, so a pass that aborts or segfaults becomes a diagnostic, not the end of
the caller's process.

jaxlib's C++ passes end the process on inputs they do not expect (``CHECK`` failures, ``llvm_unreachable``,
null dereferences): nothing in-process can catch that. A pass run isolated goes to a worker process
(``serve`` in a fresh interpreter, never a fork of one whose jax runtime and
thread pools are already running). The module travels as MLIR bytecode, locations included, and comes back
the same way; the worker's diagnostics come back as ``Diagnostic`` objects. When the worker dies, its exit
signal and the last words on its stderr (``Check failed: ...``, ``LLVM ERROR: ...``) become a ``PassError``
located at the op the pass was running on; the next request starts a new worker.

A pipeline run as one job that crashes is run again there one pass at a time, so the error names the pass that
crashed. Parsing (which verifies) goes there too where it can crash (``parse``): input holding syntax jaxlib's
verifiers are known to crash on (``CRASH_PRONE_SYNTAX``), then read back from the worker's bytecode.

One worker serves a process and is reused, so isolation costs a start-up once (about the time of
``import shardkit``; ``prestart`` overlaps it with the caller's own work) and then a bytecode round trip per
pass. Which passes run there is the policy, decided in one place (``isolated``): ``crash-prone`` (default:
jaxlib passes known to abort, and pipelines that contain one; input with crash-prone syntax), ``all`` (every
pass that pickles, shardkit's own included, and every parse) or ``none``.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import dataclasses
import io
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any, BinaryIO

from jaxlib.mlir import ir

from shardkit.dialects import irx, parsing
from shardkit.dialects.diagnostics import Diagnostic, from_mlir_error, op_position
from shardkit.dialects.sdy import symbol_ref
from shardkit.passes.diagnostics import PassError

POLICIES = ("crash-prone", "all", "none")

# jaxlib MLIR passes seen to end the process (CHECK failures, fatal errors, SIGSEGV) when every jaxlib sdy pass
# was run over every chunk of Shardy's sdy test suite and shardkit's lit inputs, and over a module nested in
# another, with jaxlib 0.10.2, 0.11.2 and 0.12.0.1: the union of the three. Most need a function named @main, the
# rest abort on shardings or ops outside what they handle. MLIR core, StableHLO and the other sdy passes did not
# crash there. Pipelines containing one of these (sdy-propagation-pipeline, sdy-export-pipeline, so shardkit's
# propagate) are crash-prone too.
CRASH_PRONE = frozenset(
    {
        "sdy-add-func-data-flow-edges",  # no @main
        "sdy-apply-sharding-constraints",  # no @main (jaxlib 0.11 and later)
        "sdy-aggressive-propagate",  # no @main; SIGSEGV; sharding group ids
        "sdy-basic-propagate",
        "sdy-op-priority-propagate",
        "sdy-user-priority-propagate",
        "sdy-propagate-to-func-results",  # no @main
        "sdy-remove-sub-axes-in-input-output-shardings",  # no @main
        "sdy-convert-global-to-local",  # non-divisible shardings, reduce_window/select_and_scatter, dot users
        "sdy-inline-meshes",  # SIGSEGV when a sharding names a mesh of a nested module (opt-crash-14)
        "sdy-insert-explicit-reshards",  # unreduced axes; SIGSEGV on reshape with enable-full-version=true
        "sdy-resolve-permutation-factors",  # SIGSEGV
        "sdy-pad-for-divisibility",
        "sdy-per-instruction-partitioning",  # jaxlib 0.11 and later: most modules without @main
        "sdy-resolve-single-device-sharding",  # jaxlib 0.11 and later: a tuple of single-device and tiled results
    }
)

# Syntax whose verifier jaxlib runs, while parsing, in a way that ends the process on some inputs, with what it
# does: found by parsing 1.8 million mutations of Shardy's and shardkit's lit inputs with jaxlib 0.10.2 and 0.12.0.1
# (every crash held this; nothing else crashed). Input holding it is parsed in the worker.
CRASH_PRONE_SYNTAX = {
    "propagation_edges": "Shardy's verifier of sdy.propagation_edges crashes on an edge naming an operand, a result "
    "or a sharding its op does not have",
}

# When Shardy's propagation looks its entry function up as @main and aborts without one (jaxlib 0.10.2, measured
# on modules of one or two functions, public or private, with and without a call): the pipeline needs @main
# unless exactly one function is public and nothing is called; a propagation step (sdy-*-propagate) unless
# the module holds exactly one function.
_PROPAGATION_STEPS = frozenset(
    {"sdy-aggressive-propagate", "sdy-basic-propagate", "sdy-op-priority-propagate", "sdy-user-priority-propagate"}
)


def entry_error(module: ir.Module, pass_names: frozenset[str]) -> Diagnostic | None:
    """The located error to report instead of running ``pass_names`` (a pipeline's passes) on ``module`` when
    Shardy's propagation among them would abort for want of a function @main; None when it can run."""
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    names = [ir.StringAttr(f.attributes["sym_name"]).value for f in funcs]
    if "main" in names:
        return None
    public = [
        f for f in funcs if "sym_visibility" not in f.attributes or str(f.attributes["sym_visibility"]) == '"public"'
    ]
    calls = any(irx.ops(f, "func.call") for f in funcs)
    if "sdy-propagation-pipeline" in pass_names:  # its own propagation step runs under the pipeline's rule
        aborts = len(public) != 1 or calls
    else:
        aborts = not _PROPAGATION_STEPS.isdisjoint(pass_names) and len(funcs) != 1
    if not aborts:
        return None
    held = ", ".join(f"{'public' if f in public else 'private'} {symbol_ref(n)}" for f, n in zip(funcs, names))
    file, line, col = op_position(funcs[0].operation if funcs else module.operation)
    return Diagnostic(
        "error",
        "Shardy's propagation needs a public function @main, the program's entry, in a module of "
        f"{'these functions' if funcs else 'no functions'}{': ' + held if held else ''}; rename the entry to @main",
        file,
        line,
        col,
    )


_policy: contextvars.ContextVar[str] = contextvars.ContextVar("shardkit_isolation", default="crash-prone")


def checked(name: str) -> str:
    """``name`` if it is one of ``POLICIES``; ValueError otherwise."""
    if name not in POLICIES:
        raise ValueError(f"isolation must be one of {', '.join(POLICIES)}, got '{name}'")
    return name


@contextlib.contextmanager
def policy(name: str) -> Iterator[None]:
    """Sets which passes run isolated inside the block: one of ``POLICIES``."""
    token = _policy.set(checked(name))
    try:
        yield
    finally:
        _policy.reset(token)


def current_policy() -> str:
    return _policy.get()


def isolated(p: Any, policy: str | None = None) -> bool:
    """Whether pass ``p`` runs in the worker under ``policy`` (the block's by default): under ``all`` every pass
    that can travel there (pickles), under ``crash-prone`` one whose ``crash_prone`` is true, under ``none``
    none."""
    policy = current_policy() if policy is None else policy
    if policy == "none" or (policy == "crash-prone" and not getattr(p, "crash_prone", False)):
        return False
    return _picklable(p)


_time_limit: contextvars.ContextVar[float | None] = contextvars.ContextVar("shardkit_pass_timeout", default=None)


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Inside the block an isolated pass that runs longer than ``seconds`` is stopped (its worker killed) and
    fails as timed out; None sets no limit. Only a pass in the worker can be stopped."""
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0):
        raise ValueError(f"a pass time limit must be a positive number of seconds, got {seconds!r}")
    token = _time_limit.set(seconds)
    try:
        yield
    finally:
        _time_limit.reset(token)


def current_time_limit() -> float | None:
    return _time_limit.get()


@dataclasses.dataclass(frozen=True)
class Job:
    """What the worker runs: the pass object ``target`` (picklable), named ``pass_name`` in reports;
    ``per_function`` runs an MLIR pass once per top-level ``func.func``, so a crash is located there; ``steps``,
    when given, runs those passes in order instead of ``target`` (a crashed pipeline, again, one pass at a time);
    ``verify`` verifies the result there before it comes back (MLIR's passes verify their own)."""

    pass_name: str
    target: Any
    per_function: bool = False
    allow_unregistered: bool = False
    verify: bool = True
    steps: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class ParseJob:
    """Parsing ``source`` in the worker, from the working directory ``cwd`` (a relative path is read from there)."""

    source: parsing.Input
    cwd: str
    allow_unregistered: bool = False


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """A request's end: the final reply (None when the worker died), the last of each progress frame the worker
    sent (``at``: the function a per-function pass ran on; ``step``: the pass of a step-by-step run; ``verify``),
    and when it died, how (``SIGSEGV``, ``exit code 3``), its last words and whether the time limit killed it."""

    result: Any
    progress: dict[str, Any]
    how: str = ""
    words: str = ""
    timed_out: bool = False


# -- parent side --------------------------------------------------------------------------------------


class WorkerProcess:
    """A Python process running ``serve()`` of a module: requests in on its stdin and replies out on its stdout
    (``write_frame``/``read_frame``), its stderr kept in a file to tell why it died. It imports the shardkit this
    one is (``python -c`` would put the working directory, and any shardkit there, first on its path)."""

    def __init__(self, module: str) -> None:
        self.stderr = tempfile.TemporaryFile(mode="a+b")  # noqa: SIM115  (lives as long as the worker)
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        start = f"import sys; sys.path.insert(0, {root!r}); from {module} import serve; serve()"
        self.process = subprocess.Popen(
            [sys.executable, "-c", start],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            close_fds=True,
        )

    def stderr_lines(self) -> list[str]:
        """What the worker printed on its stderr, a stripped line each (blank lines dropped)."""
        self.stderr.seek(0)
        return [line.strip() for line in self.stderr.read().decode("utf-8", "replace").splitlines() if line.strip()]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.stderr.close()


class _Worker(WorkerProcess):
    """One child process speaking length-prefixed pickles on its stdin/stdout."""

    def __init__(self) -> None:
        super().__init__(__name__)

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, message: Any) -> Iterator[Any]:
        """Sends one request; yields the replies until the final one (None when the worker died)."""
        self.stderr.seek(0)
        self.stderr.truncate()
        try:
            write_frame(self.process.stdin, message)
        except BrokenPipeError:  # it died since it was last asked
            yield None
            return
        while True:
            reply = read_frame(self.process.stdout)
            yield reply
            if reply is None or reply[0] == "done":
                return

    def last_words(self) -> str:
        """The line of the worker's stderr that says why it died (a CHECK or LLVM fatal error), or its last line."""
        lines = self.stderr_lines()
        for marker in ("Check failed:", "LLVM ERROR:", "Assertion", "terminate called", "what():"):
            for line in lines:
                if marker in line:
                    return line[line.index(marker) :][:400]
        return lines[-1][:400] if lines else ""

    def forward_stderr(self) -> None:
        """What the worker printed on a successful request (MLIR's print-ir, jaxlib logging) reaches our stderr."""
        self.stderr.seek(0)
        text = self.stderr.read()
        if text:
            sys.stderr.write(text.decode("utf-8", "replace"))


_worker: _Worker | None = None
_lock = threading.Lock()


def prestart() -> None:
    """Starts the worker now, so its start-up overlaps the caller's own work."""
    global _worker
    with _lock:
        if _worker is None or not _worker.alive():
            _worker = _Worker()


@atexit.register
def shutdown() -> None:
    """Stops the worker (at exit, and in tests that want a fresh one)."""
    global _worker
    with _lock:
        if _worker is not None:
            _worker.close()
            _worker = None


def _ask(job: Job | ParseJob, payload: bytes = b"") -> _Outcome:
    """Sends one request to the worker (started if need be) and reads its replies; a worker that died is replaced
    by the next request."""
    global _worker
    prestart()
    with _lock:
        worker = _worker
        result, progress = None, {}
        limit = current_time_limit() if isinstance(job, Job) else None
        watchdog = threading.Timer(limit, worker.process.kill) if limit is not None else None
        if watchdog is not None:
            watchdog.start()
        try:
            for reply in worker.request((job, payload)):
                if reply is None:
                    break
                if reply[0] == "done":
                    result = reply
                else:
                    progress[reply[0]] = reply[1]
        finally:
            if watchdog is not None:
                watchdog.cancel()
        if result is None:
            code = worker.process.wait()
            words = worker.last_words()
            worker.close()
            _worker = None
            timed_out = watchdog is not None and watchdog.finished.is_set() and code == -signal.SIGKILL
            return _Outcome(None, progress, _how(code), words, timed_out)
        worker.forward_stderr()
    return _Outcome(result, progress)


def run(module: ir.Module, job: Job) -> list[Diagnostic]:
    """Runs ``job`` on ``module`` in the worker and writes the result back into ``module`` in place.

    Returns the diagnostics the pass reported; raises PassError when it failed, and when it crashed the
    worker: then located at the op it was running on, with the signal and the worker's last words, naming the
    pass of a pipeline that crashed.
    """
    payload = io.BytesIO()
    module.operation.write_bytecode(payload)
    outcome = _ask(job, payload.getvalue())
    if outcome.result is None:
        at = module.operation
        if "at" in outcome.progress:
            at = list(module.body.operations)[outcome.progress["at"]].operation
        if outcome.timed_out:
            raise PassError(job.pass_name, [_timed_out(job.pass_name, at, current_time_limit())], "timed out")
        if "verify" in outcome.progress:
            raise PassError(job.pass_name, [_verifier_crash(job.pass_name, at, outcome)], "crashed")
        raise _crashed(job, payload.getvalue(), at, outcome)
    _, output, found, error = outcome.result
    if error is not None:
        raise error
    replace_contents(module, ir.Module.parse(output, module.context))
    return found


def _crashed(job: Job, payload: bytes, at: ir.Operation, outcome: _Outcome) -> PassError:
    """The PassError of a job that crashed the worker; a pipeline of several passes is run again one pass at a time,
    so the error names the pass that crashed, or, when none does alone, the pipeline and its passes."""
    steps = job.target.steps() if hasattr(job.target, "steps") and not job.per_function else ()
    if not steps:
        return PassError(job.pass_name, [_crash(job.pass_name, at, outcome)], "crashed")
    names = ", ".join(step.name for step in steps)
    again = _ask(dataclasses.replace(job, steps=steps), payload)
    if again.result is None and "step" in again.progress:
        index = again.progress["step"]
        crash = _crash(steps[index].name, at, again)
        which = f"it is pass {index + 1} of {len(steps)}: {names}"
        note = dataclasses.replace(crash, severity="note", message=which, notes=())
        return PassError(job.pass_name, [dataclasses.replace(crash, notes=(note, *crash.notes))], "crashed")
    message = (
        f"pipeline '{job.pass_name}' crashed ({outcome.how}) on {_op_words(at)}; run again one pass at a time, none "
        f"of its {len(steps)} passes crashed: {names}"
    )
    crash = _crash(job.pass_name, at, outcome)
    return PassError(job.pass_name, [dataclasses.replace(crash, message=message)], "crashed")


def _how(code: int) -> str:
    """How a process ended, from its return code: ``SIGSEGV``, ``exit code 3``."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _last_words(outcome: _Outcome, whose: str, where: tuple[str, int, int]) -> tuple[Diagnostic, ...]:
    """A note with the worker's last words (``Check failed: ...``), when it said any."""
    return (Diagnostic("note", f"{whose} last words: {outcome.words}", *where),) if outcome.words else ()


def _crash(pass_name: str, op: ir.Operation, outcome: _Outcome) -> Diagnostic:
    file, line, col = op_position(op)
    message = f"pass '{pass_name}' crashed ({outcome.how}) on {_op_words(op)}"
    return Diagnostic("error", message, file, line, col, _last_words(outcome, "the pass's", (file, line, col)))


def _verifier_crash(pass_name: str, op: ir.Operation, outcome: _Outcome) -> Diagnostic:
    file, line, col = op_position(op)
    message = f"MLIR's verifier crashed ({outcome.how}) on the module pass '{pass_name}' left"
    return Diagnostic("error", message, file, line, col, _last_words(outcome, "the verifier's", (file, line, col)))


def _timed_out(pass_name: str, op: ir.Operation, seconds: float) -> Diagnostic:
    file, line, col = op_position(op)
    return Diagnostic("error", f"pass '{pass_name}' timed out after {seconds:g} s on {_op_words(op)}", file, line, col)


def crash_prone_syntax(data: str | bytes) -> tuple[str, int] | None:
    """The first word of ``CRASH_PRONE_SYNTAX`` in ``data`` (MLIR text or bytecode, whose strings hold attribute
    names and unregistered attributes' text) with its offset, the first outside a ``//`` comment where there is
    one; None when there is none."""
    newline, comment = ("\n", "//") if isinstance(data, str) else (b"\n", b"//")
    found = []
    for word in CRASH_PRONE_SYNTAX:
        needle = word if isinstance(data, str) else word.encode()
        first = at = data.find(needle)
        while at >= 0 and comment in data[data.rfind(newline, 0, at) + 1 : at]:
            at = data.find(needle, at + 1)
        if first >= 0:
            found.append((first if at < 0 else at, word))
    return (min(found)[1], min(found)[0]) if found else None


def parse(source: parsing.Input, ctx: ir.Context) -> tuple[ir.Module | None, list[Diagnostic]]:
    """``parsing.parse``, in the worker where it may crash: always under the policy ``all``, under ``crash-prone``
    when ``source`` holds crash-prone syntax; the module comes back as bytecode. A crash there is an error located
    at the crash-prone syntax (the input's first line without it), with the worker's last words."""
    suspect = crash_prone_syntax(source.data)
    policy = current_policy()
    if policy == "none" or (policy == "crash-prone" and suspect is None):
        return parsing.parse(source, ctx)
    outcome = _ask(ParseJob(source, os.getcwd(), ctx.allow_unregistered_dialects))
    if outcome.result is None:
        return None, [_parse_crash(source, suspect, outcome)]
    _, output, found, _ = outcome.result
    return (None if output is None else ir.Module.parse(output, ctx)), found


def _parse_crash(source: parsing.Input, suspect: tuple[str, int] | None, outcome: _Outcome) -> Diagnostic:
    message = f"MLIR crashed ({outcome.how}) parsing this input"
    line = col = 0
    if suspect is not None:
        word, at = suspect
        message += f": {CRASH_PRONE_SYNTAX[word]}"
        if isinstance(source.data, str):
            while at and (source.data[at - 1].isalnum() or source.data[at - 1] in "._"):
                at -= 1  # to the start of the attribute's name: sdy.propagation_edges
            start = source.data.rfind("\n", 0, at) + 1
            line = source.first_line + source.data.count("\n", 0, at)
            col = len(source.data[start:at].encode("utf-8")) + 1  # MLIR's columns count bytes
    elif isinstance(source.data, str):
        line, col = source.first_line, 1
    where = (source.name, line, col)
    return Diagnostic("error", message, *where, _last_words(outcome, "the parser's", where))


def _op_words(op: ir.Operation) -> str:
    """``'func.func' @name``: the op a pass was running on, as a diagnostic names it."""
    name = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else None
    return f"'{op.name}'" + (f" {symbol_ref(name)}" if name is not None else "")


def replace_contents(module: ir.Module, new: ir.Module) -> None:
    """Makes ``module`` hold what ``new`` holds (ops and module attributes), keeping the caller's Module object
    (a module of another context is parsed into ``module``'s first)."""
    if new.context is not module.context:
        new = ir.Module.parse(new.operation.get_asm(enable_debug_info=True), module.context)
    body = module.body
    for op in list(body.operations):
        op.erase()
    for op in list(new.body.operations):
        body.append(op)
    attributes = module.operation.attributes
    for name in list(attributes):
        del attributes[name]
    for name in list(new.operation.attributes):
        attributes[name] = new.operation.attributes[name]


def write_frame(stream: BinaryIO, message: Any) -> None:
    """Sends one pickled message to a worker process (or back), length-prefixed."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> Any:
    """The next message ``write_frame`` sent, or None when the stream ended (the other side is gone)."""
    header = stream.read(8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    data = stream.read(size)
    return pickle.loads(data) if len(data) == size else None


# -- worker side --------------------------------------------------------------------------------------


def serve() -> None:
    """The worker's loop: one request in, replies out, until the parent closes its stdin."""
    # The protocol owns the original stdout; anything C++ code prints to fd 1 goes to stderr instead.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    from shardkit.dialects import context
    from shardkit.passes import diagnostics

    ctx = context()
    with policy("none"):
        while True:
            request = read_frame(requests)
            if request is None:
                return
            job, payload = request
            ctx.allow_unregistered_dialects = job.allow_unregistered
            if isinstance(job, ParseJob):
                write_frame(replies, _parsed(job, ctx))
                continue
            error, found, module = None, [], None
            try:
                module = _read_module(payload, ctx, job.pass_name)
                if job.per_function:
                    with diagnostics.collecting(ctx) as found:
                        for index, op in enumerate(module.body.operations):
                            if op.operation.name == "func.func":
                                write_frame(replies, ("at", index))
                                job.target.run_on(op.operation)
                elif job.steps:
                    for index, step in enumerate(job.steps):
                        write_frame(replies, ("step", index))
                        found += diagnostics.apply_pass(step, module)
                else:
                    found = diagnostics.apply_pass(job.target, module)
                if job.verify:  # the parent reads the result back, which verifies it: a crash must happen here
                    write_frame(replies, ("verify", True))
                    _verify(module, job.pass_name)
            except Exception as e:  # noqa: BLE001  (sent back and raised in the parent, as if the pass had run there)
                error = e if _picklable(e) else RuntimeError(f"{type(e).__name__}: {e}")
            output = io.BytesIO()
            if error is None and module is not None:
                module.operation.write_bytecode(output)
            write_frame(replies, ("done", output.getvalue(), found, error))


def _parsed(job: ParseJob, ctx: ir.Context) -> tuple:
    """The worker's reply to a ParseJob: the module as bytecode (None when it does not parse) and the diagnostics."""
    os.chdir(job.cwd)
    module, found = parsing.parse(job.source, ctx)
    output = None
    if module is not None:
        data = io.BytesIO()
        module.operation.write_bytecode(data)
        output = data.getvalue()
    return "done", output, found, None


def _verify(module: ir.Module, pass_name: str) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise PassError(pass_name, from_mlir_error(e), "left the module invalid") from None


def _read_module(payload: bytes, ctx: ir.Context, pass_name: str) -> ir.Module:
    try:
        return ir.Module.parse(payload, ctx)
    except ir.MLIRError as e:  # a dialect the parent's context has and this one lacks, say
        reason = from_mlir_error(e)[0].message
        raise PassError(
            pass_name, [Diagnostic("error", f"the isolation worker cannot read the module: {reason}")]
        ) from None


def _picklable(value: Any) -> bool:
    try:
        pickle.loads(pickle.dumps(value))
    except Exception:  # noqa: BLE001  (whatever pickling raises, the value cannot travel)
        return False
    return True
