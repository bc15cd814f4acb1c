"""The scoring core: one compatibility check, one map path shared by serving and training, a head registry."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import pyterrier_compverify as cv
from pyterrier_compverify.scoring import HeadSpec, build_head, register_head
from pyterrier_compverify.scoring.heads.fixed import FixedHead, maxsim
from pyterrier_compverify.training.verifier import EncoderStates, VerifierModel

DOCS = [
    {"docno": "d1", "text": "a dog chases a cat on the mat"},
    {"docno": "d2", "text": "the cat chases the dog"},
    {"docno": "d3", "text": "a tall man greeted a short woman"},
    {"docno": "d4", "text": "protein " * 30},
]
QUERIES = ["the dog chases a red cat", "a short man greeted a tall woman"]


def frame():
    rows = [{"qid": f"q{i}", "query": q, **d} for i, q in enumerate(QUERIES) for d in DOCS]
    return pd.DataFrame(rows)


@pytest.fixture
def store(tmp_path, tiny_encoder):
    return cv.TokenStore(tmp_path / "docs.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)


def test_query_states_of_another_max_length_are_not_reused(tiny_model_dir):
    """The review's repro: same weights, max_length 4 vs 16; the short encoder's query_toks used to be reused."""
    short = cv.TokenEncoder(tiny_model_dir, max_length=4, device="cpu")
    full = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    assert short.fingerprint == full.fingerprint and not short.spec.compatible(full.spec)
    topics = pd.DataFrame({"qid": ["q0"], "query": [QUERIES[0]]})
    with_toks = short.query_token_encoder()(topics).merge(frame().drop(columns="query"), on="qid")
    expected = cv.MaxSim(full)(with_toks.drop(columns=["query_toks", "query_vec"]))
    got = cv.MaxSim(full)(with_toks)
    np.testing.assert_allclose(got["score"], expected["score"], atol=1e-6)


def test_store_of_another_max_length_is_refused(store, tiny_model_dir):
    other = cv.TokenEncoder(tiny_model_dir, max_length=8, device="cpu")
    with pytest.raises(cv.IncompatibleEncoderError, match="max_length 16 != 8"):
        cv.MaxSim(other, store=store)


class _RaisingEncode:
    """Wraps an encoder; encoding documents raises (a store-backed reranker must never do it)."""

    def __init__(self, encoder):
        self.encoder = encoder

    def __call__(self, texts, **kwargs):
        if kwargs.get("what") != "query":
            raise AssertionError(f"documents were encoded: {list(texts)[:2]}")
        return self.encoder.__class__.encode(self.encoder, texts, **kwargs)


@pytest.mark.parametrize("head", ["F0", "F1", "F2", "Pooled", "F3", "F4", "AF"])
def test_a_store_backed_reranker_never_encodes_documents(store, tiny_encoder, monkeypatch, head):
    reranker = cv.TokenReranker(tiny_encoder, head=build_head(head, dim=tiny_encoder.dim), store=store)
    expected = cv.TokenReranker(tiny_encoder, head=reranker.head)(frame())  # from text, same head module
    monkeypatch.setattr(tiny_encoder, "encode", _RaisingEncode(tiny_encoder))
    got = reranker(frame().drop(columns="text"))
    np.testing.assert_allclose(got["score"], expected["score"], atol=3e-3)  # fp16 store


@pytest.mark.parametrize("head", ["F1", "Pooled", "F3", "F4", "AF", ("F4", {"features": True})])
def test_training_and_serving_give_the_same_score(tiny_model_dir, head):
    """VerifierModel.pair_logits (training: padded batches, all pairs) and the reranker (serving: each text
    alone, padding stripped) score the same pair with the same head alike. In fp32: training runs the fp32
    weights, and bf16 serving differs by batch composition (its tolerance is tests/test_bf16.py's)."""
    tiny_encoder = cv.TokenEncoder(tiny_model_dir, max_length=16, batch_size=4, device="cpu", dtype="fp32")
    torch.manual_seed(3)
    name, config = (head, {}) if isinstance(head, str) else head
    module = build_head(name, dim=tiny_encoder.dim, **config)
    for p in module.parameters():  # move off any symmetric initialisation
        p.data.add_(torch.randn_like(p) * 0.05)
    model = VerifierModel(EncoderStates(tiny_encoder, train=False), module).eval()
    anchors = ["the dog chases a red cat", "a tall man"]
    positives = ["a dog chases a cat on the mat", "the short woman greeted a tall man today"]
    negatives = ["the cat chases a red dog", "a short man"]
    prep = tiny_encoder.model.preprocess
    with torch.inference_mode():
        logits = model.pair_logits(prep(anchors), prep(positives + negatives))
    reranker = cv.TokenReranker(tiny_encoder, head=module)
    pairs = pd.DataFrame(
        {
            "qid": ["a0", "a0", "a0", "a1", "a1", "a1"],
            "query": [anchors[0]] * 3 + [anchors[1]] * 3,
            "docno": ["p0", "p1", "n0", "p0", "p1", "n1"],
            "text": [positives[0], positives[1], negatives[0], positives[0], positives[1], negatives[1]],
        }
    )
    served = reranker(pairs).set_index(["qid", "docno"])["score"]
    expected = {
        ("a0", "p0"): logits[0, 0],
        ("a0", "p1"): logits[0, 1],
        ("a0", "n0"): logits[0, 2],
        ("a1", "p0"): logits[1, 0],
        ("a1", "p1"): logits[1, 1],
        ("a1", "n1"): logits[1, 2],
    }
    for key, value in expected.items():
        assert served[key] == pytest.approx(value.item(), abs=1e-5), key


def test_one_qid_with_two_query_texts_scores_each_row_against_its_own(tiny_encoder):
    rows = pd.DataFrame(
        {"qid": ["q", "q"], "query": QUERIES, "docno": ["d1", "d3"], "text": [DOCS[0]["text"], DOCS[2]["text"]]}
    )
    got = cv.MaxSim(tiny_encoder)(rows).set_index("docno")["score"]
    for query, docno, text in zip(QUERIES, ["d1", "d3"], [DOCS[0]["text"], DOCS[2]["text"]]):
        alone = cv.MaxSim(tiny_encoder)(
            pd.DataFrame({"qid": ["x"], "query": [query], "docno": [docno], "text": [text]})
        )
        assert got[docno] == pytest.approx(alone["score"].iloc[0], abs=1e-6)


def test_rerankers_compare_equal_and_pickle_the_store_by_path(store, tiny_encoder):
    a, b = cv.MaxSim(tiny_encoder, store=store), cv.MaxSim(tiny_encoder, store=cv.TokenStore(store.path))
    assert a == b and hash(a) == hash(b)
    assert a != cv.BagOfSimilarities(tiny_encoder, store=store) and a != cv.MaxSim(tiny_encoder)
    # heads whose reprs are alike: two F4 heads of other weights, two functions under one name
    torch.manual_seed(1)
    with pytest.warns(UserWarning, match=r"head 'F4' has trained weights, .* use cv.MapVerifier\(\) \(the packaged"):
        f4 = [cv.TokenReranker(tiny_encoder, head="F4", store=store) for _ in range(2)]
    assert repr(f4[0].head) == repr(f4[1].head) and f4[0] != f4[1]
    assert f4[0] == f4[0] and cv.TokenReranker(tiny_encoder, head=f4[0].head, store=store) == f4[0]
    assert cv.PooledCosine(tiny_encoder) == cv.PooledCosine(tiny_encoder)  # weight-free, though not a FixedHead
    named = [FixedHead(fn, "x") for fn in (maxsim, lambda sim, q, c: -maxsim(sim, q, c))]
    assert cv.TokenReranker(tiny_encoder, head=named[0]) != cv.TokenReranker(tiny_encoder, head=named[1])
    a(frame().drop(columns="text"))  # opens the memory map
    blob = pickle.dumps(store)
    assert len(blob) < 1000  # the path, not the states
    again = pickle.loads(blob)
    assert again == store and len(again) == len(DOCS)


class _F5(nn.Module):
    """A toy learned head for the registry test: a weighted MaxSim."""

    kind = "map"

    def __init__(self, dim=None):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(2.0))

    def forward(self, sim, query_mask, cand_mask):
        return self.weight * maxsim(sim, query_mask, cand_mask)


def test_a_registered_head_is_usable_by_name_everywhere(tmp_path, tiny_encoder):
    register_head(HeadSpec("F5-test", "map", True, lambda dim=None: _F5(dim), "TrainedHeadReranker", "test head"))
    with pytest.warns(UserWarning, match="head 'F5-test' has trained weights"):  # built untrained by name
        scores = cv.TokenReranker(tiny_encoder, head="F5-test")(frame())["score"]
    np.testing.assert_allclose(scores, 2 * cv.MaxSim(tiny_encoder)(frame())["score"], atol=1e-5)
    from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier

    rows = pd.DataFrame({"anchor": QUERIES * 2, "positive": QUERIES * 2, "negative": [d["text"] for d in DOCS]})
    config = VerifierTrainingConfig(head="F5-test", steps=2, batch_size=2, save_steps=2, logging_steps=1)
    verifier, _ = train_verifier(rows, tmp_path / "f5", encoder=tiny_encoder, config=config, verbose=False)
    reranker = verifier.reranker(encoder=tiny_encoder)
    assert isinstance(reranker, cv.TrainedHeadReranker) and len(reranker(frame())) == len(frame())


def test_a_trained_head_accepts_its_encoder_at_another_max_length(tmp_path, tiny_model_dir, tiny_encoder):
    from pyterrier_compverify.scoring import build_head

    verifier = cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=tiny_encoder.dim), "F4")
    longer = cv.TokenEncoder(tiny_model_dir, max_length=32, device="cpu")
    assert cv.MapVerifier(verifier, encoder=longer).encoder is longer  # same weights: accepted
    with pytest.raises(cv.IncompatibleEncoderError, match="fingerprint"):
        other = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
        with torch.no_grad():
            next(other.model.parameters()).add_(1.0)
        other.weights_changed()
        cv.MapVerifier(verifier, encoder=other)
