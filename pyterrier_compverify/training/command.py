"""``compverify train-verifier`` and ``compverify train-encoder``: the training commands, their options read
from the training configs (``VerifierTrainingConfig``, ``EncoderTrainingConfig``) and ``recipe_rows``."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from ..cli_options import add_common_options, default_of, given, positive_int, refuse_ignored
from ..spec import DEFAULT_MAX_LENGTH
from .config import MODES, EncoderTrainingConfig, VerifierTrainingConfig
from .data import recipe_rows

MAX_LENGTH_HELP = f"tokens per text (default: the encoder's, {DEFAULT_MAX_LENGTH})"
OVERWRITE_HELP = "replace a run with other rows or options in OUT (default: refuse it; the same run resumes)"


def register(subparsers) -> None:
    """Add ``compverify train-verifier`` and ``compverify train-encoder`` to the command's sub-parsers."""
    register_train_verifier(subparsers)
    register_train_encoder(subparsers)


def register_train_verifier(subparsers) -> None:
    """``compverify train-verifier``, run by :func:`train_verifier_command`."""
    from ..scoring import HEADS

    def default(name):
        return default_of(VerifierTrainingConfig, name)

    parser = subparsers.add_parser(
        "train-verifier", help="train a verifier head (frozen or end-to-end) on triplet rows"
    )
    add_common_options(parser, data_dir=False)  # the rows come from a file: no dataset is read
    parser.add_argument("rows", help=".jsonl/.csv/.tsv with anchor, positive, negative columns")
    parser.add_argument("out", help="artifact folder (checkpoints inside; a killed run resumes)")
    weight_free = ", ".join(name for name, spec in HEADS.items() if not spec.learned)
    parser.add_argument(
        "--head",
        default=default("head"),
        choices=list(HEADS),
        help=f"{weight_free} have no weights: they train the encoder (last-layer or end-to-end, not frozen; "
        "--head-lr does nothing for them) (default: %(default)s)",
    )
    parser.add_argument(
        "--mode",
        default=default("mode"),
        choices=list(MODES),
        help="frozen: the head over cached token states; last-layer: also the encoder's top --top-layers over "
        "cached states of the layer below; end-to-end: the whole encoder (default: %(default)s)",
    )
    parser.add_argument(
        "--top-layers",
        type=positive_int,
        default=None,
        help=f"encoder layers that learn, --mode last-layer only (default: {default('top_layers')})",
    )
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (fast on CPUs with AVX-512 bf16)")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the head (fused kernels; the first steps take a minute or two to compile)",
    )
    parser.add_argument(
        "--steps", type=positive_int, default=default("steps"), help="training steps (default: %(default)s)"
    )
    parser.add_argument("--batch-size", type=positive_int, default=default("batch_size"), help="(default: %(default)s)")
    parser.add_argument(
        "--head-lr", type=float, default=default("head_lr"), help="head learning rate (default: %(default)s)"
    )
    parser.add_argument(
        "--encoder-lr",
        type=float,
        default=None,
        help=f"learning rate of the encoder layers that learn, not --mode frozen (default: {default('encoder_lr')})",
    )
    parser.add_argument(
        "--encoder-dropout",
        type=float,
        default=None,
        help="dropout of the encoder layers that learn, not --mode frozen (default: 0 for last-layer, which trains "
        "over the states serving reads; the model's own for end-to-end)",
    )
    parser.add_argument("--seed", type=int, default=default("seed"), help="(default: %(default)s)")
    parser.add_argument("--max-length", type=int, default=None, help=MAX_LENGTH_HELP)
    parser.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    parser.set_defaults(func=train_verifier_command)


def train_verifier_command(args: argparse.Namespace):
    """Train and save a verifier; print where, and the last loss."""
    from ..encoder import DEFAULT_MODEL, TokenEncoder
    from .verifier import train_verifier

    if args.mode != "last-layer":
        refuse_ignored(args, ["top_layers"], f"with --mode {args.mode} (it is the layer count of last-layer)")
    if args.mode == "frozen":
        refuse_ignored(args, ["encoder_lr", "encoder_dropout"], "with --mode frozen (the encoder does not learn)")
    config = VerifierTrainingConfig(
        head=args.head,
        mode=args.mode,
        steps=args.steps,
        batch_size=args.batch_size,
        head_lr=args.head_lr,
        seed=args.seed,
        bf16=args.bf16,
        compile=args.compile,
        **given(args, "top_layers", "encoder_lr", "encoder_dropout"),
    )
    encoder = TokenEncoder(args.model or DEFAULT_MODEL, max_length=args.max_length, device=args.device)
    verifier, log = train_verifier(args.rows, args.out, encoder=encoder, config=config, overwrite=args.overwrite)
    print(f"saved {verifier}; last loss {log[-1]['loss']:.4f}" if log else f"saved {verifier}")
    return verifier


def register_train_encoder(subparsers) -> None:
    """``compverify train-encoder``, run by :func:`train_encoder_command`."""

    def default(name):
        return default_of(EncoderTrainingConfig, name)

    def rows_default(name):
        return default_of(recipe_rows, name)

    parser = subparsers.add_parser("train-encoder", help="fine-tune a bi-encoder on Model A's or Model B's rows")
    add_common_options(parser)
    parser.add_argument("out", help="output folder (checkpoints inside; the model in OUT/final)")
    parser.add_argument("--recipe", default="A", choices=["A", "B"], help="A: retrieval rows; B: plus structural")
    parser.add_argument("--edits", default=None, help="structural edits from `compverify negatives` (recipe B)")
    parser.add_argument(  # recipe B's options default to None, so that recipe A can refuse them when given
        "--share", type=float, default=None, help=f"structural share of B's rows (default: {rows_default('share')})"
    )
    parser.add_argument(
        "--positives",
        default=None,
        choices=["identity", "paraphrase"],
        help=f"positives of B's structural rows (default: {rows_default('positives')})",
    )
    parser.add_argument(
        "--self-supervised",
        type=positive_int,
        default=rows_default("self_supervised"),
        help="title -> abstract pairs added to the rows (default: %(default)s)",
    )
    parser.add_argument(
        "--balanced", action="store_true", default=None, help="as many structural rows of each category (recipe B)"
    )
    parser.add_argument(
        "--steps", type=positive_int, default=default("steps"), help="training steps (default: %(default)s)"
    )
    parser.add_argument("--batch-size", type=positive_int, default=default("batch_size"), help="(default: %(default)s)")
    parser.add_argument("--lr", type=float, default=default("lr"), help="learning rate (default: %(default)s)")
    parser.add_argument(
        "--max-length", type=int, default=default("max_length"), help="tokens per text (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=default("seed"), help="(default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true", default=None, help=OVERWRITE_HELP)
    parser.set_defaults(func=train_encoder_command)


def read_edits(path: str) -> pd.DataFrame:
    """The edits table `compverify negatives` wrote (.jsonl or .csv), with its columns checked."""
    path = Path(path).expanduser()
    edits = (
        pd.read_csv(path, dtype=str, keep_default_na=False) if path.suffix == ".csv" else pd.read_json(path, lines=True)
    )
    missing = sorted({"sentence1", "sentence2", "category"} - set(edits.columns))
    if missing:
        raise ValueError(
            f"{path}: missing column(s) {missing}, found {list(edits.columns)}; write the edits with "
            "`compverify negatives`"
        )
    return edits


def train_encoder_command(args: argparse.Namespace):
    """Build the recipe's rows, fine-tune, print the row counts and where the model was saved."""
    from .biencoder import train_encoder

    structural = ["edits", "share", "positives", "balanced"]
    if args.recipe == "A":
        refuse_ignored(args, structural, "with --recipe A (it has no structural rows; they are recipe B's)")
    elif not args.edits:
        raise ValueError("recipe B needs --edits (a table written by `compverify negatives`)")
    if args.device is not None:  # before the rows are built (the model and max length: before OUT is made)
        from .._device import resolve_device

        resolve_device(args.device)
    rows = recipe_rows(
        args.recipe,
        edits=read_edits(args.edits) if args.edits else None,
        self_supervised=args.self_supervised,
        seed=args.seed,
        **given(args, *structural[1:]),
    )
    config = EncoderTrainingConfig(
        steps=args.steps, batch_size=args.batch_size, lr=args.lr, max_length=args.max_length, seed=args.seed
    )
    model = train_encoder(rows, args.out, config=config, **given(args, "model", "device", "overwrite"))
    print(f"trained on {len(rows)} rows {rows['kind'].value_counts().to_dict()}; saved {model.model_name}")
    return model
