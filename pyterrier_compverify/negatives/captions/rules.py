"""Near-miss rules for captions: each takes a spaCy ``Doc`` and returns ``(edit, kind, rule)`` candidates.

Every rule changes the scene in one stated way and leaves the other words as they are. When the parse does not fit
a pattern, or the result would be implausible for the nouns involved, a rule emits nothing.
"""

from __future__ import annotations

from itertools import combinations

from ..inflect import indefinite_article
from . import lexicon as lx
from .words import (
    Changes,
    agree,
    body_part,
    child,
    colourable,
    concrete,
    fix_article,
    fixed_term,
    gender,
    hyphenated,
    inflect_noun,
    insert_after,
    insert_before,
    is_plural,
    lemma_set,
    living,
    noun_class,
    noun_lemma,
    person,
    plain,
    plural_noun,
    put,
    render,
    replace_span,
    verb_form,
    verb_lemma,
)

Candidate = tuple[str, str, str]
NOUN_TAGS = ("NN", "NNS")
NEGATORS = frozenset("no not n't never none nothing nobody neither nor without".split())
NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _edit(doc, changes: Changes, kind: str, rule: str) -> Candidate:
    return render(doc, changes), kind, f"{kind}/{rule}"


def _simple_adjective(token) -> bool:
    """An adjective modifying one noun on its own: no children, no coordination, no hyphenated compound."""
    return (
        token.dep_ == "amod"
        and token.head.tag_ in NOUN_TAGS
        and not any(True for _ in token.children)
        and not hyphenated(token)
        and not hyphenated(token.head)
        and token.head.i > token.i
    )


def _fits(adjective: str, noun) -> bool:
    """Whether an attribute is plausible for a noun (colours of animals and hair are natural colours, etc.)."""
    cls = lx.ATTRIBUTE_CLASS.get(adjective)
    word = noun.lower_
    if cls == "colour":
        if person(noun):
            return False
        if noun_class(noun) == "animal":
            return adjective in lx.NATURAL_COLOURS
        if word in lx.HAIR_LIKE:
            return adjective in (*lx.NATURAL_COLOURS, "blond", "blonde", "red")
        return colourable(noun)
    if cls in ("age", "height"):
        return living(noun) if cls == "age" else person(noun)
    if cls == "size":
        return living(noun) or colourable(noun)
    if cls == "material":
        return colourable(noun) and noun_class(noun) != "clothing"
    if cls == "terrain":
        return not living(noun) and not colourable(noun)
    return not person(noun) or cls == "state" and adjective in ("wet", "dry", "clean", "dirty")


# --- swap_att ------------------------------------------------------------------------------------------------------


def _worn_colour_owner(token):
    """The person of "a man in red" / "a girl wearing pink" (a colour used as a noun for clothes), else None."""
    if token.lower_ not in lx.COLOURS or token.dep_ not in ("pobj", "dobj") or any(True for _ in token.children):
        return None
    head = token.head
    if token.dep_ == "pobj" and head.lower_ == "in":
        owner = head.head if head.head.tag_ in NOUN_TAGS else _agent(head.head) if head.head.pos_ == "VERB" else None
    elif token.dep_ == "dobj" and head.lower_ in ("wearing", "wears", "wear"):
        owner = _agent(head)
    else:
        return None
    return owner if owner is not None and person(owner) else None


def swap_att(doc) -> list[Candidate]:
    """Two nouns exchange attributes of the same class: a black dog and a white cat -> a white dog and a black cat;
    a man in red and a woman in blue -> a man in blue and a woman in red."""
    slots = [
        (t, t.head, False)
        for t in doc
        if t.lower_ in lx.ATTRIBUTE_CLASS and _simple_adjective(t) and not fixed_term(t, t.head)
    ]
    slots += [(t, owner, True) for t in doc if (owner := _worn_colour_owner(t)) is not None]
    out = []
    for (a, n1, worn1), (b, n2, worn2) in combinations(sorted(slots, key=lambda x: x[0].i), 2):
        if (
            lx.ATTRIBUTE_CLASS[a.lower_] != lx.ATTRIBUTE_CLASS[b.lower_]
            or a.lower_ == b.lower_
            or n1.i == n2.i
            or noun_lemma(n1.lower_) == noun_lemma(n2.lower_)
            or not ((worn1 or _fits(b.lower_, n1)) and (worn2 or _fits(a.lower_, n2)))
        ):
            continue
        changes: Changes = {}
        put(changes, a, b.lower_)
        put(changes, b, a.lower_)
        fix_article(changes, doc, a.i, b.lower_)
        fix_article(changes, doc, b.i, a.lower_)
        out.append(_edit(doc, changes, "swap_att", lx.ATTRIBUTE_CLASS[a.lower_]))
    return out


# --- swap_obj ------------------------------------------------------------------------------------------------------


def _np_start(noun) -> int | None:
    """Start of the noun phrase up to its head (determiner, adjectives, compounds, numbers); None if it holds
    anything else (a possessive, a pronoun, "other", coordination)."""
    start = noun.i
    for c in noun.lefts:
        if c.dep_ not in ("det", "amod", "compound", "nummod", "advmod", "nmod") or c.lower_ in ("another", "other"):
            return None
        start = min(start, c.left_edge.i)
    span = noun.doc[start : noun.i + 1]
    if any(t.dep_ in ("poss", "cc", "punct", "mark") or t.pos_ == "PRON" or t.text == "-" for t in span):
        return None
    return start


def _swap_phrases(doc, n1, n2) -> Changes | None:
    """Swap the noun phrases (up to their heads) of two nouns; None when they cannot be cut out cleanly."""
    if n1.i > n2.i:
        n1, n2 = n2, n1
    s1, s2 = _np_start(n1), _np_start(n2)
    if s1 is None or s2 is None or n1.i >= s2 or is_plural(n1) != is_plural(n2):
        return None
    if child(n1, "conj") is not None or child(n2, "conj") is not None or "conj" in (n1.dep_, n2.dep_):
        return None

    def text(start, end):
        words = [plain(t) if t.i == start else t.text for t in doc[start:end]]
        return "".join(w + t.whitespace_ for w, t in zip(words, doc[start:end])).strip()

    changes: Changes = {}
    first, second = text(s1, n1.i + 1), text(s2, n2.i + 1)
    replace_span(changes, doc, s1, n1.i + 1, second)
    replace_span(changes, doc, s2, n2.i + 1, first)
    return changes


def _agent(verb):
    """The doer of a verb: its subject, or the noun a participle modifies (a dog chasing a cat)."""
    subject = child(verb, "nsubj")
    if subject is not None:
        return subject
    if verb.dep_ in ("acl", "relcl") and verb.head.tag_ in NOUN_TAGS:
        return verb.head
    return None


def _role_pair_ok(lemma: str | None, a, b, preposition: bool = False) -> bool:
    """Whether the doer and undergoer of ``lemma`` (or the two sides of a directed preposition attached to it) can
    trade places and still make a scene."""
    if not (living(a) and living(b)) or lemma in lx.SYMMETRIC_VERBS:
        return False
    people = person(a) + person(b)
    if people == 2:
        return lemma not in lx.CARRY_VERBS or (noun_class(a) == "child") == (noun_class(b) == "child")
    if people == 1 and not preposition:
        return lemma is None or lemma in lx.EITHER_WAY_VERBS
    return lemma not in lx.HUMAN_AGENT_VERBS


_PRONOUN_GENDER = {
    **dict.fromkeys(("he", "him", "his", "himself"), "m"),
    **dict.fromkeys(("she", "her", "hers", "herself"), "f"),
    **dict.fromkeys(("it", "its", "itself"), "n"),
}


def _modifiers(noun) -> set[str]:
    """The words before a noun in its phrase, other than determiners and numbers."""
    start = _np_start(noun)
    return set() if start is None else {t.lower_ for t in noun.doc[start : noun.i] if t.dep_ not in ("det", "nummod")}


def _swappable(doc, a, b) -> bool:
    """Two living nouns, each named once (or one noun named twice with different modifiers: a black dog chases a
    white dog), whose pronouns and modifiers still fit after the swap."""
    counts = [sum(noun_lemma(t.lower_) == noun_lemma(n.lower_) for t in doc) for n in (a, b)]
    if noun_lemma(a.lower_) == noun_lemma(b.lower_):
        if counts != [2, 2] or _modifiers(a) == _modifiers(b) or not _modifiers(a) or not _modifiers(b):
            return False
    elif counts != [1, 1]:
        return False
    if any(t.lower_ in _PRONOUN_GENDER for t in doc):  # his / her / its must still point at the right one
        kinds = [gender(n.lower_) or ("n" if noun_class(n) == "animal" else None) for n in (a, b)]
        if None in kinds or kinds[0] != kinds[1]:
            return False
    if person(a) != person(b):  # a dog in a t-shirt: a person's clothes stay where they are
        worn = ("in", "with", "wearing", "dressed")
        if any(c.lower_ in worn or c.dep_ == "acl" for n in (a, b) if person(n) for c in n.rights):
            return False
    return True


def swap_obj(doc) -> list[Candidate]:
    """Two living things exchange roles: a dog chases a boy -> a boy chases a dog; a man behind a woman -> a woman
    behind a man; a boy jumps while a girl watches -> a girl jumps while a boy watches."""
    if any(t.lower_ in ("they", "them", "their", "themselves") for t in doc):
        return []
    out = []

    def emit(a, b, rule):
        if _swappable(doc, a, b):
            changes = _swap_phrases(doc, a, b)
            if changes:
                out.append(_edit(doc, changes, "swap_obj", rule))

    doers = []  # (agent, verb, verb lemma, verb has an object)
    for verb in doc:
        if verb.pos_ != "VERB":
            continue
        lemma = verb_lemma(verb)
        obj, agent = child(verb, "dobj"), _agent(verb)
        passive = child(verb, "nsubjpass")
        if passive is not None and child(verb, "agent") is not None:  # a boy is chased by a dog
            obj, agent = passive, child(child(verb, "agent"), "pobj")
        if lemma is None or agent is None or agent.tag_ not in NOUN_TAGS:
            continue
        if living(agent) and passive is None and agent.dep_ in ("nsubj", "ROOT"):
            doers.append((agent, verb, lemma, obj is not None))
        if obj is not None and obj.tag_ in NOUN_TAGS and _role_pair_ok(lemma, agent, obj):
            emit(agent, obj, "agent-patient")
    for prep in doc:
        if prep.lower_ not in lx.DIRECTED_PREPOSITIONS or prep.dep_ != "prep":
            continue
        obj = child(prep, "pobj")
        head = prep.head
        agent = head if head.tag_ in NOUN_TAGS else _agent(head) if head.pos_ == "VERB" else None
        if obj is None or agent is None or obj.tag_ not in NOUN_TAGS:
            continue
        lemma = verb_lemma(head) if head.pos_ == "VERB" else None
        if prep.lower_ == "at" and lemma not in ("look", "stare", "smile", "point", "wave", "laugh", "yell"):
            continue
        if _role_pair_ok(lemma, agent, obj, preposition=prep.lower_ != "at"):
            emit(agent, obj, "relation")
    for (a, head_a, verb_a, obj_a), (b, head_b, verb_b, obj_b) in combinations(doers, 2):
        if a.i == b.i or verb_a == verb_b:
            continue
        linked = [v for v, w in ((head_a, head_b), (head_b, head_a)) if v.head.i == w.i and v.i != w.i]
        if any(v.dep_ not in ("advcl", "conj") for v in linked):  # one clause is the other's object, not a while-clause
            continue
        if person(a) != person(b):  # a person and an animal: only when both can do both things
            if obj_a or obj_b or {verb_a, verb_b} & lx.HUMAN_AGENT_VERBS:
                continue
        elif not person(a) and {verb_a, verb_b} & lx.HUMAN_AGENT_VERBS:
            continue
        emit(a, b, "subjects")
    return out


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
        if adj.dep_ == "amod" and _simple_adjective(adj) and adj.head.lower_ not in ("bit", "while", "league"):
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
            options = [c for c in lx.COLOURS if c not in present and c != "gray" and _fits(c, noun)]
            rule = "colour"
        else:
            options = [a for a in _antonyms(word, noun) if a not in present]
            rule = cls or "antonym"
        for new in options:
            changes: Changes = {}
            put(changes, adj, new)
            fix_article(changes, doc, adj.i, new)
            out.append(_edit(doc, changes, "replace_att", rule))
    return out


# --- replace_obj ---------------------------------------------------------------------------------------------------


def _group(token) -> tuple[str, str, list[str]] | None:
    """(group, key, replacements) of a replaceable noun."""
    word = token.lower_
    key = word if word in lx.PLURAL_ONLY else noun_lemma(word)
    for group, table in lx.OBJECT_SWAPS.items():
        if key in table:
            return group, key, table[key]
    return None


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
        found = _group(noun)
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
            out.append(_edit(doc, changes, "replace_obj", group))
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


def replace_rel(doc) -> list[Candidate]:
    """A relation becomes another one: sitting -> standing, throws -> catches, next to -> far from."""
    out = []
    for verb in doc:
        if verb.pos_ != "VERB" or verb.dep_ in ("amod", "compound") or child(verb, "prt") is not None:
            continue
        lemma = verb_lemma(verb)
        if lemma is None or verb.tag_ == "VBN":
            continue
        obj = child(verb, "dobj")
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
            if form:
                changes: Changes = {}
                put(changes, verb, form)
                out.append(_edit(doc, changes, "replace_rel", "verb"))
    for token in doc:
        if token.lower_ in ("near", "beside") and token.dep_ == "prep" and child(token, "pobj") is not None:
            changes = {}
            put(changes, token, "far from")
            out.append(_edit(doc, changes, "replace_rel", "preposition"))
        elif (
            token.lower_ == "next"
            and token.i + 1 < len(doc)
            and doc[token.i + 1].lower_ == "to"
            and child(doc[token.i + 1], "pobj") is not None
        ):
            changes = {}
            replace_span(changes, doc, token.i, token.i + 2, "far from")
            out.append(_edit(doc, changes, "replace_rel", "preposition"))
    return out


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
            if lx.ATTRIBUTE_CLASS.get(adjective) == "colour" and not _fits(adjective, noun):
                continue
            changes: Changes = {}
            insert_before(changes, noun, adjective)
            fix_article(changes, doc, noun.i, adjective)
            out.append(_edit(doc, changes, "add_att", lx.ATTRIBUTE_CLASS.get(adjective, "other")))
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
        found = _group(noun)
        if found is None or found[0] not in ("people", "animal", "thing"):
            continue
        if noun.dep_ == "dobj" and verb_lemma(noun.head) in ("ride", "sit", "wear", "drive"):
            continue
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
            out.append(_edit(doc, changes, "add_obj", group))
    return out


def _shared_single_thing(subject) -> bool:
    """Whether a subject's verb has one object that two doers could hardly share (a skateboard, a guitar)."""
    verb = subject.head if subject.dep_ == "nsubj" else next((c for c in subject.rights if c.dep_ == "acl"), None)
    if verb is None:
        return False
    for t in verb.subtree:
        single = t.tag_ == "NN" and t.dep_ in ("dobj", "pobj") and not living(t) and concrete(t)
        if single and (t.dep_ == "dobj" or noun_class(t) == "vehicle" or t.head.lower_ in ("on", "with")):
            return True
    return False


# --- negate --------------------------------------------------------------------------------------------------------


def negate(doc) -> list[Candidate]:
    """The caption is negated: is running -> is not running, runs -> does not run, with -> without."""
    if any(t.lower_ in NEGATORS for t in doc):
        return []
    out = []
    for token in doc:
        head_clause = token.dep_ == "ROOT" or (token.dep_ in ("aux", "auxpass") and token.head.dep_ == "ROOT")
        if token.lower_ in ("is", "are", "was", "were") and head_clause:
            changes: Changes = {}
            nxt = doc[token.i + 1] if token.i + 1 < len(doc) else None
            if child(token, "expl") is not None and nxt is not None and nxt.lower_ in ("a", "an"):
                put(changes, nxt, "no")
                out.append(_edit(doc, changes, "negate", "there-is-no"))
            else:
                insert_after(changes, token, "not")
                out.append(_edit(doc, changes, "negate", "auxiliary"))
        elif token.dep_ == "ROOT" and token.pos_ == "VERB" and token.tag_ in ("VBZ", "VBP", "VBD"):
            lemma = verb_lemma(token)
            if lemma and lemma != "be" and not any(c.dep_ in ("aux", "auxpass") for c in token.children):
                if any(c.dep_ == "conj" and c.pos_ == "VERB" for c in token.children):
                    continue
                do = {"VBZ": "does", "VBP": "do", "VBD": "did"}[token.tag_]
                changes = {}
                put(changes, token, f"{do} not {lemma}")
                out.append(_edit(doc, changes, "negate", "do-support"))
        elif token.tag_ == "VBG" and token.pos_ == "VERB" and (token.dep_ == "acl" or token.dep_ == "ROOT"):
            if not any(c.dep_ in ("aux", "auxpass") for c in token.children) and token.i > 0:
                changes = {}
                insert_before(changes, token, "not")
                out.append(_edit(doc, changes, "negate", "participle"))
        elif token.lower_ == "with" and token.dep_ == "prep" and token.head.tag_ in NOUN_TAGS:
            obj = child(token, "pobj")
            if obj is not None and child(obj, "poss") is None:
                changes = {}
                put(changes, token, "without")
                out.append(_edit(doc, changes, "negate", "without"))
    return out


# --- spatial -------------------------------------------------------------------------------------------------------

_SIDES = frozenset("side hand arm leg foot eye ear shoulder corner lane paw".split())
_SWAP_WORDS = {"uphill": "downhill", "downhill": "uphill", "upstairs": "downstairs", "downstairs": "upstairs",
               "upward": "downward", "downward": "upward", "upwards": "downwards", "downwards": "upwards",
               "upstream": "downstream", "downstream": "upstream"}  # fmt: skip


def _pobj_lemma(prep) -> str | None:
    obj = child(prep, "pobj")
    return None if obj is None else noun_lemma(obj.lower_)


def _moving(head) -> bool:
    """A verb of motion with one direction: no other "off" / "from" / "out" / "into" / "onto" phrase."""
    if head.pos_ != "VERB" or verb_lemma(head) not in lx.MOTION_VERBS:
        return False
    return sum(c.lower_ in ("off", "from", "out", "into", "onto") for c in head.children) <= 1


def spatial(doc) -> list[Candidate]:
    """A spatial relation is flipped: left/right, up/down, in front of/behind, on/under, into/out of, ..."""
    out = []

    def emit(changes, rule):
        out.append(_edit(doc, changes, "spatial", rule))

    n = len(doc)
    for t in doc:
        word, nxt = t.lower_, (doc[t.i + 1].lower_ if t.i + 1 < n else "")
        prev = doc[t.i - 1].lower_ if t.i > 0 else ""
        changes: Changes = {}
        if word in ("left", "right") and t.tag_ in ("JJ", "NN"):
            side = t.dep_ == "amod" and noun_lemma(t.head.lower_) in _SIDES
            place = t.dep_ == "pobj" and t.head.lower_ in ("to", "on", "at", "from") and prev in ("the", "his", "her")
            if side or place:
                put(changes, t, "right" if word == "left" else "left")
                emit(changes, "left-right")
        elif word in ("up", "down") and prev != "upside" and nxt not in ("to", "and", "at"):
            obj = _pobj_lemma(t)
            if t.dep_ == "prep" and obj is not None:
                ok = obj in lx.SLOPES and obj not in lx.FLAT_PATHS
            else:
                after = child(t.head, "dobj")  # "run down a street": the path is the verb's object
                ok = t.dep_ in ("prt", "advmod") and t.head.lower_ in lx.UP_DOWN_VERBS and obj is None
                ok = ok and (after is None or noun_lemma(after.lower_) in lx.SLOPES)
            if ok:
                put(changes, t, "down" if word == "up" else "up")
                emit(changes, "up-down")
        elif word in _SWAP_WORDS and t.dep_ in ("advmod", "prep", "npadvmod", "prt"):
            put(changes, t, _SWAP_WORDS[word])
            fix_article(changes, doc, t.i, _SWAP_WORDS[word])
            emit(changes, "up-down")
        elif word == "front" and prev == "in" and nxt == "of" and child(doc[t.i + 1], "pobj") is not None:
            replace_span(changes, doc, t.i - 1, t.i + 2, "behind")
            emit(changes, "front-behind")
        elif word == "behind" and t.dep_ == "prep" and child(t, "pobj") is not None:
            put(changes, t, "in front of")
            emit(changes, "front-behind")
        elif word == "on" and t.dep_ == "prep" and _pobj_lemma(t) in lx.UNDER_OK - {"tree"}:
            put(changes, t, "under")
            emit(changes, "on-under")
        elif word in ("under", "underneath", "beneath") and t.dep_ == "prep" and _pobj_lemma(t) in lx.UNDER_OK:
            put(changes, t, "in" if _pobj_lemma(t) == "tree" else "on")
            emit(changes, "on-under")
        elif word == "into" and t.dep_ == "prep" and _pobj_lemma(t) in lx.CONTAINERS and _moving(t.head):
            put(changes, t, "out of")
            emit(changes, "into-out-of")
        elif word == "out" and nxt == "of" and _pobj_lemma(doc[t.i + 1]) in lx.CONTAINERS and _moving(t.head):
            replace_span(changes, doc, t.i, t.i + 2, "into")
            emit(changes, "into-out-of")
        elif word == "onto" and t.dep_ == "prep" and child(t, "pobj") is not None and _moving(t.head):
            put(changes, t, "off")
            emit(changes, "onto-off")
        elif word == "off" and t.dep_ == "prep" and _pobj_lemma(t) not in (None, "leash") and _moving(t.head):
            put(changes, t, "onto")
            emit(changes, "onto-off")
        elif (
            word in ("inside", "outside")
            and t.dep_ in ("prep", "advmod")
            and (t.dep_ == "prep" or nxt == "of" or t.i + 1 == n or doc[t.i + 1].pos_ != "ADP")
        ):
            put(changes, t, "outside" if word == "inside" else "inside")
            emit(changes, "inside-outside")
        elif word in ("top", "bottom", "front", "back") and t.tag_ == "NN" and prev == "the" and nxt == "of":
            whole = child(doc[t.i + 1], "pobj")
            if whole is None or living(whole) or body_part(whole):
                continue
            other = {"top": "bottom", "bottom": "top", "front": "back", "back": "front"}[word]
            put(changes, t, other)
            if other == "bottom" and t.i > 1 and doc[t.i - 2].lower_ == "on":
                put(changes, doc[t.i - 2], "at")
            emit(changes, "top-bottom" if word in ("top", "bottom") else "front-back")
        elif word in ("toward", "towards") and t.dep_ == "prep" and child(t, "pobj") is not None:
            put(changes, t, "away from")
            emit(changes, "toward-away")
        elif word == "away" and nxt == "from" and child(doc[t.i + 1], "pobj") is not None:
            replace_span(changes, doc, t.i, t.i + 2, "towards")
            emit(changes, "toward-away")
        elif word in ("over", "under") and t.dep_ == "prep" and _pobj_lemma(t) in lx.BARRIERS:
            jump = t.head.pos_ == "VERB" and verb_lemma(t.head) in ("jump", "leap", "hop", "fly", "vault", "flip")
            if word == "under" or not jump:
                put(changes, t, "under" if word == "over" else "over")
                emit(changes, "over-under")
    return out


# --- count ---------------------------------------------------------------------------------------------------------


def _pluralisable(noun) -> bool:
    """A singular count noun whose plural reads naturally: no collective, no singular thing it wears or holds, no
    later pronoun that would lose its antecedent."""
    doc = noun.doc
    if noun.tag_ != "NN" or noun.pos_ != "NOUN" or noun_lemma(noun.lower_) in lx.COLLECTIVE or hyphenated(noun):
        return False
    if noun_class(noun) == "clothing" or noun.lower_ in lx.TERRAIN or body_part(noun):
        return False
    if not living(noun) and not (
        noun.dep_ == "dobj" and verb_lemma(noun.head) not in ("ride", "wear", "drive") and concrete(noun)
    ):
        return False
    if noun.dep_ == "pobj" and noun.head.lower_ in ("on", "in", "inside", "into", "onto", "at"):
        return False
    if any(c.lower_ in ("lone", "single", "only", "solitary", "sole") for c in noun.lefts):
        return False
    if noun_lemma(noun.lower_) in lx.FLAT_PATHS | lx.SLOPES:
        return False
    own = [
        *noun.subtree,
        *(child(noun.head, "dobj").subtree if noun.dep_ == "nsubj" and child(noun.head, "dobj") else ()),
    ]
    worn = [t for t in own if t.i > noun.i and t.lower_ in lx.CLOTHING and not is_plural(t)]
    if worn or any(t.lower_ == "with" and t.i > noun.i for t in noun.subtree):
        return False
    if child(noun, "compound", "poss", "conj", "cc") is not None or noun.dep_ in ("conj", "compound"):
        return False
    if any(t.lower_ in lx.THIRD_SINGULAR_PRONOUNS for t in doc[noun.i + 1 :]):
        return False
    for c in noun.rights:
        if c.dep_ in ("prep", "acl", "relcl"):
            inner = child(c, "pobj", "dobj")
            if inner is not None and not is_plural(inner) and inner.tag_ in NOUN_TAGS:
                return False
    return plural_noun(noun_lemma(noun.lower_)) is not None


_PLURAL_ONLY_WORDS = frozenset("they them their themselves each both together other another between among".split())


def count(doc) -> list[Candidate]:
    """A count changes: a dog -> two dogs, two dogs -> three dogs, three dogs -> one dog."""
    out = []
    for det in doc:
        word = det.lower_
        noun = det.head
        if det.dep_ == "det" and word in ("a", "an", "one") or det.dep_ == "nummod" and word == "one":
            if not _pluralisable(noun) or det.i + 1 < len(doc) and doc[det.i + 1].lower_ in ("few", "lot", "little"):
                continue
            changes: Changes = {}
            put(changes, det, "two")
            put(changes, noun, plural_noun(noun_lemma(noun.lower_)))
            if agree(changes, noun, to_plural=True):
                out.append(_edit(doc, changes, "count", "one-to-two"))
        elif det.dep_ == "nummod" and word in NUMBERS[1:] and noun.tag_ == "NNS":
            value = NUMBERS.index(word) + 1
            for new in (value - 1, value + 1):
                if 2 <= new <= len(NUMBERS):
                    changes = {}
                    put(changes, det, NUMBERS[new - 1])
                    out.append(_edit(doc, changes, "count", "number"))
            singular = noun_lemma(noun.lower_)
            if (
                plural_noun(singular) == noun.lower_
                and child(noun, "conj", "cc") is None
                and noun.dep_ != "conj"
                and not any(t.lower_ in _PLURAL_ONLY_WORDS for t in doc)
            ):
                changes = {}
                put(changes, det, "one")
                put(changes, noun, singular)
                if agree(changes, noun, to_plural=False):
                    out.append(_edit(doc, changes, "count", "many-to-one"))
    return out


NEAR_MISS_RULES = {
    "swap_att": swap_att,
    "swap_obj": swap_obj,
    "replace_att": replace_att,
    "replace_obj": replace_obj,
    "replace_rel": replace_rel,
    "add_att": add_att,
    "add_obj": add_obj,
    "negate": negate,
    "spatial": spatial,
    "count": count,
}
__all__ = ["NEAR_MISS_RULES"]
