"""The defects of the reliability review (issue 15), one test each, named after the defect (D1 ... D26); those of
the command line are in test_reliability_cli.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import pyterrier_compverify as cv
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


# ---- D1, D4, D5: training outputs ---------------------------------------------------------------------------


def test_d01_rerun_into_a_finished_folder_with_other_rows_or_config_is_refused(tmp_path, tiny_encoder):
    out = tmp_path / "run"
    _, first_log = train_verifier(ROWS, out, encoder=tiny_encoder, config=small(), verbose=False)
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
    assert log == first_log and head_bytes(out) == first  # loaded with its log, not trained again
    verifier, log = train_verifier(OTHER_ROWS, out, encoder=tiny_encoder, config=small(seed=7), overwrite=True)
    assert len(log) == 2 and head_bytes(out) != first and verifier.meta["training"]["seed"] == 7
    _, again = train_verifier(OTHER_ROWS, out, encoder=tiny_encoder, config=small(seed=7), verbose=False)
    assert again == log  # the new run's log: the old one's checkpoints were cleared by overwrite=True


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


def test_d01_a_folder_trained_before_fingerprints_is_taken_over_only_with_the_same_config(tmp_path, tiny_encoder):
    out = tmp_path / "old"
    train_verifier(ROWS, out, encoder=tiny_encoder, config=small(), verbose=False)
    (out / "compverify_run.json").unlink()  # as an older version left it
    with pytest.raises(FileExistsError, match="holds another training run .a run without a fingerprint"):
        train_verifier(ROWS, out, encoder=tiny_encoder, config=small(seed=7), verbose=False)
    with pytest.warns(UserWarning, match="trained by an older version with this config"):
        _, log = train_verifier(ROWS, out, encoder=tiny_encoder, config=small(), verbose=False)
    assert len(log) == 2 and (out / "compverify_run.json").exists()  # loaded, with its log (not trained again)


def test_d01_output_folder_that_is_a_file_is_refused_before_training(tmp_path, tiny_encoder):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(FileExistsError, match="is a file, not a folder"):
        train_verifier(ROWS, tmp_path / "afile", encoder=tiny_encoder, config=small(), verbose=False)


def test_d04_training_that_cannot_train_is_refused_for_both_trainers(tmp_path, tiny_encoder, tiny_model_dir):
    with pytest.raises(ValueError, match="cannot fill one batch"):
        train_verifier(ROWS.iloc[:2], tmp_path / "v", encoder=tiny_encoder, config=small(), verbose=False)
    for bad in ({"steps": 0}, {"steps": -5}, {"batch_size": 0}, {"head_lr": -1.0}, {"steps": 2.5}):
        with pytest.raises(ValueError, match="must be positive|must be at least 1|must be a whole number"):
            small(**bad)
    for bad in ({"steps": 0}, {"steps": -5}, {"lr": -1.0}):
        with pytest.raises(ValueError, match="must be positive|must be at least 1"):
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


# ---- D2, D3, D6, D7, D8, D11, D12, D14, D15, D20, D21, D25: the TokenStore ------------------------------------
DOCS = [{"docno": f"d{i}", "text": t} for i, t in enumerate(["the cat is on the mat", "a man greeted a woman"] * 3)]


@pytest.fixture
def built(tmp_path, tiny_encoder):
    return cv.TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)


def run_frame(docnos, query="dog") -> pd.DataFrame:
    return pd.DataFrame({"qid": "q", "query": query, "docno": list(docnos), "score": 0.0, "rank": 0})


def test_d02_one_qid_with_two_query_texts_scores_each_row_against_its_own_query(built, tiny_encoder):
    run = pd.concat([run_frame(["d0", "d1"], "cat on mat"), run_frame(["d0", "d1"], "man greeted woman")])
    out = cv.MaxSim(tiny_encoder, store=built)(run.assign(qid="q1"))
    alone = cv.MaxSim(tiny_encoder, store=built)(run_frame(["d0", "d1"], "man greeted woman"))
    got = out[out["query"] == "man greeted woman"].set_index("docno")["score"]
    assert got.to_dict() == pytest.approx(alone.set_index("docno")["score"].to_dict())


def test_d03_a_second_indexer_of_the_same_path_fails_clearly_while_the_first_builds(tmp_path, tiny_encoder):
    import threading

    path, inside, release, result = tmp_path / "s.tokens", threading.Event(), threading.Event(), {}

    def slow_docs():
        yield DOCS[0]
        inside.set()
        release.wait(30)
        yield from DOCS[1:]

    def first():
        result["store"] = cv.TokenStore(path).indexer(tiny_encoder, verbose=False).index(slow_docs())

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(30)
    try:
        with pytest.raises(FileExistsError, match="another process is building .*s.tokens"):
            cv.TokenStore(path).indexer(tiny_encoder, verbose=False, mode="overwrite").index(DOCS[:2])
    finally:
        release.set()
        thread.join(30)
    assert result["store"].docnos() == [d["docno"] for d in DOCS]
    with pytest.raises(FileExistsError, match="already exists"):  # after the first: the usual refusal
        cv.TokenStore(path).indexer(tiny_encoder, verbose=False).index(DOCS[:2])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.tokens"]  # no lock file or temporary folder left


def test_a_second_save_of_a_verifier_folder_meanwhile_is_refused_and_the_first_kept(tmp_path, tiny_encoder):
    from pyterrier_compverify.artifacts import BuildBusyError, build_lock
    from pyterrier_compverify.scoring import build_head

    first = cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=32), "F4")
    before = (first.path / "head.safetensors").read_bytes()
    with build_lock(first.path), pytest.raises(BuildBusyError, match="another process is building .*v"):
        cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F3", dim=32), "F3")
    with build_lock(first.path), pytest.raises(BuildBusyError):  # the meta's other writers take the lock too
        first.set_default_penalty({"beta": 1.0, "tau": 0.9})
    with build_lock(first.path), pytest.raises(BuildBusyError):
        first.compact()
    assert first.default_penalty is None
    assert cv.Verifier(first.path).meta["head"] == "F4" and (first.path / "head.safetensors").read_bytes() == before
    assert [p.name for p in first.path.iterdir() if p.name.startswith(".")] == []  # its temporary folder is gone


def test_a_save_removes_the_temporary_folders_of_saves_that_were_killed(tmp_path, tiny_encoder, monkeypatch):
    from pyterrier_compverify import verifier as verifier_module
    from pyterrier_compverify.scoring import build_head

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(verifier_module.shutil, "rmtree", lambda *a, **k: None)  # a kill: no cleanup runs
    monkeypatch.setattr(verifier_module.Verifier, "_write", killed)
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=32), "F4")
    assert len(list((tmp_path / "v").glob(".verifier-*"))) == 2  # each killed save left its folder
    monkeypatch.undo()
    saved = cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=32), "F4")
    assert sorted(p.name for p in saved.path.iterdir()) == ["head.safetensors", "pt_meta.json"]


def test_artifact_paths_under_home_are_expanded(tmp_path, tiny_encoder, monkeypatch):
    """``~/v`` given in Python (or after "=" on a command line, where bash leaves it): a literal ./~ folder was
    written, or the artifact was not found."""
    from pyterrier_compverify.scoring import build_head

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    saved = cv.Verifier.save("~/v", tiny_encoder, build_head("F4", dim=32), "F4")
    assert saved.path == tmp_path / "home" / "v" and not (tmp_path / "~").exists()
    assert cv.Verifier("~/v").meta["head"] == "F4"
    assert cv.TrainedHeadReranker.from_pretrained("~/v", encoder=tiny_encoder).verifier.path == saved.path
    assert cv.TokenStore("~/s.tokens").path == tmp_path / "home" / "s.tokens"


def test_an_encoder_from_a_relative_folder_is_recorded_by_its_absolute_path(tmp_path, tiny_model_dir, monkeypatch):
    """A verifier trained over TokenEncoder("models/tiny") recorded "models/tiny" and could not be loaded from
    any other working folder."""
    import os
    import shutil

    from pyterrier_compverify.scoring import build_head

    shutil.copytree(tiny_model_dir, tmp_path / "models" / "tiny")
    monkeypatch.chdir(tmp_path)
    encoder = cv.TokenEncoder(os.path.join("models", "tiny"), max_length=16, device="cpu")
    assert encoder.model_name == str(tmp_path / "models" / "tiny")
    saved = cv.Verifier.save(tmp_path / "v", encoder, build_head("F4", dim=32), "F4")
    monkeypatch.chdir(tmp_path / "models")  # elsewhere: the recorded encoder still loads
    assert saved.load_encoder(device="cpu").fingerprint == encoder.fingerprint


def test_a_verifier_saves_into_the_current_folder(tmp_path, tiny_encoder, monkeypatch):
    from pyterrier_compverify.scoring import build_head

    monkeypatch.chdir(tmp_path)  # train-verifier rows.jsonl . : the lock goes beside the resolved folder
    assert cv.Verifier(cv.Verifier.save(".", tiny_encoder, build_head("F4", dim=32), "F4").path).meta["head"] == "F4"


def test_d03_overwriting_a_store_never_leaves_the_path_without_one(built, tiny_encoder, monkeypatch):
    from pyterrier_compverify import artifacts

    missing = []
    for module, name in ((artifacts.shutil, "rmtree"), (artifacts.os, "replace")):
        real = getattr(module, name)

        def watched(*args, real=real, **kwargs):
            result = real(*args, **kwargs)
            if not (built.path / "pt_meta.json").exists():
                missing.append(args)
            return result

        monkeypatch.setattr(module, name, watched)
    cv.TokenStore(built.path).indexer(tiny_encoder, verbose=False, mode="overwrite").index(DOCS[:2])
    assert missing == [] and len(cv.TokenStore(built.path)) == 2


def test_d06_offsets_not_starting_at_0_decreasing_or_float_are_refused(built):
    import numpy as np

    good = np.load(built.path / "offsets.npy")
    for bad in (np.r_[1, good[1:]], np.r_[good[:1], good[5:6], good[2:]], good.astype(np.float64)):
        np.save(built.path / "offsets.npy", bad)
        with pytest.raises(cv.CorruptStoreError, match="offsets.npy must be integers starting at 0"):
            len(cv.TokenStore(built.path))


def test_d07_a_failed_joint_build_leaves_no_half_written_flex_index(tmp_path, tiny_encoder):
    from pyterrier_dr import FlexIndex

    docs = [{"docno": f"d{i}", "text": "a dog"} for i in range(30)]
    store, flex = cv.TokenStore(tmp_path / "fx.tokens"), FlexIndex(str(tmp_path / "fx.flex"))
    with pytest.raises(ValueError, match="duplicate docno 'd0'"):
        store.indexer(tiny_encoder, flex_index=flex, batch_size=2).index([*docs, {"docno": "d0", "text": "dup"}])
    assert list(tmp_path.iterdir()) == []
    store.indexer(tiny_encoder, flex_index=flex, verbose=False).index(docs)  # the plain retry works
    assert len(flex) == len(store) == 30
    with pytest.raises(ValueError, match="duplicate docno"):  # a failed overwrite keeps both old indices
        store.indexer(tiny_encoder, flex_index=flex, mode="overwrite", verbose=False).index([docs[0], docs[0]])
    assert len(FlexIndex(str(tmp_path / "fx.flex"))) == len(cv.TokenStore(tmp_path / "fx.tokens")) == 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fx.flex", "fx.tokens"]


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_d08_a_built_store_gets_the_permissions_of_the_umask(tmp_path, tiny_encoder, umask):
    import os
    import stat

    old = os.umask(umask)
    try:
        store = cv.TokenStore(tmp_path / "perm.tokens").indexer(tiny_encoder, verbose=False).index(DOCS[:1])
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o777 & ~umask
    assert stat.S_IMODE(os.stat(store.path / "states.f16").st_mode) == 0o666 & ~umask


DAMAGE = {  # file -> (how it is damaged, what the message says)
    "offsets.npy, 0 bytes": ("offsets.npy", b"", "offsets.npy cannot be read"),
    "docnos.npids, 0 bytes": ("docnos.npids", b"", "docnos.npids cannot be read"),
    "docnos.npids, half": ("docnos.npids", "half", "docnos.npids cannot be read"),
    # npids alone loops for ever in its block chain on this one (found by a reviewer)
    "docnos.npids, 16 bytes flipped": ("docnos.npids", "flip", "docnos.npids cannot be read .*sha256"),
    "pt_meta.json, invalid UTF-8": ("pt_meta.json", b'{"type": "\xff"}', "pt_meta.json is not valid JSON"),
    "pt_meta.json, a list": ("pt_meta.json", b"[1, 2]", "pt_meta.json holds a JSON list"),
    "pt_meta.json, null": ("pt_meta.json", b"null", "pt_meta.json holds a JSON NoneType"),
    "pt_meta.json, no encoder": ("pt_meta.json", {"encoder": None}, "pt_meta.json has no valid 'encoder' entry"),
    "pt_meta.json, no num_docs": ("pt_meta.json", {"num_docs": None}, "'num_docs' is None, not a count"),
    "pt_meta.json, num_docs text": ("pt_meta.json", {"num_docs": "6"}, "'num_docs' is '6', not a count"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_d11_every_damaged_store_file_raises_corrupt_store_error_naming_it(built, case):
    name, damage, message = DAMAGE[case]
    path = built.path / name
    if isinstance(damage, dict):
        meta = json.loads(path.read_text())
        damage = json.dumps({k: v for k, v in {**meta, **damage}.items() if v is not None}).encode()
    elif damage == "half":
        damage = path.read_bytes()[: path.stat().st_size // 2]
    elif damage == "flip":
        data = bytearray(path.read_bytes())
        data[116:132] = bytes(b ^ 0xFF for b in data[116:132])
        damage = bytes(data)
    path.write_bytes(damage)
    with pytest.raises(cv.CorruptStoreError, match=message) as error:
        len(cv.TokenStore(built.path))
    assert isinstance(error.value, cv.CorruptArtifactError) and str(built.path) in str(error.value)


def test_d12_nan_in_a_store_gives_an_error_naming_the_store(built, tiny_encoder):
    import numpy as np

    states = np.memmap(built.path / "states.f16", dtype=np.float16, mode="r+")
    states[:32] = np.nan
    states.flush()
    with pytest.raises(FloatingPointError, match=r"s\.tokens.*non-finite score"):
        cv.MaxSim(tiny_encoder, store=str(built.path))(run_frame(["d0", "d1"]))


def test_d12_nan_in_head_weights_gives_an_error_naming_the_verifier(saved_verifier, tiny_encoder):
    from safetensors.torch import load_file, save_file

    weights = load_file(saved_verifier.path / "head.safetensors")
    save_file(
        {name: tensor.fill_(float("nan")) for name, tensor in weights.items()}, saved_verifier.path / "head.safetensors"
    )
    run = run_frame(["d0", "d1"]).assign(text=["a dog", "a cat"])
    with pytest.raises(FloatingPointError, match=r"Verifier\('.*v'\).*non-finite score.*check the head's weights"):
        cv.MapVerifier(saved_verifier.path, encoder=tiny_encoder)(run)


def test_d14_an_empty_corpus_is_a_clear_error(tmp_path, tiny_encoder):
    with pytest.raises(ValueError, match="no documents to index .* the corpus is empty"):
        cv.TokenStore(tmp_path / "e.tokens").indexer(tiny_encoder).index([])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("docno", [None, float("nan"), pd.NA])
def test_d15_missing_docnos_are_refused(tmp_path, tiny_encoder, docno):
    with pytest.raises(ValueError, match="every document needs a docno"):
        cv.TokenStore(tmp_path / "n.tokens").indexer(tiny_encoder).index([{"docno": docno, "text": "dog"}])
    assert list(tmp_path.iterdir()) == []


def test_d20_leftovers_of_killed_builds_are_removed_by_the_next_build(tmp_path, tiny_encoder):
    left = tmp_path / ".s.tokens.building-1234abcd"
    left.mkdir()
    (left / "states.f16").write_bytes(b"\0" * 64)
    cv.TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.tokens"]


def test_d21_overwrite_onto_a_file_is_refused_before_encoding(tmp_path, tiny_encoder, monkeypatch):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setattr(type(tiny_encoder), "encode", lambda *a, **k: pytest.fail("encoded"))
    with pytest.raises(FileExistsError, match="afile is a file, not an index folder"):
        cv.TokenStore(tmp_path / "afile").indexer(tiny_encoder, mode="overwrite").index(DOCS)
    assert (tmp_path / "afile").read_text() == "x"


def test_d25_changed_store_values_of_the_same_size_are_caught_by_verify(built):
    built.verify()  # intact
    data = bytearray((built.path / "states.f16").read_bytes())
    data[1] ^= 0x80  # the sign of d0's first value: same size, opens fine
    (built.path / "states.f16").write_bytes(bytes(data))
    with pytest.raises(cv.CorruptStoreError, match="states.f16 does not match the sha256"):
        cv.TokenStore(built.path).verify()


@pytest.mark.parametrize("docnos", [["d0"], ["a"], [""], ["d1", "d1x"], [f"d{i:03d}" for i in range(256)] + ["z"]])
def test_d27_stores_of_one_document_or_odd_docnos_build_and_read_back(tmp_path, tiny_encoder, docnos):
    """Found while fixing D8: npids 0.1.3 wrote a block of one docno in a 0-byte format it could not read."""
    docs = [{"docno": d, "text": "a dog"} for d in docnos]
    store = cv.TokenStore(tmp_path / "one.tokens").indexer(tiny_encoder, verbose=False).index(docs)
    assert cv.TokenStore(store.path).docnos() == docnos
    assert len(store.token_states(docnos[-1:])) == 1


# ---- D11, D19, D24, D25: Verifier artifacts ----------------------------------------------------------------------
@pytest.fixture
def saved_verifier(tmp_path, tiny_encoder):
    import torch

    from pyterrier_compverify.scoring import build_head

    torch.manual_seed(0)
    return cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=32), "F4", head_config={"dim": 32})


def edit_meta(verifier, **changes):
    path = verifier.path / "pt_meta.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


VERIFIER_DAMAGE = {
    "not JSON": (lambda v: (v.path / "pt_meta.json").write_text("{oops"), "pt_meta.json is not valid JSON"),
    "a JSON list": (lambda v: (v.path / "pt_meta.json").write_text("[]"), "pt_meta.json holds a JSON list"),
    "no encoder": (lambda v: edit_meta(v, encoder=None), "pt_meta.json has no valid 'encoder' entry"),
    "unknown head": (lambda v: edit_meta(v, head="F5"), "pt_meta.json names head 'F5'"),
    "head_config a string": (lambda v: edit_meta(v, head_config="x"), "pt_meta.json needs a 'head' name and a"),
    "head_config unknown key": (lambda v: edit_meta(v, head_config={"dim": 32, "evil": 1}), "head 'F4' with .* fails"),
    "head truncated": (
        lambda v: (v.path / "head.safetensors").write_bytes((v.path / "head.safetensors").read_bytes()[:100]),
        "head.safetensors cannot be read",
    ),
}


@pytest.mark.parametrize("case", list(VERIFIER_DAMAGE))
def test_d11_every_damaged_verifier_file_raises_corrupt_verifier_error_naming_it(saved_verifier, tiny_encoder, case):
    damage, message = VERIFIER_DAMAGE[case]
    damage(saved_verifier)
    with pytest.raises(cv.CorruptVerifierError, match=message) as error:
        cv.Verifier(saved_verifier.path).reranker(encoder=tiny_encoder)
    assert isinstance(error.value, cv.CorruptArtifactError) and str(saved_verifier.path) in str(error.value)


def test_d11_a_damaged_fine_tuned_encoder_is_named(tmp_path, tiny_encoder):
    from pyterrier_compverify.scoring import build_head

    v = cv.Verifier.save(tmp_path / "e2e", tiny_encoder, build_head("F4", dim=32), "F4", fine_tuned=True)
    weights = v.path / "encoder" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:50])
    with pytest.raises(cv.CorruptVerifierError, match=r"encoder \(the fine-tuned encoder\) cannot be loaded"):
        cv.MapVerifier(v.path, device="cpu")


@pytest.mark.parametrize(  # as huggingface_hub reads it
    "name, offline",
    [("HF_HUB_OFFLINE", "1"), ("HF_HUB_OFFLINE", "true"), ("HF_HUB_OFFLINE", "YES"), ("TRANSFORMERS_OFFLINE", "On")],
)
def test_d19_a_missing_local_path_in_from_pretrained_says_the_folder_does_not_exist(
    tiny_encoder, monkeypatch, name, offline
):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv(name, offline)
    for path in ("./runs/nope", "/no/such/verifier"):
        with pytest.raises(FileNotFoundError, match="the folder does not exist$"):
            cv.MapVerifier.from_pretrained(path, encoder=tiny_encoder)
    with pytest.raises(FileNotFoundError, match=f"does not exist \\(and {name}={offline} rules out the hub"):
        cv.MapVerifier.from_pretrained("org/nope", encoder=tiny_encoder)  # a hub name: not fetched


def test_d24_a_crafted_head_config_is_refused_before_allocating(saved_verifier, tiny_encoder):
    import resource

    edit_meta(saved_verifier, head_config={"dim": 32, "max_grid": 4_000_000})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(cv.CorruptVerifierError, match=r"tensor 'col_pos.weight' is \(64, 32\) in the file"):
        cv.MapVerifier(saved_verifier.path, encoder=tiny_encoder)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB: no 1 GB embedding made


def test_d25_changed_head_weights_of_the_same_size_are_caught_by_verify(saved_verifier):
    saved_verifier.verify()
    data = bytearray((saved_verifier.path / "head.safetensors").read_bytes())
    data[-1] ^= 0x80
    (saved_verifier.path / "head.safetensors").write_bytes(bytes(data))
    with pytest.raises(cv.CorruptVerifierError, match="head.safetensors does not match the sha256"):
        saved_verifier.verify()


# ---- D9, D16, D17, D18: encoder inputs -----------------------------------------------------------------------
def test_d09_max_length_above_the_model_positions_is_refused_at_construction(tiny_model_dir):
    with pytest.raises(ValueError, match="max_length=128 exceeds the 64 positions"):
        cv.TokenEncoder(tiny_model_dir, max_length=128, device="cpu")


def test_d16_encoding_one_string_is_refused_not_split_into_characters(tiny_encoder):
    with pytest.raises(ValueError, match="got one string: pass \\['hello world'\\]"):
        tiny_encoder.encode("hello world")


def test_d17_a_missing_query_on_the_pyterrier_dr_path_is_named(tiny_encoder):
    with pytest.raises(ValueError, match="query value.* missing or not strings"):
        tiny_encoder.query_encoder()(pd.DataFrame({"qid": ["1", "2"], "query": ["a", None]}))


def test_d18_biencoder_index_refuses_duplicate_docnos(tmp_path, tiny_model_dir):
    model = cv.BiEncoder(tiny_model_dir, max_length=16, device="cpu")
    with pytest.raises(ValueError, match="duplicate docno 'd0'"):
        model.index([{"docno": "d0", "text": "a"}, {"docno": "d0", "text": "b"}], tmp_path / "dup.flex")
    assert list((tmp_path / "dup.flex").glob("*")) == []  # no part of the index (dense/, tokens/) is left
    retry = model.index([{"docno": "d0", "text": "a"}, {"docno": "d1", "text": "b"}], tmp_path / "dup.flex")
    assert len(retry.store) == len(retry.flex) == 2  # a plain retry works


# ---- loading safety (issue 15 item 9): a crafted encoder in a Verifier must not run code ---------------------------
MARKER_CODE = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def crafted_verifier(tmp_path, tiny_encoder, craft):
    from pyterrier_compverify.scoring import build_head

    verifier = cv.Verifier.save(tmp_path / "v", tiny_encoder, build_head("F4", dim=32), "F4", fine_tuned=True)
    craft(verifier.path / "encoder", str(tmp_path / "marker"))
    return verifier


def custom_module_class(folder, marker):
    (folder / "evil_module.py").write_text(MARKER_CODE.format(marker=marker) + "class Evil:\n    pass\n")
    modules = json.loads((folder / "modules.json").read_text())
    modules[1]["type"] = "evil_module.Evil"
    (folder / "modules.json").write_text(json.dumps(modules))


def remote_code(folder, marker):
    (folder / "modeling_evil.py").write_text(MARKER_CODE.format(marker=marker))
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_evil.EvilModel", "AutoConfig": "modeling_evil.EvilConfig"}
    (folder / "config.json").write_text(json.dumps(config))


def pickled_weights(folder, marker):
    import pickle

    class Payload:
        def __reduce__(self):
            return exec, (MARKER_CODE.format(marker=marker),)

    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": Payload()}))


@pytest.mark.parametrize("craft, refused", [(custom_module_class, True), (remote_code, False), (pickled_weights, True)])
def test_loading_safety_a_crafted_encoder_runs_no_code(tmp_path, tiny_encoder, craft, refused, monkeypatch):
    """Protection that comes from the pinned sentence-transformers (>= 6) and torch (>= 2.6, weights_only): a
    custom module class or pickled weights are refused, an ``auto_map`` is ignored; no crafted code runs."""
    verifier = crafted_verifier(tmp_path, tiny_encoder, craft)
    monkeypatch.syspath_prepend(str(verifier.path / "encoder"))  # even where the module would be importable
    if refused:
        with pytest.raises(cv.CorruptVerifierError, match="the fine-tuned encoder. cannot be loaded"):
            cv.MapVerifier(verifier.path, device="cpu")
    else:
        cv.MapVerifier(verifier.path, device="cpu")
    assert not (tmp_path / "marker").exists()


def test_a_roberta_type_model_is_held_to_the_positions_it_can_use(tmp_path):
    """RoBERTa numbers positions from padding_idx + 1: max_position_embeddings 34 with padding 0 leaves 33, and
    max_length 34 passed the check and then failed inside the model (IndexError)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertTokenizerFast, RobertaConfig, RobertaModel

    from pyterrier_compverify.encoder import MaxLengthError

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "dog", "cat"]
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    config = RobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=34, pad_token_id=0)  # fmt: skip
    RobertaModel(config).save_pretrained(tmp_path / "hf")
    tokenizer.save_pretrained(tmp_path / "hf")
    modules = [Transformer(str(tmp_path / "hf"), max_seq_length=32), Pooling(32, "mean"), Normalize()]
    SentenceTransformer(modules=modules).save(str(tmp_path / "st"))
    with pytest.raises(MaxLengthError, match="exceeds the 33 positions"):
        cv.TokenEncoder(str(tmp_path / "st"), max_length=34, device="cpu", dtype="fp32")
    encoder = cv.TokenEncoder(str(tmp_path / "st"), device="cpu", dtype="fp32")
    assert encoder.max_length == 33 and encoder.encode(["dog " * 100]).token_states[0].shape == (33, 32)


def test_the_cache_folder_variable_expands_a_tilde_and_ignores_an_empty_value(monkeypatch, tmp_path):
    """COMPVERIFY_CACHE='~/x' made a literal ./~/x folder for training rows; '' meant the working folder."""
    from pathlib import Path

    from pyterrier_compverify.artifacts import cache_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COMPVERIFY_CACHE", "~/x")
    assert cache_dir() == tmp_path / "x"
    monkeypatch.setenv("COMPVERIFY_CACHE", " ")
    assert cache_dir() == Path.home() / ".cache" / "pyterrier_compverify"
