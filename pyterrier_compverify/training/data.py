"""Training rows from real data: SciFact retrieval triplets with mined hard negatives, structural rows from
generated near-misses, and their mix at a structural share."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

SCIFACT_TEST = ("irds:beir/scifact/test",)  # the test split whose repeated claims train rows leave out
# end punctuation, white space, a capital; or, in tokenised lower-case text (Cranfield's "gases . tables"), end
# punctuation set off by a space after a lower-case letter, a digit, ")", "]", "/" or "'" ("kelly /2/ . the"), then a
# lower-case letter ("E . coli" stays whole; an abbreviation such as "in ." ends a sentence too)
SENTENCE_END = r"(?<=[.!?])\s+(?=[A-Z])|(?<=[a-z0-9)\]/']\s[.!?])\s+(?=[a-z])"
LINE_BREAK = r"\s*\n\s*"


def retrieval_triplets(
    dataset_id: str = "irds:beir/scifact/train",
    *,
    index_dir: str | os.PathLike | None = None,
    negatives_from: int = 10,
    held_out: Sequence[str] = (),
    seed: int = 42,
) -> pd.DataFrame:
    """(claim, cited abstract, BM25 hard negative) rows: for each relevant (query, document) pair, a negative
    drawn from the query's BM25 top ``negatives_from`` that is never one of its relevant documents. Queries whose
    text is also a query of a ``held_out`` dataset (e.g. ``irds:beir/scifact/test``: SciFact train repeats two
    test claims) are left out."""
    from ..datasets import load_collection
    from ..pipelines import DEFAULT_INDEX_DIR, bm25_index, bm25_pipeline

    collection = load_collection(dataset_id)
    texts = {d["docno"]: d["text"] for d in collection.corpus_iter()}
    topics, qrels = collection.topics_outside(*held_out), collection.qrels()
    qrels = qrels[(qrels["label"] > 0) & qrels["qid"].isin(topics["qid"])]
    pisa = bm25_index(collection, Path(index_dir or DEFAULT_INDEX_DIR) / collection.name / "bm25.pisa")
    run = bm25_pipeline(pisa, num_results=negatives_from + 20)(topics)
    relevant = qrels.groupby("qid")["docno"].apply(set).to_dict()
    rng = np.random.default_rng(seed)
    queries = dict(zip(topics["qid"], topics["query"]))
    rows = []
    for qid, g in run.groupby("qid"):
        pool = [d for d in g.sort_values("rank")["docno"] if d not in relevant.get(qid, set())][:negatives_from]
        for docno in sorted(relevant.get(qid, ())):
            if pool and docno in texts:
                rows.append(
                    {
                        "anchor": queries[qid],
                        "positive": texts[docno],
                        "negative": texts[pool[rng.integers(len(pool))]],
                        "kind": "retrieval",
                    }
                )
    return pd.DataFrame(rows)


def sentences_of(text: str) -> list[str]:
    r"""The sentences of a text (``SENTENCE_END``), a line break inside one read as a space.

    >>> sentences_of("the flow was\nmeasured . results are given .")
    ['the flow was measured .', 'results are given .']
    """
    return [re.sub(LINE_BREAK, " ", part) for part in re.split(SENTENCE_END, text.strip())]


def split_sentences(text: str, *, min_words: int = 6, max_words: int = 40) -> list[str]:
    """Sentences of an abstract (:func:`sentences_of`: end punctuation followed by a capital, or set off by a
    space in tokenised lower-case text), kept when their length suits minimal edits.

    >>> split_sentences("We found X in mice. The effect was not seen in rats. Short.", min_words=3)
    ['We found X in mice.', 'The effect was not seen in rats.']
    """
    return [p for p in sentences_of(text) if min_words <= len(p.split()) <= max_words]


def sentence_homes(texts: Iterable[str]) -> dict[str, tuple[list[str], int]]:
    """Each sentence of ``texts`` (:func:`sentences_of`, unfiltered by length) -> (the sentences of the text
    it came from, its index there); the first text holding a sentence wins."""
    homes: dict[str, tuple[list[str], int]] = {}
    for text in texts:
        parts = sentences_of(text)
        for i, sentence in enumerate(parts):
            homes.setdefault(sentence, (parts, i))
    return homes


def sentence_window(sentences: list[str], i: int, words: int) -> tuple[int, int]:
    """The widest run of sentences ``[lo, hi)`` around ``i`` (grown right, then left, in turn) of at most ``words``
    words; sentence ``i`` alone when it is longer.

    >>> sentence_window(["a b", "c d e", "f", "g h i j"], 1, 6)
    (0, 3)
    """
    lo, hi, total = i, i + 1, len(sentences[i].split())
    grew = True
    while grew:
        grew = False
        for side in ("right", "left"):
            j = hi if side == "right" else lo - 1
            if 0 <= j < len(sentences) and total + len(sentences[j].split()) <= words:
                total += len(sentences[j].split())
                lo, hi = (lo, hi + 1) if side == "right" else (lo - 1, hi)
                grew = True
    return lo, hi


def in_passage(home: tuple[list[str], int], text: str, words: int) -> str:
    """``text`` put in place of sentence i of ``home`` = (sentences, i), inside the window of
    :func:`sentence_window` around it (the window of the original sentence, so every edit of it gets the same
    context).

    >>> in_passage((["It rained.", "The road was wet.", "We stayed in."], 1), "The road was dry.", 9)
    'It rained. The road was dry. We stayed in.'
    """
    sentences, i = home
    lo, hi = sentence_window(sentences, i, words)
    return " ".join([*sentences[lo:i], text, *sentences[i + 1 : hi]])


def triplets_in_passages(
    triplets: pd.DataFrame,
    homes: dict[str, tuple[list[str], int]],
    *,
    words: int,
    columns: tuple[str, ...] = ("anchor", "positive", "negative"),
) -> pd.DataFrame:
    """The rows of ``triplets`` (with a ``sentence`` column: the text each row edits) whose sentence has a home
    (:func:`sentence_homes`) with a neighbour inside its ``words``-word window, each text of ``columns`` put in that
    window (:func:`in_passage`); other columns kept, the index reset.

    >>> t = pd.DataFrame({"sentence": ["B was wet."], "anchor": ["B was not dry."]})
    >>> homes = sentence_homes(["A fell. B was wet. C ran."])
    >>> triplets_in_passages(t, homes, words=9, columns=("anchor",))["anchor"].tolist()
    ['A fell. B was not dry. C ran.']
    """

    def placed(sentence: str) -> bool:
        home = homes.get(sentence)
        return home is not None and sentence_window(*home, words) != (home[1], home[1] + 1)

    kept = triplets[triplets["sentence"].map(placed)].reset_index(drop=True)
    for column in columns:
        kept[column] = [in_passage(homes[s], text, words) for s, text in zip(kept["sentence"], kept[column])]
    return kept


def corpus_sentences(dataset_id: str = "irds:beir/scifact/train", *, limit: int | None = None, seed: int = 0):
    """Shuffled sentences of a collection's documents (SciFact abstracts by default)."""
    from ..evaluate import open_collection  # an unknown id: a KeyError with a "did you mean" hint

    sentences = [s for d in open_collection(dataset_id).corpus_iter() for s in split_sentences(d["text"])]
    order = np.random.default_rng(seed).permutation(len(sentences))
    chosen = [sentences[i] for i in order]
    return chosen[:limit] if limit else chosen


def structural_triplets(
    edits: pd.DataFrame, *, positives: str = "identity", balanced: bool = False, seed: int = 0
) -> pd.DataFrame:
    """Rows from generated edits (``sentence1, sentence2, category``): anchor = sentence, negative = its
    meaning-flipping edit, positive = the sentence itself (``identity``, as in the paper) or, with
    ``positives="paraphrase"``, a generated paraphrase of it where one exists. ``balanced`` keeps as many rows of
    each category as the rarest category has (the rule-based generator yields far more negations)."""
    from ..negatives.registry import MEANING_KEEPING  # categories whose edits are positives, not negatives

    flips = edits[~edits["category"].isin(MEANING_KEEPING)]
    rows = pd.DataFrame(
        {
            "anchor": flips["sentence1"],
            "positive": flips["sentence1"],
            "negative": flips["sentence2"],
            "kind": flips["category"],
        }
    )
    if positives == "paraphrase":
        para = edits[edits["category"] == "paraphrase"].drop_duplicates("sentence1")
        mapping = dict(zip(para["sentence1"], para["sentence2"]))
        rows["positive"] = rows["anchor"].map(mapping).fillna(rows["anchor"])
    elif positives != "identity":
        raise ValueError(f"positives must be 'identity' or 'paraphrase', got {positives!r}")
    if balanced:
        smallest = rows["kind"].value_counts().min()
        rows = rows.groupby("kind", group_keys=False).sample(n=smallest, random_state=seed)
    return rows.reset_index(drop=True)


def mix_rows(
    retrieval: pd.DataFrame, structural: pd.DataFrame, *, share: float, total: int | None = None, seed: int = 42
) -> pd.DataFrame:
    """Shuffle ``retrieval`` with enough ``structural`` rows that they make ``share`` of the result
    (``share=0`` gives Model A's data, the paper's B has about 0.14); ``total`` caps the size."""
    if not 0 <= share < 1:
        raise ValueError(f"share must be in [0, 1), got {share}")
    rng = np.random.default_rng(seed)
    n_total = total or int(round(len(retrieval) / (1 - share)))
    n_struct = int(round(share * n_total))
    n_retr = n_total - n_struct
    if n_struct > len(structural) or n_retr > len(retrieval):
        raise ValueError(
            f"not enough rows for {n_retr} retrieval + {n_struct} structural "
            f"(have {len(retrieval)} + {len(structural)})"
        )
    parts = [retrieval.sample(n_retr, random_state=int(rng.integers(2**31)))]
    if n_struct:
        parts.append(structural.sample(n_struct, random_state=int(rng.integers(2**31))))
    return pd.concat(parts).sample(frac=1, random_state=int(rng.integers(2**31))).reset_index(drop=True)


def title_abstract_triplets(
    dataset_id: str = "irds:beir/scifact/train",
    *,
    index_dir: str | os.PathLike | None = None,
    negatives_from: int = 10,
    limit: int | None = None,
    seed: int = 42,
) -> pd.DataFrame:
    """Self-supervised (title, abstract, BM25 hard negative) rows from a corpus with titles: the negative is a
    document the title retrieves in its top ``negatives_from`` other than the title's own abstract."""
    from ..datasets import load_collection
    from ..pipelines import DEFAULT_INDEX_DIR, bm25_index, bm25_pipeline

    collection = load_collection(dataset_id)
    docs = [d for d in collection.dataset.get_corpus_iter(verbose=False) if (d.get("title") or "").strip()]
    rng = np.random.default_rng(seed)
    if limit:
        docs = [docs[i] for i in rng.permutation(len(docs))[:limit]]
    texts = {d["docno"]: d["text"] for d in collection.dataset.get_corpus_iter(verbose=False)}
    pisa = bm25_index(collection, Path(index_dir or DEFAULT_INDEX_DIR) / collection.name / "bm25.pisa")
    topics = pd.DataFrame({"qid": [d["docno"] for d in docs], "query": [d["title"].strip() for d in docs]})
    run = bm25_pipeline(pisa, num_results=negatives_from + 1)(topics)
    rows = []
    for qid, g in run.groupby("qid"):
        pool = [d for d in g.sort_values("rank")["docno"] if d != qid][:negatives_from]
        if pool:
            title = topics.loc[topics["qid"] == qid, "query"].iloc[0]
            rows.append(
                {
                    "anchor": title,
                    "positive": texts[qid],
                    "negative": texts[pool[rng.integers(len(pool))]],
                    "kind": "title-abstract",
                }
            )
    return pd.DataFrame(rows)


def recipe_rows(
    recipe: str,
    *,
    edits: pd.DataFrame | None = None,
    share: float = 0.14,
    self_supervised: int = 2000,
    positives: str = "identity",
    balanced: bool = False,
    seed: int = 42,
) -> pd.DataFrame:
    """Model A's rows (SciFact train claims -> cited abstracts, plus title -> abstract pairs) or Model B's
    (the same plus structural rows from ``edits`` making ``share`` of the rows)."""
    retrieval = pd.concat(
        [
            retrieval_triplets(held_out=SCIFACT_TEST, seed=seed),
            title_abstract_triplets(limit=self_supervised, seed=seed),
        ],
        ignore_index=True,
    )
    if recipe == "A":
        return mix_rows(retrieval, retrieval.iloc[:0], share=0.0, seed=seed)
    if recipe != "B":
        raise ValueError(f"recipe must be 'A' or 'B', got {recipe!r}")
    if edits is None:
        raise ValueError("recipe B needs the structural edits (`compverify negatives` output)")
    structural = structural_triplets(edits, positives=positives, balanced=balanced, seed=seed)
    return mix_rows(retrieval, structural, share=share, seed=seed)
