"""Checks on inputs (is there an English sentence to edit?) and on edits (is it a clean, minimal edit?)."""

from __future__ import annotations

import difflib
import re
import string

from ..lcs import lcs_length
from .edit import Edit

_WORD = re.compile(r"[\w']+")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s*$")
_REFUSALS = (
    "i cannot",
    "i can't",
    "i can not",
    "i'm sorry",
    "i am sorry",
    "i apologize",
    "i apologise",
    "i'm unable",
    "i am unable",
    "i won't",
    "i will not",
    "as an ai",
    "language model",
    "here is the",
    "here's the",
)
_DOUBLE_NEGATION = re.compile(r"\b(?:not|cannot|never)\s+(?:not|never|no)\b|n't\s+(?:not|never)\b", re.IGNORECASE)


def check_input(sentence, *, max_tokens: int = 60) -> str | None:
    """Why a sentence cannot be edited before parsing it ("empty", "not English", "too long"), else None.

    >>> check_input("   "), check_input("图片中显示了一只猫"), check_input("The cat is on the mat.")
    ('empty', 'not English', None)
    """
    if not isinstance(sentence, str) or not sentence.strip():
        return "empty"
    letters = [c for c in sentence if c.isalpha()]
    if letters and sum(c.isascii() for c in letters) / len(letters) < 0.8:
        return "not English"
    if len(_TOKEN.findall(sentence)) > max_tokens:
        return "too long"
    return None


def _normalise(text: str) -> str:
    text = text.lower().translate(str.maketrans({c: " " for c in string.punctuation + "“”‘’"}))
    return " ".join(text.split())


def changed_tokens(sentence1: str, sentence2: str) -> int:
    """How many lower-cased word tokens differ: inserted + deleted + replaced (the longer side) by difflib.

    Between sentences of the same length, the positions that differ count instead when fewer: difflib sees a swap
    ("the dog chased the cat" -> "the cat chased the dog") as a deletion plus an insertion of a whole block. When
    the words are only reordered, the words that moved count (those outside a longest common subsequence):

    >>> changed_tokens("The dog chased the cat.", "The cat chased the dog.")
    2
    >>> changed_tokens("lower in treated mice than in controls", "lower in controls than in treated mice")
    3
    """
    a, b = _WORD.findall(sentence1.lower()), _WORD.findall(sentence2.lower())
    if sorted(a) == sorted(b):  # only reordered: never more than difflib's count or the differing positions
        return len(a) - lcs_length(a, b)
    total = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            total += max(i2 - i1, j2 - j1)
    if len(a) == len(b):
        total = min(total, sum(x != y for x, y in zip(a, b)))
    return total


def _has_words(text: str, words: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text) is not None


def _degenerate(sentence1: str, sentence2: str) -> bool:
    if len(_WORD.findall(sentence2)) < 3:
        return True
    low1, low2 = sentence1.lower(), sentence2.lower()
    for phrase in _REFUSALS:
        # an edit of "I can swim" into "I cannot swim" is not a refusal
        positive = re.sub(r"(cannot|can't|can not)$", "can", re.sub(r"(won't|will not)$", "will", phrase))
        if phrase in low2 and phrase not in low1 and not (positive != phrase and _has_words(low1, positive)):
            return True
    return bool(_SENTENCE_END.search(sentence1)) and not _SENTENCE_END.search(sentence2)


def filter_edit(edit: Edit, *, max_changed_tokens: int = 4) -> str | None:
    """The reason to drop an edit ("unchanged", "too many changes", "degenerate", "double negation"), else None.

    >>> from pyterrier_compverify.negatives import Edit
    >>> filter_edit(Edit("The cat is on the mat.", "The cat is not on the mat.", "negation", "negation/insert-be"))
    >>> filter_edit(Edit("The cat is on the mat.", "the cat is on the mat", "paraphrase", "x"))
    'unchanged'
    """
    s1, s2 = edit.sentence1 or "", edit.sentence2 if isinstance(edit.sentence2, str) else ""
    if not s2.strip():
        return "degenerate"
    if _normalise(s1) == _normalise(s2):
        return "unchanged"
    if _degenerate(s1, s2):
        return "degenerate"
    if _DOUBLE_NEGATION.search(s2) and not _DOUBLE_NEGATION.search(s1):
        return "double negation"
    if changed_tokens(s1, s2) > max_changed_tokens:
        return "too many changes"
    return None
