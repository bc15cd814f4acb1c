"""``irds:nano-beir/<name>`` offline: a tiny fixture written here in the layout of the hub datasets
(``NanoSciFact/{corpus,queries,qrels}/train-00000-of-00001.parquet``) goes through ``cv.setup_local_data``, PyTerrier's
dataset API and ``compverify evaluate``'s pipelines. The fixture is a handful of made-up sentences, not NanoBEIR:
no test here says anything about NanoBEIR's numbers.

ir_datasets fixes where a dataset's downloads live when it is imported, so the end-to-end test runs in a fresh
Python with its own ``IR_DATASETS_HOME``: nothing is written to the real ir_datasets home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_compverify.datasets import nanobeir

DOCS = [
    ("f1", "a dog chases a cat in the garden"),
    ("f2", "the cat sleeps under the table"),
    ("f3", "protein folding in the cell"),
    ("f4", "a gene regulates the protein"),
    ("f5", "the man greeted the tall woman"),
    ("f6", "red and blue cells in the blood"),
]
QUERIES = [("q1", "dog chases cat"), ("q2", "gene protein")]
QRELS = [("q1", "f1"), ("q2", "f4"), ("q2", "f3")]
FILE = "train-00000-of-00001.parquet"


def write_snapshot(folder: Path, repo: str = "NanoSciFact", parts=("corpus", "queries", "qrels")) -> Path:
    """The three parquet files of a NanoBEIR hub dataset, with the columns ir_datasets reads from them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = {
        "corpus": pa.table({"_id": [d for d, _ in DOCS], "text": [t for _, t in DOCS]}),
        "queries": pa.table({"_id": [q for q, _ in QUERIES], "text": [t for _, t in QUERIES]}),
        "qrels": pa.table({"query-id": [q for q, _ in QRELS], "corpus-id": [d for _, d in QRELS]}),
    }
    for part in parts:
        (folder / repo / part).mkdir(parents=True, exist_ok=True)
        pq.write_table(tables[part], folder / repo / part / FILE)
    return folder


def test_hub_files_follow_ir_datasets_download_table():
    files = {(f.name, f.cache_path): f for f in nanobeir.hub_files()}
    assert len(nanobeir.names()) == 13 and "scifact" in nanobeir.names()
    corpus = files["scifact", "scifact/corpus.parquet"]
    assert (corpus.repo, corpus.path_in_repo) == ("zeta-alpha-ai/NanoSciFact", f"corpus/{FILE}")
    assert corpus.local_source(Path("/data")) == Path(f"/data/NanoSciFact/corpus/{FILE}")
    assert len(files) == 3 * 13  # corpus, queries, qrels of each


def test_link_local_copies_places_files_where_ir_datasets_looks(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    snapshots = write_snapshot(tmp_path / "nanobeir")
    assert nanobeir.link_local_copies(snapshots) == ["scifact"]
    for part in ("corpus", "queries", "qrels"):
        placed = tmp_path / "home" / "nano-beir" / "scifact" / f"{part}.parquet"
        assert placed.resolve() == (snapshots / "NanoSciFact" / part / FILE).resolve()
    assert nanobeir.link_local_copies(snapshots) == ["scifact"]  # again: files already there are kept


def test_an_incomplete_snapshot_names_the_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    snapshots = write_snapshot(tmp_path / "nanobeir", repo="NanoNFCorpus", parts=("corpus", "queries"))
    with pytest.raises(FileNotFoundError, match=r"NanoNFCorpus/qrels/train-00000-of-00001\.parquet"):
        nanobeir.link_local_copies(snapshots)
    assert not (tmp_path / "home" / "nano-beir" / "nfcorpus").exists()  # nothing half-linked
    write_snapshot(snapshots, repo="NanoSciFact")  # after nfcorpus in name order: linked all the same
    with pytest.raises(FileNotFoundError, match=r"NanoNFCorpus/qrels/.*\(linked: scifact\)$"):
        nanobeir.link_local_copies(snapshots)
    assert (tmp_path / "home" / "nano-beir" / "scifact" / "qrels.parquet").exists()


RUN = """
import json, sys
import pyterrier as pt
import pyterrier_compverify as cv
from pyterrier_compverify.evaluate import run_evaluation

model, index_dir = sys.argv[1], sys.argv[2]
dataset = pt.get_dataset("irds:nano-beir/scifact")
docs = list(dataset.get_corpus_iter(verbose=False))
results = run_evaluation("irds:nano-beir/scifact", model=model, device="cpu", index_dir=index_dir, out_dir=None,
                         verbose=False)
print(json.dumps({
    "docs": [[d["docno"], d["text"]] for d in docs],
    "topics": dataset.get_topics()[["qid", "query"]].values.tolist(),
    "qrels": dataset.get_qrels()[["qid", "docno", "label"]].values.tolist(),
    "systems": results["name"].tolist(),
    "ndcg": results["nDCG@10"].tolist(),
}))
"""


def test_nano_beir_ids_work_offline_with_evaluate(tmp_path, tiny_model_dir):
    """``COMPVERIFY_DATA`` with a ``nanobeir/`` folder: the id loads offline and ``run_evaluation`` (what
    ``compverify evaluate`` runs) gives BM25, dense and dense >> MaxSim over it."""
    data = tmp_path / "data"
    write_snapshot(data / "nanobeir")
    env = {
        **os.environ,
        "COMPVERIFY_DATA": str(data),
        "IR_DATASETS_HOME": str(tmp_path / "irds"),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", RUN, tiny_model_dir, str(tmp_path / "indices")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["docs"] == [list(d) for d in DOCS]
    assert out["topics"] == [list(q) for q in QUERIES]
    assert sorted(out["qrels"]) == sorted([q, d, 1] for q, d in QRELS)
    assert out["systems"] == ["BM25", "Dense", "BM25 >> MaxSim@100", "Dense >> MaxSim@100"]
    assert out["ndcg"][0] > 0.5  # BM25 finds the fixture's word-overlap answers
