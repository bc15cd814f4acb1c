"""Tables written by an independent reader: one row per numbered item, each labelled with words from fixed sets."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def labelled_rows(path: Path, labels: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """The rows ``| number | label ... | free text |`` of the markdown table in ``path`` as a frame with a
    ``number`` column and one column per entry of ``labels`` (name -> allowed words, upper case), in that order;
    a cell outside its allowed words stops the run, naming the row."""
    rows = []
    for line in Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > len(labels) and cells[0].isdigit():
            row = {"number": int(cells[0])}
            for (name, allowed), cell in zip(labels.items(), cells[1:]):
                if cell.upper() not in allowed:
                    raise SystemExit(f"{path}: row {cells[0]}: {name} must be one of {allowed}, not {cell!r}")
                row[name] = cell.upper()
            rows.append(row)
    return pd.DataFrame(rows, columns=["number", *labels])
