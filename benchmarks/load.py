"""Benchmark under load: a 20,000-document TokenStore (build, open), MaxSim and MapVerifier over 10,000 rows from
it, and the extra memory of each reranker against the number of queries (it must not grow with them). Time and
peak RSS per phase.

    python benchmarks/load.py                        # all-MiniLM-L6-v2, the packaged F4 head (minutes)
    python benchmarks/load.py --docs 500 --queries 10 --growth 2,4 --model PATH --out /tmp/load   # a quick check

Peak memory is the process's VmHWM, reset before each phase (Linux ``/proc/self/clear_refs``); "extra" is the
peak minus the resident memory when the phase started; "anon" is the process's anonymous (not file-backed)
resident memory before and after the call. The memory-against-queries check runs each (reranker,
query count) in a fresh process that has already scored one query and read the whole store through its memory
map, so that neither warm-up allocations, memory freed by earlier phases nor store pages paged in on first use
hide or fake growth. Run it on a quiet machine: timings on a loaded one say little. Writes
benchmarks/results/load.{md,json}.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import pyterrier_compverify as cv
from pyterrier_compverify.reporting import refuse_overwrite, write_table

WORDS = (
    "a the dog cat man woman child bird horse car house tree river city road table chair book letter window "
    "door garden street park field red blue green small big old young tall short happy quiet loud fast slow "
    "runs walks reads writes sees holds opens closes paints chases greets follows carries throws catches "
    "on under above below near behind beside inside outside with without and or not never always often "
    "cell protein gene virus patient study drug dose trial effect risk rate level group control sample "
    "water light music paper stone glass metal wood snow rain wind sun moon star boat train plane bridge"
).split()
RERANKERS = ("MaxSim", "MapVerifier")


def memory_mb(field: str) -> float:
    """VmRSS, VmHWM (peak), RssAnon or RssFile of this process in MB, from /proc (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(fn) -> tuple[object, dict]:
    """Run ``fn`` with the peak memory reset; its result and {seconds, peak_rss_mb, extra_mb}."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    before = memory_mb("VmRSS")
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    peak = memory_mb("VmHWM")
    return value, {"seconds": round(seconds, 2), "peak_rss_mb": round(peak), "extra_mb": round(peak - before)}


def phase(name: str, fn, results: list[dict], **extra):
    """:func:`measure` ``fn``, append the record (phase name, ``extra`` fields, time, memory); return its result."""
    value, record = measure(fn)
    results.append({"phase": name, **extra, **record})
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


def save_head_for(encoder, folder: Path) -> str:
    """'' (the packaged F4 head) for the default model; for another model the folder of an untrained F4 head of
    its width (timing only)."""
    if encoder.model_name == cv.DEFAULT_MODEL:
        return ""
    from pyterrier_compverify.scoring import build_head

    return str(cv.Verifier.save(folder / "f4", encoder, build_head("F4", dim=encoder.dim), "F4").path)


def reranker(name: str, encoder, store, head: str):
    """``MaxSim`` or ``MapVerifier`` (the packaged head, or the one in the folder ``head``) over ``store``."""
    if name == "MaxSim":
        return cv.MaxSim(encoder, store=store)
    return cv.MapVerifier(head or None, encoder=encoder, store=store)


def child(args) -> None:
    """One (reranker, query count) of the memory check: warm up, then print the measured record as JSON."""
    encoder = cv.TokenEncoder(args.model, device="cpu")
    store = cv.TokenStore(args.store)
    scorer = reranker(args.child, encoder, store, args.head)
    rng = np.random.default_rng(args.queries)
    scorer(candidates(1, args.depth, len(store), rng))  # lazily made parts (threads, buffers) exist from here
    states = store._states  # every store page mapped in, a chunk at a time: RSS now holds them all
    for start in range(0, len(states), 1 << 16):
        float(states[start : start + (1 << 16)].max())
    frame = candidates(args.queries, args.depth, len(store), rng)
    anon_before = memory_mb("RssAnon")
    _, record = measure(lambda: scorer(frame))
    record.update(anon_before_mb=round(anon_before), anon_after_mb=round(memory_mb("RssAnon")))
    record.update(rss_file_mb=round(memory_mb("RssFile")), frame_mb=round(frame_mb(frame), 1))
    print(json.dumps({"reranker": args.child, "rows": len(frame), "queries": args.queries, **record}))


def frame_mb(frame: pd.DataFrame) -> float:
    """The memory of ``frame`` (its Python strings included) in MB: what a copy of the frame costs."""
    return frame.memory_usage(deep=True).sum() / 2**20


def growth_record(args, name: str, n: int, store: Path, head: str) -> dict:
    """Run :func:`child` in a fresh process and return its record."""
    command = [sys.executable, __file__, "--child", name, "--queries", str(n), "--depth", str(args.depth)]
    command += ["--store", str(store), "--model", args.model, "--head", head]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    record = json.loads(out.strip().splitlines()[-1])
    print(record, flush=True)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=cv.DEFAULT_MODEL)
    parser.add_argument("--docs", type=int, default=20_000, help="documents in the store")
    parser.add_argument("--queries", type=int, default=100, help="queries of the 10,000-row frame (x --depth)")
    parser.add_argument("--depth", type=int, default=100, help="documents per query")
    parser.add_argument("--growth", default="10,50,100,200", help="query counts of the memory-against-queries check")
    parser.add_argument("--store", default=None, help="build the store here (default: a temporary folder)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "load"))
    parser.add_argument("--child", choices=RERANKERS, help=argparse.SUPPRESS)  # one memory-check process
    parser.add_argument("--head", default="", help=argparse.SUPPRESS)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    if args.child:  # a memory-check process started by this script: it writes no results
        return child(args)
    refuse_overwrite(args.out, args.overwrite)
    if args.store and Path(args.store).expanduser().exists() and not args.overwrite:  # it is rebuilt from random text
        parser.error(f"--store {args.store} exists: give a new folder (it is rebuilt), or --overwrite")
    started, load_average = time.time(), os.getloadavg()
    rng = np.random.default_rng(0)
    results: list[dict] = []
    encoder = phase("load encoder", lambda: cv.TokenEncoder(args.model, device="cpu"), results)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.store or Path(tmp) / "load.tokens")
        docs = documents(args.docs, rng)
        indexer = cv.TokenStore(path).indexer(encoder, verbose=False, mode="overwrite")
        phase("build store", lambda: indexer.index(docs), results, docs=args.docs)

        def open_store():
            store = cv.TokenStore(path)
            len(store)
            return store

        store = phase("open store", open_store, results, docs=args.docs)
        on_disk = sum(p.stat().st_size for p in path.iterdir())
        frame = candidates(args.queries, args.depth, args.docs, rng)
        rows = {"rows": len(frame), "queries": args.queries}
        head = save_head_for(encoder, Path(tmp))
        scores = {}
        for name in RERANKERS:
            scorer = reranker(name, encoder, store, head)
            scores[name] = phase(f"{name}, store", lambda scorer=scorer: scorer(frame), results, **rows)
        finite = all(bool(np.isfinite(s["score"]).all()) for s in scores.values())
        queries = [int(x) for x in args.growth.split(",")]
        growth = [growth_record(args, name, n, path, head) for name in RERANKERS for n in queries]
    results += [{"phase": f"{g.pop('reranker')}, fresh process", **g} for g in growth]
    table = pd.DataFrame([{k: str(v) for k, v in r.items()} for r in results]).fillna("")
    lines = []
    for name in RERANKERS:
        runs = [r for r in results if r["phase"] == f"{name}, fresh process"]
        extra = [r["extra_mb"] for r in runs]
        kept = [r["anon_after_mb"] - r["anon_before_mb"] for r in runs]
        slope = np.polyfit(queries, extra, 1)[0] if len(queries) > 1 else 0.0
        lines.append(
            f"{name}, at {', '.join(map(str, queries))} queries (x {args.depth} rows): peak extra memory "
            f"{', '.join(f'{e} MB' for e in extra)} (slope {slope * 100:.1f} MB per 100 queries), against an "
            f"input frame of {', '.join(str(r['frame_mb']) for r in runs)} MB; anonymous memory kept after the "
            f"call {', '.join(f'{k} MB' for k in kept)}."
        )
    end_load = os.getloadavg()
    summary = (
        f"\n\nLoad average (1, 5, 15 min) at the start: {', '.join(f'{x:.2f}' for x in load_average)}; at the end: "
        f"{', '.join(f'{x:.2f}' for x in end_load)}. Store: {args.docs} documents, {on_disk / 1e6:.0f} MB on disk. "
        f"All scores finite: {finite}.\n\n" + "\n".join(lines) + "\n"
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
