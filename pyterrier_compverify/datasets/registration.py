"""Registering a dataset with ir_datasets from three generator functions (docs, queries, qrels)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import ir_datasets
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, GenericDoc, GenericQuery, TrecQrel
from ir_datasets.indices import Docstore


class _MemoryDocstore(Docstore):
    """The documents by docno, read once on first use (these collections are small): ``pt.text.get_text`` and
    ``dataset.text_loader()`` look texts up through ``docs_store()``."""

    def __init__(self, docs: Callable[[], Iterable[tuple[str, str]]]):
        super().__init__(GenericDoc)
        self._docs, self._texts = docs, None

    def get_many_iter(self, doc_ids):
        if self._texts is None:
            self._texts = dict(self._docs())
        for doc_id in doc_ids:
            if doc_id in self._texts:
                yield GenericDoc(doc_id, self._texts[doc_id])


class _Docs(BaseDocs):
    def __init__(self, name, lang, docs):
        self.name, self.lang, self.docs = name, lang, docs
        self._store = _MemoryDocstore(docs)

    def docs_store(self):
        return self._store

    def docs_iter(self):
        for docno, text in self.docs():
            yield GenericDoc(docno, text)

    def docs_count(self):
        return sum(1 for _ in self.docs())

    def docs_cls(self):
        return GenericDoc

    def docs_namespace(self):
        return self.name

    def docs_lang(self):
        return self.lang


class _Queries(BaseQueries):
    def __init__(self, name, lang, queries):
        self.name, self.lang, self.queries = name, lang, queries

    def queries_iter(self):
        for qid, text in self.queries():
            yield GenericQuery(qid, text)

    def queries_cls(self):
        return GenericQuery

    def queries_namespace(self):
        return self.name

    def queries_lang(self):
        return self.lang


class _Qrels(BaseQrels):
    def __init__(self, qrels, defs):
        self.qrels, self.defs = qrels, defs

    def qrels_iter(self):
        for qid, docno, label in self.qrels():
            yield TrecQrel(qid, docno, int(label), "0")

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self):
        return self.defs


def register_dataset(
    name: str,
    *,
    docs: Callable[[], Iterable[tuple[str, str]]],
    queries: Callable[[], Iterable[tuple[str, str]]],
    qrels: Callable[[], Iterable[tuple[str, str, int]]],
    qrel_defs: dict[int, str],
    lang: str = "en",
) -> None:
    """Register ``name`` (idempotent). The functions are called lazily and yield (docno, text), (qid, text) and
    (qid, docno, label) tuples."""
    if name not in ir_datasets.registry:
        dataset = ir_datasets.Dataset(_Docs(name, lang, docs), _Queries(name, lang, queries), _Qrels(qrels, qrel_defs))
        ir_datasets.registry.register(name, dataset)
