"""The conditional penalty runs its verifier only where the gate lets the penalty matter (``skip_below``)."""

import pytest
import torch
from torch import nn

from pyterrier_compverify.scoring import (
    ConditionalPenalty,
    build_head,
    maxsim,
    normalise_states,
    pad_token_states,
    reverse_maxsim,
    score_candidates,
    score_packed,
)


class Counting(nn.Module):
    """A verifier that records how many maps it was given."""

    kind = "map"

    def __init__(self, verifier: nn.Module):
        super().__init__()
        self.verifier, self.seen = verifier, []

    def forward(self, sim, query_mask, cand_mask):
        self.seen.append(sim.shape[0])
        return self.verifier(sim, query_mask, cand_mask)


def _unit(n, dim=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return normalise_states(torch.randn(n, dim, generator=g), torch.ones(n, dtype=torch.bool))


def _candidates(query):
    """Two near-copies of the query (gate open), one a little less close (gate ajar), three unrelated texts."""
    near = query.clone()
    near[-1] = _unit(1, seed=9)[0]
    ajar = normalise_states(query + 0.35 * _unit(query.shape[0], seed=4), torch.ones(query.shape[0], dtype=torch.bool))
    return [query.clone(), near, ajar, _unit(7, seed=1), _unit(3, seed=2), _unit(12, seed=3)]


@pytest.fixture()
def verifier():
    torch.manual_seed(0)
    return Counting(build_head("F4", dim=16).eval())


@pytest.mark.parametrize("reference", ["fixed", "query"])
def test_skipping_changes_no_score_by_more_than_skip_below_and_verifies_only_open_gates(verifier, reference):
    query = _unit(5, seed=7)
    cand, mask = pad_token_states(_candidates(query))
    gated = ConditionalPenalty(verifier, beta=2.0, tau=0.85, sharpness=40.0, gate="symmetric", reference=reference)
    every = ConditionalPenalty(verifier, beta=2.0, tau=0.85, sharpness=40.0, gate="symmetric", reference=reference)
    every.skip_below = 0.0
    with torch.no_grad():
        full = score_candidates(every, query, cand, mask)
        verifier.seen.clear()
        fast = score_candidates(gated, query, cand, mask)
        checked = verifier.seen[-1]
        base, _, penalty = every.components(
            torch.einsum("md,bnd->bmn", query, cand),
            torch.ones(5, dtype=torch.bool),
            mask,
            query_verdict=torch.full((6,), 0.3),
        )
    assert (fast - full).abs().max().item() <= 1e-6 + 1e-7
    assert 0 < checked < 6  # the three unrelated candidates are never verified
    assert (penalty[3:] < 1e-6).all() and (full[:3] != base[:3]).any()  # what was skipped could not matter


def test_an_ajar_gate_is_still_verified(verifier):
    """A penalty far below the score's size but above skip_below is kept: only what cannot matter is skipped."""
    query = _unit(5, seed=7)
    cand, mask = pad_token_states([_candidates(query)[2]])
    sim, one = torch.einsum("md,bnd->bmn", query, cand), torch.ones(5, dtype=torch.bool)
    gate = torch.minimum(maxsim(sim, one, mask), reverse_maxsim(sim, one, mask)).item()
    form = ConditionalPenalty(verifier, beta=2.0, tau=gate + 0.25, sharpness=40.0, gate="symmetric")
    with torch.no_grad():
        base, _, penalty = form.components(sim, one, mask)
        score = score_candidates(form, query, cand, mask)
    assert 1e-6 < penalty.item() < 1e-3
    assert score.item() == pytest.approx((base - penalty).item(), abs=1e-7)
    assert score.item() < base.item()


@pytest.mark.parametrize("reference", ["fixed", "query"])
def test_packed_rows_give_the_padded_scores_and_skip_the_same_candidates(verifier, reference):
    queries = [_unit(5, seed=7), _unit(8, seed=8)]
    groups = [_candidates(queries[0]), _candidates(queries[1])[:4]]
    form = ConditionalPenalty(verifier, beta=2.0, tau=0.85, sharpness=40.0, gate="symmetric", reference=reference)
    with torch.no_grad():
        padded = []
        for q, cands in zip(queries, groups):
            cand, mask = pad_token_states(cands)
            padded.append(score_candidates(form, q, cand, mask))
        verifier.seen.clear()
        q, q_mask = pad_token_states(queries)
        everyone = [c for cands in groups for c in cands]
        _, mask = pad_token_states(everyone)
        packed = score_packed(form, q, torch.cat(everyone), mask, query_mask=q_mask, sizes=[6, 4])
    assert torch.allclose(packed, torch.cat(padded), atol=1e-5)
    assert verifier.seen[0] < 10  # one pass: the open gates and their queries' own maps
