"""The fast serving paths score like the plain ones: F4's factorised patch embedding (exact, fp32), the [CLS] terms
computed once, several queries per pass, and the bf16 option (within a stated tolerance, same ranking)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.scoring import ConditionalPenalty, build_head, score_packed
from pyterrier_compverify.scoring.heads.patch_embedding import factorised_patch_embedding, plain_patch_embedding
from pyterrier_compverify.verifier import HEAD_FILE, Verifier, default_verifier_path

BF16_TOLERANCE = 0.02  # largest score change allowed for dtype="bfloat16" (seen: about 3e-3 on these maps)


def ragged_maps(seed: int = 0, batch: int = 7, m: int = 19, n: int = 45):
    """Maps with ragged query and candidate masks, one candidate mask with a hole (not a prefix), junk in
    padded cells (heads must mask them)."""
    g = torch.Generator().manual_seed(seed)
    sim = torch.rand(batch, m, n, generator=g) * 2 - 1
    query_mask = torch.ones(batch, m, dtype=torch.bool)
    query_mask[2, 15:] = False
    query_mask[3, 3:] = False
    lengths = torch.tensor([45, 40, 33, 8, 1, 17, 45])[:batch]
    cand_mask = torch.arange(n)[None] < lengths[:, None]
    cand_mask[-1, 10] = False
    return sim, query_mask, cand_mask


def perturbed(head: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    for p in head.parameters():
        p.data.add_(torch.randn(p.shape, generator=g) * 0.05)
    return head.eval()


def test_factorised_patch_embedding_equals_the_tiles():
    sim, qm, cm = ragged_maps()
    weight = torch.randn(32, 192)
    fast, keep = factorised_patch_embedding(sim, qm, cm, weight, 8)
    plain, plain_keep = plain_patch_embedding(sim, qm, cm, weight, 8)
    assert fast.shape == plain.shape == (7, 3, 6, 32)
    assert torch.equal(keep, plain_keep)
    torch.testing.assert_close(fast, plain, atol=1e-5, rtol=1e-5)


def test_factorised_patch_embedding_has_the_same_gradients():
    sim, qm, cm = ragged_maps(seed=1)
    grads = []
    for embedding in (factorised_patch_embedding, plain_patch_embedding):
        s, w = sim.clone().requires_grad_(), torch.randn(16, 192, generator=torch.Generator().manual_seed(2))
        w.requires_grad_()
        x, _ = embedding(s, qm, cm, w, 8)
        (x * torch.linspace(-1, 1, x.numel()).reshape(x.shape)).sum().backward()
        grads.append((s.grad, w.grad))
    for fast, plain in zip(*grads):
        torch.testing.assert_close(fast, plain, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("layers, features", [(1, False), (2, False), (1, True)])
def test_f4_fast_inference_equals_the_plain_full_layers(layers, features):
    sim, qm, cm = ragged_maps()
    head = perturbed(build_head("F4", dim=64, layers=layers, features=features))
    with torch.inference_mode():
        fast = head(sim, qm, cm)
        head.factorised, head.cls_only = False, False  # tiles formed, every position of every layer computed
        plain = head(sim, qm, cm)
    torch.testing.assert_close(fast, plain, atol=1e-5, rtol=0)


@pytest.mark.parametrize("layers", [1, 2])
def test_f4_training_gradients_equal_the_full_layers(layers):
    """Training computes only [CLS] in the last layer too: the loss and every parameter's gradient (the map's
    as well) equal those of the full layers."""
    sim, qm, cm = ragged_maps(seed=3)
    head = perturbed(build_head("F4", dim=64, layers=layers)).train()
    results = []
    for cls_only in (True, False):
        head.cls_only = cls_only
        head.zero_grad(set_to_none=True)
        s = sim.clone().requires_grad_()
        loss = (head(s, qm, cm) * torch.linspace(-1, 1, sim.shape[0])).sum()
        loss.backward()
        results.append((loss.detach(), s.grad, {n: p.grad for n, p in head.named_parameters()}))
    (loss, sim_grad, grads), (plain_loss, plain_sim_grad, plain_grads) = results
    torch.testing.assert_close(loss, plain_loss, atol=1e-5, rtol=0)
    torch.testing.assert_close(sim_grad, plain_sim_grad, atol=1e-5, rtol=1e-4)
    for name, grad in plain_grads.items():
        if grad is None or not grad.abs().sum():  # the last layer's tile-only weights get no gradient either way
            assert grads[name] is None or not grads[name].abs().sum(), name
            continue
        torch.testing.assert_close(grads[name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_the_packaged_map_verifier_loads_unchanged():
    from safetensors.torch import load_file

    folder = default_verifier_path("F4")
    stored = load_file(f"{folder}/{HEAD_FILE}")
    head = Verifier(folder).load_head()
    state = head.state_dict()
    assert set(state) == set(stored)
    for name, value in stored.items():
        assert torch.equal(state[name], value), name
    sim, qm, cm = ragged_maps()
    with torch.inference_mode():
        fast = head(sim, qm, cm)
        head.factorised, head.cls_only = False, False
        torch.testing.assert_close(fast, head(sim, qm, cm), atol=1e-5, rtol=0)


def graded_candidates(seed: int = 0, count: int = 12, d: int = 48):
    """A query (m, d) and fp16 packed candidates whose tokens are the query's tokens plus noise of growing
    strength: their MaxSim falls with the candidate number, clearly above bf16's error."""
    g = torch.Generator().manual_seed(seed)
    query = torch.nn.functional.normalize(torch.randn(9, d, generator=g), dim=-1)
    cands = []
    for k in range(count):
        tokens = torch.cat([query, torch.randn(5 + k, d, generator=g)])[torch.randperm(14 + k, generator=g)]
        noisy = tokens + (0.02 + 0.02 * k) * torch.randn(tokens.shape, generator=g)
        cands.append(torch.nn.functional.normalize(noisy, dim=-1))
    lengths = torch.tensor([c.shape[0] for c in cands])
    mask = torch.arange(int(lengths.max()))[None] < lengths[:, None]
    return query, torch.cat(cands).half(), mask


@pytest.mark.parametrize("head_name", ["F1", "F3", "F4", "MapVerifier"])
def test_bf16_scores_within_tolerance_and_same_ranking(head_name):
    query, packed, mask = graded_candidates()
    if head_name == "MapVerifier":
        verifier = Verifier(default_verifier_path("F4"))
        head = ConditionalPenalty(verifier.load_head(), **verifier.default_penalty)
    else:
        head = perturbed(build_head(head_name, dim=64)) if head_name != "F1" else build_head("F1")
    with torch.inference_mode():
        exact = score_packed(head, query, packed, mask)
        fast = score_packed(head, query, packed, mask, dtype=torch.bfloat16)
    assert fast.dtype == torch.float32
    assert (fast - exact).abs().max().item() <= BF16_TOLERANCE
    if head_name in ("F1", "MapVerifier"):  # MaxSim-based scores spread over 0.2-0.5: same ranking
        assert exact.max() - exact.min() > 0.2
        assert torch.equal(fast.argsort(descending=True), exact.argsort(descending=True))


@pytest.mark.parametrize("head_name", ["F1", "F4", "Pooled"])
def test_several_queries_per_pass_equal_one_at_a_time(head_name):
    head = build_head(head_name, dim=48)
    head = perturbed(head) if list(head.parameters()) else head
    queries, packs, masks = [], [], []
    for seed, count in ((0, 5), (1, 3), (2, 4)):
        query, packed, mask = graded_candidates(seed, count)
        queries.append(query[: 9 - seed])  # queries of different lengths: padded together
        packs.append(packed)
        masks.append(mask)
    width = max(m.shape[1] for m in masks)
    mask = torch.cat([torch.nn.functional.pad(m, (0, width - m.shape[1])) for m in masks])
    padded = torch.nn.utils.rnn.pad_sequence(queries, batch_first=True)
    query_mask = torch.arange(padded.shape[1])[None] < torch.tensor([len(q) for q in queries])[:, None]
    with torch.inference_mode():
        together = score_packed(
            head, padded, torch.cat(packs), mask, query_mask=query_mask, sizes=[len(m) for m in masks]
        )
        alone = torch.cat([score_packed(head, q, p, m) for q, p, m in zip(queries, packs, masks)])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)


def test_reranker_dtype_option(tiny_encoder, tmp_path):
    docs = [{"docno": f"d{i}", "text": t} for i, t in enumerate(["a dog chases a cat", "the cat sat", "a red car"])]
    store = cv.TokenStore(tmp_path / "s.tokens")
    store.indexer(tiny_encoder, verbose=False).index(docs)
    frame = pd.DataFrame(
        {"qid": ["q1"] * 3 + ["q2"] * 3, "query": ["a dog"] * 3 + ["red car"] * 3, "docno": ["d0", "d1", "d2"] * 2}
    )
    exact = cv.MaxSim(tiny_encoder, store=store, score_batch_size=2)(frame)  # passes cut queries in two
    fast = cv.MaxSim(tiny_encoder, store=store, dtype="bf16")(frame)
    assert (exact["score"] - fast["score"]).abs().max() < 1e-2
    assert cv.MaxSim(tiny_encoder, dtype="bf16") != cv.MaxSim(tiny_encoder)
    with pytest.raises(ValueError, match="float32.*bfloat16"):
        cv.MaxSim(tiny_encoder, dtype="fp16")
