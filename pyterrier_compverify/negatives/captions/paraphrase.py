"""Meaning-kept caption edits (kind ``paraphrase``): high word overlap, same scene.

A verifier trained only on near-misses and on other captions of the image learns "fewer shared words = better";
these edits are positives that share almost every word with the anchor.
"""

from __future__ import annotations

from ..inflect import indefinite_article, inflect_verb
from . import lexicon as lx
from .shared import NOUN_TAGS, Candidate, make_edit, np_start
from .words import Changes, child, fix_article, hyphenated, noun_class, person, plain, put, replace_span, verb_lemma

_NOT_AFTER_THE = frozenset("first last only same other next best main".split())


def _article(doc) -> list[Candidate]:
    """A <-> The at the start of the subject: a dog runs -> the dog runs."""
    det = doc[0] if len(doc) else None
    if det is None or det.lower_ not in ("a", "an", "the") or det.dep_ != "det":
        return []
    noun = det.head
    if noun.tag_ != "NN" or noun.dep_ not in ("nsubj", "nsubjpass", "ROOT") or noun.lower_ in lx.COLLECTIVE:
        return []
    if child(noun, "conj") is not None or any(c.dep_ == "prep" and c.lower_ == "of" for c in noun.rights):
        return []
    if any(t.lower_ in _NOT_AFTER_THE for t in doc[1 : noun.i]):
        return []
    new = "the" if det.lower_ in ("a", "an") else indefinite_article(doc[1].text)
    changes: Changes = {}
    put(changes, det, new)
    return [make_edit(doc, changes, "paraphrase", "article")]


_MOTORBIKES = frozenset("dirt quad motor pit trail mini pocket".split())  # "<x> bike" that is a motorbike
_KIN = frozenset("brother brothers sister sisters sibling siblings cousin cousins".split())  # "big brother": an age


def _synonym_ok(token) -> bool:
    word = token.lower_
    modifier = child(token, "compound")
    if word == "bike" and modifier is not None and modifier.lower_ in _MOTORBIKES:  # "dirt bike": not a bicycle
        return False
    if word in ("little", "big", "large", "huge"):
        head = token.head.lower_
        if word == "little" and head in lx.CHILDREN:  # "a little girl" is a young one, not a small one
            return False
        return token.dep_ == "amod" and head not in ("bit", "while", "league", "wheel", "top") and head not in _KIN
    thing = child(token, "dobj")
    if token.pos_ == "VERB" and thing is not None and thing.lemma_.lower() == "rope":
        return False  # "jumping rope" is not "leaping rope"; "jumps a hurdle" is "leaps a hurdle"
    if word in lx.PHOTO_WORDS:
        head = token.head
        return head.lower_ == "for" or (head.pos_ == "VERB" and verb_lemma(head) in ("take", "snap"))
    if word == "sitting":
        return token.pos_ == "VERB" and token.dep_ in ("ROOT", "acl") and not any(True for _ in token.rights)
    if word in ("stone", "sea", "ocean", "cellphone", "sidewalk", "pants", "trousers"):
        return token.pos_ == "NOUN" and child(token, "compound") is None and token.dep_ != "compound"
    return token.pos_ in ("NOUN", "VERB", "ADJ") and token.dep_ != "compound"


def _synonyms(doc) -> list[Candidate]:
    """A word becomes a synonym from a short everyday list: kid -> child, couch -> sofa, next to -> beside."""
    out = []
    for token in doc:
        if token.lower_ in lx.SYNONYMS and not hyphenated(token) and _synonym_ok(token):
            for new in lx.SYNONYMS[token.lower_]:
                changes: Changes = {}
                put(changes, token, new)
                fix_article(changes, doc, token.i, new)
                out.append(make_edit(doc, changes, "paraphrase", "synonym"))
    n = len(doc)
    for t in doc:
        nxt = doc[t.i + 1].lower_ if t.i + 1 < n else ""
        changes = {}
        if t.lower_ == "next" and nxt == "to" and child(doc[t.i + 1], "pobj") is not None:
            replace_span(changes, doc, t.i, t.i + 2, "beside")
        elif t.lower_ in ("beside", "near", "atop") and t.dep_ == "prep" and child(t, "pobj") is not None:
            put(changes, t, lx.PREPOSITION_SYNONYMS[t.lower_])
        elif t.lower_ == "on" and nxt == "top" and t.i + 2 < n and doc[t.i + 2].lower_ == "of":
            replace_span(changes, doc, t.i, t.i + 3, "atop")
        if changes:
            out.append(make_edit(doc, changes, "paraphrase", "synonym"))
    return out


def _conjuncts(doc) -> list[Candidate]:
    """Two noun phrases joined by "and" change order: a man and a woman -> a woman and a man."""
    out = []
    for first in doc:
        second = child(first, "conj")
        if first.tag_ not in NOUN_TAGS or second is None or second.tag_ not in NOUN_TAGS:
            continue
        cc = child(first, "cc")
        if cc is None or cc.lower_ != "and" or any(c.dep_ not in ("cc", "conj") for c in first.rights):
            continue
        if any(True for _ in second.rights) or child(first, "det") is None or child(second, "det") is None:
            continue
        s1, s2 = np_start(first), np_start(second)
        if s1 is None or s2 is None or not (first.i < cc.i < s2) or cc.i != first.i + 1 or cc.i + 1 != s2:
            continue
        words = [plain(doc[s1])] + [t.text for t in doc[s1 + 1 : first.i + 1]]
        text1 = "".join(w + t.whitespace_ for w, t in zip(words, doc[s1 : first.i + 1])).strip()
        text2 = doc[s2 : second.i + 1].text
        changes: Changes = {}
        replace_span(changes, doc, s1, first.i + 1, text2)
        replace_span(changes, doc, s2, second.i + 1, text1)
        out.append(make_edit(doc, changes, "paraphrase", "conjunct-order"))
    return out


def _aspect(doc) -> list[Candidate]:
    """Simple present <-> present progressive: a dog runs -> a dog is running (and back)."""
    out = []
    for verb in doc:
        if verb.dep_ != "ROOT" or verb.pos_ != "VERB" or any(c.dep_ == "conj" for c in verb.children):
            continue
        subject = child(verb, "nsubj")
        lemma = verb_lemma(verb)
        if subject is None or lemma is None or lemma in lx.STATIVE or child(verb, "neg") is not None:
            continue
        auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass")]
        changes: Changes = {}
        if verb.tag_ in ("VBZ", "VBP") and not auxes:
            be = "is" if verb.tag_ == "VBZ" else "are"
            put(changes, verb, f"{be} {inflect_verb(lemma, 'VBG')}")
        elif verb.tag_ == "VBG" and len(auxes) == 1 and auxes[0].lower_ in ("is", "are") and auxes[0].i == verb.i - 1:
            changes[auxes[0].i] = ""
            put(changes, verb, inflect_verb(lemma, "VBZ" if auxes[0].lower_ == "is" else "VBP"))
        if changes:
            out.append(make_edit(doc, changes, "paraphrase", "aspect"))
    return out


def _in_wearing(doc) -> list[Candidate]:
    """A person in a red shirt <-> a person wearing a red shirt."""
    out = []
    for t in doc:
        changes: Changes = {}
        if t.lower_ == "in" and t.dep_ == "prep" and person(t.head) and t.head.i < t.i:
            obj = child(t, "pobj")
            if obj is not None and noun_class(obj) == "clothing":
                put(changes, t, "wearing")
        elif t.lower_ == "wearing" and t.dep_ == "acl" and person(t.head) and t.head.i < t.i:
            obj = child(t, "dobj")
            if obj is not None and noun_class(obj) == "clothing" and all(c.dep_ == "dobj" for c in t.children):
                put(changes, t, "in")
        if changes:
            out.append(make_edit(doc, changes, "paraphrase", "in-wearing"))
    return out


def paraphrase(doc) -> list[Candidate]:
    """All meaning-kept edits of one caption."""
    return [*_article(doc), *_synonyms(doc), *_conjuncts(doc), *_aspect(doc), *_in_wearing(doc)]
