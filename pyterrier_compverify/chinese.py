"""Chinese text for BM25: jieba word segmentation, with each word spelled as one term PISA's tokenizer keeps."""

from __future__ import annotations

import logging
import re
from functools import cache

_WORD = re.compile(r"\w")


@cache
def _jieba():
    try:
        import jieba
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError("Chinese BM25 needs jieba: pip install 'pyterrier-compverify[zh]' (or jieba)") from err
    jieba.setLogLevel(logging.WARNING)
    return jieba


def index_term(word: str) -> str:
    """An ASCII word as it is (lower-cased); any other word as ``z`` + its UTF-8 bytes in hex, because PISA's
    tokenizer drops CJK characters. One word stays one term, so BM25 statistics are those of the words.

    >>> index_term("Dog"), index_term("小狗")
    ('dog', 'ze5b08fe78b97')
    """
    return word.lower() if word.isascii() else "z" + word.encode("utf-8").hex()


def chinese_terms(text: str) -> str:
    """``text`` segmented by jieba (accurate mode), punctuation dropped, words as index terms.

    >>> chinese_terms("小狗在草地上, dog!")
    'ze5b08fe78b97 ze59ca8 ze88d89e59cb0 ze4b88a dog'
    """
    words = (w.strip() for w in _jieba().lcut(text))
    return " ".join(index_term(w) for w in words if w and _WORD.search(w))
