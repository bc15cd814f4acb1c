"""Options every ``compverify`` command shares, and option defaults read from the functions a command calls."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--model``, ``--device`` (left out: the called function's defaults) and ``--data-dir``."""
    parser.add_argument(
        "--model", default=None, help="hub name or local folder of the encoder (default: cv.DEFAULT_MODEL)"
    )
    parser.add_argument("--device", default=None, help="torch device (default: auto)")
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
