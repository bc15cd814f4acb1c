"""ScoreFusion: per-query normalisation, weighted sums over one candidate pool, retrievers' missing candidates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.fusion import ScoreFusion, fuse, normalise

CANDIDATES = pd.DataFrame(
    {
        "qid": ["1", "1", "1", "2", "2"],
        "query": ["dog", "dog", "dog", "cat", "cat"],
        "docno": ["a", "b", "c", "a", "c"],
        "text": ["the dog", "a cat", "the big dog", "the dog", "the big dog"],
        "score": [3.0, 2.0, 1.0, 5.0, 4.0],
        "rank": [0, 1, 2, 0, 1],
    }
)


def fixed(scores: dict) -> pt.Transformer:
    """A scorer giving each (qid, docno) a fixed score."""
    return pt.apply.doc_score(lambda row: scores[(row["qid"], row["docno"])])


@pytest.mark.parametrize("how", ["zscore", "minmax", "none"])
def test_normalise_is_per_query(how):
    scores, qids = pd.Series([1.0, 2.0, 3.0, 10.0, 30.0]), pd.Series(["1", "1", "1", "2", "2"])
    out = normalise(scores, qids, how)
    if how == "none":
        assert out.tolist() == scores.tolist()
    elif how == "minmax":
        assert out.tolist() == [0.0, 0.5, 1.0, 0.0, 1.0]
    else:
        assert np.allclose(out.groupby(qids).mean(), 0) and np.allclose(out.groupby(qids).std(ddof=0), 1)


def test_constant_query_normalises_to_zero():
    assert normalise(pd.Series([2.0, 2.0]), pd.Series(["1", "1"]), "zscore").tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="unknown normalisation"):
        normalise(pd.Series([1.0]), pd.Series(["1"]), "rank")


def test_fusion_is_the_weighted_sum_of_normalised_scores():
    a = {("1", "a"): 1.0, ("1", "b"): 3.0, ("1", "c"): 2.0, ("2", "a"): 0.0, ("2", "c"): 1.0}
    b = {("1", "a"): 30.0, ("1", "b"): 10.0, ("1", "c"): 20.0, ("2", "a"): 5.0, ("2", "c"): 1.0}
    fusion = ScoreFusion({"a": fixed(a), "b": fixed(b)}, weights={"a": 1.0, "b": 2.0}, norm="minmax")
    out = fusion(CANDIDATES)
    got = {(q, d): s for q, d, s in out[["qid", "docno", "score"]].values}
    assert got[("1", "a")] == pytest.approx(0 + 2 * 1.0)
    assert got[("1", "b")] == pytest.approx(1 + 0)
    assert got[("1", "c")] == pytest.approx(0.5 + 2 * 0.5)
    assert got[("2", "a")] == pytest.approx(0 + 2 * 1.0) and got[("2", "c")] == pytest.approx(1.0)
    assert out[out.qid == "1"].sort_values("rank")["docno"].tolist() == ["a", "c", "b"]
    assert "a" not in out.columns and "text" in out.columns  # features dropped, input columns kept
    assert len(out) == len(CANDIDATES)


def test_a_single_weight_keeps_that_scorers_ranking():
    a = {("1", "a"): 1.0, ("1", "b"): 3.0, ("1", "c"): 2.0, ("2", "a"): 0.0, ("2", "c"): 1.0}
    out = ScoreFusion({"a": fixed(a)}, weights={"a": 1.0})(CANDIDATES)
    assert out[out.qid == "1"].sort_values("rank")["docno"].tolist() == ["b", "c", "a"]


def test_retriever_scores_fill_missing_candidates_with_the_query_minimum():
    def retrieve(topics):
        assert "docno" not in topics.columns  # a retriever is given the queries, not the candidates
        return pd.DataFrame({"qid": ["1", "1", "1"], "docno": ["a", "c", "z"], "score": [7.0, 5.0, 6.0]})

    fusion = ScoreFusion({"bm25": pt.apply.generic(retrieve)}, weights={"bm25": 1.0}, retrievers=("bm25",))
    feats = fusion.features(CANDIDATES)
    got = {(q, d): s for q, d, s in feats[["qid", "docno", "bm25"]].values}
    assert got[("1", "a")] == 7.0 and got[("1", "c")] == 5.0
    assert got[("1", "b")] == 5.0  # unretrieved: the query's lowest retrieved score among the candidates
    assert got[("2", "a")] == 0.0  # nothing retrieved for query 2
    assert "z" not in set(feats["docno"])  # retrieved documents outside the pool are not added


def test_a_reranker_that_drops_candidates_is_an_error():
    drop = pt.apply.generic(lambda frame: frame.iloc[1:].assign(score=1.0))
    with pytest.raises(ValueError, match="did not score every candidate"):
        ScoreFusion({"x": drop}, weights={"x": 1.0})(CANDIDATES)


def test_weights_must_name_known_scorers():
    with pytest.raises(ValueError, match="not given"):
        ScoreFusion({"a": fixed({})}, weights={"b": 1.0})
    with pytest.raises(ValueError, match="unknown normalisation"):
        ScoreFusion({"a": fixed({})}, weights={"a": 1.0}, norm="softmax")
    with pytest.raises(KeyError, match="no feature column"):
        fuse(CANDIDATES, {"missing": 1.0})


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), "1", True])
def test_a_weight_that_is_not_a_finite_number_is_refused_when_built(weight):
    with pytest.raises(ValueError, match="the weight of 'a' must be a finite number, not"):
        ScoreFusion({"a": fixed({})}, weights={"a": weight})
    assert ScoreFusion({"a": fixed({})}, weights={"a": -1}).weights == {"a": -1.0}  # a signal can count against


def test_top_keeps_float_scores_when_no_query_has_more_rows():
    scores = {(q, d): float(i) for i, (q, d) in enumerate(zip(CANDIDATES["qid"], CANDIDATES["docno"]))}
    out = ScoreFusion({"a": fixed(scores)}, weights={"a": 1.0}, top=30)(CANDIDATES)
    assert out["score"].dtype == np.float64 and len(out) == len(CANDIDATES)  # was object, which sorts as text
    assert out.groupby("qid")["docno"].apply(list).to_dict() == {"1": ["c", "b", "a"], "2": ["c", "a"]}


def test_empty_input_gives_an_empty_frame():
    out = ScoreFusion({"a": fixed({})}, weights={"a": 1.0})(CANDIDATES.iloc[:0])
    assert len(out) == 0 and {"score", "rank"} <= set(out.columns)


def test_fusing_two_maxsim_rerankers_in_a_pipeline(tiny_encoder, tmp_path):
    store = cv.TokenStore(tmp_path / "docs.tokens").indexer(tiny_encoder, verbose=False)
    docs = CANDIDATES.drop_duplicates("docno")[["docno", "text"]].to_dict("records")
    store = store.index(docs)
    first = pt.Transformer.from_df(CANDIDATES.drop(columns=["text"]))
    maxsim = cv.MaxSim(tiny_encoder, store=store)
    pooled = cv.PooledCosine(tiny_encoder, store=store)
    only_maxsim = (first >> maxsim)(CANDIDATES[["qid", "query"]].drop_duplicates())
    fused = (first >> cv.ScoreFusion({"maxsim": maxsim, "pooled": pooled}, weights={"maxsim": 1.0}))(
        CANDIDATES[["qid", "query"]].drop_duplicates()
    )
    order = lambda f: f.sort_values(["qid", "rank"])["docno"].tolist()  # noqa: E731
    assert order(fused) == order(only_maxsim)
    both = cv.ScoreFusion({"maxsim": maxsim, "pooled": pooled}, weights={"maxsim": 1.0, "pooled": 0.5})
    assert len((first >> both)(CANDIDATES[["qid", "query"]].drop_duplicates())) == len(CANDIDATES)


def test_fusion_pipeline_reranks_the_union_of_both_top_k_by_the_documented_weights(tiny_encoder, tmp_path, tiny_fusion):
    from pyterrier_compverify.pipelines import FUSION_WEIGHTS, bm25_pipeline, fusion_pipeline

    collection, indices, weighted = tiny_fusion
    topics = collection.topics()
    out = fusion_pipeline(indices, tiny_encoder, depth=3, weighted=weighted)(topics)

    dense = (tiny_encoder.query_encoder() >> indices.flex.retriever(num_results=3))(topics)
    bm25 = bm25_pipeline(indices.pisa)(topics)
    for qid, got in out.groupby("qid"):
        pool = set(dense[dense["qid"] == qid]["docno"]) | set(bm25[(bm25["qid"] == qid) & (bm25["rank"] < 3)]["docno"])
        assert set(got["docno"]) == pool and len(got) == len(pool)
        frame = got[["qid", "query", "docno"]].assign(score=0.0, rank=0)
        mine = weighted(frame).set_index("docno")["score"]
        lexical = bm25[bm25["qid"] == qid].set_index("docno")["score"].reindex(list(pool))
        lexical = lexical.fillna(lexical.min() if lexical.notna().any() else 0.0)  # missed: the pool's lowest
        z = lambda s: (s - s.mean()) / s.std(ddof=0) if s.std(ddof=0) > 0 else s * 0.0  # noqa: E731
        expected = FUSION_WEIGHTS["wmaxsim"] * z(mine) + FUSION_WEIGHTS["bm25"] * z(lexical.reindex(mine.index))
        np.testing.assert_allclose(got.set_index("docno")["score"].reindex(expected.index), expected, atol=1e-5)
        assert got.sort_values("rank")["score"].is_monotonic_decreasing


def test_fusion_pipeline_defaults_are_the_documented_dev_choice_and_the_packaged_head(tiny_encoder, tmp_path):
    from pyterrier_compverify.demo import DemoCollection
    from pyterrier_compverify.pipelines import FUSION_DEPTH, FUSION_WEIGHTS, build_indices, fusion_pipeline

    assert FUSION_DEPTH == 300 and FUSION_WEIGHTS == {"wmaxsim": 1.0, "bm25": 0.1}  # README and weighted_fusion.py
    indices = build_indices(DemoCollection(tmp_path / "docs"), tiny_encoder, tmp_path / "indices", verbose=False)
    with pytest.raises(cv.IncompatibleEncoderError, match="all-MiniLM-L6-v2"):  # the packaged F1w head's encoder
        fusion_pipeline(indices, tiny_encoder)


def test_token_store_builds_only_the_store_at_the_path_build_indices_uses(tiny_encoder, tmp_path):
    """``evaluate``'s store for a reranker's own encoder: the token states alone, no dense index, at the path
    ``build_indices`` uses. (``build_indices`` fills its dense index and store in one encoder pass, so there it
    writes that store again, with the same states.)"""
    from pyterrier_compverify.demo import DemoCollection
    from pyterrier_compverify.pipelines import build_indices, token_store

    collection = DemoCollection(tmp_path / "docs")
    store = token_store(collection, tiny_encoder, tmp_path / "indices", verbose=False)
    root = tmp_path / "indices" / collection.name
    assert store.built() and not list(root.glob("*.flex"))
    docnos = [d["docno"] for d in collection.corpus_iter()][:3]
    indices = build_indices(collection, tiny_encoder, tmp_path / "indices", verbose=False)
    assert indices.store == store and list(root.glob("*.flex"))  # TokenStore equality: the same path
    for mine, theirs in zip(store.token_states(docnos), indices.store.token_states(docnos)):
        np.testing.assert_array_equal(mine, theirs)


def test_a_scorer_named_like_an_input_column_and_one_retriever_as_a_string():
    """A scorer called 'text' made the merge write text_x / text_y and fail with a bare KeyError; retrievers='bm25'
    was read as four letters (review 50-a)."""
    with pytest.raises(ValueError, match=r"scorer name\(s\) \['text'\] are also columns of the input"):
        ScoreFusion({"text": fixed({})}, weights={"text": 1.0})(CANDIDATES)
    fusion = ScoreFusion({"x": fixed({}), "bm25": fixed({})}, weights={"x": 1.0}, retrievers="bm25")
    assert fusion.retrievers == ("bm25",)
