"""The contract every exported transformer keeps (README, "All rerankers share one contract"): ``device``,
``batch_size`` and ``verbose`` options, empty frames, kept columns, ``pt.inspect``, PyTerrier's own
``pt.testing.TransformerTestCase``, pyterrier-caching's ``ScorerCache`` in front of each reranker, and progress
bars with totals. All on the tiny model, offline."""

from __future__ import annotations

import unittest

import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.query_tokens import QueryTokenEncoder
from pyterrier_compverify.scoring import build_head

DOCS = pd.DataFrame(
    {"docno": ["d1", "d2", "d3", "d4"], "text": ["a dog chases a cat", "the cat is red", "", "small red cell"]}
)
OPTIONS = {"device": "cpu", "batch_size": 3, "verbose": True}
RERANKERS = ["MaxSim", "BagOfSimilarities", "SoftAlign", "PooledCosine", "MapVerifier", "MapCNN"]


@pytest.fixture(scope="module")
def parts(tiny_encoder, tmp_path_factory):
    """The tiny encoder, a token store of DOCS, and saved F4 / F3 verifiers over the tiny encoder."""
    root = tmp_path_factory.mktemp("contract")
    store = cv.TokenStore(root / "docs.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)
    dim = tiny_encoder.dim
    f4 = cv.Verifier.save(root / "f4", tiny_encoder, build_head("F4", dim=dim), "F4", head_config={"dim": dim})
    f3 = cv.Verifier.save(root / "f3", tiny_encoder, build_head("F3", dim=dim), "F3", head_config={"dim": dim})
    return {"encoder": tiny_encoder, "store": store, "F4": f4, "F3": f3}


def make_reranker(name: str, parts: dict, **options) -> cv.TokenReranker:
    """``name`` over the tiny encoder; ``store=None`` in ``options`` makes it read the ``text`` column."""
    options = {"store": parts["store"], **options}
    if name == "MapVerifier":
        return cv.MapVerifier(parts["F4"], encoder=parts["encoder"], **options)
    if name == "MapCNN":
        return cv.MapCNN(parts["F3"], encoder=parts["encoder"], **options)
    return getattr(cv, name)(parts["encoder"], **options)


def result_frame(with_text: bool = True) -> pd.DataFrame:
    rows = [
        {"qid": f"q{i}", "query": q, "docno": d.docno, "score": 0.0, "rank": j, "keep": f"{i}-{d.docno}"}
        | ({"text": d.text} if with_text else {})
        for i, q in enumerate(["dog chases cat", "red cell"])
        for j, d in enumerate(DOCS.itertuples())
    ]
    return pd.DataFrame(rows)


# ---- options, empty frames, kept columns ---------------------------------------------------------------------


@pytest.mark.parametrize("name", RERANKERS)
def test_rerankers_take_device_batch_size_and_verbose(parts, name):
    reranker = make_reranker(name, parts, **OPTIONS)
    assert reranker.device == torch.device("cpu") and reranker.batch_size == 3 and reranker.verbose is True


@pytest.mark.parametrize("name", RERANKERS)
@pytest.mark.parametrize("with_store", [True, False])
def test_rerankers_keep_columns_and_rows(parts, name, with_store):
    reranker = make_reranker(name, parts, **({} if with_store else {"store": None}))
    inp = result_frame(with_text=not with_store)
    out = reranker(inp)
    assert list(out.columns[: len(inp.columns) - 2]) == [c for c in inp.columns if c not in ("score", "rank")]
    assert len(out) == len(inp) and out["score"].dtype == "float64" and out["rank"].dtype == "int64"
    assert (out["keep"] == out["qid"].str[1:] + "-" + out["docno"]).all()  # extra column stays with its row
    assert (out.groupby("qid")["rank"].apply(sorted).map(list) == [[0, 1, 2, 3]] * 2).all()


def test_reranker_output_puts_score_and_rank_last_even_with_repeated_column_labels(parts):
    inp = result_frame(with_text=False)
    inp = pd.concat([inp[["qid", "query", "docno", "score", "rank"]], inp[["keep"]], inp[["keep"]]], axis=1)
    out = make_reranker("MaxSim", parts)(inp)
    assert list(out.columns) == ["qid", "query", "docno", "keep", "keep", "score", "rank"]
    assert len(out) == len(inp) and out["rank"].dtype == "int64"


@pytest.mark.parametrize("name", RERANKERS)
def test_rerankers_take_empty_frames(parts, name):
    empty = pd.DataFrame(columns=["qid", "query", "docno", "score", "rank", "keep"])
    out = make_reranker(name, parts)(empty)
    assert len(out) == 0 and {"qid", "query", "docno", "keep", "score", "rank"} <= set(out.columns)
    assert out["score"].dtype == "float64" and out["rank"].dtype == "int64"


def test_encoders_take_device_batch_size_and_verbose(tiny_model_dir):
    for cls in (cv.TokenEncoder, cv.BiEncoder):
        encoder = cls(tiny_model_dir, max_length=16, **OPTIONS)
        assert encoder.device == torch.device("cpu") and encoder.batch_size == 3 and encoder.verbose is True
        assert repr(encoder).startswith(f"{cls.__name__}(")


def test_query_token_encoder_keeps_columns_and_takes_empty_frames(tiny_encoder):
    qte = tiny_encoder.query_token_encoder(verbose=True, batch_size=3)
    assert qte.batch_size == 3 and qte.verbose is True
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["red cat", "a dog"], "keep": [7, 8]})
    out = qte(topics)
    assert list(out.columns) == ["qid", "query", "keep", "query_vec", "query_toks"] and list(out["keep"]) == [7, 8]
    empty = qte(topics.iloc[:0])
    assert len(empty) == 0 and {"query_vec", "query_toks", "keep"} <= set(empty.columns)


# ---- pt.inspect -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", RERANKERS)
def test_rerankers_work_with_pt_inspect(parts, name):
    reranker = make_reranker(name, parts, **OPTIONS)
    inputs = pt.inspect.transformer_inputs(reranker)
    assert inputs and all({"qid", "query", "docno"} <= set(cols) for cols in inputs)
    for cols in inputs:
        assert pt.inspect.transformer_outputs(reranker, cols) == [*cols, "score", "rank"]
    names = [a.name for a in pt.inspect.transformer_attributes(reranker)]
    assert {"encoder", "store", "batch_size", "device", "verbose"} <= set(names)
    assert pt.inspect.subtransformers(reranker) == {}  # the encoder is a model it uses, not a stage it runs
    rebuilt = pt.inspect.transformer_apply_attributes(reranker, batch_size=8)
    assert type(rebuilt) is type(reranker) and rebuilt.batch_size == 8 and rebuilt.verbose is True
    assert rebuilt == reranker  # same scores: batch size is not part of what a reranker computes
    inp = result_frame(with_text=False)
    pd.testing.assert_frame_equal(rebuilt(inp), reranker(inp))


def test_apply_attributes_keeps_options_passed_on_to_the_base_class(parts):
    soft = cv.SoftAlign(parts["encoder"], lam=0.2, store=parts["store"], score_batch_size=5)
    rebuilt = pt.inspect.transformer_apply_attributes(soft, tau=0.3)
    assert (rebuilt.lam, rebuilt.tau, rebuilt.score_batch_size, rebuilt.store) == (0.2, 0.3, 5, parts["store"])
    assert rebuilt != soft  # tau changes the head


def test_apply_attributes_keeps_a_disabled_penalty(parts, tmp_path):
    """``penalty=False`` on an artifact whose serving form has a penalty must stay the head's own score."""
    dim = parts["encoder"].dim
    verifier = cv.Verifier.save(tmp_path / "v", parts["encoder"], build_head("F4", dim=dim), "F4")
    verifier.set_default_penalty({"beta": 0.5, "tau": 0.0})
    head_only = cv.MapVerifier(verifier, encoder=parts["encoder"], store=parts["store"], penalty=False)
    rebuilt = pt.inspect.transformer_apply_attributes(head_only)
    assert rebuilt.penalty is False and rebuilt == head_only
    assert cv.MapVerifier(verifier, encoder=parts["encoder"]).penalty == {"beta": 0.5, "tau": 0.0}


def test_encoders_work_with_pt_inspect(tiny_model_dir, tiny_encoder):
    for cls in (cv.TokenEncoder, cv.BiEncoder):
        encoder = cls(tiny_model_dir, max_length=16, device="cpu")
        rebuilt = pt.inspect.transformer_apply_attributes(encoder, batch_size=5)
        assert type(rebuilt) is cls and rebuilt.batch_size == 5 and rebuilt.max_length == 16
        assert rebuilt.fingerprint == encoder.fingerprint
    qte = tiny_encoder.query_token_encoder()
    assert pt.inspect.transformer_inputs(qte) == [["qid", "query"]]
    assert pt.inspect.transformer_outputs(qte, ["qid", "query"]) == ["qid", "query", "query_vec", "query_toks"]
    assert isinstance(pt.inspect.transformer_apply_attributes(qte, batch_size=2), QueryTokenEncoder)


# ---- PyTerrier's own test case --------------------------------------------------------------------------------


def run_transformer_test_case(transformer, monkeypatch) -> None:
    """``pt.testing.TransformerTestCase`` (inspect I/O, schematic) on ``transformer``; failures are reported.

    Offline, the schematic test would download PyTerrier's documentation inventory to link a class to its docs
    page: an empty inventory stands in for it (no class gets a link)."""
    monkeypatch.setattr(pt.documentation, "_cached_objects_inv", {})
    monkeypatch.setenv("PT_TEST_TRANSFORMER_REPORTS", "0")
    case = pt.testing.transformer_test_class(lambda: transformer)
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(result)
    problems = [f"{test}: {trace.strip().splitlines()[-1]}" for test, trace in result.failures + result.errors]
    assert result.testsRun == 2 and not problems, problems


@pytest.mark.parametrize("name", RERANKERS)
def test_rerankers_pass_pyterrier_transformer_test_case(parts, name, monkeypatch):
    run_transformer_test_case(make_reranker(name, parts), monkeypatch)


def test_encoders_pass_pyterrier_transformer_test_case(tiny_model_dir, tiny_encoder, monkeypatch):
    for transformer in (
        tiny_encoder,
        cv.BiEncoder(tiny_model_dir, max_length=16, device="cpu"),
        tiny_encoder.query_token_encoder(),
        tiny_encoder.query_encoder(),
    ):
        run_transformer_test_case(transformer, monkeypatch)


def test_the_projects_pipelines_pass_pyterrier_transformer_test_case(tiny_model_dir, tmp_path, monkeypatch):
    """The README's pipelines: BiEncoder retrieval with a token reranker after it (no store= or text), and the
    query encoded once for a FlexIndex retriever and the reranker. (``encoder >> flex.retriever()`` itself does
    not pass: pyterrier-dr's encoder advertises document-side inputs its retriever refuses.)"""
    from pyterrier_dr import FlexIndex

    model = cv.BiEncoder(tiny_model_dir, max_length=16, device="cpu")
    model.index(DOCS, tmp_path / "docs.index")
    flex, store = FlexIndex(str(tmp_path / "docs.flex")), cv.TokenStore(tmp_path / "docs.tokens")
    store.indexer(model, flex_index=flex, verbose=False).index(DOCS)
    for pipeline in (
        model.retriever(tmp_path / "docs.index") % 2 >> cv.MaxSim(model),
        model.query_token_encoder() >> flex.retriever(num_results=3) >> cv.MaxSim(model, store=store),
    ):
        run_transformer_test_case(pipeline, monkeypatch)


# ---- pyterrier-caching ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", RERANKERS)
def test_scorer_cache_in_front_of_every_reranker(parts, name, tmp_path):
    ptc = pytest.importorskip("pyterrier_caching", reason="pip install -e '.[dev]' (pyterrier-caching)")
    reranker = make_reranker(name, parts)
    inp = result_frame(with_text=False)
    cache = ptc.ScorerCache(tmp_path / "scores.cache", reranker)
    try:
        first = cache(inp)
        direct = reranker(inp)
        merged = first.merge(direct, on=["qid", "docno"], suffixes=("", "_direct"))
        assert len(merged) == len(inp)
        assert (merged["score"] - merged["score_direct"]).abs().max() < 1e-6
        cache.scorer = None  # the second pass must come from the cache alone (else: LookupError)
        second = cache(inp)
        pd.testing.assert_series_equal(second["score"], first["score"])
        assert (second["rank"] == first["rank"]).all()
    finally:
        cache.close()


# ---- progress with totals -------------------------------------------------------------------------------------


@pytest.fixture
def bars(monkeypatch):
    """Every ``pt.tqdm`` bar opened during the test (still working as bars)."""
    opened = []
    real = pt.tqdm

    def recording(*args, **kwargs):
        bar = real(*args, **kwargs)
        opened.append((kwargs.get("desc"), bar.total))
        return bar

    monkeypatch.setattr(pt, "tqdm", recording)
    return opened


def test_reranker_progress_has_a_total(parts, bars):
    make_reranker("MaxSim", parts, verbose=True)(result_frame(with_text=False))
    query_bars = [total for desc, total in bars if desc == "MaxSim"]
    assert query_bars == [2]  # one bar, over the two queries


@pytest.mark.parametrize("kind", ["frame", "list", "corpus iterator", "generator", "size not known yet"])
def test_store_indexer_progress(parts, bars, tmp_path, kind):
    records = DOCS.to_dict(orient="records")
    docs = {
        "frame": DOCS,
        "list": records,
        "corpus iterator": pt.utils.GeneratorLen(iter(records), len(records)),  # dataset.get_corpus_iter()
        "generator": (d for d in records),
        "size not known yet": pt.utils.GeneratorLen(iter(records), None),  # e.g. nano-beir before its first use
    }[kind]
    store = cv.TokenStore(tmp_path / "s.tokens").indexer(parts["encoder"], verbose=True).index(docs)
    assert len(store) == len(DOCS)
    totals = [total for desc, total in bars if desc == "token store"]
    assert totals == [len(DOCS) if kind in ("frame", "list", "corpus iterator") else None]  # else a count


def test_bi_encoder_index_progress_has_a_total(tiny_model_dir, bars, tmp_path):
    model = cv.BiEncoder(tiny_model_dir, max_length=16, device="cpu", verbose=True)
    model.index(DOCS, tmp_path / "docs.index")
    assert [total for desc, total in bars if desc == "token store"] == [len(DOCS)]


def test_evaluate_rerankers_show_progress_when_verbose(parts):
    from types import SimpleNamespace

    from pyterrier_compverify.evaluate import build_rerankers

    indices = SimpleNamespace(store=parts["store"])
    names = ["maxsim", str(parts["F4"].path)]
    assert all(r.verbose for r in build_rerankers(names, parts["encoder"], indices, verbose=True).values())
    assert not any(r.verbose for r in build_rerankers(names, parts["encoder"], indices).values())


@pytest.mark.parametrize("bad", [2.7, 1.5, "x", True])
def test_a_batch_size_that_is_not_a_whole_number_is_refused(tiny_encoder, bad):
    """2.7 became 2 and 1.5 became 1 without a word (review 50-a)."""
    with pytest.raises(ValueError, match="must be a whole number"):
        cv.MaxSim(tiny_encoder, batch_size=bad)
    with pytest.raises(ValueError, match="score_batch_size must be a whole number"):
        cv.MaxSim(tiny_encoder, score_batch_size=bad)
    assert cv.MaxSim(tiny_encoder, batch_size=4.0).batch_size == 4


def test_a_device_given_as_an_index_is_a_cuda_device():
    from pyterrier_compverify._device import resolve_device

    if torch.cuda.is_available():
        assert resolve_device(0) == torch.device("cuda:0")
    else:
        with pytest.raises(ValueError, match="device 'cuda:0': this torch sees no CUDA GPU"):
            resolve_device(0)


def test_every_submodule_named_in_dir_is_an_attribute():
    """``cv.verifier`` (and each lazily imported part) is reachable as an attribute, as ``dir(cv)`` says."""
    import importlib

    assert "verifier" in dir(cv)
    assert (
        cv.verifier is importlib.import_module("pyterrier_compverify.verifier") and cv.verifier.Verifier is cv.Verifier
    )


def test_wordnet_coverage_passes_pyterrier_transformer_test_case(monkeypatch):
    pytest.importorskip("nltk", reason="WordNetCoverage reads WordNet with nltk: the [negatives] extra")
    run_transformer_test_case(cv.WordNetCoverage(), monkeypatch)
