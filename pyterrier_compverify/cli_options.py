"""Options every ``compverify`` command shares, and option defaults read from the functions a command calls."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path

from .spec import DEFAULT_MODEL


def add_common_options(parser: argparse.ArgumentParser, *, data_dir: bool = True) -> None:
    """``--model``, ``--device`` (left out: the called function's defaults) and, for a command that reads
    datasets (``data_dir``), ``--data-dir``."""
    parser.add_argument(
        "--model", default=None, help=f"hub name or local folder of the encoder (default: {DEFAULT_MODEL})"
    )
    parser.add_argument("--device", default=None, help="torch device (default: auto)")
    if data_dir:
        add_data_dir_option(parser)


def add_data_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--data-dir``, for commands that read datasets but load no encoder."""
    parser.add_argument("--data-dir", default=None, help="local data folder (default: $COMPVERIFY_DATA)")


def default_of(function: Callable, name: str):
    """The default of ``function``'s parameter ``name``, so that a command does not type it again.

    >>> default_of(lambda *, depth=100: None, "depth")
    100
    """
    return inspect.signature(function).parameters[name].default


def given(args: argparse.Namespace, *names: str) -> dict:
    """The options among ``names`` that were given (not None), to pass on as keyword arguments.

    >>> given(argparse.Namespace(model=None, device="cpu"), "model", "device")
    {'device': 'cpu'}
    """
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def whole_number(text: str, least: int) -> int:
    """``text`` as an integer of at least ``least``, else an ``argparse.ArgumentTypeError`` saying why.

    >>> whole_number("3", 1)
    3
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse ``type``: an integer of at least 1 (``--limit 0`` used to mean "everything")."""
    return whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse ``type``: an integer of at least 0."""
    return whole_number(text, 0)


def refuse_ignored(args: argparse.Namespace, names: Iterable[str], reason: str) -> None:
    """A ValueError naming the options among ``names`` that were given (not None) although ``reason`` makes the
    command ignore them: an option without effect is refused, not silently dropped.

    >>> refuse_ignored(argparse.Namespace(top_layers=None), ["top_layers"], "with --mode frozen")
    >>> refuse_ignored(argparse.Namespace(top_layers=2), ["top_layers"], "with --mode frozen")
    Traceback (most recent call last):
    ValueError: --top-layers has no effect with --mode frozen
    """
    options = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) is not None]
    if options:
        verb = "has" if len(options) == 1 else "have"
        raise ValueError(f"{', '.join(options)} {verb} no effect {reason}")


FILE_SUFFIXES = (".txt", ".jsonl", ".json", ".csv", ".tsv")


def missing_file(source: str) -> bool:
    """Whether ``source`` names a file (a known suffix, or a path from / . ~) that does not exist, rather than a
    dataset id such as ``irds:beir/scifact/train``.

    >>> missing_file("/nonexistent.txt"), missing_file("irds:beir/scifact/train")
    (True, False)
    """
    path = Path(source).expanduser()
    looks_like_path = path.suffix in FILE_SUFFIXES or source.startswith(("/", "./", "../", "~"))
    return looks_like_path and not path.exists()
