"""CapRetrieval (zh) and CapRetrievalEn as ir_datasets ids ``compverify/capretrieval/{zh,en}``.

Queries without any positive (27 of 404) are left out, as in the paper's evaluation (377 scored queries).
Judgements are graded 1 (weak) / 2 (strong); unlisted pairs are 0. Text is kept as published: lower-case it for
the paper's protocol (``compverify evaluate`` does).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import ir_datasets
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, GenericDoc, GenericQuery, TrecQrel

from . import local

UPSTREAM = "https://raw.githubusercontent.com/lxucs/CapRetrieval/main/dataset/{folder}/{file}"
_FOLDERS = {"zh": "CapRetrieval", "en": "CapRetrievalEn"}
LANGS = tuple(_FOLDERS)


def source_file(lang: str, name: str) -> Path:
    """Local path of one CapRetrieval file (local data folder, else downloaded from lxucs/CapRetrieval)."""
    return local.source_file(f"capretrieval/{lang}/{name}", UPSTREAM.format(folder=_FOLDERS[lang], file=name))


def _jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _queries(lang: str) -> list[dict]:
    """Queries that have at least one positive."""
    return [q for q in _jsonl(source_file(lang, "queries.jsonl")) if q.get("positives")]


class _Docs(BaseDocs):
    def __init__(self, lang):
        self.lang = lang

    def docs_iter(self):
        for d in _jsonl(source_file(self.lang, "candidates.jsonl")):
            yield GenericDoc(d["id"], d["text"])

    def docs_count(self):
        return sum(1 for _ in self.docs_iter())

    def docs_cls(self):
        return GenericDoc

    def docs_namespace(self):
        return f"compverify/capretrieval/{self.lang}"

    def docs_lang(self):
        return self.lang


class _Queries(BaseQueries):
    def __init__(self, lang):
        self.lang = lang

    def queries_iter(self):
        for q in _queries(self.lang):
            yield GenericQuery(q["id"], q["query"])

    def queries_cls(self):
        return GenericQuery

    def queries_namespace(self):
        return f"compverify/capretrieval/{self.lang}"

    def queries_lang(self):
        return self.lang


class _Qrels(BaseQrels):
    def __init__(self, lang):
        self.lang = lang

    def qrels_iter(self):
        for q in _queries(self.lang):
            for p in q["positives"]:
                yield TrecQrel(q["id"], p["id"], int(p["score"]), "0")

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self):
        return {0: "not relevant", 1: "weakly relevant", 2: "strongly relevant"}


def query_types() -> dict[str, str]:
    """qid -> query type (singleton_object, ..., complex_condition; 'unknown' where types.json has no entry).

    Types are listed by Chinese query string in ``zh/types.json``; "+" there stands for a space in the query.
    Ids are shared by both languages, so the same mapping serves CapRetrievalEn.
    """
    types = json.loads(source_file("zh", "types.json").read_text(encoding="utf-8"))
    by_text = {" ".join(s.replace("+", " ").split()): t for t, strings in types.items() for s in strings}
    return {q["id"]: by_text.get(" ".join(q["query"].split()), "unknown") for q in _queries("zh")}


def register() -> None:
    """Register ``compverify/capretrieval/{zh,en}`` with ir_datasets (idempotent)."""
    for lang in LANGS:
        name = f"compverify/capretrieval/{lang}"
        if name not in ir_datasets.registry:
            ir_datasets.registry.register(name, ir_datasets.Dataset(_Docs(lang), _Queries(lang), _Qrels(lang)))
