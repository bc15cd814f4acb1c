"""Near-miss measures: does a scorer put the right text above its minimal edit?

A *scorer* is any PyTerrier transformer that scores a result frame (``qid, query, docno, text``), e.g.
``encoder.text_scorer()`` (pooled cosine) or ``cv.MaxSim(encoder)``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyterrier as pt
from scipy.stats import rankdata


def score_pairs(scorer: pt.Transformer, queries: list[str], texts: list[str]) -> np.ndarray:
    """Scores of (query_i, text_i) pairs with a result-frame scorer, in input order."""
    frame = pd.DataFrame({"query": queries, "text": texts})
    frame["qid"] = "q" + pd.Series(pd.factorize(frame["query"])[0], dtype=str)
    frame["docno"] = "d" + pd.Series(pd.factorize(frame["text"])[0], dtype=str)
    frame["pair"] = np.arange(len(frame))
    scored = scorer(frame)
    return scored.sort_values("pair")["score"].to_numpy(dtype=np.float64)


def win_rate(positive: np.ndarray, near_miss: np.ndarray) -> float:
    """Share of triplets whose positive strictly outscores the near-miss. A tie is a failure to tell them apart
    (it happens when truncation to max_length cuts the edit away); :func:`tie_rate` reports how often.

    >>> win_rate(np.array([0.9, 0.5, 0.4]), np.array([0.8, 0.6, 0.4]))
    0.3333333333333333
    """
    return float(np.mean(positive > near_miss))


def tie_rate(positive: np.ndarray, near_miss: np.ndarray, tolerance: float = 1e-6) -> float:
    """Share of triplets whose two scores are equal within ``tolerance``.

    >>> tie_rate(np.array([0.9, 0.4]), np.array([0.8, 0.4]))
    0.5
    """
    return float(np.mean(np.abs(positive - near_miss) <= tolerance))


def roc_auc(positive: np.ndarray, near_miss: np.ndarray) -> float:
    """ROC AUC separating positive scores from near-miss scores (Mann-Whitney U / (n_pos * n_neg)).

    >>> roc_auc(np.array([0.9, 0.7]), np.array([0.8, 0.1]))
    0.75
    """
    ranks = rankdata(np.concatenate([positive, near_miss]))
    n_pos, n_neg = len(positive), len(near_miss)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def b_lower_share(scores_a: np.ndarray, scores_b: np.ndarray, margin: float = 0.01) -> float:
    """The paper's A-vs-B comparison: share of near-miss pairs that model B scores lower than A by > margin.

    >>> b_lower_share(np.array([0.9, 0.9, 0.9]), np.array([0.85, 0.895, 0.95]))
    0.3333333333333333
    """
    return float(np.mean(scores_b < scores_a - margin))


def nearmiss_scores(scorer: pt.Transformer, triplets: pd.DataFrame) -> pd.DataFrame:
    """``triplets`` plus ``s_pos`` = score(anchor, positive) and ``s_neg`` = score(anchor, near_miss)."""
    n = len(triplets)
    scores = score_pairs(
        scorer,
        list(triplets["anchor"]) * 2,
        list(triplets["positive"]) + list(triplets["near_miss"]),
    )
    return triplets.assign(s_pos=scores[:n], s_neg=scores[n:])


def nearmiss_table(scorers: Mapping[str, pt.Transformer], triplets: pd.DataFrame) -> pd.DataFrame:
    """Per scorer and category: n, win rate, tie rate, AUC, mean near-miss similarity (the paper's, lower is
    better) and mean positive similarity."""
    rows = []
    for name, scorer in scorers.items():
        scored = nearmiss_scores(scorer, triplets)
        for (source, category), g in scored.groupby(["source", "category"], sort=True):
            pos, neg = g["s_pos"].to_numpy(), g["s_neg"].to_numpy()
            rows.append(
                {
                    "scorer": name,
                    "source": source,
                    "category": category,
                    "kind": g["kind"].iloc[0],
                    "n": len(g),
                    "win_rate": win_rate(pos, neg),
                    "tie_rate": tie_rate(pos, neg),
                    "auc": roc_auc(pos, neg),
                    "mean_nearmiss_sim": float(neg.mean()),
                    "mean_positive_sim": float(pos.mean()),
                }
            )
    return pd.DataFrame(rows)


def near_miss_win(near_miss: Mapping[str, str]):
    """An ir_measures measure for ``pt.Experiment``: per query, 1 if the relevant document is ranked above the
    query's near-miss (a near-miss missing from the run counts as below), else 0. ``near_miss`` maps qid to the
    near-miss docno (``cv.datasets.nearmiss.near_miss_docnos(dataset_id)``)."""
    import ir_measures

    def impl(qrels: pd.DataFrame, run: pd.DataFrame) -> float:
        qid = run["query_id"].iloc[0]
        scores = dict(zip(run["doc_id"], run["score"]))
        relevant = qrels.loc[qrels["relevance"] > 0, "doc_id"]
        best = max((scores.get(d, -np.inf) for d in relevant), default=-np.inf)
        return float(best > scores.get(near_miss.get(qid), -np.inf))

    return ir_measures.define_byquery(impl, name="NearMissWin", support_cutoff=False)
