import dataclasses

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_compverify import MaxSim, QueryTokens, TokenStore

DOCS = pd.DataFrame(
    {
        "docno": ["d1", "d2", "d3", "d4", "d5"],
        "text": ["a dog chases a cat", "the cat chases the dog", "", "图片显示猫", "protein gene " * 60],
    }
)


def result_frame(queries=("dog chases cat", "small red cell")):
    rows = [
        {"qid": f"q{i}", "query": q, "docno": d.docno, "text": d.text, "score": 1.0, "rank": 0, "keep": i * 10 + j}
        for i, q in enumerate(queries)
        for j, d in enumerate(DOCS.itertuples())
    ]
    return pd.DataFrame(rows)


@pytest.fixture
def store(tmp_path, tiny_encoder):
    return TokenStore(tmp_path / "docs.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)


def test_scores_ranks_and_keeps_columns(tiny_encoder):
    inp = result_frame()
    out = MaxSim(tiny_encoder)(inp)
    assert set(inp.columns) <= set(out.columns)
    assert len(out) == len(inp)
    assert (out.groupby("qid")["rank"].apply(sorted).map(list) == [[0, 1, 2, 3, 4]] * 2).all()
    for _, res in out.groupby("qid"):
        assert res.sort_values("rank")["score"].is_monotonic_decreasing
    merged = inp.merge(out, on=["qid", "docno"], suffixes=("_in", ""))
    assert (merged["keep_in"] == merged["keep"]).all()


def test_strict_sort_orders_the_rows_as_add_ranks_does(tiny_encoder, monkeypatch):
    inp = result_frame()
    kept = MaxSim(tiny_encoder)(inp)
    assert list(kept["keep"]) == list(inp["keep"])  # the default: rows in input order
    monkeypatch.setattr(pt.model, "STRICT_SORT", True)
    out = MaxSim(tiny_encoder)(inp)
    assert list(out["qid"]) == ["q0"] * 5 + ["q1"] * 5 and list(out["rank"]) == [0, 1, 2, 3, 4] * 2
    expected = pt.model.add_ranks(kept.drop(columns="rank").copy())
    assert list(out["docno"]) == list(expected["docno"])


def test_scores_match_a_direct_computation(tiny_encoder):
    out = MaxSim(tiny_encoder)(result_frame(["dog chases cat"]))
    q = tiny_encoder.encode(["dog chases cat"]).token_states[0]
    for row in out.itertuples():
        d = tiny_encoder.encode([row.text]).token_states[0]
        assert row.score == pytest.approx((q @ d.T).max(dim=1).values.mean().item(), abs=1e-5)


def test_store_and_text_give_the_same_ranking(tiny_encoder, store):
    inp = result_frame()
    from_text = MaxSim(tiny_encoder)(inp).sort_values(["qid", "docno"])
    from_store = MaxSim(tiny_encoder, store=store)(inp.drop(columns=["text"])).sort_values(["qid", "docno"])
    assert (from_text["rank"].to_numpy() == from_store["rank"].to_numpy()).all()
    np.testing.assert_allclose(from_text["score"], from_store["score"], atol=2e-3)


def test_query_encoded_once_per_query(tiny_encoder, monkeypatch):
    seen = []
    original = type(tiny_encoder).encode

    def spy(self, texts, **kw):
        seen.append((kw.get("what"), list(texts)))
        return original(self, texts, **kw)

    monkeypatch.setattr(type(tiny_encoder), "encode", spy)
    MaxSim(tiny_encoder)(result_frame())
    query_calls = [texts for what, texts in seen if what == "query"]
    assert query_calls == [["dog chases cat", "small red cell"]]
    doc_calls = [texts for what, texts in seen if what == "document"]
    assert len(doc_calls) == 1 and len(doc_calls[0]) == len(DOCS)  # each distinct text once


def test_empty_frame_gives_typed_empty_frame(tiny_encoder):
    out = MaxSim(tiny_encoder)(result_frame().iloc[:0])
    assert len(out) == 0 and {"score", "rank", "keep"} <= set(out.columns)


@pytest.mark.parametrize("column", ["qid", "query", "docno", "text"])
def test_missing_column_is_named(tiny_encoder, column):
    with pytest.raises(Exception, match=column):
        MaxSim(tiny_encoder)(result_frame().drop(columns=[column]))


def test_nan_text_is_a_clear_error(tiny_encoder):
    inp = result_frame()
    inp.loc[2, "text"] = np.nan
    with pytest.raises(ValueError, match="'text' column"):
        MaxSim(tiny_encoder)(inp)


@pytest.mark.parametrize("missing", [None, np.nan])
def test_a_missing_docno_is_refused_by_the_store_not_scored_as_another(tiny_encoder, store, missing):
    inp = result_frame().drop(columns=["text"]).astype({"docno": object})
    inp.loc[1, "docno"] = missing  # its code was -1, which read the last distinct docno's states
    with pytest.raises(KeyError, match=r"1 docno\(s\) not in TokenStore"):
        MaxSim(tiny_encoder, store=store)(inp)


def test_store_from_another_encoder_refused(tiny_model_dir, store):
    from pyterrier_compverify import TokenEncoder

    other = TokenEncoder(tiny_model_dir, max_length=32, device="cpu")
    with pytest.raises(ValueError, match="max_length"):
        MaxSim(other, store=store)


def test_in_a_pipeline_with_experiment(tiny_encoder, store):
    first_stage = pt.Transformer.from_df(result_frame().drop(columns=["text"]))
    topics = pd.DataFrame({"qid": ["q0", "q1"], "query": ["dog chases cat", "small red cell"]})
    qrels = pd.DataFrame({"qid": ["q0", "q1"], "docno": ["d1", "d5"], "label": [1, 1]})
    pipe = first_stage >> MaxSim(tiny_encoder, store=store)
    res = pt.Experiment([first_stage, pipe], topics, qrels, ["map"], names=["first", "maxsim"])
    assert list(res["name"]) == ["first", "maxsim"]
    # the Experiment scores the reranked order: AP by hand from the reranker's own ranks
    ranked = pipe(topics)
    relevant = set(zip(qrels["qid"], qrels["docno"]))
    ap = [
        1 / int(rows.loc[[(q, d) in relevant for q, d in zip(rows["qid"], rows["docno"])], "rank"].iloc[0] + 1)
        for _, rows in ranked.groupby("qid")
    ]  # one relevant document per query: AP = 1 / its 1-based rank
    scores = res.set_index("name")["map"]
    assert scores["maxsim"] == pytest.approx(sum(ap) / len(ap)) and scores["first"] != pytest.approx(scores["maxsim"])
    assert repr(MaxSim(tiny_encoder, store=store)).startswith("MaxSim(TokenEncoder(")


def test_query_tokens_from_the_first_stage_are_not_encoded_again(tiny_encoder, monkeypatch):
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["a red cat", "a dog"]})
    encoded = tiny_encoder.query_token_encoder()(topics)
    pooled = np.stack(tiny_encoder.query_encoder()(topics)["query_vec"])
    np.testing.assert_allclose(np.stack(encoded["query_vec"]), pooled, atol=1e-6)
    docs = pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["a", "b", "a"], "text": ["a red cat", "a dog", "a cat"]})
    frame = encoded.merge(docs, on="qid")
    expected = MaxSim(tiny_encoder)(frame.drop(columns=["query_toks"])).sort_values(["qid", "docno"])
    calls = []
    encode = tiny_encoder.encode
    monkeypatch.setattr(tiny_encoder, "encode", lambda texts, **kw: calls.append(kw["what"]) or encode(texts, **kw))
    got = MaxSim(tiny_encoder)(frame).sort_values(["qid", "docno"])
    assert calls == ["document"]  # the queries' states came from the query_toks column
    np.testing.assert_allclose(got["score"], expected["score"], atol=1e-6)
    # states made by another encoder (another fingerprint) are not used: the reranker encodes the queries itself
    other = dataclasses.replace(tiny_encoder.spec, fingerprint="another")
    foreign = frame.assign(  # the right text: only the spec can reject them
        query_toks=[QueryTokens(t.states.flip(0), other, t.store, t.text) for t in frame["query_toks"]]
    )
    calls.clear()
    again = MaxSim(tiny_encoder)(foreign).sort_values(["qid", "docno"])
    assert calls == ["query", "document"]
    np.testing.assert_allclose(again["score"], expected["score"], atol=1e-6)
    # a union with another first stage (BM25) leaves some rows without query_toks: a query with them on any row
    # is not encoded again, only a query with none (here "2")
    union = frame.sort_values(["qid", "docno"]).reset_index(drop=True)
    union["query_toks"] = [None, union["query_toks"][1], None]  # rows: (1, a) BM25-only, (1, b), (2, a) BM25-only
    encoded_queries = []
    monkeypatch.setattr(
        tiny_encoder,
        "encode",
        lambda texts, **kw: encoded_queries.extend(texts if kw["what"] == "query" else []) or encode(texts, **kw),
    )
    mixed = MaxSim(tiny_encoder)(union).sort_values(["qid", "docno"])
    assert encoded_queries == ["a dog"]
    np.testing.assert_allclose(mixed["score"], expected["score"], atol=1e-6)


def test_query_tokens_of_a_rewritten_query_are_not_used(tiny_encoder):
    """A stage between the first stage and the reranker may rewrite the query (an instruction prefix, a
    correction): the first stage's states encode the old text, so the reranker encodes the new one."""
    topics = pd.DataFrame({"qid": ["1"], "query": ["a red cat"]})
    docs = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "text": ["a red cat", "protein gene expression"]})
    frame = tiny_encoder.query_token_encoder()(topics).merge(docs, on="qid")
    rewritten = pt.apply.query(lambda row: "protein gene")(frame)
    assert "query_0" in rewritten.columns and "query_toks" in rewritten.columns
    fresh = MaxSim(tiny_encoder)(rewritten.drop(columns=["query_toks"])).sort_values("docno")
    got = MaxSim(tiny_encoder)(rewritten).sort_values("docno")
    np.testing.assert_allclose(got["score"], fresh["score"], atol=1e-6)
    stale = MaxSim(tiny_encoder)(frame).sort_values("docno")  # the old query's scores differ: the check can fail
    assert not np.allclose(stale["score"], fresh["score"], atol=1e-3)


def test_batch_sizes_below_one_are_refused(tiny_encoder):
    """encode(batch_size=-1) returned its unfilled buffer and no states; score_batch_size=-1 uninitialised scores."""
    with pytest.raises(ValueError, match="batch_size must be at least 1, got -1"):
        tiny_encoder.encode(["a dog"], batch_size=-1)
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        tiny_encoder.encode(["a dog"], batch_size=0)
    with pytest.raises(ValueError, match="score_batch_size must be at least 1, got -1"):
        MaxSim(tiny_encoder, score_batch_size=-1)
    with pytest.raises(ValueError, match="^batch_size must be at least 1, got 0"):
        MaxSim(tiny_encoder, batch_size=0)


def test_a_store_indexer_refuses_a_batch_size_below_one(tiny_encoder, tmp_path):
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, batch_size=0)
