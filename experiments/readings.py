"""Tables written by an independent reader: one row per numbered item, each labelled with words from fixed sets;
the Wilson interval their counts are reported with; and the two-stage command of a reading study (``sample`` for
the reader, ``summarise`` of what they wrote)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
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


def agreement(first: pd.Series, second: pd.Series) -> tuple[float, float]:
    """(share of items labelled alike, Cohen's kappa) of two readers' labels of the same items (aligned Series).

    >>> [round(x, 3) for x in agreement(pd.Series([1, 1, 0, 0, 1]), pd.Series([1, 0, 0, 0, 1]))]
    [0.8, 0.615]
    """
    alike = float((first.to_numpy() == second.to_numpy()).mean())
    shares = pd.concat([first.value_counts(normalize=True), second.value_counts(normalize=True)], axis=1).fillna(0)
    chance = float((shares.iloc[:, 0] * shares.iloc[:, 1]).sum())
    return alike, (alike - chance) / (1 - chance) if chance < 1 else 1.0


def verdicts(path: Path, wanted: pd.DataFrame) -> pd.DataFrame:
    """A reader's file of CORRECT / WRONG verdicts (a first line ``Reader X; ...``, then rows ``| # | verdict | note
    |``) merged with ``wanted`` (the key rows of that file, with a ``number`` column): columns ``verdict``, ``note``,
    ``reader``, ``correct`` and ``borderline`` (the note says so) added; stops the run unless every wanted row is
    labelled once."""
    read = labelled_rows(path, {"verdict": ("CORRECT", "WRONG")})
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    notes = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].isdigit():
            notes[int(cells[0])] = " ".join(cells[2:])
    if sorted(read["number"]) != sorted(wanted["number"]):
        raise SystemExit(f"{path}: the reading must label rows {sorted(wanted['number'])[:3]}... once each")
    reader = lines[0].split(";")[0].removeprefix("Reader ").strip() if lines[0].startswith("Reader ") else "?"
    read = read.assign(note=read["number"].map(notes), reader=reader)
    rows = wanted.merge(read, on="number")
    return rows.assign(
        correct=rows["verdict"] == "CORRECT", borderline=rows["note"].str.lower().str.contains("borderline")
    )


def first_readings(folder: Path, by: str) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(``folder/key.json``'s contents, its ``key`` rows, the :func:`verdicts` of ``reading-<value>.md`` for each
    value of ``by`` in the key, in order)."""
    meta = json.loads((Path(folder) / "key.json").read_text())
    key = pd.DataFrame(meta["key"])
    rows = [verdicts(Path(folder) / f"reading-{v}.md", key[key[by] == v]) for v in key[by].unique()]
    return meta, key, pd.concat(rows, ignore_index=True)


def precision_table(rows: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per value of ``by`` (in order of appearance) in :func:`verdicts` rows: reader, CORRECT / rows, its 95% Wilson
    interval, the borderline rows, and CORRECT with the borderline rows counted both ways (and that interval)."""
    out = []
    for value, group in rows.groupby(by, sort=False):
        k, n = int(group["correct"].sum()), len(group)
        low, high = wilson(k, n)
        counted_correct = int((group["correct"] & group["borderline"]).sum())
        counted_wrong = int((~group["correct"] & group["borderline"]).sum())
        strict_low, _ = wilson(k - counted_correct, n)
        _, lenient_high = wilson(k + counted_wrong, n)
        out.append({
            by: value,
            "reader": ", ".join(sorted(group["reader"].unique())),
            "CORRECT / rows": f"{k} / {n}",
            "95% interval": f"{low:.1%}-{high:.1%}",
            "borderline rows": int(group["borderline"].sum()),
            "CORRECT with borderline rows counted both ways (interval)":
                f"{k - counted_correct}-{k + counted_wrong} ({strict_low:.1%}-{lenient_high:.1%})",
        })  # fmt: skip
    return pd.DataFrame(out)


def second_readings(folder: Path, key: pd.DataFrame, first: pd.DataFrame, by: str) -> list[str]:
    """Markdown lines on the second readers (``reading-<value>-second.md`` in ``folder``, for each value of ``by`` in
    ``key``): their precision table and their agreement with the first reading's :func:`verdicts` rows ``first``;
    no lines where no second reader read."""
    seconds, agreements = [], []
    for value in key[by].unique():
        path = Path(folder) / f"reading-{value}-second.md"
        if not path.exists():
            continue
        second = verdicts(path, key[key[by] == value])
        seconds.append(second)
        mine = first[first[by] == value].set_index("number")["verdict"]
        theirs = second.set_index("number")["verdict"].reindex(mine.index)
        alike, kappa = agreement(mine, theirs)
        both = int(((mine == "CORRECT") & (theirs == "CORRECT")).sum())
        agreements.append({by: value, "rows": len(mine), "alike": f"{alike:.1%}", "Cohen's kappa": round(kappa, 2),
                           "CORRECT for both": both})  # fmt: skip
    if not seconds:
        return []
    return [
        "## Second reader",
        "",
        table(precision_table(pd.concat(seconds, ignore_index=True), by)),
        "",
        table(pd.DataFrame(agreements)),
        "",
    ]


def cell(text: str) -> str:
    """A markdown table cell: "|" escaped, line breaks flattened."""
    return text.replace("|", "\\|").replace("\n", " ")


def table(frame: pd.DataFrame) -> str:
    """A frame as a markdown table (:func:`cell` for each value)."""
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(cell(str(v)) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def rule_sections(rows: pd.DataFrame, by: str) -> list[str]:
    """Markdown lines of a reading's "Per rule" table (rows and CORRECT per ``by`` and rule) and its WRONG rows with
    the reader's notes, from :func:`verdicts` rows."""
    per_rule = rows.groupby([by, "rule"], sort=False).agg(rows=("correct", "size"), correct=("correct", "sum"))
    wrong = rows[~rows["correct"]][[by, "number", "rule", "note"]]
    return ["## Per rule", "", table(per_rule.reset_index()), "", "## WRONG rows", "", table(wrong), ""]


def command_line(script: str) -> str:
    """The command that is running, as ``python SCRIPT ARGS`` without ``--overwrite`` (for a report to name)."""
    return " ".join(["python", script, *(a for a in sys.argv[1:] if a != "--overwrite")])


def add_summarise(commands, out: Path) -> None:
    """The ``summarise`` sub-command of a re-reading study: ``--out`` (default ``out``) and ``--overwrite``."""
    summarise = commands.add_parser("summarise", help="precision from the readings")
    summarise.add_argument("--out", default=str(out))
    summarise.add_argument("--overwrite", action="store_true", help="replace an existing precision.md")


def reading_study(doc: str, out: Path, sample: Callable, summarise: Callable, add_options=None) -> None:
    """The command line of a reading study: ``sample`` writes ``sample.md`` and ``key.json`` into ``--out`` for
    the reader, ``summarise`` reads their ``reading.md`` into ``summary.{md,json}``. Each stage refuses its existing
    files (``--overwrite`` replaces them) before the data folder is set up; ``add_options(parser)`` adds a study's
    own options. The stage's function gets the parsed arguments."""
    import pyterrier_compverify as cv
    from pyterrier_compverify.reporting import refuse_existing, refuse_overwrite

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=["sample", "summarise"])
    if add_options is not None:
        add_options(parser)
    parser.add_argument("--out", default=str(out))
    parser.add_argument("--overwrite", action="store_true", help="replace the stage's existing files in --out")
    args = parser.parse_args()
    folder = Path(args.out)
    if args.stage == "sample":
        refuse_existing([folder / "sample.md", folder / "key.json"], args.overwrite)
    else:
        refuse_overwrite(folder / "summary", args.overwrite)
    cv.setup_local_data()
    (sample if args.stage == "sample" else summarise)(args)
