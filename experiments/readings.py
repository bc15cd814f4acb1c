"""Tables written by an independent reader: one row per numbered item, each labelled with words from fixed sets;
and the Wilson interval their counts are reported with."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd


def labelled_rows(path: Path, labels: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """The rows ``| number | label ... | free text |`` of the markdown table in ``path`` as a frame with a
    ``number`` column and one column per entry of ``labels`` (name -> allowed words, upper case), in that order;
    a cell outside its allowed words stops the run, naming the row."""
    rows = []
    for line in Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].isdigit():
            if len(cells) <= len(labels):
                wanted = ", ".join(["number", *labels])
                raise SystemExit(f"{path}: row {cells[0]} has {len(cells)} cells, not {wanted} (a note may follow)")
            row = {"number": int(cells[0])}
            for (name, allowed), cell in zip(labels.items(), cells[1:]):
                if cell.upper() not in allowed:
                    raise SystemExit(f"{path}: row {cells[0]}: {name} must be one of {allowed}, not {cell!r}")
                row[name] = cell.upper()
            rows.append(row)
    return pd.DataFrame(rows, columns=["number", *labels])


def keyed_reading(folder: Path, read: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """(``folder/key.json``'s contents, its ``key`` rows merged with the reader's rows ``read`` on ``number``);
    stops the run unless the reading labels every sampled item exactly once."""
    meta = json.loads((Path(folder) / "key.json").read_text())
    key = pd.DataFrame(meta["key"])
    missing = sorted(set(key["number"]) - set(read["number"]))
    if missing or len(read) != len(key) or read["number"].duplicated().any():
        raise SystemExit(f"the reading must label each sampled item once: missing {missing[:10]}, rows {len(read)}")
    return meta, key.merge(read, on="number")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of k successes in n.

    >>> [round(x, 3) for x in wilson(95, 100)]
    [0.888, 0.978]
    """
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half
