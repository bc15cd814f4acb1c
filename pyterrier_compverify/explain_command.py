"""``compverify explain QUERY TEXT [TEXT ...]``: each query token's best match in each text and the reranker's score
taken apart, printed; with ``--out``, the token-token maps drawn side by side (see :mod:`.explain`).

Nothing heavy is imported until the command runs, so ``compverify --help`` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .spec import DEFAULT_MAX_LENGTH

HELP = "why a text got its score: the token-token map, each query token's best match, the score taken apart"


def run_explain(
    query: str,
    texts: Sequence[str],
    *,
    reranker: str = "mapverifier",
    out: str | None = None,
    model: str | None = None,
    max_length: int | None = None,
    device: str | None = None,
) -> list:
    """Explain ``reranker``'s score of each text against ``query`` (``maxsim``, ``mapverifier``, ``mapcnn``,
    ``weightedmaxsim`` or a trained verifier folder); print each explanation and, with ``out``, draw them side by
    side into that file."""
    from .evaluate import check_rerankers
    from .explain import plot_explanations, require_matplotlib

    (name,) = check_rerankers([reranker])  # before any model is loaded, as are matplotlib and the output path
    if out is not None:
        require_matplotlib()
        from .reporting import check_writable

        out = Path(out).expanduser()
        if out.suffix.lower() not in (".png", ".pdf", ".svg"):
            raise ValueError(f"--out {out}: give a .png, .pdf or .svg file (the suffix chooses the format)")
        check_writable(out.parent)
    from .encoder import DEFAULT_MODEL, TokenEncoder
    from .nearmiss_report import named_scorers

    encoder = TokenEncoder(model or DEFAULT_MODEL, max_length=max_length, device=device)
    scorer = named_scorers([name], encoder)[name]
    explanations = [scorer.explain(query, text) for text in texts]
    for explanation in explanations:
        print(f"\n{explanation.text!r}\n{explanation.summary()}")
        for token, match, sim in explanation.matches():
            print(f"  {token:>16} -> {match:<16} {sim:.3f}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        plot_explanations(explanations, out)
        print(f"\nwrote {out}")
    return explanations


def register(subparsers) -> None:
    """Add ``compverify explain`` (run by :func:`explain_command`) to the command's sub-parsers."""
    from .cli_options import add_common_options

    parser = subparsers.add_parser("explain", help=HELP)
    parser.add_argument("query", help="the query text")
    parser.add_argument("texts", nargs="+", metavar="TEXT", help="one or more candidate texts (drawn side by side)")
    parser.add_argument(
        "--reranker",
        default="mapverifier",
        help="maxsim, mapverifier, mapcnn, weightedmaxsim (the packaged weights) or a trained verifier folder "
        "(default %(default)s)",
    )
    parser.add_argument("--out", default=None, help="draw the maps into this file (.png, .pdf, .svg; needs matplotlib)")
    parser.add_argument(
        "--max-length", type=int, default=None, help=f"encoder max length in tokens (default {DEFAULT_MAX_LENGTH})"
    )
    add_common_options(parser, data_dir=False)  # the texts are given: no dataset is read
    parser.set_defaults(func=explain_command)


def explain_command(args: argparse.Namespace) -> list:
    """``compverify explain`` from its parsed options (``run_explain`` finds a missing matplotlib before any model
    loads; its MissingExtraError is one line from the CLI)."""
    from .cli_options import given

    return run_explain(
        args.query, args.texts, reranker=args.reranker, out=args.out, **given(args, "model", "max_length", "device")
    )
