"""Counts of words and adjacent word pairs over the input sentences, to tell fixed terms ("left ventricular",
"critically ill", "systematic review") from free combinations ("a fresh sample")."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_TOKEN = re.compile(r"\w+|[^\w\s]")
_DEGREE_ADVERBS = set(
    "very highly relatively extremely increasingly remarkably fairly quite rather too so more most less".split()
)


class Collocations:
    """Lower-cased word and word-pair counts of a corpus.

    A pair is a fixed term when it occurs at least ``min_count`` times and makes up at least ``min_share`` of the
    occurrences of one of its two words.

    >>> terms = Collocations(["Left ventricular mass.", "left ventricular function", "the left ventricular wall"])
    >>> terms.fixed("left", "ventricular"), terms.fixed("the", "left")
    (True, False)
    >>> Collocations(["a very rapid rise", "more rapid decay", "the most rapid"]).graded("rapid")
    True
    """

    def __init__(self, sentences: Iterable[str] = (), *, min_count: int = 2, min_share: float = 0.08):
        self.min_count = min_count
        self.min_share = min_share
        self.words: Counter = Counter()
        self.pairs: Counter = Counter()
        for sentence in sentences:
            words = _TOKEN.findall(sentence.lower())
            self.words.update(words)
            self.pairs.update(zip(words, words[1:]))

    def graded(self, adjective: str) -> bool:
        """Whether the corpus grades the adjective ("more severe", "very rapid") at least ``min_count`` times: a
        sign that it names a quality that comes in degrees, not a kind ("renal", "genetic")."""
        word = adjective.lower()
        return sum(self.pairs[(adverb, word)] for adverb in _DEGREE_ADVERBS) >= self.min_count

    def fixed(self, first: str, second: str) -> bool:
        """Whether ``first second`` is a frequent pair that accounts for much of the use of either word."""
        count = self.pairs[(first.lower(), second.lower())]
        rarer = min(self.words[first.lower()], self.words[second.lower()])
        return count >= self.min_count and count >= self.min_share * rarer
