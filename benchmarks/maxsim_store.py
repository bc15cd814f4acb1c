"""Benchmark: MaxSim reranking of the dense top-100 on SciFact, from a TokenStore vs encoding candidate texts,
and TokenEncoder.encode throughput vs SentenceTransformer.encode on the same texts. One run, ratios inside it.

    COMPVERIFY_DATA=/path/to/data python benchmarks/maxsim_store.py [--text-queries 10]

Writes benchmarks/results/maxsim_store.{md,json}.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices
from pyterrier_compverify.reporting import write_table


def timed(fn, repeat: int = 1):
    """Best wall time of ``repeat`` calls (seconds) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def ranking_agreement(a, b, tolerance: float = 1e-3) -> dict:
    """How far two scorings of the same (qid, docno) rows agree: max score difference, share of queries with the
    same top-10 order, and pairs ordered differently although their scores differ by more than ``tolerance``."""
    merged = a.merge(b, on=["qid", "docno"], suffixes=("_a", "_b"))
    same_top10, flips = [], 0
    for _, g in merged.groupby("qid"):
        same_top10.append(g.nsmallest(10, "rank_a")["docno"].tolist() == g.nsmallest(10, "rank_b")["docno"].tolist())
        sa, sb = g["score_a"].to_numpy(), g["score_b"].to_numpy()
        da, db = sa[:, None] - sa[None, :], sb[:, None] - sb[None, :]
        flips += int(((np.sign(da) != np.sign(db)) & (np.abs(da) > tolerance)).sum() // 2)
    return {
        "max_abs_score_diff_store_vs_text": round(float((merged["score_a"] - merged["score_b"]).abs().max()), 6),
        "share_queries_same_top10_store_vs_text": float(np.mean(same_top10)),
        f"pairs_flipped_beyond_{tolerance}_store_vs_text": flips,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="irds:beir/scifact/test")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--text-queries", type=int, default=10, help="queries scored from text (slow path)")
    parser.add_argument("--encode-docs", type=int, default=512, help="documents for the throughput comparison")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "maxsim_store"))
    args = parser.parse_args()
    started = time.time()
    cv.setup_local_data()

    collection = load_collection(args.dataset)
    encoder = cv.TokenEncoder(device="cpu")
    indices = build_indices(collection, encoder, DEFAULT_INDEX_DIR)
    indices.flex.verbose = False
    topics = collection.topics()
    dense = encoder.query_encoder() >> indices.flex.retriever(num_results=args.depth, drop_query_vec=True)
    candidates = dense(topics)
    texts = {d["docno"]: d["text"] for d in collection.corpus_iter()}
    n_queries = topics["qid"].nunique()

    from_store = cv.MaxSim(encoder, store=indices.store)
    store_s, store_res = timed(lambda: from_store(candidates), repeat=3)

    few = candidates[candidates["qid"].isin(topics["qid"].iloc[: args.text_queries])]
    few = few.assign(text=few["docno"].map(texts))
    from_text = cv.MaxSim(encoder)
    text_s, text_res = timed(lambda: from_text(few))
    store_few = from_store(few.drop(columns=["text"]))
    agreement = ranking_agreement(text_res, store_few)

    sample = list(texts.values())[: args.encode_docs]
    n_tokens = int(encoder.token_lengths(sample).sum())
    ours_s, _ = timed(lambda: encoder.encode(sample))
    st_s, _ = timed(lambda: encoder.model.encode(sample, batch_size=encoder.batch_size))

    store_ms = 1000 * store_s / n_queries
    text_ms = 1000 * text_s / args.text_queries
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads",
        "dataset": args.dataset,
        "depth": args.depth,
        "maxsim_from_store_ms_per_query": round(store_ms, 2),
        "maxsim_from_text_ms_per_query": round(text_ms, 1),
        "speedup_store_vs_text": round(text_ms / store_ms, 1),
        "store_queries": n_queries,
        "text_queries": args.text_queries,
        **agreement,
        "encode_docs": len(sample),
        "encode_tokens": n_tokens,
        "token_encoder_tokens_per_s": round(n_tokens / ours_s),
        "sentence_transformers_tokens_per_s": round(n_tokens / st_s),
        "token_encoder_vs_st_throughput": round(st_s / ours_s, 3),
    }
    table = pd.DataFrame(list(result.items()), columns=["measurement", "value"]).astype(str)
    write_table(
        table,
        Path(args.out),
        "MaxSim from a TokenStore vs from text; encoding throughput",
        encoder,
        time.time() - started,
    )
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()
