"""Paraphrase: a WordNet synonym for one adjective, or "A and B" -> "B and A" (meaning kept: a positive)."""

from __future__ import annotations

from .category import Category
from .edit import Candidate
from .inflect import inflect_verb, is_irregular, plural
from .lexicon import CORRELATIVES, LIGHT_VERBS, MIN_COUNT, MIN_WORD_COUNT, SYNONYM_POS, TECHNICAL, WN_POS
from .spans import fix_article, hyphenated, lower_first, match_case, render, replace_span


def _dominant(wordnet, synset, lemma: str) -> bool:
    """Whether ``synset`` is the sense ``lemma`` has at least half the time (in WordNet's sense-tagged counts)."""
    total = sum(
        lem.count() for pos in "nva" for s in wordnet.synsets(lemma, pos) for lem in s.lemmas() if lem.name() == lemma
    )
    here = sum(lem.count() for lem in synset.lemmas() if lem.name() == lemma)
    return here > 0 and 2 * here >= total


def _in_multiword(token) -> bool:
    """Whether the word is part of a WordNet multi-word expression here ("red blood cell", "heart attack")."""
    from .wordnet import load_wordnet

    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return False
    doc, i = token.doc, token.i
    for start in range(max(0, i - 2), i + 1):
        for end in range(max(i + 1, start + 2), min(len(doc), start + 3) + 1):
            words = [t.lemma_.lower() if t.i == i else t.lower_ for t in doc[start:end]]  # "builds on": build_on
            if wordnet.synsets("_".join(words)):
                return True
    return False


def _synonym(token) -> str | None:
    """The most frequent other single-word lemma of the word's first WordNet synset, inflected like the word."""
    from .wordnet import load_wordnet

    lemma = token.lemma_.lower()
    wordnet = load_wordnet()
    synsets = wordnet.synsets(lemma, WN_POS[token.pos_])
    if not synsets or lemma not in synsets[0].lemma_names() or lemma in TECHNICAL:
        return None
    if not _dominant(wordnet, synsets[0], lemma) or _in_multiword(token):
        return None
    if sum(lem.count() for s in synsets for lem in s.lemmas() if lem.name() == lemma) < MIN_WORD_COUNT:
        return None  # too rare in WordNet's sense-tagged corpus to trust its sense order
    names = [
        (lem.count(), lem.name())
        for lem in synsets[0].lemmas()
        if lem.name() != lemma and lem.name().isalpha() and lem.name().islower() and lem.count() >= MIN_COUNT
    ]
    # the synonym's own first sense must be this one too ("recover" -> "retrieve" is not, "sofa" -> "couch" is)
    names = [n for n in names if wordnet.synsets(n[1], synsets[0].pos())[:1] == synsets[:1]]
    names = [n for n in names if _dominant(wordnet, synsets[0], n[1])]
    names = [n for n in names if not n[1].startswith(lemma) and not lemma.startswith(n[1])]
    if token.pos_ == "NOUN":  # "diagnosis" -> "diagnosing"
        names = [n for n in names if not n[1].endswith("ing") or lemma.endswith("ing")]
    if not names:
        return None
    word = max(names, key=lambda n: n[0])[1]
    if token.pos_ == "NOUN":
        return word if token.tag_ == "NN" else plural(word) if token.tag_ == "NNS" else None
    if token.pos_ == "VERB":
        if token.tag_ in ("VBD", "VBN") and is_irregular(word):
            return None
        return inflect_verb(word, token.tag_)
    return word if token.tag_ == "JJ" else None


def _synonyms(doc) -> list[Candidate]:
    out = []
    for token in doc:
        if token.pos_ not in SYNONYM_POS or not token.is_alpha or token.is_stop or token.like_num or token.ent_type_:
            continue
        if len(token) < 3 or (token.i > 0 and token.text[:1].isupper()) or token.text.isupper():
            continue
        if token.lemma_.lower() in LIGHT_VERBS or token.dep_ == "compound" or hyphenated(token):
            continue
        if token.pos_ == "VERB" and token.dep_ == "amod":  # participles as adjectives: "published evidence"
            continue
        if token.pos_ == "ADJ" and token.dep_ not in ("amod", "acomp", "conj", "oprd"):  # "the elderly"
            continue
        if any(c.dep_ in ("compound", "prt") for c in token.children):  # "blood pressure", "carry out"
            continue
        new = _synonym(token)
        if new is None or new == token.lower_:
            continue
        changes = {token.i: match_case(new, token.text) + token.whitespace_}
        fix_article(doc, changes, token.i, new)
        out.append((render(doc, changes), "paraphrase", "paraphrase/synonym"))
    return out


def _chunk_by_root(doc) -> dict[int, tuple[int, int]]:
    return {chunk.root.i: (chunk.start, chunk.end) for chunk in doc.noun_chunks}


def _ends_phrase(token) -> bool:
    """Whether a noun phrase can end right before this token (punctuation, a preposition, a verb, a clause word)."""
    return token.is_punct or token.pos_ in ("ADP", "VERB", "AUX", "SCONJ", "PART") or token.tag_ in ("WDT", "WP")


def _reorder_conjuncts(doc) -> list[Candidate]:
    if any(t.lower_ == "respectively" for t in doc):
        return []
    chunks = _chunk_by_root(doc)
    out = []
    for second in doc:
        first = second.head
        if second.dep_ != "conj" or first.i not in chunks or second.i not in chunks:
            continue
        (a0, a1), (b0, b1) = chunks[first.i], chunks[second.i]
        if a1 + 1 != b0 or doc[a1].lower_ != "and" or max(a1 - a0, b1 - b0) > 4:
            continue
        if sum(c.dep_ == "conj" for c in first.children) != 1 or any(c.dep_ == "conj" for c in second.children):
            continue
        if any(t.i >= b1 for t in second.subtree) or any(a1 <= t.i < b0 and t.dep_ != "cc" for t in first.subtree):
            continue
        if any(t.i >= b1 for t in first.subtree):  # "the quality and expense of X": "of X" belongs to both
            continue
        if (a0 > 0 and doc[a0 - 1].lower_ in ("and", "or", ",")) or (b1 < len(doc) and not _ends_phrase(doc[b1])):
            continue  # part of a longer list, or a shared head ("hematoxylin and eosin staining")
        if any(t.lower_ in CORRELATIVES for t in doc[max(0, a0 - 1) : a1]):
            continue
        if a1 - a0 != 1 or b1 - b0 != 1 or first.tag_ not in ("NN", "NNS") or second.tag_ not in ("NN", "NNS"):
            continue  # bare nouns only: a modifier before the pair may belong to both ("related molecules and X")
        if a0 > 0 and doc[a0 - 1].pos_ not in ("ADP", "VERB", "AUX", "PUNCT", "CCONJ"):
            continue  # "thus bone formation and X", "neck carcinoma and head"
        if not ((first.is_lower or (a0 == 0 and first.text[1:].islower())) and second.is_lower) or any(
            t.text in "()[]" for t in doc[max(0, a0 - 2) : b1 + 2]
        ):
            continue
        if b1 < len(doc) and (doc[b1].tag_ == "WRB" or second.pos_ != "NOUN" or first.pos_ not in ("NOUN", "PROPN")):
            continue  # "the body and details why ...": "details" is a verb the parser took for a noun
        if a1 - a0 > 1 and doc[a0].dep_ != "det":
            continue  # the modifiers may be shared: "Norrin mRNA and protein", "confocal microscopy and imaging"
        if a1 - a0 == 1 and first.tag_ == "NN" and second.tag_ == "NNS":
            continue  # the head may be shared: "tumor and normal cells"
        text_a, text_b = doc[a0:a1].text, doc[b0:b1].text
        if text_a.lower() == text_b.lower() or first.lemma_.lower() == second.lemma_.lower():
            continue
        new_b = lower_first(doc[b0], text_b)
        if a0 == 0:
            new_b = new_b[:1].upper() + new_b[1:]
        new_text = f"{new_b}{doc[a1 - 1].whitespace_}{doc[a1].text}{doc[a1].whitespace_}{lower_first(doc[a0], text_a)}"
        changes: dict[int, str] = {}
        replace_span(doc, changes, a0, b1, new_text)
        out.append((render(doc, changes), "paraphrase", "paraphrase/reorder-and"))
    return out


def paraphrase(doc) -> list[Candidate]:
    """Meaning-preserving edits: a WordNet synonym for one content word; "A and B" -> "B and A"."""
    return _synonyms(doc) + _reorder_conjuncts(doc)


CATEGORY = Category(
    "paraphrase",
    keeps_meaning=True,
    rule=paraphrase,
    llm_instruction="Keep the meaning exactly: replace one word with a synonym, or reorder 'A and B' to 'B and A'.",
)
