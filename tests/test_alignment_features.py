"""The alignment-features head (AF): each feature by hand, padding-free, length-free, and usable as a verifier."""

import pytest
import torch

from pyterrier_compverify.scoring import build_head, similarity_map
from pyterrier_compverify.scoring.heads.alignment_features import FEATURES, alignment_features


def _features(sim, query_mask=None, cand_mask=None):
    b, m, n = sim.shape
    query_mask = torch.ones(b, m, dtype=torch.bool) if query_mask is None else query_mask
    cand_mask = torch.ones(b, n, dtype=torch.bool) if cand_mask is None else cand_mask
    return dict(zip(FEATURES, alignment_features(sim, query_mask, cand_mask)[0].tolist()))


def test_each_feature_by_hand():
    sim = torch.tensor([[[0.95, 0.1, 0.2], [0.3, 0.4, 0.45]]])  # 2 query tokens, 3 candidate tokens
    f = _features(sim)
    assert f["maxsim"] == pytest.approx((0.95 + 0.45) / 2)
    assert f["reverse_maxsim"] == pytest.approx((0.95 + 0.4 + 0.45) / 3)
    assert f["min_row_max"] == pytest.approx(0.45) and f["min_col_max"] == pytest.approx(0.4)
    assert f["rows_above_0.9"] == pytest.approx(0.5) and f["rows_below_0.5"] == pytest.approx(0.5)
    assert f["cols_above_0.9"] == pytest.approx(1 / 3) and f["cols_below_0.5"] == pytest.approx(2 / 3)
    assert f["mean_cosine"] == pytest.approx(sum([0.95, 0.1, 0.2, 0.3, 0.4, 0.45]) / 6)
    assert f["crossing_rate"] == 0.0  # row 0 -> column 0, row 1 -> column 2: in order
    assert f["log_length_ratio"] == pytest.approx(torch.log(torch.tensor(1.5)).item())


def test_crossing_rate_counts_pairs_in_the_other_order():
    order = [2, 0, 1]  # query token i matches candidate token order[i]: pairs (0,1), (0,2) cross, (1,2) not
    sim = torch.eye(3)[order][None]
    assert _features(sim)["crossing_rate"] == pytest.approx(2 / 3)


def test_padding_changes_nothing_and_negative_cells_are_not_beaten_by_padding():
    sim = torch.tensor([[[-0.4, -0.7], [0.2, -0.1]]])
    padded = torch.zeros(1, 4, 5)
    padded[:, :2, :2] = sim
    padded[:, 2:, :] = torch.nan  # undefined outside the masks: must not leak in
    padded[:, :, 2:] = torch.nan
    qm = torch.tensor([[True, True, False, False]])
    cm = torch.tensor([[True, True, False, False, False]])
    plain = _features(sim)
    assert _features(torch.nan_to_num(padded, nan=5.0), qm, cm) == pytest.approx(plain)  # not a max
    assert _features(padded, qm, cm) == pytest.approx(plain)  # not a sum either
    assert plain["min_row_max"] == pytest.approx(-0.4)


def test_features_do_not_grow_with_length():
    """A text repeated k times against itself repeated k times: every share and mean stays the same."""
    torch.manual_seed(0)
    q = torch.nn.functional.normalize(torch.randn(5, 16), dim=-1)
    c = torch.nn.functional.normalize(q + 0.3 * torch.randn(5, 16), dim=-1)
    short = _features(similarity_map(q, c[None]))
    long = _features(similarity_map(q.repeat(4, 1), c.repeat(4, 1)[None]))
    for name in ("maxsim", "reverse_maxsim", "min_row_max", "min_col_max", "rows_above_0.9", "mean_cosine"):
        assert long[name] == pytest.approx(short[name], abs=1e-6), name
    assert long["log_length_ratio"] == pytest.approx(short["log_length_ratio"], abs=1e-6)


def test_the_head_scores_in_range_and_learns():
    torch.manual_seed(0)
    head = build_head("AF")
    same = torch.eye(6)[None].repeat(8, 1, 1)
    swapped = torch.eye(6)[[1, 0, 2, 3, 5, 4]][None].repeat(8, 1, 1)
    mask = torch.ones(8, 6, dtype=torch.bool)
    opt = torch.optim.Adam(head.parameters(), lr=1e-2)
    for _ in range(50):
        loss = (head(swapped, mask, mask) - head(same, mask, mask)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    good, bad = head(same, mask, mask), head(swapped, mask, mask)
    assert ((good.abs() <= 1) & (bad.abs() <= 1)).all()
    assert (good > bad).all()  # only the crossing rate tells them apart


def test_f4_with_features_reads_them_on_both_paths():
    """F4(features=True): the features' share moves the score, the same with and without gradients."""
    torch.manual_seed(1)
    head = build_head("F4", dim=32, features=True)
    sim = torch.rand(3, 9, 11) * 2 - 1
    qm, cm = torch.ones(3, 9, dtype=torch.bool), torch.ones(3, 11, dtype=torch.bool)
    with torch.no_grad():
        served = head(sim, qm, cm)  # [CLS]-only last layer
    trained = head(sim, qm, cm)  # full layer, under gradients
    torch.testing.assert_close(served, trained.detach(), atol=1e-5, rtol=0)
    with torch.no_grad():
        head.features.weight.mul_(5.0)
        assert not torch.allclose(head(sim, qm, cm), served, atol=1e-4)


def test_feature_dropout_leaves_the_features_out_in_training_only():
    torch.manual_seed(2)
    head = build_head("F4", dim=32, features=True, feature_dropout=1.0)
    sim = torch.rand(4, 9, 11) * 2 - 1
    qm, cm = torch.ones(4, 9, dtype=torch.bool), torch.ones(4, 11, dtype=torch.bool)
    with torch.no_grad():
        head.features.weight.mul_(5.0)
        head.train()
        dropped = head(sim, qm, cm)
        features, head.features = head.features, None
        without = head(sim, qm, cm)
        head.features = features
        head.eval()
        served = head(sim, qm, cm)
    torch.testing.assert_close(dropped, without)  # every map's features dropped
    assert not torch.allclose(served, dropped, atol=1e-4)  # serving always reads them


def test_a_pair_without_real_tokens_gets_zero_features():
    sim = torch.rand(2, 3, 4)
    qm = torch.ones(2, 3, dtype=torch.bool)
    cm = torch.tensor([[True, True, False, False], [False, False, False, False]])
    f = alignment_features(sim, qm, cm)
    assert torch.isfinite(f).all() and (f[1] == 0).all() and (f[0] != 0).any()
