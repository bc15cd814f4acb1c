"""Optional dependencies: each belongs to an extra of the package, and its absence is one line naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says which extra brings it."""


def require(module: str, extra: str, what: str) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` naming ``extra`` (``what`` is what needs it).

    >>> require("json", "none", "reading JSON").__name__
    'json'
    >>> missing("spacy", "negatives", "parsing English")
    'parsing English needs spacy: pip install "pyterrier-compverify[negatives]"'
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] != module.split(".")[0]:
            raise  # the package is there but broken (one of its own imports failed): not a missing extra
        raise MissingExtraError(missing(module, extra, what)) from e


def missing(module: str, extra: str, what: str) -> str:
    """The one-line message for a missing ``module`` of ``extra``."""
    return f'{what} needs {module}: pip install "pyterrier-compverify[{extra}]"'
