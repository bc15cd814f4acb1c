"""Recall from both BM25 and dense, then MaxSim: does a lexical recall stage close CapRetrieval's literal misses
without costing SciFact? All with the offline MiniLM (or --model), no training, no parameter tuned on a test set.

    COMPVERIFY_DATA=/path/to/data python experiments/hybrid.py [--model PATH]

Systems: dense, BM25, dense >> MaxSim@100, (dense top 100 | BM25 top 100) >> MaxSim (set union, rescored by
MaxSim from the TokenStore), reciprocal rank fusion (k=60, the usual constant) of BM25 with that, and the union
>> MapVerifier (the packaged head; base MiniLM only).
Writes experiments/results/hybrid.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import pyterrier as pt
from ir_measures import RR, Success, nDCG
from pyterrier_alpha.fusion import RRFusion

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.encoder import DEFAULT_MODEL
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, bm25_pipeline, build_indices
from pyterrier_compverify.reporting import refuse_overwrite, write_table

COLLECTIONS = ["compverify/capretrieval/en", "irds:beir/scifact/test", "irds:cranfield"]
MEASURES = [nDCG @ 10, nDCG @ 1, nDCG @ 5, RR @ 10, Success @ 10]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--collections", default=",".join(COLLECTIONS))
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    parser.add_argument("--out", default="experiments/results/hybrid")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    started = time.time()
    encoder = cv.TokenEncoder(args.model, max_length=128, verbose=False)
    tables = []
    for dataset_id in args.collections.split(","):
        collection = load_collection(dataset_id)
        indices = build_indices(collection, encoder, args.index_dir, verbose=False)
        dense = encoder.query_encoder() >> indices.flex.retriever(num_results=args.depth, drop_query_vec=True)
        bm25 = bm25_pipeline(indices.pisa, num_results=args.depth, language=indices.language)
        maxsim = cv.MaxSim(encoder, store=indices.store)
        union = dense | bm25
        systems = {
            "Dense": dense,
            "BM25": bm25,
            f"Dense >> MaxSim@{args.depth}": dense >> maxsim,
            f"(Dense | BM25)@{args.depth} >> MaxSim": union >> maxsim,
            f"RRF(BM25, (Dense | BM25)@{args.depth} >> MaxSim)": RRFusion(bm25, union >> maxsim, k=60),
        }
        if args.model == DEFAULT_MODEL:
            systems[f"(Dense | BM25)@{args.depth} >> MapVerifier"] = union >> cv.MapVerifier(store=indices.store)
        res = pt.Experiment(
            list(systems.values()), collection.topics(), collection.qrels(), MEASURES, names=list(systems),
            baseline=2, round=4,
        )  # fmt: skip
        res.insert(0, "collection", dataset_id)
        tables.append(res)
        print(res[["name", "nDCG@10"]].to_markdown(index=False), flush=True)
    results = pd.concat(tables, ignore_index=True)
    wide = results.pivot_table(index="name", columns="collection", values="nDCG@10", sort=False)
    markdown = "\n".join(
        [
            "## nDCG@10",
            "",
            wide[args.collections.split(",")].to_markdown(),
            "",
            "## All measures (paired t-tests against Dense >> MaxSim)",
            "",
            results.to_markdown(index=False),
        ]
    )
    write_table(results, Path(args.out), "Hybrid recall (dense | BM25) >> MaxSim", encoder, time.time() - started,
                markdown)  # fmt: skip


if __name__ == "__main__":
    main()
