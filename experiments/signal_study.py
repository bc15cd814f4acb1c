"""One more signal beside the packaged CapRetrievalEn fusion, its weight chosen on dev and read once on test (issue
18): the procedure that ``coverage_signal.py`` and ``splade_signal.py`` share.

The packaged fusion (``pipelines.fusion_pipeline``) is z-normalised WeightedMaxSim 1 + BM25 0.1 over dense top k |
BM25 top k, with the packaged seed-42 F1w head. A signal column is added with each weight of ``WEIGHTS`` and read on
the dev tasks of ``capretrieval_best.py`` (Flickr8k dev caption retrieval and 300 held-out SciFact train queries).
The weight is chosen at the packaged depth (300) by ``weighted_fusion.py``'s rule: the best dev:flickr8k among the
weights whose dev:scifact-train nDCG@10 is within 0.005 of ``(dense | BM25) >> MaxSim`` at depth 100. With
``--test`` the chosen weight is then scored against the packaged fusion (weight 0) on the test collections, with
queries up / down and a paired t-test.
"""

from __future__ import annotations

import argparse
import pickle
import time
from collections.abc import Callable
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import weighted_fusion as wf
from capretrieval_best import DEVS, TESTS
from dev_rule import MARGIN, best_on_dev
from ir_measures import nDCG
from scipy.stats import ttest_rel

import pyterrier_compverify as cv
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, FUSION_WEIGHTS
from pyterrier_compverify.reporting import write_table

WEIGHTS = (0.0, 0.1, 0.25, 0.5, 1.0)
DEPTHS = (100, 300)
PACKAGED_HEAD = Path(cv.__file__).parent / "weights" / "f1w-minilm-frozen"

# a task's (pool with one raw column per signal, qrels, dense vectors), as weighted_fusion.features returns it
Features = tuple[pd.DataFrame, pd.DataFrame, np.ndarray]


def parser(doc: str, out: str) -> argparse.ArgumentParser:
    """The options every study takes (``--cache``, ``--test``, ``--index-dir``, ``--out``)."""
    made = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    made.add_argument(
        "--cache", help="a pickle of the features, keyed by task only: read as is when it exists, else written"
    )
    made.add_argument("--test", action="store_true", help="score the dev-chosen weight on the test collections")
    made.add_argument(
        "--diagnostic", action="store_true", help="with --test, also every weight on test (after the choice)"
    )
    made.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    made.add_argument("--out", default=out)
    made.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    return made


def packaged_features(name: str, encoder: cv.TokenEncoder, index_dir: Path) -> Features:
    """``weighted_fusion.features`` at depth 300 with the packaged head (column ``wmaxsim s42``)."""
    return wf.features(name, encoder, {42: str(PACKAGED_HEAD)}, index_dir, depth=max(DEPTHS))


def scifact_floor(data: dict) -> float:
    """The dev rule's floor: held-out SciFact train nDCG@10 of ``(dense | BM25) >> MaxSim`` at depth 100, minus
    ``MARGIN`` (``data``: the study's features by task)."""
    frame, qrels, _ = data["dev:scifact-train"]
    return wf.ndcg(wf.at_depth(frame, 100), qrels, {"maxsim": 1.0}) - MARGIN


def choose(table: pd.DataFrame, signal: str, floor: float) -> float:
    """The weight with the best dev:flickr8k at the packaged depth among those whose dev:scifact-train reaches
    ``floor``.

    >>> table = pd.DataFrame({"depth": [300] * 3, "x": [0.0, 0.5, 1.0], "dev:flickr8k": [0.40, 0.42, 0.45],
    ...                       "dev:scifact-train": [0.66, 0.66, 0.60]})
    >>> choose(table, "x", floor=0.65)
    0.5
    """
    packaged = table[table["depth"] == max(DEPTHS)]
    return float(table.loc[best_on_dev(packaged, floor), signal])


def study(signal: str, features: Callable[[str], Features], args, title: str, encoder, note: str = "") -> str:
    """Run the study of column ``signal`` (``features(task)`` gives a task's features with it) and write
    ``args.out``, which the caller has checked with ``reporting.refuse_overwrite`` before loading anything;
    returns the markdown."""
    started = time.time()
    cache = Path(args.cache) if args.cache else None
    data = pickle.loads(cache.read_bytes()) if cache is not None and cache.exists() else {}
    for name in DEVS + (TESTS if args.test else []):
        if name not in data:
            data[name] = features(name)
            print(f"{name}: {len(data[name][0])} rows, {time.time() - started:.0f} s", flush=True)
            if cache is not None:
                cache.write_bytes(pickle.dumps(data))
    fusion = wf.seeded(FUSION_WEIGHTS, 42)
    rows = []
    for depth in DEPTHS:
        for weight in WEIGHTS:
            row = {"depth": depth, signal: weight}
            for name in DEVS:
                frame, qrels, vectors = data[name]
                row[name] = wf.ndcg(wf.ranking(frame, vectors, depth=depth, **{**fusion, signal: weight}), qrels)
            rows.append(row)
    table = pd.DataFrame(rows)
    floor = scifact_floor(data)
    chosen = choose(table, signal, floor)
    lines = [
        *([note, ""] if note else []),
        f"Fusion weights {FUSION_WEIGHTS} (the packaged seed-42 F1w head) plus {signal}. Chosen at depth "
        f"{max(DEPTHS)}: {signal} {chosen} (dev:scifact-train floor {floor:.4f}).",
        "",
        "## Dev nDCG@10",
        "",
        table.round(4).to_markdown(index=False),
    ]
    if args.test:
        lines += ["", "## Test nDCG@10 (the dev-chosen weight; nothing chosen here)", "",
                  test_table(data, fusion, signal, chosen).round(4).to_markdown(index=False)]  # fmt: skip
        if args.diagnostic:
            heading = f"## Diagnostic: test nDCG@10 at every weight, depth {max(DEPTHS)} (read after the choice)"
            lines += ["", heading, "", every_weight(data, fusion, signal).round(4).to_markdown(index=False)]
    markdown = "\n".join(lines) + "\n"
    write_table(table.round(4), Path(args.out), title, encoder, time.time() - started, markdown=markdown)
    return markdown


def every_weight(data: dict, fusion: dict, signal: str) -> pd.DataFrame:
    """Test nDCG@10 of the fusion with ``signal`` at each weight of ``WEIGHTS``, and of ``signal`` alone, over the
    packaged pool."""
    rows = []
    for name in TESTS:
        frame, qrels, vectors = data[name]
        row = {"task": name}
        for weight in WEIGHTS:
            row[f"{signal} {weight}"] = wf.ndcg(
                wf.ranking(frame, vectors, depth=max(DEPTHS), **{**fusion, signal: weight}), qrels
            )
        row[f"{signal} alone"] = wf.ndcg(wf.at_depth(frame, max(DEPTHS)), qrels, {signal: 1.0})
        rows.append(row)
    return pd.DataFrame(rows)


def test_table(data: dict, fusion: dict, signal: str, chosen: float) -> pd.DataFrame:
    """Per test collection: nDCG@10 of the packaged fusion and with ``signal`` at ``chosen``, queries up / down
    and the paired t-test's p."""
    rows = []
    for name in TESTS:
        frame, qrels, vectors = data[name]
        per_query = {}
        for label, weight in (("packaged fusion", 0.0), (f"+ {signal} {chosen}", chosen)):
            run = wf.top10(wf.ranking(frame, vectors, depth=max(DEPTHS), **{**fusion, signal: weight}))
            run = run[["qid", "docno", "score"]].rename(columns=wf.TREC)
            per_query[label] = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, run)}
        base, new = per_query.values()
        qids = sorted(base)
        rows.append(
            {
                "task": name,
                **{label: np.mean(list(scores.values())) for label, scores in per_query.items()},
                "up / down": f"{sum(new[q] > base[q] for q in qids)} / {sum(new[q] < base[q] for q in qids)}",
                "p (paired t)": float(ttest_rel([new[q] for q in qids], [base[q] for q in qids]).pvalue),
            }
        )
    return pd.DataFrame(rows)
