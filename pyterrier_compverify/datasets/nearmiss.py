"""Near-miss triplets (anchor, positive, near-miss, category) from SugarCrepe and CondaQA, and the same
benchmark as retrieval tasks ``compverify/nearmiss/{sugarcrepe,condaqa}`` (query = positive, relevant document =
anchor, the near-misses in the corpus)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from functools import cache

import pandas as pd

from . import local
from .registration import register_dataset

SUGARCREPE_CATEGORIES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
CONDAQA_CATEGORIES = ("affirmative", "scope")
# the paper's structural categories, where a source category corresponds to one
PAPER_KIND = {"swap_att": "binding", "swap_obj": "binding", "replace_rel": "relation", "affirmative": "negation"}
_SUGARCREPE_URL = "https://raw.githubusercontent.com/RAIVNLab/sugar-crepe/main/data/{category}.json"
_CONDAQA_URL = "https://raw.githubusercontent.com/AbhilashaRavichander/CondaQA/main/data/condaqa_dev.json"
COLUMNS = ["id", "source", "category", "kind", "anchor", "positive", "near_miss"]


def sugarcrepe_items(category: str) -> dict[str, dict]:
    """The items of one SugarCrepe category by key: ``filename``, ``caption``, ``negative_caption``."""
    path = local.source_file(f"nearmiss/sugarcrepe/{category}.json", _SUGARCREPE_URL.format(category=category))
    return json.loads(path.read_text(encoding="utf-8"))


def sugarcrepe_captions() -> pd.DataFrame:
    """The original (human, correct) COCO captions of SugarCrepe, once each: ``docno, text, image`` (the image
    file name, shared by captions of the same image). A passage pool of image captions."""
    captions = {}
    for category in SUGARCREPE_CATEGORIES:
        for item in sugarcrepe_items(category).values():
            captions.setdefault(item["caption"].strip(), item["filename"])
    return pd.DataFrame(
        {"docno": [f"coco-{i}" for i in range(len(captions))], "text": list(captions), "image": list(captions.values())}
    )


@cache
def sugarcrepe_triplets(categories: tuple[str, ...] = SUGARCREPE_CATEGORIES) -> pd.DataFrame:
    """One row per SugarCrepe item whose image has another caption: anchor = the caption, near_miss = its
    human-edited wrong caption, positive = another caption of the same image (the first in sorted order)."""
    data = {c: sugarcrepe_items(c) for c in SUGARCREPE_CATEGORIES}
    captions = defaultdict(set)
    for items in data.values():
        for item in items.values():
            captions[item["filename"]].add(item["caption"].strip())
    rows = []
    for category in categories:
        for key, item in data[category].items():
            anchor = item["caption"].strip()
            others = sorted(captions[item["filename"]] - {anchor})
            if others:
                rows.append(
                    (
                        f"sugarcrepe/{category}/{key}",
                        "sugarcrepe",
                        category,
                        PAPER_KIND.get(category, "other"),
                        anchor,
                        others[0],
                        item["negative_caption"].strip(),
                    )
                )
    return pd.DataFrame(rows, columns=COLUMNS)


@cache
def condaqa_triplets(categories: tuple[str, ...] = CONDAQA_CATEGORIES) -> pd.DataFrame:
    """One row per CondaQA dev passage and edit: anchor = original passage, positive = its paraphrase edit,
    near_miss = the affirmative edit (negation removed) or the scope edit."""
    path = local.source_file("nearmiss/condaqa/condaqa_dev.jsonl", _CONDAQA_URL)
    passages: dict[str, dict[int, str]] = defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                passages[str(row["PassageID"])][int(row["PassageEditID"])] = row["sentence1"].strip()
    edit_of = {"scope": 2, "affirmative": 3}
    rows = []
    for pid in sorted(passages, key=int):
        edits = passages[pid]
        for category in categories:
            if 0 in edits and 1 in edits and edit_of[category] in edits:
                rows.append(
                    (
                        f"condaqa/{category}/{pid}",
                        "condaqa",
                        category,
                        PAPER_KIND.get(category, "other"),
                        edits[0],
                        edits[1],
                        edits[edit_of[category]],
                    )
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def nearmiss_triplets(source: str = "all") -> pd.DataFrame:
    """Triplets of ``sugarcrepe``, ``condaqa`` or ``all``."""
    parts = {"sugarcrepe": sugarcrepe_triplets, "condaqa": condaqa_triplets}
    chosen = list(parts) if source == "all" else [source]
    unknown = set(chosen) - set(parts)
    if unknown:
        raise ValueError(f"unknown near-miss source {unknown}; choose from {sorted(parts)} or 'all'")
    return pd.concat([parts[s]() for s in chosen], ignore_index=True)


def text_docno(text: str) -> str:
    """A stable docno for a text (identical texts share it)."""
    return "t" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def retrieval_task(triplets: pd.DataFrame) -> tuple[list[dict], pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """The triplets as a retrieval task: (docs, topics, qrels, qid -> docno of the query's near-miss).

    Query = positive, relevant document = anchor; the corpus holds every anchor and near-miss, so a scorer that
    cannot reject near-misses ranks the edited text above the right one.
    """
    texts = pd.unique(pd.concat([triplets["anchor"], triplets["near_miss"]]))
    docs = [{"docno": text_docno(t), "text": t} for t in texts]
    topics = pd.DataFrame({"qid": triplets["id"], "query": triplets["positive"]})
    qrels = pd.DataFrame({"qid": triplets["id"], "docno": triplets["anchor"].map(text_docno), "label": 1})
    near = dict(zip(triplets["id"], triplets["near_miss"].map(text_docno)))
    return docs, topics, qrels, near


def near_miss_docnos(dataset_id: str) -> dict[str, str]:
    """qid -> docno of the near-miss, for ``compverify/nearmiss/<source>`` ids."""
    return _task(dataset_id.removeprefix("irds:").removeprefix("compverify/nearmiss/"))[3]


@cache
def _task(source: str):
    return retrieval_task(nearmiss_triplets(source))


def register() -> None:
    """Register ``compverify/nearmiss/{sugarcrepe,condaqa}`` with ir_datasets (idempotent)."""
    for source in ("sugarcrepe", "condaqa"):
        register_dataset(
            f"compverify/nearmiss/{source}",
            docs=lambda source=source: ((d["docno"], d["text"]) for d in _task(source)[0]),
            queries=lambda source=source: _task(source)[1][["qid", "query"]].itertuples(index=False),
            qrels=lambda source=source: _task(source)[2][["qid", "docno", "label"]].itertuples(index=False),
            qrel_defs={1: "the anchor text the query paraphrases"},
        )
