"""Count near-misses (``count``): a dog -> two dogs, two dogs -> three dogs, three dogs -> one dog."""

from __future__ import annotations

from . import lexicon as lx
from .shared import NOUN_TAGS, Candidate, make_edit
from .words import (
    Changes,
    agree,
    body_part,
    child,
    concrete,
    hyphenated,
    is_plural,
    living,
    noun_class,
    noun_lemma,
    person,
    plural_noun,
    put,
    verb_lemma,
)

NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
ORDINALS = frozenset("second third fourth fifth sixth".split())


def _pluralisable(noun) -> bool:
    """A singular count noun whose plural reads naturally: no collective, no singular thing it wears or holds, no
    later pronoun that would lose its antecedent."""
    doc = noun.doc
    if noun.tag_ != "NN" or noun.pos_ != "NOUN" or noun_lemma(noun.lower_) in lx.COLLECTIVE or hyphenated(noun):
        return False
    if noun_class(noun) == "clothing" or noun.lower_ in lx.TERRAIN or body_part(noun):
        return False
    if not living(noun) and not (
        noun.dep_ == "dobj"
        and verb_lemma(noun.head) not in ("ride", "wear", "drive", "row", "paddle", "steer", "do", "perform")
        and concrete(noun)
    ):
        return False
    if noun.dep_ == "pobj" and noun.head.lower_ in ("on", "in", "inside", "into", "onto", "at", "off"):
        return False  # "jumps off a building": not off two
    if noun.dep_ == "dobj" and any(c.dep_ == "prt" and c.lower_ == "off" for c in noun.head.children):
        return False  # "jumps off a building", "off" read as a particle
    owner = _of_what(noun)
    if owner is not None and not is_plural(owner) and (noun_class(owner) == "clothing" or body_part(owner)):
        return False  # "the shirt of a boy": not of two boys
    if any(_same_one(t, noun) for t in doc[noun.i + 1 :]):
        return False  # "next to a dog, while the dog jumps": "the dog" would have no referent
    if any(c.lower_ in ("lone", "single", "only", "solitary", "sole") for c in noun.lefts):
        return False
    if noun_lemma(noun.lower_) in lx.FLAT_PATHS | lx.SLOPES | lx.PHOTO_WORDS:  # two pictures do not show in one
        return False
    if noun_lemma(noun.lower_) in lx.SINGLE_USER_THINGS or any(c.dep_ == "relcl" for c in noun.children):
        return False  # "plays two violins"; "the arm of two men who has on gear": the relative clause would not agree
    if person(noun) and _uses_a_single_thing(noun):
        return False
    if any(t.lower_ == "their" and t.dep_ == "poss" and _one_per_owner(t.head) for t in doc[noun.i + 1 :]):
        return False  # "a snowboarder on their snowboard": two would not share one
    worn = [t for t in _own(noun) if _one_garment(t)]
    worn += [t for t in _clause(noun) if _worn_in_clause(t, noun)]
    if worn or any(t.lower_ == "with" and t.i > noun.i for t in noun.subtree):
        return False
    if child(noun, "compound", "poss", "conj", "cc") is not None or noun.dep_ in ("conj", "compound", "poss"):
        return False
    if any(t.lower_ in lx.THIRD_SINGULAR_PRONOUNS for t in doc[noun.i + 1 :]):
        return False
    for c in noun.rights:
        if c.dep_ in ("prep", "acl", "relcl"):
            inner = child(c, "pobj", "dobj")
            if inner is not None and not is_plural(inner) and inner.tag_ in NOUN_TAGS:
                return False
    return plural_noun(noun_lemma(noun.lower_)) is not None


def _same_one(later, noun) -> bool:
    """Whether ``later`` names the noun again as the one already mentioned ("the dog"; not "another dog")."""
    det = child(later, "det")
    same = later.pos_ == "NOUN" and noun_lemma(later.lower_) == noun_lemma(noun.lower_)
    return same and det is not None and det.lower_ in ("the", "this", "that")


def _another_of(other, noun) -> bool:
    """Whether "other" stands for another of the noun's group: alone ("punching the other") or before the same noun
    ("the other woman"), not the counted noun itself ("the other two dogs") nor another thing ("the other side")."""
    if other.dep_ != "amod":
        return True
    return other.head.i != noun.i and noun_lemma(other.head.lower_) == noun_lemma(noun.lower_)


def _garment(token) -> bool:
    """Whether the token names a garment (``noun_class`` clothing), or a wrap as worn (``lexicon.WRAPS``: "in a
    burka", "in blankets", "wearing a cape"; not "a jumper in the air", "on a blanket"), in either number."""
    in_it = token.dep_ == "pobj" and token.head.lower_ == "in"
    worn = token.dep_ == "dobj" and verb_lemma(token.head) == "wear"
    return noun_class(token) == "clothing" or noun_lemma(token.lower_) in lx.WRAPS and (in_it or worn)


def _worn_by_several(token) -> bool:
    """Whether the token is clothing in the plural that one person wears one of ("costumes", "jerseys", "in burkas";
    not "jeans", "boots")."""
    return is_plural(token) and _garment(token) and token.lower_ not in lx.PAIRS


def _one_per_owner(token) -> bool:
    """Whether the token is one thing of which each owner has their own: a body part, a garment or a thing one
    person rides or uses, in the singular ("their head", "their snowboard")."""
    singular = not is_plural(token) and token.tag_ == "NN"
    own = body_part(token) or _garment(token) or noun_lemma(token.lower_) in lx.SINGLE_USER_THINGS
    return singular and own


def _one_garment(token) -> bool:
    """Whether the token is one garment or wrap, which one wearer has ("a shirt", "a burka", "wearing a wig": whatever
    is worn with a/an/one; not "wearing green", "face paint", "black clothing")."""
    det = child(token, "det")
    counted = det is not None and det.lower_ in ("a", "an", "one")
    put_on = token.dep_ == "dobj" and verb_lemma(token.head) == "wear" and counted
    listed = token.lower_ in lx.CLOTHING  # a garment WordNet knows needs a/an/one too: not "black clothing", "pajama"
    return (listed or _garment(token) and counted or put_on) and not is_plural(token) and token.lower_ not in lx.PAIRS


def _worn_in_clause(token, noun) -> bool:
    """Whether the token is one garment that the noun's verb or participle puts it in ("is wrapped in a white robe",
    "holds a baby in a blue jumper"; not "a guard in red uniform" nor "a man dressed in a costume", which another
    wears) or that a participle of the noun or its verb wears ("feeding a horse wearing a blanket", "dogs take flight
    while wearing a jersey"; not "dogs give paw to a woman wearing a jacket", nor for an object "feeds a horse while
    wearing a jacket", which the subject wears)."""
    verbs = (noun.head, *(c for c in noun.head.children if c.dep_ == "conj"))
    doers = (noun, *(verbs if noun.dep_ != "ROOT" else ()), *(c for c in noun.children if c.dep_ == "acl"))
    in_it = token.dep_ == "pobj" and token.head.lower_ == "in" and token.head.head in doers
    wear = token.head
    own_act = noun.dep_ != "dobj" or child(wear, "mark") is None  # "while wearing": the subject's act
    wearing = token.dep_ == "dobj" and verb_lemma(wear) == "wear" and wear.dep_ in ("acl", "advcl")
    return (in_it or wearing and wear.head in doers and own_act) and _one_garment(token)


def _one_each(token) -> bool:
    """Whether the token is a plural of things that each of a group has one of ("men on mountain bikes", "dogs with
    collars", "girls ride horses", "dogs with tongues out"): one of them would not have several."""
    if not is_plural(token):
        return False
    ridden = token.dep_ == "dobj" and verb_lemma(token.head) == "ride"
    ridden_on = token.dep_ == "pobj" and token.head.lower_ == "on" and verb_lemma(token.head.head) == "ride"
    return ridden or ridden_on or noun_lemma(token.lower_) in lx.SINGLE_USER_THINGS | lx.ANIMAL_GEAR | lx.ONE_PER_BODY


def _clause(noun) -> list:
    """The tokens after the noun in the clause it is the subject or object of (its verb's subtree, conjoined verbs
    included), or in its own subtree otherwise (where it heads the caption, say)."""
    tokens = list(noun.head.subtree if noun.dep_ in ("nsubj", "nsubjpass", "dobj") else noun.subtree)
    others = {  # "while another girl is in a costume": a clause of its own
        t.i
        for c in tokens
        if c.dep_ in ("advcl", "ccomp", "relcl") and child(c, "nsubj", "nsubjpass") is not None
        for t in c.subtree
    }
    return [t for t in tokens if t.i > noun.i and t.i not in others]


def _of_what(noun):
    """The noun that "of" ties this one to ("the shirt of a boy", "a group of four boys"), or None."""
    return noun.head.head if noun.dep_ == "pobj" and noun.head.lower_ == "of" else None


def _in_a_group(noun) -> bool:
    """Whether the noun counts the members of a group ("a group of four boys": not "a group of one boy")."""
    group = _of_what(noun)
    return group is not None and noun_lemma(group.lower_) in lx.COLLECTIVE


def _own(noun) -> list:
    """The tokens after the noun that describe it: its subtree, and the object of its verb where it is the subject."""
    obj = child(noun.head, "dobj") if noun.dep_ == "nsubj" else None
    return [t for t in (*noun.subtree, *(obj.subtree if obj is not None else ())) if t.i > noun.i]


def _named_members(noun) -> bool:
    """Whether the caption fixes the count by naming the members ("two dogs, a spaniel and a husky"), by counting them
    again ("three dogs, two black one brown", "three dogs run, two playing") or by "both" or "the other" standing for
    them (two), so that another number contradicts it."""
    listed = any(  # "two dogs, a spaniel and a husky"; "three dogs, two black one brown"
        c.dep_ == "appos" and (child(c, "conj") is not None or sum(t.like_num for t in c.subtree) > 1)
        for c in noun.children
    )
    doc = noun.doc
    # "three dogs run, two playing": a number standing for some of them (any later number not counting a noun)
    some = any(t.lower_ in NUMBERS[1:] and t.dep_ != "nummod" and t.i > noun.i for t in doc)
    some = some or any(t.lower_ in ORDINALS for t in doc)  # "two people ..., a third person": the third is not one
    both = any(t.lower_ == "both" and t.dep_ not in ("det", "predet") for t in doc)  # not "with both hands"
    two = any(  # "one man punching the other", "the other woman"; not "on the other side"
        t.lower_ == "other" and t.i > 0 and doc[t.i - 1].lower_ == "the" and _another_of(t, noun) for t in doc
    )
    return listed or some or both or two


def _uses_a_single_thing(noun) -> bool:
    """Whether what the noun does (as subject, or in a participle after it) has as object, or names after any
    preposition of that verb or object, one thing only one person uses at a time ("a man shoots a rifle", "a man
    sitting on a chair", "a man performing a jump on a skateboard"), or anything it is on in its clause."""
    things = []
    for verb in _doings(noun, ("nsubj",)):
        obj = child(verb, "dobj")
        holders = [verb] if obj is None else [verb, obj]
        things += [obj, *(child(p, "pobj") for h in holders for p in h.children if p.dep_ == "prep")]
        things += [child(p, "pobj") for p in verb.subtree if p.lower_ == "on"]  # "is in the air on a bike"
    return any(t is not None and not is_plural(t) and noun_lemma(t.lower_) in lx.SINGLE_USER_THINGS for t in things)


def _with_a_partner(noun) -> bool:
    """Whether the noun does something that needs a partner and has none named ("two dogs wrestle", "two people
    embracing"; not "two women hug a man"): its verb (or a participle after it, or a verb misparsed as its head
    noun) is one of ``PARTNER_VERBS`` without an object."""
    return any(
        (verb_lemma(v) if v.pos_ == "VERB" else v.lower_) in lx.PARTNER_VERBS and child(v, "dobj") is None
        for v in _doings(noun, ("nsubj", "compound"))
    )


def _doings(noun, heads: tuple[str, ...]) -> list:
    """What the noun does: the participles after it ("a man sitting"), and its head where the noun is attached to
    it by one of ``heads`` (its verb as subject)."""
    return [c for c in noun.children if c.dep_ == "acl"] + ([noun.head] if noun.dep_ in heads else [])


# words that need more than one ("two dogs play, one is splashing": "one" of them; "in matching dresses")
_PLURAL_ONLY_WORDS = frozenset(
    "they them their themselves each both together other another between among matching one".split()
)


def count(doc) -> list[Candidate]:
    """A count changes: a dog -> two dogs, two dogs -> three dogs, three dogs -> one dog."""
    out = []
    for det in doc:
        word = det.lower_
        noun = det.head
        if det.dep_ == "det" and word in ("a", "an", "one") or det.dep_ == "nummod" and word == "one":
            if not _pluralisable(noun) or det.i + 1 < len(doc) and doc[det.i + 1].lower_ in ("few", "lot", "little"):
                continue
            if det.i > 0 and doc[det.i - 1].lower_ in NUMBERS:  # "one a child": a member named, not counted
                continue
            changes: Changes = {}
            put(changes, det, "two")
            put(changes, noun, plural_noun(noun_lemma(noun.lower_)))
            if agree(changes, noun, to_plural=True):
                out.append(make_edit(doc, changes, "count", "one-to-two"))
        elif det.dep_ == "nummod" and word in NUMBERS[1:] and noun.tag_ == "NNS":
            if _named_members(noun) or noun.dep_ == "compound":  # "two brown dogs sniff": "sniff" read as the noun
                continue
            if noun.dep_ == "pobj" and noun.head.lower_ == "between":  # "a jump between two mounds"
                continue
            value = NUMBERS.index(word) + 1
            for new in (value - 1, value + 1):
                if 2 <= new <= len(NUMBERS):
                    changes = {}
                    put(changes, det, NUMBERS[new - 1])
                    out.append(make_edit(doc, changes, "count", "number"))
            singular = noun_lemma(noun.lower_)
            if (
                plural_noun(singular) == noun.lower_
                and not _with_a_partner(noun)  # "one dog is wrestling": with whom?
                and child(noun, "conj", "cc") is None
                and noun.dep_ != "conj"
                and not any(t.lower_ in _PLURAL_ONLY_WORDS for t in doc)
                and "side by side" not in doc.text.lower()
                and not _in_a_group(noun)
                and not any(_worn_by_several(t) for t in _own(noun))  # "two men in costumes"
                and not any(_one_each(t) for t in _clause(noun))  # "on bikes", "riding on bicycles", "ride horses"
            ):
                changes = {}
                put(changes, det, "one")
                put(changes, noun, singular)
                if agree(changes, noun, to_plural=False):
                    out.append(make_edit(doc, changes, "count", "many-to-one"))
    return out
