"""The leakage filter: training passages too close to a test passage (ROUGE-L F1 above a threshold) are dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..lcs import lcs_length

_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def rouge_l(a: str, b: str) -> float:
    """ROUGE-L F1 of two texts on lower-cased word tokens: 2 LCS / (len a + len b).

    >>> round(rouge_l("A dog runs on the grass.", "a dog running on grass"), 3)
    0.727
    """
    ta, tb = tokens(a), tokens(b)
    return 2 * lcs_length(ta, tb) / (len(ta) + len(tb)) if ta and tb else 0.0


def max_rouge_l(texts: Sequence[str], against: Sequence[str], *, floor: float = 0.0) -> np.ndarray:
    """For each text, its highest ROUGE-L F1 against ``against`` (exact where it is above ``floor``; below it the
    value may be any number <= floor). Pairs are first bounded with sparse token-count products (shared tokens
    bound the LCS), so only promising pairs get the exact LCS."""
    from scipy.sparse import csr_matrix

    vocab: dict[str, int] = {}

    def counts(collection):
        rows, cols, lengths, toks = [], [], [], []
        for i, text in enumerate(collection):
            t = tokens(text)
            toks.append(t)
            lengths.append(len(t))
            for token in t:
                rows.append(i)
                cols.append(vocab.setdefault(token, len(vocab)))
        return rows, cols, np.array(lengths), toks

    r1, c1, len1, tok1 = counts(texts)
    r2, c2, len2, tok2 = counts(against)
    shape = len(vocab)
    m1 = csr_matrix((np.ones(len(r1)), (r1, c1)), shape=(len(texts), shape))
    m2 = csr_matrix((np.ones(len(r2)), (r2, c2)), shape=(len(against), shape))
    shared = (m1 @ m2.T).tocoo()  # sum of count products >= shared tokens (with multiplicity) >= LCS
    best = np.zeros(len(texts))
    for i, j, bound in zip(shared.row, shared.col, shared.data):
        total = len1[i] + len2[j]
        if total and 2 * min(bound, len1[i], len2[j]) / total > max(floor, best[i]):
            best[i] = max(best[i], 2 * lcs_length(tok1[i], tok2[j]) / total)
    return best


def drop_leaking(texts: Sequence[str], test_texts: Sequence[str], *, threshold: float = 0.6) -> np.ndarray:
    """Boolean mask of ``texts`` to keep: those whose ROUGE-L F1 with every test text is at most ``threshold``.

    >>> drop_leaking(["a dog runs on the grass", "two cats sleep"], ["the dog runs on the grass"]).tolist()
    [False, True]
    """
    return max_rouge_l(texts, test_texts, floor=threshold) <= threshold
