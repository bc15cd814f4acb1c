"""Issue 18: does a coverage signal help the packaged CapRetrievalEn fusion? Chosen on dev, then read on test.

The granularity dilemma (PAPERS.md) is about how much of a caption a short query accounts for. MaxSim reads the
query's side only (each query token's best match in the caption); coverage reads the caption's side: the mean
over the caption's tokens of each one's best cosine with any query token, so a caption about the query scores
higher than one where the query is a detail. It is added with a weight to the packaged fusion
(``pipelines.fusion_pipeline``: z-normalised WeightedMaxSim 1 + BM25 0.1 over dense top k | BM25 top k, with the
packaged seed-42 F1w head) and read on the dev tasks of ``capretrieval_best.py`` (Flickr8k dev caption
retrieval and 300 held-out SciFact train queries). The weight is chosen at the packaged depth (300) by
``weighted_fusion.py``'s rule: the best dev:flickr8k among the weights whose dev:scifact-train nDCG@10 is within
0.005 of ``(dense | BM25) >> MaxSim`` at depth 100. ``--test`` then scores the chosen weight against the packaged
fusion (weight 0) on the test collections.

    COMPVERIFY_DATA=/path/to/data python experiments/coverage_signal.py [--test] [--cache runs/coverage-features.pkl]

Writes ``--out`` (default experiments/results/coverage-signal/coverage).{md,json}.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import torch
from ir_measures import nDCG
from scipy.stats import ttest_rel

import pyterrier_compverify as cv
from pyterrier_compverify.fusion import ScoreFusion
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, FUSION_WEIGHTS, build_indices
from pyterrier_compverify.reporting import write_table
from pyterrier_compverify.rerank import TokenReranker
from pyterrier_compverify.scoring.heads.fixed import FixedHead, maxsim
from pyterrier_compverify.scoring.simmap import batch_mask

sys.path.insert(0, str(Path(__file__).resolve().parent))
import weighted_fusion as wf  # noqa: E402
from capretrieval_best import DEVS, TESTS, task  # noqa: E402

WEIGHTS = (0.0, 0.1, 0.25, 0.5, 1.0)
DEPTHS = (100, 300)
PACKAGED_HEAD = Path(cv.__file__).parent / "weights" / "f1w-minilm-frozen"


def coverage(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """sim (B, m, n) -> (B,): mean over real candidate tokens of the best cosine with a real query token.

    >>> sim = torch.tensor([[[0.9, 0.1], [0.2, 0.3]]])  # two query tokens, two candidate tokens
    >>> round(coverage(sim, torch.tensor([True, True]), torch.tensor([[True, True]])).item(), 4)  # (0.9 + 0.3) / 2
    0.6
    """
    return maxsim(
        sim.transpose(1, 2), cand_mask, batch_mask(query_mask, sim.shape[0])
    )  # MaxSim from the caption's side


def features(name: str, encoder: cv.TokenEncoder, index_dir: Path) -> tuple:
    """``weighted_fusion.features`` at depth 300 with the packaged head (``wmaxsim s42``), plus ``coverage``."""
    frame, qrels, vectors = wf.features(name, encoder, {42: str(PACKAGED_HEAD)}, index_dir, depth=max(DEPTHS))
    collection, _, _ = task(name, index_dir)
    store = build_indices(collection, encoder, index_dir, verbose=False).store
    scorer = TokenReranker(encoder, head=FixedHead(coverage, "coverage"), store=store)
    pool = frame[["qid", "docno", "query"]].assign(score=0.0, rank=0)
    scores = ScoreFusion({"coverage": scorer}, weights={}).features(pool)[["qid", "docno", "coverage"]]
    return frame.merge(scores, on=["qid", "docno"], how="left"), qrels, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", help="a pickle of the features: read when it exists, else written")
    parser.add_argument("--test", action="store_true", help="score the dev-chosen weight on the test collections")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "coverage-signal" / "coverage"))
    args = parser.parse_args()
    started = time.time()
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    cache = Path(args.cache) if args.cache else None
    tasks = DEVS + (TESTS if args.test else [])
    data = pickle.loads(cache.read_bytes()) if cache is not None and cache.exists() else {}
    for name in tasks:
        if name not in data:
            data[name] = features(name, encoder, Path(args.index_dir))
            print(f"{name}: {len(data[name][0])} rows, {time.time() - started:.0f} s", flush=True)
    if cache is not None:
        cache.write_bytes(pickle.dumps(data))
    fusion = {"wmaxsim s42" if k == "wmaxsim" else k: v for k, v in FUSION_WEIGHTS.items()}
    rows = []
    for depth in DEPTHS:
        for weight in WEIGHTS:
            row = {"depth": depth, "coverage": weight}
            for name in DEVS:
                frame, qrels, vectors = data[name]
                row[name] = wf.ndcg(wf.ranking(frame, vectors, depth=depth, coverage=weight, **fusion), qrels)
            rows.append(row)
    table = pd.DataFrame(rows)
    frame, qrels, _ = data["dev:scifact-train"]
    floor = wf.ndcg(wf.at_depth(frame, 100), qrels, {"maxsim": 1.0}) - wf.MARGIN
    allowed = table[(table["depth"] == max(DEPTHS)) & (table["dev:scifact-train"] >= floor)]
    chosen = float(table.loc[allowed["dev:flickr8k"].idxmax(), "coverage"])
    lines = [
        f"Fusion weights {FUSION_WEIGHTS} (the packaged seed-42 F1w head) plus coverage. Chosen at depth "
        f"{max(DEPTHS)}: coverage {chosen} (dev:scifact-train floor {floor:.4f}).",
        "",
        "## Dev nDCG@10",
        "",
        table.round(4).to_markdown(index=False),
    ]
    if args.test:
        test = []
        for name in TESTS:
            frame, qrels, vectors = data[name]
            row = {"task": name}
            for label, weight in (("packaged fusion", 0.0), (f"+ coverage {chosen}", chosen)):
                run = wf.top10(wf.ranking(frame, vectors, depth=max(DEPTHS), coverage=weight, **fusion))
                run = run[["qid", "docno", "score"]].rename(columns=wf.TREC)
                row[label] = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, run)}
            base, new = row["packaged fusion"], row[f"+ coverage {chosen}"]
            qids = sorted(base)
            row["up / down"] = f"{sum(new[q] > base[q] for q in qids)} / {sum(new[q] < base[q] for q in qids)}"
            row["p (paired t)"] = float(ttest_rel([new[q] for q in qids], [base[q] for q in qids]).pvalue)
            row["packaged fusion"], row[f"+ coverage {chosen}"] = (
                np.mean(list(base.values())),
                np.mean(list(new.values())),
            )
            test.append(row)
        lines += [
            "",
            "## Test nDCG@10 (the dev-chosen weight; nothing chosen here)",
            "",
            pd.DataFrame(test).round(4).to_markdown(index=False),
        ]
    markdown = "\n".join(lines) + "\n"
    write_table(table.round(4), Path(args.out), "Coverage signal beside the packaged fusion (issue 18)", encoder,
                time.time() - started, markdown=markdown)  # fmt: skip
    print(markdown)


if __name__ == "__main__":
    main()
