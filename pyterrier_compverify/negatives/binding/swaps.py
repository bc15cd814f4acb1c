"""What binding's sub-rules share: swapping two words or two noun phrases, the clause a word belongs to, and
whether a noun phrase is simple enough to trade places."""

from __future__ import annotations

from ..edit import Candidate
from ..lexicon import BOUNDARY_POS, FINITE_TAGS
from ..spans import (
    fix_article,
    glued,
    grammatical_number,
    keeps_case,
    lower_first,
    match_case,
    noun_phrase,
    render,
    replace_span,
)


def _is_clause(verb) -> bool:
    """A verb that heads its own clause: the root, or one with a subject or a finite form."""
    if verb.dep_ == "ROOT" or verb.tag_ in FINITE_TAGS:
        return True
    return any(c.dep_.startswith(("nsubj", "csubj", "expl")) or c.tag_ in FINITE_TAGS for c in verb.children)


def clause_head(token):
    """The verb of the clause a token belongs to (participles without a subject belong to the clause above)."""
    while token.head.i != token.i and not (token.pos_ in ("VERB", "AUX") and _is_clause(token)):
        token = token.head
    return token


def simple_argument(token) -> bool:
    """Whether a noun can trade places with another: a short, self-contained, uncoordinated noun phrase that
    names its entity once ("dynein", "the skin"; not "Low, Lower, and Reduced", "its expression", "the histone
    [chaperones]"), with no section label ("RESULTS") before it."""
    span = noun_phrase(token)
    if span is None or token.is_stop or token.dep_ == "conj":
        return False
    doc = token.doc
    start, _, end = span
    if any(c.dep_ in ("conj", "cc", "appos") for c in token.children):
        return False
    if any(t.dep_ == "poss" or t.pos_ == "PRON" for t in doc[start:end]):  # "its", "their": the antecedent moves
        return False
    if sum(t.lemma_.lower() == token.lemma_.lower() for t in doc) > 1:  # "stroke ... migraine ... migraine"
        return False
    if end < len(doc) and (doc[end].pos_ not in BOUNDARY_POS or doc[end].text == ","):  # "integrin [signaling]"
        return False  # the phrase goes on, or starts a list: "counts, academic problems, ..."
    if glued(doc[start]) or glued(token):  # "Best--worst scaling", "non-small-cell"
        return False
    if start > 0 and doc[start - 1].pos_ in ("NOUN", "PROPN", "NUM"):  # "Candida [albicans hyphae formation]"
        return False
    return not any(t.is_upper and t.is_alpha and len(t) > 3 for t in doc[max(0, start - 1) : end])  # "RESULTS"


def swap_words(doc, word1, word2, rule: str) -> Candidate:
    """Exchange two single words, keeping the case of each position and fixing "a"/"an" before them."""
    new1 = word2.text if keeps_case(word2) else word2.lower_
    new2 = word1.text if keeps_case(word1) else word1.lower_
    changes = {
        word1.i: match_case(new1, word1.text) + word1.whitespace_,
        word2.i: match_case(new2, word2.text) + word2.whitespace_,
    }
    fix_article(doc, changes, word1.i, new1)
    fix_article(doc, changes, word2.i, new2)
    return render(doc, changes), "binding", rule


def swap_nps(doc, first, second, rule: str, same_head: bool = False) -> Candidate | None:
    """Swap two noun phrases; determiners stay in place when both nouns have the same number. ``same_head``
    allows phrases with one head noun ("young mice" and "old mice")."""
    if first.i > second.i:
        first, second = second, first
    np1, np2 = noun_phrase(first), noun_phrase(second)
    if np1 is None or np2 is None or np1[2] > np2[0]:
        return None
    if not same_head and first.lemma_.lower() == second.lemma_.lower():
        return None
    same_number = grammatical_number(first) == grammatical_number(second)
    if not same_number:  # swapping numbers breaks agreement with verbs, pronouns and quantifiers too often
        return None
    s1, s2 = (np1[1], np1[2]), (np2[1], np2[2])
    if not same_number or np1[1] == np1[0] or np2[1] == np2[0]:  # move the determiners with their nouns
        s1, s2 = (np1[0], np1[2]), (np2[0], np2[2])
    text1, text2 = doc[s1[0] : s1[1]].text, doc[s2[0] : s2[1]].text
    if text1.lower() == text2.lower():
        return None
    changes: dict[int, str] = {}
    replace_span(doc, changes, s2[0], s2[1], lower_first(doc[s1[0]], text1))
    new_first = lower_first(doc[s2[0]], text2)
    if s1[0] == 0:
        new_first = new_first[:1].upper() + new_first[1:]
    replace_span(doc, changes, s1[0], s1[1], new_first)
    if same_number:
        fix_article(doc, changes, s1[0], text2)
        fix_article(doc, changes, s2[0], text1)
    return render(doc, changes), "binding", rule
