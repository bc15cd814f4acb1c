"""Score fusion over one candidate pool: a weighted sum of several scorers' per-query-normalised scores.

A first stage (for example ``dense | BM25``, the set union of two retrievers) fixes the candidates; each scorer
then gives every candidate a score (a reranker such as ``MaxSim`` scores the frame it is given; a *retriever*
such as BM25 is run on the queries and candidates it did not return get the lowest score it gave that query).
Scores are normalised within each query (``zscore``, ``minmax`` or ``none``) and summed with the weights::

    pool = dense_base | dense_tuned | bm25
    fused = pool >> ScoreFusion(
        {"maxsim_base": cv.MaxSim(base, store=store_base), "maxsim_tuned": cv.MaxSim(tuned, store=store_tuned),
         "bm25": bm25},
        weights={"maxsim_base": 1.0, "maxsim_tuned": 1.0, "bm25": 0.2},
        retrievers=("bm25",),
    )

:meth:`ScoreFusion.features` returns the raw per-scorer columns, so that weights can be chosen on a dev set
with :func:`fuse` without scoring again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np
import pandas as pd
import pyterrier as pt

from .checks import check_number, check_whole

NORMS = ("zscore", "minmax", "none")


def normalise(scores: pd.Series, qids: pd.Series, how: str = "zscore") -> pd.Series:
    """``scores`` normalised within each query: ``zscore`` (mean 0, std 1; a constant query gives 0), ``minmax``
    (to [0, 1]; a constant query gives 0) or ``none``.

    >>> normalise(pd.Series([1.0, 3.0, 5.0, 5.0]), pd.Series(["a", "a", "b", "b"]), "minmax").tolist()
    [0.0, 1.0, 0.0, 0.0]
    """
    if how not in NORMS:
        raise ValueError(f"unknown normalisation {how!r}: one of {NORMS}")
    scores = scores.astype(float)
    if how == "none":
        return scores
    grouped = scores.groupby(qids.values)
    if how == "zscore":
        centre, spread = grouped.transform("mean"), grouped.transform("std", ddof=0)
    else:
        centre = grouped.transform("min")
        spread = grouped.transform("max") - centre
    spread = spread.to_numpy()
    out = (scores - centre).to_numpy() / np.where(spread > 0, spread, 1.0)
    return pd.Series(np.where(spread > 0, out, 0.0), index=scores.index)


def check_weight(weight, name: str = "a fusion weight", signed: bool = False) -> float:
    """``weight`` of a signal in a fusion, checked: a finite number >= 0, or any finite number where ``signed``
    (the error calls it ``name``).

    >>> check_weight(float("inf"), name="the WordNet weight")
    Traceback (most recent call last):
    ValueError: the WordNet weight must be a finite number >= 0, not inf
    >>> check_weight(-0.5, signed=True), check_weight(np.int64(2))
    (-0.5, 2.0)
    """
    return check_number(weight, name, at_least=None if signed else 0)


def checked_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """A fusion's weights (name -> weight), each a finite number (negative: a signal that counts against).

    >>> checked_weights({"bm25": float("nan")})
    Traceback (most recent call last):
    ValueError: the weight of 'bm25' must be a finite number, not nan
    """
    return {name: check_weight(w, f"the weight of {name!r}", signed=True) for name, w in weights.items()}


def input_scores(frame: pd.DataFrame, option: str) -> np.ndarray:
    """The ``score`` column of a frame that ``option`` reads, as floats; none, or a NaN, is a one-line error."""
    if "score" not in frame.columns:
        raise ValueError(f"{option} reads the input's score: the frame has no score column")
    scores = frame["score"].to_numpy(dtype=float)
    if np.isnan(scores).any():
        raise ValueError(f"{option} reads the input's score: {int(np.isnan(scores).sum())} row(s) have none (NaN)")
    return scores


def fill_unretrieved(frame: pd.DataFrame, name: str) -> pd.Series:
    """A retriever's score column ``name`` of a candidate pool with the candidates it did not return (NaN) given
    the query's lowest score it gave in the pool, or 0 when it returned none of that query's candidates.

    >>> fill_unretrieved(pd.DataFrame({"qid": ["a", "a", "b"], "bm25": [2.0, None, None]}), "bm25").tolist()
    [2.0, 2.0, 0.0]
    """
    floor = frame.groupby("qid")[name].transform("min").fillna(0.0)
    return frame[name].fillna(floor)


def fuse(features: pd.DataFrame, weights: Mapping[str, float], norm: str = "zscore") -> pd.DataFrame:
    """A result frame (``qid``, ``docno``, ``score``, ``rank``, plus ``features``' other columns) whose score is
    ``sum(weight * normalise(features[name]))`` over ``weights``; a weight of 0 leaves its column out."""
    missing = [name for name in weights if name not in features.columns]
    if missing:
        raise KeyError(f"no feature column for {missing}; columns: {list(features.columns)}")
    weights = checked_weights(weights)
    score = np.zeros(len(features))
    for name, weight in weights.items():
        if weight:
            score += weight * normalise(features[name], features["qid"], norm).to_numpy()
    out = features.assign(score=score)
    return pt.model.add_ranks(out.sort_values(["qid", "score"], ascending=[True, False]).reset_index(drop=True))


class ScoreFusion(pt.Transformer):
    """Rerank a candidate frame by a weighted sum of normalised scores (see the module docstring).

    ``scorers``: name -> transformer; ``weights``: name -> weight (names without a weight are computed as
    features but not used); ``retrievers``: names of scorers that retrieve from the queries rather than
    rescore the frame (their unretrieved candidates get the query's lowest score, or 0 when they returned
    nothing for it); ``norm``: ``zscore`` (default), ``minmax`` or ``none``. ``input_score``: a name for the
    input's own ``score``, a feature beside the scorers' (e.g. a first fusion's score, with a cross-encoder read on
    top of it). ``top``: fuse only each query's top ``top`` rows of the input (by its score) and put the others
    below them in their order, unscored (for a costly scorer). The output has one row per (qid, docno): a repeated
    docno keeps its first row.
    """

    def __init__(
        self,
        scorers: Mapping[str, pt.Transformer],
        weights: Mapping[str, float],
        *,
        retrievers: Collection[str] = (),
        norm: str = "zscore",
        input_score: str | None = None,
        top: int | None = None,
    ):
        if isinstance(retrievers, str):  # "bm25" is one name, not four letters
            retrievers = (retrievers,)
        if input_score is not None and input_score in scorers:
            raise ValueError(f"input_score {input_score!r} is also a scorer's name: name it otherwise")
        unknown = (set(weights) | set(retrievers)) - set(scorers) - {input_score}
        if unknown:
            raise ValueError(f"weights or retrievers name scorers that are not given: {sorted(unknown)}")
        if norm not in NORMS:
            raise ValueError(f"unknown normalisation {norm!r}: one of {NORMS}")
        top = None if top is None else check_whole(top, "top (the rows fused per query)")
        self.scorers = dict(scorers)
        self.weights = checked_weights(weights)
        self.retrievers = tuple(retrievers)
        self.norm = norm
        self.input_score = input_score
        self.top = top

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in (("input_score", self.input_score), ("top", self.top)) if v)
        return f"ScoreFusion({list(self.scorers)}, weights={self.weights}, norm={self.norm!r}{extra})"

    def features(self, inp: pd.DataFrame) -> pd.DataFrame:
        """The candidates (one row per qid, docno; other input columns kept from their first row) with one raw
        score column per scorer."""
        pt.validate.result_frame(inp, extra_columns=["query"])
        drop = [c for c in ("score", "rank") if c in inp.columns]
        first = inp.drop_duplicates(["qid", "docno"]).reset_index(drop=True)
        frame = first.drop(columns=drop)
        if self.input_score is not None and self.input_score in frame.columns:
            raise ValueError(f"input_score={self.input_score!r} is also a column of the input: name it otherwise")
        taken = sorted(set(self.scorers) & set(frame.columns))
        if taken:
            raise ValueError(
                f"scorer name(s) {taken} are also columns of the input: name the scorers otherwise (each adds a "
                "column of its raw scores)"
            )
        if self.input_score is not None:
            frame[self.input_score] = input_scores(first, f"input_score={self.input_score!r}")
        queries = frame[["qid", "query"]].drop_duplicates("qid")
        for name, scorer in self.scorers.items():
            try:
                out = scorer(queries if name in self.retrievers else frame)
            except pt.validate.InputValidationError as error:  # a query-frame stage given the candidates
                if name in self.retrievers:
                    raise
                raise ValueError(
                    f"scorer {name!r} failed on the candidates ({error}); if it retrieves from the queries (BM25, a "
                    f"dense retriever), it goes in retrievers=({name!r},)"
                ) from error
            scores = out[["qid", "docno", "score"]].drop_duplicates(["qid", "docno"]).rename(columns={"score": name})
            frame = frame.merge(scores, on=["qid", "docno"], how="left")
            if frame[name].isna().any():
                if name not in self.retrievers:
                    raise ValueError(f"scorer {name!r} did not score every candidate")
                frame[name] = fill_unretrieved(frame, name)
        return frame

    def subtransformers(self) -> dict:
        """``pt.inspect``: the scorers, by name."""
        return dict(self.scorers)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp, extra_columns=["query"])  # before the empty frame: pt.inspect probes with one
        from .rerank import empty_scored, ranks

        if len(inp) == 0:
            return empty_scored(inp)
        if self.top is None:
            return self._fused(inp)

        inp = inp.drop_duplicates(["qid", "docno"]).reset_index(drop=True)
        rank = ranks(inp["qid"], input_scores(inp, f"top={self.top}")) - pt.model.FIRST_RANK  # 0 is the best
        head = self._fused(inp[rank < self.top])
        tail = inp[rank >= self.top].drop(columns=["rank"], errors="ignore")
        lowest = head.groupby("qid")["score"].min()  # the tail below the fused rows, in its own order
        below = tail["qid"].map(lowest).to_numpy(dtype=float) - 1.0 - (rank[rank >= self.top] - self.top)
        tail = tail.assign(score=below)  # floats also when empty (no query has more than top rows)
        out = pd.concat([head.drop(columns=["rank"]), tail[[c for c in head.columns if c != "rank"]]])
        return pt.model.add_ranks(out.sort_values(["qid", "score"], ascending=[True, False]).reset_index(drop=True))

    def _fused(self, inp: pd.DataFrame) -> pd.DataFrame:
        fused = fuse(self.features(inp), self.weights, self.norm)
        return fused.drop(columns=[c for c in [*self.scorers, self.input_score] if c in fused.columns])


__all__ = ["NORMS", "ScoreFusion", "check_weight", "fill_unretrieved", "fuse", "normalise"]
