"""Near-miss triplets (anchor, positive, near-miss, category) from SugarCrepe and CondaQA, and the same
benchmark as retrieval tasks: ``compverify/nearmiss/{sugarcrepe,condaqa}`` (query = positive, relevant document =
anchor with label 2, SugarCrepe's other captions of the image label 1, the near-misses in the corpus) and the
identity control ``compverify/nearmiss/{sugarcrepe,condaqa}/identity`` (query = the anchor's own text, qid
``<id>/identity``, same corpus and labels)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from functools import cache

import numpy as np
import pandas as pd

from . import local
from .registration import register_dataset

SUGARCREPE_CATEGORIES = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
CONDAQA_CATEGORIES = ("affirmative", "scope")
# the paper's structural categories, where a source category corresponds to one
PAPER_KIND = {"swap_att": "binding", "swap_obj": "binding", "replace_rel": "relation", "affirmative": "negation"}
_SUGARCREPE_URL = "https://raw.githubusercontent.com/RAIVNLab/sugar-crepe/main/data/{category}.json"
_CONDAQA_URL = "https://raw.githubusercontent.com/AbhilashaRavichander/CondaQA/main/data/condaqa_dev.json"
# group: the item a text belongs to (SugarCrepe: the COCO image; CondaQA: the passage); distractors for a triplet
# come from other groups, so that another correct caption of the same image is never counted as a distractor
COLUMNS = ["id", "source", "category", "kind", "group", "anchor", "positive", "near_miss"]
IDENTITY_SUFFIX = "/identity"  # qid suffix of the identity-control queries of the retrieval task


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


def checked_categories(categories, known: tuple[str, ...], source: str) -> tuple[str, ...]:
    """``categories`` (one name or several) as a tuple, each one of ``known``; else a ValueError naming them.

    >>> checked_categories("scope", CONDAQA_CATEGORIES, "CondaQA")
    ('scope',)
    >>> checked_categories(["negation"], CONDAQA_CATEGORIES, "CondaQA")
    Traceback (most recent call last):
    ValueError: unknown CondaQA categories ['negation']: choose from affirmative, scope
    """
    chosen = (categories,) if isinstance(categories, str) else tuple(categories)
    unknown = [c for c in chosen if c not in known]
    if unknown:
        raise ValueError(f"unknown {source} categories {unknown}: choose from {', '.join(known)}")
    return chosen


def sugarcrepe_triplets(categories: str | Sequence[str] = SUGARCREPE_CATEGORIES) -> pd.DataFrame:
    """One row per SugarCrepe item whose image has another caption: anchor = the caption, near_miss = its
    human-edited wrong caption, positive = another caption of the same image (the first in sorted order).
    ``categories``: one of ``SUGARCREPE_CATEGORIES`` or several. A copy: the rows are read once per process."""
    chosen = checked_categories(categories, SUGARCREPE_CATEGORIES, "SugarCrepe")
    return _sugarcrepe_triplets(chosen).copy()


@cache
def _sugarcrepe_triplets(categories: tuple[str, ...]) -> pd.DataFrame:
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
                        item["filename"],
                        anchor,
                        others[0],
                        item["negative_caption"].strip(),
                    )
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def condaqa_triplets(categories: str | Sequence[str] = CONDAQA_CATEGORIES) -> pd.DataFrame:
    """One row per CondaQA dev passage and edit: anchor = original passage, positive = its paraphrase edit,
    near_miss = the affirmative edit (negation removed) or the scope edit. ``categories``: one of
    ``CONDAQA_CATEGORIES`` or both. A copy: the rows are read once per process."""
    return _condaqa_triplets(checked_categories(categories, CONDAQA_CATEGORIES, "CondaQA")).copy()


@cache
def _condaqa_triplets(categories: tuple[str, ...]) -> pd.DataFrame:
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
                        pid,
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


def distractor_texts(triplets: pd.DataFrame, k: int = 20, seed: int = 0) -> list[list[str]]:
    """For each triplet, in row order: ``k`` texts of *other* items of the same source, the distractors of
    distractor recall@1.

    The pool is the anchors and positives (correct captions or passages) of the given triplets of that source;
    a text qualifies when no triplet of the same ``group`` (image or passage) holds it and it is not the
    triplet's anchor, positive or near-miss. Drawn without replacement with ``seed``; when fewer than ``k``
    qualify, all of them. Without a ``group`` column each anchor is its own group.

    >>> t = pd.DataFrame({"source": ["s"] * 3, "group": ["g1", "g1", "g2"], "anchor": ["a", "a", "c"],
    ...                   "positive": ["b", "b", "d"], "near_miss": ["x", "y", "z"]})
    >>> sorted(distractor_texts(t, k=5)[0]), sorted(distractor_texts(t, k=5)[2])
    (['c', 'd'], ['a', 'b'])
    """
    groups = triplets["group"] if "group" in triplets.columns else triplets["anchor"]
    groups = groups.astype(str).to_numpy()
    anchors, positives = triplets["anchor"].to_numpy(), triplets["positive"].to_numpy()
    near_misses = triplets["near_miss"].to_numpy()
    out: list[list[str]] = [[] for _ in range(len(triplets))]
    for _, rows in sorted(triplets.groupby("source", sort=True).indices.items()):
        groups_of: dict[str, set[str]] = defaultdict(set)
        for i in rows:
            groups_of[anchors[i]].add(groups[i])
            groups_of[positives[i]].add(groups[i])
        pool = list(groups_of)
        rng = np.random.default_rng(seed)
        for i in rows:
            own = {anchors[i], positives[i], near_misses[i]}
            chosen = out[i]
            for j in rng.permutation(len(pool)):
                text = pool[j]
                if groups[i] not in groups_of[text] and text not in own:
                    chosen.append(text)
                    if len(chosen) == k:
                        break
    return out


def retrieval_task(
    triplets: pd.DataFrame, *, identity: bool = False
) -> tuple[list[dict], pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """The triplets as a retrieval task: (docs, topics, qrels, qid -> docno of the query's near-miss).

    Query = the positive (qid = the triplet id), relevant document = the anchor (label 2); the corpus holds every
    anchor and near-miss, so a scorer that cannot reject near-misses ranks the edited text above the right one. The
    other anchors of the triplet's group in the corpus (SugarCrepe: the image's other captions, among them the
    query's own text) are relevant too (label 1), so a ranking measure does not punish finding them;
    ``NearMissWin`` reads the label-2 document only. With ``identity=True`` the identity control: query = the
    anchor's own text (qid ``<id>/identity``), same corpus and labels, so a scorer that merely dislikes overlap
    ranks the near-miss above an exact copy.
    """
    texts = pd.unique(pd.concat([triplets["anchor"], triplets["near_miss"]]))
    docs = [{"docno": text_docno(t), "text": t} for t in texts]
    qids = triplets["id"] + IDENTITY_SUFFIX if identity else triplets["id"]
    topics = pd.DataFrame({"qid": qids, "query": triplets["anchor" if identity else "positive"]})
    qrels = pd.DataFrame({"qid": qids, "docno": triplets["anchor"].map(text_docno), "label": 2})
    if "group" in triplets.columns:
        members = triplets.groupby(["source", "group"])["anchor"].agg(lambda a: list(dict.fromkeys(a)))
        siblings = [
            (qid, text_docno(text), 1)
            for qid, key, anchor, near_miss in zip(
                qids, zip(triplets["source"], triplets["group"]), triplets["anchor"], triplets["near_miss"]
            )
            for text in members[key]
            if text not in (anchor, near_miss)
        ]
        qrels = pd.concat([qrels, pd.DataFrame(siblings, columns=["qid", "docno", "label"])], ignore_index=True)
    near = dict(zip(qids, triplets["near_miss"].map(text_docno)))
    return docs, topics, qrels, near


def near_miss_docnos(dataset_id: str) -> dict[str, str]:
    """qid -> docno of the near-miss, for ``compverify/nearmiss/<source>`` and ``.../<source>/identity`` ids."""
    task = dataset_id.removeprefix("irds:").removeprefix("compverify/nearmiss/")
    source = task.removesuffix(IDENTITY_SUFFIX)
    return _task(source, task != source)[3]


@cache
def _task(source: str, identity: bool = False):
    return retrieval_task(nearmiss_triplets(source), identity=identity)


def _rows(source: str, identity: bool, part: int, columns: list[str]):
    """Tuples of ``columns`` of the task's topics (part 1) or qrels (part 2), for ir_datasets."""
    return _task(source, identity)[part][columns].itertuples(index=False)


def register() -> None:
    """Register ``compverify/nearmiss/{sugarcrepe,condaqa}`` and their ``/identity`` controls with ir_datasets
    (idempotent)."""
    sibling = "another text of the anchor's group (SugarCrepe: another caption of the image)"
    defs = {
        False: {2: "the anchor text the query paraphrases", 1: sibling},
        True: {2: "the anchor text, identical to the query (identity control)", 1: sibling},
    }
    for source in ("sugarcrepe", "condaqa"):
        for identity in (False, True):
            register_dataset(
                f"compverify/nearmiss/{source}" + (IDENTITY_SUFFIX if identity else ""),
                docs=lambda s=source: ((d["docno"], d["text"]) for d in _task(s)[0]),
                queries=lambda s=source, i=identity: _rows(s, i, 1, ["qid", "query"]),
                qrels=lambda s=source, i=identity: _rows(s, i, 2, ["qid", "docno", "label"]),
                qrel_defs=defs[identity],
            )
