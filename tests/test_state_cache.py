"""Training over cached states: the cache holds what the encoder computes, and training on it matches."""

import pandas as pd
import pytest
import torch

from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier
from pyterrier_compverify.training.state_cache import StateCache, TopLayers

TEXTS = ["a tall man greeted a short woman", "a red cat", "", "the dog is not on the mat today at all"]
ROWS = pd.DataFrame(
    [
        {
            "anchor": "the tall man greeted the short woman",
            "positive": "a tall man greets a short woman",
            "negative": "the short man greeted the tall woman",
        },
        {"anchor": "a red cat", "positive": "a cat that is red", "negative": "a blue cat"},
        {
            "anchor": "the dog is on the mat",
            "positive": "on the mat is the dog",
            "negative": "the dog is not on the mat",
        },
        {"anchor": "a cell protein", "positive": "a protein of the cell", "negative": "a protein cell"},
    ]
    * 3
)


def test_cached_final_states_are_the_served_states(tmp_path, tiny_model_dir):
    from pyterrier_compverify import TokenEncoder

    tiny_encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu", dtype="fp32")  # an fp32 cache
    cache = StateCache.build(tiny_encoder, TEXTS, tmp_path, verbose=False)
    states, mask = cache.padded(torch.tensor([3, 0, 2]))
    expected = tiny_encoder.encode(TEXTS).token_states
    for row, i in enumerate([3, 0, 2]):
        n = expected[i].shape[0]
        assert int(mask[row].sum()) == n
        torch.testing.assert_close(states[row, :n], expected[i], atol=2e-3, rtol=0)  # fp16 cache
    again = StateCache.build(tiny_encoder, TEXTS, tmp_path, verbose=False)  # reopened, not recomputed
    assert isinstance(again.packed, type(cache.packed)) or again.packed.shape == cache.packed.shape
    assert len(list(tmp_path.iterdir())) == 1


def test_a_new_pool_copies_the_texts_another_cache_holds(tmp_path, tiny_encoder, monkeypatch):
    from pyterrier_compverify.training import state_cache

    first = StateCache.build(tiny_encoder, TEXTS, tmp_path, verbose=False)
    encoded = []
    real = state_cache._states
    monkeypatch.setattr(state_cache, "_states", lambda enc, texts, *a: encoded.extend(texts) or real(enc, texts, *a))
    pool = [TEXTS[1], "a new text about a cell", TEXTS[3]]
    second = StateCache.build(tiny_encoder, pool, tmp_path, verbose=False)
    assert encoded == ["a new text about a cell"]  # only the text no cache held was encoded
    for j, i in ((0, 1), (2, 3)):
        mine = second.packed[second.offsets[j] : second.offsets[j + 1]]
        theirs = first.packed[first.offsets[i] : first.offsets[i + 1]]
        assert (mine == theirs).all()
    fresh = StateCache.build(tiny_encoder, pool, tmp_path / "alone", verbose=False)
    assert (fresh.offsets == second.offsets).all()
    torch.testing.assert_close(
        torch.from_numpy(fresh.packed.astype("float32")),
        torch.from_numpy(second.packed.astype("float32")),
        atol=2e-3,
        rtol=0,
    )


def test_two_pools_whose_texts_join_alike_get_their_own_caches(tmp_path, tiny_encoder):
    """Keyed by the texts joined with newlines, ["a\nred cat", "x"] and ["a", "red cat\nx"] shared a cache."""
    first = StateCache.build(tiny_encoder, ["a\nred cat", "x"], tmp_path, verbose=False)
    second = StateCache.build(tiny_encoder, ["a", "red cat\nx"], tmp_path, verbose=False)
    assert len(list(tmp_path.iterdir())) == 2
    assert list(first.offsets) != list(second.offsets)  # other texts, other lengths


def test_top_layer_over_cached_hidden_states_equals_the_encoder(tmp_path, tiny_encoder):
    cache = StateCache.build(tiny_encoder, TEXTS, tmp_path, top_layers=1, verbose=False)
    hidden, mask = cache.padded(torch.arange(len(TEXTS)))
    with torch.no_grad():
        states = TopLayers(tiny_encoder, 1).eval()(hidden, mask)
    expected = tiny_encoder.encode(TEXTS).token_states
    for i, e in enumerate(expected):
        torch.testing.assert_close(states[i, : e.shape[0]], e, atol=5e-3, rtol=0)  # fp16 hidden states
        assert (states[i, e.shape[0] :] == 0).all()


@pytest.mark.parametrize("mode", ["frozen", "last-layer"])
def test_cached_training_learns_and_resumes(tmp_path, tiny_model_dir, mode):
    from pyterrier_compverify import TokenEncoder

    config = VerifierTrainingConfig(head="F4", mode=mode, steps=4, batch_size=4, save_steps=2, logging_steps=1)
    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    before, grads = encoder.fingerprint, [p.requires_grad for p in encoder.model.parameters()]
    verifier, log = train_verifier(ROWS, tmp_path / "v", encoder=encoder, config=config, verbose=False)
    assert len(log) == 4 and all(torch.isfinite(torch.tensor(e["loss"])) for e in log)
    assert verifier.meta["fine_tuned_encoder"] == (mode == "last-layer")
    assert (verifier.meta["encoder"]["fingerprint"] != before) == (mode == "last-layer")
    assert (verifier.path / "encoder-delta.safetensors").is_file() == (mode == "last-layer")  # 1 of 2 layers
    assert [p.requires_grad for p in encoder.model.parameters()] == grads  # the caller's encoder as it was
    assert encoder.fingerprint == before  # a last-layer run tuned a copy
    # the frozen cached path gives the loss of the re-encoding path at step 1 (same head init, same batch)
    if mode == "frozen":
        slow = VerifierTrainingConfig(**{**config.__dict__, "cache_states": False, "steps": 1})
        _, slow_log = train_verifier(ROWS, tmp_path / "slow", encoder=encoder, config=slow, verbose=False)
        assert slow_log[0]["loss"] == pytest.approx(log[0]["loss"], abs=2e-3)


def test_training_that_cannot_train_is_refused(tmp_path, tiny_encoder):
    with pytest.raises(ValueError, match="cannot fill one batch"):
        train_verifier(ROWS.iloc[:2], tmp_path / "x", encoder=tiny_encoder, config=VerifierTrainingConfig(batch_size=4))
    with pytest.raises(ValueError, match="steps must be at least 1, got 0"):
        VerifierTrainingConfig(steps=0)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"temperature": 0.0}, "temperature must be a finite number > 0"),  # trained a head of NaNs and saved it
        ({"temperature": float("nan")}, "temperature"),
        ({"max_grad_norm": -1.0}, r"max_grad_norm \(0: no clipping\) must be a finite number >= 0"),
        ({"save_steps": 0}, "save_steps must be at least 1"),
        ({"logging_steps": 2.5}, "logging_steps"),
        ({"mode": "last-layer", "top_layers": 0}, "top_layers must be at least 1"),
        ({"mode": "last-layer", "cache_states": False}, "leave cache_states on"),  # it trained the whole encoder
    ],
)
def test_settings_that_cannot_train_as_asked_are_refused_when_made(settings, message):
    with pytest.raises(ValueError, match=message):
        VerifierTrainingConfig(**settings)


def test_numpy_counts_and_no_clipping_are_valid_settings():
    import numpy as np

    counts = {"steps": np.int64(20), "batch_size": np.int32(4), "seed": np.int64(0), "save_steps": np.int64(50)}
    config = VerifierTrainingConfig(**counts, top_layers=np.int64(2), max_grad_norm=0)
    assert [type(getattr(config, name)) for name in [*counts, "top_layers"]] == [int] * 5  # recorded as JSON


def test_more_top_layers_than_the_encoder_has_is_refused_before_caching(tmp_path, tiny_encoder):
    layers = len(tiny_encoder.model[0].auto_model.encoder.layer)
    config = VerifierTrainingConfig(mode="last-layer", top_layers=layers + 1, steps=1, batch_size=2)
    with pytest.raises(ValueError, match=rf"top_layers must be between 1 and {layers} \(the encoder's layers\)"):
        train_verifier(ROWS, tmp_path / "x", encoder=tiny_encoder, config=config, verbose=False)
    assert not (tmp_path / "x" / "state-cache").exists()


@pytest.mark.parametrize("dropout", [0.1, None, 0.0])
def test_encoder_dropout_sets_the_noise_of_the_layers_that_learn(tmp_path, tiny_model_dir, dropout):
    from pyterrier_compverify import TokenEncoder
    from pyterrier_compverify.training.verifier import _state_source

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")  # its own copy: its dropout is changed
    config = VerifierTrainingConfig(mode="last-layer", encoder_dropout=dropout)
    source, text_ids = _state_source(encoder, ROWS, config, tmp_path, False)
    ids = torch.tensor(list(text_ids.values()))
    torch.manual_seed(0)
    with torch.no_grad():
        served = source.eval()(ids)[0]
        trained = [source.train()(ids)[0] for _ in range(2)]
    noisy = not torch.equal(trained[0], trained[1])
    assert noisy == (dropout == 0.1)  # the model's own dropout (0.1) perturbs training states; 0 does not
    assert config.encoder_dropout == (0.1 if dropout == 0.1 else 0.0)  # last-layer's default: 0, recorded
    if not noisy:
        torch.testing.assert_close(trained[0], served)
    with pytest.raises(ValueError, match="encoder_dropout"):
        VerifierTrainingConfig(mode="last-layer", encoder_dropout=1.0)
    with pytest.raises(ValueError, match="not with mode='frozen'"):
        VerifierTrainingConfig(mode="frozen", encoder_dropout=0.0)


def test_end_to_end_training_without_dropout_gives_the_encoder_its_dropout_back(tmp_path, tiny_model_dir):
    from torch import nn

    from pyterrier_compverify import TokenEncoder
    from pyterrier_compverify.training.verifier import _config_record, _state_source

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    own = sorted({m.p for m in encoder.model.modules() if isinstance(m, nn.Dropout)})
    assert own and own != [0.0]
    config = VerifierTrainingConfig(mode="end-to-end", encoder_dropout=0.0, steps=1, batch_size=4)
    source, _ = _state_source(encoder, ROWS, config, tmp_path, False)
    assert {m.p for m in source.modules() if isinstance(m, nn.Dropout)} == {0.0}  # the whole encoder learns
    trained = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    train_verifier(ROWS, tmp_path / "w", encoder=trained, config=config, verbose=False)
    assert sorted({m.p for m in trained.model.modules() if isinstance(m, nn.Dropout)}) == own  # given back
    assert "encoder_dropout" not in _config_record(VerifierTrainingConfig())  # older runs keep their fingerprint
    assert _config_record(VerifierTrainingConfig(mode="last-layer"))["encoder_dropout"] == 0.0  # not resumed as 0.1
    assert _config_record(config)["encoder_dropout"] == 0.0


def test_cache_bf16_encodes_the_cache_in_bf16_while_the_head_trains_in_fp32(tmp_path, tiny_encoder, monkeypatch):
    from pyterrier_compverify.training import state_cache, verifier

    autocast = []
    real = state_cache._states
    monkeypatch.setattr(state_cache, "_states", lambda enc, t, k, bf16: autocast.append(bf16) or real(enc, t, k, bf16))
    config = VerifierTrainingConfig(steps=2, batch_size=4, save_steps=10, cache_bf16=True, cache_dir=str(tmp_path))
    train_verifier(ROWS, tmp_path / "v", encoder=tiny_encoder, config=config, verbose=False)
    assert autocast and all(autocast) and not config.bf16  # the cache under bf16 autocast, the head's steps fp32
    assert [p.name.split("-")[-2] for p in tmp_path.glob("*-top0-*")] == ["bf16"]
    record = verifier._config_record(VerifierTrainingConfig())
    assert "cache_bf16" not in record  # left at None it is not recorded: runs from before it keep their fingerprint


def test_a_cache_another_process_finished_meanwhile_is_taken_not_a_crash(tmp_path, tiny_encoder, monkeypatch):
    """Two processes building one cache: the second crashed with 'Directory not empty' after all its encoding."""
    from pathlib import Path

    from pyterrier_compverify.training import state_cache

    texts = ["a dog", "a cat chases a dog"]
    first = state_cache.StateCache.build(tiny_encoder, texts, tmp_path)  # the other process's finished cache
    (built,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    real_exists, looks = Path.exists, []

    def not_yet(self):  # at the start this process sees no cache; by the rename the other one has finished
        if self == built / "meta.json" and not looks:
            looks.append(self)
            return False
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", not_yet)
    again = state_cache.StateCache.build(tiny_encoder, texts, tmp_path)
    assert looks and [p.name for p in tmp_path.iterdir()] == [built.name]  # no crash, no temporary folder left
    assert again is not None and first is not None


def test_the_cache_encodes_as_many_texts_at_once_as_the_encoder_does(tmp_path, tiny_model_dir, monkeypatch):
    """It encoded 64 texts at a time whatever the encoder's batch size (a memory limit the user had set)."""
    from pyterrier_compverify import TokenEncoder
    from pyterrier_compverify.training import state_cache

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu", batch_size=3)
    sizes, real = [], state_cache._states
    monkeypatch.setattr(state_cache, "_states", lambda enc, texts, *a: sizes.append(len(texts)) or real(enc, texts, *a))
    texts = [f"text number {i}" for i in range(7)]
    StateCache.build(encoder, texts, tmp_path / "a", verbose=False)
    assert sizes == [3, 3, 1]
    sizes.clear()
    StateCache.build(encoder, texts, tmp_path / "b", batch_size=5, verbose=False)
    assert sizes == [5, 2]
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        StateCache.build(encoder, texts, tmp_path / "c", batch_size=0, verbose=False)
