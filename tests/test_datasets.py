import pyterrier as pt
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import capretrieval, load_collection
from pyterrier_compverify.evaluate import strip_punctuation


def test_setup_local_data_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPVERIFY_DATA", raising=False)
    monkeypatch.setattr("pyterrier_compverify.datasets.local._data_dir", None)
    with pytest.raises(ValueError, match="COMPVERIFY_DATA"):
        cv.setup_local_data()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        cv.setup_local_data(tmp_path / "absent")


def test_a_data_folder_moved_since_it_was_linked_is_linked_again(tmp_path):
    from pyterrier_compverify.datasets.local import _place

    old, new, home = tmp_path / "old", tmp_path / "new", tmp_path / "home"
    for folder in (old, new):
        folder.mkdir()
        (folder / "source.zip").write_text(folder.name)
    assert _place(old / "source.zip", home / "source.zip")
    (old / "source.zip").unlink()  # the old data folder lost the file (or was deleted): the link dangles
    assert _place(new / "source.zip", home / "source.zip")
    assert (home / "source.zip").read_text() == "new" and not (old / "source.zip").exists()
    assert not _place(old / "source.zip", home / "source.zip")  # a working link is kept


def test_a_missing_data_folder_in_the_variable_warns_on_import_and_names_the_variable(tmp_path):
    import subprocess
    import sys

    env = {**__import__("os").environ, "COMPVERIFY_DATA": str(tmp_path / "gone"), "HF_HUB_OFFLINE": "1"}
    code = "import pyterrier_compverify; print('imported')"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "imported"
    assert f"data folder {tmp_path / 'gone'} (COMPVERIFY_DATA) does not exist" in done.stderr


def test_collection_names():
    assert load_collection("irds:beir/scifact/test").name == "beir-scifact-test"
    c = load_collection("compverify/capretrieval/en")
    assert c.dataset_id == "irds:compverify/capretrieval/en" and c.lowercase


def test_documents_whose_text_is_in_another_field_keep_it():
    """MS MARCO documents, WaPo and GOV2 call the text ``body``, CORD-19 ``abstract``, NYT the title ``headline``."""
    c = load_collection("irds:msmarco-document/trec-dl-2019")
    corpus = [
        {"docno": "D1", "url": "u", "title": "Aspirin", "body": "Aspirin reduces fever."},
        {"docno": "D2", "headline": "Fever", "body": "A fever is a high temperature."},
        {"docno": "D3", "title": "", "doi": "x", "abstract": "Abstract text."},
        {"docno": "D4", "title": "Both", "text": "the text field wins", "body": "not this"},
    ]
    assert [d["text"] for d in c._title_and_text(corpus)] == [
        "Aspirin Aspirin reduces fever.",
        "Fever A fever is a high temperature.",
        "Abstract text.",
        "Both the text field wins",
    ]
    with pytest.raises(ValueError, match=r"document 'D5' has none of the text fields text, .* \(it has: url, html\)"):
        list(c._title_and_text([{"docno": "D5", "url": "u", "html": "<p>"}]))


@pytest.mark.integration
def test_scifact_train_without_the_claims_it_repeats_from_test(data_dir):
    """BEIR SciFact train repeats two test claims word for word; train rows and dev splits leave them out."""
    train = load_collection("irds:beir/scifact/train")
    kept = train.topics_outside("irds:beir/scifact/test")
    dropped = set(train.topics()["query"]) - set(kept["query"])
    assert len(kept) == 807 and dropped == {
        "Obesity decreases life quality.",
        "There is no association between HNF4A mutations and diabetes risks.",
    }


def test_query_key_ignores_case_and_spacing():
    from pyterrier_compverify.datasets.collection import query_key

    assert query_key("  Obesity  decreases\tLIFE quality.") == query_key("obesity decreases life quality.")
    assert query_key("a b") != query_key("ab")


def test_strip_punctuation_keeps_words_and_non_latin():
    assert strip_punctuation("0-dimensional biomaterials?") == "0 dimensional biomaterials"
    assert strip_punctuation("猫, 狗") == "猫 狗"


@pytest.mark.integration
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_capretrieval_through_pyterrier(data_dir, lang):
    ds = pt.get_dataset(f"irds:compverify/capretrieval/{lang}")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert len(topics) == 377  # 404 minus the 27 without positives
    assert set(qrels["label"]) == {1, 2} and set(qrels["qid"]) == set(topics["qid"])
    assert sum(1 for _ in ds.get_corpus_iter(verbose=False)) == 3024


@pytest.mark.integration
def test_capretrieval_query_types(data_dir):
    types = capretrieval.query_types()
    assert len(types) == 377
    counts = {t: list(types.values()).count(t) for t in set(types.values())}
    assert counts["singleton_object"] > 100 and counts["conjunction"] == 21  # "+" matched to spaces
    assert counts.get("unknown", 0) <= 1


@pytest.mark.integration
@pytest.mark.parametrize(
    ("dataset_id", "n_topics", "n_docs"),
    [("irds:beir/scifact/test", 300, 5183), ("irds:cranfield", 225, 1400), ("vaswani", 93, 11429)],
)
def test_local_collections_load(data_dir, dataset_id, n_topics, n_docs):
    c = load_collection(dataset_id)
    assert len(c.topics()) == n_topics
    assert (c.qrels()["label"] >= 0).all()
    assert sum(1 for _ in c.corpus_iter()) == n_docs


def test_error_view_and_per_type_table():
    import pandas as pd

    from pyterrier_compverify.evaluate import by_query_type, error_view

    qrels = pd.DataFrame({"qid": ["1", "2", "3"], "docno": ["a", "b", "c"], "label": [2, 1, 2]})
    topics = pd.DataFrame({"qid": ["1", "2", "3"], "query": ["x", "y", "z"]})

    def run(rows):
        frame = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        return pt.model.add_ranks(frame)

    bm25 = run([("1", "a", 2.0), ("2", "z", 1.0), ("3", "c", 1.0)])
    dense = run([("1", "q", 2.0), ("2", "b", 1.0), ("3", "z", 1.0)])
    types = {"1": "object", "2": "object", "3": "event"}
    errors = error_view({"BM25": bm25, "Dense": dense}, qrels, types)
    assert errors.loc[("Dense", "literal miss"), "object"] == 1  # q1: BM25 found a, dense did not
    assert errors.loc[("Dense", "literal miss"), "event"] == 1
    assert ("Dense", "other miss") not in errors.index
    table = by_query_type({"BM25": bm25, "Dense": dense}, topics, qrels, types)
    assert table.loc["object", "queries"] == 2 and table.loc["event", "Dense"] == 0.0
    assert table.loc["object", "BM25"] == 0.5


@pytest.mark.integration
@pytest.mark.parametrize("dataset_id", ["irds:compverify/capretrieval/en", "irds:compverify/nearmiss/sugarcrepe"])
def test_get_text_reads_the_registered_collections(data_dir, dataset_id):
    """pt.text.get_text needs ir_datasets' docs_store(), which the registered collections lacked (review 50-g)."""
    import pandas as pd

    ds = pt.get_dataset(dataset_id)
    first = next(iter(ds.get_corpus_iter(verbose=False)))
    run = pd.DataFrame({"qid": ["1"], "query": ["x"], "docno": [first["docno"]], "score": [1.0], "rank": [0]})
    assert pt.text.get_text(ds, "text")(run)["text"].tolist() == [first["text"]]


def test_an_opened_collection_pickles_and_opens_its_dataset_again(monkeypatch):
    """Opened, its ir_datasets reader made it unpicklable, and so a pipeline with CorpusText for pt.parallel."""
    import pickle

    import pyterrier as pt

    from pyterrier_compverify.datasets import CorpusText
    from pyterrier_compverify.datasets.collection import Collection

    opened = []
    monkeypatch.setattr(pt, "get_dataset", lambda dataset_id: opened.append(dataset_id) or (lambda: None))
    collection = Collection("irds:some/dataset", lowercase=True)
    assert callable(collection.dataset)  # opened: a lambda stands for a reader that cannot be pickled
    copy = pickle.loads(pickle.dumps(CorpusText(collection))).collection
    assert (copy.dataset_id, copy.lowercase, "dataset" in copy.__dict__) == ("irds:some/dataset", True, False)
    assert callable(copy.dataset) and opened == ["irds:some/dataset"] * 2


def test_corpus_text_asks_a_docstore_for_the_frames_docnos_only(monkeypatch):
    """It read and held a whole corpus in memory; a Collection of an ir_datasets dataset has a docstore."""
    from collections import namedtuple

    import pandas as pd
    import pyterrier as pt

    from pyterrier_compverify.datasets import CorpusText
    from pyterrier_compverify.datasets.collection import Collection

    Doc = namedtuple("Doc", ["doc_id", "title", "text"])
    asked = []

    class Store:
        def get_many(self, ids):
            asked.append(sorted(ids))
            docs = {"a": Doc("a", "A Title", "Some Text"), "b": Doc("b", "", "Other")}
            return {i: docs[i] for i in ids if i in docs}

    class Dataset:
        def irds_ref(self):
            return type("Ref", (), {"docs_store": lambda self: Store()})()

        def get_corpus_iter(self, verbose=False):
            raise AssertionError("the whole corpus was read")

    monkeypatch.setattr(pt, "get_dataset", lambda dataset_id: Dataset())
    loader = CorpusText(Collection("irds:some/dataset", lowercase=True))
    out = loader(pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["b", "a", "a"]}))
    assert out["text"].tolist() == ["other", "a title some text", "a title some text"] and asked == [["a", "b"]]
    with pytest.raises(KeyError, match=r"has no document \['zz'\]"):
        loader(pd.DataFrame({"qid": ["1"], "docno": ["zz"]}))
    assert "_docstore" in loader.collection.__dict__ and len(asked) == 2  # opened once, asked per frame

    class NoLookups(Store):
        def get_many(self, ids):
            raise NotImplementedError

    corpus = [{"docno": "a", "title": "", "text": "Read Whole"}]
    monkeypatch.setattr(Store, "get_many", NoLookups.get_many)
    monkeypatch.setattr(Dataset, "get_corpus_iter", lambda self, verbose=False: iter(corpus))
    whole = CorpusText(Collection("irds:some/dataset"))(pd.DataFrame({"qid": ["1"], "docno": ["a"]}))
    assert whole["text"].tolist() == ["Read Whole"]  # no lookups: the corpus is read once, as before


@pytest.mark.integration
@pytest.mark.parametrize("dataset_id", ["irds:cranfield", "compverify/capretrieval/en", "irds:beir/scifact/test"])
def test_a_collections_docstore_gives_the_texts_of_its_corpus_iterator(data_dir, dataset_id):
    from pyterrier_compverify.datasets import load_collection

    collection = load_collection(dataset_id)
    every = {doc["docno"]: doc["text"] for doc in collection.corpus_iter()}
    assert collection.texts_of(list(every)) == every
