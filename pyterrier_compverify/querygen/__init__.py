"""Training queries for passages (the granularity-dilemma paper, CapRetrieval): SM (summaries, long questions
about the whole passage) and KW (salient keywords, hypernyms, short user-style phrases), each row labelled with how
it was made; the
ROUGE-L leakage filter; a validation hold-out.

Backends: :class:`KeywordQueries` (offline KW: spaCy parse + WordNet), :class:`LLMQueries` (SM or KW from an
OpenAI-compatible endpoint or a local Hugging Face model) and the human-written SM sources in ``human``."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from .human import sibling_captions, titles
from .keywords import KeywordQueries
from .leakage import drop_leaking, max_rouge_l, rouge_l
from .llm import LLMQueries, hf_chat, parse_queries

COLUMNS = ["docno", "passage", "query", "strategy", "kind", "backend"]


def generate_queries(passages: pd.DataFrame, generator, *, verbose: bool = True) -> pd.DataFrame:
    """One row per generated query: ``docno, passage, query, strategy, kind, backend``.

    ``passages`` has ``docno`` and ``text``; ``generator`` is a :class:`KeywordQueries` or :class:`LLMQueries`."""
    from tqdm.auto import tqdm

    missing = {"docno", "text"} - set(passages.columns)
    if missing:
        raise ValueError(f"passages need columns {sorted(missing)}")
    texts: Iterable[str] = passages["text"].tolist()
    produced = tqdm(
        generator.generate(texts),
        total=len(passages),
        desc=f"{generator.strategy} queries ({generator.backend})",
        unit="passage",
        disable=not verbose,
    )
    rows = [
        (docno, text, query, generator.strategy, kind, generator.backend)
        for docno, text, queries in zip(passages["docno"], passages["text"], produced)
        for query, kind in queries
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def label_human(queries: pd.DataFrame, passages: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """Human-written SM rows (``docno, query, kind``) in the common format, backend ``human:<source>``."""
    text = dict(zip(passages["docno"], passages["text"]))
    out = queries[queries["docno"].isin(text)].copy()
    out["passage"] = out["docno"].map(text)
    out["strategy"], out["backend"] = "SM", f"human:{source}"
    return out[COLUMNS].reset_index(drop=True)


def validation_split(queries: pd.DataFrame, *, share: float = 0.05, seed: int = 0):
    """(train, validation): ``share`` of the passages, with all their queries, held out for validation: at least
    one, and never every passage (one passage alone stays for training, with no validation).

    >>> q = pd.DataFrame({"docno": [str(i // 2) for i in range(40)], "query": ["q"] * 40})
    >>> train, valid = validation_split(q)
    >>> len(train), len(valid), set(train.docno) & set(valid.docno)
    (38, 2, set())
    >>> [len(part) for part in validation_split(q.head(2))], [len(part) for part in validation_split(q, share=0.99)]
    ([2, 0], [2, 38])
    """
    docnos = queries["docno"].unique()
    n_valid = min(max(1, int(round(share * len(docnos)))), len(docnos) - 1)
    held = set(np.random.default_rng(seed).permutation(docnos)[:n_valid])
    mask = queries["docno"].isin(held)
    return queries[~mask].reset_index(drop=True), queries[mask].reset_index(drop=True)


__all__ = [
    "COLUMNS",
    "KeywordQueries",
    "LLMQueries",
    "drop_leaking",
    "generate_queries",
    "hf_chat",
    "label_human",
    "max_rouge_l",
    "parse_queries",
    "rouge_l",
    "sibling_captions",
    "titles",
    "validation_split",
]
