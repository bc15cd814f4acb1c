"""``compverify nearmiss``: the near-miss table for named scorers, written with the command that made it."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyterrier as pt

from .datasets.nearmiss import nearmiss_triplets
from .spec import DEFAULT_MODEL

if TYPE_CHECKING:
    from .encoder import TokenEncoder

SCORERS = ("pooled", "maxsim", "mapverifier", "mapcnn", "weightedmaxsim", "jaccard", "jaccard-anti")
MODEL_FREE = ("jaccard", "jaccard-anti")  # scorers that use no encoder


class DistinctDocVectors(pt.Transformer):
    """Adds ``doc_vec``, the encoder's pooled vector of each row's text, encoding each distinct text once
    (pyterrier-dr's doc encoder encodes every row; the near-miss table repeats texts across many pairs)."""

    def __init__(self, encoder: TokenEncoder):
        self.encoder = encoder

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        codes, texts = pd.factorize(inp[self.encoder.text_field], use_na_sentinel=False)  # None: refused by encode
        vectors = self.encoder.encode_docs(list(texts))
        return inp.assign(doc_vec=list(np.asarray(vectors)[codes]))


def sample_per_category(triplets: pd.DataFrame, limit: int, seed: int = 0) -> pd.DataFrame:
    """At most ``limit`` rows of each (source, category) of ``triplets``, drawn at random with ``seed`` rather
    than the files' first rows, kept in their original order.

    >>> frame = pd.DataFrame({"source": "s", "category": ["a"] * 5 + ["b"], "id": range(6)})
    >>> sample_per_category(frame, 2)["category"].tolist()
    ['a', 'a', 'b']
    """
    shuffled = triplets.sample(frac=1.0, random_state=seed)
    return shuffled.groupby(["source", "category"], group_keys=False, sort=False).head(limit).sort_index()


def named_scorers(names: list[str], encoder: TokenEncoder) -> dict:
    """Scorers by name: ``pooled`` (the encoder's own pooled cosine, pyterrier-dr's text scorer), ``maxsim``,
    ``mapverifier`` / ``mapcnn`` / ``weightedmaxsim`` (the packaged weights: ``cv.MapVerifier()`` / ``cv.MapCNN()`` /
    ``cv.WeightedMaxSim()``), ``jaccard`` /
    ``jaccard-anti`` (word Jaccard / 1 - word Jaccard, no model), or the path of a trained verifier artifact
    folder (``cv.Verifier(path).reranker()``, named by the path).

    A learned verifier scores over ``encoder`` when it was trained with that encoder, else over the encoder it was
    trained with (its fine-tuned copy, if any) at ``encoder``'s max length (a note says so; the table's
    ``max_length`` column shows the length)."""
    import pyterrier_compverify as cv
    from pyterrier_compverify.verifier import default_verifier_path

    from .measures import WordJaccard

    def learned(make, path: str):
        own = cv.Verifier(path).encoder_for(encoder)
        if own is not encoder:
            print(f"note: {path} was trained over another encoder; scoring with its own, {own!r}", file=sys.stderr)
        return make(encoder=own)

    known = {
        "pooled": lambda: DistinctDocVectors(encoder) >> encoder.text_scorer(),
        "maxsim": lambda: cv.MaxSim(encoder),
        "mapverifier": lambda: learned(lambda **kw: cv.MapVerifier(**kw), default_verifier_path("F4")),
        "mapcnn": lambda: learned(lambda **kw: cv.MapCNN(**kw), default_verifier_path("F3")),
        "weightedmaxsim": lambda: learned(lambda **kw: cv.WeightedMaxSim(**kw), default_verifier_path("F1w")),
        "jaccard": lambda: WordJaccard(),
        "jaccard-anti": lambda: WordJaccard(anti=True),
    }
    unknown = [n for n in names if n not in known and not os.path.isdir(os.path.expanduser(n))]  # "~/f4" too
    if unknown:
        raise ValueError(f"unknown scorer(s) {unknown}; choose from {sorted(known)} or a verifier artifact folder")

    def artifact(path: str):
        return learned(lambda **kw: cv.Verifier(path).reranker(**kw), path)

    return {name: known[name]() if name in known else artifact(name) for name in names}


def scorer_max_length(name: str, scorer: pt.Transformer, encoder: TokenEncoder) -> int | None:
    """The max length (tokens) a named scorer encodes at; None for a model-free scorer."""
    if name == "pooled":
        return encoder.max_length
    return getattr(getattr(scorer, "encoder", None), "max_length", None)


LEGEND = """\
Per triplet (anchor a, positive p, near-miss n): `win_rate` s(a,p) > s(a,n); `identity_win` s(a,a) > s(a,n);
`para_ge_identity` share with s(a,p) >= s(a,a) (lower is better: a paraphrase should not beat an exact copy);
`distractor_r1` p ranked strictly first among p, n and {k} texts (anchors or positives) of other items of the same
source, seed {seed}; `headline` = min(win_rate, identity_win). Ties count as losses (`tie_rate` of p vs n).
`max_length`: tokens the scorer encodes at (empty: no model)."""


def run_nearmiss(
    *,
    source: str = "all",
    scorers: list[str] = ("pooled", "maxsim"),
    model: str = DEFAULT_MODEL,
    max_length: int = 256,
    device: str | None = None,
    limit: int | None = None,
    distractors: int = 20,
    seed: int = 0,
    out: str | Path | None = None,
    overwrite: bool = False,
) -> pd.DataFrame:
    """The near-miss table (``measures.nearmiss_table``) of named scorers (``named_scorers``), printed and, with
    ``out``, written to ``out.md`` / ``out.json`` with the command line. ``limit``: N triplets per (source,
    category), drawn with ``seed`` (``sample_per_category``). ``max_length`` 256 by default: CondaQA passages need
    it, at 128 the edit is cut off and the tie counts as a loss. An existing ``out`` pair is refused
    (FileExistsError, before any work) unless ``overwrite``."""
    from .encoder import TokenEncoder
    from .measures import nearmiss_table
    from .reporting import refuse_overwrite, write_table

    started = time.time()
    if out is not None:
        out = Path(out).expanduser()
        if out.is_dir():  # a stem, not a folder: the tables would land beside it as FOLDER.md / FOLDER.json
            raise IsADirectoryError(f"--out {out} is a folder; give a file stem inside it, e.g. {out / 'nearmiss'}")
        refuse_overwrite(out, overwrite, FileExistsError)
    model_free = all(name in MODEL_FREE for name in scorers)  # jaccard alone needs no encoder
    # the scorers first: a wrong device, model or scorer name is told before the triplets are read or downloaded
    encoder = None if model_free else TokenEncoder(model, max_length=max_length, device=device)
    scorers = named_scorers(list(scorers), encoder)
    triplets = nearmiss_triplets(source)
    if limit:
        triplets = sample_per_category(triplets, limit, seed)
    table = nearmiss_table(scorers, triplets, distractors=distractors, seed=seed)
    lengths = {name: scorer_max_length(name, scorer, encoder) for name, scorer in scorers.items()}
    table.insert(1, "max_length", table["scorer"].map(lengths).astype("Int64"))
    shown = table.round(4)
    markdown = shown.to_markdown(index=False)
    print(markdown)
    if out is not None:
        title = f"near-miss triplets ({source}{f', {limit} per category, seed {seed}' if limit else ''}) with controls"
        legend = LEGEND.format(k=distractors, seed=seed)
        write_table(shown, out, title, encoder, time.time() - started, f"{legend}\n\n{markdown}", overwrite=overwrite)
        print(f"written to {out}.md and {out}.json")
    return table


def register(subparsers) -> None:
    """Add ``compverify nearmiss`` (run by ``nearmiss_command``) to the command's sub-parsers."""
    from .cli_options import add_common_options, default_of, non_negative_int, positive_int

    parser = subparsers.add_parser(
        "nearmiss",
        help="near-miss table per category: headline, win rate, identity win, distractor recall@1, ...",
        description="Scores SugarCrepe and CondaQA triplets (anchor, positive, near-miss) with each of --scorers "
        "and prints, per category, the win rate (positive above near-miss) beside its controls: the anchor's own "
        "text above the near-miss (identity win), a paraphrase at or above the exact copy, and distractor recall@1. "
        "The headline is min(win rate, identity win). Reads the data from --data-dir or $COMPVERIFY_DATA, else "
        "downloads it.",
    )
    add_common_options(parser)
    parser.add_argument(
        "--source",
        default=default_of(run_nearmiss, "source"),
        choices=["all", "sugarcrepe", "condaqa"],
        help="which near-miss triplets: SugarCrepe's seven categories, CondaQA's two, or both (default: %(default)s)",
    )
    parser.add_argument(
        "--scorers",
        default="pooled,maxsim",
        help=f"comma-separated: {', '.join(SCORERS)} or the folder of a trained verifier artifact; jaccard is "
        "word-set overlap, jaccard-anti 1 - overlap (the control a near-miss benchmark must beat: it prefers "
        "whatever shares fewer words) (default: %(default)s)",
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=None,
        help=f"encoder max length in tokens (default {default_of(run_nearmiss, 'max_length')}: CondaQA passages "
        "need 256, at 128 the edit is cut off and the resulting ties count as losses); a verifier trained over "
        "another (or fine-tuned) encoder scores with its own, at this length",
    )
    parser.add_argument(
        "--limit", type=positive_int, default=None, help="N triplets per category, drawn with --seed (quick runs)"
    )
    parser.add_argument(
        "--distractors",
        type=non_negative_int,
        default=default_of(run_nearmiss, "distractors"),
        help="texts of other items per anchor for distractor recall@1; 0: none (default %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"seed of the distractor draw and of --limit's sample (default {default_of(run_nearmiss, 'seed')})",
    )
    parser.add_argument(
        "--out", default="compverify-results/nearmiss", help="output stem: STEM.md and STEM.json (default %(default)s)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out pair")
    parser.set_defaults(func=nearmiss_command)


def nearmiss_command(args: argparse.Namespace) -> pd.DataFrame:
    """``compverify nearmiss`` from its parsed options; options that no chosen scorer or measure uses are refused."""
    from .cli_options import given, refuse_ignored

    scorers = args.scorers.split(",")
    if all(name in MODEL_FREE for name in scorers):
        refuse_ignored(args, ["model", "device", "max_length"], f"with --scorers {args.scorers} (they use no model)")
    if args.distractors == 0 and args.limit is None:
        refuse_ignored(
            args, ["seed"], "with --distractors 0 and no --limit (it seeds the distractor draw and the sample)"
        )
    return run_nearmiss(
        source=args.source,
        scorers=scorers,
        limit=args.limit,
        distractors=args.distractors,
        out=args.out,
        overwrite=args.overwrite,
        **given(args, "model", "device", "max_length", "seed"),
    )
