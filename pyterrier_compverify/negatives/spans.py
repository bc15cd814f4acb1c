"""Shared spaCy helpers of the near-miss rules: rebuild a sentence with a few tokens replaced, and find the main
verb, a subject, a child or a movable noun phrase in the parse.

The text is rebuilt from ``token.text_with_ws`` with a few tokens replaced, so spacing and the untouched tokens are
kept exactly."""

from __future__ import annotations

import re

from .inflect import indefinite_article
from .lexicon import PLAIN_DETERMINERS, PRE_MODIFIERS


def render(doc, changes: dict[int, str]) -> str:
    """The sentence with ``changes[i]`` (text including trailing space; "" deletes) in place of token i."""
    text = "".join(changes.get(t.i, t.text_with_ws) for t in doc)
    text = re.sub(r" {2,}", " ", text).strip()
    if doc.text.lstrip()[:1].isupper() and text[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def match_case(new: str, old: str) -> str:
    """Give ``new`` the capitalisation of ``old`` (Title, lower or all capitals, as in a heading; a new acronym
    keeps its own case).

    >>> match_case("works", "Work"), match_case("works", "WORK"), match_case("DNA", "protein")
    ('Works', 'WORKS', 'DNA')
    """
    if old.isupper() and len(old) > 1 and new.islower():  # "THE DRUG DOES NOT WORK." -> "THE DRUG WORKS."
        return new.upper()
    if old[:1].isupper() and not (old.isupper() and len(old) > 1):
        return new[:1].upper() + new[1:]
    if old[:1].islower() and not (new.isupper() and len(new) > 1):
        return new[:1].lower() + new[1:]
    return new


def keeps_case(token) -> bool:
    """Whether the word is capitalised in its own right (name, acronym, "I"), not just as the first word."""
    text = token.text
    return (
        token.pos_ == "PROPN" or text == "I" or (text.isupper() and len(text) > 1) or any(c.isupper() for c in text[1:])
    )


def lower_first(token, text: str) -> str:
    """Text of a span that starts with ``token``, de-capitalised when ``token`` was capitalised only as first word."""
    return text if keeps_case(token) or token.i != 0 else text[:1].lower() + text[1:]


def fix_article(doc, changes: dict[int, str], word_index: int, new_word: str) -> None:
    """Make an "a"/"an" right before token ``word_index`` agree with ``new_word``."""
    if word_index == 0:
        return
    det = doc[word_index - 1]
    if det.lower_ in ("a", "an") and det.dep_ == "det":  # not "hepatitis A before vaccination"
        changes[det.i] = indefinite_article(new_word, capital=det.text[:1].isupper()) + det.whitespace_


def replace_span(doc, changes: dict[int, str], start: int, end: int, text: str) -> None:
    """Replace tokens ``start:end`` by ``text`` (keeping the span's trailing whitespace)."""
    changes[start] = text + doc[end - 1].whitespace_
    for i in range(start + 1, end):
        changes[i] = ""


def main_root(doc):
    """The root of the longest sentence in the doc (the parser sometimes splits one sentence in two)."""
    return max(doc.sents, key=len).root


def subject_of(verb):
    return next((c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass", "expl", "csubj", "csubjpass")), None)


def child_of(token, *deps):
    return next((c for c in token.children if c.dep_ in deps), None)


def hyphenated(token) -> bool:
    """Whether the token is part of a hyphenated or slashed word ("non-small-cell", "lipid-poor", "and/or")."""
    doc, i = token.doc, token.i
    before = i > 0 and not doc[i - 1].whitespace_ and doc[i - 1].text in ("-", "/", "–")
    after = i + 1 < len(doc) and not token.whitespace_ and doc[i + 1].text in ("-", "/", "–")
    return before or after


def glued(token) -> bool:
    """Whether punctuation is attached to the word without a space ("Best--worst", "lipid-poor", "and/or")."""
    doc, i = token.doc, token.i
    before = i > 0 and not doc[i - 1].whitespace_ and doc[i - 1].is_punct
    after = i + 1 < len(doc) and not token.whitespace_ and doc[i + 1].is_punct and doc[i + 1].text not in ".,;:"
    return before or after


def noun_phrase(token):
    """(start, content_start, end) of the noun and its pre-modifiers (post-modifiers stay in place), else None."""
    if token.pos_ not in ("NOUN", "PROPN") or token.dep_ == "compound":
        return None
    if token.text.isupper() and len(token) > 3 and token.i == 0:  # a section label: "METHODS"
        return None
    if token.like_num or not any(c.isalpha() for c in token.text):
        return None
    if any(child.dep_ not in ("punct",) for child in token.rights):  # "the function of X": "of X" would strand
        return None
    if (
        token.text.isupper()
        and len(token) > 1
        or any(t.text in "()[]" for t in token.doc[max(0, token.i - 3) : token.i + 2])
    ):
        return None  # section labels ("CONCLUSIONS"), abbreviations in parentheses
    left = [t for child in token.lefts for t in child.subtree]
    if len(left) > 2:
        return None
    if any(t.dep_ not in PRE_MODIFIERS or (t.dep_ == "punct" and t.text != "-") for t in left):
        return None
    if any(t.dep_ == "det" and t.lower_ not in PLAIN_DETERMINERS for t in left):  # no, each, any, ...
        return None
    if any(t.dep_ == "poss" and (t.pos_ != "PRON" or list(t.children)) for t in left):  # "a woman's head"
        return None
    start = min([t.i for t in left], default=token.i)
    if token.i - start != len(left):
        return None
    content = start
    doc = token.doc
    while content < token.i and doc[content].dep_ in ("det", "poss") and doc[content].head.i == token.i:
        content += 1
    return start, content, token.i + 1


def grammatical_number(token) -> str:
    """Grammatical number; a word the tagger calls singular but that is an inflected "-s" form counts as plural."""
    inflected = token.lower_ != token.lemma_.lower() and token.lower_.endswith("s")
    return "plural" if token.tag_ in ("NNS", "NNPS") or inflected else "singular"


def rest_of_clause(after: str) -> str:
    """The text after a word up to the end of its clause (the first , ; : or .).

    >>> rest_of_clause(" any effect, whereas others did")
    ' any effect'
    """
    return re.split(r"[,;:.]", after)[0]
