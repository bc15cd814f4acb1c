"""Longest common subsequence of two token lists, shared by the edit-size filter and the leakage filter."""

from __future__ import annotations

from collections.abc import Sequence


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (dynamic programming, O(len(a) * len(b))).

    >>> lcs_length("a b c d".split(), "a c d e".split())
    3
    """
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]
