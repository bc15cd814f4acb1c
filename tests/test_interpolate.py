"""WiSE-FT weight interpolation of a fine-tuned encoder with its base."""

from __future__ import annotations

import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.training.interpolate import interpolate_encoders


@pytest.fixture(scope="module")
def shifted_model(tiny_model_dir, tmp_path_factory):
    """The tiny model with every float parameter moved by +1 (stands in for a fine-tuned model)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(tiny_model_dir, device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    folder = tmp_path_factory.mktemp("shifted") / "model"
    model.save(str(folder))
    return str(folder)


def state(path):
    return cv.TokenEncoder(path, max_length=16, device="cpu").model.state_dict()


def test_interpolation_mixes_the_weights(tiny_model_dir, shifted_model, tmp_path):
    out = interpolate_encoders(shifted_model, tmp_path / "half", 0.25, base=tiny_model_dir)
    base, tuned, mixed = state(tiny_model_dir), state(shifted_model), state(str(out))
    for name, value in mixed.items():
        if value.is_floating_point():
            assert torch.allclose(value, 0.75 * base[name] + 0.25 * tuned[name], atol=1e-6), name
        else:
            assert torch.equal(value, tuned[name]), name


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_the_ends_are_the_two_models(tiny_model_dir, shifted_model, tmp_path, alpha):
    out = interpolate_encoders(shifted_model, tmp_path / str(alpha), alpha, base=tiny_model_dir)
    expect = cv.TokenEncoder(shifted_model if alpha else tiny_model_dir, max_length=16, device="cpu")
    assert cv.TokenEncoder(str(out), max_length=16, device="cpu").fingerprint == expect.fingerprint


def test_same_interpolation_is_reused_another_is_refused(tiny_model_dir, shifted_model, tmp_path):
    first = interpolate_encoders(shifted_model, tmp_path / "m", 0.5, base=tiny_model_dir)
    assert interpolate_encoders(shifted_model, tmp_path / "m", 0.5, base=tiny_model_dir) == first
    with pytest.raises(FileExistsError, match="another interpolation"):
        interpolate_encoders(shifted_model, tmp_path / "m", 0.3, base=tiny_model_dir)
    interpolate_encoders(shifted_model, tmp_path / "m", 0.3, base=tiny_model_dir, overwrite=True)
    with pytest.raises(ValueError, match="alpha"):
        interpolate_encoders(shifted_model, tmp_path / "x", 1.5, base=tiny_model_dir)


def test_a_save_killed_during_overwrite_is_not_taken_for_the_old_interpolation(
    tiny_model_dir, shifted_model, tmp_path, monkeypatch
):
    """The old record stayed beside the new weights until the save finished: a kill between the two left alpha
    0.9's weights under alpha 0.1's record, and the next call with alpha 0.1 returned them as done."""
    from sentence_transformers import SentenceTransformer

    out = interpolate_encoders(shifted_model, tmp_path / "m", 0.1, base=tiny_model_dir)
    real_save = SentenceTransformer.save

    def killed(self, path, *args, **kwargs):
        real_save(self, path, *args, **kwargs)
        raise KeyboardInterrupt  # after the weights, before the record

    monkeypatch.setattr(SentenceTransformer, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        interpolate_encoders(shifted_model, out, 0.9, base=tiny_model_dir, overwrite=True)
    monkeypatch.setattr(SentenceTransformer, "save", real_save)
    again = interpolate_encoders(shifted_model, out, 0.1, base=tiny_model_dir)  # rebuilt, not reused
    base, tuned, mixed = state(tiny_model_dir), state(shifted_model), state(str(again))
    name = next(k for k, v in mixed.items() if v.is_floating_point())
    assert torch.allclose(mixed[name], 0.9 * base[name] + 0.1 * tuned[name], atol=1e-6)


def test_a_fine_tuned_model_retrained_at_the_same_path_is_another_interpolation(tiny_model_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    tuned = tmp_path / "tuned"
    SentenceTransformer(tiny_model_dir, device="cpu").save(str(tuned))
    out = interpolate_encoders(str(tuned), tmp_path / "m", 0.5, base=tiny_model_dir)
    model = SentenceTransformer(str(tuned), device="cpu")
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    model.save(str(tuned))  # retrained in place
    with pytest.raises(FileExistsError, match="another interpolation"):
        interpolate_encoders(str(tuned), out, 0.5, base=tiny_model_dir)


def test_a_record_from_before_the_fingerprint_is_rebuilt_not_refused(tiny_model_dir, shifted_model, tmp_path):
    import json

    from pyterrier_compverify.training.interpolate import RECORD_FILE

    out = interpolate_encoders(shifted_model, tmp_path / "m", 0.5, base=tiny_model_dir)
    record = json.loads((out / RECORD_FILE).read_text())
    del record["fine_tuned_fingerprint"]  # as written before it was kept
    (out / RECORD_FILE).write_text(json.dumps(record))
    assert interpolate_encoders(shifted_model, out, 0.5, base=tiny_model_dir) == out  # no overwrite asked for
    assert "fine_tuned_fingerprint" in json.loads((out / RECORD_FILE).read_text())
    with pytest.raises(FileExistsError, match="another interpolation"):  # another alpha is still refused
        (out / RECORD_FILE).write_text(json.dumps(record))
        interpolate_encoders(shifted_model, out, 0.3, base=tiny_model_dir)


def test_a_record_cut_by_a_kill_is_rebuilt_not_a_json_error(tiny_model_dir, shifted_model, tmp_path):
    import json

    from pyterrier_compverify.training.interpolate import RECORD_FILE

    out = interpolate_encoders(shifted_model, tmp_path / "m", 0.5, base=tiny_model_dir)
    whole = (out / RECORD_FILE).read_text()
    (out / RECORD_FILE).write_text(whole[:20])  # as an in-place write cut by a kill left it (now written in one step)
    assert interpolate_encoders(shifted_model, out, 0.3, base=tiny_model_dir) == out  # no overwrite needed
    assert json.loads((out / RECORD_FILE).read_text())["alpha"] == 0.3
