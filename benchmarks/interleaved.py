"""Interleaved timing for the benchmarks, and their result files.

Each round runs every variant once (A, B, C, A, B, C, ...), so load that comes and goes hits all of them alike; the
best round is the figure, all rounds are the spread, and a ratio is given best over best and per round (the same
round's pair).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from pyterrier_compverify.reporting import refuse_overwrite, result_files, write_table


def benchmark_args(parser: argparse.ArgumentParser, name: str) -> argparse.Namespace:
    """``parser``'s arguments with the options every benchmark has: ``--rounds`` (3), ``--out`` (default
    ``benchmarks/results/NAME``) and ``--overwrite``; an existing ``--out`` is refused before any work."""
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default %(default)s)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / name), help="output stem")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    return args


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


def interleave_warm(fns: dict[str, Callable], rounds: int = 3) -> tuple[dict[str, list[float]], dict, str]:
    """Each function called once as a warm-up (caches, lazy loads), then :func:`interleave`d; also the load
    averages before and after the timed rounds, as a sentence part."""
    for fn in fns.values():
        fn()
    before = load_average()
    times, results = interleave(fns, rounds=rounds)
    return times, results, f"load average before {before}, after {load_average()}"


def interleave_pipelines(pipelines: dict, topics, rounds: int = 3) -> tuple[dict[str, list[float]], dict, str]:
    """:func:`interleave_warm` of each PyTerrier pipeline run on ``topics``."""
    return interleave_warm({name: (lambda p=pipeline: p(topics)) for name, pipeline in pipelines.items()}, rounds)


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


def write_results(table: pd.DataFrame, stem: Path, title: str, encoder, started: float, notes: str) -> None:
    """``stem.md`` / ``stem.json`` (``reporting.write_table``: the command, versions, date) with ``notes`` (the
    conditions: data, threads, load) under the table, and both printed."""
    elapsed = time.time() - started
    write_table(table, stem, title, encoder, elapsed, markdown=table.to_markdown(index=False) + "\n\n" + notes)
    path = result_files(stem)[1]
    path.write_text(json.dumps({**json.loads(path.read_text()), "notes": notes}, indent=2) + "\n")
    print(table.to_markdown(index=False))
    print(notes)
