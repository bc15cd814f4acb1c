"""F1w (MaxSim with learned query-token weights): MaxSim at initialisation, the weighted mean it claims, the same
scores from packed store rows (fp32 and int8) as through the map, and the artifact and reranker around it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from test_packed_fast_paths import ragged_pass

import pyterrier_compverify as cv
from pyterrier_compverify.scoring import build_head, maxsim, score_candidates, score_packed, similarity_map
from pyterrier_compverify.scoring.heads.token_weights import TokenWeightedMaxSim
from pyterrier_compverify.scoring.int8_rows import quantise_rows


def trained_like(dim: int, seed: int = 0) -> TokenWeightedMaxSim:
    """An F1w head whose weights differ from token to token (as after training)."""
    head = build_head("F1w", dim=dim)
    with torch.no_grad():
        head.linear.weight.copy_(torch.randn(1, dim, generator=torch.Generator().manual_seed(seed)))
    return head.eval()


@pytest.mark.parametrize("hidden", [0, 8])
def test_fresh_head_is_maxsim(hidden):
    g = torch.Generator().manual_seed(0)
    query, cand = (
        torch.nn.functional.normalize(torch.randn(6, 16, generator=g), dim=-1),
        torch.nn.functional.normalize(torch.randn(4, 9, 16, generator=g), dim=-1),
    )
    cand_mask = torch.arange(9)[None] < torch.tensor([9, 3, 5, 1])[:, None]
    with torch.inference_mode():
        fresh = score_candidates(build_head("F1w", dim=16, hidden=hidden), query, cand, cand_mask)
    reference = maxsim(similarity_map(query, cand), torch.ones(6, dtype=torch.bool), cand_mask)
    torch.testing.assert_close(fresh, reference)


def test_score_is_the_weighted_mean_of_the_row_maxima():
    g = torch.Generator().manual_seed(1)
    query, cand = torch.randn(5, 8, generator=g), torch.randn(3, 7, 8, generator=g)
    cand_mask = torch.arange(7)[None] < torch.tensor([7, 2, 4])[:, None]
    head = trained_like(8)
    with torch.inference_mode():
        got = score_candidates(head, query, cand, cand_mask)
        w = torch.nn.functional.softplus(query @ head.linear.weight[0] + head.linear.bias)  # (m,)
    sim = similarity_map(query, cand).masked_fill(~cand_mask[:, None, :], float("-inf"))
    expected = (sim.amax(-1) * w).sum(-1) / w.sum()
    torch.testing.assert_close(got, expected)
    assert not torch.allclose(got, maxsim(similarity_map(query, cand), torch.ones(5, dtype=torch.bool), cand_mask))


def test_padded_query_tokens_weigh_nothing():
    head = trained_like(4)
    queries = torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    weights = head.token_weights(queries, mask)
    assert weights[0, 2] == 0 and (weights[mask] > 0).all()


def test_packed_rows_score_like_the_map():
    queries, query_mask, packed, mask, sizes = ragged_pass(3)
    head = trained_like(queries.shape[2])
    via_map = lambda sim, q, c, *, query_weights: head(sim, q, c, query_weights=query_weights)  # noqa: E731
    wrapped = torch.nn.Module()
    wrapped.forward = via_map  # not a TokenWeightedMaxSim: the map path, with the head's query options
    wrapped.query_options = head.query_options
    with torch.inference_mode():
        fast = score_packed(head, queries, packed, mask, query_mask=query_mask, sizes=sizes)
        reference = score_packed(wrapped, queries, packed, mask, query_mask=query_mask, sizes=sizes)
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=0)
    unit_q, unit_rows = (torch.nn.functional.normalize(x.float(), dim=-1) for x in (queries, packed))
    with torch.inference_mode():  # cosines, as a store holds: int8 codes keep them within a few thousandths
        exact = score_packed(head, unit_q, unit_rows, mask, query_mask=query_mask, sizes=sizes)
        int8 = score_packed(head, unit_q, quantise_rows(unit_rows), mask, query_mask=query_mask, sizes=sizes)
    torch.testing.assert_close(int8, exact, atol=0.01, rtol=0)


def test_artifact_round_trip_and_reranker(tiny_encoder, tmp_path):
    head = trained_like(tiny_encoder.dim, seed=2)
    saved = cv.Verifier.save(tmp_path / "f1w", tiny_encoder, head, "F1w", head_config={"dim": tiny_encoder.dim})
    reranker = saved.reranker(encoder=tiny_encoder)
    assert isinstance(reranker, cv.WeightedMaxSim)
    frame = pd.DataFrame(
        {
            "qid": ["q1"] * 3,
            "query": ["red car on a road"] * 3,
            "docno": ["d1", "d2", "d3"],
            "text": ["a red car on the road", "a blue bike", "cars and roads"],
            "extra": [1, 2, 3],
        }
    )
    out = reranker(frame)
    assert list(out["extra"]) == [1, 2, 3] and {"score", "rank"} <= set(out.columns)
    states = tiny_encoder.encode(["red car on a road", *frame["text"]]).token_states
    cand, cand_mask = cv.scoring.pad_token_states(states[1:])
    with torch.inference_mode():
        expected = score_candidates(head, states[0], cand, cand_mask)
    torch.testing.assert_close(torch.tensor(out["score"].to_numpy(), dtype=torch.float32), expected, atol=1e-5, rtol=0)


def test_packaged_default_loads_for_minilm():
    verifier = cv.Verifier(cv.verifier.default_verifier_path("F1w"))
    assert verifier.meta["head"] == "F1w" and verifier.spec.name == "sentence-transformers/all-MiniLM-L6-v2"
    head = verifier.load_head()
    assert isinstance(head, TokenWeightedMaxSim) and head.linear.weight.abs().sum() > 0  # trained, not fresh


WORDS = "a the dog cat chases is not on under left right big small red blue man woman tall short science".split()
RNG = np.random.default_rng(7)
DOCS = [{"docno": f"d{i}", "text": " ".join(RNG.choice(WORDS, size=int(RNG.integers(3, 14))))} for i in range(20)]


def test_store_paths_score_like_the_text_path(tiny_encoder, tmp_path):
    """From an fp16 store as from text (within fp16 rounding); from an int8 store with int8 products within the
    quantisation (and really different); every column kept."""
    saved = cv.Verifier.save(tmp_path / "f1w", tiny_encoder, trained_like(tiny_encoder.dim, 4), "F1w")
    fp16 = cv.TokenStore(tmp_path / "fp16.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)
    int8 = cv.TokenStore(tmp_path / "int8.tokens").indexer(tiny_encoder, verbose=False, codec="int8").index(DOCS)
    inp = pd.DataFrame({"qid": "q", "query": "a big red dog", "docno": [d["docno"] for d in DOCS],
                        "text": [d["text"] for d in DOCS], "x": 1})  # fmt: skip
    from_text = cv.WeightedMaxSim(saved, encoder=tiny_encoder)(inp)
    from_store = cv.WeightedMaxSim(saved, encoder=tiny_encoder, store=fp16)(inp.drop(columns="text"))
    from_int8 = cv.WeightedMaxSim(saved, encoder=tiny_encoder, store=int8, dtype="int8")(inp.drop(columns="text"))
    assert list(from_store["docno"]) == list(from_text["docno"]) and "x" in from_int8.columns
    np.testing.assert_allclose(from_store["score"], from_text["score"], rtol=0, atol=2e-3)
    np.testing.assert_allclose(from_int8["score"], from_store["score"], rtol=0, atol=0.01)
    assert not np.array_equal(from_int8["score"], from_store["score"])


def test_scores_do_not_depend_on_the_other_queries_of_a_pass():
    """A query scored alone, and beside a longer query (so padded, with garbage past its length): the same."""
    queries, query_mask, packed, mask, sizes = ragged_pass(5)
    head = trained_like(queries.shape[2], 6)
    garbage = queries.clone()
    garbage[~query_mask] = 100.0  # padded positions hold anything: they must weigh nothing
    with torch.inference_mode():
        together = score_packed(head, garbage, packed, mask, query_mask=query_mask, sizes=sizes)
        first = score_packed(head, queries[:1, :5], packed, mask[: sizes[0]], sizes=sizes[:1])
    torch.testing.assert_close(together[: sizes[0]], first, atol=1e-5, rtol=0)


def test_a_penalty_is_refused_with_the_fix(tiny_encoder, tmp_path):
    saved = cv.Verifier.save(tmp_path / "f1w", tiny_encoder, trained_like(tiny_encoder.dim), "F1w")
    with pytest.raises(ValueError, match="drop penalty="):
        cv.WeightedMaxSim(saved, encoder=tiny_encoder, penalty={"beta": 1.0, "tau": 0.5})


@pytest.mark.integration
def test_packaged_weights_weigh_content_words_above_function_words(minilm):
    """The trained weights: [CLS] / [SEP] count least, "dog" more than "a"; and the reranker ranks by them."""
    reranker = cv.WeightedMaxSim(encoder=minilm)
    query = "a dog running on the beach"
    tokens = minilm.model.tokenizer.convert_ids_to_tokens(minilm.model.tokenizer(query)["input_ids"])
    states = minilm.encode([query]).token_states[0].float()
    with torch.inference_mode():
        weights = dict(
            zip(tokens, reranker.head.token_weights(states[None], torch.ones(1, len(tokens), dtype=bool))[0])
        )
    assert max(weights["[CLS]"], weights["[SEP]"]) < min(w for t, w in weights.items() if t not in ("[CLS]", "[SEP]"))
    assert weights["dog"] > 1.5 * weights["a"]
    frame = pd.DataFrame(
        {
            "qid": ["q"] * 2,
            "query": [query] * 2,
            "docno": ["a", "b"],
            "text": ["A brown dog runs along the sand by the sea.", "A man reads a newspaper on a bench."],
        }
    )
    out = reranker(frame).sort_values("rank")
    assert list(out["docno"]) == ["a", "b"]


def test_explain_shows_the_weighted_score_without_a_verdict(tiny_encoder, tmp_path):
    from pyterrier_compverify.explain import explain

    saved = cv.Verifier.save(tmp_path / "f1w", tiny_encoder, trained_like(tiny_encoder.dim, 8), "F1w")
    reranker = cv.WeightedMaxSim(saved, encoder=tiny_encoder)
    shown = explain(reranker, "a big red dog", "the red dog is big")
    served = reranker(
        pd.DataFrame({"qid": ["q"], "query": ["a big red dog"], "docno": ["d"], "text": ["the red dog is big"]})
    )
    assert shown.verdict is None and shown.score == pytest.approx(float(served["score"].iloc[0]), abs=1e-5)
    assert shown.score != pytest.approx(shown.maxsim, abs=1e-6)  # the weights moved it off plain MaxSim
