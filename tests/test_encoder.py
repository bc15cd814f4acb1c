import math

import numpy as np
import pytest
import torch

import pyterrier_compverify as cv


def test_token_states_are_unit_norm_and_unpadded(tiny_encoder):
    out = tiny_encoder.encode(["a dog chases a cat", "hello"])
    assert [s.shape for s in out.token_states] == [(7, 32), (3, 32)]  # [CLS] ... [SEP] kept
    for s in out.token_states:
        assert torch.allclose(s.norm(dim=-1), torch.ones(s.shape[0]), atol=1e-5)
    assert out.pooled.shape == (2, 32)


def test_results_in_input_order_whatever_the_length_sorting(tiny_encoder):
    texts = ["a", "the big red dog chases the small blue cat", "hello world", ""]
    together = tiny_encoder.encode(texts, batch_size=2)
    for i, text in enumerate(texts):
        alone = tiny_encoder.encode([text])
        assert torch.allclose(together.pooled[i], alone.pooled[0], atol=1e-5)
        assert torch.allclose(together.token_states[i], alone.token_states[0], atol=1e-5)


def test_pooled_matches_sentence_transformers_encode(tiny_encoder):
    texts = ["a dog chases a cat", "the man greeted the tall woman", "中文本"]
    ours = tiny_encoder.encode(texts).pooled
    theirs = tiny_encoder.model.encode(texts, convert_to_tensor=True)
    assert torch.nn.functional.cosine_similarity(ours, theirs).min().item() >= 0.9999


def test_long_text_truncated_to_max_length(tiny_encoder):
    out = tiny_encoder.encode(["dog " * 500])
    assert out.token_states[0].shape[0] == tiny_encoder.max_length == 16


def test_empty_and_chinese_text(tiny_encoder):
    out = tiny_encoder.encode(["", "图片显示猫"])
    assert out.token_states[0].shape[0] == 2  # only the special tokens
    assert out.token_states[1].shape[0] == 7
    assert torch.isfinite(out.pooled).all()


@pytest.mark.parametrize("bad", [None, math.nan, np.nan, 3])
def test_missing_text_is_a_clear_error(tiny_encoder, bad):
    with pytest.raises(ValueError, match="position 1"):
        tiny_encoder.encode(["fine", bad])


def test_empty_input(tiny_encoder):
    out = tiny_encoder.encode([])
    assert out.token_states == [] and out.pooled.shape == (0, 32)


def test_fingerprint_tracks_weights(tiny_model_dir):
    from pyterrier_compverify import TokenEncoder

    a = TokenEncoder(tiny_model_dir, device="cpu")
    b = TokenEncoder(tiny_model_dir, device="cpu")
    assert a.fingerprint == b.fingerprint
    with torch.no_grad():
        next(b.model.parameters()).add_(1e-3)
    b.weights_changed()
    assert a.fingerprint != b.fingerprint


def test_fingerprint_reads_scalar_tensors_as_their_bytes():
    from pyterrier_compverify.encoder import weights_fingerprint

    matrix = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert weights_fingerprint({"w": matrix}) != weights_fingerprint({"w": matrix + 1})
    scalar = {"scale": torch.tensor(2.5), "count": torch.tensor(3)}  # 0-dim: a logit scale, a step counter
    assert weights_fingerprint(scalar) != weights_fingerprint({**scalar, "scale": torch.tensor(2.0)})
    assert weights_fingerprint({"w": matrix.T}) == weights_fingerprint({"w": matrix.T.contiguous()})
    # the digests recorded in saved artifacts and stores stay as they were
    assert weights_fingerprint({"w": matrix}) == "db8ae0bc43e05a11"
    assert weights_fingerprint({"w": matrix.to(torch.bfloat16), "b": torch.arange(3)}) == "15362f7946591e45"


def test_bad_max_length(tiny_model_dir):
    from pyterrier_compverify import TokenEncoder

    with pytest.raises(ValueError, match="max_length"):
        TokenEncoder(tiny_model_dir, max_length=1)


def test_query_and_doc_encoders_give_vectors(tiny_encoder):
    import pandas as pd

    q = tiny_encoder.query_encoder()(pd.DataFrame({"qid": ["1"], "query": ["dog"]}))
    d = tiny_encoder.doc_encoder()(pd.DataFrame({"docno": ["d"], "text": ["cat"]}))
    assert q["query_vec"][0].shape == (32,) and d["doc_vec"][0].shape == (32,)


def test_a_model_neither_local_nor_loadable_is_a_one_line_file_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="'some-org/no-such-model': no such folder.*HF_HUB_OFFLINE=1") as e:
        cv.TokenEncoder("some-org/no-such-model")
    assert "\n" not in str(e.value)


def test_a_load_error_that_is_not_the_hubs_is_left_as_it_is(monkeypatch):
    import sentence_transformers

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", full_disk)
    with pytest.raises(OSError, match="No space left") as e:
        cv.TokenEncoder("some-org/some-model")
    assert not isinstance(e.value, FileNotFoundError)


def test_a_model_folder_may_be_given_with_a_tilde(tiny_model_dir, monkeypatch):
    from pathlib import Path

    monkeypatch.setenv("HOME", str(Path(tiny_model_dir).parent))
    encoder = cv.TokenEncoder(f"~/{Path(tiny_model_dir).name}")
    assert encoder.encode(["a dog"]).pooled.shape[0] == 1


def test_loading_weights_shows_transformers_bar_only_for_a_verbose_encoder(tiny_model_dir, capfd):
    from transformers.utils import logging as hf_logging

    if not hf_logging.is_progress_bar_enabled():
        pytest.skip("transformers' progress bars are off here (HF_HUB_DISABLE_PROGRESS_BARS)")
    capfd.readouterr()
    cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    assert "Loading weights" not in capfd.readouterr().err  # every command printed it before
    assert hf_logging.is_progress_bar_enabled() and hf_logging.set_tqdm_hook(None) is None  # nothing left behind
    cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu", verbose=True)
    assert "Loading weights" in capfd.readouterr().err


def test_a_tokenizer_set_to_pad_on_the_left_gives_the_same_states(tiny_model_dir):
    """Batches are cut and states read from the left: a left-padding tokenizer gave short texts zero states."""
    encoder = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu", dtype="fp32")
    texts = ["a dog", "the big red dog chases the small blue cat"]
    alone = [encoder.encode([t]).token_states[0] for t in texts]
    encoder.model.tokenizer.padding_side = "left"
    together = encoder.encode(texts, batch_size=2)
    for state, expected in zip(together.token_states, alone):
        torch.testing.assert_close(state, expected, atol=1e-5, rtol=1e-5)


def test_the_default_dtype_can_be_fixed_by_the_environment(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("COMPVERIFY_DTYPE", "fp32")
    assert cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu").dtype == "fp32"
    monkeypatch.setenv("COMPVERIFY_DTYPE", "bfloat16")
    assert cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu").dtype == "bf16"
    monkeypatch.setenv("COMPVERIFY_DTYPE", "fp16")
    with pytest.raises(ValueError, match="COMPVERIFY_DTYPE='fp16': dtype must be 'bf16' or 'fp32'"):
        cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu")


def test_the_training_state_cache_reads_real_tokens_whatever_the_padding_side(tiny_model_dir):
    """The state cache tokenised through the model directly: the left-padding fix missed it (review 50-e)."""
    from pyterrier_compverify.training.state_cache import _states

    encoder = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu", dtype="fp32")
    texts = ["a dog", "the big red dog chases the small blue cat"]
    expected = _states(encoder, texts, top_layers=0, bf16=False)
    encoder.model.tokenizer.padding_side = "left"
    for got, want in zip(_states(encoder, texts, top_layers=0, bf16=False), expected):
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_dense_search_uses_the_similarity_the_model_declares(tiny_model_dir):
    """A model declaring dot products (sentence-transformers' similarity_fn_name) was searched by cosine, unlike
    pyterrier-dr's own SBertBiEncoder on the same folder (review 50-g)."""
    import pyterrier_dr

    encoder = cv.BiEncoder(tiny_model_dir, max_length=16, device="cpu")
    assert encoder.sim_fn == pyterrier_dr.SimFn.dot  # it normalises: dot is cosine
    encoder.__dict__["_normalises"] = False  # a model without a Normalize module
    assert encoder.sim_fn == pyterrier_dr.SimFn.cos  # declaring cosine
    encoder.model.similarity_fn_name = "dot"
    assert encoder.sim_fn == pyterrier_dr.SimFn.dot
