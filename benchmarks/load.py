"""Benchmark under load: a 20,000-document TokenStore (build, open), MaxSim and MapVerifier over 10,000 rows from
it, and peak memory against the number of queries (it must not grow with them). Time and peak RSS per phase.

    python benchmarks/load.py                        # all-MiniLM-L6-v2, the packaged F4 head (minutes)
    python benchmarks/load.py --docs 500 --queries 10 --model PATH --out /tmp/load   # a quick check

Peak memory is the process's VmHWM, reset before each phase (Linux ``/proc/self/clear_refs``); "extra" is the
peak minus the resident memory when the phase started. Run it on a quiet machine: timings on a loaded one say
little. Writes benchmarks/results/load.{md,json}.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import pyterrier_compverify as cv
from pyterrier_compverify.reporting import write_table

WORDS = (
    "a the dog cat man woman child bird horse car house tree river city road table chair book letter window "
    "door garden street park field red blue green small big old young tall short happy quiet loud fast slow "
    "runs walks reads writes sees holds opens closes paints chases greets follows carries throws catches "
    "on under above below near behind beside inside outside with without and or not never always often "
    "cell protein gene virus patient study drug dose trial effect risk rate level group control sample "
    "water light music paper stone glass metal wood snow rain wind sun moon star boat train plane bridge"
).split()


def memory_mb(field: str) -> float:
    """VmRSS or VmHWM (peak) of this process in MB, from /proc (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def phase(name: str, fn, results: list[dict], **extra):
    """Run ``fn`` with the peak memory reset; record its time, peak and extra memory; return its result."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    before = memory_mb("VmRSS")
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    peak = memory_mb("VmHWM")
    results.append(
        {
            "phase": name,
            **extra,
            "seconds": round(seconds, 2),
            "peak_rss_mb": round(peak),
            "extra_mb": round(peak - before),
        }
    )
    print(results[-1], flush=True)
    return value


def documents(n: int, rng: np.random.Generator) -> list[dict]:
    """``n`` short documents of 4-10 words."""
    return [{"docno": f"d{i}", "text": " ".join(rng.choice(WORDS, rng.integers(4, 11)))} for i in range(n)]


def candidates(n_queries: int, depth: int, n_docs: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n_queries`` random 3-6 word queries, each with ``depth`` random documents of the store."""
    rows = []
    for q in range(n_queries):
        query = " ".join(rng.choice(WORDS, rng.integers(3, 7)))
        for docno in rng.choice(n_docs, size=depth, replace=False):
            rows.append({"qid": f"q{q}", "query": query, "docno": f"d{docno}"})
    return pd.DataFrame(rows)


def verifier_for(encoder, store, folder: Path):
    """The packaged F4 head for the default model; for another model an untrained F4 head of its width (timing
    only)."""
    if encoder.model_name == cv.DEFAULT_MODEL:
        return cv.MapVerifier(encoder=encoder, store=store)
    from pyterrier_compverify.scoring import build_head

    verifier = cv.Verifier.save(folder / "f4", encoder, build_head("F4", dim=encoder.dim), "F4")
    return cv.MapVerifier(verifier, encoder=encoder, store=store)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=cv.DEFAULT_MODEL)
    parser.add_argument("--docs", type=int, default=20_000, help="documents in the store")
    parser.add_argument("--queries", type=int, default=100, help="queries of the 10,000-row frame (x --depth)")
    parser.add_argument("--depth", type=int, default=100, help="documents per query")
    parser.add_argument(
        "--growth", default="10,50,100,200", help="query counts for the memory-against-queries check (MaxSim)"
    )
    parser.add_argument("--store", default=None, help="build the store here (default: a temporary folder)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "load"))
    args = parser.parse_args()
    started, load_average = time.time(), os.getloadavg()[0]
    rng = np.random.default_rng(0)
    results: list[dict] = []
    encoder = phase("load encoder", lambda: cv.TokenEncoder(args.model, device="cpu"), results)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.store or Path(tmp) / "load.tokens")
        docs = documents(args.docs, rng)
        indexer = cv.TokenStore(path).indexer(encoder, verbose=False, overwrite=True)
        phase("build store", lambda: indexer.index(docs), results, docs=args.docs)
        store = phase("open store", lambda: len(cv.TokenStore(path)) and cv.TokenStore(path), results)
        on_disk = sum(p.stat().st_size for p in path.iterdir())
        frame = candidates(args.queries, args.depth, args.docs, rng)
        rows = {"rows": len(frame), "queries": args.queries}
        maxsim = cv.MaxSim(encoder, store=store)
        scored = phase("MaxSim, store", lambda: maxsim(frame), results, **rows)
        verifier = verifier_for(encoder, store, Path(tmp))
        verified = phase("MapVerifier, store", lambda: verifier(frame), results, **rows)
        finite = bool(np.isfinite(scored["score"]).all() and np.isfinite(verified["score"]).all())
        growth = []
        for n in (int(x) for x in args.growth.split(",")):
            more = candidates(n, args.depth, args.docs, rng)
            growth.append(phase("MaxSim, store", lambda more=more: maxsim(more), results, rows=len(more), queries=n))
    table = pd.DataFrame([{k: str(v) for k, v in r.items()} for r in results]).fillna("")
    extra = [r["extra_mb"] for r in results if r["phase"] == "MaxSim, store"][-len(growth) :]
    queries = [int(x) for x in args.growth.split(",")]
    slope = np.polyfit(queries, extra, 1)[0] if len(queries) > 1 else 0.0
    summary = (
        f"\n\nLoad average at the start: {load_average:.1f}. Store: {args.docs} documents, "
        f"{on_disk / 1e6:.0f} MB on disk. All scores finite: {finite}. "
        f"MaxSim extra memory against queries ({', '.join(map(str, queries))} x {args.depth} rows): "
        f"{', '.join(f'{e} MB' for e in extra)}; slope {slope * 100:.1f} MB per 100 queries "
        f"(the frame itself grows too).\n"
    )
    write_table(
        table,
        Path(args.out),
        "Load: store build/open, MaxSim and MapVerifier over a store, memory against queries",
        encoder,
        time.time() - started,
        markdown=table.to_markdown(index=False) + summary,
    )
    print(table.to_markdown(index=False) + summary)


if __name__ == "__main__":
    main()
