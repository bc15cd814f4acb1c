"""With the real all-MiniLM-L6-v2 and the local data folder."""

import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def scifact_docs(data_dir):
    docs = load_collection("irds:beir/scifact/test").corpus_iter()
    return [next(docs) for _ in range(60)]


def test_pooled_vectors_match_sentence_transformers(minilm, scifact_docs):
    from sentence_transformers import SentenceTransformer

    from pyterrier_compverify.encoder import resolve_model_path

    texts = [d["text"] for d in scifact_docs] + ["", "图片中显示了一只猫", "a dog " * 300]
    reference = SentenceTransformer(resolve_model_path(cv.DEFAULT_MODEL), device="cpu")
    reference.max_seq_length = 128
    expected = reference.encode(texts, convert_to_tensor=True, batch_size=7)
    fp32 = cv.TokenEncoder(device="cpu", dtype="fp32")  # bf16 (the CPU default) is held to 0.999: test_bf16.py
    got = fp32.encode(texts, batch_size=16).pooled
    assert torch.nn.functional.cosine_similarity(got, expected).min().item() >= 0.9999
    assert torch.nn.functional.cosine_similarity(minilm.encode(texts).pooled, expected).min().item() >= 0.999


def test_maxsim_store_equals_text_on_real_data(minilm, scifact_docs, tmp_path):
    store = cv.TokenStore(tmp_path / "scifact60.tokens").indexer(minilm, verbose=False).index(scifact_docs)
    queries = ["cerebral white matter in newborns", "vitamin D and bone density", "protein folding"]
    frame = pd.DataFrame(
        [
            {"qid": str(i), "query": q, "docno": d["docno"], "text": d["text"]}
            for i, q in enumerate(queries)
            for d in scifact_docs
        ]
    )
    a = cv.MaxSim(minilm)(frame).sort_values(["qid", "docno"])
    b = cv.MaxSim(minilm, store=store)(frame.drop(columns=["text"])).sort_values(["qid", "docno"])
    np.testing.assert_allclose(a["score"], b["score"], atol=2e-3)
    for qid in a["qid"].unique():  # same top 10, in the same order
        top_a = a[a.qid == qid].sort_values("rank")["docno"].head(10).tolist()
        top_b = b[b.qid == qid].sort_values("rank")["docno"].head(10).tolist()
        assert top_a == top_b


def test_demo_runs_and_dense_matches_plain_sentence_transformers(tmp_path, capsys):
    from pyterrier_compverify.demo import DemoCollection, run_demo
    from pyterrier_compverify.evaluate import MEASURES, build_indices, plain_dense_run, standard_pipelines

    tables = run_demo(folder=str(tmp_path), device="cpu")
    printed = capsys.readouterr().out
    assert "Dense >> MaxSim@100" in printed and "near-misses" in printed
    exp = tables["experiment"]
    assert list(exp["name"]) == ["BM25", "Dense", "Dense >> MaxSim@100"]
    ndcg = exp.set_index("name")["nDCG@10"]  # the demo's point: each stage ranks the relevant text higher
    assert ndcg["BM25"] < ndcg["Dense"] < ndcg["Dense >> MaxSim@100"] <= 1, ndcg.to_dict()  # 0.513 / 0.752 / 0.805
    assert len(tables["Dense"]) == 12

    import pyterrier as pt

    collection = DemoCollection(tmp_path / "collection")
    encoder = cv.TokenEncoder(device="cpu")
    indices = build_indices(collection, encoder, tmp_path / "indices", verbose=False)
    dense = standard_pipelines(indices, encoder)["Dense"]
    topics, qrels = collection.topics(), collection.qrels()
    res = pt.Experiment([dense, plain_dense_run(collection, encoder, topics)], topics, qrels, MEASURES)
    assert abs(res["nDCG@10"][0] - res["nDCG@10"][1]) < 1e-6


def test_packaged_mapverifier_loads_and_matches_store_and_text(minilm, scifact_docs, tmp_path):
    verifier = cv.MapVerifier(encoder=minilm)
    assert verifier.verifier.meta["head"] == "F4" and not verifier.verifier.meta["fine_tuned_encoder"]
    store = cv.TokenStore(tmp_path / "s.tokens").indexer(minilm, verbose=False).index(scifact_docs[:20])
    frame = pd.DataFrame(
        [
            {"qid": "1", "query": "white matter development in newborns", "docno": d["docno"], "text": d["text"]}
            for d in scifact_docs[:20]
        ]
    )
    from_text = verifier(frame).sort_values("docno")
    from_store = cv.MapVerifier(encoder=minilm, store=store)(frame.drop(columns=["text"])).sort_values("docno")
    np.testing.assert_allclose(from_text["score"], from_store["score"], atol=5e-3)
    # the packaged serving form is MaxSim minus the conditional penalty (chosen on dev): never above MaxSim
    assert verifier.verifier.default_penalty is not None and verifier.penalty == verifier.verifier.default_penalty
    maxsim = cv.MaxSim(minilm)(frame).sort_values("docno")
    assert (from_text["score"].to_numpy() <= maxsim["score"].to_numpy() + 1e-6).all()
    pure = cv.MapVerifier(encoder=minilm, penalty=False)(frame)
    assert pure["score"].between(-1, 1).all()


@pytest.mark.parametrize("reranker_class", ["MapVerifier", "MapCNN"])
def test_packaged_verifiers_never_rank_a_near_miss_above_the_query_itself(minilm, reranker_class):
    """The shipped form measures each candidate against the head's verdict on the query's own text: the query's
    own text keeps MaxSim 1 (no penalty), and a one-word edit of it is penalised only by the head's doubt."""
    verifier = getattr(cv, reranker_class)(encoder=minilm)
    assert verifier.verifier.meta["head"] == verifier.HEAD
    assert verifier.penalty.get("reference") == "query" and verifier.penalty.get("gate") == "symmetric"
    query = "A black dog runs across the green grass ."
    texts = [query, "A white dog runs across the green grass .", "A black cat runs across the green grass ."]
    frame = pd.DataFrame({"qid": "q", "query": query, "docno": ["self", "att", "obj"], "text": texts})
    scores = verifier(frame).set_index("docno")["score"]
    maxsim = cv.MaxSim(minilm)(frame).set_index("docno")["score"]
    assert scores["self"] == pytest.approx(maxsim["self"], abs=1e-3) and scores["self"] > 0.99
    assert (scores[["att", "obj"]] < scores["self"]).all() and (scores <= maxsim + 1e-6).all()


def test_evaluate_packaged_rerankers_use_the_runs_encoder_and_its_max_length(minilm):
    from types import SimpleNamespace

    from pyterrier_compverify.evaluate import PACKAGED_HEADS, build_rerankers, check_heads

    long = cv.TokenEncoder(device="cpu", max_length=256)  # compverify evaluate --max-length 256
    check_heads(list(PACKAGED_HEADS), False, long)  # the same weights: accepted
    built = build_rerankers(list(PACKAGED_HEADS), long, SimpleNamespace(store=None))
    assert len(built) == len(PACKAGED_HEADS) and all(r.encoder is long for r in built.values())
