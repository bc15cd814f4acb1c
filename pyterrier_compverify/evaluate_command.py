"""``compverify evaluate``: its options and the command that runs :func:`~.evaluate.run_evaluation` and prints the
summary (the evaluation itself is in :mod:`.evaluate`)."""

from __future__ import annotations

import argparse

from .evaluate import CORRECTIONS, run_evaluation
from .spec import DEFAULT_BATCH_SIZE, DEFAULT_MAX_LENGTH


def register(subparsers) -> None:
    """Add ``compverify evaluate`` (run by :func:`evaluate_command`) to the command's sub-parsers."""
    from .cli_options import add_common_options, default_of, positive_int

    def default(name):
        return default_of(run_evaluation, name)

    parser = subparsers.add_parser(
        "evaluate",
        help="pt.Experiment of BM25, dense and dense >> rerankers on a dataset",
        description="pt.Experiment of BM25, dense retrieval and dense's top --depth reranked by each of --rerankers, "
        "on an ir_datasets id (e.g. irds:beir/scifact/test) or a compverify collection. The first run on a "
        "collection encodes all of it (minutes to hours on a CPU); its BM25 index, dense index and token store are "
        "kept under --index-dir and reused by later runs with the same encoder. Writes "
        "compverify-results/evaluate-NAME.{md,json}.",
    )
    add_common_options(parser)
    parser.add_argument("dataset", help="e.g. irds:cranfield, irds:beir/scifact/test, compverify/capretrieval/en")
    parser.add_argument(
        "--rerankers",
        default=",".join(default("rerankers")),
        help="comma-separated: maxsim, mapverifier, mapcnn, weightedmaxsim (packaged weights) or a trained verifier "
        "folder (default: %(default)s)",
    )
    parser.add_argument(
        "--depth", type=positive_int, default=default("depth"), help="rerank depth (default: %(default)s)"
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=default("max_length"),
        help=f"tokens per text (default: the encoder's, {DEFAULT_MAX_LENGTH})",
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=default("batch_size"),
        help=f"encoder batch size (default: the encoder's, {DEFAULT_BATCH_SIZE})",
    )
    parser.add_argument(
        "--index-dir",
        default=default("index_dir"),
        help="where indices are kept (default: $COMPVERIFY_CACHE, else ~/.cache/pyterrier_compverify)",
    )
    parser.add_argument(
        "--out-dir",
        default=default("out_dir"),
        help="folder for evaluate-<dataset>.{md,json}, relative to the current folder (default: %(default)s)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace existing tables in --out-dir")
    parser.add_argument(
        "--baseline",
        default=default("baseline"),
        help="system for significance tests, e.g. 'Dense >> MaxSim@100' (default: %(default)s)",
    )
    parser.add_argument(
        "--correction",
        choices=CORRECTIONS,
        help="correct the p-values against --baseline for the number of systems (e.g. holm); the tables then "
        "mark corrected p < 0.05 (default: none)",
    )
    parser.add_argument("--reference", action="store_true", help="add a plain SentenceTransformer.encode run")
    parser.add_argument(
        "--fusion",
        action="store_true",
        help="add the union of dense's and BM25's top --fusion-depth >> WeightedMaxSim + 0.1 BM25",
    )
    parser.add_argument("--fusion-depth", type=positive_int, help="pool depth of --fusion (default: 300)")
    parser.add_argument(
        "--fusion-head", metavar="F1W_FOLDER", help="a trained F1w head for --fusion (default: the packaged one)"
    )
    parser.add_argument(
        "--fusion-wordnet",
        type=float,
        metavar="WEIGHT",
        help="add --fusion with WordNetCoverage at this weight beside it (e.g. 0.5; English; the [negatives] extra)",
    )
    parser.add_argument(
        "--fusion-cross-encoder",
        metavar="MODEL",
        help="add --fusion (with --fusion-wordnet where given) whose top 30 a cross-encoder (name or folder) reads",
    )
    parser.add_argument(
        "--fusion-cross-encoder-weight",
        type=float,
        metavar="WEIGHT",
        help="the cross-encoder's weight beside the fusion's score (default: 0.25)",
    )
    parser.add_argument(
        "--fusion-cross-encoder-dtype",
        choices=("fp32", "bf16"),
        help="the cross-encoder's precision: bf16 is about 2x faster on a CPU with bf16 units, ranking nearly alike; "
        "the system's name then ends in (bf16) (default: fp32, in which the README's figures were made)",
    )
    parser.set_defaults(func=evaluate_command)


def evaluate_command(args: argparse.Namespace):
    """``compverify evaluate``: run, print the summary table and where the tables were written."""
    from .cli_options import given, refuse_ignored
    from .reporting import significance_note, summary_table

    if not args.fusion:
        refuse_ignored(
            args,
            [
                "fusion_depth",
                "fusion_head",
                "fusion_wordnet",
                "fusion_cross_encoder",
                "fusion_cross_encoder_weight",
                "fusion_cross_encoder_dtype",
            ],
            "without --fusion",
        )
    results = run_evaluation(
        args.dataset,
        rerankers=args.rerankers.split(","),
        max_length=args.max_length,
        batch_size=args.batch_size,
        depth=args.depth,
        index_dir=args.index_dir,
        out_dir=args.out_dir,
        baseline=args.baseline,
        correction=args.correction,
        reference=args.reference,
        fusion=(True if args.fusion_head is None else args.fusion_head) if args.fusion else False,
        overwrite=args.overwrite,
        **given(
            args,
            "model",
            "device",
            "fusion_depth",
            "fusion_wordnet",
            "fusion_cross_encoder",
            "fusion_cross_encoder_weight",
            "fusion_cross_encoder_dtype",
        ),  # fmt: skip
    )
    print(summary_table(results).to_markdown(index=False, disable_numparse=True))
    print(
        f"*: {significance_note(results)} against {args.baseline}. All tables: {results.attrs['written']} (and .json)"
    )
    return results
