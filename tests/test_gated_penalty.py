"""The conditional penalty runs its verifier only where the gate lets the penalty matter (``skip_below``)."""

import pytest
import torch
from torch import nn

from pyterrier_compverify.scoring import (
    ConditionalPenalty,
    build_head,
    maxsim,
    normalise_states,
    packed_maxsim,
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


def _form(verifier, reference="fixed", skip_below=1e-6, **options):
    options = {"beta": 2.0, "tau": 0.85, "sharpness": 40.0, "gate": "symmetric", **options}
    return ConditionalPenalty(verifier, reference=reference, skip_below=skip_below, **options)


@pytest.mark.parametrize("reference", ["fixed", "query"])
def test_skipping_changes_no_score_by_more_than_skip_below_and_verifies_only_open_gates(verifier, reference):
    query = _unit(5, seed=7)
    cand, mask = pad_token_states(_candidates(query))
    gated, every = _form(verifier, reference), _form(verifier, reference, skip_below=0.0)
    one = torch.ones(5, dtype=torch.bool)
    with torch.no_grad():
        full = score_candidates(every, query, cand, mask)
        verifier.seen.clear()
        fast = score_candidates(gated, query, cand, mask)
        checked = verifier.seen[-1]
        v_self = every.query_verdict((query @ query.T)[None], one[None]).expand(6)
        base, _, penalty = every.components(torch.einsum("md,bnd->bmn", query, cand), one, mask, v_self)
    assert (fast - full).abs().max().item() <= 1e-6 + 1e-7
    assert checked == 3  # the two near-copies and the ajar candidate; the three unrelated ones are never verified
    assert (penalty[3:] < 1e-6).all()  # what was skipped could not matter
    if reference == "fixed":
        assert (penalty[:3] > 1e-3).all()
    else:  # the query's own text is never penalised; the ajar candidate is, by its gap to the query's verdict
        # zero up to float rounding: the copy's map and the self-map are one product in batches of another shape
        assert penalty[0] <= 1e-6 and penalty[2] > 1e-3
    assert torch.equal(fast[3:], base[3:]) and torch.allclose(fast, base - penalty, atol=1e-6)


@pytest.mark.parametrize(("bound", "verified"), [(2e-6, True), (0.5e-6, False)])
def test_the_threshold_is_the_bound_on_the_penalty(verifier, bound, verified):
    """A candidate whose largest possible penalty (2 * weight) is just above skip_below is verified, just below not."""
    query = _unit(5, seed=7)
    cand, mask = pad_token_states([_candidates(query)[2]])
    sim, one = torch.einsum("md,bnd->bmn", query, cand), torch.ones(5, dtype=torch.bool)
    gate = torch.minimum(maxsim(sim, one, mask), reverse_maxsim(sim, one, mask)).item()
    tau = gate - torch.logit(torch.tensor(bound / 4.0, dtype=torch.float64)).item() / 40.0  # 2 * 2 * sigmoid = bound
    with torch.no_grad():
        verifier.seen.clear()
        score = score_candidates(_form(verifier, tau=tau), query, cand, mask)
    assert bool(verifier.seen) == verified
    assert verified or score.item() == maxsim(sim, one, mask).item()


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


class ZeroOutside(Counting):
    """A verifier that also checks the map contract: every cell outside a valid (query, candidate) pair is 0."""

    def forward(self, sim, query_mask, cand_mask):
        valid = query_mask[:, :, None] & cand_mask[:, None, :]
        assert torch.isfinite(sim).all() and (sim[~valid] == 0).all()
        return super().forward(sim, query_mask, cand_mask)


@pytest.mark.parametrize("reference", ["fixed", "query"])
def test_packed_rows_give_the_padded_scores_and_skip_the_same_candidates(monkeypatch, reference):
    """Queries of 3 and 13 tokens: the shorter query's product columns past its width are undefined (NaN here)
    and must not reach a map; one head pass per scoring pass (open gates and their queries' own maps together)."""
    products = packed_maxsim.packed_products

    def undefined_past_widths(queries, packed, bounds, dtype, *, widths=None, **kw):
        sims = products(queries, packed, bounds, dtype, widths=widths, **kw)
        for g, (first, last) in enumerate(zip(bounds[:-1], bounds[1:])):
            sims[first:last, -(-int(widths[g]) // 8) * 8 :] = float("nan")
        return sims

    monkeypatch.setattr(packed_maxsim, "packed_products", undefined_past_widths)
    torch.manual_seed(0)
    verifier = ZeroOutside(build_head("F4", dim=16).eval())
    queries = [_unit(3, seed=7), _unit(13, seed=8)]
    groups = [_candidates(queries[0]), _candidates(queries[1])[:4]]
    gated, every = _form(verifier, reference), _form(verifier, reference, skip_below=0.0)
    with torch.no_grad():
        padded = []
        for q, cands in zip(queries, groups):
            cand, mask = pad_token_states(cands)
            padded.append(score_candidates(gated, q, cand, mask))
        q, q_mask = pad_token_states(queries)
        everyone = [c for cands in groups for c in cands]
        _, mask = pad_token_states(everyone)
        packed = lambda form: score_packed(form, q, torch.cat(everyone), mask, query_mask=q_mask, sizes=[6, 4])  # noqa: E731
        full = packed(every)
        verifier.seen.clear()
        fast = packed(gated)
    assert torch.isfinite(fast).all()
    assert torch.allclose(fast, torch.cat(padded), atol=2e-6)
    assert torch.allclose(fast, full, atol=2e-6)
    assert len(verifier.seen) == 1 and verifier.seen[0] < 10 + (2 if reference == "query" else 0)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"beta": -1.0}, r"beta \(0: MaxSim alone\) must be a finite number >= 0"),
        ({"beta": float("nan")}, "beta"),  # a NaN switched the penalty off without a word
        ({"beta": float("inf")}, "beta"),
        ({"tau": "0.9"}, "tau must be a finite number, not '0.9'"),  # failed only when scoring
        ({"sharpness": 0.0}, "sharpness must be a finite number > 0"),
        ({"skip_below": float("nan")}, "skip_below"),
    ],
)
def test_options_that_are_not_usable_numbers_are_refused(verifier, option, message):
    with pytest.raises(ValueError, match=message):
        ConditionalPenalty(verifier, **option)


def test_the_verdict_runs_in_float32_under_bf16_autocast():
    """The gated verifier sees few maps: it always runs in float32 (autocast off), so the packed bf16 path, the text
    path and explain give it the same input precision."""
    verifier = build_head("F4", dim=16).eval()
    head = ConditionalPenalty(verifier, beta=0.5, tau=0.5, reference="query")
    g = torch.Generator().manual_seed(3)
    sim = torch.rand(3, 5, 7, generator=g) * 2 - 1
    query_mask, cand_mask = torch.ones(3, 5, dtype=torch.bool), torch.ones(3, 7, dtype=torch.bool)
    with torch.inference_mode():
        exact = verifier(sim, query_mask, cand_mask)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = head.verdict(sim.bfloat16(), query_mask, cand_mask)
            reduced = verifier(sim, query_mask, cand_mask)
        expected = verifier(sim.bfloat16().float(), query_mask, cand_mask)  # its own input, in float32
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert not torch.equal(reduced.float(), exact)  # autocast would have changed the verdict


@pytest.mark.parametrize(
    ("head", "reference", "dtype"),
    [("F4", "fixed", "float32"), ("F4", "query", "float32"), ("F4", "query", "bfloat16"), ("F3", "query", "float32")],
)
def test_a_store_reranker_verifies_a_whole_frame_in_one_pass(
    tmp_path, tiny_encoder, monkeypatch, head, reference, dtype
):
    """Over a store, the open candidates of every pass wait in a ``DeferredVerdicts`` and get one verifier pass
    per frame (or per ``DEFERRED_MAPS`` maps): the same scores as penalising each query's candidates at once."""
    import numpy as np
    import pandas as pd

    import pyterrier_compverify as cv
    from pyterrier_compverify import rerank
    from pyterrier_compverify.scoring import pairs

    texts = ["a dog runs on the grass", "a dog runs on grass", "a cat runs on the grass", "the dog is not running",
             "red apples in a bowl", "a dog walks on the grass", "two dogs run", "grass"]  # fmt: skip
    docs = [{"docno": f"d{i}", "text": t} for i, t in enumerate(texts)]
    store = cv.TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, verbose=False).index(docs)
    config = {"channels": (4, 8), "hidden": 8} if head == "F3" else {}
    verifier = build_head(head, dim=tiny_encoder.dim, **config)
    saved = cv.Verifier.save(tmp_path / "v", tiny_encoder, verifier, head, head_config=config)
    form = {"beta": 0.5, "tau": 0.3, "sharpness": 10.0, "gate": "symmetric", "reference": reference}
    queries = ["a dog runs on the grass", "the cat runs", "dog on grass"]
    frame = pd.DataFrame(
        [{"qid": f"q{i}", "query": q, "docno": d["docno"]} for i, q in enumerate(queries) for d in docs]
    )

    def reranker():
        made = saved.reranker(encoder=tiny_encoder, store=store, penalty=form, score_batch_size=5, dtype=dtype)
        made.head.verifier = Counting(made.head.verifier)
        return made

    one_pass = reranker()
    scores = one_pass(frame)["score"].to_numpy()
    assert len(one_pass.head.verifier.seen) == 1 and one_pass.head.verifier.seen[0] > 5  # several passes' maps
    packed, mask = store.packed_states([d["docno"] for d in docs])
    with torch.inference_mode():  # each query's candidates penalised at once, without deferring
        states = tiny_encoder.encode(queries).token_states
        expected = [score_packed(one_pass.head, q, packed, mask, dtype=one_pass.dtype).numpy() for q in states]
        expected = np.concatenate(expected)
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    assert (expected < np.concatenate([packed_maxsim.maxsim_packed(q[None], torch.ones(1, len(q), dtype=torch.bool),
            packed, mask.sum(1).numpy(), [len(docs)]).numpy() for q in states]) - 1e-4).any()  # fmt: skip
    monkeypatch.setattr(pairs, "VERIFY_CELLS", 1)  # one verifier call per pass's maps
    chunked = reranker()
    np.testing.assert_allclose(chunked(frame)["score"].to_numpy(), scores, atol=1e-6)
    assert len(chunked.head.verifier.seen) > 1
    monkeypatch.setattr(rerank, "DEFERRED_MAPS", 1)  # a full DeferredVerdicts is applied at once
    flushed = reranker()
    np.testing.assert_allclose(flushed(frame)["score"].to_numpy(), scores, atol=1e-6)
    assert len(flushed.head.verifier.seen) > 1


@pytest.mark.integration
@pytest.mark.parametrize(
    ("codec", "dtype"),
    [("fp16", "float32"), ("fp16", "bfloat16"), ("bf16", "bfloat16"), ("int8", "float32"), ("int8", "int8")],
)
def test_the_querys_own_text_from_a_store_is_not_penalised(tmp_path, codec, dtype):
    """The self-map a candidate is measured against is made as the candidates' maps are (the store's codec, the
    product's precision): the query's own text lost up to 0.04 to its penalty, and from an int8 store ranked below
    its near-miss (reviews 50-a, 50-c)."""
    import pandas as pd

    import pyterrier_compverify as cv

    model = cv.BiEncoder(device="cpu", dtype="fp32")
    query = "A painting of a vase with a sunflower on a table."
    texts = [query, "A painting of a sunflower with a vase on a table.", "a dog chases a cat", query + " "]
    docs = pd.DataFrame({"docno": [f"c{i}" for i in range(len(texts))], "text": texts})
    store = model.index(docs, tmp_path / "index", verbose=False, codec=codec).store
    rows = pd.DataFrame({"qid": "q1", "query": query, "docno": docs["docno"]})
    verified = cv.MapVerifier(encoder=model, store=store, dtype=dtype)(rows).set_index("docno")["score"]
    plain = cv.MaxSim(model, store=store, dtype=dtype)(rows).set_index("docno")["score"]
    assert verified["c0"] == pytest.approx(plain["c0"], abs=1e-5)  # no penalty on the query's own text
    assert verified.idxmax() == "c0" and verified["c0"] > verified["c1"]
