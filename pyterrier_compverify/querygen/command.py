"""``compverify querygen``: passages in, labelled training queries out (leakage-filtered, with a validation
hold-out)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pandas as pd

from . import COLUMNS, KeywordQueries, LLMQueries, drop_leaking, generate_queries, hf_chat, validation_split


def read_passages(source: str, *, limit: int | None = None) -> pd.DataFrame:
    """Passages (``docno``, ``text``) from a .jsonl / .csv / .tsv file, or from a collection id such as
    ``irds:beir/scifact/test`` or ``compverify/capretrieval/en``."""
    from ..cli_options import missing_file

    path = Path(source).expanduser()  # "~/p.jsonl" given after "=" is not expanded by the shell
    if missing_file(source):
        raise FileNotFoundError(f"no such file: {source}")
    if path.is_file():
        if path.suffix == ".jsonl":
            frame = pd.read_json(path, lines=True, dtype={"docno": str, "id": str, "text": str})
        elif path.suffix in (".csv", ".tsv"):
            frame = pd.read_csv(path, sep="\t" if path.suffix == ".tsv" else ",", dtype=str, keep_default_na=False)
        else:
            raise ValueError(f"{path}: passages must be .jsonl, .csv or .tsv")
        frame = frame if "docno" in frame.columns else frame.rename(columns={"id": "docno"})  # docno wins over id
        missing = {"docno", "text"} - set(frame.columns)
        if missing:
            raise ValueError(f"{path}: missing column(s) {sorted(missing)}; found {list(frame.columns)}")
    else:
        from ..evaluate import open_collection  # an unknown id: a KeyError with a "did you mean" hint

        frame = pd.DataFrame(list(open_collection(source).corpus_iter()))
    frame = frame[frame["text"].fillna("").str.strip() != ""]
    return frame.head(limit) if limit else frame


def make_generator(strategy: str, backend: str, *, base_url: str | None = None, seed: int = 0):
    """``offline`` (KW only), ``openai:MODEL`` (an OpenAI-compatible endpoint) or ``hf:MODEL`` (local model)."""
    if backend == "offline":
        if strategy != "KW":
            raise ValueError("the offline backend writes KW queries only; SM needs openai:MODEL or hf:MODEL")
        return KeywordQueries()
    kind, _, model = backend.partition(":")
    if kind == "openai" and model:
        from ..chat import ChatClient

        return LLMQueries(strategy, ChatClient(model, base_url=base_url), seed=seed)
    if kind == "hf" and model:
        return LLMQueries(strategy, hf_chat(model), seed=seed)
    raise ValueError(f"backend must be offline, openai:MODEL or hf:MODEL, got {backend!r}")


def run_querygen(
    passages: str,
    out: str | os.PathLike,
    *,
    strategy: str = "KW",
    backend: str = "offline",
    base_url: str | None = None,
    test: str | None = None,
    leakage: float = 0.6,
    validation: float = 0.05,
    limit: int | None = None,
    seed: int = 0,
    overwrite: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``out`` (training queries, .jsonl or .csv) and ``out`` with ``.valid`` before its suffix (the held-out
    share); existing files are refused before any work unless ``overwrite``."""
    from ..artifacts import frame_text, write_texts
    from ..reporting import output_files

    if not 0.0 <= leakage <= 1.0:
        raise ValueError(f"leakage is a ROUGE-L threshold in [0, 1], got {leakage}")
    out = Path(out)
    out, valid_path = output_files(
        [out, out.with_name(out.stem + ".valid" + out.suffix)], (".jsonl", ".csv"), overwrite
    )
    frame = read_passages(passages, limit=limit)
    n_passages = len(frame)
    if test:
        test_texts = read_passages(test)["text"].tolist()
        frame = frame[drop_leaking(frame["text"].tolist(), test_texts, threshold=leakage)]
    dropped = n_passages - len(frame)
    queries = generate_queries(frame, make_generator(strategy, backend, base_url=base_url, seed=seed))
    train, valid = validation_split(queries, share=validation, seed=seed) if len(queries) else (queries, queries)
    out.parent.mkdir(parents=True, exist_ok=True)
    texts = {path: frame_text(rows[COLUMNS], path) for rows, path in ((train, out), (valid, valid_path))}
    write_texts(texts, replace=overwrite)  # both whole, or neither
    print(
        f"{n_passages} passages, {dropped} dropped by the leakage filter (ROUGE-L > {leakage}); "
        f"{len(train)} training queries -> {out}, {len(valid)} validation queries -> {valid_path}"
    )
    return train, valid


def held_out_share(text: str) -> float:
    """An argparse ``type``: a share above 0 and below 1 (``--validation 0`` still held out one passage).

    >>> held_out_share("0.1")
    0.1
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and below 1, got {value}")
    return value


def register(subparsers) -> None:
    """Add ``compverify querygen`` (run by :func:`querygen_command`) to the command's sub-parsers."""
    from ..cli_options import add_data_dir_option, default_of, positive_int

    def default(name):
        return default_of(run_querygen, name)

    parser = subparsers.add_parser(
        "querygen", help="SM / KW training queries for passages (leakage filter, validation split)"
    )
    add_data_dir_option(parser)
    parser.add_argument("passages", help=".jsonl/.csv/.tsv with docno (or id) and text, or a collection id")
    parser.add_argument("out", help="output .jsonl or .csv (validation queries go to OUT.valid.<suffix>)")
    parser.add_argument(
        "--strategy",
        default=default("strategy"),
        choices=["SM", "KW"],
        help="SM: summaries / long questions about the whole passage (coarse); KW: salient keywords, hypernyms and "
        "short user-style queries (fine) (default: %(default)s)",
    )
    parser.add_argument(
        "--backend",
        default=default("backend"),
        help="offline (KW only), openai:MODEL or hf:MODEL (default: %(default)s)",
    )
    parser.add_argument(
        "--base-url", default=None, help="OpenAI-compatible endpoint, openai:MODEL only (default: $OPENAI_BASE_URL)"
    )
    parser.add_argument("--test", default=None, help="test passages (file or collection id) for the leakage filter")
    parser.add_argument(
        "--leakage",
        type=float,
        default=None,
        help=f"with --test: drop passages above this ROUGE-L to a test one (default: {default('leakage')})",
    )
    parser.add_argument(
        "--validation",
        type=held_out_share,
        default=default("validation"),
        help="share of passages held out, above 0 and below 1: at least one is held out (default: %(default)s)",
    )
    parser.add_argument("--limit", type=positive_int, default=None, help="first N passages")
    parser.add_argument("--seed", type=int, default=default("seed"), help="sampling seed (default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT and its .valid file")
    parser.set_defaults(func=querygen_command)


def querygen_command(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``compverify querygen`` from its parsed options; options the chosen backend or filter ignores are refused."""
    from ..cli_options import given, refuse_ignored

    if not args.backend.startswith("openai:"):
        refuse_ignored(args, ["base_url"], f"with --backend {args.backend} (it is the endpoint of openai:MODEL)")
    if args.test is None:
        refuse_ignored(args, ["leakage"], "without --test (the leakage filter compares with test passages)")
    return run_querygen(
        args.passages,
        args.out,
        strategy=args.strategy,
        backend=args.backend,
        test=args.test,
        validation=args.validation,
        limit=args.limit,
        seed=args.seed,
        overwrite=args.overwrite,
        **given(args, "base_url", "leakage"),
    )
