"""A fine-tuned encoder saved as its changes against the base: same weights back, checked base, damage named."""

import contextlib
import json
import shutil

import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.encoder_delta import DELTA_FILE
from pyterrier_compverify.scoring import build_head


def tuned_copy(tiny_model_dir, layers=("encoder.layer.1.",)):
    """The tiny encoder with the tensors whose names contain one of ``layers`` changed: (tuned, base spec)."""
    encoder = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu", dtype="fp32")
    base = encoder.spec
    with torch.no_grad():
        for name, p in encoder.model.named_parameters():
            if any(layer in name for layer in layers):
                p.add_(0.01 * torch.randn_like(p))
    encoder.weights_changed()
    return encoder, base


def save(path, encoder, base):
    return cv.Verifier.save(path, encoder, build_head("F4", dim=32), "F4", fine_tuned=True, base=base)


def test_a_top_layer_tuned_encoder_is_saved_as_its_changes_and_loads_back_the_same_weights(tmp_path, tiny_model_dir):
    encoder, base = tuned_copy(tiny_model_dir)
    verifier = save(tmp_path / "v", encoder, base)
    assert (verifier.path / DELTA_FILE).is_file() and not (verifier.path / "encoder").exists()
    assert verifier.meta["base_encoder"]["fingerprint"] == base.fingerprint != encoder.fingerprint
    verifier.verify()  # the delta's sha256 is recorded
    loaded = verifier.load_encoder(device="cpu", dtype="fp32")
    assert loaded.fingerprint == encoder.fingerprint
    texts = ["a tall man greeted a short woman", "the dog is not on the mat"]
    torch.testing.assert_close(loaded.encode(texts).pooled, encoder.encode(texts).pooled)
    reranker = cv.MapVerifier(verifier.path, device="cpu")  # the reranker rebuilds it too
    assert reranker.encoder.fingerprint == encoder.fingerprint


def test_an_encoder_changed_everywhere_or_without_a_base_is_saved_whole(tmp_path, tiny_model_dir):
    encoder, base = tuned_copy(tiny_model_dir, layers=("",))  # every tensor changed: no saving in a delta
    for folder, given in (("all", base), ("no-base", None)):
        with pytest.warns(UserWarning, match="parameters changed: the full encoder is kept") if given else _nothing():
            verifier = save(tmp_path / folder, encoder, given)
        assert (verifier.path / "encoder").is_dir() and not (verifier.path / DELTA_FILE).exists()
        assert "base_encoder" not in verifier.meta
        assert verifier.load_encoder(device="cpu").fingerprint == encoder.fingerprint


def test_saving_the_other_form_over_an_artifact_leaves_no_stale_encoder(tmp_path, tiny_model_dir):
    encoder, base = tuned_copy(tiny_model_dir)
    save(tmp_path / "v", encoder, None)
    verifier = save(tmp_path / "v", encoder, base)
    assert not (verifier.path / "encoder").exists()
    cv.Verifier.save(tmp_path / "v", encoder, build_head("F4", dim=32), "F4")  # frozen: no encoder files at all
    assert not (verifier.path / DELTA_FILE).exists()


def test_a_base_that_now_loads_other_weights_is_refused_by_name(tmp_path, tiny_model_dir):
    copy = shutil.copytree(tiny_model_dir, tmp_path / "base")
    encoder, base = tuned_copy(str(copy))
    verifier = save(tmp_path / "v", encoder, base)
    other, _ = tuned_copy(str(copy), layers=("embeddings.word",))  # the base folder's weights change later
    other.model.save(str(copy))
    with pytest.raises(cv.IncompatibleEncoderError, match=r"holds changes to .* but that name now loads weights"):
        verifier.load_encoder(device="cpu")


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: (p / DELTA_FILE).unlink(), "cannot be applied"),
        (lambda p: (p / DELTA_FILE).write_bytes((p / DELTA_FILE).read_bytes()[:40]), "cannot be applied"),
        (lambda p: edit(p, base_encoder={"name": "x"}), "bad 'base_encoder'"),
    ],
    ids=["missing", "truncated", "bad-meta"],
)
def test_a_damaged_delta_raises_corrupt_verifier_error_naming_it(tmp_path, tiny_model_dir, damage, message):
    encoder, base = tuned_copy(tiny_model_dir)
    verifier = save(tmp_path / "v", encoder, base)
    damage(verifier.path)
    with pytest.raises(cv.CorruptVerifierError, match=message):
        verifier.load_encoder(device="cpu")


def test_a_delta_tensor_that_does_not_fit_the_base_is_named(tmp_path, tiny_model_dir):
    from safetensors.torch import save_file

    encoder, base = tuned_copy(tiny_model_dir)
    verifier = save(tmp_path / "v", encoder, base)
    save_file({"0.model.encoder.layer.1.output.dense.bias": torch.zeros(7)}, verifier.path / DELTA_FILE)
    with pytest.raises(cv.CorruptVerifierError, match=r"tensor '.*' \(7,\) does not fit the base"):
        verifier.load_encoder(device="cpu")


def edit(path, **changes):
    meta = json.loads((path / "pt_meta.json").read_text())
    (path / "pt_meta.json").write_text(json.dumps({**meta, **changes}))


def test_compact_turns_a_full_copy_into_a_delta_and_keeps_the_rest_of_the_meta(tmp_path, tiny_model_dir):
    encoder, base = tuned_copy(tiny_model_dir)
    verifier = save(tmp_path / "v", encoder, None)
    verifier.set_default_penalty({"beta": 2.0, "tau": 0.875}, selected_on="dev")
    assert verifier.compact(base.name) and not verifier.compact()  # the second call has nothing to do
    assert not (verifier.path / "encoder").exists() and verifier.default_penalty == {"beta": 2.0, "tau": 0.875}
    for wrong, message in [({"betta": 0.5}, "unknown option"), ({"gate": "sideways"}, "gate"), (True, "a dict")]:
        with pytest.raises(ValueError, match=message):  # refused before it is recorded: later loads would fail
            verifier.set_default_penalty(wrong)
    assert verifier.default_penalty == {"beta": 2.0, "tau": 0.875}
    assert verifier.meta["base_encoder"]["fingerprint"] == base.fingerprint
    verifier.verify()
    assert verifier.load_encoder(device="cpu").fingerprint == encoder.fingerprint


def test_compact_keeps_the_full_copy_where_a_delta_saves_nothing_and_removes_a_leftover(tmp_path, tiny_model_dir):
    encoder, base = tuned_copy(tiny_model_dir, layers=("",))
    verifier = save(tmp_path / "all", encoder, None)
    with pytest.warns(UserWarning, match="parameters changed"):
        assert not verifier.compact()
    assert (verifier.path / "encoder").is_dir() and not (verifier.path / DELTA_FILE).exists()
    tuned, base = tuned_copy(tiny_model_dir)
    compacted = save(tmp_path / "top", tuned, base)
    shutil.copytree(verifier.path / "encoder", compacted.path / "encoder")  # a deletion that was interrupted
    assert not compacted.compact() and not (compacted.path / "encoder").exists()


def test_a_base_name_that_gives_other_weights_at_save_time_keeps_the_full_copy(tmp_path, tiny_model_dir):
    encoder, base = tuned_copy(tiny_model_dir)
    other = type(base)(base.name, "0" * 16, base.max_length, base.dim)  # not what the name loads
    with pytest.warns(UserWarning, match="now loads other weights .* the full encoder is kept"):
        verifier = save(tmp_path / "v", encoder, other)
    assert (verifier.path / "encoder").is_dir() and "base_encoder" not in verifier.meta


def test_a_delta_verifier_loads_in_bf16_and_names_a_base_folder_that_is_gone(tmp_path, tiny_model_dir):
    copy = shutil.copytree(tiny_model_dir, tmp_path / "base")
    encoder, base = tuned_copy(str(copy))
    verifier = save(tmp_path / "v", encoder, base)
    bf16 = verifier.load_encoder(device="cpu", dtype="bf16")
    assert bf16.dtype == "bf16" and bf16.fingerprint == encoder.fingerprint
    texts = ["a tall man greeted a short woman"]
    torch.testing.assert_close(bf16.encode(texts).pooled, encoder.encode(texts).pooled, atol=3e-2, rtol=0)
    shutil.rmtree(copy)
    with pytest.raises(FileNotFoundError, match=r"keeps its tuned encoder as changes to .*base"):
        verifier.load_encoder(device="cpu")


def _nothing():
    return contextlib.nullcontext()
