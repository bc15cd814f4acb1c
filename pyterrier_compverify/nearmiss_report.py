"""``compverify nearmiss``: the near-miss table for named scorers, written with the command that made it."""

from __future__ import annotations

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
