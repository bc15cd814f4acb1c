"""``compverify nearmiss``: the near-miss table for named scorers, written with the command that made it."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from .datasets.nearmiss import nearmiss_triplets
from .encoder import DEFAULT_MODEL, TokenEncoder
from .evaluate import write_table
from .measures import nearmiss_table
from .rerank import MaxSim


def named_scorers(names: list[str], encoder: TokenEncoder) -> dict:
    """``pooled`` (the encoder's own pooled cosine, pyterrier-dr's text scorer) and ``maxsim``."""
    known = {"pooled": lambda: encoder.text_scorer(), "maxsim": lambda: MaxSim(encoder)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown scorer(s) {unknown}; choose from {sorted(known)}")
    return {name: known[name]() for name in names}


def run_nearmiss(
    *,
    source: str = "all",
    scorers: list[str] = ("pooled", "maxsim"),
    model: str = DEFAULT_MODEL,
    max_length: int = 128,
    device: str | None = None,
    limit: int | None = None,
    out: str | Path | None = None,
) -> pd.DataFrame:
    started = time.time()
    triplets = nearmiss_triplets(source)
    if limit:
        triplets = triplets.groupby("category", group_keys=False).head(limit)
    encoder = TokenEncoder(model, max_length=max_length, device=device)
    table = nearmiss_table(named_scorers(list(scorers), encoder), triplets)
    shown = table.round(4)
    print(shown.to_markdown(index=False))
    if out is not None:
        write_table(shown, Path(out), f"near-miss triplets ({source})", encoder, time.time() - started)
    return table


def register(subparsers) -> None:
    """Add ``compverify nearmiss`` (run by ``nearmiss_command``) to the command's sub-parsers."""
    from .cli_options import add_common_options, default_of

    parser = subparsers.add_parser("nearmiss", help="near-miss table (win rate, AUC, mean similarity) per category")
    add_common_options(parser)
    parser.add_argument(
        "--source", default=default_of(run_nearmiss, "source"), choices=["all", "sugarcrepe", "condaqa"]
    )
    parser.add_argument("--scorers", default="pooled,maxsim", help="comma-separated: pooled, maxsim")
    parser.add_argument("--max-length", type=int, default=default_of(run_nearmiss, "max_length"))
    parser.add_argument("--limit", type=int, default=None, help="first N triplets per category (quick runs)")
    parser.add_argument("--out", default="experiments/results/nearmiss-baselines", help="output stem (.md/.json)")
    parser.set_defaults(func=nearmiss_command)


def nearmiss_command(args: argparse.Namespace) -> pd.DataFrame:
    """``compverify nearmiss`` from its parsed options."""
    from .cli_options import given

    return run_nearmiss(
        source=args.source,
        scorers=args.scorers.split(","),
        max_length=args.max_length,
        limit=args.limit,
        out=args.out,
        **given(args, "model", "device"),
    )
