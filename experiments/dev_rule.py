"""The dev rule of the CapRetrievalEn studies (issue 18), in one place: among the settings whose held-out SciFact
train nDCG@10 (``dev:scifact-train``) is at least a reference system's minus ``MARGIN``, the one with the best
Flickr8k dev nDCG@10 (``dev:flickr8k``). Test collections are never read for a choice."""

from __future__ import annotations

import pandas as pd

MARGIN = 0.005
DEV_TARGET, DEV_GUARD = "dev:flickr8k", "dev:scifact-train"


def best_on_dev(table: pd.DataFrame, floor: float | pd.Series, *, tie_break: bool = False):
    """The index label of the row of ``table`` the rule chooses: the highest ``dev:flickr8k`` among the rows whose
    ``dev:scifact-train`` is at least ``floor`` (the reference's value minus ``MARGIN``; a Series: one per row). On
    a tie the first such
    row, or with ``tie_break`` the one with the higher ``dev:scifact-train`` (then the first). SystemExit when no
    row reaches ``floor``.

    >>> table = pd.DataFrame({DEV_TARGET: [0.45, 0.47, 0.47, 0.5], DEV_GUARD: [0.66, 0.65, 0.66, 0.6]}, index=[*"abcd"])
    >>> best_on_dev(table, 0.645), best_on_dev(table, 0.645, tie_break=True)
    ('b', 'c')
    >>> best_on_dev(table, pd.Series(0.7, index=table.index))
    Traceback (most recent call last):
    ...
    SystemExit: no setting keeps dev:scifact-train at or above its floor (0.7000)
    """
    allowed = table[table[DEV_GUARD] >= floor]
    if allowed.empty:
        lowest = float(floor.min()) if isinstance(floor, pd.Series) else floor
        raise SystemExit(f"no setting keeps {DEV_GUARD} at or above its floor ({lowest:.4f})")
    if tie_break:
        allowed = allowed[allowed[DEV_TARGET] == allowed[DEV_TARGET].max()]
        return allowed[DEV_GUARD].idxmax()
    return allowed[DEV_TARGET].idxmax()
