"""SM queries that people already wrote: whole-passage descriptions of the same thing, used offline in place of
LLM summaries (another COCO caption of the same image; a paper's title for its abstract)."""

from __future__ import annotations

import pandas as pd


def sibling_captions(captions: pd.DataFrame, *, limit: int = 7) -> pd.DataFrame:
    """For each caption, up to ``limit`` other captions of the same image as SM queries.

    ``captions`` has ``docno``, ``text`` and ``image``; returns ``docno, query, kind`` rows.

    >>> frame = pd.DataFrame({"docno": ["1", "2", "3"], "text": ["a dog", "a brown dog", "a cat"],
    ...                       "image": ["i", "i", "j"]})
    >>> sibling_captions(frame).values.tolist()
    [['1', 'a brown dog', 'sibling caption'], ['2', 'a dog', 'sibling caption']]
    """
    rows = []
    for _, group in captions.groupby("image", sort=False):
        for docno, text in zip(group["docno"], group["text"]):
            others = [t for t in dict.fromkeys(group["text"]) if t != text][:limit]
            rows += [{"docno": docno, "query": other, "kind": "sibling caption"} for other in others]
    return pd.DataFrame(rows, columns=["docno", "query", "kind"])


def titles(docs: pd.DataFrame) -> pd.DataFrame:
    """The title of each document with one (``docno``, ``title``) as its SM query."""
    docs = docs[docs["title"].fillna("").str.strip() != ""]
    return pd.DataFrame({"docno": docs["docno"], "query": docs["title"].str.strip(), "kind": "title"})
