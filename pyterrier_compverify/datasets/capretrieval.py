"""CapRetrieval (zh) and CapRetrievalEn as ir_datasets ids ``compverify/capretrieval/{zh,en}``.

Queries without any positive (27 of 404) are left out, as in the paper's evaluation (377 scored queries).
Judgements are graded 1 (weak) / 2 (strong); unlisted pairs are 0. Text is kept as published: lower-case it for
the paper's protocol (``compverify evaluate`` does).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from . import local
from .registration import register_dataset

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
        register_dataset(
            f"compverify/capretrieval/{lang}",
            docs=lambda lang=lang: ((d["id"], d["text"]) for d in _jsonl(source_file(lang, "candidates.jsonl"))),
            queries=lambda lang=lang: ((q["id"], q["query"]) for q in _queries(lang)),
            qrels=lambda lang=lang: ((q["id"], p["id"], p["score"]) for q in _queries(lang) for p in q["positives"]),
            qrel_defs={0: "not relevant", 1: "weakly relevant", 2: "strongly relevant"},
            lang=lang,
        )
