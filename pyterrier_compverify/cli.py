"""The compverify command: one sub-command per task, each defined (options and run function) in its own module."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys
from collections.abc import Iterable

from .extras import MissingExtraError

# command -> (module whose register(subparsers) adds it, the line `compverify --help` shows for it)
COMMANDS = {
    "demo": ("demo", "BM25 / dense / dense >> MaxSim on an embedded near-miss collection"),
    "evaluate": ("evaluate_command", "pt.Experiment of BM25, dense and dense >> rerankers on a dataset"),
    "nearmiss": (
        "nearmiss_report",
        "near-miss table per category: headline, win rate, identity win, distractor recall@1, ...",
    ),
    "train-verifier": ("training.command", "train a verifier head (frozen or end-to-end) on triplet rows"),
    "train-encoder": ("training.command", "fine-tune a bi-encoder on Model A's or Model B's rows"),
    "negatives": ("negatives.command", "structural near-miss negatives (negation, binding, spatial, paraphrase)"),
    "querygen": ("querygen.command", "SM / KW training queries for passages (leakage filter, validation split)"),
    "explain": (
        "explain_command",
        "why a text got its score: the token-token map, each query token's best match, the score taken apart",
    ),
}
USER_ERRORS = (
    MissingExtraError,  # an optional dependency: the message names the extra to install
    ValueError,
    KeyError,
    FileNotFoundError,
    FileExistsError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
    ConnectionError,  # an LLM endpoint that does not answer: the message names it
)
DEBUG_HELP = "show the full traceback of an error"
DESCRIPTION = (
    "Dense retrieval that tells the same thing from almost the same words: evaluate, rerank, train and make "
    "training data. `compverify COMMAND --help` lists a command's options."
)


def build_parser(load: Iterable[str] = ()) -> argparse.ArgumentParser:
    """The parser, with the commands in ``load`` defined by their modules; the others are listed by name and
    help line only, so that ``compverify --help`` imports no model code."""
    parser = argparse.ArgumentParser(prog="compverify", description=DESCRIPTION)
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    subparsers = parser.add_subparsers(dest="command", required=True)
    modules = {COMMANDS[name][0] for name in load}
    for name, (module, summary) in COMMANDS.items():
        if name in subparsers.choices:
            continue
        if module in modules:
            importlib.import_module(f"{__package__}.{module}").register(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    for name in load:  # --debug after the command too (not set there: the global default stays)
        subparsers.choices[name].add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP
        )
    return parser


QUOTED = re.compile(r"""(?<!\w)('[^'\n]*'|"[^"\n]*")(?!\w)""")  # a value as repr() quotes it


def as_options(message: str, parser: argparse.ArgumentParser, command: str) -> str:
    """``message`` with the Python argument names it shares with ``command``'s options written as those options
    (``max_length must be a whole number`` -> ``--max-length must be a whole number``); only names with an underscore,
    which read as nothing else, and not inside a quoted value (what the user gave) or a path.

    >>> p = argparse.ArgumentParser(); sub = p.add_subparsers(dest="command")
    >>> _ = sub.add_parser("demo").add_argument("--max-length", type=int)
    >>> as_options("max_length=600 exceeds the 512 positions: use max_length <= 512", p, "demo")
    '--max-length=600 exceeds the 512 positions: use --max-length <= 512'
    >>> as_options("no index at /home/u/max_length/x", p, "demo")  # a path keeps its names
    'no index at /home/u/max_length/x'
    >>> as_options("reranker 'max_length' is not a folder, max_length is", p, "demo")  # nor a value the user gave
    "reranker 'max_length' is not a folder, --max-length is"
    """
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None or command not in sub.choices:
        return message
    parts = QUOTED.split(message)  # odd parts: the quoted values, kept as they are
    for action in sub.choices[command]._actions:
        long = next((o for o in action.option_strings if o.startswith("--")), None)
        if long and "_" in action.dest:
            pattern = rf"(?<![\w\-/.~]){action.dest}(?![\w/])"  # not inside a path
            parts[::2] = [re.sub(pattern, long, part) for part in parts[::2]]
    return "".join(parts)


def main(argv: list[str] | None = None) -> None:
    """Parse ``argv`` and run the command. A user error (bad value, missing or existing file, unknown name) prints
    ``compverify COMMAND: error: MESSAGE`` and exits with status 2; another error of the file system (a full disk, a
    read-only folder) prints one line too and exits with status 1; ``--debug`` shows the traceback instead."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((arg for arg in argv if arg in COMMANDS), None)
    parser = build_parser([command] if command else [])
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        reads_datasets = hasattr(args, "data_dir")  # demo, explain and train-verifier read none: no --data-dir
        if reads_datasets and (args.data_dir or os.environ.get("COMPVERIFY_DATA")):
            from .datasets import setup_local_data

            setup_local_data(args.data_dir)
        args.func(args)
    except USER_ERRORS as error:
        if args.debug:
            raise
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        message = as_options(" ".join(str(message).split()), parser, args.command)
        print(f"compverify {args.command}: error: {message}", file=sys.stderr)
        sys.exit(2)
    except OSError as error:  # the machine's: a full disk, a read-only folder, ...
        if args.debug:
            raise
        print(f"compverify {args.command}: error: {system_error(error)}", file=sys.stderr)
        sys.exit(1)


def system_error(error: OSError) -> str:
    """One line for an error of the file system: what failed, where, and what to do where that is known.

    >>> system_error(OSError(28, "No space left on device"))
    'No space left on device (ENOSPC): free space there, or write elsewhere (an output option, COMPVERIFY_CACHE)'
    >>> system_error(OSError(30, "Read-only file system", "/ro/idx"))
    'Read-only file system (EROFS): /ro/idx: write elsewhere (an output option, COMPVERIFY_CACHE)'
    """
    name = errno.errorcode.get(error.errno, "")
    where = (f": {error.filename}" if error.filename else "") + (f" -> {error.filename2}" if error.filename2 else "")
    full = "free space there, or write elsewhere (an output option, COMPVERIFY_CACHE)"
    hint = {errno.ENOSPC: full, errno.EDQUOT: full, errno.EROFS: "write elsewhere (an output option, COMPVERIFY_CACHE)"}
    text = " ".join(f"{error.strerror or error}{f' ({name})' if name else ''}{where}".split())
    return f"{text}: {hint[error.errno]}" if error.errno in hint else text


if __name__ == "__main__":
    main()
