"""Benchmark: ``compverify evaluate``'s reranking pipelines with the query encoded once or twice, in one run.

``pipelines.standard_pipelines`` builds dense retrieval as ``encoder.query_token_encoder() >> retriever``: the
query's token states travel with the results (``query_toks``), so a reranker of the same encoder does not encode
the queries again. Before, it was ``encoder.query_encoder() >> retriever`` (pooled vector only), and each reranker
encoded every query a second time. This times both forms of ``dense % depth >> reranker`` on every SciFact test
query, for MaxSim and the packaged MapVerifier, interleaved (each round runs each variant once) after one warm-up of
each, best of ``--rounds``, spread shown; the ratio is twice over once, best over best and per round. It also checks
that both forms rank alike (nDCG@10 and the largest score difference).

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data OMP_NUM_THREADS=2 python benchmarks/query_once.py

Writes benchmarks/results/query_once.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import ir_measures
import pandas as pd
import torch
from interleaved import interleave_pipelines, ratio, spread, write_results
from rerank_common import open_indices, reranking_args

import pyterrier_compverify as cv
from pyterrier_compverify.pipelines import standard_pipelines


def main() -> None:
    args = reranking_args(argparse.ArgumentParser(description=__doc__.split("\n")[0]), "query_once")
    started = time.time()
    collection, encoder, indices = open_indices(args.dataset, args.index_dir)
    topics, qrels = collection.topics(), collection.qrels()
    rerankers = {"MaxSim": cv.MaxSim(encoder, store=indices.store), "MapVerifier": cv.MapVerifier(store=indices.store)}
    once = standard_pipelines(indices, encoder, depth=args.depth, rerankers=rerankers)
    twice_dense = encoder.query_encoder() >> indices.flex.retriever(num_results=1000, drop_query_vec=True)
    variants = {}
    for name, reranker in rerankers.items():
        variants[f"{name}, query encoded twice"] = (twice_dense % args.depth) >> reranker
        variants[f"{name}, query encoded once"] = once[f"Dense >> {name}@{args.depth}"]
    times, results, load = interleave_pipelines(variants, topics, rounds=args.rounds)
    rows, ratios = [], []
    for name, t in times.items():
        run = results[name].rename(columns={"qid": "query_id", "docno": "doc_id"})
        ndcg = ir_measures.calc_aggregate(
            [ir_measures.nDCG @ 10],
            qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}),
            run,
        )
        rows.append(
            {
                "variant": name,
                "best s": round(min(t), 2),
                "spread s": spread(t),
                "nDCG@10": round(ndcg[ir_measures.nDCG @ 10], 4),
            }
        )
    for name in rerankers:
        best, per_round = ratio(times, f"{name}, query encoded twice", f"{name}, query encoded once")
        both = results[f"{name}, query encoded twice"].merge(
            results[f"{name}, query encoded once"], on=["qid", "docno"], suffixes=("_twice", "_once")
        )
        gap = (both["score_twice"] - both["score_once"]).abs().max()
        ratios.append(
            f"{name}: twice / once {best:.2f}x best over best (per round {', '.join(f'{r:.2f}' for r in per_round)}); "
            f"{len(both)} of {len(results[f'{name}, query encoded once'])} (query, doc) pairs in both, largest score "
            f"difference {gap:.2g}"
        )
    notes = (
        f"{args.dataset}: {len(topics)} queries, dense top {args.depth} reranked. " + "; ".join(ratios) + ". "
        f"{args.rounds} interleaved rounds after one warm-up of each; encoder {encoder.describe()}; torch threads "
        f"{torch.get_num_threads()}; {load}."
    )
    write_results(
        pd.DataFrame(rows), Path(args.out), "Queries encoded once in the evaluate pipelines", encoder, started, notes
    )


if __name__ == "__main__":
    main()
