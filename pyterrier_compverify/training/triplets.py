"""Training rows (anchor, positive, negative): loading and validation shared by every trainer."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pandas as pd

COLUMNS = ("anchor", "positive", "negative")


def load_triplets(source: pd.DataFrame | str | os.PathLike, *, columns: tuple[str, ...] = COLUMNS) -> pd.DataFrame:
    """Read training rows from a DataFrame or a .csv / .tsv / .jsonl file and check them.

    Missing columns and empty, missing or non-string cells raise a ValueError naming the column and the first bad
    row; a line that is not a JSON object names the file and line. In a .tsv a quote is an ordinary character (a
    cell starting with ``"`` used to swallow the rows up to the next quote). Extra columns (e.g. ``kind``) are kept.
    """
    if isinstance(source, pd.DataFrame):
        frame, where = source.reset_index(drop=True), "training frame"
    else:
        path = Path(source).expanduser()
        where = str(path)
        if path.suffix == ".jsonl":
            frame = _read_jsonl(path)
        elif path.suffix in (".csv", ".tsv"):
            tsv = {"sep": "\t", "quoting": csv.QUOTE_NONE} if path.suffix == ".tsv" else {}
            try:
                frame = pd.read_csv(path, dtype=str, keep_default_na=False, **tsv)
            except pd.errors.ParserError as e:  # e.g. a row with more cells than the header
                raise ValueError(f"{path}: {e}") from None
        else:
            raise ValueError(f"{path}: training rows must be .csv, .tsv or .jsonl")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {missing}; found {list(frame.columns)}")
    if len(frame) == 0:
        raise ValueError(f"{where}: no training rows")
    for column in columns:
        values = frame[column]
        empty = values.map(
            lambda v: (pd.api.types.is_scalar(v) and pd.isna(v)) or (isinstance(v, str) and not v.strip())
        )
        other = ~empty & values.map(lambda v: not isinstance(v, str))
        for bad, what in ((empty, "empty or missing"), (other, "not a string")):
            if bad.any():
                row = int(bad.to_numpy().nonzero()[0][0])
                raise ValueError(
                    f"{where}: column {column!r} is {what} in {int(bad.sum())} row(s), first row {row} "
                    f"({values.tolist()[row]!r})"
                )
    return frame


def _read_jsonl(path: Path) -> pd.DataFrame:
    """One JSON object a line (blank lines skipped); a bad line raises a ValueError naming the file and line."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}, line {number}: not valid JSON ({e})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
            rows.append(row)
    return pd.DataFrame(rows)
