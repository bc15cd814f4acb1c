"""One way to read any collection this project evaluates on: corpus iterator, topics and qrels."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

import pandas as pd
import pyterrier as pt

from ..artifacts import SizedIterator, corpus_length

# a document's text and title fields, the first present used: ir_datasets names them by collection (BEIR and
# Cranfield "text", MS MARCO documents, WaPo and GOV2 "body", CORD-19 "abstract", NYT "headline" and "body")
TEXT_FIELDS = ("text", "body", "abstract", "contents", "passage")
TITLE_FIELDS = ("title", "headline")
# collections whose text the papers lower-case before evaluation
_LOWERCASE_PREFIXES = ("irds:compverify/capretrieval/",)


@contextmanager
def network_hint(dataset_id: str):
    """Turn a download of the dataset that found no network (:func:`.local.network_error`) into the one-line
    FileNotFoundError that names ``--data-dir`` and ``COMPVERIFY_DATA`` (and NanoBEIR's local layout)."""
    from .local import network_error, offline_error

    try:
        yield
    except (RuntimeError, OSError) as e:
        if network_error(e) is None:
            raise
        name = dataset_id.removeprefix("irds:")
        layout = " (NanoBEIR: DIR/nanobeir/Nano<Name>/{corpus,queries,qrels}/...)" if name.startswith("nano-") else ""
        raise offline_error(dataset_id, e, layout) from None


@dataclass
class Collection:
    """A PyTerrier dataset with the project's text conventions.

    Documents are ``title + " " + text`` where a title exists (the first of ``TITLE_FIELDS`` and ``TEXT_FIELDS``
    present: ``body``, ``abstract``, ``headline``, ... in collections that name them so); CapRetrieval is
    lower-cased as in the paper; qrels labels below 0 (Cranfield's -1) become 0; queries without any relevant
    document stay in the topics only if the dataset keeps them (CapRetrieval drops them).
    """

    dataset_id: str
    lowercase: bool = False

    @cached_property
    def dataset(self):
        return pt.get_dataset(self.dataset_id)

    @cached_property
    def _docstore(self):
        """The dataset's ir_datasets docstore, opened once; None where it has none (Vaswani, other datasets)."""
        if self.dataset_id == "vaswani":
            return None
        try:
            return self.dataset.irds_ref().docs_store()
        except (AttributeError, NotImplementedError):
            return None

    def __getstate__(self) -> dict:
        """Pickled without the opened dataset and docstore, which ir_datasets' readers cannot be: they are opened
        again from the id where they are next used (a ``pt.parallel`` worker running ``CorpusText``)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("dataset", "_docstore")}

    @property
    def name(self) -> str:
        """A file-name-safe version of the id, e.g. ``beir-scifact-test``."""
        return re.sub(r"[^A-Za-z0-9]+", "-", self.dataset_id.removeprefix("irds:")).strip("-")

    @property
    def language(self) -> str:
        """``zh`` for the Chinese CapRetrieval, else ``en``: BM25 segments Chinese with jieba."""
        return "zh" if self.dataset_id.endswith("capretrieval/zh") else "en"

    def _text(self, text: str) -> str:
        return text.lower() if self.lowercase else text

    def corpus_iter(self) -> Iterator[dict]:
        """Dicts with ``docno`` and ``text``; with a ``len`` where the dataset knows its size (progress totals). A
        download that fails for want of a network, now or while iterating, is a one-line FileNotFoundError
        (:func:`network_hint`)."""
        with network_hint(self.dataset_id):  # PyTerrier's Vaswani downloads here, ir_datasets' on a first document
            if self.dataset_id == "vaswani":
                return _vaswani_docs(self.dataset.get_corpus()[0], self._text)
            corpus = self.dataset.get_corpus_iter(verbose=False)
            total = corpus_length(corpus)
        docs = self._downloading(self._title_and_text(corpus))
        return docs if total is None else SizedIterator(docs, total)

    def _downloading(self, docs: Iterator[dict]) -> Iterator[dict]:
        with network_hint(self.dataset_id):  # ir_datasets downloads a corpus on its first document
            yield from docs

    def _title_and_text(self, corpus) -> Iterator[dict]:
        for doc in corpus:
            title = (next((doc[f] for f in TITLE_FIELDS if doc.get(f)), "") or "").strip()
            field = next((f for f in TEXT_FIELDS if f in doc), None)
            if field is None:
                fields = ", ".join(k for k in doc if k != "docno")
                raise ValueError(
                    f"{self.dataset_id}: document {doc['docno']!r} has none of the text fields "
                    f"{', '.join(TEXT_FIELDS)} (it has: {fields})"
                )
            body = doc[field] or ""
            yield {"docno": doc["docno"], "text": self._text(f"{title} {body}".strip() if title else body)}

    def texts_of(self, docnos) -> dict[str, str] | None:
        """docno -> text (as :meth:`corpus_iter` gives it) of ``docnos``, read from the ir_datasets docstore, so
        that a large corpus is not held in memory; None where the dataset has no docstore or cannot look documents
        up (Vaswani, others). ir_datasets builds a corpus's docstore on its first use (one pass, a copy on disk), as
        for ``pt.text.get_text`` of the dataset."""
        if self._docstore is None:
            return None
        try:
            found = self._docstore.get_many(docnos)
        except NotImplementedError:  # a docstore without lookups
            return None
        docs = []
        for docno, doc in found.items():
            fields = doc._asdict()
            fields.pop("doc_id", None)
            docs.append({"docno": docno, **fields})
        return {doc["docno"]: doc["text"] for doc in self._title_and_text(docs)}

    def text_loader(self, fields="text", *, verbose: bool = False, **kwargs) -> pt.Transformer:
        """What ``pt.text.get_text(collection, "text")`` calls: :class:`CorpusText` of this collection."""
        if fields not in ("text", ["text"], "*"):
            raise ValueError(f"a Collection gives the field 'text' only, not {fields!r}")
        return CorpusText(self)

    def topics(self) -> pd.DataFrame:
        topics = self.dataset.get_topics()
        if "query" not in topics.columns:
            topics = self.dataset.get_topics("text")
        topics = topics[["qid", "query"]].copy()
        topics["qid"] = topics["qid"].astype(str)
        topics["query"] = topics["query"].map(self._text)
        return topics

    def topics_outside(self, *dataset_ids: str) -> pd.DataFrame:
        """:meth:`topics` less the queries whose text (case and spacing aside) is a query of any of
        ``dataset_ids``: BEIR SciFact's train split repeats two test claims word for word, with the same relevant
        abstract, so train rows or a dev split drawn from train would hold test queries:
        ``load_collection("irds:beir/scifact/train").topics_outside("irds:beir/scifact/test")``."""
        topics = self.topics()
        held = {query_key(q) for d in dataset_ids for q in load_collection(d).topics()["query"]}
        return topics[~topics["query"].map(query_key).isin(held)].reset_index(drop=True)

    @property
    def extra_measures(self) -> list:
        """Measures the collection's paper reports beyond the standard ones (CapRetrieval: nDCG@1, nDCG@5)."""
        from ir_measures import nDCG

        return [nDCG @ 1, nDCG @ 5] if "capretrieval" in self.dataset_id else []

    def query_types(self) -> dict[str, str] | None:
        """qid -> query type, for collections that have types (CapRetrieval)."""
        if "capretrieval" not in self.dataset_id:
            return None
        from .capretrieval import query_types

        return query_types()

    def qrels(self) -> pd.DataFrame:
        qrels = self.dataset.get_qrels()[["qid", "docno", "label"]].copy()
        qrels["qid"] = qrels["qid"].astype(str)
        qrels["label"] = qrels["label"].clip(lower=0).astype(int)
        return qrels


class CorpusText(pt.Transformer):
    """Adds each row's document text, as ``collection.corpus_iter()`` gives it (for a :class:`Collection`: title +
    text, lower-cased where the collection is), by docno. A collection with a docstore (``texts_of``: a
    :class:`Collection` of an ir_datasets dataset) is asked for the frame's docnos only; any other is read once, on
    first use, and held in memory. A docno the collection lacks is a KeyError naming it."""

    def __init__(self, collection):
        self.collection = collection
        self._texts: dict[str, str] | None = None

    def __repr__(self) -> str:
        return f"CorpusText({self.collection!r})"

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        if "docno" not in frame.columns:
            raise KeyError("CorpusText finds a document's text by docno: the frame has no docno column")
        if len(frame) == 0:  # an empty frame (pt.inspect's probe) reads nothing
            return frame.assign(text=pd.Series(dtype=str))
        docnos = frame["docno"].astype(str)
        looked_up = None
        if self._texts is None and hasattr(self.collection, "texts_of"):
            looked_up = self.collection.texts_of(list(docnos.unique()))
        if looked_up is None and self._texts is None:
            self._texts = {doc["docno"]: doc["text"] for doc in self.collection.corpus_iter()}
        texts = docnos.map(looked_up if looked_up is not None else self._texts)
        if texts.isna().any():
            missing = frame.loc[texts.isna(), "docno"].unique()[:5].tolist()
            raise KeyError(f"{self.collection!r} has no document {missing} (docno), or none with text")
        return frame.assign(text=texts.astype(str))


def query_key(text: str) -> str:
    """A query's text with case and spacing made uniform, for finding a query repeated in another split."""
    return " ".join(str(text).casefold().split())


def _vaswani_docs(path: str, normalise) -> Iterator[dict]:
    """Parse the TREC-format Vaswani corpus (``<DOC><DOCNO>n</DOCNO> text </DOC>``) without Terrier/Java."""
    with open(path, encoding="utf-8") as f:
        content = f.read()
    for match in re.finditer(r"<DOC>\s*<DOCNO>\s*(\S+?)\s*</DOCNO>(.*?)</DOC>", content, flags=re.S):
        yield {"docno": match.group(1), "text": normalise(" ".join(match.group(2).split()))}


def load_collection(dataset_id: str, *, lowercase: bool | None = None) -> Collection:
    """A :class:`Collection` for a PyTerrier dataset id (``irds:beir/scifact/test``, ``irds:cranfield``,
    ``vaswani``, ``irds:compverify/capretrieval/en``); a bare ``compverify/...`` id gets the ``irds:`` prefix."""
    if dataset_id.startswith("compverify/"):
        dataset_id = "irds:" + dataset_id
    if lowercase is None:
        lowercase = dataset_id.startswith(_LOWERCASE_PREFIXES)
    return Collection(dataset_id, lowercase)
