"""Spatial near-misses (``spatial``): a spatial relation is flipped (left/right, on/under, into/out of, ...)."""

from __future__ import annotations

import re

from . import lexicon as lx
from .shared import Candidate, make_edit
from .words import Changes, body_part, child, fix_article, living, noun_lemma, put, replace_span, verb_lemma

_SIDES = frozenset("side hand arm leg foot eye ear shoulder corner lane paw".split())
_SWAP_WORDS = {"uphill": "downhill", "downhill": "uphill", "upstairs": "downstairs", "downstairs": "upstairs",
               "upward": "downward", "downward": "upward", "upwards": "downwards", "downwards": "upwards",
               "upstream": "downstream", "downstream": "upstream"}  # fmt: skip


def _pobj_lemma(prep) -> str | None:
    obj = child(prep, "pobj")
    return None if obj is None else noun_lemma(obj.lower_)


_DIRECTIONS = ("off", "from", "out", "into", "onto")


def _clause_verb(token):
    """The nearest verb above ``token`` (``token``'s own head chain), or None at the root."""
    while token.head.i != token.i:
        token = token.head
        if token.pos_ == "VERB":
            return token
    return None


def _moving(head) -> bool:
    """A verb of motion with one direction: no other "off" / "from" / "out" / "into" / "onto" phrase in its clause,
    also where the parser hangs it on a conjunct or a noun ("leaps off a dock and into the water", "falls off a slide
    into a pool")."""
    if head.pos_ != "VERB" or verb_lemma(head) not in lx.MOTION_VERBS:
        return False
    return sum(t.lower_ in _DIRECTIONS and getattr(_clause_verb(t), "i", None) == head.i for t in head.subtree) <= 1


def _in_midair(doc) -> bool:
    """Whether the caption shows someone in midair ("midair", "mid-air", "mid air"), where into / out of and up /
    down have one way only."""
    return re.search(r"\bmid[- ]?air\b", doc.text.lower()) is not None


def spatial(doc) -> list[Candidate]:
    """A spatial relation is flipped: left/right, up/down, in front of/behind, on/under, into/out of, ..."""
    out = []

    def emit(changes, rule):
        out.append(make_edit(doc, changes, "spatial", rule))

    n = len(doc)
    words = {t.lower_ for t in doc}
    midair = _in_midair(doc)  # "in midair, jumping into the water": not out of it; "waiting to come back down"
    for t in doc:
        word, nxt = t.lower_, (doc[t.i + 1].lower_ if t.i + 1 < n else "")
        prev = doc[t.i - 1].lower_ if t.i > 0 else ""
        changes: Changes = {}
        if word in ("left", "right") and t.tag_ in ("JJ", "NN"):
            side = t.dep_ == "amod" and noun_lemma(t.head.lower_) in _SIDES
            place = t.dep_ == "pobj" and t.head.lower_ in ("to", "on", "at", "from") and prev in ("the", "his", "her")
            other = "right" if word == "left" else "left"
            if (side or place) and other not in words:  # "in her right hand ... in her left hand": not both right
                put(changes, t, other)
                emit(changes, "left-right")
        elif word in ("up", "down") and prev != "upside" and nxt not in ("to", "and", "at", "for") and not midair:
            if any(x.pos_ == "NOUN" and noun_lemma(x.lower_) in lx.DOWNHILL_ONLY for x in doc):  # down a slide
                continue
            if verb_lemma(t.head) == "slide":  # "sliding down a hill": not up
                continue
            obj = _pobj_lemma(t)
            if t.dep_ == "prep" and obj is not None:
                ok = obj in lx.SLOPES and obj not in lx.FLAT_PATHS
            else:
                # "run down a street": the path is the verb's object (or an adverbial noun: "walking down a sidewalk")
                after = child(t.head, "dobj", "npadvmod")
                ok = t.dep_ in ("prt", "advmod") and t.head.lower_ in lx.UP_DOWN_VERBS and obj is None
                ok = ok and (after is None or noun_lemma(after.lower_) in lx.SLOPES)
            if ok:
                put(changes, t, "down" if word == "up" else "up")
                emit(changes, "up-down")
        elif word in _SWAP_WORDS and t.dep_ in ("advmod", "prep", "npadvmod", "prt"):
            put(changes, t, _SWAP_WORDS[word])
            fix_article(changes, doc, t.i, _SWAP_WORDS[word])
            emit(changes, "up-down")
        elif word == "front" and prev == "in" and nxt == "of" and child(doc[t.i + 1], "pobj") is not None:
            if _pobj_lemma(doc[t.i + 1]) in lx.BACKDROPS:  # "in front of the ocean": not behind it
                continue
            replace_span(changes, doc, t.i - 1, t.i + 2, "behind")
            emit(changes, "front-behind")
        elif word == "behind" and t.dep_ == "prep" and child(t, "pobj") is not None:
            put(changes, t, "in front of")
            emit(changes, "front-behind")
        elif word == "on" and t.dep_ == "prep" and _pobj_lemma(t) in lx.UNDER_OK - {"tree"}:
            if verb_lemma(t.head) in ("ride", "lean"):  # "riding on a toy truck", "leaning on a table": not under it
                continue
            put(changes, t, "under")
            emit(changes, "on-under")
        elif word in ("under", "underneath", "beneath") and t.dep_ == "prep" and _pobj_lemma(t) in lx.UNDER_OK:
            if _pobj_lemma(t) == "tree":  # "sitting on the grass under the trees": "in the trees" is no opposite
                continue
            put(changes, t, "on")
            emit(changes, "on-under")
        elif word == "into" and t.dep_ == "prep" and _pobj_lemma(t) in lx.CONTAINERS and _moving(t.head) and not midair:
            if verb_lemma(t.head) == "fall" and _pobj_lemma(t) in lx.TERRAIN:  # "falling out of the snow"
                continue
            put(changes, t, "out of")
            emit(changes, "into-out-of")
        elif (
            word == "out"
            and nxt == "of"
            and _pobj_lemma(doc[t.i + 1]) in lx.CONTAINERS
            and _moving(t.head)
            and not midair
        ):
            replace_span(changes, doc, t.i, t.i + 2, "into")
            emit(changes, "into-out-of")
        elif word == "onto" and t.dep_ == "prep" and child(t, "pobj") is not None and _moving(t.head):
            put(changes, t, "off")
            emit(changes, "onto-off")
        elif (
            word == "off"
            and nxt != "-"
            and t.dep_ == "prep"
            and _pobj_lemma(t) not in (None, *lx.OFF_FIXED)
            and _moving(t.head)
        ):  # "off-road"
            put(changes, t, "onto")
            emit(changes, "onto-off")
        elif (
            word in ("inside", "outside")
            and t.dep_ in ("prep", "advmod")
            and (t.dep_ == "prep" or nxt == "of" or t.i + 1 == n or doc[t.i + 1].pos_ != "ADP")
        ):
            put(changes, t, "outside" if word == "inside" else "inside")
            emit(changes, "inside-outside")
        elif word in ("top", "bottom", "front", "back") and t.tag_ == "NN" and prev == "the" and nxt == "of":
            whole = child(doc[t.i + 1], "pobj")
            if whole is None or living(whole) or body_part(whole):
                continue
            other = {"top": "bottom", "bottom": "top", "front": "back", "back": "front"}[word]
            put(changes, t, other)
            if other == "bottom" and t.i > 1 and doc[t.i - 2].lower_ == "on":
                put(changes, doc[t.i - 2], "at")
            emit(changes, "top-bottom" if word in ("top", "bottom") else "front-back")
        elif word in ("toward", "towards") and t.dep_ == "prep" and child(t, "pobj") is not None:
            put(changes, t, "away from")
            emit(changes, "toward-away")
        elif word == "away" and nxt == "from" and child(doc[t.i + 1], "pobj") is not None:
            replace_span(changes, doc, t.i, t.i + 2, "towards")
            emit(changes, "toward-away")
        elif word in ("over", "under") and t.dep_ == "prep" and _pobj_lemma(t) in lx.BARRIERS:
            jump = t.head.pos_ == "VERB" and verb_lemma(t.head) in ("jump", "leap", "hop", "fly", "vault", "flip")
            if word == "under" or not jump:
                put(changes, t, "under" if word == "over" else "over")
                emit(changes, "over-under")
    return out
