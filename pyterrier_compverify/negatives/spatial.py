"""Spatial: flip one spatial or temporal relation word, left/right, before/after, ... (meaning flipped)."""

from __future__ import annotations

from .category import Category
from .edit import Candidate
from .lexicon import (
    AFTER_VERBS,
    CHANGE_VERBS,
    DIRECTION_ADJECTIVES,
    FIXED_TO,
    FLIPS,
    LENGTHS,
    MOTION_VERBS,
    OVER_ALONG,
    POSITION_VERBS,
    RIGHT_TERMS,
    SIDE_NOUNS,
    TIME_WORDS,
    UNDER_CONDITIONS,
    UNDER_FORCES,
)
from .spans import fix_article, match_case, render, replace_span


def _physical(noun, roots=("object.n.01", "matter.n.03")) -> bool:
    """Whether WordNet's first sense of the noun is a physical entity (a mat, a river), not a condition or time:
    one of ``roots`` is among its ancestors (``physical_entity.n.01`` also takes body parts: a lung, a ventricle)."""
    from .wordnet import load_wordnet

    try:
        synsets = load_wordnet().synsets(noun.lemma_.lower(), "n")
    except (ImportError, OSError):
        return False
    if not synsets:
        return False
    ancestors = {s.name() for path in synsets[0].hypernym_paths() for s in path}
    return bool(ancestors & set(roots)) and "time_period.n.01" not in ancestors


def _over_under_ok(token) -> bool:
    """Whether "over"/"under" places a physical thing: its object is one (not a number: "over 50%" compares values),
    and it attaches to something that places it (:func:`_places`: a verb of motion or position, "be" with a physical
    subject, or another physical thing: "jumped over the fence", "the lamp over the bed"); not a load or condition
    ("under a uniform load", "under force systems") nor a flow or spread ("flow over a flat plate", "pressures over
    the surface")."""
    if token.dep_ != "prep":
        return False
    pobj = next((c for c in token.children if c.dep_ == "pobj"), None)
    if pobj is None or pobj.ent_type_ in ("DATE", "TIME") or pobj.lemma_.lower() in TIME_WORDS:
        return False
    if token.lower_ == "under" and (
        pobj.lemma_.lower() in UNDER_CONDITIONS or any(w.lemma_.lower() in UNDER_FORCES for w in pobj.lefts)
    ):
        return False
    if token.lower_ == "over" and _spread_along(token):
        return False
    return not _a_value(pobj) and _physical(pobj) and _places(token.head)


def _a_value(noun) -> bool:
    """Whether the noun is a number or a numbered quantity ("50%", "200 mg/kg", "3 cm"): "above" or "over"
    it compares values, which is no spatial relation (an unnumbered quantity such as "a Mach number of 10" is left out
    as not physical)."""
    return noun.like_num or noun.text == "%" or any(c.dep_ == "nummod" for c in noun.children)


def _places(head) -> bool:
    """Whether the word a preposition attaches to places something: a verb of motion or position, a physical thing,
    or "be" with a physical subject."""
    if head.pos_ in ("VERB", "AUX") and head.lemma_.lower() == "be":  # "the lamp was over the bed"
        subject = next((c for c in head.children if c.dep_ == "nsubj"), None)
        return subject is not None and _physical(subject)
    if head.pos_ in ("VERB", "AUX"):
        return head.lemma_.lower() in MOTION_VERBS | POSITION_VERBS
    return head.pos_ in ("NOUN", "PROPN") and _physical(head)


def _spread_along(over) -> bool:
    """Whether "over" attaches to a flow or a spread (``OVER_ALONG``), directly or through "of" ("the boundary-layer
    flow over a plate", "the distribution of flares over the sun")."""
    head = over.head
    heads = [head]
    if head.dep_ == "pobj" and head.head.lower_ == "of":
        heads.append(head.head.head)
    return any(h.lemma_.lower() in OVER_ALONG or h.lower_ in OVER_ALONG for h in heads)


BODY = ("body_part.n.01",)


def _of_a_body_part(adjective) -> bool:
    """Whether WordNet derives the adjective from a body part ("ventricular", "atrial", "renal")."""
    from .wordnet import load_wordnet

    try:
        synsets = load_wordnet().synsets(adjective.lower_, "a")
    except (ImportError, OSError):
        return False
    nouns = {p.synset() for synset in synsets for lemma in synset.lemmas() for p in lemma.pertainyms()}
    return any(set(BODY) & {s.name() for path in n.hypernym_paths() for s in path} for n in nouns)


def _right_is_a_side(token) -> bool:
    """Whether an adjective "right" names a side ("the right hand", "right ventricular"), not "correct" ("the right
    answer", "you are right"): not predicative; before an adjective of place or of a body part, or one on a body part
    ("right upper lobe", "right ventricular"); else of a physical thing or a side ("the right hand", "a right turn")."""
    if token.dep_ in ("acomp", "attr", "oprd"):
        return False
    if token.head.lower_ in RIGHT_TERMS or (token.i + 1 < len(token.doc) and token.nbor(1).lower_ in RIGHT_TERMS):
        return False  # "a right angle", "right ascension", "a right circular cone"
    if token.i + 1 < len(token.doc) and token.nbor(1).pos_ == "ADJ":  # not "the right medical treatment"
        after = token.nbor(1)  # "right ventricular", "right upper lobe", "right front wheel"
        return after.lower_ in DIRECTION_ADJECTIVES or _of_a_body_part(after) or _physical(after.head, BODY)
    head = token.head
    return token.dep_ == "amod" and (
        head.lemma_.lower() in SIDE_NOUNS or _physical(head, roots=("physical_entity.n.01",))
    )


def _flippable(token) -> bool:
    word = token.lower_
    if word in ("left", "right"):
        if token.pos_ == "ADV":
            return token.head.pos_ == "VERB" and word == "left"
        if token.pos_ == "ADJ" and word == "right":
            return _right_is_a_side(token)
        return token.pos_ in ("ADJ", "NOUN") and not (word == "right" and token.nbor(1).lower_ == "to")
    if word in ("over", "under"):
        return _over_under_ok(token)
    if word in ("before", "after"):  # not "as before" / "given before" (earlier), nor "searching after" (for)
        head = token.head
        if word == "after" and (head.lemma_.lower() in AFTER_VERBS or head.lower_.removesuffix("ing") in AFTER_VERBS):
            return False
        kids = {c.dep_ for c in token.children}
        if token.dep_ == "mark" or "conj" in kids:  # "after the drug was given", "before and during therapy"
            return True
        return token.dep_ in ("prep", "pcomp") and bool(kids & {"pobj", "pcomp"})
    if word in ("to", "from"):
        if token.dep_ != "prep" or token.head.lemma_.lower() not in MOTION_VERBS:
            return False
        if token.i > 0 and token.nbor(-1).lower_ in FIXED_TO:  # "carrying current parallel to a field"
            return False
        return not any(c.dep_ == "prep" and c.lower_ in ("to", "from") and c.i != token.i for c in token.head.children)
    if word in ("above", "below"):
        # of a physical thing: not a pointer in the text ("outlined below", "the above study"), a change ("drops
        # below 3 cm") or a value ("above a Mach number of 10", "below the curie point", "200 mg/kg or above")
        if token.pos_ == "VERB" or token.head.lemma_.lower() in CHANGE_VERBS:
            return False
        pobj = next((c for c in token.children if c.dep_ == "pobj"), None)
        if pobj is None or pobj.lemma_.lower() in UNDER_FORCES:  # "loaded below the critical load"
            return False
        thing = _physical(pobj, roots=("object.n.01", "matter.n.03", *BODY))  # "below the wing"
        return pobj.lower_ in LENGTHS or not _a_value(pobj) and thing  # "at heights above 200 km"
    if word in ("inside", "outside", "upstream", "downstream"):
        return token.pos_ != "VERB"
    return False


def spatial(doc) -> list[Candidate]:
    """Flip one spatial or temporal relation word (left/right, above/below, over/under, in front of/behind,
    inside/outside, before/after, directional to/from, upstream/downstream)."""
    out = []
    words = {t.lower_ for t in doc}
    for token in doc:
        word = token.lower_
        if word == "in" and [t.lower_ for t in doc[token.i + 1 : token.i + 3]] == ["front", "of"]:
            if "behind" in words:  # "in front of the car and behind the tree": a flip makes a duplicate
                continue
            changes: dict[int, str] = {}
            replace_span(doc, changes, token.i, token.i + 2, match_case("behind", token.text))
            changes[token.i + 2] = ""
            out.append((render(doc, changes), "spatial", "spatial/front-behind"))
        elif word == "behind" and token.pos_ == "ADP" and any(c.dep_ == "pobj" for c in token.children):
            if any(doc[i : i + 3].text.lower() == "in front of" for i in range(len(doc))):  # "... and in front of"
                continue
            changes = {token.i: match_case("in front of", token.text) + token.whitespace_}
            out.append((render(doc, changes), "spatial", "spatial/front-behind"))
        elif word in FLIPS and token.i + 1 < len(doc) and _flippable(token):
            new, rule = FLIPS[word]
            if new in words:  # "left or right", "before and after": flipping one word makes a duplicate
                continue
            changes = {token.i: match_case(new, token.text) + token.whitespace_}
            fix_article(doc, changes, token.i, new)  # "an upstream activator" -> "a downstream activator"
            out.append((render(doc, changes), "spatial", rule))
    return out


CATEGORY = Category(
    "spatial",
    keeps_meaning=False,
    rule=spatial,
    llm_instruction="Flip one spatial or temporal relation word: left/right, above/below, over/under, in front of/"
    "behind, inside/outside, before/after, to/from, upstream/downstream.",
)
