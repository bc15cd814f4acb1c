"""Benchmark: the README's ``pt.Experiment`` (dense, dense >> MaxSim, dense >> MapVerifier) with PyTerrier's
``plan="linear"`` (each system runs whole) against ``plan="tree"`` (the shared dense stage runs once, its results
go to both rerankers), in one run.

The tree plan finds the shared stage by transformer equality, which the rerankers define (``TokenReranker._eq_key``);
this also checks that both plans give the same table. Each round runs each plan once, after one warm-up of each;
best of ``--rounds``, spread shown; the ratio is linear over tree, best over best and per round.

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data OMP_NUM_THREADS=2 python benchmarks/experiment_plan.py

Writes benchmarks/results/experiment_plan.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import pyterrier as pt
import torch
from interleaved import interleave_warm, ratio, spread, write_results
from pyterrier.measures import RR, nDCG
from rerank_common import open_indices, reranking_args

import pyterrier_compverify as cv

PLANS = ("linear", "tree")


def main() -> None:
    args = reranking_args(argparse.ArgumentParser(description=__doc__.split("\n")[0]), "experiment_plan")
    started = time.time()
    collection, encoder, indices = open_indices(args.dataset, args.index_dir)
    topics, qrels = collection.topics(), collection.qrels()
    dense = encoder.query_token_encoder() >> indices.flex.retriever(num_results=1000, drop_query_vec=True)
    rerankers = [cv.MaxSim(encoder, store=indices.store), cv.MapVerifier(encoder=encoder, store=indices.store)]
    systems = [dense, *(dense % args.depth >> reranker for reranker in rerankers)]
    names = ["dense", "dense >> MaxSim", "dense >> MapVerifier"]

    def experiment(plan: str):
        return lambda: pt.Experiment(
            systems, topics, qrels, [nDCG @ 10, RR], names=names, plan=plan, round=4, verbose=False
        )

    times, tables, load = interleave_warm({plan: experiment(plan) for plan in PLANS}, rounds=args.rounds)
    same = tables["linear"].equals(tables["tree"])
    rows = [{"plan": plan, "best s": round(min(t), 2), "spread s": spread(t)} for plan, t in times.items()]
    best, per_round = ratio(times, "linear", "tree")
    scores = ", ".join(f"{n} {v:.4f}" for n, v in zip(tables["tree"]["name"], tables["tree"]["nDCG@10"]))
    notes = (
        f"{args.dataset}: {len(topics)} queries, three systems, dense top {args.depth} reranked. linear / tree "
        f"{best:.2f}x best over best (per round {', '.join(f'{r:.2f}' for r in per_round)}); the two tables are "
        f"{'identical' if same else 'DIFFERENT'} (nDCG@10: {scores}). {args.rounds} interleaved rounds after one "
        f"warm-up of each; encoder {encoder.describe()}; torch threads {torch.get_num_threads()}; {load}."
    )
    write_results(pd.DataFrame(rows), Path(args.out), "pt.Experiment plan: linear vs tree", encoder, started, notes)
    if not same:
        raise SystemExit("the linear and tree plans gave different tables")


if __name__ == "__main__":
    main()
