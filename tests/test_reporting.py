"""Evaluation tables: the summary (measures marked where p < 0.05) and the markdown report."""

from __future__ import annotations

import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import nDCG

from pyterrier_compverify.reporting import evaluation_markdown, summary_table


def _run(rows):
    return pt.model.add_ranks(pd.DataFrame(rows, columns=["qid", "docno", "score"]))


def test_summary_table_reads_the_measures_and_marks_significance():
    results = pd.DataFrame(
        {"name": ["BM25", "Dense"], "nDCG@10": [0.5, 0.25], "nDCG@10 +": [1, None], "nDCG@10 p-value": [0.01, None]}
    )
    table = summary_table(results)
    assert list(table.columns) == ["name", "nDCG@10"] and table["nDCG@10"].tolist() == ["0.5000*", "0.2500"]


def test_summary_table_marks_the_corrected_p_value_where_the_experiment_has_one():
    from pyterrier_compverify.reporting import significance_note, with_correction

    # 12 queries; b finds the relevant document for 7 more than the baseline a (t-test p 0.0024), c and d for 4
    # more (p 0.039 each); Holm over the three comparisons keeps b (3 x 0.0024) and drops c and d (2 x 0.039);
    # e equals the baseline on every query (p NaN), which is not a comparison
    qrels = pd.DataFrame({"qid": [str(q) for q in range(12)], "docno": "rel", "label": 1})
    topics = pd.DataFrame({"qid": [str(q) for q in range(12)], "query": "x"})
    found = {"a": range(0), "b": range(7), "c": range(4), "d": range(4, 8), "e": range(0)}
    runs = [_run([(str(q), "rel" if q in hits else "other", 1.0) for q in range(12)]) for hits in found.values()]
    plain = pt.Experiment(runs, topics, qrels, [nDCG @ 10], names=list(found), baseline=0)
    holm = with_correction(plain, "holm")
    assert plain["nDCG@10 p-value"].iloc[1:4].lt(0.05).all() and pd.isna(plain["nDCG@10 p-value"].iloc[4])
    assert summary_table(plain)["nDCG@10"].tolist() == ["0.0000", "0.5833*", "0.3333*", "0.3333*", "0.0000"]
    table = summary_table(holm)
    assert list(table.columns) == ["name", "nDCG@10"]  # the corrected column is not a measure
    assert table["nDCG@10"].tolist() == ["0.0000", "0.5833*", "0.3333", "0.3333", "0.0000"]
    assert holm["nDCG@10 p-value corrected"].iloc[1] == pytest.approx(3 * plain["nDCG@10 p-value"].iloc[1])
    assert summary_table(with_correction(plain, "fdr_bh"))["nDCG@10"].iloc[1] == "0.5833*"  # not NaN for all
    assert significance_note(plain) == "paired t-test p < 0.05"
    assert significance_note(holm) == "paired t-test p < 0.05 after the holm correction"


def test_evaluation_markdown_with_query_types():
    qrels = pd.DataFrame({"qid": ["1", "2"], "docno": ["a", "b"], "label": [1, 1]})
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["x", "y"]})
    runs = {"BM25": _run([("1", "a", 1.0), ("2", "z", 1.0)]), "Dense": _run([("1", "q", 1.0), ("2", "b", 1.0)])}
    results = pt.Experiment(list(runs.values()), topics, qrels, [nDCG @ 10], names=list(runs))
    text = evaluation_markdown(results, ["nDCG@10"], runs, topics, qrels, {"1": "object", "2": "event"})
    assert text.index("| name") < text.index("## nDCG@10 per query type") < text.index("## Misses")
    assert text.rstrip().endswith("|") and "## All columns" in text


def test_write_table_keeps_a_dot_in_the_stem(tmp_path):
    from pyterrier_compverify.reporting import write_table

    table = pd.DataFrame({"system": ["MaxSim"], "nDCG@10": [0.5]})
    for stem in ("dev-tau0.05", "dev-tau0.1", "plain.md"):
        write_table(table, tmp_path / stem, "t", None, 1.0)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"{s}.{x}" for s in ("dev-tau0.05", "dev-tau0.1", "plain") for x in ("json", "md")]


def test_write_table_keeps_small_p_values(tmp_path):
    import json

    from pyterrier_compverify.reporting import write_table

    table = pd.DataFrame({"name": ["a", "b"], "n": [3, 4], "p": [3.5e-11, float("nan")], "inf": [float("inf"), 1.5]})
    write_table(table, tmp_path / "run", "t", None, 1.0)
    rows = json.loads((tmp_path / "run.json").read_text())["results"]  # strict JSON: no NaN or Infinity tokens
    assert rows == [
        {"name": "a", "n": 3, "p": 3.5e-11, "inf": None},  # to_json wrote p as 0.0
        {"name": "b", "n": 4, "p": None, "inf": 1.5},
    ]


def test_refuse_overwrite_stops_on_either_file_of_the_pair_however_the_stem_is_written(tmp_path):
    from pyterrier_compverify.reporting import refuse_overwrite, write_table

    refuse_overwrite(tmp_path / "run", overwrite=False)  # nothing written yet: no stop
    write_table(pd.DataFrame({"a": [1]}), tmp_path / "run", "t", None, 1.0)
    for stem in ("run", "run.md", "run.json"):
        with pytest.raises(SystemExit, match=r"run\.md and .*run\.json: already written; pass --overwrite"):
            refuse_overwrite(tmp_path / stem, overwrite=False)
        refuse_overwrite(tmp_path / stem, overwrite=True)
    (tmp_path / "run.md").unlink()  # the JSON alone still counts
    with pytest.raises(SystemExit, match=r"run\.json: already written"):
        refuse_overwrite(tmp_path / "run", overwrite=False)


def test_an_output_folder_that_cannot_be_made_is_refused_before_any_work(tmp_path, capsys):
    from pyterrier_compverify.cli import main
    from pyterrier_compverify.reporting import refuse_overwrite

    (tmp_path / "afile").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"cannot write results under .*afile/sub: .*afile is a file"):
        refuse_overwrite(tmp_path / "afile" / "sub" / "run", overwrite=False, error=FileExistsError)  # the package
    with pytest.raises(SystemExit, match=r"cannot write results under .*afile/sub: .*afile is a file"):
        refuse_overwrite(tmp_path / "afile" / "sub" / "run", overwrite=False)  # a script: a message, no traceback
    refuse_overwrite(tmp_path / "new" / "deeper" / "run", overwrite=False)  # folders that can be made: no stop
    assert not (tmp_path / "new").exists()  # and nothing made by the check
    with pytest.raises(SystemExit):  # the command: one line, before the scorers load or the triplets are read
        main(["nearmiss", "--scorers", "jaccard", "--limit", "2", "--out", str(tmp_path / "afile" / "nm")])
    err = capsys.readouterr().err.strip()
    assert err.startswith("compverify nearmiss: error: cannot write results under") and "\n" not in err


# Every script that writes committed results, with arguments whose default --out is committed: each must stop before
# any work (the guard runs before data or models load, so a refusal takes well under a second of the script's time).
GUARDED = [
    ("experiments/antonym_probe.py", []),
    ("experiments/biencoders.py", []),
    ("experiments/capretrieval.py", []),
    ("experiments/capretrieval_best.py", ["--stage", "test"]),
    ("experiments/capretrieval_best.py", ["--stage", "dev"]),
    ("experiments/capretrieval_errors.py", ["sample"]),
    ("experiments/capretrieval_errors.py", ["summarise"]),
    ("experiments/caption_edits.py", []),
    ("experiments/caption_edits_reread.py", ["summarise"]),
    ("experiments/chinese_bm25.py", []),
    ("experiments/condaqa_contrast.py", []),
    ("experiments/condaqa_errors.py", ["sample"]),
    ("experiments/condaqa_errors.py", ["summarise"]),
    ("experiments/condaqa_map_evidence.py", []),
    ("experiments/cross_encoder.py", ["evaluate"]),
    ("experiments/cross_encoder.py", ["seeds", "--tag", "cover", "--weight", "0.25"]),
    ("experiments/hybrid.py", []),
    ("experiments/judged_dev.py", ["sample"]),
    ("experiments/judged_dev.py", ["summarise"]),
    ("experiments/idf_maxsim.py", ["--stage", "test"]),
    ("experiments/long_passage_probe.py", ["--out", "experiments/results/long-passage-probe"]),
    ("experiments/negatives_quality.py", ["edits.jsonl"]),
    ("experiments/reworded_negations.py", ["sample"]),
    ("experiments/reworded_negations.py", ["precision"]),
    ("experiments/soft_and.py", []),
    ("experiments/store_codecs.py", []),
    ("experiments/token_weights.py", ["--stage", "test"]),
    ("experiments/verifiers.py", []),
    ("experiments/verifier_training.py", ["kinds", "--names", "x", "--out", "experiments/results/verifiers"]),
    ("experiments/weighted_fusion.py", []),
    ("experiments/wordnet_signal.py", []),
    ("experiments/wordnet_seeds.py", ["--weight", "0.1"]),
    ("benchmarks/cold.py", []),
    ("benchmarks/encode.py", []),
    ("benchmarks/fusion_bm25.py", []),
    ("benchmarks/load.py", []),
    ("benchmarks/mapverifier.py", []),
    ("benchmarks/maxsim_store.py", []),
    ("benchmarks/verifier_training.py", []),
    ("benchmarks/query_once.py", []),
]


@pytest.mark.parametrize(
    "script,argv",
    [
        ("experiments/caption_edits_reread.py", ["sample"]),
        ("experiments/negatives_reread.py", ["sample", "table.jsonl"]),
    ],
)
def test_a_drawn_reading_sample_is_never_drawn_again(script, argv, monkeypatch):
    import runpy
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root / Path(script).parent))
    monkeypatch.setattr(sys, "argv", [script, *argv])
    with pytest.raises(SystemExit, match="already drawn"):
        runpy.run_path(str(root / script), run_name="__main__")


@pytest.mark.parametrize("script,argv", GUARDED, ids=[" ".join([s, *a][:2]) for s, a in GUARDED])
def test_each_results_script_refuses_its_committed_default_out(script, argv, monkeypatch):
    import runpy
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)  # the defaults are relative to the repository root
    monkeypatch.syspath_prepend(str(root / Path(script).parent))  # benchmarks import their sibling helpers
    monkeypatch.setattr(sys, "argv", [script, *argv])
    with pytest.raises(SystemExit, match="already written; pass --overwrite or choose another output"):
        runpy.run_path(str(root / script), run_name="__main__")


def test_a_table_write_that_fails_leaves_no_empty_file(tmp_path, monkeypatch):
    """A full disk left a 0-byte .json that the next run refused as already written (review 50-f), or a .json
    without its .md (review 50-h)."""
    import errno
    import tempfile

    import pandas as pd

    from pyterrier_compverify.reporting import write_table

    real, calls = tempfile.mkstemp, []

    def full(*args, **kwargs):  # the .json is written, then the disk is full for the .md
        calls.append(1)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", full)
    with pytest.raises(OSError, match="No space left"):
        write_table(pd.DataFrame({"a": [1.0]}), tmp_path / "t", "title", None, 0.0)
    assert list(tmp_path.iterdir()) == []
