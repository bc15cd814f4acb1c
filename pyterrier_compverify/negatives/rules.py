"""Dependency-parse rules: each family takes a spaCy ``Doc`` and returns candidate ``(sentence2, category, rule)``.

The text is rebuilt from ``token.text_with_ws`` with a few tokens replaced, so spacing and the untouched tokens are
kept exactly. The rules are deliberately conservative: when the parse does not fit a pattern, they emit nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .collocations import Collocations
from .inflect import indefinite_article, inflect_verb, is_irregular, plural

Candidate = tuple[str, str, str]

# --- rebuilding text ---------------------------------------------------------------------------------------------


def _render(doc, changes: dict[int, str]) -> str:
    """The sentence with ``changes[i]`` (text including trailing space; "" deletes) in place of token i."""
    text = "".join(changes.get(t.i, t.text_with_ws) for t in doc)
    text = re.sub(r" {2,}", " ", text).strip()
    if doc.text.lstrip()[:1].isupper() and text[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def _match_case(new: str, old: str) -> str:
    """Give ``new`` the capitalisation of ``old`` (Title or lower; acronyms keep their own case)."""
    if old[:1].isupper() and not (old.isupper() and len(old) > 1):
        return new[:1].upper() + new[1:]
    if old[:1].islower() and not (new.isupper() and len(new) > 1):
        return new[:1].lower() + new[1:]
    return new


def _keeps_case(token) -> bool:
    """Whether the word is capitalised in its own right (name, acronym, "I"), not just as the first word."""
    text = token.text
    return (
        token.pos_ == "PROPN" or text == "I" or (text.isupper() and len(text) > 1) or any(c.isupper() for c in text[1:])
    )


def _lower_first(token, text: str) -> str:
    """Text of a span that starts with ``token``, de-capitalised when ``token`` was capitalised only as first word."""
    return text if _keeps_case(token) or token.i != 0 else text[:1].lower() + text[1:]


def _fix_article(doc, changes: dict[int, str], word_index: int, new_word: str) -> None:
    """Make an "a"/"an" right before token ``word_index`` agree with ``new_word``."""
    if word_index == 0:
        return
    det = doc[word_index - 1]
    if det.lower_ in ("a", "an"):
        changes[det.i] = indefinite_article(new_word, capital=det.text[:1].isupper()) + det.whitespace_


def _replace_span(doc, changes: dict[int, str], start: int, end: int, text: str) -> None:
    """Replace tokens ``start:end`` by ``text`` (keeping the span's trailing whitespace)."""
    changes[start] = text + doc[end - 1].whitespace_
    for i in range(start + 1, end):
        changes[i] = ""


def main_root(doc):
    """The root of the longest sentence in the doc (the parser sometimes splits one sentence in two)."""
    return max(doc.sents, key=len).root


def _subject(verb):
    return next((c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass", "expl", "csubj", "csubjpass")), None)


# --- negation ----------------------------------------------------------------------------------------------------

_NEGATORS = {"no", "not", "n't", "never", "none", "nothing", "nobody", "neither", "nor", "without", "cannot"}
_CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall"}  # "can't" is tokenised "ca" + "n't"
_DO_FORMS = {"VBZ": "does", "VBD": "did", "VBP": "do"}
# adverbs that stay before an inserted "does not" ("also did not reduce"); others follow it ("did not markedly reduce")
_SENTENCE_ADVERBS = set(
    "also thus therefore then further furthermore however still hence consequently additionally moreover now often "
    "usually generally typically frequently always sometimes indeed finally subsequently previously recently first "
    "later so yet nonetheless nevertheless".split()
)


def _is_negated(root) -> bool:
    for child in root.children:
        if child.dep_ == "neg" or child.lower_ in _NEGATORS:
            return True
        if any(grand.dep_ == "det" and grand.lower_ in ("no", "neither") for grand in child.children):
            return True
    return False


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
    subject = _subject(root)
    auxes = [c for c in root.children if c.dep_ in ("aux", "auxpass") and c.i < root.i and c.tag_ != "TO"]
    for neg in (c for c in root.children if c.dep_ == "neg"):
        changes: dict[int, str] = {}
        if neg.lower_ == "never":
            changes[neg.i] = ""
            out.append((_render(doc, changes), "negation", "negation/remove-never"))
            continue
        if neg.lower_ not in ("not", "n't") or neg.i == 0:
            continue
        before = doc[neg.i - 1]
        is_do = before.i in {a.i for a in auxes} and before.lemma_.lower() == "do" and before.tag_ in _DO_FORMS
        do_aux = before if is_do else None
        if do_aux is not None and len(auxes) == 1 and root.tag_ == "VB" and not (subject and subject.i > do_aux.i):
            form = inflect_verb(root.lemma_, do_aux.tag_)  # does -> VBZ, did -> VBD, do -> VBP
            if form is None:
                continue
            changes[do_aux.i] = ""
            changes[neg.i] = ""
            changes[root.i] = _match_case(form, root.text) + root.whitespace_
            out.append((_render(doc, changes), "negation", "negation/remove-do"))
            continue
        if not before.whitespace_:  # "cannot", "isn't", "can't": the auxiliary needs its own space back
            text = before.text
            if neg.lower_ == "n't" and before.lower_ in _CONTRACTED:
                text = _match_case(_CONTRACTED[before.lower_], before.text)
            changes[before.i] = text + (neg.whitespace_ or " ")
        changes[neg.i] = ""
        out.append((_render(doc, changes), "negation", "negation/remove-not"))
    if out or _is_negated(root):
        return out
    changes = {}
    if auxes:
        aux = auxes[0]
        if subject is not None and subject.i > aux.i:  # a question: "Does X cause Y?"
            return out
        after = aux  # "were also not investigated"
        while after.i + 1 < root.i and doc[after.i + 1].lower_ in _SENTENCE_ADVERBS:
            after = doc[after.i + 1]
        if after.lower_ == "can" and after.whitespace_:
            changes[after.i] = after.text + "not" + after.whitespace_
        else:
            changes[after.i] = after.text + " not" + (after.whitespace_ or " ")
        out.append((_render(doc, changes), "negation", "negation/insert-aux"))
    elif root.lemma_.lower() == "be" and root.tag_ in _DO_FORMS:
        if subject is None or subject.i > root.i:
            return out
        changes[root.i] = root.text + " not" + (root.whitespace_ or " ")
        out.append((_render(doc, changes), "negation", "negation/insert-be"))
    elif root.tag_ in _DO_FORMS or (root.tag_ == "VBN" and root.dep_ == "ROOT"):
        # "VBN" root without auxiliary: the tagger's frequent mistake for a simple past ("The drug reduced ...")
        if subject is None or subject.i > root.i or not root.lemma_.isalpha():
            return out
        if root.tag_ == "VBN" and any(c.dep_ == "conj" and _child(c, "aux", "auxpass") for c in root.children):
            return out  # "Patients admitted for X were matched ...": the real main verb is "were matched"
        tag = "VBD" if root.tag_ == "VBN" else root.tag_
        start = root.i  # "did not" goes before the manner adverbs right before the verb, after sentence adverbs
        while start > 0 and doc[start - 1].dep_ == "advmod" and doc[start - 1].head.i == root.i:
            if doc[start - 1].lower_ in _SENTENCE_ADVERBS:
                break
            start -= 1
        lemma = root.lemma_.lower()
        if start == root.i:
            changes[root.i] = f"{_DO_FORMS[tag]} not {lemma}{root.whitespace_}"
        else:
            changes[start] = f"{_DO_FORMS[tag]} not {doc[start].text_with_ws}"
            changes[root.i] = lemma + root.whitespace_
        out.append((_render(doc, changes), "negation", "negation/do-support"))
    return out


# --- binding -----------------------------------------------------------------------------------------------------

_PRE_MODIFIERS = {"det", "amod", "compound", "nummod", "poss", "advmod", "npadvmod", "quantmod", "punct"}
_PLAIN_DETERMINERS = {"the", "a", "an", "this", "that", "these", "those"}
_SWAP_STOP_ADJECTIVES = set(
    "other such same different many several various own certain further additional more most few main first last "
    "next previous total whole overall only possible respective inside outside much little non vivo vitro situ "
    "silico second third fourth fifth sixth seventh eighth ninth tenth present fat latter former free".split()
)
# noun modifiers that work like adjectives ("a brick building", "a wood fence")
_MATERIALS = set(
    "wood metal glass stone brick plastic leather steel paper concrete marble wicker silver gold ceramic cotton wool "
    "denim rubber iron tile straw bamboo cardboard porcelain granite aluminum copper brass clay fabric cloth lace "
    "velvet silk canvas tin cement".split()
)
# nouns whose adjective is part of a quantity or time idiom: "the vast majority", "in large part", "near future"
_QUANTITIES = set(
    "majority minority number amount range variety proportion fraction percentage deal lot part extent degree "
    "future past term run measure year years decade decades scale".split()
)
_FINITE_TAGS = {"VBZ", "VBD", "VBP", "MD"}


def _is_clause(verb) -> bool:
    """A verb that heads its own clause: the root, or one with a subject or a finite form."""
    if verb.dep_ == "ROOT" or verb.tag_ in _FINITE_TAGS:
        return True
    return any(c.dep_.startswith(("nsubj", "csubj", "expl")) or c.tag_ in _FINITE_TAGS for c in verb.children)


def _clause_head(token):
    """The verb of the clause a token belongs to (participles without a subject belong to the clause above)."""
    while token.head.i != token.i and not (token.pos_ in ("VERB", "AUX") and _is_clause(token)):
        token = token.head
    return token


def _hyphenated(token) -> bool:
    """Whether the token is part of a hyphenated or slashed word ("non-small-cell", "lipid-poor", "and/or")."""
    doc, i = token.doc, token.i
    before = i > 0 and not doc[i - 1].whitespace_ and doc[i - 1].text in ("-", "/", "–")
    after = i + 1 < len(doc) and not token.whitespace_ and doc[i + 1].text in ("-", "/", "–")
    return before or after


def _modifiers(noun, collocations: Collocations | None = None) -> list:
    """Single-word adjectives (and material nouns) before a noun, that can move to another noun."""
    out = []
    for child in noun.lefts:
        if list(child.children) or _hyphenated(child) or child.lower_ in _SWAP_STOP_ADJECTIVES:
            continue
        if child.i > 0 and _hyphenated(child.doc[child.i - 1]):  # "non-cell autonomous"
            continue
        adjective = child.dep_ == "amod" and child.tag_ == "JJ" and child.is_alpha
        if not (adjective or (child.dep_ == "compound" and child.lower_ in _MATERIALS)):
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
    ("insulin dependent diabetes", "80S complex formation"), or an adverb right before it belongs to it
    ("critically ill", "dually eligible")."""
    doc = modifier.doc
    if modifier.i > 0 and doc[modifier.i - 1].pos_ == "ADV":
        return True
    return any(t.i < modifier.i and t.pos_ in ("NOUN", "PROPN", "NUM", "X") for t in noun.lefts)


def _mostly_noun(token) -> bool:
    """Whether WordNet's sense-tagged counts use the word as a noun more often than as an adjective ("patient")."""
    from .wordnet import load_wordnet

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


_COLOURS = set("red orange yellow green blue purple pink brown black white grey gray silver golden".split())
_RELATIONAL_WITH_ANTONYMS = set(  # WordNet gives these antonyms, but in abstracts they mostly name kinds, not traits
    "specific multiple significant prospective retrospective soluble insoluble western eastern controversial "
    "mechanical clinical physical chemical biological natural artificial public private internal external "
    "primary secondary direct indirect active inactive positive negative".split()
)


def _qualitative(token, collocations: Collocations | None = None) -> bool:
    """Whether an adjective names a property an entity can have or lack (tall/short, high/low, chronic/acute, a
    colour): its first WordNet sense is a head adjective with a direct antonym, or a satellite of one ("rapid",
    "severe") that the corpus grades ("more severe"). Relational adjectives ("renal", "retinal", "coronary") are
    neither and mostly form fixed terms, so swapping them makes nonsense."""
    from .wordnet import load_wordnet

    word = token.lower_
    if word in _COLOURS:
        return True
    if word in _RELATIONAL_WITH_ANTONYMS:
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
    from .wordnet import load_wordnet

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
    from .wordnet import load_wordnet

    if modifier.i + 1 != noun.i:
        return False
    try:
        return bool(load_wordnet().synsets(f"{modifier.lower_}_{noun.lemma_.lower()}", "n"))
    except (ImportError, OSError):
        return False


_ADJECTIVE_ENDING = re.compile(r"(al|ic|ous|ive|ary|ory|able|ible|ant|ent|ful|less|ar|ile|oid|ed|ish|like)$")


def _not_adjective(token) -> bool:
    """Whether a word tagged JJ is likely a noun or verb ("proteoglycan metabolites", "cells that suppress"):
    WordNet knows it only as a noun or verb, or does not know it and it has no adjective ending."""
    from .wordnet import load_wordnet

    word = token.lower_
    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return _ADJECTIVE_ENDING.search(word) is None
    if wordnet.synsets(word, "a"):
        return False
    return bool(wordnet.synsets(word, "n") or wordnet.synsets(word, "v")) or _ADJECTIVE_ENDING.search(word) is None


def _same_entity(noun1, noun2) -> bool:
    """Whether two nouns may name one entity: linked by a copula or apposition, or subject and attribute."""
    for a, b in ((noun1, noun2), (noun2, noun1)):
        if b.head.i == a.i and b.dep_ in ("appos", "attr", "conj"):
            return True
        if a.dep_ in ("nsubj", "nsubjpass") and b.dep_ in ("attr", "oprd") and a.head.i == b.head.i:
            return True
    return a.head.i == b.head.i and a.head.lemma_ == "be"


# adjectives of amount or degree, by the end of their scale they name: two from the same end say nearly the same
# of any noun ("high burden" / "severe burden", "slow growth" / "low growth"), so swapping them moves nothing
_SCALE_HIGH = set(
    "high large great big substantial considerable significant strong severe serious elevated increased dense heavy "
    "major extensive marked profound intense intensive abundant rapid fast good excellent prominent pronounced wide "
    "broad deep long frequent robust sharp".split()
)
_SCALE_LOW = set(
    "low small little weak mild slight minor light reduced decreased slow poor limited modest sparse minimal short "
    "narrow shallow rare infrequent incomplete insufficient inadequate".split()
)


def _near_synonyms(word1: str, word2: str) -> bool:
    """Whether two adjectives share a WordNet synset or similar-to cluster (good/skilled, impaired/inefficient), or
    name the same end of a scale of amount or degree (high/severe, slow/low)."""
    from .wordnet import load_wordnet

    if {word1, word2} <= _SCALE_HIGH or {word1, word2} <= _SCALE_LOW:
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
    from .wordnet import load_wordnet

    try:
        wordnet = load_wordnet()
    except (ImportError, OSError):
        return False
    return not wordnet.synsets(token.lower_, "n") and bool(wordnet.synsets(token.lower_, "v"))


def _swap_amod(doc, collocations: Collocations | None = None) -> list[Candidate]:
    """Swap one adjective of a noun with one of another noun of the same clause."""
    modifiers = {t.i: _modifiers(t, collocations) for t in doc if t.pos_ == "NOUN" and not _only_verb(t)}
    nouns = [doc[i] for i, found in modifiers.items() if found and doc[i].lemma_.lower() not in _QUANTITIES]
    out = []
    for a, noun1 in enumerate(nouns):
        for noun2 in nouns[a + 1 :]:
            if noun1.lemma_.lower() == noun2.lemma_.lower() or _clause_head(noun1).i != _clause_head(noun2).i:
                continue
            if _same_entity(noun1, noun2):  # "a valuable model is a dynamic tool": nothing moves
                continue
            words1 = {t.lower_ for c in noun1.lefts for t in c.subtree}
            words2 = {t.lower_ for c in noun2.lefts for t in c.subtree}
            for adj1 in modifiers[noun1.i]:
                for adj2 in modifiers[noun2.i]:
                    if adj1.lower_ in words2 or adj2.lower_ in words1 or _near_synonyms(adj1.lower_, adj2.lower_):
                        continue
                    rule = "binding/swap-amod" if adj1.dep_ == adj2.dep_ == "amod" else "binding/swap-modifier"
                    out.append(_swap_words(doc, adj1, adj2, rule))
    return out


def _swap_words(doc, word1, word2, rule: str) -> Candidate:
    """Exchange two single words, keeping the case of each position and fixing "a"/"an" before them."""
    new1 = word2.text if _keeps_case(word2) else word2.lower_
    new2 = word1.text if _keeps_case(word1) else word1.lower_
    changes = {
        word1.i: _match_case(new1, word1.text) + word1.whitespace_,
        word2.i: _match_case(new2, word2.text) + word2.whitespace_,
    }
    _fix_article(doc, changes, word1.i, new1)
    _fix_article(doc, changes, word2.i, new2)
    return _render(doc, changes), "binding", rule


def _noun_phrase(token):
    """(start, content_start, end) of the noun and its pre-modifiers (post-modifiers stay in place), else None."""
    if token.pos_ not in ("NOUN", "PROPN") or token.dep_ == "compound":
        return None
    if token.text.isupper() and len(token) > 3 and token.i == 0:  # a section label: "METHODS"
        return None
    if token.like_num or not any(c.isalpha() for c in token.text):
        return None
    if any(child.dep_ not in ("punct",) for child in token.rights):  # "the function of X": "of X" would strand
        return None
    if (
        token.text.isupper()
        and len(token) > 1
        or any(t.text in "()[]" for t in token.doc[max(0, token.i - 3) : token.i + 2])
    ):
        return None  # section labels ("CONCLUSIONS"), abbreviations in parentheses
    left = [t for child in token.lefts for t in child.subtree]
    if len(left) > 2:
        return None
    if any(t.dep_ not in _PRE_MODIFIERS or (t.dep_ == "punct" and t.text != "-") for t in left):
        return None
    if any(t.dep_ == "det" and t.lower_ not in _PLAIN_DETERMINERS for t in left):  # no, each, any, ...
        return None
    if any(t.dep_ == "poss" and (t.pos_ != "PRON" or list(t.children)) for t in left):  # "a woman's head"
        return None
    start = min([t.i for t in left], default=token.i)
    if token.i - start != len(left):
        return None
    content = start
    doc = token.doc
    while content < token.i and doc[content].dep_ in ("det", "poss") and doc[content].head.i == token.i:
        content += 1
    return start, content, token.i + 1


def _number(token) -> str:
    """Grammatical number; a word the tagger calls singular but that is an inflected "-s" form counts as plural."""
    inflected = token.lower_ != token.lemma_.lower() and token.lower_.endswith("s")
    return "plural" if token.tag_ in ("NNS", "NNPS") or inflected else "singular"


def _present(verb) -> bool:
    """Whether the verb group agrees with its subject in number (present tense or a form of "be")."""
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i < verb.i]
    finite = auxes[0] if auxes else verb
    return finite.tag_ in ("VBZ", "VBP") or (finite.lemma_.lower() == "be" and finite.tag_ != "MD")


def _swap_nps(doc, first, second, rule: str, same_head: bool = False) -> Candidate | None:
    """Swap two noun phrases; determiners stay in place when both nouns have the same number. ``same_head``
    allows phrases with one head noun ("young mice" and "old mice")."""
    if first.i > second.i:
        first, second = second, first
    np1, np2 = _noun_phrase(first), _noun_phrase(second)
    if np1 is None or np2 is None or np1[2] > np2[0]:
        return None
    if not same_head and first.lemma_.lower() == second.lemma_.lower():
        return None
    same_number = _number(first) == _number(second)
    if not same_number:  # swapping numbers breaks agreement with verbs, pronouns and quantifiers too often
        return None
    s1, s2 = (np1[1], np1[2]), (np2[1], np2[2])
    if not same_number or np1[1] == np1[0] or np2[1] == np2[0]:  # move the determiners with their nouns
        s1, s2 = (np1[0], np1[2]), (np2[0], np2[2])
    text1, text2 = doc[s1[0] : s1[1]].text, doc[s2[0] : s2[1]].text
    if text1.lower() == text2.lower():
        return None
    changes: dict[int, str] = {}
    _replace_span(doc, changes, s2[0], s2[1], _lower_first(doc[s1[0]], text1))
    new_first = _lower_first(doc[s2[0]], text2)
    if s1[0] == 0:
        new_first = new_first[:1].upper() + new_first[1:]
    _replace_span(doc, changes, s1[0], s1[1], new_first)
    if same_number:
        _fix_article(doc, changes, s1[0], text2)
        _fix_article(doc, changes, s2[0], text1)
    return _render(doc, changes), "binding", rule


def _in_wordnet(term: str, pos: str) -> bool:
    from .wordnet import load_wordnet

    try:
        return bool(load_wordnet().synsets(term, pos))
    except (ImportError, OSError):
        return False


def _child(token, *deps):
    return next((c for c in token.children if c.dep_ in deps), None)


# verbs whose object completes the predicate ("play a role", "provide insight", "have an effect"): no role to swap
_LIGHT_OBJECT_VERBS = set("have play provide take make give pay shed gain exert offer lack hold bear draw".split())
_BOUNDARY_POS = {"PUNCT", "ADP", "VERB", "AUX", "ADV", "CCONJ", "SCONJ", "PART"}


def _glued(token) -> bool:
    """Whether punctuation is attached to the word without a space ("Best--worst", "lipid-poor", "and/or")."""
    doc, i = token.doc, token.i
    before = i > 0 and not doc[i - 1].whitespace_ and doc[i - 1].is_punct
    after = i + 1 < len(doc) and not token.whitespace_ and doc[i + 1].is_punct and doc[i + 1].text not in ".,;:"
    return before or after


def _simple_argument(token) -> bool:
    """Whether a noun can trade places with another: a short, self-contained, uncoordinated noun phrase that
    names its entity once ("dynein", "the skin"; not "Low, Lower, and Reduced", "its expression", "the histone
    [chaperones]"), with no section label ("RESULTS") before it."""
    span = _noun_phrase(token)
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
    if end < len(doc) and (doc[end].pos_ not in _BOUNDARY_POS or doc[end].text == ","):  # "integrin [signaling]"
        return False  # the phrase goes on, or starts a list: "counts, academic problems, ..."
    if _glued(doc[start]) or _glued(token):  # "Best--worst scaling", "non-small-cell"
        return False
    if start > 0 and doc[start - 1].pos_ in ("NOUN", "PROPN", "NUM"):  # "Candida [albicans hyphae formation]"
        return False
    return not any(t.is_upper and t.is_alpha and len(t) > 3 for t in doc[max(0, start - 1) : end])  # "RESULTS"


def _completes_verb(verb, obj) -> bool:
    """Whether the object belongs to the verb's meaning: a light verb ("plays a role") or a WordNet idiom ("takes
    place"), or a preposition of the verb right after it ("provides insight into", "identifies X as")."""
    if verb.lemma_.lower() in _LIGHT_OBJECT_VERBS or _in_wordnet(f"{verb.lemma_.lower()}_{obj.lower_}", "v"):
        return True
    after = obj.i + 1
    return after < len(obj.doc) and obj.doc[after].pos_ == "ADP" and obj.doc[after].head.i == verb.i


def _before_verb(subject, verb) -> bool:
    """Whether the subject comes right before its verb (only auxiliaries, negation and adverbs between)."""
    between = subject.doc[subject.i + 1 : verb.i]
    return subject.i < verb.i and all(t.dep_ in ("aux", "auxpass", "neg", "advmod") for t in between)


_SINGULAR_FORMS = {"is", "was", "has", "does"}
_PLURAL_FORMS = {"are", "were", "have", "do"}


def _agrees(noun, verb) -> bool:
    """Whether a noun can be the subject of the verb group: its number fits a finite "is"/"are", "-s" form."""
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i < verb.i]
    finite = auxes[0] if auxes else verb
    if finite.lower_ in _SINGULAR_FORMS or finite.tag_ == "VBZ":
        return _number(noun) == "singular"
    if finite.lower_ in _PLURAL_FORMS or finite.tag_ == "VBP":
        return _number(noun) == "plural"
    return True


def _swappable_object(verb, obj) -> bool:
    """Whether the object can become the subject: a simple phrase that agrees with the verb and does not complete
    the verb's meaning."""
    return _simple_argument(obj) and _agrees(obj, verb) and not _completes_verb(verb, obj)


def _swappable_agent(verb, passive, agent) -> bool:
    """Whether a passive subject and its by-agent can trade places (both simple, the agent agrees with the verb)."""
    simple = _simple_argument(passive) and _simple_argument(agent)
    after = agent.i + 1  # "induced by chronic exposure [to their ligands]": the preposition stays with the agent
    followed = after < len(agent.doc) and agent.doc[after].pos_ == "ADP"
    return simple and not followed and _before_verb(passive, verb) and _agrees(agent, verb)


_NOUN_PARTICIPLES = set("based related induced mediated derived associated dependent driven linked".split())


def _swap_roles(doc) -> list[Candidate]:
    """Swap subject and object (or passive subject and agent) of a verb, or the subjects of two clauses."""
    out = []
    root = main_root(doc)
    verbs = [root] + [t for t in root.children if t.dep_ in ("acl", "relcl", "advcl", "conj") and t.pos_ == "VERB"]
    subjects = []
    for verb in verbs:
        if verb.pos_ not in ("VERB", "AUX") or not _in_wordnet(verb.lemma_.lower(), "v"):  # "Candida albicans"
            continue
        subject = _child(verb, "nsubj")
        if subject is not None and not _before_verb(subject, verb):
            subject = None
        if subject is not None and subject.i == verb.i - 1 and verb.lower_ in _NOUN_PARTICIPLES:
            subject = None  # "a population based study": an adjective, not a verb with its subject
        if subject is None and verb.dep_ == "acl" and verb.tag_ == "VBG" and verb.i == verb.head.i + 1:
            subject = verb.head  # "a man holding a cup"
        if subject is not None and (subject.pos_ not in ("NOUN", "PROPN") or not _simple_argument(subject)):
            subject = None
        if subject is not None:
            subjects.append((verb, subject))
        obj = _child(verb, "dobj")
        if subject is not None and obj is not None and _swappable_object(verb, obj):
            out.append(_swap_nps(doc, subject, obj, "binding/swap-subj-obj"))
        passive = _child(verb, "nsubjpass")
        agent = _child(verb, "agent")
        by_obj = _child(agent, "pobj") if agent is not None else None
        if passive is not None and by_obj is not None and _swappable_agent(verb, passive, by_obj):
            out.append(_swap_nps(doc, passive, by_obj, "binding/swap-subj-agent"))
    for a, (verb1, subject1) in enumerate(subjects):
        for verb2, subject2 in subjects[a + 1 :]:
            if _clause_head(subject1).i == _clause_head(subject2).i or _child(verb1, "ccomp") or _child(verb2, "ccomp"):
                continue  # "one hypothesis is that ...": a clause-taking verb's subject is not an entity
            if _agrees(subject1, verb2) and _agrees(subject2, verb1):
                out.append(_swap_nps(doc, subject1, subject2, "binding/swap-subjects"))
    return [c for c in out if c is not None]


# comparisons whose direction a swap reverses: "higher in women than in men", "reduced in X compared with Y"
_DIRECTIONAL = set(
    "increase decrease reduce elevate improve enhance enrich upregulate downregulate raise lower impair suppress "
    "attenuate augment diminish exceed worsen accelerate delay prolong shorten".split()
)
_GROUP_PREPOSITIONS = {"in", "among", "for"}
_EFFECT_NOUNS = {"effect", "impact", "influence"}
_COMPARATORS = {"than", "compared", "versus"}


def _comparative(token) -> bool:
    """Whether a word states a direction: a comparative ("higher", "more") or a verb of change ("reduced")."""
    return token.tag_ in ("JJR", "RBR") or token.lemma_.lower() in _DIRECTIONAL


def _directed(token) -> bool:
    """Whether a word or its complement states a direction ("reduced", "was [higher]", "live [longer]")."""
    return _comparative(token) or any(_comparative(c) for c in token.children if c.dep_ in ("acomp", "advmod"))


def _argument(noun) -> bool:
    """Whether a noun phrase can trade places with the other side of a relation: a short phrase that ends at a
    boundary (punctuation, a preposition, the comparison word), with no list, number, label or hyphen glued to it."""
    if noun is None or noun.pos_ not in ("NOUN", "PROPN") or noun.is_stop or noun.dep_ == "compound":
        return False
    span = _noun_phrase(noun)
    if span is None or any(c.dep_ in ("conj", "cc", "appos") for c in noun.children):
        return False
    doc = noun.doc
    start, _, end = span
    ends = end == len(doc) or doc[end].pos_ in ("PUNCT", "ADP", "SCONJ", "AUX", "PART")
    subject = noun.dep_ in ("nsubj", "nsubjpass") and doc[end].pos_ in ("VERB", "AUX")
    if not (ends or subject or doc[end].lower_ in _COMPARATORS | {"but", "rather"}):
        return False  # the phrase may go on: "three phosphorylation [cascades]"
    if any(t.like_num or t.tag_ in ("JJR", "RBR") for t in doc[start:end]) or noun.lemma_.lower() in _TIME_WORDS:
        return False  # "at 2 days", "during the period": a time or a dose, not a compared group
    if doc[end - 1].text == "-" or _glued(doc[start]) or _glued(noun):
        return False
    before = doc[start - 1] if start > 0 else None
    if before is not None and (before.pos_ in ("NOUN", "PROPN", "NUM", "ADJ") or before.is_upper and len(before) > 1):
        return False  # "[RESULTS] Women", "[Candida] albicans"
    return not any(t.is_upper and t.is_alpha and len(t) > 3 for t in doc[start:end])


def _compared_sides(doc, comparator, after: int):
    """The two compared noun phrases around "than", "compared with/to" or "versus": the same preposition on both
    sides ("in women than in men"), a group preposition of the stated direction and a bare phrase ("reduced in
    treated mice compared with controls"), or, for "than", the subject ("females live longer than males")."""
    first = None
    prep2 = doc[after] if doc[after].pos_ == "ADP" else None
    second = _child(prep2, "pobj") if prep2 is not None else doc[after]
    if prep2 is None and _noun_phrase(second) is None:
        while second.i + 1 < len(doc) and second.head.i > second.i and second.dep_ in _PRE_MODIFIERS:
            second = second.head  # "than [normal] tissue": from the phrase's first word to its noun
        span = _noun_phrase(second)
        if span is None or span[0] != after:
            return None
    preps = [
        t
        for t in doc[max(0, comparator.i - 12) : comparator.i]
        if t.dep_ == "prep"
        and (t.lower_ == prep2.lower_ if prep2 is not None else t.lower_ in _GROUP_PREPOSITIONS)
        and _directed(t.head)
    ]
    if preps:
        first = _child(preps[-1], "pobj")
    elif comparator.lower_ == "than" and prep2 is None:
        predicate = comparator.head
        while (
            predicate.dep_ in ("advmod", "acomp", "amod", "dobj", "prep", "npadvmod")
            and predicate.head is not predicate
        ):
            predicate = predicate.head
        first = _child(predicate, "nsubj")
        if first is not None and not _simple_argument(first):
            return None
        if first is not None and any(t.pos_ == "ADP" for t in doc[first.i : comparator.i]):
            return None  # "the authors found lower values in [patients] than controls": the subject is not compared
    return (first, second) if first is not None and first.i < comparator.i else None


_CONTRASTS = (("but", "not"), ("rather", "than"))
_NOMINAL_SUFFIX = re.compile(r"(tion|sion|ment|ance|ence|sis|ing)$")


def _contrasted_sides(doc, connective):
    """The two sides of a contrast, "X but not Y" or "X rather than Y", with the same preposition on both sides
    when there is one ("in women, but not in men"; "expressed in fibrotic but not healthy tissue"). ``connective``
    is the first of its two words."""
    after = connective.i + 2
    if after >= len(doc):
        return None
    before = doc[connective.i - 1] if doc[connective.i - 1].text != "," else doc[connective.i - 2]
    if doc[after].pos_ == "ADP":
        second = _child(doc[after], "pobj")
        if second is None or before.pos_ not in ("NOUN", "PROPN") or before.head.dep_ != "prep":
            return None
        if before.head.lower_ != doc[after].lower_:
            return None
        return before, second
    second = doc[after]
    if second.pos_ == "ADJ" and before.pos_ == "ADJ" and second.dep_ == "conj" and second.head.i == before.i:
        return None if _glued(before) or _glued(second) else (before, second)  # not "cross[-cutting]"
    if second.pos_ in ("NOUN", "PROPN") and before.pos_ in ("NOUN", "PROPN") and second.head.i == before.i:
        return before, second
    return None


def _nominal_sides(token):
    """The two arguments of a nominalised verb, "N of X by Y" ("the phosphorylation of p53 by ATM")."""
    if token.pos_ != "NOUN" or not _NOMINAL_SUFFIX.search(token.lower_):
        return None
    of = next((c for c in token.children if c.dep_ == "prep" and c.lower_ == "of"), None)
    theme = _child(of, "pobj") if of is not None else None
    if theme is None:
        return None
    by = next((c for c in [*token.children, *theme.children] if c.dep_ == "prep" and c.lower_ == "by"), None)
    if by is None or by.i != theme.i + 1:
        return None
    agent = _child(by, "pobj")
    if agent is None or agent.i + 1 < len(token.doc) and token.doc[agent.i + 1].text == ",":
        return None  # "by growth factors, receptors and channels", "by Nilotinib, an inhibitor": a list or an aside
    return theme, agent


def _swap_relation_arguments(doc) -> list[Candidate]:
    """Swap the two sides of a comparison ("higher in women than in men" -> "higher in men than in women"), of
    an effect ("the effect of exercise on mortality" -> "the effect of mortality on exercise"), of a contrast
    ("in women but not in men") or of a nominalised verb ("the clearance of cells by phagocytes")."""
    out = []
    for token in doc:
        sides, rule = None, "binding/swap-compared"
        word, following = token.lower_, doc[token.i + 1].lower_ if token.i + 1 < len(doc) else None
        if word == "than" and following is not None and token.i > 0:
            if doc[token.i - 1].lower_ not in ("rather", "other"):  # "rather than" contrasts, it does not compare
                sides = _compared_sides(doc, token, token.i + 1)
        elif (word == "compared" and following in ("with", "to") or word == "versus") and token.i + 2 < len(doc):
            if any(_comparative(t) for t in doc[max(0, token.i - 12) : token.i]):  # a direction to reverse
                sides = _compared_sides(doc, token, token.i + (2 if word == "compared" else 1))
        elif token.lemma_.lower() in _EFFECT_NOUNS and token.pos_ == "NOUN":
            of = next((c for c in token.children if c.dep_ == "prep" and c.lower_ == "of"), None)
            on = next((c for c in token.children if c.dep_ == "prep" and c.lower_ == "on"), None)
            if of is not None and on is not None and of.i < on.i:
                effect, target = _child(of, "pobj"), _child(on, "pobj")
                if target is not None and target.i + 1 < len(doc) and doc[target.i + 1].text != ",":
                    sides, rule = (effect, target), "binding/swap-effect"  # not "on growth, parameters and ..."
        elif (word, following) in _CONTRASTS and token.i > 1:
            sides, rule = _contrasted_sides(doc, token), "binding/swap-contrasted"
            if sides is not None and sides[0].pos_ == "ADJ":  # "fibrotic but not healthy tissue": swap the words
                out.append(_swap_words(doc, *sides, rule))
                continue
        else:
            sides, rule = _nominal_sides(token), "binding/swap-nominal"
        if sides is None or not all(_argument(side) for side in sides):
            continue
        out.append(_swap_nps(doc, *sides, rule, same_head=True))
    return [c for c in out if c is not None]


_PERCENT_SIGNS = {"%", "percent"}
_INTERVAL_WORDS = {"±", "+/-", "/-", "-", "–", "−", "to", "from", "between", "=", ">", "<", "≥", "≤"}
_INTERVAL_LABELS = set("ci cri confidence credible uncertainty ui pi prediction upper lower significance".split())
_LIST_WORDS = {",", "and", "or", "%", "percent", "vs", "vs.", "versus"}
_DISTRIBUTION_WORDS = set("percentile quartile tertile quintile decile interquartile".split())
_SPREAD_LABELS = set("ci cri confidence credible interval iqr range sd se sem".split())


def _percentage(token) -> bool:
    """Whether a number gives a share of something ("45% of patients", "a 12 percent drop"), not the bound of an
    interval ("from 10% to 20%", "80-92%"), a threshold ("> 20%"), a spread ("± 2%") or a confidence level
    ("95% CI")."""
    doc, i = token.doc, token.i
    if not token.like_num or i + 1 >= len(doc) or doc[i + 1].lower_ not in _PERCENT_SIGNS:
        return False
    before = doc[i - 1].lower_ if i > 0 else ""
    if before in ("(", "[") and i > 1 and doc[i - 2].lower_ in _PERCENT_SIGNS:  # "20.7% (8.6%)": a spread
        return False
    if before in _INTERVAL_WORDS or (before == "and" and any(t.lower_ == "between" for t in doc[max(0, i - 4) : i])):
        return False
    after = doc[i + 2] if i + 2 < len(doc) else None
    if (after is not None and after.lower_ in _INTERVAL_LABELS) or _in_spread_note(token):
        return False
    return not (after is not None and after.text in ("-", "–", "to") and i + 3 < len(doc) and doc[i + 3].like_num)


def _in_spread_note(token) -> bool:
    """Whether a number sits in a bracketed note on a spread after its label ("(95% CI: 0.5%, 7.1%)", "[IQR 20%,
    31%]"): a bound, not a value of its own."""
    for t in reversed(token.doc[: token.i]):
        if t.text in (")", "]"):
            return False
        if t.text in ("(", "["):
            return any(w.lower_ in _SPREAD_LABELS for w in token.doc[t.i + 1 : token.i])
    return False


def _respectively_after(token) -> bool:
    """Whether "respectively" follows the token in the same clause (no ";" between)."""
    for t in token.doc[token.i + 1 :]:
        if t.text == ";":
            return False
        if t.lower_ == "respectively":
            return True
    return False


def _outside_brackets(span) -> list:
    """The tokens of a span that are not inside brackets ("43% (6/14) and 20%" -> "%", "and")."""
    out, depth = [], 0
    for t in span:
        depth += t.text in ("(", "[")
        if depth == 0:
            out.append(t)
        depth -= t.text in (")", "]") and depth > 0
    return out


def _value(token) -> float | None:
    try:
        return float(token.text.replace(",", ""))
    except ValueError:
        return None


def _swap_values(doc) -> list[Candidate]:
    """Swap two percentages of one sentence, so each figure lands on the other's entity ("mortality was 12% with
    the drug and 25% with placebo" -> "25% with the drug and 12% with placebo"). Two figures in a bare list
    ("85% and 90%") are bound to their entities only by "respectively"."""
    values = [t for t in doc if _percentage(t)]
    if len(values) < 2 or any(t.lemma_.lower() in _DISTRIBUTION_WORDS for t in doc):  # "75th percentile": cut-offs
        return []
    out = []
    for first, second in zip(values, values[1:]):
        if _value(first) is None or _value(first) == _value(second):
            continue
        bare_list = all(t.lower_ in _LIST_WORDS for t in _outside_brackets(doc[first.i + 1 : second.i]))
        if bare_list and not _respectively_after(second):
            continue
        out.append(_swap_words(doc, first, second, "binding/swap-values"))
    return out


def binding(doc, collocations: Collocations | None = None) -> list[Candidate]:
    """Move a modifier or a role to another entity: swap the adjectives of two nouns of one clause; swap subject
    and object (or agent) of a verb; swap the subjects of two clauses; swap the two sides of a comparison, an
    effect, a contrast or a nominalised verb; swap two percentages. ``collocations`` (word-pair counts of the
    corpus) keep adjectives of fixed terms in place."""
    return _swap_amod(doc, collocations) + _swap_roles(doc) + _swap_relation_arguments(doc) + _swap_values(doc)


# --- spatial -----------------------------------------------------------------------------------------------------

_FLIPS = {
    "left": ("right", "spatial/left-right"),
    "right": ("left", "spatial/left-right"),
    "above": ("below", "spatial/above-below"),
    "below": ("above", "spatial/above-below"),
    "over": ("under", "spatial/over-under"),
    "under": ("over", "spatial/over-under"),
    "inside": ("outside", "spatial/inside-outside"),
    "outside": ("inside", "spatial/inside-outside"),
    "before": ("after", "spatial/before-after"),
    "after": ("before", "spatial/before-after"),
    "upstream": ("downstream", "spatial/upstream-downstream"),
    "downstream": ("upstream", "spatial/upstream-downstream"),
    "to": ("from", "spatial/to-from"),
    "from": ("to", "spatial/to-from"),
}
_MOTION_VERBS = set(  # verbs whose "to"/"from" is a direction (not "point to", "bring to light", "lead to")
    "go move travel walk run fly drive ride swim sail migrate send carry transport transfer deliver ship jump climb "
    "fall roll commute flee escape relocate emigrate immigrate crawl march hike rush hurry race stroll wander drift "
    "float translocate shuttle export import spread shift".split()
)
_TIME_WORDS = set(
    "time period year years decade century month week day hour minute second course duration lifetime era age "
    "follow-up night morning evening season".split()
)


def _physical(noun) -> bool:
    """Whether WordNet's first sense of the noun is a physical entity (a mat, a river), not a condition or time."""
    from .wordnet import load_wordnet

    try:
        synsets = load_wordnet().synsets(noun.lemma_.lower(), "n")
    except (ImportError, OSError):
        return False
    if not synsets:
        return False
    ancestors = {s.name() for path in synsets[0].hypernym_paths() for s in path}
    return bool(ancestors & {"object.n.01", "matter.n.03"}) and "time_period.n.01" not in ancestors


def _over_under_ok(token) -> bool:
    if token.dep_ != "prep":
        return False
    pobj = next((c for c in token.children if c.dep_ == "pobj"), None)
    if pobj is None or pobj.ent_type_ in ("DATE", "TIME") or pobj.lemma_.lower() in _TIME_WORDS:
        return False
    if pobj.like_num or pobj.text == "%" or any(c.dep_ == "nummod" for c in pobj.children):
        return True
    return _physical(pobj)


def _flippable(token) -> bool:
    word = token.lower_
    if word in ("left", "right"):
        if token.pos_ == "ADV":
            return token.head.pos_ == "VERB" and word == "left"
        return token.pos_ in ("ADJ", "NOUN") and not (word == "right" and token.nbor(1).lower_ == "to")
    if word in ("over", "under"):
        return _over_under_ok(token)
    if word in ("before", "after"):
        return token.pos_ in ("ADP", "SCONJ", "ADV") and token.dep_ in ("prep", "mark", "advmod", "pcomp")
    if word in ("to", "from"):
        if token.dep_ != "prep" or token.head.lemma_.lower() not in _MOTION_VERBS:
            return False
        return not any(c.dep_ == "prep" and c.lower_ in ("to", "from") and c.i != token.i for c in token.head.children)
    if word in ("above", "below", "inside", "outside", "upstream", "downstream"):
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
            changes: dict[int, str] = {}
            _replace_span(doc, changes, token.i, token.i + 2, _match_case("behind", token.text))
            changes[token.i + 2] = ""
            out.append((_render(doc, changes), "spatial", "spatial/front-behind"))
        elif word == "behind" and token.pos_ == "ADP" and any(c.dep_ == "pobj" for c in token.children):
            changes = {token.i: _match_case("in front of", token.text) + token.whitespace_}
            out.append((_render(doc, changes), "spatial", "spatial/front-behind"))
        elif word in _FLIPS and token.i + 1 < len(doc) and _flippable(token):
            new, rule = _FLIPS[word]
            if new in words:  # "left or right", "before and after": flipping one word makes a duplicate
                continue
            changes = {token.i: _match_case(new, token.text) + token.whitespace_}
            out.append((_render(doc, changes), "spatial", rule))
    return out


# --- paraphrase --------------------------------------------------------------------------------------------------

_LIGHT_VERBS = {"be", "have", "do", "get", "make", "take", "go", "give", "let", "put", "set", "come", "say"}
_WN_POS = {"NOUN": "n", "VERB": "v", "ADJ": "a"}
# synonyms are swapped for adjectives only: on a read sample of scientific sentences, verb and noun synonyms took
# the wrong sense too often ("detected" -> "noticed", "excluded" -> "omitted", "cluster" -> "clump")
_SYNONYM_POS = ("ADJ",)
# words whose everyday first WordNet sense is not their scientific one ("significant" -> "important",
# "results" -> "effects", "differentiate" -> "distinguish", "study" -> "survey", "culture" -> "civilization")
_TECHNICAL = set(
    "mixed extended prolonged endless sundry "
    "significant result study differentiate express expression culture model control trial subject case rate level "
    "activity response effect analysis treatment condition factor group cell power mean normal positive negative "
    "sensitive resistant association interaction signal sign mark marker development report stress state order "
    "function class family field figure sample site table system set line tissue strain host vector scale range "
    "transform translate transcribe operate execute deliver charge refer dose cross mass volume matter "
    "material body depression relative fit design record score bind binding target agent red white require apparent "
    "mediate product inhibit small large little examination central engagement repeat poor process activate "
    "lineage diagnosis elicit derive uptake minimal confirm inherent".split()
)


_MIN_COUNT = 3  # sense-tagged occurrences a synonym needs in WordNet
_MIN_WORD_COUNT = 5  # and the word itself, for WordNet's sense order to be trusted


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
    synsets = wordnet.synsets(lemma, _WN_POS[token.pos_])
    if not synsets or lemma not in synsets[0].lemma_names() or lemma in _TECHNICAL:
        return None
    if not _dominant(wordnet, synsets[0], lemma) or _in_multiword(token):
        return None
    if sum(lem.count() for s in synsets for lem in s.lemmas() if lem.name() == lemma) < _MIN_WORD_COUNT:
        return None  # too rare in WordNet's sense-tagged corpus to trust its sense order
    names = [
        (lem.count(), lem.name())
        for lem in synsets[0].lemmas()
        if lem.name() != lemma and lem.name().isalpha() and lem.name().islower() and lem.count() >= _MIN_COUNT
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
        if token.pos_ not in _SYNONYM_POS or not token.is_alpha or token.is_stop or token.like_num or token.ent_type_:
            continue
        if len(token) < 3 or (token.i > 0 and token.text[:1].isupper()) or token.text.isupper():
            continue
        if token.lemma_.lower() in _LIGHT_VERBS or token.dep_ == "compound" or _hyphenated(token):
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
        changes = {token.i: _match_case(new, token.text) + token.whitespace_}
        _fix_article(doc, changes, token.i, new)
        out.append((_render(doc, changes), "paraphrase", "paraphrase/synonym"))
    return out


def _chunk_by_root(doc) -> dict[int, tuple[int, int]]:
    return {chunk.root.i: (chunk.start, chunk.end) for chunk in doc.noun_chunks}


def _ends_phrase(token) -> bool:
    """Whether a noun phrase can end right before this token (punctuation, a preposition, a verb, a clause word)."""
    return token.is_punct or token.pos_ in ("ADP", "VERB", "AUX", "SCONJ", "PART") or token.tag_ in ("WDT", "WP")


_CORRELATIVES = {"both", "either", "neither", "between"}  # "both A and B": the pair is fixed in place


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
        if any(t.lower_ in _CORRELATIVES for t in doc[max(0, a0 - 1) : a1]):
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
        new_b = _lower_first(doc[b0], text_b)
        if a0 == 0:
            new_b = new_b[:1].upper() + new_b[1:]
        new_text = f"{new_b}{doc[a1 - 1].whitespace_}{doc[a1].text}{doc[a1].whitespace_}{_lower_first(doc[a0], text_a)}"
        changes: dict[int, str] = {}
        _replace_span(doc, changes, a0, b1, new_text)
        out.append((_render(doc, changes), "paraphrase", "paraphrase/reorder-and"))
    return out


def paraphrase(doc) -> list[Candidate]:
    """Meaning-preserving edits: a WordNet synonym for one content word; "A and B" -> "B and A"."""
    return _synonyms(doc) + _reorder_conjuncts(doc)


RULES: dict[str, Callable] = {"negation": negation, "binding": binding, "spatial": spatial, "paraphrase": paraphrase}
