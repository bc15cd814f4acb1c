"""Chinese text for BM25: jieba word segmentation, with each word spelled as one term PISA's tokenizer keeps."""

from __future__ import annotations

import logging
import re
import unicodedata
from functools import cache

_WORD = re.compile(r"\w")
SEGMENTATIONS = ("search", "accurate", "char")


@cache
def _jieba():
    try:
        import jieba
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError("Chinese BM25 needs jieba: pip install jieba") from err
    jieba.setLogLevel(logging.WARNING)
    return jieba


def index_term(word: str) -> str:
    """An ASCII word as it is (lower-cased); any other word as ``z`` + its UTF-8 bytes in hex, because PISA's
    tokenizer drops CJK characters. One word stays one term, so BM25 statistics are those of the words. Full-width
    letters and digits, common in Chinese text, are read as the ASCII ones (Unicode NFKC), so "ＤＮＡ" meets "DNA".

    >>> index_term("Dog"), index_term("小狗"), index_term("ＤＮＡ")
    ('dog', 'ze5b08fe78b97', 'dna')
    """
    word = unicodedata.normalize("NFKC", word)
    return word.lower() if word.isascii() else "z" + word.encode("utf-8").hex()


def segment(text: str, mode: str = "search") -> list[str]:
    """Words of ``text``: jieba's search-engine mode (``search``: long words and also their shorter words),
    its accurate mode (``accurate``), or single characters (``char``); punctuation dropped.

    >>> segment("小狗在草地上", "accurate"), segment("小狗在草地上", "char")
    (['小狗', '在', '草地', '上'], ['小', '狗', '在', '草', '地', '上'])
    """
    if mode == "char":
        words = list(text)
    elif mode == "search":
        words = _jieba().lcut_for_search(text)
    elif mode == "accurate":
        words = _jieba().lcut(text)
    else:
        raise ValueError(f"mode must be one of {SEGMENTATIONS}, got {mode!r}")
    return [w for w in (w.strip() for w in words) if w and _WORD.search(w)]


def chinese_terms(text: str, mode: str = "search") -> str:
    """``text`` as space-separated index terms of its :func:`segment` words.

    >>> chinese_terms("小狗在草地上, dog!", "accurate")
    'ze5b08fe78b97 ze59ca8 ze88d89e59cb0 ze4b88a dog'
    """
    return " ".join(index_term(w) for w in segment(text, mode))
