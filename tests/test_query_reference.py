"""ConditionalPenalty(reference="query"): the verdict measured against the verifier's verdict on the query itself."""

import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.scoring import (
    ConditionalPenalty,
    build_head,
    normalise_states,
    pad_token_states,
    score_aligned,
    score_all_pairs,
    score_candidates,
    score_packed,
)


def _states(lengths, dim=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [normalise_states(torch.randn(n, dim, generator=g), torch.ones(n, dtype=torch.bool)) for n in lengths]


@pytest.fixture()
def fused():
    torch.manual_seed(0)
    verifier = build_head("F4", dim=16).eval()
    return ConditionalPenalty(verifier, beta=2.0, tau=0.5, sharpness=20.0, gate="symmetric", reference="query")


def test_the_query_itself_is_never_penalised_and_others_by_their_gap_to_it(fused):
    query = _states([5])[0]
    near = query.clone()
    near[4] = _states([1], seed=3)[0][0]  # one token replaced: a one-word edit
    cands = [query, near, *_states([7, 3], seed=1)]
    cand, mask = pad_token_states(cands)
    with torch.no_grad():
        scores = score_candidates(fused, query, cand, mask)
        one = torch.ones(5, dtype=torch.bool)
        v_self = fused.query_verdict(query[None] @ query[None].transpose(1, 2), one[None])
        base, v, penalty = fused.components(
            torch.einsum("md,bnd->bmn", query, cand), one, mask, query_verdict=v_self.expand(len(cands))
        )
    assert scores[0].item() == pytest.approx(1.0, abs=1e-6)  # S = 1 and no penalty: above every near-duplicate
    assert torch.allclose(scores, base - penalty, atol=1e-6)
    gate = torch.sigmoid(
        20.0
        * (torch.minimum(base, cv.scoring.reverse_maxsim(torch.einsum("md,bnd->bmn", query, cand), one, mask)) - 0.5)
    )
    assert torch.allclose(penalty, 2.0 * gate * (v_self - v).clamp(min=0), atol=1e-6)


def test_every_scoring_path_gives_the_same_fused_score(fused):
    queries = _states([4, 6], seed=5)
    cands = _states([3, 6, 8], seed=6)
    q, q_mask = pad_token_states(queries)
    c, c_mask = pad_token_states(cands)
    with torch.no_grad():
        all_pairs = score_all_pairs(fused, q, q_mask, c, c_mask)  # (2, 3)
        aligned = score_aligned(fused, q[:1].expand(3, -1, -1), q_mask[:1].expand(3, -1), c, c_mask)
        one = score_candidates(fused, queries[0], c, c_mask)
        packed = torch.cat([s for s in cands])
        per_query = torch.cat([c_mask, c_mask])
        rows = torch.cat([packed, packed])
        grouped = score_packed(fused, q, rows, per_query, query_mask=q_mask, sizes=[3, 3])
    assert torch.allclose(all_pairs[0], aligned, atol=1e-5)
    assert torch.allclose(all_pairs[0], one, atol=1e-5)
    assert torch.allclose(all_pairs.reshape(-1), grouped, atol=1e-5)


def test_the_form_needs_the_query_verdict_and_names_the_choices(fused):
    sim, q, c = torch.ones(1, 2, 2), torch.ones(2, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match="needs query_verdict"):
        fused(sim, q, c)
    with pytest.raises(ValueError, match="reference='self'.*fixed, query"):
        ConditionalPenalty(fused.verifier, reference="self")


def test_the_reference_is_recorded_with_the_serving_form(tmp_path, tiny_encoder):
    verifier = cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=tiny_encoder.dim), "F4")
    form = {"beta": 3.0, "tau": 0.85, "sharpness": 40.0, "gate": "symmetric", "reference": "query"}
    verifier.set_default_penalty(form, selected_on="dev")
    reranker = cv.MapVerifier(tmp_path / "v", encoder=tiny_encoder)
    assert reranker.head.reference == "query" and "reference=query" in repr(reranker.head)
    import pandas as pd

    frame = pd.DataFrame(
        {"qid": ["q1"] * 2, "query": ["a dog runs"] * 2, "docno": ["d1", "d2"], "text": ["a dog runs", "a cat"]}
    )
    scored = reranker(frame).set_index("docno")["score"]
    assert scored["d1"] == pytest.approx(1.0, abs=1e-4)  # the query's own text keeps MaxSim 1
