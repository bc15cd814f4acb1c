"""The compverify command: listing, error format, options reaching the functions, evaluate's output folder."""

from __future__ import annotations

import functools
import importlib

import pandas as pd
import pytest

from pyterrier_compverify import cli
from pyterrier_compverify.cli import COMMANDS, build_parser, main


def test_help_lists_every_command_without_importing_them(monkeypatch, capsys):
    imported = []
    monkeypatch.setattr(cli.importlib, "import_module", lambda name: imported.append(name))
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0 and imported == []
    listing = capsys.readouterr().out
    assert all(name in listing for name in COMMANDS) and "--debug" in listing


def test_listing_matches_the_commands_own_help_lines():
    assert build_parser(COMMANDS).format_help() == build_parser().format_help()


def test_every_commands_help_loads_no_model_library():
    import subprocess
    import sys

    # transformers, sentence-transformers and pyterrier-dr take about 5 s to import (the whole --help took 7 s)
    code = (
        "import sys; from pyterrier_compverify.cli import COMMANDS, build_parser; build_parser(COMMANDS); "
        "print(sorted(m for m in ('pyterrier_dr', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0 and f"compverify {command}" in capsys.readouterr().out


def _one_line_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_unknown_dataset_is_a_one_line_error_with_a_hint(capsys):
    err = _one_line_error(["evaluate", "cranfield"], capsys)
    assert err == "compverify evaluate: error: unknown dataset 'cranfield'; did you mean irds:cranfield?"


def test_unknown_reranker_fails_before_any_model_is_loaded(capsys):
    err = _one_line_error(["evaluate", "irds:cranfield", "--rerankers", "maxsim,nope"], capsys)
    assert err.startswith("compverify evaluate: error: reranker 'nope' is neither")
    err = _one_line_error(["evaluate", "irds:cranfield", "--rerankers", "batch_size"], capsys)
    assert err.startswith("compverify evaluate: error: reranker 'batch_size' is neither")  # as typed, not an option


def test_a_folder_given_with_a_tilde_is_found(tmp_path, monkeypatch):
    from pyterrier_compverify.evaluate import check_fusion, check_rerankers

    (tmp_path / "head").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))  # "--rerankers=~/head": the shell leaves the tilde to us
    assert check_rerankers(["~/head"]) == ["~/head"] and check_fusion("~/head", None) == 300
    with pytest.raises(TypeError, match=r"a list of names, not the string 'maxsim,mapcnn': e.g. \['maxsim', 'map"):
        check_rerankers("maxsim,mapcnn")


def test_fusion_head_that_is_not_a_folder_fails_before_any_model_is_loaded(capsys):
    err = _one_line_error(["evaluate", "irds:cranfield", "--fusion", "--fusion-head", "/no/head"], capsys)
    assert err == (
        "compverify evaluate: error: fusion head '/no/head' is not a folder: give a trained F1w (WeightedMaxSim) folder"
    )


def test_debug_shows_the_exception(capsys):
    for argv in (["--debug", "evaluate", "cranfield"], ["evaluate", "cranfield", "--debug"]):
        with pytest.raises(KeyError):
            main(argv)


def test_train_encoder_recipe_b_needs_edits(tmp_path, capsys):
    err = _one_line_error(["train-encoder", str(tmp_path / "out"), "--recipe", "B"], capsys)
    assert err == "compverify train-encoder: error: recipe B needs --edits (a table written by `compverify negatives`)"


def test_train_encoder_options_reach_the_config_and_the_rows(tmp_path, monkeypatch, capsys):
    command = importlib.import_module("pyterrier_compverify.training.command")
    seen = {}

    @functools.wraps(command.recipe_rows)  # the option defaults are read from its signature
    def fake_rows(recipe, **kwargs):
        seen["rows"] = {"recipe": recipe, **kwargs}
        return pd.DataFrame({"kind": ["retrieval"]})

    def fake_train(rows, out, *, config, **kwargs):
        seen["config"], seen["train"] = config, kwargs
        return type("Model", (), {"model_name": str(out)})()

    monkeypatch.setattr(command, "recipe_rows", fake_rows)
    # the command imports train_encoder from its module when it runs (so that --help loads no model library)
    monkeypatch.setattr(importlib.import_module("pyterrier_compverify.training.biencoder"), "train_encoder", fake_train)
    edits = tmp_path / "edits.jsonl"
    edits.write_text('{"sentence1": "a dog", "sentence2": "no dog", "category": "negation", "rule": "not"}\n')
    argv = ["--recipe", "B", "--edits", str(edits), "--balanced", "--positives", "paraphrase"]
    main(["train-encoder", str(tmp_path / "out"), "--max-length", "48", *argv, "--steps", "7"])
    assert seen["config"].max_length == 48 and seen["config"].steps == 7
    assert seen["rows"]["balanced"] is True and seen["rows"]["positives"] == "paraphrase"
    assert len(seen["rows"]["edits"]) == 1 and seen["train"] == {}  # --model not given: train_encoder's default
    main(["train-encoder", str(tmp_path / "out")])  # recipe A: recipe_rows' own defaults for B's options
    assert seen["config"] == command.EncoderTrainingConfig() and seen["rows"]["recipe"] == "A"
    assert not {"balanced", "share", "positives"} & set(seen["rows"])


def test_evaluate_writes_under_compverify_results_by_default(
    tiny_encoder, tmp_path, monkeypatch, capsys, tiny_collection
):
    from pyterrier_compverify import Verifier, pipelines
    from pyterrier_compverify.scoring import build_head

    monkeypatch.chdir(tmp_path)
    Verifier.save(tmp_path / "f3", tiny_encoder, build_head("F3", dim=tiny_encoder.dim), "F3")
    argv = ["evaluate", "tiny", "--model", tiny_encoder.model_name, "--max-length", "16", "--device", "cpu"]
    Verifier.save(tmp_path / "f1w", tiny_encoder, build_head("F1w", dim=tiny_encoder.dim), "F1w")
    argv += ["--fusion", "--fusion-head", str(tmp_path / "f1w"), "--fusion-depth", "4"]
    argv += ["--index-dir", str(tmp_path / "indices"), "--rerankers", f"maxsim,{tmp_path / 'f3'}"]
    main([*argv, "--correction", "holm"])
    written = tmp_path / "compverify-results" / "evaluate-compverify-demo"
    assert written.with_suffix(".md").is_file() and written.with_suffix(".json").is_file()
    printed = capsys.readouterr().out
    assert "Dense >> MaxSim@100" in printed and "BM25 >> MaxSim@100" in printed
    assert f"Dense >> {tmp_path / 'f3'}@100" in printed  # a trained verifier folder as a reranker
    assert "(Dense, BM25)@4 >> WeightedMaxSim + BM25" in printed  # --fusion with an F1w folder
    assert "nDCG@10" in printed and "p-value" not in printed  # the summary table, not all columns
    assert "*: paired t-test p < 0.05 after the holm correction against Dense." in printed
    assert "nDCG@10 p-value corrected" in written.with_suffix(".md").read_text()

    # a second run into the same folder is refused in one line before anything is encoded; --overwrite goes on
    def encoding(*args, **kwargs):
        raise RuntimeError("encoding")

    monkeypatch.setattr(pipelines, "build_indices", encoding)
    stem = "compverify-results/evaluate-compverify-demo"
    assert _one_line_error(argv, capsys) == (
        f"compverify evaluate: error: {stem}.md and {stem}.json: already written; pass overwrite=True (--overwrite) "
        "or choose another output"
    )
    with pytest.raises(RuntimeError, match="encoding"):
        main([*argv, "--overwrite"])


@pytest.mark.parametrize("head", ["packaged", "F3"])
def test_a_fusion_head_that_cannot_serve_is_refused_before_the_corpus_is_encoded(
    head, tiny_encoder, tmp_path, monkeypatch
):
    from pyterrier_compverify import IncompatibleEncoderError, Verifier, evaluate, pipelines
    from pyterrier_compverify.demo import DemoCollection
    from pyterrier_compverify.scoring import build_head

    def build_indices(*args, **kwargs):
        raise AssertionError("the corpus was encoded before the head was checked")

    monkeypatch.setattr(evaluate, "open_collection", lambda dataset_id: DemoCollection(tmp_path / "docs"))
    monkeypatch.setattr(pipelines, "build_indices", build_indices)
    if head == "packaged":  # trained over all-MiniLM-L6-v2, not the tiny model
        fusion, error, message = True, IncompatibleEncoderError, "was made with encoder"
    else:
        Verifier.save(tmp_path / "f3", tiny_encoder, build_head("F3", dim=tiny_encoder.dim), "F3")
        fusion, error, message = str(tmp_path / "f3"), ValueError, "holds a F3 head, not F1w"
    with pytest.raises(error, match=message):
        evaluate.run_evaluation("tiny", model=tiny_encoder.model_name, fusion=fusion, out_dir=None, verbose=False)


def test_demo_command(tiny_model_dir, tmp_path, capsys):
    main(["demo", "--model", tiny_model_dir, "--device", "cpu", "--folder", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "Dense >> MaxSim@100" in printed and "Done in" in printed


def test_demo_without_folder_leaves_no_temporary_folder(tiny_model_dir, tmp_path, monkeypatch, capsys):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    main(["demo", "--model", tiny_model_dir, "--device", "cpu"])
    assert "Done in" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []


def test_a_device_that_is_not_there_is_a_one_line_error(tiny_model_dir, tmp_path, capsys):
    import torch

    out = str(tmp_path / "nm")
    argv = ["nearmiss", "--scorers", "maxsim", "--model", tiny_model_dir, "--max-length", "16", "--out", out]
    err = _one_line_error([*argv, "--device", "gpu"], capsys)
    assert err.startswith("compverify nearmiss: error: device 'gpu' is not a torch device: use 'cpu'")
    if not torch.cuda.is_available():  # torch raised deep inside the model's .to() before
        assert "sees no CUDA GPU; use device='cpu'" in _one_line_error([*argv, "--device", "cuda"], capsys)


def test_a_missing_optional_dependency_is_one_line_naming_the_extra(monkeypatch, tmp_path, capsys):
    import sys

    from pyterrier_compverify import spacy_english
    from pyterrier_compverify.extras import MissingExtraError
    from pyterrier_compverify.negatives import wordnet

    monkeypatch.setitem(sys.modules, "spacy", None)  # `import spacy` now raises ImportError
    with pytest.raises(MissingExtraError, match=r'^parsing English needs spacy: pip install "pyterrier-compverify\['):
        spacy_english.english_parser.__wrapped__()  # the uncached loader
    from pyterrier_compverify import extras

    def broken(name):  # spaCy installed, one of its own dependencies missing: not the extra's fault
        raise ModuleNotFoundError("No module named 'thinc'", name="thinc")

    with monkeypatch.context() as m:
        m.setattr(extras.importlib, "import_module", broken)
        with pytest.raises(ModuleNotFoundError, match="thinc") as error:
            extras.require("spacy", "negatives", "parsing English")
        assert not isinstance(error.value, MissingExtraError)
    monkeypatch.setitem(sys.modules, "nltk", None)
    with pytest.raises(MissingExtraError, match=r"WordNet needs nltk: .*\[negatives\]"):
        wordnet.load_wordnet.__wrapped__()
    # from the command: one line, exit status 2 (it printed a 25-line ModuleNotFoundError before)
    spacy_english.english_parser.cache_clear()  # a parser loaded by an earlier test would hide the missing package
    (tmp_path / "s.txt").write_text("the dog is on the mat\n")
    err = _one_line_error(["negatives", str(tmp_path / "out.jsonl"), "--sentences", str(tmp_path / "s.txt")], capsys)
    assert err.startswith("compverify negatives: error: parsing English needs spacy") and "[negatives]" in err


def test_an_unreachable_data_file_is_a_missing_file_naming_the_data_dir_option(monkeypatch, tmp_path):
    import urllib.error
    import urllib.request
    from pathlib import Path

    from pyterrier_compverify.datasets import local

    def offline(url, path):
        Path(path).write_text("partial")
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setattr(local, "data_dir", lambda: None)
    monkeypatch.setattr(urllib.request, "urlretrieve", offline)
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    with pytest.raises(
        FileNotFoundError, match=r"cannot download https://x/y.json \(URLError\); without a network.*--data-dir"
    ):
        local.source_file("nearmiss/y.json", "https://x/y.json")
    assert not list(tmp_path.rglob("y.json*"))  # no partial download left

    def disk_full(url, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(urllib.request, "urlretrieve", disk_full)
    with pytest.raises(OSError, match="No space left") as error:  # not the network: not called a missing file
        local.source_file("nearmiss/y.json", "https://x/y.json")
    assert not isinstance(error.value, FileNotFoundError)
