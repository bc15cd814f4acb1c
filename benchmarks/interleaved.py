"""Interleaved timing for the benchmarks: each round runs every variant once (A, B, C, A, B, C, ...), so load that
comes and goes hits all of them alike; the best round is the figure, all rounds are the spread, and a ratio is given
best over best and per round (the same round's pair)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def interleave(fns: dict[str, Callable], rounds: int = 3) -> tuple[dict[str, list[float]], dict]:
    """Seconds per call of each function over ``rounds`` interleaved rounds, and each one's last result."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    results: dict = {}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return times, results


def ratio(times: dict[str, list[float]], slower: str, faster: str) -> tuple[float, list[float]]:
    """``slower``'s time over ``faster``'s: best over best, and per round."""
    best = min(times[slower]) / min(times[faster])
    return best, [a / b for a, b in zip(times[slower], times[faster])]


def spread(values: list[float], digits: int = 2) -> str:
    """'lowest-highest' of a list of figures."""
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())
