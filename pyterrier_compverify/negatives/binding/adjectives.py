"""Binding by adjective swaps: exchange the adjectives (or material nouns) of two nouns of one clause ("the tall
man greeted the short woman" -> "the short man greeted the tall woman"), when both name traits, not kinds."""

from __future__ import annotations

from ..collocations import Collocations
from ..edit import Candidate
from ..lexicon import (
    ADJECTIVE_ENDING,
    COLOURS,
    MATERIALS,
    QUANTITIES,
    RELATIONAL_WITH_ANTONYMS,
    SCALE_HIGH,
    SCALE_LOW,
    SWAP_STOP_ADJECTIVES,
)
from ..spans import hyphenated
from .swaps import clause_head, swap_words


def _modifiers(noun, collocations: Collocations | None = None) -> list:
    """Single-word adjectives (and material nouns) before a noun, that can move to another noun."""
    out = []
    for child in noun.lefts:
        if list(child.children) or hyphenated(child) or child.lower_ in SWAP_STOP_ADJECTIVES:
            continue
        if child.i > 0 and hyphenated(child.doc[child.i - 1]):  # "non-cell autonomous"
            continue
        adjective = child.dep_ == "amod" and child.tag_ == "JJ" and child.is_alpha
        if not (adjective or (child.dep_ == "compound" and child.lower_ in MATERIALS)):
            continue
        if _in_term(child, noun) or _wordnet_compound(child, noun) or _not_adjective(child):  # "loved ones"
            continue
        if adjective and not _qualitative(child, collocations):  # "renal failure": a term, not an attribute
            continue
        if _in_name(child, noun) or _in_fixed_pair(child, collocations):  # "Septic Shock"; "left ventricular"
            continue
        if not _next_to_noun(child, noun) or _inside_term(child, noun) or _mostly_noun(child):  # "patient survival"
            continue
        out.append(child)
    return out


def _next_to_noun(modifier, noun) -> bool:
    """Whether only the noun's other pre-modifiers stand between modifier and noun (no comma, quote or misparse),
    and none of them is a number or code ("complex I deficiency", "regulatory factor 1 promoter": names)."""
    between = modifier.doc[modifier.i + 1 : noun.i]
    if modifier.i > 0 and modifier.doc[modifier.i - 1].is_quote:
        return False
    return all(t.head.i == noun.i and not t.is_punct and not t.like_num and not t.is_upper for t in between)


def _inside_term(modifier, noun) -> bool:
    """Whether the adjective sits inside a longer term: a noun, number or code modifies the same noun before it
    ("insulin dependent diabetes", "80S complex formation"; also a noun tagged as an adjective, "frequency
    independent resistor"), or an adverb right before it belongs to it ("critically ill", "dually eligible")."""
    doc = modifier.doc
    if modifier.i > 0 and doc[modifier.i - 1].pos_ == "ADV":
        return True
    return any(
        t.i < modifier.i and (t.pos_ in ("NOUN", "PROPN", "NUM", "X") or (t.tag_ == "JJ" and _not_adjective(t)))
        for t in noun.lefts
    )


def _mostly_noun(token) -> bool:
    """Whether WordNet's sense-tagged counts use the word as a noun more often than as an adjective ("patient")."""
    from ..wordnet import load_wordnet

    word = token.lower_
    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return False

    def count(pos):
        return sum(lem.count() for s in wordnet.synsets(word, pos) for lem in s.lemmas() if lem.name() == word)

    return count("n") > count("a")


def _in_name(modifier, noun) -> bool:
    """Whether the phrase is a name or a label: a capitalised word (not the first), an upper-case modifier, or an
    abbreviation in parentheses right after it ("small interfering RNA (siRNA)", "left ventricular (LV) mass")."""
    if any(not t.is_lower and (t.i > 0 or t.is_upper) for t in (modifier, noun)):
        return True
    return any(t.text == "(" for t in modifier.doc[modifier.i : noun.i + 2])


def _in_fixed_pair(modifier, collocations: Collocations | None) -> bool:
    """Whether the modifier and a neighbouring content word form a fixed term in the corpus ("critically ill",
    "left ventricular", "systematic review", "absolute risk")."""
    if collocations is None:
        return False
    doc = modifier.doc
    if modifier.i > 0:
        before = doc[modifier.i - 1]
        if not (before.is_stop or before.is_punct) and collocations.fixed(before.text, modifier.text):
            return True
    return collocations.fixed(modifier.text, doc[modifier.i + 1].text)


def _qualitative(token, collocations: Collocations | None = None) -> bool:
    """Whether an adjective names a property an entity can have or lack (tall/short, high/low, chronic/acute, a
    colour): its first WordNet sense is a head adjective with a direct antonym, or a satellite of one ("rapid",
    "severe") that the corpus grades ("more severe"). Relational adjectives ("renal", "retinal", "coronary") are
    neither and mostly form fixed terms, so swapping them makes nonsense."""
    from ..wordnet import load_wordnet

    word = token.lower_
    if word in COLOURS:
        return True
    if word in RELATIONAL_WITH_ANTONYMS:
        return False
    try:
        synsets = load_wordnet().synsets(word, "a")
    except (ImportError, OSError):
        return False
    if not synsets or _relational(word, synsets) or not _describes_attribute(synsets):
        return False
    if synsets[0].pos() == "s":
        return collocations is not None and collocations.graded(word)
    return any(lemma.name() == word and lemma.antonyms() for lemma in synsets[0].lemmas())


def _describes_attribute(synsets) -> bool:
    """Whether one of the adjective's first two senses (or the head adjective of its cluster) is a value of a
    WordNet attribute ("high" - height, "rapid" - speed, "chronic" - duration): a descriptive adjective, not one
    that names a kind ("regulatory", "voluntary", "operable")."""
    return any(head.attributes() for synset in synsets[:2] for head in [synset, *synset.similar_tos()])


def _relational(word: str, synsets) -> bool:
    """Whether one of the adjective's senses relates to a noun (a WordNet pertainym: "cerebral" - cerebrum,
    "vascular", "mental", "extracellular"): in abstracts such words mostly name a kind, not a trait."""
    return any(lemma.name() == word and lemma.pertainyms() for synset in synsets for lemma in synset.lemmas())


def _in_term(modifier, noun) -> bool:
    """Whether the modifier starts a WordNet multi-word term inside the noun phrase ("red blood cell",
    "mental health [clinicians]"); a plain adjective + noun term ("blue sky", "young man") does not count."""
    from ..wordnet import load_wordnet

    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return False
    doc = modifier.doc
    spans = [doc[modifier.i : modifier.i + 3]]
    if modifier.i + 1 < noun.i:
        spans.append(doc[modifier.i : modifier.i + 2])
    return any(len(span) > 1 and wordnet.synsets("_".join(t.lower_ for t in span)) for span in spans)


def _wordnet_compound(modifier, noun) -> bool:
    """Whether the adjective and the noun right after it form a WordNet noun ("loved one", "white matter",
    "heavy metal", "yellow fever")."""
    from ..wordnet import load_wordnet

    if modifier.i + 1 != noun.i:
        return False
    try:
        return bool(load_wordnet().synsets(f"{modifier.lower_}_{noun.lemma_.lower()}", "n"))
    except (ImportError, OSError):
        return False


def _not_adjective(token) -> bool:
    """Whether a word tagged JJ is likely a noun or verb ("proteoglycan metabolites", "cells that suppress"):
    WordNet knows it only as a noun or verb, or does not know it and it has no adjective ending."""
    from ..wordnet import load_wordnet

    word = token.lower_
    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return ADJECTIVE_ENDING.search(word) is None
    if wordnet.synsets(word, "a"):
        return False
    return bool(wordnet.synsets(word, "n") or wordnet.synsets(word, "v")) or ADJECTIVE_ENDING.search(word) is None


def _same_entity(noun1, noun2) -> bool:
    """Whether two nouns may name one entity: linked by a copula or apposition, or subject and attribute."""
    for a, b in ((noun1, noun2), (noun2, noun1)):
        if b.head.i == a.i and b.dep_ in ("appos", "attr", "conj"):
            return True
        if a.dep_ in ("nsubj", "nsubjpass") and b.dep_ in ("attr", "oprd") and a.head.i == b.head.i:
            return True
    return a.head.i == b.head.i and a.head.lemma_ == "be"


def _near_synonyms(word1: str, word2: str) -> bool:
    """Whether two adjectives share a WordNet synset or similar-to cluster (good/skilled, impaired/inefficient), or
    name the same end of a scale of amount or degree (high/severe, slow/low)."""
    from ..wordnet import load_wordnet

    if {word1, word2} <= SCALE_HIGH or {word1, word2} <= SCALE_LOW:
        return True

    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return False

    def cluster(word):
        out = set()
        for synset in wordnet.synsets(word, "a"):
            out.add(synset)
            out.update(synset.similar_tos())
        return out

    return bool(cluster(word1) & cluster(word2))


def _only_verb(token) -> bool:
    """Whether WordNet knows the word as a verb but not as a noun ("a protein complex propels": a misparse)."""
    from ..wordnet import load_wordnet

    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return False
    return not wordnet.synsets(token.lower_, "n") and bool(wordnet.synsets(token.lower_, "v"))


def _kinds(word: str) -> tuple[set[str], set[str]]:
    """What an adjective measures and its opposites: ("colour", no opposites) for a colour, else the WordNet
    attributes and antonyms of its first sense, a satellite read through its head adjectives (large -> size,
    opposite small; tall -> stature, opposite short)."""
    from ..wordnet import load_wordnet

    if word in COLOURS:
        return {"colour"}, set()
    try:
        synsets = load_wordnet().synsets(word, "a")
    except (ImportError, OSError):
        return set(), set()
    first = (synsets[0].similar_tos() if synsets[0].pos() == "s" else synsets[:1]) if synsets else []
    attributes = {a.name() for head in first for a in head.attributes()}
    opposites = {antonym.name().lower() for head in first for lemma in head.lemmas() for antonym in lemma.antonyms()}
    return attributes, opposites


def _lands_beside_its_kind(moved, staying: list) -> bool:
    """Whether an adjective moved to a noun would meet a modifier of its kind there ("the blue red ball") or its
    opposite ("the tall short tree")."""
    kinds, opposites = _kinds(moved.lower_)
    for other in staying:
        other_kinds, other_opposites = _kinds(other.lower_)
        if kinds & other_kinds or other.lower_ in opposites or moved.lower_ in other_opposites:
            return True
    return False


def swap_amod(doc, collocations: Collocations | None = None) -> list[Candidate]:
    """Swap one adjective of a noun with one of another noun of the same clause."""
    # a noun that modifies another ("high speed entry", "high gas temperatures") lends its adjective to the term;
    # a material stays a host ("the heavy steel door")
    hosts = [t for t in doc if t.pos_ == "NOUN" and (t.dep_ != "compound" or t.lower_ in MATERIALS)]
    modifiers = {t.i: _modifiers(t, collocations) for t in hosts if not _only_verb(t)}
    nouns = [doc[i] for i, found in modifiers.items() if found and doc[i].lemma_.lower() not in QUANTITIES]
    out = []
    for a, noun1 in enumerate(nouns):
        for noun2 in nouns[a + 1 :]:
            if noun1.lemma_.lower() == noun2.lemma_.lower() or clause_head(noun1).i != clause_head(noun2).i:
                continue
            if _same_entity(noun1, noun2):  # "a valuable model is a dynamic tool": nothing moves
                continue
            words1 = {t.lower_ for c in noun1.lefts for t in c.subtree}
            words2 = {t.lower_ for c in noun2.lefts for t in c.subtree}
            for adj1 in modifiers[noun1.i]:
                for adj2 in modifiers[noun2.i]:
                    if adj1.lower_ in words2 or adj2.lower_ in words1 or _near_synonyms(adj1.lower_, adj2.lower_):
                        continue
                    stay1 = [m for m in modifiers[noun1.i] if m.i != adj1.i]
                    stay2 = [m for m in modifiers[noun2.i] if m.i != adj2.i]
                    if _lands_beside_its_kind(adj2, stay1) or _lands_beside_its_kind(adj1, stay2):
                        continue
                    rule = "binding/swap-amod" if adj1.dep_ == adj2.dep_ == "amod" else "binding/swap-modifier"
                    out.append(swap_words(doc, adj1, adj2, rule))
    return out
