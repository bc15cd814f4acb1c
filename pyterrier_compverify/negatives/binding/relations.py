"""Binding by relation arguments: exchange the two sides of a comparison, an effect, a contrast or a nominalised
verb ("higher in women than in men" -> "higher in men than in women")."""

from __future__ import annotations

from ..edit import Candidate
from ..lexicon import (
    COMPARATORS,
    CONTRASTS,
    DIRECTIONAL,
    EFFECT_NOUNS,
    GROUP_PREPOSITIONS,
    NOMINAL_SUFFIX,
    PRE_MODIFIERS,
    TIME_WORDS,
)
from ..spans import child_of, glued, noun_phrase
from .swaps import simple_argument, swap_nps, swap_words


def _comparative(token) -> bool:
    """Whether a word states a direction: a comparative ("higher", "more") or a verb of change ("reduced")."""
    return token.tag_ in ("JJR", "RBR") or token.lemma_.lower() in DIRECTIONAL


def _directed(token) -> bool:
    """Whether a word or its complement states a direction ("reduced", "was [higher]", "live [longer]")."""
    return _comparative(token) or any(_comparative(c) for c in token.children if c.dep_ in ("acomp", "advmod"))


def _argument(noun) -> bool:
    """Whether a noun phrase can trade places with the other side of a relation: a short phrase that ends at a
    boundary (punctuation, a preposition, the comparison word), with no list, number, label or hyphen glued to it."""
    if noun is None or noun.pos_ not in ("NOUN", "PROPN") or noun.is_stop or noun.dep_ == "compound":
        return False
    span = noun_phrase(noun)
    if span is None or any(c.dep_ in ("conj", "cc", "appos") for c in noun.children):
        return False
    doc = noun.doc
    start, _, end = span
    ends = end == len(doc) or doc[end].pos_ in ("PUNCT", "ADP", "SCONJ", "AUX", "PART")
    subject = noun.dep_ in ("nsubj", "nsubjpass") and doc[end].pos_ in ("VERB", "AUX")
    if not (ends or subject or doc[end].lower_ in COMPARATORS | {"but", "rather"}):
        return False  # the phrase may go on: "three phosphorylation [cascades]"
    if any(t.like_num or t.tag_ in ("JJR", "RBR") for t in doc[start:end]) or noun.lemma_.lower() in TIME_WORDS:
        return False  # "at 2 days", "during the period": a time or a dose, not a compared group
    if doc[end - 1].text == "-" or glued(doc[start]) or glued(noun):
        return False
    before = doc[start - 1] if start > 0 else None
    if before is not None and (before.pos_ in ("NOUN", "PROPN", "NUM", "ADJ") or before.is_upper and len(before) > 1):
        return False  # "[RESULTS] Women", "[Candida] albicans"
    return not any(t.is_upper and t.is_alpha and len(t) > 3 for t in doc[start:end])


def _compared_sides(doc, comparator, after: int):
    """The two compared noun phrases around "than", "compared with/to" or "versus": the same preposition on both
    sides ("in women than in men"), a group preposition of the stated direction and a bare phrase ("reduced in
    treated mice compared with controls"), or, for "than", the subject ("females live longer than males")."""
    first = None
    prep2 = doc[after] if doc[after].pos_ == "ADP" else None
    second = child_of(prep2, "pobj") if prep2 is not None else doc[after]
    if prep2 is None and noun_phrase(second) is None:
        while second.i + 1 < len(doc) and second.head.i > second.i and second.dep_ in PRE_MODIFIERS:
            second = second.head  # "than [normal] tissue": from the phrase's first word to its noun
        span = noun_phrase(second)
        if span is None or span[0] != after:
            return None
    preps = [
        t
        for t in doc[max(0, comparator.i - 12) : comparator.i]
        if t.dep_ == "prep"
        and (t.lower_ == prep2.lower_ if prep2 is not None else t.lower_ in GROUP_PREPOSITIONS)
        and _directed(t.head)
    ]
    if preps:
        first = child_of(preps[-1], "pobj")
    elif comparator.lower_ == "than" and prep2 is None:
        predicate = comparator.head
        while (
            predicate.dep_ in ("advmod", "acomp", "amod", "dobj", "prep", "npadvmod")
            and predicate.head is not predicate
        ):
            predicate = predicate.head
        first = child_of(predicate, "nsubj")
        if first is not None and not simple_argument(first):
            return None
        if first is not None and any(t.pos_ == "ADP" for t in doc[first.i : comparator.i]):
            return None  # "the authors found lower values in [patients] than controls": the subject is not compared
    return (first, second) if first is not None and first.i < comparator.i else None


def _contrasted_sides(doc, connective):
    """The two sides of a contrast, "X but not Y" or "X rather than Y", with the same preposition on both sides
    when there is one ("in women, but not in men"; "expressed in fibrotic but not healthy tissue"). ``connective``
    is the first of its two words."""
    after = connective.i + 2
    if after >= len(doc):
        return None
    before = doc[connective.i - 1] if doc[connective.i - 1].text != "," else doc[connective.i - 2]
    if doc[after].pos_ == "ADP":
        second = child_of(doc[after], "pobj")
        if second is None or before.pos_ not in ("NOUN", "PROPN") or before.head.dep_ != "prep":
            return None
        if before.head.lower_ != doc[after].lower_:
            return None
        return before, second
    second = doc[after]
    if second.pos_ == "ADJ" and before.pos_ == "ADJ" and second.dep_ == "conj" and second.head.i == before.i:
        return None if glued(before) or glued(second) else (before, second)  # not "cross[-cutting]"
    if second.pos_ in ("NOUN", "PROPN") and before.pos_ in ("NOUN", "PROPN") and second.head.i == before.i:
        return before, second
    return None


def _nominal_sides(token):
    """The two arguments of a nominalised verb, "N of X by Y" ("the phosphorylation of p53 by ATM")."""
    if token.pos_ != "NOUN" or not NOMINAL_SUFFIX.search(token.lower_):
        return None
    of = next((c for c in token.children if c.dep_ == "prep" and c.lower_ == "of"), None)
    theme = child_of(of, "pobj") if of is not None else None
    if theme is None:
        return None
    by = next((c for c in [*token.children, *theme.children] if c.dep_ == "prep" and c.lower_ == "by"), None)
    if by is None or by.i != theme.i + 1:
        return None
    agent = child_of(by, "pobj")
    if agent is None or agent.i + 1 < len(token.doc) and token.doc[agent.i + 1].text == ",":
        return None  # "by growth factors, receptors and channels", "by Nilotinib, an inhibitor": a list or an aside
    return theme, agent


def swap_relation_arguments(doc) -> list[Candidate]:
    """Swap the two sides of a comparison ("higher in women than in men" -> "higher in men than in women"), of
    an effect ("the effect of exercise on mortality" -> "the effect of mortality on exercise"), of a contrast
    ("in women but not in men") or of a nominalised verb ("the clearance of cells by phagocytes")."""
    out = []
    for token in doc:
        sides, rule = None, "binding/swap-compared"
        word, following = token.lower_, doc[token.i + 1].lower_ if token.i + 1 < len(doc) else None
        if word == "than" and following is not None and token.i > 0:
            if doc[token.i - 1].lower_ not in ("rather", "other"):  # "rather than" contrasts, it does not compare
                sides = _compared_sides(doc, token, token.i + 1)
        elif (word == "compared" and following in ("with", "to") or word == "versus") and token.i + 2 < len(doc):
            if any(_comparative(t) for t in doc[max(0, token.i - 12) : token.i]):  # a direction to reverse
                sides = _compared_sides(doc, token, token.i + (2 if word == "compared" else 1))
        elif token.lemma_.lower() in EFFECT_NOUNS and token.pos_ == "NOUN":
            of = next((c for c in token.children if c.dep_ == "prep" and c.lower_ == "of"), None)
            on = next((c for c in token.children if c.dep_ == "prep" and c.lower_ == "on"), None)
            if of is not None and on is not None and of.i < on.i:
                effect, target = child_of(of, "pobj"), child_of(on, "pobj")
                if target is not None and target.i + 1 < len(doc) and doc[target.i + 1].text != ",":
                    sides, rule = (effect, target), "binding/swap-effect"  # not "on growth, parameters and ..."
        elif (word, following) in CONTRASTS and token.i > 1:
            sides, rule = _contrasted_sides(doc, token), "binding/swap-contrasted"
            if sides is not None and sides[0].pos_ == "ADJ":  # "fibrotic but not healthy tissue": swap the words
                out.append(swap_words(doc, *sides, rule))
                continue
        else:
            sides, rule = _nominal_sides(token), "binding/swap-nominal"
        if sides is None or not all(_argument(side) for side in sides):
            continue
        out.append(swap_nps(doc, *sides, rule, same_head=True))
    return [c for c in out if c is not None]
