"""Near-miss measures: does a scorer put the right text above its minimal edit, without merely disliking overlap?

A *scorer* is any PyTerrier transformer that scores a result frame (``qid, query, docno, text``), e.g.
``encoder.text_scorer()`` (pooled cosine) or ``cv.MaxSim(encoder)``.

Per triplet (anchor a, positive p, near-miss n) the benchmark asks for s(a, p) > s(a, n) (win rate). Because the
near-miss is a small edit of a, a scorer that prefers *less* word overlap wins that for free, so three controls
go beside it (issue 19): identity win s(a, a) > s(a, n); the share of paraphrases scored at or above the exact copy,
s(a, p) >= s(a, a); distractor recall@1, p above n and k texts of other items. The headline is
min(win rate, identity win): both must hold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import pyterrier as pt
from scipy.stats import rankdata


def score_pairs(scorer: pt.Transformer, queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
    """Scores of (query_i, text_i) pairs with a result-frame scorer, in input order.

    One scorer call over the distinct pairs (a qid per distinct query, a docno per distinct text), so a repeated
    pair is scored once."""
    frame = pd.DataFrame({"query": list(queries), "text": list(texts)})
    if frame.empty:
        return np.empty(0, dtype=np.float64)
    pair_of_row = frame.groupby(["query", "text"], sort=False).ngroup().to_numpy()
    pairs = frame.drop_duplicates(["query", "text"]).reset_index(drop=True)
    pairs["qid"] = "q" + pd.Series(pd.factorize(pairs["query"])[0], dtype=str)
    pairs["docno"] = "d" + pd.Series(pd.factorize(pairs["text"])[0], dtype=str)
    scored = scorer(pairs)
    if len(scored) != len(pairs):
        raise ValueError(f"{scorer!r} returned {len(scored)} rows for {len(pairs)} pairs")
    # back in the pairs' order by (qid, docno): a scorer may sort its rows and drop columns it did not add
    scores = pairs[["qid", "docno"]].merge(scored[["qid", "docno", "score"]], on=["qid", "docno"], how="left")
    if scores["score"].isna().any():
        raise ValueError(f"{scorer!r} returned no score for some of the (qid, docno) pairs it was given")
    return scores["score"].to_numpy(dtype=np.float64)[pair_of_row]


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


def identity_win(identity: np.ndarray, near_miss: np.ndarray) -> float:
    """Share of triplets whose anchor, scored against itself, strictly outscores its near-miss:
    s(a, a) > s(a, n). A similarity passes trivially; a scorer that only penalises overlap fails.

    >>> identity_win(np.array([1.0, 0.2, 0.5]), np.array([0.9, 0.3, 0.5]))
    0.3333333333333333
    """
    return float(np.mean(identity > near_miss))


def paraphrase_over_identity(positive: np.ndarray, identity: np.ndarray, tolerance: float = 1e-6) -> float:
    """Share of triplets where the positive scores at least as high as an exact copy of the anchor:
    s(a, p) >= s(a, a) - tolerance. Lower is better: near 0 for a similarity, near 1 for a near-duplicate
    penalty. A share rather than a mean difference, so that scorers on different scales compare.

    >>> paraphrase_over_identity(np.array([0.8, 1.0, 0.9]), np.array([1.0, 1.0, 0.5]))
    0.6666666666666666
    """
    return float(np.mean(positive >= identity - tolerance))


def distractor_recall_at_1(positive: np.ndarray, near_miss: np.ndarray, distractors: np.ndarray) -> float:
    """Share of anchors whose positive strictly outscores the near-miss and every distractor.

    ``distractors``: (n, k) scores of s(a, d_j) (NaN where a triplet has fewer than k), or (n,) their maxima.

    >>> distractor_recall_at_1(
    ...     np.array([0.9, 0.5, 0.7]), np.array([0.8, 0.6, 0.1]), np.array([[0.1, 0.95], [0.2, 0.3], [0.6, np.nan]])
    ... )
    0.3333333333333333
    """
    d = np.asarray(distractors, dtype=np.float64)
    if d.ndim == 2:
        d = np.max(np.where(np.isnan(d), -np.inf, d), axis=1, initial=-np.inf)
    best_other = np.fmax(near_miss, d)
    return float(np.mean(positive > best_other))


def headline(win: float, identity: float) -> float:
    """The near-miss headline of a category: min(win rate, identity win), as both must hold.

    >>> headline(0.97, 0.0)
    0.0
    """
    return float(min(win, identity))


WORD = re.compile(r"\w+")


def word_jaccard(a: str, b: str) -> float:
    """Jaccard overlap of the lower-cased word sets of two texts (1.0 for two texts without words).

    >>> word_jaccard("A red cat.", "a blue cat")  # {a, cat} of {a, red, blue, cat}
    0.5
    """
    x, y = set(WORD.findall(a.lower())), set(WORD.findall(b.lower()))
    return len(x & y) / len(x | y) if x | y else 1.0


class WordJaccard(pt.Transformer):
    """A model-free scorer of a result frame (``qid, query, docno, text``): the word Jaccard of query and text,
    or with ``anti=True`` 1 - Jaccard, the overlap-averse baseline that wins SugarCrepe without reading
    (the ``jaccard-anti`` scorer of ``compverify nearmiss``)."""

    def __init__(self, anti: bool = False, text_field: str = "text"):
        self.anti, self.text_field = anti, text_field

    def __repr__(self) -> str:
        return f"WordJaccard(anti={self.anti})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        scores = np.array([word_jaccard(q, t) for q, t in zip(inp["query"], inp[self.text_field])], dtype=np.float64)
        out = inp.drop(columns=["score", "rank"], errors="ignore").assign(score=1.0 - scores if self.anti else scores)
        return pt.model.add_ranks(out)


def nearmiss_scores(
    scorer: pt.Transformer, triplets: pd.DataFrame, distractors: list[list[str]] | None = None
) -> pd.DataFrame:
    """``triplets`` plus ``s_pos`` = s(anchor, positive), ``s_neg`` = s(anchor, near_miss), ``s_id`` =
    s(anchor, anchor) and ``s_dist_max`` = the best s(anchor, d) over the triplet's distractors (NaN without any;
    ``distractors`` in row order, e.g. from ``datasets.nearmiss.distractor_texts``). All pairs in one scorer call.
    """
    n = len(triplets)
    anchors = triplets["anchor"].tolist()
    distractors = distractors if distractors is not None else [[] for _ in range(n)]
    owner = np.repeat(np.arange(n), [len(d) for d in distractors])
    scores = score_pairs(
        scorer,
        anchors * 3 + [anchors[i] for i in owner],
        triplets["positive"].tolist() + triplets["near_miss"].tolist() + anchors + [t for d in distractors for t in d],
    )
    best = np.full(n, -np.inf)
    np.maximum.at(best, owner, scores[3 * n :])
    return triplets.assign(
        s_pos=scores[:n],
        s_neg=scores[n : 2 * n],
        s_id=scores[2 * n : 3 * n],
        s_dist_max=np.where(best > -np.inf, best, np.nan),
    )


def nearmiss_table(
    scorers: Mapping[str, pt.Transformer], triplets: pd.DataFrame, *, distractors: int = 20, seed: int = 0
) -> pd.DataFrame:
    """Per scorer and category: n; ``headline`` = min(win_rate, identity_win); ``win_rate`` s(a, p) > s(a, n);
    ``identity_win`` s(a, a) > s(a, n); ``para_ge_identity`` share with s(a, p) >= s(a, a) (lower is better);
    ``distractor_r1`` p ranked first among p, n and ``distractors`` texts of other items of the same source
    (``seed`` fixed); tie rate, AUC, mean near-miss similarity (the paper's, lower is better) and mean positive
    similarity. Each scorer is called once for all pairs."""
    from .datasets.nearmiss import distractor_texts

    pools = distractor_texts(triplets, k=distractors, seed=seed) if distractors else None
    rows = []
    for name, scorer in scorers.items():
        scored = nearmiss_scores(scorer, triplets, pools)
        for (source, category), g in scored.groupby(["source", "category"], sort=True):
            pos, neg, ident = g["s_pos"].to_numpy(), g["s_neg"].to_numpy(), g["s_id"].to_numpy()
            win, id_win = win_rate(pos, neg), identity_win(ident, neg)
            rows.append(
                {
                    "scorer": name,
                    "source": source,
                    "category": category,
                    "kind": g["kind"].iloc[0],
                    "n": len(g),
                    "headline": headline(win, id_win),
                    "win_rate": win,
                    "identity_win": id_win,
                    "para_ge_identity": paraphrase_over_identity(pos, ident),
                    "distractor_r1": distractor_recall_at_1(pos, neg, g["s_dist_max"].to_numpy()),
                    "tie_rate": tie_rate(pos, neg),
                    "auc": roc_auc(pos, neg),
                    "mean_nearmiss_sim": float(neg.mean()),
                    "mean_positive_sim": float(pos.mean()),
                }
            )
    return pd.DataFrame(rows)


def near_miss_win(near_miss: Mapping[str, str], *, identity: bool = False):
    """An ir_measures measure for ``pt.Experiment`` on ``irds:compverify/nearmiss/<source>``: per query, 1 if
    the relevant document of the top label (the anchor) scores above the query's near-miss, else 0 (a tie is a
    loss; a near-miss missing from the run counts as below only when the anchor scores above the run's lowest
    score: else it may have tied, and cutting a run would turn a tie into a win). ``near_miss`` maps qid to the
    near-miss docno (``cv.datasets.nearmiss.near_miss_docnos(dataset_id)``).

    With ``identity=True``, the companion ``IdentityWin`` for the identity control
    ``irds:compverify/nearmiss/<source>/identity`` (query = the anchor's own text). Each measure refuses the
    other task's queries (pt.Experiment averages over every query, so the two cannot share one topic set). The
    headline is min(NearMissWin, IdentityWin)."""
    import ir_measures

    from .datasets.nearmiss import IDENTITY_SUFFIX

    name = "IdentityWin" if identity else "NearMissWin"

    def impl(qrels: pd.DataFrame, run: pd.DataFrame) -> float:
        qid = run["query_id"].iloc[0]
        if qid.endswith(IDENTITY_SUFFIX) != identity:
            task = "compverify/nearmiss/<source>" + ("/identity" if identity else "")
            raise ValueError(f"{name} is measured on the queries of {task}, got query {qid!r}")
        if qid not in near_miss:  # another task's map: counting its near-miss as unretrieved would score 1
            raise KeyError(
                f"{name}: query {qid!r} has no near-miss in the map given; pass near_miss_docnos() of the same "
                "dataset id"
            )
        scores = dict(zip(run["doc_id"], run["score"]))
        relevant = qrels.loc[qrels["relevance"] == max(qrels["relevance"].max(), 1), "doc_id"]  # the anchor
        best = max((scores.get(d, -np.inf) for d in relevant), default=-np.inf)
        below = scores.get(near_miss[qid], min(scores.values(), default=-np.inf))  # cut: at most the lowest
        return float(best > below)

    return ir_measures.define_byquery(impl, name=name, support_cutoff=False)


def near_miss_identity_win(near_miss: Mapping[str, str]):
    """``IdentityWin``, the companion of :func:`near_miss_win` for ``compverify/nearmiss/<source>/identity``."""
    return near_miss_win(near_miss, identity=True)
