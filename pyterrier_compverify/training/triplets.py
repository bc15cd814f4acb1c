"""Training rows (anchor, positive, negative): loading and validation shared by every trainer."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

COLUMNS = ("anchor", "positive", "negative")


def load_triplets(source: pd.DataFrame | str | os.PathLike, *, columns: tuple[str, ...] = COLUMNS) -> pd.DataFrame:
    """Read training rows from a DataFrame or a .csv / .tsv / .jsonl file and check them.

    Missing columns and empty or missing cells raise a ValueError naming the column and the first bad row.
    Extra columns (e.g. ``kind``) are kept.
    """
    if isinstance(source, pd.DataFrame):
        frame, where = source.reset_index(drop=True), "training frame"
    else:
        path = Path(source)
        where = str(path)
        if path.suffix == ".jsonl":
            frame = pd.read_json(path, lines=True, dtype=False)
        elif path.suffix in (".csv", ".tsv"):
            frame = pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",", dtype=str, keep_default_na=False)
        else:
            raise ValueError(f"{path}: training rows must be .csv, .tsv or .jsonl")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {missing}; found {list(frame.columns)}")
    if len(frame) == 0:
        raise ValueError(f"{where}: no training rows")
    for column in columns:
        values = frame[column]
        bad = values.isna() | values.map(lambda v: not isinstance(v, str) or not v.strip())
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise ValueError(
                f"{where}: column {column!r} is empty or missing in {int(bad.sum())} row(s), first row {row}"
            )
    return frame
