"""Benchmark: ``cv.CrossEncoderScorer`` in fp32 (the default) against ``dtype="bf16"``, on the same pairs in one run.

The pairs: the first ``--queries`` SciFact *train* queries (a dev-side split), each with its BM25 top ``--top``
abstracts (the package's PISA index), as a cross-encoder stage reads them. Both variants interleaved (each round
runs them once), best of ``--rounds``, spread shown; then how alike they rank: the largest logit difference,
Kendall's tau per query (mean and lowest), the share of each query's top 10 they share, and how many scores repeat
an earlier score of their query (ties).

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data python benchmarks/cross_encoder.py --model PATH [--threads 2]

``--model``: a trained cross-encoder (none ships; ``experiments/cross_encoder.py train`` makes one). Writes
benchmarks/results/cross_encoder.{md,json}.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch
from interleaved import benchmark_args, interleave_warm, ratio, spread, write_results
from scipy.stats import kendalltau

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.datasets.collection import CorpusText
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, bm25_index, bm25_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a trained cross-encoder (name or folder)")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    args = benchmark_args(parser, "cross_encoder")
    started = time.time()
    torch.set_num_threads(args.threads)
    cv.setup_local_data()
    corpus = load_collection("irds:beir/scifact/test")  # SciFact's one corpus; the queries are train's
    topics = load_collection("irds:beir/scifact/train").topics().head(args.queries)
    pisa = bm25_index(corpus, DEFAULT_INDEX_DIR / corpus.name / "bm25.pisa")  # built_indices' BM25 index
    pairs = (bm25_pipeline(pisa, args.top) >> CorpusText(corpus))(topics)
    scorers = {dtype: cv.CrossEncoderScorer(args.model, dtype=dtype) for dtype in ("fp32", "bf16")}
    times, results, load = interleave_warm({d: (lambda s=s: s(pairs)) for d, s in scorers.items()}, args.rounds)
    fp32, bf16 = (results[d].sort_values(["qid", "docno"]).reset_index(drop=True) for d in ("fp32", "bf16"))
    assert (fp32[["qid", "docno"]] == bf16[["qid", "docno"]]).all().all()  # the same pairs, row for row
    ties = {d: int(f.duplicated(["qid", "score"]).sum()) for d, f in (("fp32", fp32), ("bf16", bf16))}
    taus, shared = [], []
    for (_, a), (_, b) in zip(fp32.groupby("qid"), bf16.groupby("qid")):
        taus.append(kendalltau(a["score"], b["score"]).statistic)
        top = [set(f.nsmallest(10, "rank")["docno"]) for f in (a, b)]
        shared.append(len(top[0] & top[1]) / 10)
    best, rounds = ratio(times, "fp32", "bf16")
    table = pd.DataFrame(
        [
            {"variant": d, "best s": round(min(t), 2), "rounds s": spread(t), "pairs/s": round(len(pairs) / min(t), 1)}
            for d, t in times.items()
        ]
    )
    notes = (
        f"{len(pairs)} pairs ({len(topics)} SciFact train queries x BM25 top {args.top}), model `{args.model}`, "
        f"max length {scorers['fp32'].max_length}, {args.threads} threads, {args.rounds} interleaved rounds; "
        f"{load}.\n\n"
        f"bf16 is **{best:.2f}x** faster than fp32 (best over best; per round {spread(rounds)}).\n\n"
        f"Alike: largest logit difference {np.abs(fp32['score'] - bf16['score']).max():.3f} (fp32 logits span "
        f"{fp32['score'].min():.2f} to {fp32['score'].max():.2f}); Kendall's tau per query mean {np.mean(taus):.3f}, "
        f"lowest {np.min(taus):.3f}; top-10 shared {np.mean(shared):.3f} on average, lowest {np.min(shared):.1f}; "
        f"scores repeating an earlier score of their query: fp32 {ties['fp32']}, bf16 {ties['bf16']}."
    )
    write_results(table, args.out, "CrossEncoderScorer: fp32 against bf16", None, started, notes)


if __name__ == "__main__":
    main()
