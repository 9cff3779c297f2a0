"""Evaluating candidates in worker processes: several at once, and a crash in Shardy costs one candidate.

A search evaluates its candidates in rounds of independent ones (every move from the current state), and one
evaluation is Shardy's passes (C++, about 50 ms on the GPT step) plus a walk in Python (about 20 ms): work that
runs in parallel across processes, not threads (the passes hold the Python thread while they run). Each worker
is a fresh interpreter (this shardkit's ``workers.serve``, never a fork of a process whose jax runtime runs)
that receives the program once and then candidates, and answers each with its ``Reading`` or the error Shardy
raised. Shardy's passes run in the worker without the isolation shardkit's pass manager gives them
elsewhere: a pass that aborts ends the worker, which the pool notices, restarts, and reports as that candidate's
failure (``WorkerCrash``).

``Pool(program, workers=2)`` starts the process's workers if they are not running yet (they are kept for the next
search; ``shutdown()`` ends them, as exit does) and ``pool.evaluate(states)`` spreads a round over them. With
``workers=0`` the candidates are evaluated in this process, one after the other.
"""

from __future__ import annotations

import atexit
import os
import pickle
import sys
import threading
from collections.abc import Sequence
from typing import Any, BinaryIO

from shardkit.autosharding.program import Program
from shardkit.autosharding.space import Layout, MeshShape
from shardkit.passes import isolation


class WorkerCrash(RuntimeError):
    """A worker process ended while evaluating a candidate (Shardy aborted on it)."""


class _Worker(isolation.WorkerProcess):
    def __init__(self) -> None:
        super().__init__(__name__)

    def send(self, message: Any) -> bool:
        try:
            isolation.write_frame(self.process.stdin, message)
            return True
        except (BrokenPipeError, OSError):
            return False

    def receive(self) -> Any:
        return isolation.read_frame(self.process.stdout)

    def last_words(self) -> str:
        lines = self.stderr_lines()
        return lines[-1][:300] if lines else ""


class Pool:
    """Evaluating one program's candidates on the process's workers (module docstring)."""

    def __init__(self, program: Program, workers: int = 2):
        self.program = program
        self.size = max(0, int(workers))
        self._payload = pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL) if self.size else b""
        self._sent: set[int] = set()  # workers that hold this program
        if self.size:
            start(self.size)

    def _worker(self, i: int) -> _Worker:
        w = _WORKERS[i]
        if w is None or w.process.poll() is not None:
            if w is not None:
                w.close()
            w = _WORKERS[i] = _Worker()
            self._sent.discard(i)
        if i not in self._sent:
            w.send(("program", self._payload))
            self._sent.add(i)
        return w

    def evaluate(self, states: Sequence[tuple[MeshShape, Layout]]) -> list[Any]:
        """Each state's ``Reading``, or the exception its evaluation raised (``WorkerCrash`` for a crash)."""
        from shardkit.autosharding import model

        if not self.size:
            out: list[Any] = []
            for mesh, layout in states:
                try:
                    out.append(model.evaluate(self.program, mesh, layout))
                except Exception as e:  # noqa: BLE001  (one candidate Shardy refuses ends that candidate only)
                    out.append(e)
            return out
        with _LOCK:
            return self._evaluate(states)

    def _evaluate(self, states: Sequence[tuple[MeshShape, Layout]]) -> list[Any]:
        results: list[Any] = [None] * len(states)
        queue = list(enumerate(states))
        busy: dict[int, int] = {}  # worker -> index of its job
        while queue or busy:
            for i in range(self.size):
                if i not in busy and queue:
                    index, state = queue.pop(0)
                    if self._worker(i).send(("evaluate", state)):
                        busy[i] = index
                    else:
                        results[index] = self._crashed(i, state)
            if not busy:
                continue
            ready = _wait_any([_WORKERS[i].process.stdout for i in busy])
            for i in [i for i in busy if _WORKERS[i].process.stdout in ready]:
                index = busy.pop(i)
                reply = _WORKERS[i].receive()
                results[index] = self._crashed(i, states[index]) if reply is None else reply
        return results

    def _crashed(self, i: int, state: tuple[MeshShape, Layout]) -> WorkerCrash:
        w = _WORKERS[i]
        words = w.last_words() if w is not None else ""
        if w is not None:
            w.close()
        _WORKERS[i] = None
        self._sent.discard(i)
        mesh, _ = state
        return WorkerCrash(f"Shardy ended its process planning a candidate on mesh {mesh}: {words or 'no message'}")

    def close(self) -> None:
        """Nothing to end: the workers serve the next search too (``shutdown`` ends them, as exit does)."""

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The process's workers, started on first use and kept for the next search (a start costs about a second).
_WORKERS: list[_Worker | None] = []
_LOCK = threading.Lock()


def start(size: int) -> None:
    """Makes sure ``size`` workers exist (starting the missing ones: their start-ups overlap each other and the
    caller's work until its first evaluation)."""
    with _LOCK:
        while len(_WORKERS) < size:
            _WORKERS.append(None)
        for i in range(size):
            if _WORKERS[i] is None or _WORKERS[i].process.poll() is not None:
                _WORKERS[i] = _Worker()


@atexit.register
def shutdown() -> None:
    """Ends the workers (at exit; tests that want fresh ones call it)."""
    with _LOCK:
        for w in _WORKERS:
            if w is not None:
                w.close()
        _WORKERS.clear()


def _wait_any(streams: list[BinaryIO]) -> list[BinaryIO]:
    import select

    ready, _, _ = select.select(streams, [], [])
    return ready


def serve() -> None:
    """A worker's loop: the program, then candidates, until its stdin closes."""
    replies = os.fdopen(os.dup(1), "wb")  # the protocol owns stdout; C++ prints go to stderr
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    from shardkit.autosharding import model

    program = None
    with isolation.policy("none"):
        while True:
            request = isolation.read_frame(requests)
            if request is None:
                return
            kind, body = request
            if kind == "program":
                program = pickle.loads(body)
                continue
            mesh, layout = body
            try:
                reply: Any = model.evaluate(program, mesh, layout)
            except Exception as e:  # noqa: BLE001  (the parent reports it as this candidate's failure)
                reply = RuntimeError(f"{type(e).__name__}: {e}")
            isolation.write_frame(replies, reply)
