"""Benchmark: what BM25's second run costs in ``pipelines.fusion_pipeline`` on CapRetrievalEn, in one run.

The fusion pipeline runs BM25 twice per query: once for the pool (``bm25 % depth``, unioned with dense's top
``depth``) and once inside ``ScoreFusion`` as a retriever (its top 1000, whose scores are joined to the pool). The
pool's run is BM25's top 1000 cut to ``depth``, so sharing the two would save at most one BM25 run. This times the
whole pipeline and the two BM25 runs alone, on every scored query, interleaved (each round runs each variant once)
after one warm-up of each, best of ``--rounds``, spread shown; the share is the pool's BM25 run over the pipeline,
best over best and per round.

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data OMP_NUM_THREADS=2 python benchmarks/fusion_bm25.py

Writes benchmarks/results/fusion_bm25.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import torch
from interleaved import benchmark_args, interleave_pipelines, ratio, spread, write_results

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.pipelines import (
    DEFAULT_INDEX_DIR,
    FUSION_DEPTH,
    bm25_pipeline,
    build_indices,
    fusion_pipeline,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="compverify/capretrieval/en")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    args = benchmark_args(parser, "fusion_bm25")
    started = time.time()
    cv.setup_local_data()
    collection = load_collection(args.dataset)
    encoder = cv.TokenEncoder(max_length=128, device="cpu", verbose=False)
    indices = build_indices(collection, encoder, args.index_dir, verbose=False)
    topics = collection.topics()
    bm25 = bm25_pipeline(indices.pisa, language=indices.language)
    variants = {
        "fusion pipeline": fusion_pipeline(indices, encoder),
        f"BM25 top {FUSION_DEPTH} (the pool's run)": bm25 % FUSION_DEPTH,
        "BM25 top 1000 (the scorer's run)": bm25,
    }
    times, results, load = interleave_pipelines(variants, topics, rounds=args.rounds)
    pool = f"BM25 top {FUSION_DEPTH} (the pool's run)"
    share, per_round = ratio(times, pool, "fusion pipeline")
    table = pd.DataFrame(
        [
            {
                "variant": name,
                "best ms": round(1000 * min(t), 1),
                "spread ms": spread([1000 * x for x in t], 1),
                "rows": len(results[name]),
            }  # fmt: skip
            for name, t in times.items()
        ]
    )
    notes = (
        f"{args.dataset}: {len(topics)} queries; pool depth {FUSION_DEPTH}. The pool's BM25 run is "
        f"{100 * share:.2f}% of the pipeline's time, best over best (per round: "
        f"{', '.join(f'{100 * r:.2f}%' for r in per_round)}): the most that sharing one BM25 run could save. "
        f"Rows: what each variant returns for all queries (BM25 matches few captions of these short queries, so "
        f"the cut to {FUSION_DEPTH} removes little). {args.rounds} interleaved rounds after one warm-up of each; "
        f"torch threads {torch.get_num_threads()}; {load}."
    )
    write_results(table, Path(args.out), "BM25's second run in the fusion pipeline", encoder, started, notes)


if __name__ == "__main__":
    main()
