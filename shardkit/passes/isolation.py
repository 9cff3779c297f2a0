"""Running a pass in a child process, so a pass that aborts or segfaults becomes a diagnostic, not the end of
the caller's process.

jaxlib's C++ passes end the process on inputs they do not expect (``CHECK`` failures, ``llvm_unreachable``,
null dereferences): nothing in-process can catch that. A pass run isolated goes to a worker process
(``serve`` in a fresh interpreter, never a fork of one whose jax runtime and
thread pools are already running). The module travels as MLIR bytecode, locations included, and comes back
the same way; the worker's diagnostics come back as ``Diagnostic`` objects. When the worker dies, its exit
signal and the last words on its stderr (``Check failed: ...``, ``LLVM ERROR: ...``) become a ``PassError``
located at the op the pass was running on; the next request starts a new worker.

One worker serves a process and is reused, so isolation costs a start-up once (about the time of
``import shardkit``; ``prestart`` overlaps it with the caller's own work) and then a bytecode round trip per
pass. Which passes run there is the policy, decided in one place (``isolated``): ``crash-prone`` (default:
jaxlib passes known to abort, and pipelines that contain one), ``all`` (every pass that pickles, shardkit's own
included) or ``none``.
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

from shardkit.dialects import irx
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
    ``per_function`` runs an MLIR pass once per top-level ``func.func``, so a crash is located there."""

    pass_name: str
    target: Any
    per_function: bool = False
    allow_unregistered: bool = False


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


def run(module: ir.Module, job: Job) -> list[Diagnostic]:
    """Runs ``job`` on ``module`` in the worker and writes the result back into ``module`` in place.

    Returns the diagnostics the pass reported; raises PassError when it failed, and when it crashed the
    worker: then located at the op it was running on, with the signal and the worker's last words.
    """
    global _worker
    prestart()
    with _lock:
        worker = _worker
        payload = io.BytesIO()
        module.operation.write_bytecode(payload)
        at: ir.Operation = module.operation
        ops = list(module.body.operations)
        result = None
        limit = current_time_limit()
        watchdog = threading.Timer(limit, worker.process.kill) if limit is not None else None
        if watchdog is not None:
            watchdog.start()
        try:
            for reply in worker.request((job, payload.getvalue())):
                if reply is None:
                    break
                if reply[0] == "at":
                    at = ops[reply[1]].operation
                else:
                    result = reply
        finally:
            if watchdog is not None:
                watchdog.cancel()
        if result is None:
            code = worker.process.wait()
            words = worker.last_words()
            worker.close()
            _worker = None
            if watchdog is not None and watchdog.finished.is_set() and code == -signal.SIGKILL:
                raise PassError(job.pass_name, [_timed_out(job.pass_name, at, limit)], "timed out")
            raise PassError(job.pass_name, [_crash(job.pass_name, at, code, words)], "crashed")
        worker.forward_stderr()
    _, output, found, error = result
    if error is not None:
        raise error
    replace_contents(module, ir.Module.parse(output, module.context))
    return found


def _crash(pass_name: str, op: ir.Operation, code: int, words: str) -> Diagnostic:
    if code >= 0:
        how = f"exit code {code}"
    else:
        try:
            how = signal.Signals(-code).name
        except ValueError:
            how = f"signal {-code}"
    file, line, col = op_position(op)
    notes = (Diagnostic("note", f"the pass's last words: {words}", file, line, col),) if words else ()
    return Diagnostic("error", f"pass '{pass_name}' crashed ({how}) on {_op_words(op)}", file, line, col, notes)


def _timed_out(pass_name: str, op: ir.Operation, seconds: float) -> Diagnostic:
    file, line, col = op_position(op)
    return Diagnostic("error", f"pass '{pass_name}' timed out after {seconds:g} s on {_op_words(op)}", file, line, col)


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
            error, found, module = None, [], None
            try:
                module = _read_module(payload, ctx, job.pass_name)
                if job.per_function:
                    with diagnostics.collecting(ctx) as found:
                        for index, op in enumerate(module.body.operations):
                            if op.operation.name == "func.func":
                                write_frame(replies, ("at", index))
                                job.target.run_on(op.operation)
                else:
                    found = diagnostics.apply_pass(job.target, module)
            except Exception as e:  # noqa: BLE001  (sent back and raised in the parent, as if the pass had run there)
                error = e if _picklable(e) else RuntimeError(f"{type(e).__name__}: {e}")
            output = io.BytesIO()
            if error is None and module is not None:
                module.operation.write_bytecode(output)
            write_frame(replies, ("done", output.getvalue(), found, error))


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
