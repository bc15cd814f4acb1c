"""WordNetCoverage: the share of a query's content words a passage meets, itself or by a WordNet hyponym; the
reranker contract (columns, ranks, empty frames, a one-line error without text); CorpusText; the fusion pipeline
and ``compverify evaluate --fusion-wordnet`` with it."""

from __future__ import annotations

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import CorpusText
from pyterrier_compverify.wordnet_coverage import coverage, meets, query_words, terms

pytest.importorskip("nltk", reason="WordNetCoverage reads WordNet with nltk: the [negatives] extra")

ROWS = pd.DataFrame(
    {
        "qid": ["1", "1", "1", "2"],
        "query": ["seafood on a plate"] * 3 + ["animal"],
        "docno": ["a", "b", "c", "d"],
        "text": ["clams on a plate", "clams and rice on a dish", "a red car", "Two golden retrievers run"],
        "score": [0.1, 0.2, 0.3, 0.4],
        "rank": [2, 1, 0, 0],
        "keep": ["x", "y", "z", "w"],
    }
)


def test_a_hyponym_or_base_form_meets_a_query_word_and_a_co_hyponym_does_not():
    assert {"dog", "puppy", "golden retriever"} <= meets("animal") and "cat" not in meets("dog")
    assert "paris" in meets("city")  # an instance hyponym
    assert {"riverbank", "credit union"} <= meets("bank")  # every noun sense, not only the first
    assert coverage(query_words("dogs running"), terms("a dog runs")) == 1.0  # base forms on both sides
    assert coverage(query_words("the of a"), terms("anything")) == 0.0  # a query of stopwords
    assert {"golden retrievers", "retriever", "two golden"} <= terms("Two golden retrievers")  # phrases, base forms


def test_scores_each_row_and_keeps_columns_with_score_and_rank_last():
    out = cv.WordNetCoverage()(ROWS)
    assert list(out.columns) == ["qid", "query", "docno", "text", "keep", "score", "rank"]
    assert out["score"].tolist() == [1.0, 0.5, 0.0, 1.0] and out["rank"].tolist() == [0, 1, 2, 0]
    assert out["keep"].tolist() == ROWS["keep"].tolist()  # rows in input order, other columns kept


def test_text_field_empty_frames_and_a_missing_text_column():
    renamed = ROWS.rename(columns={"text": "body"})
    assert cv.WordNetCoverage(text_field="body")(renamed)["score"].tolist() == [1.0, 0.5, 0.0, 1.0]
    empty = cv.WordNetCoverage()(ROWS.iloc[:0])
    assert len(empty) == 0 and list(empty.columns)[-2:] == ["score", "rank"]
    with pytest.raises(pt.validate.InputValidationError, match=r"add pt\.text\.get_text\(dataset, 'text'\) before"):
        cv.WordNetCoverage()(ROWS.drop(columns="text"))
    with pytest.raises(pt.validate.InputValidationError, match="WordNetCoverage reads the passages' text"):
        pt.inspect.transformer_outputs(cv.WordNetCoverage(), ["qid", "query", "docno", "score", "rank"])
    with pytest.raises(Exception, match="query"):  # PyTerrier's own validation names the missing column
        cv.WordNetCoverage()(ROWS.drop(columns="query"))


def test_missing_or_odd_text_and_queries():
    odd = ROWS.assign(text=[None, float("nan"), 42, "Two golden retrievers run"])
    assert cv.WordNetCoverage()(odd)["score"].tolist() == [0.0, 0.0, 0.0, 1.0]  # no text meets nothing
    with pytest.raises(ValueError, match=r"query as text: 1 row\(s\) have none"):
        cv.WordNetCoverage()(ROWS.assign(query=["seafood on a plate", None, "x", "animal"]))


@pytest.mark.parametrize("weight", [float("inf"), float("nan"), -0.5, "0.5", None, True])
def test_a_weight_must_be_a_finite_number_at_least_0(weight):
    from pyterrier_compverify.pipelines import fusion_pipeline

    with pytest.raises(ValueError, match="WordNet weight must be a finite number >= 0"):
        fusion_pipeline(None, None, wordnet=weight)  # refused before anything is built


def test_pt_inspect_sees_a_reranker():
    columns = ["qid", "query", "docno", "text", "score", "rank"]
    assert pt.inspect.transformer_outputs(cv.WordNetCoverage(), columns) == columns


class Corpus:
    def __init__(self, docs):
        self.docs = docs

    def corpus_iter(self):
        return iter(self.docs)

    def __repr__(self) -> str:
        return "Corpus()"


def test_corpus_text_adds_each_rows_text_by_docno_and_names_a_missing_one():
    loader = CorpusText(Corpus([{"docno": "a", "text": "clams on a plate"}, {"docno": "b", "text": "a car"}]))
    out = loader(pd.DataFrame({"qid": ["1", "1"], "docno": ["b", "a"]}))
    assert out["text"].tolist() == ["a car", "clams on a plate"]
    with pytest.raises(KeyError, match=r"has no document \['zz'\]"):
        loader(pd.DataFrame({"qid": ["1"], "docno": ["zz"]}))
    assert len(loader(pd.DataFrame({"qid": [], "docno": []}))) == 0


def test_fusion_pipeline_adds_the_wordnet_column_at_its_weight(tiny_encoder, tmp_path, tiny_fusion):
    from pyterrier_compverify.fusion import fuse
    from pyterrier_compverify.pipelines import FUSION_WEIGHTS, fusion_pipeline

    collection, indices, weighted = tiny_fusion
    topics = collection.topics()
    plain = fusion_pipeline(indices, tiny_encoder, depth=3, weighted=weighted)
    with pytest.raises(ValueError, match="texts="):
        fusion_pipeline(indices, tiny_encoder, depth=3, weighted=weighted, wordnet=0.5)
    with_wordnet = fusion_pipeline(
        indices, tiny_encoder, depth=3, weighted=weighted, wordnet=0.5, texts=CorpusText(collection)
    )
    features = with_wordnet[-1].features((plain[0])(topics))  # the pool, one column per scorer
    assert {"wmaxsim", "bm25", "wordnet"} <= set(features.columns)
    expected = fuse(features, {**FUSION_WEIGHTS, "wordnet": 0.5})
    got = with_wordnet(topics)
    merged = got.merge(expected, on=["qid", "docno"], suffixes=("", "_expected"))
    assert len(merged) == len(got) and (merged["score"] - merged["score_expected"]).abs().max() < 1e-9
    pool = fusion_pipeline(
        indices, tiny_encoder, depth=3, weighted=weighted, wordnet=0.5, texts=CorpusText(collection), features=True
    )(topics)  # scored once, fused with and without WordNet (compverify evaluate --fusion-wordnet)
    for weights, pipeline in [(FUSION_WEIGHTS, plain), ({**FUSION_WEIGHTS, "wordnet": 0.5}, with_wordnet)]:
        merged = pipeline(topics).merge(fuse(pool, weights), on=["qid", "docno"], suffixes=("", "_pool"))
        assert len(merged) == len(pool) and (merged["score"] - merged["score_pool"]).abs().max() < 1e-9
    scored = CorpusText(collection)(features[["qid", "query", "docno"]])
    assert (features["wordnet"].to_numpy() == cv.WordNetCoverage()(scored)["score"].to_numpy()).all()


def test_evaluate_takes_fusion_wordnet_only_with_fusion_and_as_a_weight(capsys):
    from pyterrier_compverify.cli import main
    from pyterrier_compverify.evaluate import check_fusion, fusion_label

    assert check_fusion(True, None, 0.5) == 300 and fusion_label(300, 0.5).endswith("+ 0.5 WordNet")
    for argv, message in [
        (["--fusion-wordnet", "0.5"], "--fusion-wordnet has no effect without --fusion"),
        (["--fusion", "--fusion-wordnet", "-1"], "--fusion-wordnet (the WordNet weight) must be a finite number >= 0"),
        (["--fusion", "--fusion-wordnet", "inf"], "--fusion-wordnet (the WordNet weight) must be a finite number >= 0"),
    ]:
        with pytest.raises(SystemExit):
            main(["evaluate", "irds:cranfield", *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0]


def test_evaluate_runs_the_fusion_with_and_without_wordnet(tiny_encoder, tmp_path, monkeypatch, tiny_collection):
    from pyterrier_compverify import evaluate
    from pyterrier_compverify.scoring import build_head

    cv.Verifier.save(tmp_path / "f1w", tiny_encoder, build_head("F1w", dim=tiny_encoder.dim), "F1w")
    plain, with_wordnet = evaluate.fusion_label(4), evaluate.fusion_label(4, 0.5)
    results = evaluate.run_evaluation(
        "tiny", model=tiny_encoder.model_name, max_length=16, device="cpu", rerankers=["maxsim"],
        index_dir=tmp_path / "indices", out_dir=None, fusion=str(tmp_path / "f1w"), fusion_depth=4,
        fusion_wordnet=0.5, baseline=plain, verbose=False,
    )  # fmt: skip
    assert {plain, with_wordnet} <= set(results["name"])
    zh = type("Zh", (tiny_collection,), {"language": "zh"})
    monkeypatch.setattr(evaluate, "open_collection", lambda dataset_id: zh(tmp_path / "docs"))
    with pytest.raises(ValueError, match="reads English words"):
        evaluate.run_evaluation("tiny", fusion=True, fusion_wordnet=0.5, out_dir=None, verbose=False)
