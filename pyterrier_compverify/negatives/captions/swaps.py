"""Swap near-misses: two nouns exchange attributes (``swap_att``) or roles (``swap_obj``)."""

from __future__ import annotations

from itertools import combinations

from . import lexicon as lx
from .shared import NOUN_TAGS, Candidate, agent_of, fits, make_edit, np_start, simple_adjective
from .words import (
    Changes,
    child,
    fix_article,
    fixed_term,
    gender,
    is_plural,
    living,
    noun_class,
    noun_lemma,
    person,
    plain,
    put,
    replace_span,
    verb_lemma,
)

# --- swap_att ------------------------------------------------------------------------------------------------------


def _worn_colour_owner(token):
    """The person of "a man in red" / "a girl wearing pink" (a colour used as a noun for clothes), else None."""
    if token.lower_ not in lx.COLOURS or token.dep_ not in ("pobj", "dobj") or any(True for _ in token.children):
        return None
    head = token.head
    if token.dep_ == "pobj" and head.lower_ == "in":
        owner = head.head if head.head.tag_ in NOUN_TAGS else agent_of(head.head) if head.head.pos_ == "VERB" else None
    elif token.dep_ == "dobj" and head.lower_ in ("wearing", "wears", "wear"):
        owner = agent_of(head)
    else:
        return None
    return owner if owner is not None and person(owner) else None


def swap_att(doc) -> list[Candidate]:
    """Two nouns exchange attributes of the same class: a black dog and a white cat -> a white dog and a black cat;
    a man in red and a woman in blue -> a man in blue and a woman in red."""
    slots = [
        (t, t.head, False)
        for t in doc
        if t.lower_ in lx.ATTRIBUTE_CLASS and simple_adjective(t) and not fixed_term(t, t.head)
    ]
    slots += [(t, owner, True) for t in doc if (owner := _worn_colour_owner(t)) is not None]
    out = []
    for (a, n1, worn1), (b, n2, worn2) in combinations(sorted(slots, key=lambda x: x[0].i), 2):
        if (
            lx.ATTRIBUTE_CLASS[a.lower_] != lx.ATTRIBUTE_CLASS[b.lower_]
            or a.lower_ == b.lower_
            or n1.i == n2.i
            or noun_lemma(n1.lower_) == noun_lemma(n2.lower_)
            or not ((worn1 or fits(b.lower_, n1)) and (worn2 or fits(a.lower_, n2)))
        ):
            continue
        changes: Changes = {}
        put(changes, a, b.lower_)
        put(changes, b, a.lower_)
        fix_article(changes, doc, a.i, b.lower_)
        fix_article(changes, doc, b.i, a.lower_)
        out.append(make_edit(doc, changes, "swap_att", lx.ATTRIBUTE_CLASS[a.lower_]))
    return out


# --- swap_obj ------------------------------------------------------------------------------------------------------


def _swap_phrases(doc, n1, n2) -> Changes | None:
    """Swap the noun phrases (up to their heads) of two nouns; None when they cannot be cut out cleanly."""
    if n1.i > n2.i:
        n1, n2 = n2, n1
    s1, s2 = np_start(n1), np_start(n2)
    if s1 is None or s2 is None or n1.i >= s2 or is_plural(n1) != is_plural(n2):
        return None
    if child(n1, "conj") is not None or child(n2, "conj") is not None or "conj" in (n1.dep_, n2.dep_):
        return None

    def text(start, end):
        words = [plain(t) if t.i == start else t.text for t in doc[start:end]]
        return "".join(w + t.whitespace_ for w, t in zip(words, doc[start:end])).strip()

    changes: Changes = {}
    first, second = text(s1, n1.i + 1), text(s2, n2.i + 1)
    replace_span(changes, doc, s1, n1.i + 1, second)
    replace_span(changes, doc, s2, n2.i + 1, first)
    return changes


def _role_pair_ok(lemma: str | None, a, b, preposition: bool = False) -> bool:
    """Whether the doer and undergoer of ``lemma`` (or the two sides of a directed preposition attached to it) can
    trade places and still make a scene."""
    if not (living(a) and living(b)) or lemma in lx.SYMMETRIC_VERBS | lx.ONE_WAY_VERBS:
        return False
    people = person(a) + person(b)
    if people == 2:
        return lemma not in lx.CARE_VERBS or (noun_class(a) == "child") == (noun_class(b) == "child")
    if people == 1 and not preposition:
        return lemma is None or lemma in lx.EITHER_WAY_VERBS
    return lemma not in lx.HUMAN_AGENT_VERBS


_PRONOUN_GENDER = {
    **dict.fromkeys(("he", "him", "his", "himself"), "m"),
    **dict.fromkeys(("she", "her", "hers", "herself"), "f"),
    **dict.fromkeys(("it", "its", "itself"), "n"),
}


def _modifiers(noun) -> set[str]:
    """The words before a noun in its phrase, other than determiners and numbers."""
    start = np_start(noun)
    return set() if start is None else {t.lower_ for t in noun.doc[start : noun.i] if t.dep_ not in ("det", "nummod")}


def _swappable(doc, a, b) -> bool:
    """Two living nouns, each named once (or one noun named twice with different modifiers: a black dog chases a
    white dog), whose pronouns and modifiers still fit after the swap."""
    counts = [sum(noun_lemma(t.lower_) == noun_lemma(n.lower_) for t in doc) for n in (a, b)]
    if noun_lemma(a.lower_) == noun_lemma(b.lower_):
        if counts != [2, 2] or _modifiers(a) == _modifiers(b) or not _modifiers(a) or not _modifiers(b):
            return False
    elif counts != [1, 1]:
        return False
    if any(t.lower_ in _PRONOUN_GENDER for t in doc):  # his / her / its must still point at the right one
        kinds = [gender(n.lower_) or ("n" if noun_class(n) == "animal" else None) for n in (a, b)]
        if None in kinds or kinds[0] != kinds[1]:
            return False
    if person(a) != person(b):  # a dog in a t-shirt: a person's clothes stay where they are
        worn = ("in", "with", "wearing", "dressed")
        if any(c.lower_ in worn or c.dep_ == "acl" for n in (a, b) if person(n) for c in n.rights):
            return False
    return True


def swap_obj(doc) -> list[Candidate]:
    """Two living things exchange roles: a dog chases a boy -> a boy chases a dog; a man behind a woman -> a woman
    behind a man; a boy jumps while a girl watches -> a girl jumps while a boy watches."""
    if any(t.lower_ in ("they", "them", "their", "themselves") for t in doc):
        return []
    out = []

    def emit(a, b, rule):
        if _swappable(doc, a, b):
            changes = _swap_phrases(doc, a, b)
            if changes:
                out.append(make_edit(doc, changes, "swap_obj", rule))

    doers = []  # (agent, verb, verb lemma, verb has an object)
    for verb in doc:
        if verb.pos_ != "VERB":
            continue
        lemma = verb_lemma(verb)
        obj, agent = child(verb, "dobj"), agent_of(verb)
        passive = child(verb, "nsubjpass")
        if passive is not None and child(verb, "agent") is not None:  # a boy is chased by a dog
            obj, agent = passive, child(child(verb, "agent"), "pobj")
        if lemma is None or agent is None or agent.tag_ not in NOUN_TAGS:
            continue
        if living(agent) and passive is None and agent.dep_ in ("nsubj", "ROOT"):
            doers.append((agent, verb, lemma, obj is not None))
        if obj is not None and obj.tag_ in NOUN_TAGS and _role_pair_ok(lemma, agent, obj):
            emit(agent, obj, "agent-patient")
    for prep in doc:
        if prep.lower_ not in lx.DIRECTED_PREPOSITIONS or prep.dep_ != "prep":
            continue
        obj = child(prep, "pobj")
        head = prep.head
        agent = head if head.tag_ in NOUN_TAGS else agent_of(head) if head.pos_ == "VERB" else None
        if obj is None or agent is None or obj.tag_ not in NOUN_TAGS:
            continue
        lemma = verb_lemma(head) if head.pos_ == "VERB" else None
        if prep.lower_ == "at" and lemma not in ("look", "stare", "smile", "point", "wave", "laugh", "yell"):
            continue
        if _role_pair_ok(lemma, agent, obj, preposition=prep.lower_ != "at"):
            emit(agent, obj, "relation")
    for (a, head_a, verb_a, obj_a), (b, head_b, verb_b, obj_b) in combinations(doers, 2):
        if a.i == b.i or verb_a == verb_b:
            continue
        linked = [v for v, w in ((head_a, head_b), (head_b, head_a)) if v.head.i == w.i and v.i != w.i]
        if any(v.dep_ not in ("advcl", "conj") for v in linked):  # one clause is the other's object, not a while-clause
            continue
        if person(a) != person(b):  # a person and an animal: only when both can do both things
            if obj_a or obj_b or {verb_a, verb_b} & lx.HUMAN_AGENT_VERBS:
                continue
        elif not person(a) and {verb_a, verb_b} & lx.HUMAN_AGENT_VERBS:
            continue
        elif (noun_class(a) == "child") != (noun_class(b) == "child") and {verb_a, verb_b} & lx.CARE_VERBS:
            continue  # "a woman catches a young boy jumping": the boy would catch the woman
        emit(a, b, "subjects")
    return out
