"""What the near-miss kind modules share: the candidate type, noun-phrase and doer lookups, attribute fit."""

from __future__ import annotations

from . import lexicon as lx
from .words import Changes, child, colourable, hyphenated, living, noun_class, noun_lemma, person, render

Candidate = tuple[str, str, str]
NOUN_TAGS = ("NN", "NNS")


def make_edit(doc, changes: Changes, kind: str, rule: str) -> Candidate:
    """The caption with ``changes`` applied, labelled with its kind and ``kind/rule``."""
    return render(doc, changes), kind, f"{kind}/{rule}"


def simple_adjective(token) -> bool:
    """An adjective modifying one noun on its own: no children, no coordination, no hyphenated compound."""
    return (
        token.dep_ == "amod"
        and token.head.tag_ in NOUN_TAGS
        and not any(True for _ in token.children)
        and not hyphenated(token)
        and not hyphenated(token.head)
        and token.head.i > token.i
    )


def fits(adjective: str, noun) -> bool:
    """Whether an attribute is plausible for a noun (colours of animals and hair are natural colours, etc.)."""
    cls = lx.ATTRIBUTE_CLASS.get(adjective)
    word = noun.lower_
    if cls == "colour":
        if person(noun):
            return False
        if noun_class(noun) == "animal":
            return adjective in lx.NATURAL_COLOURS
        if word in lx.HAIR_LIKE:
            return adjective in (*lx.NATURAL_COLOURS, "blond", "blonde", "red")
        return colourable(noun)
    if cls in ("age", "height"):
        return living(noun) if cls == "age" else person(noun)
    if cls == "size":
        return living(noun) or colourable(noun)
    if cls == "material":
        return colourable(noun) and noun_class(noun) != "clothing"
    if cls == "terrain":
        return not living(noun) and not colourable(noun)
    return not person(noun) or cls == "state" and adjective in ("wet", "dry", "clean", "dirty")


def np_start(noun) -> int | None:
    """Start of the noun phrase up to its head (determiner, adjectives, compounds, numbers); None if it holds
    anything else (a possessive, a pronoun, "other", coordination)."""
    start = noun.i
    for c in noun.lefts:
        if c.dep_ not in ("det", "amod", "compound", "nummod", "advmod", "nmod") or c.lower_ in ("another", "other"):
            return None
        start = min(start, c.left_edge.i)
    span = noun.doc[start : noun.i + 1]
    if any(t.dep_ in ("poss", "cc", "punct", "mark") or t.pos_ == "PRON" or t.text == "-" for t in span):
        return None
    return start


def agent_of(verb):
    """The doer of a verb: its subject, or the noun a participle modifies (a dog chasing a cat)."""
    subject = child(verb, "nsubj")
    if subject is not None:
        return subject
    if verb.dep_ in ("acl", "relcl") and verb.head.tag_ in NOUN_TAGS:
        return verb.head
    return None


def object_group(token) -> tuple[str, str, list[str]] | None:
    """(group, key, replacements) of a replaceable noun."""
    word = token.lower_
    key = word if word in lx.PLURAL_ONLY else noun_lemma(word)
    for group, table in lx.OBJECT_SWAPS.items():
        if key in table:
            return group, key, table[key]
    return None
