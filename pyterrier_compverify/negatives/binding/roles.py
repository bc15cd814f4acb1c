"""Binding by role swaps: exchange subject and object (or passive subject and agent) of a verb, or the subjects of
two clauses ("the cat chased the dog" -> "the dog chased the cat")."""

from __future__ import annotations

from ..edit import Candidate
from ..lexicon import LIGHT_OBJECT_VERBS, NOUN_PARTICIPLES, PLURAL_FORMS, SINGULAR_FORMS
from ..spans import child_of, grammatical_number, main_root
from .swaps import clause_head, simple_argument, swap_nps


def _in_wordnet(term: str, pos: str) -> bool:
    from ..wordnet import load_wordnet

    try:
        return bool(load_wordnet().synsets(term, pos))
    except (ImportError, OSError):
        return False


def _completes_verb(verb, obj) -> bool:
    """Whether the object belongs to the verb's meaning: a light verb ("plays a role") or a WordNet idiom ("takes
    place"), or a preposition of the verb right after it ("provides insight into", "identifies X as")."""
    if verb.lemma_.lower() in LIGHT_OBJECT_VERBS or _in_wordnet(f"{verb.lemma_.lower()}_{obj.lower_}", "v"):
        return True
    after = obj.i + 1
    return after < len(obj.doc) and obj.doc[after].pos_ == "ADP" and obj.doc[after].head.i == verb.i


def _before_verb(subject, verb) -> bool:
    """Whether the subject comes right before its verb (only auxiliaries, negation and adverbs between)."""
    between = subject.doc[subject.i + 1 : verb.i]
    return subject.i < verb.i and all(t.dep_ in ("aux", "auxpass", "neg", "advmod") for t in between)


def _agrees(noun, verb) -> bool:
    """Whether a noun can be the subject of the verb group: its number fits a finite "is"/"are", "-s" form."""
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i < verb.i]
    finite = auxes[0] if auxes else verb
    if finite.lower_ in SINGULAR_FORMS or finite.tag_ == "VBZ":
        return grammatical_number(noun) == "singular"
    if finite.lower_ in PLURAL_FORMS or finite.tag_ == "VBP":
        return grammatical_number(noun) == "plural"
    return True


def _swappable_object(verb, obj) -> bool:
    """Whether the object can become the subject: a simple phrase that agrees with the verb and does not complete
    the verb's meaning."""
    return simple_argument(obj) and _agrees(obj, verb) and not _completes_verb(verb, obj)


def _swappable_agent(verb, passive, agent) -> bool:
    """Whether a passive subject and its by-agent can trade places (both simple, the agent agrees with the verb)."""
    simple = simple_argument(passive) and simple_argument(agent)
    after = agent.i + 1  # "induced by chronic exposure [to their ligands]": the preposition stays with the agent
    followed = after < len(agent.doc) and agent.doc[after].pos_ == "ADP"
    return simple and not followed and _before_verb(passive, verb) and _agrees(agent, verb)


def swap_roles(doc) -> list[Candidate]:
    """Swap subject and object (or passive subject and agent) of a verb, or the subjects of two clauses."""
    out = []
    root = main_root(doc)
    verbs = [root] + [t for t in root.children if t.dep_ in ("acl", "relcl", "advcl", "conj") and t.pos_ == "VERB"]
    subjects = []
    for verb in verbs:
        if verb.pos_ not in ("VERB", "AUX") or not _in_wordnet(verb.lemma_.lower(), "v"):  # "Candida albicans"
            continue
        subject = child_of(verb, "nsubj")
        if subject is not None and not _before_verb(subject, verb):
            subject = None
        if subject is not None and subject.i == verb.i - 1 and verb.lower_ in NOUN_PARTICIPLES:
            subject = None  # "a population based study": an adjective, not a verb with its subject
        if subject is None and verb.dep_ == "acl" and verb.tag_ == "VBG" and verb.i == verb.head.i + 1:
            subject = verb.head  # "a man holding a cup"
        if subject is not None and (subject.pos_ not in ("NOUN", "PROPN") or not simple_argument(subject)):
            subject = None
        if subject is not None:
            subjects.append((verb, subject))
        obj = child_of(verb, "dobj")
        if subject is not None and obj is not None and _swappable_object(verb, obj):
            out.append(swap_nps(doc, subject, obj, "binding/swap-subj-obj"))
        passive = child_of(verb, "nsubjpass")
        agent = child_of(verb, "agent")
        by_obj = child_of(agent, "pobj") if agent is not None else None
        if passive is not None and by_obj is not None and _swappable_agent(verb, passive, by_obj):
            out.append(swap_nps(doc, passive, by_obj, "binding/swap-subj-agent"))
    for a, (verb1, subject1) in enumerate(subjects):
        for verb2, subject2 in subjects[a + 1 :]:
            if (
                clause_head(subject1).i == clause_head(subject2).i
                or child_of(verb1, "ccomp")
                or child_of(verb2, "ccomp")
            ):
                continue  # "one hypothesis is that ...": a clause-taking verb's subject is not an entity
            if _agrees(subject1, verb2) and _agrees(subject2, verb1):
                out.append(swap_nps(doc, subject1, subject2, "binding/swap-subjects"))
    return [c for c in out if c is not None]
