"""The command-line defects of the reliability review (issue 15) and its item 7 (options a command would ignore),
one test each, named after the defect; the others are in test_reliability.py."""

from __future__ import annotations

import urllib.error

import pandas as pd
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.cli import main
from pyterrier_compverify.training import VerifierTrainingConfig

PAIRS = [("a red cat", "a blue cat"), ("the dog is on the mat", "the dog is not on the mat")] * 4
ROWS = pd.DataFrame([{"anchor": a, "positive": a, "negative": n} for a, n in PAIRS])
OTHER_ROWS = pd.DataFrame([{"anchor": n, "positive": n, "negative": a} for a, n in PAIRS])


def _one_line_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]  # earlier lines: progress bars of loading the model


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


# ---- D10, D13, D22, D23, D26: the command and the training rows ------------------------------------------------


def test_d10_cli_user_errors_are_one_line_with_exit_2(tmp_path, capsys):
    err = _one_line_error(["train-verifier", str(tmp_path / "none.jsonl"), str(tmp_path / "out")], capsys)
    assert err.startswith("compverify train-verifier: error: ") and "none.jsonl" in err
    (tmp_path / "afile").write_text("x")
    err = _one_line_error(["demo", "--folder", str(tmp_path / "afile")], capsys)
    assert err.startswith("compverify demo: error: ") and "afile" in err
    err = _one_line_error(["evaluate", "irds:cranfield", "--data-dir", str(tmp_path / "no-data")], capsys)
    assert err == f"compverify evaluate: error: data folder {tmp_path / 'no-data'} does not exist"


def test_a_corpus_only_id_is_refused_before_anything_is_encoded(tmp_path, monkeypatch, capsys):
    from pyterrier_compverify import pipelines

    def encoding(*args, **kwargs):
        raise AssertionError("the corpus was encoded before the topics were read")

    monkeypatch.setattr(pipelines, "build_indices", encoding)
    monkeypatch.chdir(tmp_path)
    err = _one_line_error(["evaluate", "irds:beir/scifact"], capsys)
    assert err == (
        "compverify evaluate: error: irds:beir/scifact has no queries and relevance judgements; evaluate one of its "
        "splits: irds:beir/scifact/test, irds:beir/scifact/train"
    )


def test_a_download_without_network_names_the_data_dir_option(monkeypatch, tmp_path, capsys):
    import requests

    from pyterrier_compverify.datasets.collection import Collection

    def offline(self):
        raise requests.exceptions.ConnectionError("Failed to resolve 'huggingface.co'")

    monkeypatch.setattr(Collection, "topics", offline)
    monkeypatch.chdir(tmp_path)
    err = _one_line_error(["evaluate", "irds:nano-beir/scifact"], capsys)
    assert err == (
        "compverify evaluate: error: cannot download irds:nano-beir/scifact (ConnectionError); without a network, "
        "point compverify at a local copy with --data-dir DIR, cv.setup_local_data(DIR) or the COMPVERIFY_DATA "
        "variable (NanoBEIR: DIR/nanobeir/Nano<Name>/{corpus,queries,qrels}/...)"
    )


def test_a_corpus_download_without_network_is_one_line_too(monkeypatch, tmp_path, capsys):
    """ir_datasets downloads a corpus on its first document and wraps the network error in a RuntimeError."""
    import requests

    from pyterrier_compverify.datasets.collection import Collection

    def documents():
        error = requests.exceptions.ConnectionError("Failed to resolve 'mirror.ir-datasets.com'")
        raise RuntimeError("All download sources failed", [("RequestsDownload(...)", error)])
        yield  # a generator, as ir_datasets' corpus iterators are

    class Offline:
        def get_corpus_iter(self, verbose=False):
            return documents()

    monkeypatch.setattr(Collection, "dataset", Offline())
    monkeypatch.chdir(tmp_path)
    err = _one_line_error(["negatives", "out.jsonl", "--sentences", "irds:vaswani"], capsys)
    assert err == (
        "compverify negatives: error: cannot download irds:vaswani (ConnectionError); without a network, point "
        "compverify at a local copy with --data-dir DIR, cv.setup_local_data(DIR) or the COMPVERIFY_DATA variable"
    )


class LocalDownload:  # ir_datasets' name for the source that is a file already on disk
    pass


@pytest.mark.parametrize(
    "error, network",
    [
        (urllib.error.URLError("name resolution"), True),
        (urllib.error.HTTPError("https://x", 404, "Not Found", None, None), False),  # the server answered
        (OSError(28, "No space left on device"), False),
        (RuntimeError("All download sources failed", [("mirror", ConnectionRefusedError())]), True),
        (RuntimeError("All download sources failed", [("mirror", OSError("md5 mismatch"))]), False),  # a checksum
        # the local file is missing, the mirrors are out of reach: still no network
        (
            RuntimeError(
                "All download sources failed", [(LocalDownload(), FileNotFoundError()), ("m", TimeoutError())]
            ),
            True,
        ),
        (RuntimeError("something else"), False),
    ],
)
def test_only_a_missing_network_is_called_one(error, network):
    from pyterrier_compverify.datasets.local import network_error

    assert (network_error(error) is not None) == network


def test_d13_tsv_quotes_are_ordinary_characters_and_do_not_merge_rows(tmp_path):
    from pyterrier_compverify.training import load_triplets

    path = tmp_path / "m.tsv"
    path.write_text('anchor\tpositive\tnegative\n"a\tb\tc\nd\te"\tf\nh\ti\tj\n')
    rows = load_triplets(path)[["anchor", "positive", "negative"]].values.tolist()
    assert rows == [['"a', "b", "c"], ["d", 'e"', "f"], ["h", "i", "j"]]
    path.write_text('anchor\tpositive\tnegative\n"a\tb\tc\nd\te"\tf\tg\n')  # the review's: 4 cells in line 3
    with pytest.raises(ValueError, match="m.tsv: .*Expected 3 fields in line 3, saw 4"):
        load_triplets(path)


@pytest.mark.parametrize(
    "argv",
    [
        ["negatives", "out.jsonl", "--limit", "0"],
        ["negatives", "out.jsonl", "--limit", "-1"],
        ["nearmiss", "--limit", "0"],
        ["evaluate", "irds:cranfield", "--depth", "-1"],
        ["train-verifier", "r.jsonl", "out", "--steps", "0"],
        ["train-encoder", "out", "--batch-size", "0"],
        ["querygen", "p.jsonl", "out.jsonl", "--limit", "0"],
    ],
)
def test_d22_numeric_options_below_1_are_refused_at_parse_time(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_d22_a_negative_learning_rate_is_refused(tmp_path, capsys):
    err = _one_line_error(["train-verifier", "r.jsonl", str(tmp_path / "o"), "--head-lr", "-1"], capsys)
    assert "--head-lr must be positive" in err  # the option, not the Python argument


def test_d23_a_missing_input_file_is_reported_as_missing_not_as_an_unknown_dataset(tmp_path, capsys):
    missing = str(tmp_path / "nonexistent.txt")
    err = _one_line_error(["negatives", str(tmp_path / "out.jsonl"), "--sentences", missing], capsys)
    assert err == f"compverify negatives: error: no such file: {missing}"
    err = _one_line_error(["querygen", str(tmp_path / "p.jsonl"), str(tmp_path / "out.jsonl")], capsys)
    assert err == f"compverify querygen: error: no such file: {tmp_path / 'p.jsonl'}"


def test_d26_training_row_errors_name_the_file_line_and_cause(tmp_path):
    from pyterrier_compverify.training import load_triplets

    path = tmp_path / "rows.jsonl"
    path.write_text('{"anchor": "a", "positive": "b", "negative": "c"}\n{oops\n')
    with pytest.raises(ValueError, match=r"rows.jsonl, line 2: not valid JSON"):
        load_triplets(path)
    path.write_text('{"anchor": "a", "positive": 3, "negative": "c"}\n')
    with pytest.raises(ValueError, match=r"column 'positive' is not a string in 1 row\(s\), first row 0 \(3\)"):
        load_triplets(path)


# ---- issue 15 item 7: options a command ignores are not offered, or refused where they have no effect -----------
@pytest.mark.parametrize("command", ["demo", "train-verifier", "explain"])
def test_item7_commands_that_read_no_dataset_offer_no_data_dir(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "--data-dir" not in capsys.readouterr().out


IGNORED = [  # (argv, the one-line error); the files named do not exist: old code failed on them, not on the option
    (["train-verifier", "r.jsonl", "o", "--top-layers", "2"], "--top-layers has no effect with --mode frozen"),
    (["train-verifier", "r.jsonl", "o", "--mode", "end-to-end", "--top-layers", "2"], "with --mode end-to-end"),
    (["train-verifier", "r.jsonl", "o", "--encoder-lr", "1e-5"], "--encoder-lr has no effect with --mode frozen"),
    (["train-encoder", "o", "--edits", "e.jsonl"], "--edits has no effect with --recipe A"),
    (
        ["train-encoder", "o", "--edits", "e.jsonl", "--share", "0.2", "--positives", "paraphrase", "--balanced"],
        "--edits, --share, --positives, --balanced have no effect with --recipe A",
    ),
    (["querygen", "p.jsonl", "q.jsonl", "--base-url", "http://x"], "--base-url has no effect with --backend offline"),
    (["querygen", "p.jsonl", "q.jsonl", "--backend", "hf:m", "--base-url", "http://x"], "with --backend hf:m"),
    (["querygen", "p.jsonl", "q.jsonl", "--leakage", "0.5"], "--leakage has no effect without --test"),
    (
        ["nearmiss", "--scorers", "jaccard,jaccard-anti", "--model", "/no/model", "--max-length", "64"],
        "--model, --max-length have no effect with --scorers jaccard,jaccard-anti (they use no model)",
    ),
    (["nearmiss", "--distractors", "0", "--seed", "3", "--model", "/no/model"], "--seed has no effect with --dist"),
    (["evaluate", "irds:cranfield", "--fusion-depth", "200"], "--fusion-depth has no effect without --fusion"),
    (["evaluate", "irds:cranfield", "--fusion-head", "h"], "--fusion-head has no effect without --fusion"),
    (
        ["evaluate", "irds:cranfield", "--baseline", "Dense >> MaxSim", "--model", "/no/model"],
        "baseline 'Dense >> MaxSim' is none of the systems: BM25, Dense, BM25 >> MaxSim@100, Dense >> MaxSim@100",
    ),
]


@pytest.mark.parametrize("argv, message", IGNORED, ids=[" ".join(a[:1] + a[3:5]) for a, _ in IGNORED])
def test_item7_an_option_the_command_would_ignore_is_refused(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    err = _one_line_error(argv, capsys)
    assert err.startswith(f"compverify {argv[0]}: error: ") and message in err, err


def test_item7_negatives_refuses_a_seed_where_nothing_is_drawn(tmp_path, capsys):
    (tmp_path / "s.txt").write_text("the dog is on the mat\n")
    argv = ["negatives", str(tmp_path / "out.jsonl"), "--sentences", str(tmp_path / "s.txt"), "--all-edits"]
    err = _one_line_error([*argv, "--seed", "3"], capsys)
    assert err.endswith("--seed has no effect with --all-edits on a text file (nothing is drawn at random)")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train-encoder", "o", "--recipe", "B", "--edits", "e.jsonl", "--self-supervised", "0"], "at least 1"),
        (["nearmiss", "--distractors", "-1", "--model", "/no/model"], "must be at least 0, got -1"),
        (["querygen", "p.jsonl", "q.jsonl", "--validation", "0"], "must be above 0 and below 1, got 0.0"),
    ],
)
def test_item7_values_an_option_would_not_honour_are_refused_at_parse_time(
    argv, message, tmp_path, monkeypatch, capsys
):
    """``--self-supervised 0`` meant all title pairs, ``--distractors -1`` drew no distractors, ``--validation 0``
    still held out one passage."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_item7_mode_options_reach_the_training_config_where_they_apply(tmp_path, tiny_model_dir, monkeypatch):
    from pyterrier_compverify.training import verifier  # the command imports train_verifier from there when it runs

    seen = []
    monkeypatch.setattr(verifier, "train_verifier", lambda rows, out, *, config, **kw: seen.append(config) or (0, []))
    base = ["train-verifier", "r.jsonl", str(tmp_path / "o"), "--model", tiny_model_dir, "--max-length", "16"]
    main([*base, "--device", "cpu", "--mode", "last-layer", "--top-layers", "2", "--encoder-lr", "3e-5"])
    main([*base, "--device", "cpu", "--mode", "end-to-end", "--encoder-lr", "3e-5"])
    main([*base, "--device", "cpu"])
    assert [(c.mode, c.top_layers, c.encoder_lr) for c in seen] == [
        ("last-layer", 2, 3e-5),
        ("end-to-end", 1, 3e-5),
        ("frozen", 1, VerifierTrainingConfig().encoder_lr),
    ]


def test_item7_querygen_and_nearmiss_pass_the_options_they_use(tmp_path, monkeypatch):
    import functools

    from pyterrier_compverify import nearmiss_report
    from pyterrier_compverify.querygen import command

    seen = {}
    for module, name in ((command, "run_querygen"), (nearmiss_report, "run_nearmiss")):
        record = functools.wraps(getattr(module, name))(
            lambda *a, _name=name, **kw: seen.setdefault(_name, []).append(kw)
        )
        monkeypatch.setattr(module, name, record)  # wraps: the option defaults are read from its signature
    main(["querygen", "p.jsonl", "q.jsonl", "--backend", "openai:m", "--base-url", "http://x", "--test", "t.jsonl"])
    main(["querygen", "p.jsonl", "q.jsonl", "--test", "t.jsonl", "--leakage", "0.5"])
    main(["nearmiss", "--scorers", "jaccard"])
    main(["nearmiss", "--scorers", "jaccard,maxsim", "--max-length", "64", "--distractors", "5", "--seed", "3"])
    assert [kw.get("base_url") for kw in seen["run_querygen"]] == ["http://x", None]
    assert [kw.get("leakage") for kw in seen["run_querygen"]] == [None, 0.5]  # None: run_querygen's own default
    assert [(kw.get("max_length"), kw["distractors"], kw.get("seed")) for kw in seen["run_nearmiss"]] == [
        (None, 20, None),
        (64, 5, 3),
    ]


# ---- review 49-f: what a new user of each command met ----------------------------------------------------------


def test_train_encoder_checks_device_model_and_length_before_out_is_made(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "te"
    base = ["train-encoder", str(out), "--steps", "1", "--self-supervised", "8", "--batch-size", "4"]
    err = _one_line_error([*base, "--device", "foo"], capsys)
    assert err.startswith("compverify train-encoder: error: device 'foo' is not a torch device")
    err = _one_line_error([*base, "--model", "nosuch-org/nosuch-model", "--device", "cpu"], capsys)
    assert "cannot load the encoder 'nosuch-org/nosuch-model'" in err
    err = _one_line_error([*base, "--model", tiny_model_dir, "--max-length", "0", "--device", "cpu"], capsys)
    assert err.endswith("--max-length must be a whole number of tokens >= 2, not 0")  # the option, not the argument
    assert not out.exists()  # a half-made OUT used to stay behind
    (tmp_path / "edits.jsonl").write_text('{"anchor": "a", "positive": "b", "negative": "c"}\n')
    err = _one_line_error([*base, "--recipe", "B", "--edits", str(tmp_path / "edits.jsonl")], capsys)
    assert "missing column(s) ['category', 'sentence1', 'sentence2']" in err and "compverify negatives" in err


def test_negatives_and_querygen_refuse_an_existing_output_and_make_its_folder(tmp_path, capsys):
    pytest.importorskip("spacy")
    (tmp_path / "s.txt").write_text("The cat is on the mat.\n")
    out = tmp_path / "new" / "e.jsonl"  # a folder that is not there yet: made, not a traceback
    main(["negatives", str(out), "--sentences", str(tmp_path / "s.txt")])
    assert out.is_file()
    err = _one_line_error(["negatives", str(out), "--sentences", str(tmp_path / "s.txt")], capsys)
    assert err.endswith("e.jsonl: already written; pass overwrite=True (--overwrite) or choose another output")
    main(["negatives", str(out), "--sentences", str(tmp_path / "s.txt"), "--overwrite"])
    passages = tmp_path / "p.jsonl"
    passages.write_text('{"docno": "d1", "text": "A dog runs on the beach."}\n')
    err = _one_line_error(["querygen", str(passages), str(tmp_path / "q.tsv")], capsys)
    assert "q.tsv: write .jsonl or .csv" in err
    err = _one_line_error(["querygen", str(passages), str(tmp_path / "q.jsonl"), "--test", str(passages),
                           "--leakage", "-1"], capsys)  # fmt: skip
    assert err.endswith("leakage is a ROUGE-L threshold in [0, 1], got -1.0")


def test_nearmiss_and_explain_outputs_are_checked_before_any_model_loads(tmp_path, capsys):
    err = _one_line_error(["nearmiss", "--scorers", "jaccard", "--out", str(tmp_path)], capsys)
    assert err.endswith(f"--out {tmp_path} is a folder; give a file stem inside it, e.g. {tmp_path / 'nearmiss'}")
    pytest.importorskip("matplotlib")
    err = _one_line_error(["explain", "a cat", "a dog", "--model", "/no/model", "--out", str(tmp_path / "m")], capsys)
    assert "give a .png, .pdf or .svg file" in err  # before the (missing) model is loaded


def test_an_llm_backend_that_cannot_be_reached_is_one_line(tmp_path, monkeypatch, capsys):
    from pyterrier_compverify.querygen import command

    def unreachable(*args, **kwargs):
        raise ConnectionError("could not get a completion from the LLM endpoint at http://localhost:1/v1: refused")

    monkeypatch.setattr(command, "generate_queries", unreachable)
    passages = tmp_path / "p.jsonl"
    passages.write_text('{"docno": "d1", "text": "A dog runs on the beach."}\n')
    argv = ["querygen", str(passages), str(tmp_path / "q.jsonl"), "--backend", "openai:m", "--strategy", "SM"]
    err = _one_line_error([*argv, "--base-url", "http://localhost:1/v1"], capsys)
    assert err.endswith("could not get a completion from the LLM endpoint at http://localhost:1/v1: refused")
    err = _one_line_error(["querygen", str(passages), str(tmp_path / "q.jsonl"), "--backend", "hf:nosuch/model",
                           "--strategy", "SM"], capsys)  # fmt: skip
    assert "cannot load the language model 'nosuch/model': no such folder" in err


def test_an_unknown_dataset_id_for_training_data_gets_the_hint(tmp_path, capsys):
    err = _one_line_error(["querygen", "cranfeild", str(tmp_path / "q.jsonl")], capsys)
    assert err == "compverify querygen: error: unknown dataset 'cranfeild'; did you mean irds:cranfield?"
    (tmp_path / "afile").write_text("x")
    err = _one_line_error(["demo", "--folder", str(tmp_path / "afile")], capsys)
    assert err.endswith("afile is a file; give a folder (made if missing) for the demo's files")
