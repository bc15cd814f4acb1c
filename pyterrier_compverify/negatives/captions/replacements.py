"""Replacement near-misses: an attribute, object or relation becomes another one (``replace_att``, ``replace_obj``,
``replace_rel``)."""

from __future__ import annotations

from . import lexicon as lx
from .shared import NOUN_TAGS, Candidate, agent_of, fits, make_edit, object_group, simple_adjective
from .words import (
    Changes,
    child,
    concrete,
    fix_article,
    fixed_term,
    gender,
    hyphenated,
    inflect_noun,
    lemma_set,
    living,
    noun_class,
    noun_lemma,
    person,
    place,
    put,
    replace_span,
    verb_form,
    verb_lemma,
)

# --- replace_att ---------------------------------------------------------------------------------------------------

_OPENABLE = frozenset("mouth door window eyes eye book box gate hand umbrella car".split())
_CROWD_PLACES = frozenset("street beach park room pool road sidewalk plaza square city area field parking".split())
_TONE = frozenset("hair fur skin coat jacket shirt clothing".split())


def _antonyms(adjective, noun) -> list[str]:
    word = noun.lower_
    if adjective == "old":
        return ["young"] if living(noun) else ["new"]
    if adjective == "young" and noun_class(noun) == "child":
        return ["older"]
    if adjective == "short":
        return ["tall"] if person(noun) else ["long"]
    if adjective in ("open", "closed") and noun_lemma(word) not in _OPENABLE:
        return []
    if adjective == "empty":
        return ["crowded"] if noun_lemma(word) in _CROWD_PLACES else ["full"]
    if adjective in ("dark", "light") and word not in _TONE:
        return []
    if adjective in ("curly", "straight") and word not in lx.HAIR_LIKE:
        return []
    return [a for a in lx.ANTONYMS.get(adjective, []) if lx.ATTRIBUTE_CLASS.get(a) != "age" or living(noun)]


def replace_att(doc) -> list[Candidate]:
    """An attribute becomes another of its class (colour) or its antonym (big -> small, wet -> dry)."""
    out = []
    present = {t.lower_ for t in doc}
    for adj in doc:
        word = adj.lower_
        if adj.dep_ == "amod" and simple_adjective(adj) and adj.head.lower_ not in ("bit", "while", "league"):
            noun = adj.head
        elif adj.dep_ == "acomp" and adj.head.lemma_ == "be" and not any(True for _ in adj.children):
            noun = child(adj.head, "nsubj")
        else:
            continue
        if noun is None or (adj.i + 1 < len(doc) and lx.ATTRIBUTE_CLASS.get(doc[adj.i + 1].lower_) == "colour"):
            continue
        if adj.dep_ == "amod" and fixed_term(adj, noun):
            continue
        cls = lx.ATTRIBUTE_CLASS.get(word)
        if cls == "colour":
            options = [c for c in lx.COLOURS if c not in present and c != "gray" and fits(c, noun)]
            rule = "colour"
        else:
            options = [a for a in _antonyms(word, noun) if a not in present]
            rule = cls or "antonym"
        for new in options:
            changes: Changes = {}
            put(changes, adj, new)
            fix_article(changes, doc, adj.i, new)
            out.append(make_edit(doc, changes, "replace_att", rule))
    return out


# --- replace_obj ---------------------------------------------------------------------------------------------------


def replace_obj(doc) -> list[Candidate]:
    """An object becomes a co-hyponym: dog -> cat, man -> woman, grass -> sand, soccer -> tennis."""
    out = []
    present = lemma_set(doc)
    has_gendered_pronoun = any(t.lower_ in lx.GENDERED_PRONOUNS for t in doc)
    for noun in doc:
        if noun.tag_ not in NOUN_TAGS or hyphenated(noun) or noun.pos_ != "NOUN":
            continue
        if noun.dep_ == "compound" and (
            noun.lower_ not in lx.REPLACEABLE_COMPOUNDS or noun_lemma(noun.head.lower_) not in lx.SPORT_HEADS
        ):
            continue
        if any(c.lower_ in ("another", "other") for c in noun.lefts):
            continue
        if child(noun, "compound") is not None or (noun.i > 0 and doc[noun.i - 1].lower_ == "hot"):
            continue
        found = object_group(noun)
        if found is None:
            continue
        group, key, targets = found
        if key in lx.FETCH_THINGS and not (
            any(living(t) and noun_class(t) == "animal" for t in doc) or verb_lemma(noun.head) in lx.FETCH_VERBS
        ):
            continue
        for target in targets:
            if target in present or (has_gendered_pronoun and gender(key) != gender(target)):
                continue
            if target in lx.ADULTS and any(c.lower_ in ("little", "young", "baby", "teenage") for c in noun.lefts):
                continue
            if target in lx.ADULTS and noun.dep_ == "dobj" and verb_lemma(noun.head) in lx.CARRY_VERBS:
                continue
            new = inflect_noun(target, noun)
            if new is None:
                continue
            changes: Changes = {}
            put(changes, noun, new)
            fix_article(changes, doc, noun.i, new)
            out.append(make_edit(doc, changes, "replace_obj", group))
    return out


# --- replace_rel ---------------------------------------------------------------------------------------------------


def _object_fits(required, obj) -> bool:
    if required is None:
        return not living(obj)
    if required == "living":
        return living(obj)
    if required == "ball":
        return obj.lower_ in lx.BALLS or (obj.lower_ == "ball")
    if required == "clothing":
        return noun_class(obj) == "clothing"
    return noun_class(obj) == required


def _doer(verb):
    """:func:`agent_of` the verb, or of the verb it shares its subject with ("a dog jumping to catch a ball", "tries
    and catches")."""
    while agent_of(verb) is None and verb.dep_ in ("xcomp", "advcl", "conj") and verb.head.pos_ in ("VERB", "AUX"):
        verb = verb.head
    return agent_of(verb)


def _placed_thing(doer) -> bool:
    """Whether a doer is a thing (not a person, animal or group, nor a garment the parser took for one: "a girl in
    shorts standing"), of which sitting, standing and lying all say only where it is ("a town lies", "a house
    sitting on a hill")."""
    return (
        doer.dep_ in ("nsubj", "ROOT")  # "a boat sitting in the water"; not "playing an instrument standing" (misparse)
        and doer.pos_ == "NOUN"
        and (concrete(doer) or place(doer))
        and not living(doer)
        and noun_class(doer) != "clothing"
        and noun_lemma(doer.lower_) not in lx.COLLECTIVE
    )


def _fixed_use(verb, lemma: str, obj) -> bool:
    """Whether the verb is used in a way its swap would not fit: a fixed phrase ("pulling tricks"), a thing that
    reads ("a sign that reads"), an animal that catches (it does not throw), a thing that sits or lies (is placed), a
    mood adverb that fits only this verb ("smiles happily"), a cap worn backwards, a rope walked on, or riding that is
    learnt or taught ("learns how to ride a bike")."""
    agent = _doer(verb)
    if obj is not None and (
        obj.lower_ in lx.FIXED_OBJECTS or any(c.lower_.startswith("backward") for c in obj.children)
    ):
        return True
    if lemma == "read" and agent is not None and not living(agent):
        return True
    if lemma == "catch" and agent is not None and noun_class(agent) == "animal":
        return True
    if lemma in lx.POSTURE_VERBS and agent is not None and _placed_thing(agent):  # "a town lies at the base of"
        return True
    if lemma in lx.MOOD_VERBS and any(c.dep_ == "advmod" and c.lower_ in lx.MOOD_ADVERBS for c in verb.children):
        return True  # "smiles happily" is not "frowns happily"
    along = [child(p, "pobj") for p in verb.children if p.dep_ == "prep" and p.lower_ in ("on", "along", "across")]
    if lemma == "walk" and any(t is not None and noun_lemma(t.lower_) in lx.NARROW_WALKS for t in along):
        return True
    return lemma == "ride" and verb.dep_ == "xcomp" and verb_lemma(verb.head) in ("learn", "teach")


def replace_rel(doc) -> list[Candidate]:
    """A relation becomes another one: sitting -> standing, throws -> catches, next to -> far from."""
    out = []
    # the caption's verbs, as lemmas and as written: "standing and sitting" must not become "standing and standing"
    present = {verb_lemma(t) for t in doc if t.pos_ == "VERB"}
    present |= {t.lower_ for t in doc if t.tag_.startswith("VB") or t.lower_.endswith("ing")}
    for verb in doc:
        if verb.pos_ != "VERB" or verb.dep_ in ("amod", "compound") or child(verb, "prt") is not None:
            continue
        lemma = verb_lemma(verb)
        if lemma is None or verb.tag_ == "VBN":
            continue
        obj = child(verb, "dobj")
        if _fixed_use(verb, lemma, obj):
            continue
        options = []
        if lemma in lx.INTRANSITIVE_SWAPS and obj is None:
            options = lx.INTRANSITIVE_SWAPS[lemma]
        elif lemma in lx.TRANSITIVE_SWAPS and obj is not None and obj.tag_ in NOUN_TAGS:
            if lemma == "throw" and any(
                c.dep_ in ("prep", "dative") and c.lower_ in ("to", "for") for c in verb.rights
            ):
                continue
            options = [new for new, required in lx.TRANSITIVE_SWAPS[lemma] if _object_fits(required, obj)]
            if any(c.dep_ == "prep" and c.lower_ == "in" for c in verb.rights):
                options = [o for o in options if o != "drop"]
        for new in options:
            form = verb_form(new, verb.tag_)
            if form and new not in present and form.lower() not in present:
                changes: Changes = {}
                put(changes, verb, form)
                out.append(make_edit(doc, changes, "replace_rel", "verb"))
    for token in doc:
        if token.lower_ in ("near", "beside") and token.dep_ == "prep" and child(token, "pobj") is not None:
            changes = {}
            put(changes, token, "far from")
            out.append(make_edit(doc, changes, "replace_rel", "preposition"))
        elif (
            token.lower_ == "next"
            and token.i + 1 < len(doc)
            and doc[token.i + 1].lower_ == "to"
            and child(doc[token.i + 1], "pobj") is not None
        ):
            changes = {}
            replace_span(changes, doc, token.i, token.i + 2, "far from")
            out.append(make_edit(doc, changes, "replace_rel", "preposition"))
    return out
