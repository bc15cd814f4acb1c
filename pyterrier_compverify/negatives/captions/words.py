"""Helpers shared by the caption rules: rebuilding text from a parse, noun classes, number and verb inflection."""

from __future__ import annotations

import re
from functools import cache

from ..inflect import indefinite_article, inflect_verb, plural
from . import lexicon as lx

Changes = dict[int, str]  # token index -> text that replaces the token and its trailing space ("" deletes it)

# --- rebuilding text -----------------------------------------------------------------------------------------------


def render(doc, changes: Changes) -> str:
    """The caption with the changes applied, single-spaced, first letter capitalised as in the original."""
    pieces = doc.user_data.get("cv_pieces")
    if pieces is None:
        pieces = doc.user_data["cv_pieces"] = [t.text_with_ws for t in doc]
    text = "".join([changes.get(i, piece) for i, piece in enumerate(pieces)])
    text = re.sub(r" {2,}", " ", text).strip()
    if doc.text.lstrip()[:1].isupper() and text[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def keeps_case(token) -> bool:
    """A capital that is not only there because the word starts the caption (names, "I")."""
    return token.pos_ == "PROPN" or token.text == "I" or any(c.isupper() for c in token.text[1:])


def starts_sentence(token) -> bool:
    """The caption's first word, or the first of a later sentence ("A cat. A dog.")."""
    return token.i == 0 or bool(token.is_sent_start)


def cased(new: str, token) -> str:
    """``new`` capitalised when it replaces a capitalised sentence-initial word."""
    if starts_sentence(token) and token.text[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def plain(token) -> str:
    """The token's text, de-capitalised if it was capitalised only as a sentence's first word."""
    text = token.text
    return text[:1].lower() + text[1:] if starts_sentence(token) and not keeps_case(token) else text


def put(changes: Changes, token, new: str) -> None:
    """Replace a token's word (keeping its trailing space and first-word capital)."""
    changes[token.i] = cased(new, token) + token.whitespace_


def insert_before(changes: Changes, token, text: str) -> None:
    """Insert words before a token; the token loses a capital it had only as the first word."""
    current = changes.get(token.i, plain(token) + token.whitespace_)
    changes[token.i] = cased(text, token) + " " + current


def insert_after(changes: Changes, token, text: str) -> None:
    current = changes.get(token.i, token.text_with_ws)
    changes[token.i] = current.rstrip() + " " + text + token.whitespace_


def replace_span(changes: Changes, doc, start: int, end: int, text: str) -> None:
    """Replace tokens ``start:end`` by ``text`` (keeping the span's trailing space)."""
    changes[start] = cased(text, doc[start]) + doc[end - 1].whitespace_
    for i in range(start + 1, end):
        changes[i] = ""


def fix_article(changes: Changes, doc, index: int, next_word: str) -> None:
    """Make an "a"/"an" right before token ``index`` agree with the word that now follows it."""
    if index > 0 and doc[index - 1].lower_ in ("a", "an") and doc[index - 1].i not in changes:
        det = doc[index - 1]
        changes[det.i] = indefinite_article(next_word, capital=det.text[:1].isupper()) + det.whitespace_


def child(token, *deps: str):
    return next((c for c in token.children if c.dep_ in deps), None)


def hyphenated(token) -> bool:
    doc = token.doc
    return (token.i > 0 and doc[token.i - 1].text == "-") or (token.i + 1 < len(doc) and doc[token.i + 1].text == "-")


def lemma_set(doc) -> set[str]:
    """Every word of the caption, lower-cased, with its noun lemma (to avoid adding what is already there)."""
    words = doc.user_data.get("cv_words")
    if words is None:
        words = {t.lower_ for t in doc} | {noun_lemma(t.lower_) for t in doc if t.pos_ == "NOUN"}
        doc.user_data["cv_words"] = words
    return words


# --- nouns ---------------------------------------------------------------------------------------------------------


@cache
def _wordnet():
    from ..wordnet import load_wordnet

    return load_wordnet()


@cache
def noun_lemma(word: str) -> str:
    """Singular of a noun (WordNet's morphology; the word itself for the plural-only ones)."""
    if word in lx.PLURAL_ONLY or word in ("people", "men", "women", "children"):
        return {"people": "person", "men": "man", "women": "woman", "children": "child"}.get(word, word)
    return _wordnet().morphy(word, "n") or word


_SPECIAL_PLURALS = dict(
    pair.split(":")
    for pair in "person:people sheep:sheep fish:fish deer:deer bus:buses knife:knives leaf:leaves wolf:wolves "
    "scarf:scarves calf:calves shelf:shelves".split()
)


@cache
def plural_noun(noun: str) -> str | None:
    """Plural of a noun; None where unsure."""
    if noun in _SPECIAL_PLURALS:
        return _SPECIAL_PLURALS[noun]
    if noun.endswith("man") and noun not in ("human", "german", "roman", "shaman"):
        return noun[:-3] + "men"
    if noun in lx.PLURAL_ONLY:
        return noun
    if re.search(r"(us|um|ex|ix)$", noun):
        return None
    return plural(noun) or noun + "s"


def is_plural(token) -> bool:
    """A plural tag, a plural-only word, or a count above one ("two oxen", which the tagger may call singular)."""
    if token.tag_ in ("NNS", "NNPS") or token.lower_ in lx.PLURAL_ONLY or token.lower_ == "people":
        return True
    return any(c.dep_ == "nummod" and c.like_num and c.lower_ not in ("one", "1") for c in token.children)


_THING_LEXNAMES = {"noun.artifact", "noun.act", "noun.event", "noun.object", "noun.substance", "noun.plant"}


@cache
def _wordnet_class(lemma: str) -> str | None:
    synsets = _wordnet().synsets(lemma, "n")
    if not synsets:
        return None
    first = synsets[0]
    lexnames = {s.lexname() for s in synsets}
    if first.lexname() in ("noun.person", "noun.animal") and not lexnames & _THING_LEXNAMES:
        return "animal" if "noun.animal" in lexnames else "person"
    ancestors = {s.name() for path in first.hypernym_paths() for s in path}
    if ancestors & {"clothing.n.01", "garment.n.01", "headdress.n.01", "footwear.n.02", "footwear.n.01"}:
        return "clothing"
    if ancestors & {"vehicle.n.01", "craft.n.02"}:
        return "vehicle"
    return None


def noun_class(token) -> str | None:
    """adult, child, person (age unknown), animal, clothing, vehicle, or None."""
    word = token.lower_
    lemma = noun_lemma(word)
    for cls, words in (("child", lx.CHILDREN), ("adult", lx.ADULTS), ("animal", lx.ANIMALS), ("clothing", lx.CLOTHING)):
        if word in words or lemma in words:
            return cls
    if token.pos_ != "NOUN":
        return None
    return _wordnet_class(lemma)


@cache
def _first_lexname(lemma: str) -> str | None:
    """WordNet's lexicographer file of the noun's first sense ("noun.body", "noun.artifact", ...), or None."""
    synsets = _wordnet().synsets(lemma, "n")
    return synsets[0].lexname() if synsets else None


def body_part(token) -> bool:
    return _first_lexname(noun_lemma(token.lower_)) == "noun.body"


def concrete(token) -> bool:
    """A thing one can see and count (WordNet: artifact, object, food, plant), not an act or event."""
    kinds = ("noun.artifact", "noun.object", "noun.food", "noun.plant")
    return token.lower_ in lx.COLOURABLE or _first_lexname(noun_lemma(token.lower_)) in kinds


def place(token) -> bool:
    """A place (WordNet location: a town, a city, a field)."""
    return _first_lexname(noun_lemma(token.lower_)) == "noun.location"


@cache
def _in_wordnet(term: str) -> bool:
    return bool(_wordnet().synsets(term))


def fixed_term(modifier, noun) -> bool:
    """Whether modifier + noun is a WordNet term of its own (golden retriever, white water, hot dog)."""
    return _in_wordnet(f"{modifier.lower_}_{noun_lemma(noun.lower_)}")


def living(token) -> bool:
    return noun_class(token) in ("adult", "child", "person", "animal")


def person(token) -> bool:
    return noun_class(token) in ("adult", "child", "person")


def colourable(token) -> bool:
    word = token.lower_
    return word in lx.COLOURABLE or noun_lemma(word) in lx.COLOURABLE or noun_class(token) in ("clothing", "vehicle")


def gender(word: str) -> str | None:
    return "m" if word in lx.MALE else "f" if word in lx.FEMALE else None


def inflect_noun(lemma: str, like) -> str | None:
    """``lemma`` in the number of the token ``like``."""
    if lemma in lx.PLURAL_ONLY or not is_plural(like):
        return lemma
    return plural_noun(lemma)


# --- verbs ---------------------------------------------------------------------------------------------------------


@cache
def _verb_lemma(word: str, tag: str, spacy_lemma: str) -> str | None:
    candidates = [spacy_lemma, _wordnet().morphy(word, "v")]  # spaCy first: morphy gives "swinge" for swinging
    if tag == "VBG" and word.endswith("ing"):
        stem = word[:-3]
        candidates += [stem, stem + "e", stem[:-1], stem[:-1] + "ie"]
    elif tag == "VBZ" and word.endswith("s"):
        candidates += [word[:-1], word[:-2], word[:-3] + "y"]
    elif tag == "VBD":
        candidates += [word[:-1], word[:-2], word[:-3], word[:-3] + "y"]
    else:
        candidates.append(word)
    for lemma in candidates:
        if lemma and inflect_verb(lemma, tag) == word:
            return lemma
    return None


def verb_lemma(token) -> str | None:
    """The verb's lemma, checked by inflecting it back to the token's form (None when that fails)."""
    if token.tag_ not in ("VB", "VBZ", "VBP", "VBG", "VBD"):
        return None
    return _verb_lemma(token.lower_, token.tag_, token.lemma_.lower())


def verb_form(lemma: str, tag: str) -> str | None:
    """``lemma`` in the form of a Penn tag; multi-word lemmas ("run from") inflect their first word."""
    first, _, rest = lemma.partition(" ")
    form = inflect_verb(first, tag)
    return None if form is None else (form + " " + rest).strip()


# --- subject agreement ---------------------------------------------------------------------------------------------

_TO_PLURAL = {"is": "are", "was": "were", "has": "have", "does": "do"}
_TO_SINGULAR = {v: k for k, v in _TO_PLURAL.items()}


def _misparsed(noun) -> bool:
    """Whether the parse around ``noun`` is too doubtful to change its number: the noun is the root of a sentence
    with a present-tense finite verb, or the subject of a verb read as an object ("A child dressed as a ninja is
    jumping": "child" the root, "ninja" the subject of "jumping", the object of "as"), where the verb that must
    agree is not the one the parse links."""
    if noun.dep_ == "ROOT":
        return any(t.tag_ in ("VBZ", "VBP") for t in noun.doc)
    return noun.dep_ in ("nsubj", "nsubjpass") and noun.head.dep_ in ("pobj", "dobj")


def _hidden_verb(token, noun, to_plural: bool) -> bool:
    """Whether the parse took a finite verb for a noun ("rides a toy and smiles", "two dogs tug on a towel", "a
    person in orange climbs a cliff"): tied by "and" or as an apposition with no word of its own before it, or the
    object of a preposition that describes the subject ("in black listens"), right before an article or with a
    preposition of its own; a word WordNet counts more often as a verb; in the form the subject's old number takes
    (old singular "smiles", old plural "talk")."""
    doc = token.doc
    before_det = token.i + 1 < len(doc) and doc[token.i + 1].lower_ in ("a", "an", "the")  # "in orange climbs a"
    with_prep = any(c.dep_ == "prep" for c in token.children)  # "in black and red listens to an iPod"
    bare = token.dep_ in ("conj", "appos") and not any(c.i < token.i for c in token.children)
    if bare and token.dep_ == "conj" and to_plural and token.head.tag_ == "NNS":
        return False  # "on the swings and slides": two plural nouns, not a noun and a verb ("a toy and smiles")
    # the object of a preposition that describes the subject, not of a participle ("dogs standing on leaves on")
    described = token.dep_ == "pobj" and token.head.head.tag_ != "VBG" and token in noun.subtree
    if token.pos_ != "NOUN" or not (bare or described and (before_det or with_prep)):
        return False
    return (token.tag_ == "NNS" if to_plural else token.tag_ == "NN") and _mostly_verb(token.lower_)


@cache
def _mostly_verb(word: str) -> bool:
    """Whether WordNet's tagged-text counts have the word more often as a verb than as a noun ("smiles", "talk";
    not "trees", "wave")."""
    wn = _wordnet()

    def uses(pos: str) -> int:
        lemma = wn.morphy(word, pos)
        return sum(x.count() for s in wn.synsets(word, pos) for x in s.lemmas() if x.name().lower() == lemma)

    return uses("v") > uses("n")


def _present_form(verb) -> str | None:
    """The lemma of a verb tagged base form or participle whose form is also the plural present ("two girls with
    balloons run", "run" read as a participle), or None."""
    if any(c.dep_ in ("aux", "auxpass") for c in verb.children):  # "can run", "to run": no agreement
        return None
    if verb.tag_ == "VBN" and any(c.dep_ == "agent" or c.lower_ == "by" for c in verb.children):
        return None  # "two kids hit by a wave": a passive participle
    if _wordnet().morphy(verb.lower_, "v") != verb.lower_:  # "rolled", a misspelt "approachs": not a base form
        return None
    return _verb_lemma(verb.lower_, "VBP", verb.lemma_.lower())


def agree(changes: Changes, noun, to_plural: bool) -> bool:
    """Make the verb of subject ``noun`` agree with its new number; False when that cannot be done safely."""
    table = _TO_PLURAL if to_plural else _TO_SINGULAR
    head = noun.head
    if noun.dep_ == "attr" and child(head, "expl") is not None:  # there is a dog -> there are two dogs
        if head.lower_ in table:
            put(changes, head, table[head.lower_])
        return True
    if _misparsed(noun):
        return False
    clause = noun.head.subtree if noun.dep_ in ("nsubj", "nsubjpass") else noun.subtree if noun.dep_ == "ROOT" else ()
    if any(t.i > noun.i and _hidden_verb(t, noun, to_plural) for t in clause):
        return False  # its verb would keep the old number
    if noun.dep_ not in ("nsubj", "nsubjpass"):
        return True
    if child(noun, "conj") is not None or noun.dep_ == "conj":
        return False
    if any(
        t.dep_ == "conj" and t.pos_ == "NOUN" and t.head.pos_ not in ("NOUN", "PROPN") and living(t)
        for t in noun.subtree
    ):
        return False  # "three women dressed in coats and a man are": "and a man" read as a conjunct of "dressed"
    if head.pos_ not in ("VERB", "AUX"):  # "A baby in pigtails tries to climb" with "tries" tagged a noun
        return False
    if head.dep_ == "amod":  # "a tiger striped dog": "tiger" the subject of an adjective, not a thing counted
        return False
    if not to_plural and head.dep_ in ("ccomp", "xcomp") and head.tag_ in ("VB", "VBP", "VBN"):
        return False  # "a man helps two children climb": a bare infinitive, which must not become "climbs"
    conjuncts = [c for c in head.children if c.dep_ == "conj"]
    if any(c.pos_ not in ("VERB", "AUX") and c.lower_.endswith("s") for c in conjuncts):
        return False  # "looks down and smiles" with "smiles" parsed as a noun
    verbs = [head, *(c for c in conjuncts if c.pos_ in ("VERB", "AUX"))]
    for verb in verbs:
        auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.tag_ in ("VBZ", "VBP", "VBD")]
        for aux in auxes:
            if aux.lower_ in table:
                put(changes, aux, table[aux.lower_])
            elif aux.tag_ in ("VBZ", "VBP"):
                return False
        if auxes:
            continue
        if verb.lower_ in table and verb.pos_ == "AUX":
            put(changes, verb, table[verb.lower_])
        elif verb.tag_ in ("VBZ", "VBP") or verb.tag_ in ("VB", "VBN") and _present_form(verb):
            lemma = verb_lemma(verb) or _present_form(verb)
            if lemma is None or lemma == "be":
                return False
            put(changes, verb, inflect_verb(lemma, "VBP" if to_plural else "VBZ"))
    return True
