"""Per-query nDCG@10 of a fused candidate frame, and the ceiling of reordering its top k by the labels."""

from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
from idf_maxsim import TREC
from ir_measures import nDCG

from pyterrier_compverify.fusion import fuse


def per_query(frame: pd.DataFrame, weights: dict, qrels: pd.DataFrame) -> pd.Series:
    """qid -> nDCG@10 of ``frame`` reranked by ``weights`` (a query no candidate retrieved counts 0)."""
    run = fuse(frame, weights)[["qid", "docno", "score"]].rename(columns=TREC)
    rels = qrels.rename(columns={**TREC, "label": "relevance"})
    scores = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], rels, run)}
    return pd.Series({q: scores.get(q, 0.0) for q in qrels["qid"].unique()}, dtype=float)


def ceiling(frame: pd.DataFrame, qrels: pd.DataFrame, k: int) -> pd.Series:
    """qid -> nDCG@10 of the ``fusion`` column's top ``k`` candidates put in the order of the qrels' labels (ties
    kept in the fusion's order): what a perfect reranker of those candidates would reach."""
    judged = dict(zip(zip(qrels["qid"], qrels["docno"]), qrels["label"]))
    top = frame[frame.groupby("qid")["fusion"].rank(ascending=False, method="first") <= k]
    label = np.array([judged.get(key, 0) for key in zip(top["qid"], top["docno"])], dtype=float)
    order = top.groupby("qid")["fusion"].rank(method="first") / len(top)  # in (0, 1], below one label step
    return per_query(top.assign(oracle=label + 1e-3 * order), {"oracle": 1.0}, qrels)
