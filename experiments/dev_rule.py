"""The dev rule of the CapRetrievalEn studies (issue 18), in one place: among the settings whose held-out SciFact
train nDCG@10 (``dev:scifact-train``) is at least a reference system's minus ``MARGIN``, the one with the best
Flickr8k dev nDCG@10 (``dev:flickr8k``). Test collections are never read for a choice."""

from __future__ import annotations

import pandas as pd

MARGIN = 0.005
TARGET, GUARD = "dev:flickr8k", "dev:scifact-train"


def best_on_dev(table: pd.DataFrame, floor: float, *, tie_break: bool = False):
    """The index label of the row of ``table`` the rule chooses: the highest ``dev:flickr8k`` among the rows whose
    ``dev:scifact-train`` is at least ``floor`` (the reference's value minus ``MARGIN``). On a tie the first such
    row, or with ``tie_break`` the one with the higher ``dev:scifact-train`` (then the first). SystemExit when no
    row reaches ``floor``.

    >>> table = pd.DataFrame({TARGET: [0.45, 0.47, 0.47, 0.50], GUARD: [0.66, 0.65, 0.66, 0.60]}, index=list("abcd"))
    >>> best_on_dev(table, 0.645), best_on_dev(table, 0.645, tie_break=True)
    ('b', 'c')
    >>> best_on_dev(table, 0.7)
    Traceback (most recent call last):
    ...
    SystemExit: no setting keeps dev:scifact-train at or above 0.7000
    """
    allowed = table[table[GUARD] >= floor]
    if allowed.empty:
        raise SystemExit(f"no setting keeps {GUARD} at or above {floor:.4f}")
    if tie_break:
        allowed = allowed[allowed[TARGET] == allowed[TARGET].max()]
        return allowed[GUARD].idxmax()
    return allowed[TARGET].idxmax()
