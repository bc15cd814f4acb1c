"""``compverify negatives``: sentences in (a text file or a collection's documents), structural near-miss edits
out (.csv or .jsonl), with counts per category, per skip reason and per rule."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path


def read_sentences(source: str, *, limit: int | None = None, seed: int = 0) -> list[str]:
    """The lines of a text file (in order), or the shuffled sentences of a collection's documents."""
    from ..cli_options import missing_file

    if missing_file(source):
        raise FileNotFoundError(f"no such file: {source}")
    if Path(source).expanduser().is_file():  # "~/s.txt" given after "=" is not expanded by the shell
        lines = Path(source).expanduser().read_text(encoding="utf-8").splitlines()
        return lines[:limit] if limit else lines
    from ..training.data import corpus_sentences

    return corpus_sentences(source, limit=limit, seed=seed)


def run_negatives(
    out: str | os.PathLike,
    *,
    sentences: str = "irds:beir/scifact/train",
    categories: Sequence[str] | None = None,
    limit: int | None = None,
    all_edits: bool = False,
    seed: int = 0,
    overwrite: bool = False,
):
    """Write the rule-based edits of ``sentences`` to ``out`` (one per category per sentence unless
    ``all_edits``; ``categories`` default: all) and print what was made; returns the ``GenerationResult``. An
    existing ``out`` is refused before any work unless ``overwrite``."""
    from ..reporting import output_files
    from . import CATEGORIES, RuleBasedGenerator, write_table

    (out,) = output_files([out], (".csv", ".jsonl"), overwrite)
    generator = RuleBasedGenerator(tuple(categories or CATEGORIES))
    texts = read_sentences(sentences, limit=limit, seed=seed)
    result = generator.generate(texts, one_per_category=not all_edits, seed=seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_table(result, out, replace=overwrite)
    counts = result.table["category"].value_counts().to_dict()
    print(f"{result.n_input} sentences -> {len(result.table)} edits {counts}; written to {out}")
    print("skipped: " + ", ".join(f"{k}: {v}" for k, v in sorted(result.skipped.items())))
    rules = result.table["rule"].value_counts().to_dict()
    print("by rule: " + ", ".join(f"{k}: {v}" for k, v in rules.items()))
    return result


def register(subparsers) -> None:
    """Add ``compverify negatives`` (run by :func:`negatives_command`) to the command's sub-parsers."""
    from ..cli_options import add_data_dir_option, default_of, positive_int
    from . import CATEGORIES

    parser = subparsers.add_parser(
        "negatives",
        help="structural near-miss negatives (" + ", ".join(CATEGORIES) + ")",
    )
    add_data_dir_option(parser)
    parser.add_argument("out", help="output table, .csv or .jsonl (sentence1, sentence2, category, rule)")
    parser.add_argument(
        "--sentences",
        default=default_of(run_negatives, "sentences"),
        help="a text file (one sentence a line) or a dataset id whose documents are split into sentences "
        "(default: %(default)s)",
    )
    parser.add_argument("--limit", type=positive_int, default=None, help="at most N sentences")
    parser.add_argument(
        "--categories", default=",".join(CATEGORIES), help="comma-separated categories (default: %(default)s)"
    )
    parser.add_argument("--all-edits", action="store_true", help="every edit, not one per category per sentence")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the sentence shuffle (a dataset) and of the edit picked per category (without --all-edits) "
        f"(default: {default_of(run_negatives, 'seed')})",
    )
    parser.set_defaults(func=negatives_command)


def negatives_command(args: argparse.Namespace):
    """``compverify negatives`` from its parsed options; ``--seed`` where nothing is drawn is refused."""
    from ..cli_options import given, refuse_ignored

    if args.all_edits and Path(args.sentences).expanduser().is_file():
        refuse_ignored(args, ["seed"], "with --all-edits on a text file (nothing is drawn at random)")
    return run_negatives(
        args.out,
        sentences=args.sentences,
        categories=args.categories.split(","),
        limit=args.limit,
        all_edits=args.all_edits,
        overwrite=args.overwrite,
        **given(args, "seed"),
    )
