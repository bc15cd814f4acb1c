"""Addition near-misses: an unstated attribute (``add_att``) or object (``add_obj``) is added."""

from __future__ import annotations

from ..inflect import indefinite_article
from . import lexicon as lx
from .shared import NOUN_TAGS, Candidate, fits, make_edit, object_group
from .words import (
    Changes,
    agree,
    child,
    colourable,
    concrete,
    fix_article,
    hyphenated,
    insert_after,
    insert_before,
    is_plural,
    lemma_set,
    living,
    noun_class,
    noun_lemma,
    verb_lemma,
)

# --- add_att -------------------------------------------------------------------------------------------------------


def _add_options(noun) -> tuple[str, tuple[str, ...]]:
    lemma = noun_lemma(noun.lower_)
    if lemma in lx.ADD_ATTRIBUTES and lemma not in ("adult", "child", "animal", "colourable"):
        return "other", lx.ADD_ATTRIBUTES[lemma]
    cls = noun_class(noun)
    if cls in ("adult", "person"):
        return "age", lx.ADD_ATTRIBUTES["adult"]
    if cls == "child":
        return "other", lx.ADD_ATTRIBUTES["child"]
    if cls == "animal":
        return "colour", lx.ADD_ATTRIBUTES["animal"]
    if colourable(noun):
        return "colour", lx.ADD_ATTRIBUTES["colourable"]
    return "", ()


def add_att(doc) -> list[Candidate]:
    """An attribute the caption does not state is added to a bare noun: a dog -> a brown dog."""
    out = []
    present = lemma_set(doc)
    colours_present = any(t.lower_ in lx.ATTRIBUTE_CLASS and lx.ATTRIBUTE_CLASS[t.lower_] == "colour" for t in doc)
    for noun in doc:
        if noun.tag_ not in NOUN_TAGS or noun.pos_ != "NOUN" or noun.dep_ in ("compound", "npadvmod"):
            continue
        if hyphenated(noun) or any(c.dep_ in ("amod", "compound", "nmod") for c in noun.lefts):
            continue
        det = child(noun, "det")
        if det is None and not is_plural(noun) and noun.lower_ not in lx.TERRAIN:
            continue
        if det is not None and det.lower_ not in ("a", "an", "the") or child(noun, "poss") is not None:
            continue
        before = doc[noun.i - 1] if noun.i > 0 else None
        if (
            before is not None
            and before.i != getattr(det, "i", None)
            and before.dep_ != "nummod"
            and before.pos_ not in ("ADP", "VERB", "AUX", "CCONJ", "SCONJ", "PUNCT")
        ):
            continue  # the noun is inside a longer phrase (people mills)
        rule, options = _add_options(noun)
        for adjective in options:
            related = lx.RELATED_WORDS.get(adjective)
            if adjective in present or related in present or (rule == "colour" and colours_present):
                continue
            if lx.ATTRIBUTE_CLASS.get(adjective) == "colour" and not fits(adjective, noun):
                continue
            changes: Changes = {}
            insert_before(changes, noun, adjective)
            fix_article(changes, doc, noun.i, adjective)
            out.append(make_edit(doc, changes, "add_att", lx.ATTRIBUTE_CLASS.get(adjective, "other")))
    return out


# --- add_obj -------------------------------------------------------------------------------------------------------


def add_obj(doc) -> list[Candidate]:
    """Another object of the same kind is added: a dog runs -> a dog and a cat run."""
    out = []
    present = lemma_set(doc)
    for noun in doc:
        if noun.tag_ not in NOUN_TAGS or noun.pos_ != "NOUN" or hyphenated(noun):
            continue
        if noun.dep_ not in ("nsubj", "dobj", "pobj", "ROOT") or child(noun, "compound") is not None:
            continue
        allowed_right = ("acl", "punct") if noun.dep_ == "ROOT" else ("punct",)
        if any(c.dep_ not in allowed_right for c in noun.rights) or noun.dep_ == "conj":
            continue
        if child(noun, "cc", "conj") is not None or (noun.i + 1 < len(doc) and doc[noun.i + 1].lower_ == "and"):
            continue
        det = child(noun, "det")
        if (det is None or det.lower_ not in ("a", "an", "the")) and not is_plural(noun) or child(noun, "poss"):
            continue
        if any(t.lower_ in lx.THIRD_SINGULAR_PRONOUNS for t in doc[noun.i + 1 :]):
            continue
        if any(c.dep_ == "acl" and child(c, "dobj") is not None for c in noun.rights):
            continue
        if noun.dep_ == "pobj" and noun.head.lower_ == "of":
            continue
        if noun.dep_ in ("nsubj", "ROOT") and _shared_single_thing(noun):
            continue
        found = object_group(noun)
        if found is None or found[0] not in ("people", "animal", "thing"):
            continue
        if noun.dep_ == "dobj" and verb_lemma(noun.head) in lx.ONE_OBJECT_VERBS:
            continue  # one plays a trumpet, not a trumpet and a saxophone at once; a dog catches one ball
        if noun.dep_ == "pobj" and noun.head.lower_ == "on" and _seated(noun.head.head):
            continue  # "on a rocking horse and a cow", "cowboys on horses and a donkey": a seat is one thing
        if found[0] == "people" and (any(_counted(t) for t in doc) or sum(t.lower_ == "one" for t in doc) > 1):
            continue  # "stands alone", "one orange one blue": the count is fixed
        if found[0] == "thing" and noun.dep_ != "dobj":
            continue
        group, key, targets = found
        for target in targets:
            if target in present:
                continue
            addition = target if target in lx.PLURAL_ONLY else f"{indefinite_article(target)} {target}"
            changes: Changes = {}
            insert_after(changes, noun, f"and {addition}")
            if not is_plural(noun) and not agree(changes, noun, to_plural=True):
                continue
            out.append(make_edit(doc, changes, "add_obj", group))
    return out


def _seated(word) -> bool:
    """Whether "on" after ``word`` says where someone sits or rides: after a person or animal ("cowboys on horses")
    or a verb of being, sitting, riding, standing, lying or perching ("is on a rocking horse"), not "jumps on a
    man"."""
    if word.pos_ in ("NOUN", "PROPN"):
        return living(word)
    return word.pos_ in ("AUX", "VERB") and verb_lemma(word) in ("be", "sit", "ride", "stand", "lie", "perch")


def _counted(token) -> bool:
    """Whether a word fixes how many people there are: alone, lone, solo, each, or "one" as a pronoun ("one of
    them"; not "stands on one leg")."""
    return token.lower_ in ("alone", "lone", "solo", "each") or (token.lower_ == "one" and token.dep_ != "nummod")


def _shared_single_thing(subject) -> bool:
    """Whether a subject's verb has one object that two doers could hardly share (a skateboard, a guitar)."""
    verb = subject.head if subject.dep_ == "nsubj" else next((c for c in subject.rights if c.dep_ == "acl"), None)
    if verb is None:
        return False
    for t in verb.subtree:
        single = t.tag_ == "NN" and t.dep_ in ("dobj", "pobj") and not living(t) and concrete(t)
        if single and (t.dep_ == "dobj" or noun_class(t) == "vehicle" or t.head.lower_ in ("on", "with", "off")):
            return True
    return False
