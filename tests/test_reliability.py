"""The defects of the reliability review (issue 15), one test each, named after the defect (D1 ... D26)."""

from __future__ import annotations

import pandas as pd
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.cli import main
from pyterrier_compverify.training import EncoderTrainingConfig, VerifierTrainingConfig, train_encoder, train_verifier

SENTENCES = [
    ("the tall man greeted the short woman", "the short man greeted the tall woman"),
    ("a red cat", "a blue cat"),
    ("the dog is on the mat", "the dog is not on the mat"),
    ("a cell protein", "a protein cell"),
]
ROWS = pd.DataFrame([{"anchor": a, "positive": a, "negative": n} for a, n in SENTENCES] * 2)
OTHER_ROWS = pd.DataFrame([{"anchor": n, "positive": n, "negative": a} for a, n in SENTENCES] * 2)


def small(**kw) -> VerifierTrainingConfig:
    return VerifierTrainingConfig(**{"steps": 2, "batch_size": 4, "save_steps": 1, "logging_steps": 1, **kw})


def head_bytes(folder) -> bytes:
    return (folder / "head.safetensors").read_bytes()


def _one_line_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]  # earlier lines: progress bars of loading the model


# ---- D1, D4, D5: training outputs ---------------------------------------------------------------------------
def test_d01_rerun_into_a_finished_folder_with_other_rows_or_config_is_refused(tmp_path, tiny_encoder):
    out = tmp_path / "run"
    train_verifier(ROWS, out, encoder=tiny_encoder, config=small(), verbose=False)
    first = head_bytes(out)
    for rows, config, what in [
        (OTHER_ROWS, small(seed=7), "other rows, seed 42 -> 7"),
        (ROWS, small(head="F3", head_config={"channels": [4, 8]}), "head 'F4' -> 'F3'"),
        (ROWS, small(steps=3), "steps 2 -> 3"),
    ]:
        with pytest.raises(FileExistsError, match=f"holds another training run.*{what}.*overwrite=True"):
            train_verifier(rows, out, encoder=tiny_encoder, config=config, verbose=False)
        assert head_bytes(out) == first
    # the same run loads the finished model; overwrite=True trains anew and records the new run
    _, log = train_verifier(ROWS, out, encoder=tiny_encoder, config=small(), verbose=False)
    assert log == [] and head_bytes(out) == first
    verifier, log = train_verifier(OTHER_ROWS, out, encoder=tiny_encoder, config=small(seed=7), overwrite=True)
    assert len(log) == 2 and head_bytes(out) != first and verifier.meta["training"]["seed"] == 7
    _, log = train_verifier(OTHER_ROWS, out, encoder=tiny_encoder, config=small(seed=7), verbose=False)
    assert log == []


def test_d01_train_verifier_command_refuses_another_run_unless_overwrite(tmp_path, tiny_model_dir, capsys):
    rows, other = tmp_path / "rows.jsonl", tmp_path / "other.jsonl"
    ROWS.to_json(rows, orient="records", lines=True)
    OTHER_ROWS.to_json(other, orient="records", lines=True)
    base = ["--model", tiny_model_dir, "--max-length", "16", "--steps", "2", "--batch-size", "4", "--device", "cpu"]
    main(["train-verifier", str(rows), str(tmp_path / "out"), *base])
    capsys.readouterr()
    err = _one_line_error(["train-verifier", str(other), str(tmp_path / "out"), *base, "--seed", "7"], capsys)
    assert "holds another training run (other rows, seed 42 -> 7)" in err and "--overwrite" in err
    main(["train-verifier", str(other), str(tmp_path / "out"), *base, "--seed", "7", "--overwrite"])
    assert cv.Verifier(tmp_path / "out").meta["training"]["seed"] == 7


def test_d01_train_encoder_refuses_another_run_unless_overwrite(tmp_path, tiny_model_dir):
    config = EncoderTrainingConfig(steps=2, batch_size=4, save_steps=1, logging_steps=1, max_length=16)
    kw = dict(model=tiny_model_dir, verbose=False, device="cpu")
    first = train_encoder(ROWS, tmp_path / "enc", config=config, **kw).fingerprint
    with pytest.raises(FileExistsError, match="another training run .other rows, seed 42 -> 7"):
        train_encoder(
            OTHER_ROWS, tmp_path / "enc", config=EncoderTrainingConfig(**{**config.__dict__, "seed": 7}), **kw
        )
    assert train_encoder(ROWS, tmp_path / "enc", config=config, **kw).fingerprint == first
    other = EncoderTrainingConfig(**{**config.__dict__, "seed": 7})
    assert train_encoder(OTHER_ROWS, tmp_path / "enc", config=other, overwrite=True, **kw).fingerprint != first


def test_d01_output_folder_that_is_a_file_is_refused_before_training(tmp_path, tiny_encoder):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(FileExistsError, match="is a file, not a folder"):
        train_verifier(ROWS, tmp_path / "afile", encoder=tiny_encoder, config=small(), verbose=False)


def test_d04_training_that_cannot_train_is_refused_for_both_trainers(tmp_path, tiny_encoder, tiny_model_dir):
    with pytest.raises(ValueError, match="cannot fill one batch"):
        train_verifier(ROWS.iloc[:2], tmp_path / "v", encoder=tiny_encoder, config=small(), verbose=False)
    for bad in ({"steps": 0}, {"steps": -5}, {"batch_size": 0}, {"head_lr": -1.0}):
        with pytest.raises(ValueError, match="positive"):
            small(**bad)
    for bad in ({"steps": 0}, {"steps": -5}, {"lr": -1.0}):
        with pytest.raises(ValueError, match="positive"):
            EncoderTrainingConfig(**bad)
    config = EncoderTrainingConfig(steps=2, batch_size=4)
    with pytest.raises(ValueError, match="cannot fill one batch"):
        train_encoder(ROWS.iloc[:2], tmp_path / "e", model=tiny_model_dir, config=config, device="cpu")
    assert not (tmp_path / "v").exists() and not (tmp_path / "e").exists()


def test_d05_a_kill_during_a_checkpoint_write_resumes_from_the_last_complete_one(tmp_path, tiny_encoder):
    out = tmp_path / "run"
    config = small(steps=4, save_steps=2)
    train_verifier(ROWS, out, encoder=tiny_encoder, config=config, verbose=False)
    straight = head_bytes(out)
    partial = out / "checkpoints" / "checkpoint-4"  # as a kill leaves it: weights cut short, no trainer_state.json
    (partial / "trainer_state.json").unlink()
    (partial / "model.safetensors").write_bytes((partial / "model.safetensors").read_bytes()[:1000])
    with pytest.warns(UserWarning, match="checkpoint-4 is incomplete"):
        _, log = train_verifier(ROWS, out, encoder=tiny_encoder, config=config, verbose=False)
    assert head_bytes(out) == straight and (partial / "trainer_state.json").exists()  # steps 3-4 trained again
