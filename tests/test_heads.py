import pytest
import torch

from pyterrier_compverify import maxsim
from pyterrier_compverify.scoring import pad_token_states, similarity_map


def test_maxsim_hand_computed():
    # query tokens q1, q2; candidate tokens c1, c2 (+1 padded cell)
    sim = torch.tensor([[[0.2, 0.9, 0.0], [0.5, -0.3, 0.0]]])
    score = maxsim(sim, torch.tensor([True, True]), torch.tensor([[True, True, False]]))
    assert score.item() == pytest.approx((0.9 + 0.5) / 2)


def test_maxsim_all_negative_with_padding_keeps_negative_max():
    # a zero in a padded cell must never win the max
    sim = torch.tensor([[[-0.4, -0.7, 0.0, 0.0]]])
    score = maxsim(sim, torch.tensor([True]), torch.tensor([[True, True, False, False]]))
    assert score.item() == pytest.approx(-0.4)


def test_maxsim_ignores_padded_query_tokens():
    sim = torch.tensor([[[0.8, 0.1], [0.9, 0.9]]])
    score = maxsim(sim, torch.tensor([[True, False]]), torch.tensor([[True, True]]))
    assert score.item() == pytest.approx(0.8)


def test_maxsim_batch_of_candidates_with_different_lengths():
    q = torch.nn.functional.normalize(torch.randn(3, 8), dim=-1)
    cands = [torch.nn.functional.normalize(torch.randn(n, 8), dim=-1) for n in (2, 5, 1)]
    c, mask = pad_token_states(cands)
    batched = maxsim(similarity_map(q, c), torch.ones(3, dtype=torch.bool), mask)
    one_by_one = [(q @ cand.T).max(dim=1).values.mean().item() for cand in cands]
    assert batched.tolist() == pytest.approx(one_by_one, abs=1e-6)


def test_pad_token_states_from_fp16_numpy():
    import numpy as np

    x, mask = pad_token_states([np.ones((2, 3), dtype=np.float16), np.full((1, 3), 0.5, dtype=np.float16)])
    assert x.dtype == torch.float32 and x.shape == (2, 2, 3)
    assert mask.tolist() == [[True, True], [True, False]]
    assert x[1, 1].abs().sum() == 0 and x[1, 0, 0] == 0.5


def test_pad_token_states_rejects_empty():
    with pytest.raises(ValueError, match="at least one"):
        pad_token_states([])


def test_each_registered_head_names_a_reranker_that_exists():
    """``Verifier.reranker()`` builds the class a head's registry entry names: learned heads' from
    ``verifier.LEARNED_RERANKERS``, weight-free heads' from ``rerank``."""
    from pyterrier_compverify import rerank
    from pyterrier_compverify.scoring.registry import HEADS
    from pyterrier_compverify.verifier import LEARNED_RERANKERS

    assert {"F4", "F3", "F1w", "AF", "F1", "Pooled"} <= set(HEADS)
    for spec in HEADS.values():
        if spec.learned:
            assert spec.reranker in LEARNED_RERANKERS, spec.name
        else:
            assert isinstance(getattr(rerank, spec.reranker), type), spec.name
    assert LEARNED_RERANKERS[HEADS["F4"].reranker].HEAD == "F4"


def test_a_saved_weight_free_head_serves_with_its_saved_options(tiny_encoder, tmp_path):
    """An F2 verifier (trained end-to-end) saved with lam 0.3 and tau 0.05 was served with the defaults 0.1 / 0.1."""
    import pyterrier_compverify as cv
    from pyterrier_compverify.scoring import build_head

    config = {"dim": tiny_encoder.dim, "lam": 0.3, "tau": 0.05}
    saved = cv.Verifier.save(tmp_path / "f2", tiny_encoder, build_head("F2", **config), "F2", head_config=config)
    reranker = saved.reranker(encoder=tiny_encoder)
    assert isinstance(reranker, cv.SoftAlign) and (reranker.lam, reranker.tau) == (0.3, 0.05)
    assert reranker == cv.SoftAlign(tiny_encoder, lam=0.3, tau=0.05)
    assert saved.reranker(encoder=tiny_encoder, lam=0.2).lam == 0.2  # an option given to reranker() wins
    # pt.Experiment names systems by repr: two settings, two names
    assert repr(reranker).endswith(", lam=0.3, tau=0.05)") and "lam" not in repr(cv.SoftAlign(tiny_encoder))


def test_a_map_head_shorter_than_the_encoders_texts_is_refused_before_scoring(tiny_encoder, tmp_path):
    import pandas as pd

    from pyterrier_compverify.rerank import TokenReranker
    from pyterrier_compverify.scoring import ConditionalPenalty, build_head
    from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier

    short = build_head("F4", dim=tiny_encoder.dim, max_grid=1)  # one tile of 8 tokens a side
    assert tiny_encoder.max_length > short.max_tokens == 8
    for head in (short, ConditionalPenalty(short, beta=0.5, tau=0.9)):  # it failed on the first long text
        with pytest.raises(ValueError, match=r"reads texts of up to 8 tokens .*use max_length <= 8, or train a head"):
            TokenReranker(tiny_encoder, head=head)
    TokenReranker(tiny_encoder, head=build_head("F4", dim=tiny_encoder.dim))  # 512 tokens: fine
    rows = pd.DataFrame({"anchor": ["a b"] * 4, "positive": ["a b c"] * 4, "negative": ["c"] * 4})
    config = VerifierTrainingConfig(head_config={"max_grid": 1}, steps=1, batch_size=2)
    with pytest.raises(ValueError, match="reads texts of up to 8 tokens"):
        train_verifier(rows, tmp_path / "v", encoder=tiny_encoder, config=config, verbose=False)


@pytest.mark.parametrize(
    ("option", "message"),
    [({"tau": 0.0}, "tau .* > 0"), ({"tau": -0.1}, "tau"), ({"lam": float("nan")}, "lam must be a finite number >= 0")],
)
def test_soft_align_refuses_a_temperature_it_cannot_use(tiny_encoder, option, message):
    import pyterrier_compverify as cv

    with pytest.raises(ValueError, match=message):  # 0 gave NaN scores blamed on weights; < 0 the worst alignment
        cv.SoftAlign(tiny_encoder, **option)
