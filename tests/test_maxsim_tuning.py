"""``experiments/maxsim_tuning.py``: the score it trains is the MaxSim that serving computes, and its groups put
the relevant text first with the negatives asked for."""

from __future__ import annotations

import maxsim_tuning
import numpy as np
import pandas as pd
import pytest
import torch

GROUPS = [
    {"query": "a red cat", "positives": ["a cat that is red"], "negatives": ["a blue cat", "a red dog", "a bird"]},
    {
        "query": "a dog on a mat",
        "positives": ["the dog lies on the mat", "a mat with a dog"],
        "negatives": ["a cat on a mat", "a dog in a car"],
        "random": ["a mat with a dog", "a cat on a mat", "the sea"],  # only "the sea" may be drawn
    },
    {"query": "trees", "positives": ["tall trees"], "negatives": ["a tree"]},  # too few negatives for 3 candidates
    {  # a positive's text among the negatives, and a repeated negative: one negative is left, too few
        "query": "a boat",
        "positives": ["a small boat"],
        "negatives": ["a small boat", "a car", "a car"],
    },
    {"query": "a bus", "positives": ["a red bus"], "negatives": ["a red bus", "a van", "a van", "a train"]},
]


def test_groups_put_the_relevant_text_first_and_never_a_positive_or_a_repeat_among_the_negatives():
    texts: dict[str, int] = {}
    groups = maxsim_tuning.Groups(GROUPS, texts, size=3, k=1)
    assert groups.dropped == 2 and len(groups.rows) == 3  # "trees", and "a boat" once its positive and repeat go
    by_id = {i: t for t, i in texts.items()}
    rng = np.random.default_rng(0)
    for _ in range(30):
        queries, cands = groups.sample(rng, 3)
        assert cands.shape == (3, 3)
        for q, row in zip(queries.tolist(), cands.tolist()):
            group = next(g for g in GROUPS if g["query"] == by_id[q])
            assert by_id[row[0]] in group["positives"]
            negatives = [by_id[i] for i in row[1:]]
            assert len(set(negatives)) == 2 and not set(negatives) & set(group["positives"])
            if "random" in group:  # one of the two negatives is a random one, never a positive or a hard one
                assert "the sea" in negatives
            else:
                assert set(negatives) <= set(group["negatives"])


def test_trained_score_is_the_served_maxsim(tmp_path, tiny_encoder):
    """Pairing, special tokens and query padding; the -inf fill of candidate padding before the max is
    ``fixed.maxsim``'s, which its doctest checks on all-negative rows."""
    import pyterrier_compverify as cv
    from pyterrier_compverify.training.state_cache import StateCache, TopLayers

    texts: dict[str, int] = {}
    groups = maxsim_tuning.Groups(GROUPS[:2], texts, size=3, k=0)
    cache = StateCache.build(tiny_encoder, list(texts), tmp_path, top_layers=1, verbose=False)
    queries, cands = groups.sample(np.random.default_rng(1), 2)
    with torch.no_grad():
        trained = maxsim_tuning.group_scores(TopLayers(tiny_encoder, 1).eval(), cache, queries, cands)
    by_id = {i: t for t, i in texts.items()}
    rows = pd.DataFrame(
        [
            {"qid": str(q), "query": by_id[q], "docno": str(c), "text": by_id[c]}
            for q, row in zip(queries.tolist(), cands.tolist())
            for c in row
        ]
    )
    served = cv.MaxSim(tiny_encoder)(rows)
    expected = served.set_index(["qid", "docno"]).loc[list(zip(rows["qid"], rows["docno"])), "score"].to_numpy()
    torch.testing.assert_close(trained.flatten(), torch.tensor(expected, dtype=torch.float32), atol=5e-3, rtol=0)


def test_run_state_resumes_the_model_the_optimiser_and_the_random_stream(tmp_path):
    from run_state import RunState

    path = tmp_path / "state.pt"
    run = RunState(path, "model", torch.nn.Linear(3, 1), lr=0.1, steps=10, seed=7)
    for _ in range(2):
        run.model(torch.ones(1, 3)).sum().backward()
        run.update()
    run.rng.random(5)
    run.save(2)
    expected_draws, expected_weight = run.rng.random(3), run.model.weight.detach().clone()
    again = RunState(path, "model", torch.nn.Linear(3, 1), lr=0.1, steps=10, seed=0, resume=True)
    assert again.start == 2
    assert np.array_equal(again.rng.random(3), expected_draws)
    assert torch.equal(again.model.weight, expected_weight)
    assert again.opt.state_dict()["state"][0]["step"] == 2 and again.sched.last_epoch == 2
    assert not path.with_suffix(".tmp").exists()
    with pytest.raises(SystemExit, match="holds a run: --resume goes on with it"):  # not restarted over it
        RunState(path, "model", torch.nn.Linear(3, 1), lr=0.1, steps=10, seed=0)

    old = {
        "model": torch.nn.Linear(3, 1).state_dict(),
        "opt": again.opt.state_dict(),
        "sched": again.sched.state_dict(),
    }
    torch.save({**old, "rng": np.random.default_rng(3).bit_generator.state, "step": 5}, path)  # cross_encoder's format
    resumed = RunState(path, "model", torch.nn.Linear(3, 1), lr=0.1, steps=10, seed=0, resume=True)
    assert resumed.start == 5 and np.array_equal(resumed.rng.random(3), np.random.default_rng(3).random(3))
