"""Negation near-misses (``negate``): is running -> is not running, with -> without."""

from __future__ import annotations

from .shared import NOUN_TAGS, Candidate, make_edit
from .words import Changes, child, insert_after, insert_before, put, verb_lemma

NEGATORS = frozenset("no not n't never none nothing nobody neither nor without".split())


def negate(doc) -> list[Candidate]:
    """The caption is negated: is running -> is not running, runs -> does not run, with -> without."""
    if any(t.lower_ in NEGATORS for t in doc):
        return []
    out = []
    for token in doc:
        head_clause = token.dep_ == "ROOT" or (token.dep_ in ("aux", "auxpass") and token.head.dep_ == "ROOT")
        if token.lower_ in ("is", "are", "was", "were") and head_clause:
            changes: Changes = {}
            nxt = doc[token.i + 1] if token.i + 1 < len(doc) else None
            if child(token, "expl") is not None and nxt is not None and nxt.lower_ in ("a", "an"):
                put(changes, nxt, "no")
                out.append(make_edit(doc, changes, "negate", "there-is-no"))
            else:
                insert_after(changes, token, "not")
                out.append(make_edit(doc, changes, "negate", "auxiliary"))
        elif token.dep_ == "ROOT" and token.pos_ == "VERB" and token.tag_ in ("VBZ", "VBP", "VBD"):
            lemma = verb_lemma(token)
            if lemma and lemma != "be" and not any(c.dep_ in ("aux", "auxpass") for c in token.children):
                if any(c.dep_ == "conj" and c.pos_ == "VERB" for c in token.children):
                    continue
                do = {"VBZ": "does", "VBP": "do", "VBD": "did"}[token.tag_]
                changes = {}
                put(changes, token, f"{do} not {lemma}")
                out.append(make_edit(doc, changes, "negate", "do-support"))
        elif token.tag_ == "VBG" and token.pos_ == "VERB" and (token.dep_ == "acl" or token.dep_ == "ROOT"):
            if not any(c.dep_ in ("aux", "auxpass") for c in token.children) and token.i > 0:
                changes = {}
                insert_before(changes, token, "not")
                out.append(make_edit(doc, changes, "negate", "participle"))
        elif token.lower_ == "with" and token.dep_ == "prep" and token.head.tag_ in NOUN_TAGS:
            obj = child(token, "pobj")
            if obj is not None and child(obj, "poss") is None:
                changes = {}
                put(changes, token, "without")
                out.append(make_edit(doc, changes, "negate", "without"))
    return out
