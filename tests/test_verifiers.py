import pandas as pd
import pytest
import torch

from pyterrier_compverify import MaxSim
from pyterrier_compverify.rerank import BagOfSimilarities, PooledCosine, SoftAlign
from pyterrier_compverify.scoring import (
    MapCNNHead,
    MapTransformerHead,
    bag_of_similarities,
    maxsim,
    pad_token_states,
    pooled_cosine,
    similarity_map,
    soft_align,
)


def padded_variants():
    """The same 2 maps, once tight and once inside extra padding; padded cells hold junk values."""
    torch.manual_seed(1)
    sim = torch.rand(2, 5, 11) * 2 - 1
    qmask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    cmask = torch.tensor([[True] * 11, [True] * 7 + [False] * 4])
    big = torch.full((2, 21, 30), 0.7)
    big[:, :5, :11] = sim
    big_q = torch.zeros(2, 21, dtype=torch.bool)
    big_q[:, :5] = qmask
    big_c = torch.zeros(2, 30, dtype=torch.bool)
    big_c[:, :11] = cmask
    return (sim, qmask, cmask), (big, big_q, big_c)


@pytest.mark.parametrize("head", [maxsim, bag_of_similarities, soft_align])
def test_fixed_heads_do_not_depend_on_padding(head):
    tight, padded = padded_variants()
    torch.testing.assert_close(head(*tight), head(*padded))


@pytest.mark.parametrize("head_cls", [MapTransformerHead, MapCNNHead])
def test_learned_heads_do_not_depend_on_padding(head_cls):
    torch.manual_seed(0)
    head = head_cls(dim=16) if head_cls is MapTransformerHead else head_cls(channels=(8, 16), hidden=8)
    head.eval()
    tight, padded = padded_variants()
    with torch.no_grad():
        a, b = head(*tight), head(*padded)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    assert a.shape == (2,) and (a.abs() <= 1).all()


def test_all_negative_similarities_with_padding():
    sim = torch.tensor([[[-0.6, -0.2, 0.0], [-0.9, -0.4, 0.0]]])
    q, c = torch.tensor([True, True]), torch.tensor([[True, True, False]])
    assert maxsim(sim, q, c).item() == pytest.approx((-0.2 - 0.4) / 2)
    assert bag_of_similarities(sim, q, c).item() == pytest.approx((-0.6 - 0.2 - 0.9 - 0.4) / 4)
    # soft alignment: row softmax of (M - 0.1|i-j|)/0.1 over the two valid cells, by hand
    import math

    def row(values, dists):
        w = [math.exp((v - 0.1 * d) / 0.1) for v, d in zip(values, dists)]
        return sum(wi * v for wi, v in zip(w, values)) / sum(w)

    expected = (row([-0.6, -0.2], [0, 1]) + row([-0.9, -0.4], [1, 0])) / 2
    assert soft_align(sim, q, c).item() == pytest.approx(expected, abs=1e-6)


def test_pooled_cosine_hand_computed():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    c = torch.tensor([[[1.0, 0.0], [5.0, 5.0]]])
    score = pooled_cosine(q, torch.tensor([True, True]), c, torch.tensor([[True, False]]))
    assert score.item() == pytest.approx(1 / 2**0.5)


def test_f4_grid_follows_real_lengths():
    head = MapTransformerHead(dim=8)
    from pyterrier_compverify.scoring import map_features, patch_grid

    sim = torch.rand(1, 9, 17)
    feats, valid = map_features(sim, torch.ones(1, 9, dtype=torch.bool), torch.ones(1, 17, dtype=torch.bool))
    _, _, grid = patch_grid(feats, valid, head.patch)
    assert grid == (2, 3)  # not 16 x 16


@pytest.mark.parametrize("config", [{}, {"heads": 4}, {"layers": 2, "heads": 4, "ff": 16}])
def test_f4_inference_path_matches_the_full_layer(config):
    """F4 computes only [CLS] in its last layer (with or without gradients); the scores must equal the full
    Transformer's (``cls_only = False``)."""
    torch.manual_seed(3)
    head = MapTransformerHead(dim=16, **config).eval()
    for p in head.parameters():  # move off the initial values so every term counts
        p.data.add_(torch.randn_like(p) * 0.1)
    (sim, qmask, cmask), _ = padded_variants()
    cmask[1, :] = False  # a candidate without any valid tile: [CLS] attends to itself only
    with torch.enable_grad():
        head.cls_only = False
        full = head(sim, qmask, cmask)
        head.cls_only = True
        assert torch.allclose(head(sim, qmask, cmask), full, atol=1e-5)  # [CLS] only, with gradients
    with torch.inference_mode():
        fast = head(sim, qmask, cmask)
        head.cls_only = False
        assert torch.allclose(head(sim, qmask, cmask), full, atol=1e-6)
    assert torch.allclose(fast, full, atol=1e-5)
    assert not torch.allclose(full, torch.zeros_like(full))
    head.cls_only = True
    with torch.no_grad():  # an optimiser-style in-place update must not leave stale cached patch-space terms
        head.embed.weight.add_(0.1)
        head.row_pos.weight.mul_(1.5)
    with torch.enable_grad():
        updated = head(sim, qmask, cmask)
    with torch.inference_mode():
        assert torch.allclose(head(sim, qmask, cmask), updated, atol=1e-5)
    assert not torch.allclose(updated, full, atol=1e-3)


REFERENCE = {
    BagOfSimilarities: lambda q, qm, c, cm: bag_of_similarities(similarity_map(q, c), qm, cm),
    SoftAlign: lambda q, qm, c, cm: soft_align(similarity_map(q, c), qm, cm),
    PooledCosine: pooled_cosine,
    MaxSim: lambda q, qm, c, cm: maxsim(similarity_map(q, c), qm, cm),
}


@pytest.mark.parametrize("cls", [BagOfSimilarities, SoftAlign, PooledCosine, MaxSim])
def test_every_reranker_shares_the_contract(tiny_encoder, cls):
    frame = pd.DataFrame(
        {
            "qid": ["1", "1"],
            "query": ["a red cat"] * 2,
            "docno": ["a", "b"],
            "text": ["a red cat", "a dog"],
            "x": [1, 2],
        }
    )
    out = cls(tiny_encoder)(frame)
    assert {"score", "rank", "x"} <= set(out.columns) and len(out) == 2
    assert len(cls(tiny_encoder)(frame.iloc[:0])) == 0
    # scores agree with the head's function applied by hand to the padded states
    states = tiny_encoder.encode(["a red cat", "a red cat", "a dog"]).token_states
    cand, cmask = pad_token_states(states[1:])
    q, qmask = states[0], torch.ones(states[0].shape[0], dtype=torch.bool)
    direct = REFERENCE[cls](q, qmask, cand, cmask)
    torch.testing.assert_close(torch.tensor(out.sort_values("docno")["score"].to_numpy(), dtype=torch.float32), direct)


def test_maxsim_and_pooled_cosine_equal_their_definitions_computed_by_hand(tiny_encoder):
    """Independent of the scoring code: numpy over the encoder's token states (each row unit length)."""
    import numpy as np

    query, texts = "a red cat", ["a red cat on a mat", "a dog", "red"]
    frame = pd.DataFrame({"qid": "1", "query": query, "docno": ["a", "b", "c"], "text": texts})
    states = [s.double().numpy() for s in tiny_encoder.encode([query, *texts]).token_states]
    q = states[0]
    by_hand = {
        MaxSim: [np.mean(np.max(q @ c.T, axis=1)) for c in states[1:]],  # each query token's best match, averaged
        PooledCosine: [
            (q.mean(0) @ c.mean(0)) / np.linalg.norm(q.mean(0)) / np.linalg.norm(c.mean(0)) for c in states[1:]
        ],
    }
    for cls, expected in by_hand.items():
        got = cls(tiny_encoder)(frame).set_index("docno").loc[["a", "b", "c"], "score"].to_numpy()
        np.testing.assert_allclose(got, expected, atol=2e-6)
