"""Reworded negation: one predicate said three ways, "is not clear" / "is unclear" (same meaning) / "is clear"
(negation removed, meaning flipped).

This is the shape of CondaQA's edits: a negated sentence, a paraphrase that rewords the negation (affixal or
syntactic), and an affirmative edit that shares more words with the original than the paraphrase does. A scorer
that counts shared tokens prefers the affirmative; these triplets teach the opposite.

Pairs come from WordNet: adjectives whose direct antonym is the same word with a negative prefix or the -ful/-less
pair (possible / impossible, clear / unclear, useful / useless). Only predicates after a copula are edited
("was [not] X"), where "not X" and the prefixed antonym say the same thing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import pandas as pd

from .lexicon import NEGATORS, UNIVERSAL
from .spans import rest_of_clause

NEGATIVE_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non", "a")
COPULAS = ("is", "are", "was", "were")  # "not" goes right after these; other copulas are read only when negated
OTHER_COPULAS = ("be", "been", "remains", "remained", "remain", "seems", "seemed", "appears", "appeared")
# antonym pairs whose senses in running text are not "not X": "critical" (= crucial) / "uncritical" (= naive),
# "responsible for" / "irresponsible", "due to" / "undue", "comparable" / "incomparable" (= unmatched), "made of" /
# "unmade", "bound to" / "unbound", "free of" / "unfree", "even" / "uneven", "moving" (progressive) / "unmoving";
# and prepositions that do not carry over ("dependent on" / "independent of", "distinct from" / "indistinct")
EXCLUDED = set(
    "critical responsible due dependent distinct particular partial moral interested comparable substantial made "
    "bound free even specific understood crucial moving".split()
)
KEPT_PARTICIPLES = {"known"}  # lexicalised: "unknown" is the usual way to say "not known"
PREFERENCE = (*NEGATIVE_PREFIXES, "less")  # where WordNet gives two antonyms, the first affix here wins
# what may follow the adjective, so that it is the predicate ("is likely mediated by": an adverb, not a predicate)
FOLLOWERS = set(
    "to that whether if for in with of from when because but as at on by since than about among between "
    "during under within across after before until unless while how what why which who where".split()
)
KNOWN_FOLLOWERS = set("whether if how what why which who where about regarding".split())  # not "known to / as"
# quantifiers before the copula: "little is known" is not "little is not known"
QUANTIFIERS = set("little much nothing less few more most everything all anything none".split())
# a negation or "only" earlier in the clause: "no method is available" -> "no method is not available"
CLAUSE_NEGATORS = NEGATORS | {"only", "hardly", "rarely", "seldom"}
# a concessive sentence reads as a contradiction once its predicate flips ("although X is clear, ...")
CONCESSIVE = re.compile(r"\b(although|though|whereas|whilst|despite|nevertheless|nonetheless|in spite of)\b", re.I)
COLUMNS = ["anchor", "positive", "negative", "direction", "word", "antonym", "sentence"]
DIRECTIONS = ("not->affix", "affix->not")


def _affix(word: str, negative: str) -> str | None:
    """The affix that makes ``negative`` from ``word`` ("im" for possible / impossible, "less" for useful / useless)."""
    if word.endswith("ful") and negative == word[:-3] + "less":
        return "less"
    return next((p for p in NEGATIVE_PREFIXES if negative == p + word), None)


def _participle(wordnet, word: str) -> bool:
    """A past participle: "-ed", or an inflected verb form that is not "-ing" (paid, frozen, written)."""
    if word in KEPT_PARTICIPLES:
        return False
    lemma = wordnet.morphy(word, "v")
    return word.endswith("ed") or (lemma is not None and lemma != word and not word.endswith("ing"))


@functools.lru_cache(maxsize=1)
def affixal_antonyms() -> dict[str, str]:
    """{positive adjective: its negative-affix antonym} from WordNet (e.g. "possible": "impossible"; where WordNet
    gives two, the first affix of ``PREFERENCE``). Past participles ("treated" / "untreated", "paid" / "unpaid")
    are left out: after a copula they are passives ("was treated with"), except ``KEPT_PARTICIPLES``."""
    from .wordnet import load_wordnet

    wordnet = load_wordnet()
    found: dict[str, set[str]] = {}
    for pos in ("a", "s"):
        for synset in wordnet.all_synsets(pos):
            for lemma in synset.lemmas():
                for antonym in lemma.antonyms():
                    x, y = lemma.name().lower(), antonym.name().lower()
                    for word, negative in ((x, y), (y, x)):
                        plain = word.isalpha() and word not in EXCLUDED and not _participle(wordnet, word)
                        if plain and _affix(word, negative):
                            found.setdefault(word, set()).add(negative)
    return {
        word: min(sorted(options), key=lambda n, w=word: PREFERENCE.index(_affix(w, n)))
        for word, options in found.items()
    }


def clause_allows_flip(before: str, blockers: set[str]) -> bool:
    """Whether a predicate after ``before`` can be negated or flipped: the word right before it is not one of
    ``blockers``, and its clause holds no negation (or "only") before it ("no method is available").

    >>> clause_allows_flip("No method", set()), clause_allows_flip("Yes, the method", set())
    (False, True)
    """
    preceding = before.split()[-1:]
    if preceding and preceding[0].lower() in blockers:
        return False
    clause = re.split(r"[,;:]", before)[-1].lower()
    return not (CLAUSE_NEGATORS & set(re.findall(r"[a-z']+", clause)) or "n't" in clause)


def both_directions(with_not: str, negated: str, affirmative: str, directions: tuple[str, str], *rest: str) -> list:
    """The two triplet rows of one edited sentence: (anchor, positive, negative, direction, *rest) with the "not"
    form as anchor, then with the other negated form as anchor; the affirmative is the negative of both."""
    return [
        (with_not, negated, affirmative, directions[0], *rest),
        (negated, with_not, affirmative, directions[1], *rest),
    ]


def _forms(sentence: str, match: re.Match, pairs: dict, negatives: dict) -> tuple[str, str, str, str, str] | None:
    """(negated with "not", negated by the affix, affirmative, word, antonym) of one copula + adjective match."""
    copula, negated, word = match.group(1), match.group(2), match.group(3)
    lower = word.lower()
    if lower != word and word[:1].lower() + word[1:] != lower:  # an acronym or odd casing
        return None
    before, after = sentence[: match.start()], sentence[match.end() :]
    following = re.match(r"\s*([A-Za-z]+|[-/])?", after).group(1)
    if following and following.lower() not in (KNOWN_FOLLOWERS if lower in ("known", "unknown") else FOLLOWERS):
        return None
    if not clause_allows_flip(before, QUANTIFIERS) or UNIVERSAL.search(rest_of_clause(after)):
        return None
    plain = lower in pairs
    if not plain and lower not in negatives:
        return None
    if negated and not plain:  # "not unclear": a double negation, no affirmative to write
        return None
    if not negated and copula.lower() not in COPULAS:  # "remains clear": where "not" goes is not one place
        return None
    positive = lower if plain else negatives[lower]
    antonym = pairs[positive]
    with_not = f"{before}{copula} not {positive}{after}"
    with_affix = f"{before}{copula} {antonym}{after}"
    affirmative = f"{before}{copula} {positive}{after}"
    return with_not, with_affix, affirmative, positive, antonym


def reworded_negations(
    sentences: Iterable[str], pairs: dict[str, str] | None = None, directions: tuple[str, str] = DIRECTIONS
) -> pd.DataFrame:
    """Two triplets per edited sentence: anchor = the predicate negated one way, positive = negated the other
    way, negative = the affirmative; ``direction`` is "not->affix" (anchor has "not") or "affix->not".

    ``pairs``: {adjective: the word that says "not" it} (default :func:`affixal_antonyms`); ``directions``: the
    two direction labels, "not" first.

    >>> t = reworded_negations(["The mechanism is unclear."])
    >>> t[["anchor", "positive", "negative"]].values.tolist()[0]
    ['The mechanism is not clear.', 'The mechanism is unclear.', 'The mechanism is clear.']
    """
    pairs = affixal_antonyms() if pairs is None else pairs
    negatives = {v: k for k, v in pairs.items()}
    copulas = "|".join(COPULAS + OTHER_COPULAS)
    pattern = re.compile(rf"\b({copulas}) (not )?([A-Za-z]+)\b", re.IGNORECASE)
    rows = []
    for sentence in sentences:
        if CONCESSIVE.search(sentence):
            continue
        for match in pattern.finditer(sentence):
            forms = _forms(sentence, match, pairs, negatives)
            if forms is None:
                continue
            with_not, with_affix, affirmative, word, antonym = forms
            rows += both_directions(with_not, with_affix, affirmative, directions, word, antonym, sentence)
            break  # one edit per sentence
    return pd.DataFrame(rows, columns=COLUMNS)
