"""Category coverage: the share of a query's content words that a passage meets, itself or by a WordNet hyponym.

A dense encoder of MiniLM's size often misses that a passage about a dog meets the query "animal", or one about
clams meets "seafood". WordNet holds that knowledge offline. :class:`WordNetCoverage` scores each (query, passage)
row by :func:`coverage`: words are lower-cased and reduced to their WordNet base forms (``morphy``); a query word
is met by a passage term that is one of its base forms or a lemma anywhere in the hyponym trees of their noun
senses (any sense); a passage's two-word phrases count too ("golden retriever"; as written: "bamboo shoots" does
not meet "bamboo shoot"). English words only: a Chinese query meets nothing. It is a signal to fuse with
others (``fusion_pipeline(..., wordnet=0.5)``), not a ranker on its own: it cannot tell passages that meet every
query word apart. Needs the ``[negatives]`` extra (nltk and the WordNet 3.0 files of ``wn``).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pandas as pd
import pyterrier as pt

from .negatives.wordnet import load_wordnet
from .rerank import check_text_rows, empty_scored, scored

WORD = re.compile(r"[a-z]+")
STOPWORDS = frozenset(
    "a an the of in on at to for with and or is are was were be been by from as it its this that these those there "
    "here some any no not into onto over under up down out off than then so very".split()
)
# clitics: "driver's" -> driver; a negated auxiliary ("don't", "can't") goes whole; "vitamin d" stays
CLITIC = re.compile(r"\b[a-z]+n['’]t\b|['’](?:s|d|ll|re|ve|m)\b")


@lru_cache(maxsize=1 << 18)  # a corpus's vocabulary
def base_forms(word: str) -> frozenset[str]:
    """``word`` and its WordNet base forms as a noun, verb and adjective ("dogs" -> dog, "running" -> run)."""
    wordnet = load_wordnet()
    return frozenset({word} | {m for pos in ("n", "v", "a") if (m := wordnet.morphy(word, pos))})


@lru_cache(maxsize=1 << 12)  # a query word's set can hold thousands of lemmas ("animal")
def meets(word: str) -> frozenset[str]:
    """The terms that meet a query word: its base forms and every lemma of the hyponym trees of their noun senses
    ("animal" -> dog, ..., "golden retriever"; multi-word lemmas with a space).

    >>> {"dog", "puppy", "golden retriever"} <= meets("animal"), "cat" in meets("dog")
    (True, False)
    """
    wordnet = load_wordnet()
    found = set(base_forms(word))
    for form in base_forms(word):
        for sense in wordnet.synsets(form, pos="n"):
            for below in sense.closure(lambda s: s.hyponyms() + s.instance_hyponyms()):
                found.update(name.lower().replace("_", " ") for name in below.lemma_names())
    return frozenset(found)


def terms(text: str) -> set[str]:
    """A passage's words, their base forms and its two-word phrases.

    >>> sorted(terms("Two dogs run"))
    ['dog', 'dogs', 'dogs run', 'run', 'two', 'two dogs']
    """
    words = WORD.findall(CLITIC.sub(" ", text.lower()))  # as query_words reads a query
    found = {form for w in words for form in base_forms(w)}
    return found | {" ".join(pair) for pair in zip(words, words[1:])}


def query_words(query: str) -> list[frozenset[str]]:
    """What meets each content word of ``query`` (stopwords and clitics left out).

    >>> coverage(query_words("the dog's bone"), terms("a dog chewing a bone"))
    1.0
    >>> [len(query_words(q)) for q in ("vitamin d deficiency", "why can't I sleep", "a driver's license")]
    [3, 3, 2]
    >>> [coverage(query_words(q), terms(q)) for q in ("why can't I sleep", "the dog's bone")]  # as passages alike
    [1.0, 1.0]
    """
    return [meets(w) for w in WORD.findall(CLITIC.sub(" ", query.lower())) if w not in STOPWORDS]


def coverage(words: list[frozenset[str]], held: set[str]) -> float:
    """The share of a query's words (``query_words``) that a passage's ``terms`` meet; 0 for a query of stopwords.

    >>> coverage(query_words("seafood on a plate"), terms("clams and rice on a dish"))
    0.5
    """
    return float(np.mean([bool(meet & held) for meet in words])) if words else 0.0


class WordNetCoverage(pt.Transformer):
    """Scores each row of a result frame by :func:`coverage` of its query by its ``text_field`` (0 to 1).

    Input: ``qid, query, docno`` and the text (add ``pt.text.get_text(dataset, "text")`` before it where the first
    stage gives none); output: the same rows and columns with ``score`` and ``rank`` replaced, put last.

        pipeline = bm25 % 100 >> pt.text.get_text(dataset, "text") >> cv.WordNetCoverage()
    """

    def __init__(self, text_field: str = "text", verbose: bool = False):
        self.text_field = text_field
        self.verbose = verbose

    def __repr__(self) -> str:
        return f"WordNetCoverage(text_field={self.text_field!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        check_text_rows(inp, self.text_field, "WordNetCoverage")
        if len(inp) == 0:
            return empty_scored(inp)
        bad = ~inp["query"].map(lambda q: isinstance(q, str))
        if bad.any():
            raise ValueError(f"WordNetCoverage reads each row's query as text: {int(bad.sum())} row(s) have none")
        load_wordnet()  # the [negatives] extra, named in one line where it is missing
        words = {query: query_words(query) for query in inp["query"].unique()}
        rows = zip(inp["query"], inp[self.text_field].fillna("").astype(str))  # a missing text meets nothing
        scores = [coverage(words[q], terms(t)) for q, t in pt.tqdm(rows, total=len(inp), disable=not self.verbose,
                                                                    desc="WordNetCoverage", unit="row")]  # fmt: skip
        return scored(inp, np.asarray(scores, dtype=np.float64))
