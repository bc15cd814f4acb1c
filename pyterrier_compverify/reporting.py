"""Experiment tables: the measures reported, the summary and per-query-type tables, and writing them with their
provenance (command, encoder, date, time, versions)."""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from ir_measures import RR, R, Success, nDCG

from .artifacts import write_texts

MEASURES = [nDCG @ 10, RR @ 10, Success @ 1, Success @ 10, R @ 100]
_TEST_COLUMNS = (" +", " -", " p-value", " p-value corrected", " reject")  # pt.Experiment's columns per measure


def summary_table(results: pd.DataFrame, measures: list[str] | None = None) -> pd.DataFrame:
    """Name and measures (default: every measure column, in the frame's order), a measure marked ``*`` where its
    p-value against the baseline is below 0.05: the corrected p-value where the frame has one (``<measure> p-value
    corrected``, from :func:`with_correction`), else the paired t-test's."""
    if measures is None:
        measures = [c for c in results.columns[1:] if not c.endswith(_TEST_COLUMNS)]
    table = results[["name"]].copy()
    for m in measures:
        p = results.get(f"{m} p-value corrected", results.get(f"{m} p-value"))
        marks = ["*" if p is not None and pv < 0.05 else "" for pv in (p if p is not None else [None] * len(results))]
        table[m] = [f"{v:.4f}{mark}" for v, mark in zip(results[m], marks)]
    return table


def with_correction(results: pd.DataFrame, method: str) -> pd.DataFrame:
    """``results`` (a ``pt.Experiment`` frame with p-values against a baseline) with ``<measure> p-value
    corrected`` columns: statsmodels' ``multipletests(method)`` over the systems' p-values of each measure. A NaN
    p-value (a system equal to the baseline on every query) is left out of the correction and stays NaN
    (``pt.Experiment(correction=...)`` counts it as a test, and ``fdr_bh`` turns the whole column into NaN).

    >>> frame = pd.DataFrame({"name": ["base", "a", "b", "c"], "m": [0.1, 0.2, 0.3, 0.1],
    ...                       "m p-value": [None, 0.001, 0.02, float("nan")]})
    >>> with_correction(frame, "bonferroni")["m p-value corrected"].round(4).tolist()
    [nan, 0.002, 0.04, nan]
    """
    from statsmodels.stats.multitest import multipletests

    results = results.copy()
    for column in [c for c in results.columns if c.endswith(" p-value")]:
        p = results[column].astype(float)
        tested = p.notna()
        corrected = pd.Series(float("nan"), index=results.index)
        if tested.any():
            corrected[tested] = multipletests(p[tested].to_numpy(), method=method)[1]
        results[f"{column} corrected"] = corrected
    results.attrs["correction"] = method
    return results


def significance_note(results: pd.DataFrame) -> str:
    """What a ``*`` of :func:`summary_table` means for ``results``: ``"paired t-test p < 0.05"``, or with the
    correction named where the frame has corrected p-values."""
    correction = results.attrs.get("correction")
    corrected = any(c.endswith(" p-value corrected") for c in results.columns)
    if corrected:
        return f"paired t-test p < 0.05 after the {correction or 'multiple-test'} correction"
    return "paired t-test p < 0.05"


def by_query_type(runs: dict, topics, qrels, types: dict) -> pd.DataFrame:
    """Mean per-query nDCG@10 by query type (rows) and system (columns, ``runs``: name -> result frame), with the
    number of queries."""
    import pyterrier as pt

    per_query = pt.Experiment(list(runs.values()), topics, qrels, [nDCG @ 10], names=list(runs), perquery=True)
    per_query["type"] = per_query["qid"].map(types)
    table = per_query.pivot_table(index="type", columns="name", values="value", aggfunc="mean")[list(runs)]
    table.columns.name = None
    table = table.round(4)
    table.insert(0, "queries", pd.Series(types).value_counts())
    return table


def error_view(runs: dict, qrels: pd.DataFrame, types: dict, k: int = 10) -> pd.DataFrame:
    """Per system and query type: queries with no relevant document in the system's top k although BM25 has
    one there (literal miss), and queries that neither finds (other miss)."""
    relevant = qrels[qrels["label"] > 0].groupby("qid")["docno"].apply(set)

    def hits(run):
        top = run[run["rank"] < k].groupby("qid")["docno"].apply(set)
        return {qid: bool(top.get(qid, set()) & docs) for qid, docs in relevant.items()}

    bm25 = hits(runs["BM25"])
    rows = []
    for name, run in runs.items():
        if name == "BM25":
            continue
        found = hits(run)
        for qid in relevant.index:
            if not found[qid]:
                kind = "literal miss" if bm25[qid] else "other miss"
                rows.append({"system": name, "type": types.get(qid, "unknown"), "kind": kind})
    if not rows:
        return pd.DataFrame()
    return pd.crosstab(
        [pd.Series([r["system"] for r in rows], name="system"), pd.Series([r["kind"] for r in rows], name="miss")],
        pd.Series([r["type"] for r in rows], name="type"),
        margins=True,
    )


def evaluation_markdown(
    results: pd.DataFrame, measures: list[str], runs: dict, topics, qrels, types: dict | None = None
) -> str:
    """The summary table; for a collection with query types, nDCG@10 per type and the misses; then all columns."""
    sections = [
        summary_table(results, measures).to_markdown(index=False, disable_numparse=True),
        "",
        f"`*`: {significance_note(results)} against the baseline (the row without p-values).",
    ]
    if types:
        sections += [
            "",
            "## nDCG@10 per query type",
            "",
            by_query_type(runs, topics, qrels, types).to_markdown(),
            "",
            "## Misses: relevant documents in BM25's top 10 but not the system's (literal miss) or in "
            "neither (other miss), queries per type",
            "",
            error_view(runs, qrels, types).to_markdown(),
        ]
    return "\n".join([*sections, "", "## All columns", "", results.to_markdown(index=False)])


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except (ImportError, AttributeError):
        return "?"


def result_files(stem: str | Path) -> tuple[Path, Path]:
    """The ``.md`` and ``.json`` files :func:`write_table` writes for ``stem`` (a dot in the stem's name stays:
    ``tau0.05`` gives ``tau0.05.md``; a stem given as ``name.md`` or ``name.json`` gives the same pair).

    >>> [str(f) for f in result_files("out/tau0.05")], [f.name for f in result_files("out/x.json")]
    (['out/tau0.05.md', 'out/tau0.05.json'], ['x.md', 'x.json'])
    """
    stem = Path(stem)
    stem = stem.with_name(stem.stem) if stem.suffix in (".md", ".json") else stem
    return stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".json")


def refuse_overwrite(stem: str | Path, overwrite: bool, error: type[BaseException] = SystemExit) -> None:
    """Stop (``error`` naming the files) when :func:`write_table` would replace results at ``stem`` and
    ``overwrite`` is not set: run it before any work, so that a committed result is never replaced by accident.
    Scripts stop with SystemExit; the package's functions raise FileExistsError (the CLI prints it in one line), whose
    message names both the argument and the command-line option. A folder that cannot hold them (a file on the
    path, no write permission) is refused too, so that hours of work do not end at the write: with ``error`` for a
    script, else NotADirectoryError / PermissionError."""
    refuse_existing(result_files(stem), overwrite, error)
    try:
        check_writable(Path(stem).parent)
    except OSError as e:
        if error is SystemExit:
            raise SystemExit(str(e)) from None
        raise


def output_files(paths, suffixes: tuple[str, ...], overwrite: bool) -> list[Path]:
    """``paths`` with ``~`` expanded, checked before any work: each with one of ``suffixes`` (ValueError), none
    there already unless ``overwrite`` (FileExistsError naming ``--overwrite``), their folders writable or makeable.

    >>> [p.name for p in output_files(["q.jsonl"], (".jsonl", ".csv"), overwrite=True)]
    ['q.jsonl']
    """
    paths = [Path(p).expanduser() for p in paths]
    for path in paths:
        if path.suffix not in suffixes:
            raise ValueError(f"{path}: write {' or '.join(suffixes)} (the suffix chooses the format)")
    refuse_existing(paths, overwrite, FileExistsError)
    for path in paths:
        check_writable(path.parent)
    return paths


def check_writable(folder: str | Path) -> None:
    """Raise NotADirectoryError / PermissionError unless ``folder`` exists as a writable folder or can be made
    (its nearest existing ancestor is a writable folder)."""
    existing = Path(folder).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"cannot write results under {folder}: {existing} is a file")
    if not os.access(existing, os.W_OK):
        raise PermissionError(f"cannot write results under {folder}: {existing} is not writable")


def refuse_existing(files, overwrite: bool, error: type[BaseException] = SystemExit) -> None:
    """Stop (``error`` naming those that exist) when any of ``files`` exists and ``overwrite`` is not set."""
    held = [str(f) for f in files if Path(f).exists()]
    if held and not overwrite:
        option = "--overwrite" if error is SystemExit else "overwrite=True (--overwrite)"  # a script, or a function
        raise error(f"{' and '.join(held)}: already written; pass {option} or choose another output")


def json_records(table: pd.DataFrame) -> list[dict]:
    """The rows of ``table`` as JSON-ready dicts, float64 columns at full precision (NaN and infinities: None, as
    ``to_json`` writes them). pandas' ``to_json`` keeps 10 decimals, so a p-value of 3.5e-11 was written as 0.0.

    >>> json_records(pd.DataFrame({"name": ["a", "b"], "p": [3.5e-11, float("inf")]}))
    [{'name': 'a', 'p': 3.5e-11}, {'name': 'b', 'p': None}]
    """
    records = json.loads(table.to_json(orient="records"))
    for column in table.columns:
        if table[column].dtype == "float64":
            for record, value in zip(records, table[column]):
                record[str(column)] = float(value) if math.isfinite(value) else None
    return records


def write_table(
    table: pd.DataFrame,
    stem: Path,
    title: str,
    encoder,
    elapsed: float,
    markdown: str | None = None,
    overwrite: bool = True,
) -> None:
    """``stem.md`` and ``stem.json`` (:func:`result_files`), each with the command that made them. ``overwrite``
    False: files that another run wrote there since :func:`refuse_overwrite` was checked are not replaced
    (FileExistsError, nothing written)."""
    md_file, json_file = result_files(stem)
    md_file.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]])
    info = {
        "title": title,
        "command": command,
        "encoder": encoder.describe() if encoder is not None else None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(elapsed, 1),
        "cpu_cores": os.cpu_count(),
        "versions": {m: _version(m) for m in ("pyterrier", "pyterrier_dr", "pyterrier_pisa", "torch", "transformers")},
    }
    records = json_records(table)
    json_text = json.dumps({**info, "results": records}, indent=2) + "\n"
    lines = [
        f"# {title}",
        "",
        f"Command: `{command}`  ",
        f"Encoder: {info['encoder']}  ",
        f"Date: {info['date']}, {info['seconds']} s on {info['cpu_cores']} CPU cores",
        "",
        markdown if markdown is not None else table.to_markdown(index=False),
        "",
    ]
    write_texts({json_file: json_text, md_file: "\n".join(lines)}, replace=overwrite)  # both whole, or neither
