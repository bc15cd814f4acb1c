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
