"""Timing helpers shared by the benchmarks: interleaved medians, so slow drifts hit both sides alike, and paired
ratios (each round's time over the base's time in the same round), which also cancel the load swings of a
shared machine between rounds."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved(
    fns: dict[str, Callable[[], object]],
    *,
    rounds: int = 21,
    number: int = 1,
    setup: Callable[[], object] | None = None,
) -> dict[str, float]:
    """Median seconds per call of each fn, alternating them round by round (``setup`` runs before each call)."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            total = 0.0
            for _ in range(number):
                if setup is not None:
                    setup()
                start = time.perf_counter()
                fn()
                total += time.perf_counter() - start
            samples[name].append(total / number)
    return {name: statistics.median(values) for name, values in samples.items()}


def samples(fns: dict[str, Callable[[], object]], *, rounds: int) -> dict[str, list[float]]:
    """Seconds of each fn in each round. The order rotates every round: a fn pays for what the one before it
    left behind (buffers being freed, threads still busy), so each fn follows each other fn equally often."""
    out: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            fns[name]()
            out[name].append(time.perf_counter() - start)
    return out


def paired(fns: dict[str, Callable[[], object]], base: str, *, rounds: int = 101) -> dict[str, tuple[float, float]]:
    """Per fn: (median over rounds of its time / ``base``'s time in the same round, median seconds per call)."""
    times = samples(fns, rounds=rounds)
    return {
        name: (statistics.median(t / b for t, b in zip(times[name], times[base])), statistics.median(times[name]))
        for name in fns
    }


def spread(values: list[float]) -> str:
    """min/median/max of per-run figures, as the closing notes report them."""
    return f"{min(values):.3f}/{statistics.median(values):.3f}/{max(values):.3f}"


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.2f} us"
    return f"{seconds * 1e3:9.2f} ms"
