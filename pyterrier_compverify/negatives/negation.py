"""Negation: remove the negation of the main predicate, or insert one (meaning flipped)."""

from __future__ import annotations

from .category import Category
from .edit import Candidate
from .inflect import inflect_verb
from .lexicon import (
    CONTRACTED,
    DO_FORMS,
    NEGATIVE_ADVERBS,
    NEGATORS,
    PARTIAL_ADVERBS,
    PARTIAL_QUANTIFIERS,
    POLARITY,
    SENTENCE_ADVERBS,
)
from .spans import child_of, main_root, match_case, render, rest_of_clause, subject_of


def _is_negated(root) -> bool:
    for child in root.children:
        if child.dep_ == "neg" or child.lower_ in NEGATORS:
            return True
        if any(grand.dep_ == "det" and grand.lower_ in ("no", "neither") for grand in child.children):
            return True
    return False


def _polarity_after(neg) -> bool:
    """Whether the clause after a negation holds a word that needs it ("any", "yet", "either", "ever")."""
    after = neg.doc[neg.i + 1 :].text
    return bool(POLARITY.search(rest_of_clause(after)))


def _with_not(token) -> str:
    """``token`` (an auxiliary or copula) followed by "not" ("can" -> "cannot"), then the space that followed it;
    none before punctuation or at the end ("was, however," -> "was not, however,")."""
    following = token.doc[token.i + 1] if token.i + 1 < len(token.doc) else None
    space = token.whitespace_ or ("" if following is None or following.is_punct else " ")
    return token.text + ("" if token.lower_ == "can" else " ") + "not" + space


def negation(doc) -> list[Candidate]:
    """Remove the negation of the main predicate, or insert one (``not`` after the first auxiliary, after a copula,
    or with do-support: shows -> does not show)."""
    root = main_root(doc)
    if root.pos_ not in ("VERB", "AUX"):
        return []
    start = root.sent.start
    if start > 0 and not doc[start].text[:1].isupper():  # the parser split the sentence: its longest part is a fragment
        return []
    out: list[Candidate] = []
    subject = subject_of(root)
    if subject is not None and any(
        c.dep_ in ("det", "amod") and c.lower_ in PARTIAL_QUANTIFIERS for c in subject.children
    ):
        return []  # "Some patients relapsed" / "Some patients did not relapse": both hold, either way round
    auxes = [c for c in root.children if c.dep_ in ("aux", "auxpass") and c.i < root.i and c.tag_ != "TO"]
    for neg in (c for c in root.children if c.dep_ == "neg"):
        changes: dict[int, str] = {}
        if _polarity_after(neg):  # "did not show any effect" -> "showed any effect": no sentence
            continue
        if neg.lower_ == "never":
            changes[neg.i] = ""
            out.append((render(doc, changes), "negation", "negation/remove-never"))
            continue
        if neg.lower_ not in ("not", "n't") or neg.i == 0:
            continue
        before = doc[neg.i - 1]
        is_do = before.i in {a.i for a in auxes} and before.lemma_.lower() == "do" and before.tag_ in DO_FORMS
        do_aux = before if is_do else None
        if do_aux is not None and len(auxes) == 1 and root.tag_ == "VB" and not (subject and subject.i > do_aux.i):
            form = inflect_verb(root.lemma_, do_aux.tag_)  # does -> VBZ, did -> VBD, do -> VBP
            if form is None:
                continue
            changes[do_aux.i] = ""
            changes[neg.i] = ""
            changes[root.i] = match_case(form, root.text) + root.whitespace_
            out.append((render(doc, changes), "negation", "negation/remove-do"))
            continue
        if not before.whitespace_:  # "cannot", "isn't", "can't": the auxiliary needs its own space back
            text = before.text
            if neg.lower_ == "n't" and before.lower_ in CONTRACTED:
                text = match_case(CONTRACTED[before.lower_], before.text)
            changes[before.i] = text + (neg.whitespace_ or " ")
        changes[neg.i] = ""
        out.append((render(doc, changes), "negation", "negation/remove-not"))
    if out or _is_negated(root):
        return out
    if any(c.dep_ == "advmod" and c.lower_ in PARTIAL_ADVERBS | NEGATIVE_ADVERBS for c in root.children):
        return out  # "often play" / "often do not play" do not contradict; "does not barely move" is no sentence
    changes = {}
    if auxes:
        aux = auxes[0]
        if subject is not None and subject.i > aux.i:  # a question: "Does X cause Y?"
            return out
        after = aux  # "were also not investigated"
        while after.i + 1 < root.i and doc[after.i + 1].lower_ in SENTENCE_ADVERBS:
            after = doc[after.i + 1]
        changes[after.i] = _with_not(after)
        out.append((render(doc, changes), "negation", "negation/insert-aux"))
    elif root.lemma_.lower() == "be" and root.tag_ in DO_FORMS:
        if subject is None or subject.i > root.i:
            return out
        changes[root.i] = _with_not(root)
        out.append((render(doc, changes), "negation", "negation/insert-be"))
    elif root.tag_ in DO_FORMS or (root.tag_ == "VBN" and root.dep_ == "ROOT"):
        # "VBN" root without auxiliary: the tagger's frequent mistake for a simple past ("The drug reduced ...")
        if subject is None or subject.i > root.i or not root.lemma_.isalpha():
            return out
        if root.tag_ == "VBN" and any(c.dep_ == "conj" and child_of(c, "aux", "auxpass") for c in root.children):
            return out  # "Patients admitted for X were matched ...": the real main verb is "were matched"
        tag = "VBD" if root.tag_ == "VBN" else root.tag_
        start = root.i  # "did not" goes before the manner adverbs right before the verb, after sentence adverbs
        while start > 0 and doc[start - 1].dep_ == "advmod" and doc[start - 1].head.i == root.i:
            if doc[start - 1].lower_ in SENTENCE_ADVERBS:
                break
            start -= 1
        lemma = root.lemma_.lower()
        if start == root.i:
            changes[root.i] = f"{DO_FORMS[tag]} not {lemma}{root.whitespace_}"
        else:
            changes[start] = f"{DO_FORMS[tag]} not {doc[start].text_with_ws}"
            changes[root.i] = lemma + root.whitespace_
        out.append((render(doc, changes), "negation", "negation/do-support"))
    return out


CATEGORY = Category(
    "negation",
    keeps_meaning=False,
    rule=negation,
    llm_instruction="Insert or remove a negation on the main verb (e.g. 'is' -> 'is not', 'shows' -> 'does not show', "
    "'cannot' -> 'can'), so that the meaning is reversed.",
)
