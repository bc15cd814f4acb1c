"""Reworded negation with a lexical negative: the same predicate said with "not" and with a word that means "not"
it, against the affirmative. Three families, each written three ways:

- "failed to reduce" / "did not reduce" / "reduced" (also "fails to" / "does not", "fail to" / "do not");
- "lacks a domain" / "does not have a domain" / "has a domain" (also "lacked" / "did not have"), from a sentence
  with "lacks" / "lacked" or "do(es) / did not have" (plural "lack" is not read: it is as often a noun);
- "is absent" / "is not present" / "is present" (copular complementaries, ``LEXICAL_ADJECTIVES``, by
  :func:`.affixal.reworded_negations`), from a sentence with any of the three ("absent from" is left out: "not
  present from" is not English).

CondaQA's paraphrase edits reword a negation in such ways, not only by an affix (:mod:`.affixal`). "failed to V" is
only read one way: "did not V" says "failed to V" only where V was tried ("did not smoke" is not "failed to smoke").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import pandas as pd

from .affixal import COLUMNS, CONCESSIVE, both_directions, clause_allows_flip, reworded_negations
from .inflect import is_irregular, past, third_person
from .lexicon import HEDGES, POLARITY, UNIVERSAL
from .spans import rest_of_clause

# "not true" / "false" was left out: "this is not true for all viruses" is not "this is false for all viruses"
LEXICAL_ADJECTIVES = {"present": "absent", "alive": "dead"}
DIRECTIONS = ("not->lexical", "lexical->not")
DO = {"VBP": "do", "VBZ": "does", "VBD": "did"}
FAIL = {"fail": "VBP", "fails": "VBZ", "failed": "VBD"}
LACK = {"lack": "VBP", "lacks": "VBZ", "lacked": "VBD"}
HAVE = {"VBP": "have", "VBZ": "has", "VBD": "had"}
DO_TAGS = {form: tag for tag, form in DO.items()}
LACK_FORMS = {tag: form for form, tag in LACK.items()}
# a word before "failed" / "lacks" (adverbs skipped: "has repeatedly failed to") that makes it a participle or an
# infinitive ("had failed to", "may fail to"), or a negation already ("not fail to")
BLOCKERS = set(
    "to has have had having may might can could will would shall should must not never did does do be been being "
    "is are was were".split()
)
MODALS = set("may might can could will would shall should must".split())
# adverbs without -ly that the blocker check looks past ("has long lacked", "had also failed to")
ADVERBS = set("long also still already just even further then thus therefore again however indeed instead".split())
SKIPPED = ADVERBS | HEDGES  # the words the blocker check looks past (with any "-ly" word)
# prefixes that make an irregular verb's past unsure for ``inflect.past`` ("undo", "misunderstand", "reset")
PREFIXES = ("un", "mis", "re", "over", "under", "out", "fore", "with", "up", "down")
_FAIL = re.compile(r"\b(fail|fails|failed) to ([a-z]+)\b(?![-'])")  # not "to up-regulate"
_LACK = re.compile(r"\b(lacks|lacked)\b(?! of\b)")
_NOT_HAVE = re.compile(r"\b(do|does|did) not have\b(?! to\b| been\b)")


@functools.lru_cache(maxsize=1)
def _verb_lemmas() -> frozenset[str]:
    """Every single-word verb lemma of WordNet."""
    from .wordnet import load_wordnet

    return frozenset(n for n in load_wordnet().all_lemma_names("v") if n.isalpha())


def _clear(before: str, after: str) -> bool:
    """Whether a predicate between ``before`` and ``after`` can be flipped: no blocking word before it (adverbs
    skipped), no hedging adverb, no "did or" ("did or did not have"), no negation (or "only") earlier in its clause,
    no negative-polarity word or universal quantifier after it ("did not fail in all mice").

    >>> _clear("The drug has repeatedly ", " reduce pain."), _clear("The drug clearly ", " reduce pain.")
    (False, True)
    """
    words = [word.strip(",;:()") for word in before.lower().split()]
    adverbs = 0
    while adverbs < len(words) and (words[-1 - adverbs].endswith("ly") or words[-1 - adverbs] in SKIPPED):
        adverbs += 1
    if HEDGES & set(words[len(words) - adverbs :]) or re.search(r"\b(do|does|did) or\s*$", before.lower()):
        return False
    head = " ".join(words[: len(words) - adverbs])  # the blocker check skips adverbs, the negation check does not
    allowed = clause_allows_flip(head, BLOCKERS) and clause_allows_flip(before, set())  # ("The drug only fails to")
    clause_after = rest_of_clause(after)
    return allowed and not POLARITY.search(clause_after) and not UNIVERSAL.search(clause_after)


def _unsure_past(verb: str) -> bool:
    """Whether ``inflect.past`` may get ``verb`` wrong: "-c" verbs ("mimic") and an irregular verb behind a prefix
    ("undo", "misunderstand"), unless the irregular list has the whole word."""
    if verb.endswith("c"):
        return True
    if is_irregular(verb):
        return False
    return any(verb.startswith(p) and is_irregular(verb[len(p) :]) for p in PREFIXES)


def _fail_forms(sentence: str) -> tuple[str, str, str, str] | None:
    """(with "not", with "fail", affirmative, verb) of the first "fail(s/ed) to V" that can be flipped."""
    for match in _FAIL.finditer(sentence):
        fail, verb = match.group(1), match.group(2)
        before, after = sentence[: match.start()], sentence[match.end() :]
        if verb in ("be", "have") or verb not in _verb_lemmas() or _unsure_past(verb) or not _clear(before, after):
            continue
        clause = rest_of_clause(after)
        if any(word in _verb_lemmas() for word in re.findall(r"\b(?:and|or)\s+([a-z]+)", clause)):
            continue  # "failed to reduce or prevent", "failed to bind DNA or activate X": a second verb stays bare
        tag = FAIL[fail]
        if tag == "VBP" and MODALS & set(re.findall(r"[a-z]+", re.split(r"[,;:]", before)[-1].lower())):
            continue  # "may grow but fail to divide": "do not divide" would drop the modal
        flipped = {"VBP": verb, "VBZ": third_person(verb), "VBD": past(verb)}[tag]
        return f"{before}{DO[tag]} not {verb}{after}", sentence, f"{before}{flipped}{after}", verb
    return None


def _lack_forms(sentence: str) -> tuple[str, str, str, str] | None:
    """(with "not", with "lack", affirmative, "have") of the first "lacks X" or "does not have X" that can be
    flipped, whichever the sentence holds."""
    for pattern, lacked in ((_LACK, True), (_NOT_HAVE, False)):
        for match in pattern.finditer(sentence):
            before, after = sentence[: match.start()], sentence[match.end() :]
            if not re.match(r"\s+[A-Za-z]", after) or not _clear(before, after):
                continue
            tag = LACK[match.group(1)] if lacked else DO_TAGS[match.group(1)]
            with_not, with_lack = f"{before}{DO[tag]} not have{after}", f"{before}{LACK_FORMS[tag]}{after}"
            return with_not, with_lack, f"{before}{HAVE[tag]}{after}", "have"
    return None


def lexical_negations(sentences: Iterable[str]) -> pd.DataFrame:
    """Two triplets per edited sentence (one edit each), as :func:`.affixal.reworded_negations` writes them:
    anchor = negated one way, positive = negated the other way, negative = the affirmative; ``direction`` is
    "not->lexical" (anchor has "not") or "lexical->not"; ``antonym`` is the lexical negative ("fail", "lack",
    "absent").

    >>> t = lexical_negations(["The drug failed to reduce mortality.", "The protein lacks a signal peptide."])
    >>> t[["anchor", "positive", "negative"]].values.tolist()[::2]  # doctest: +NORMALIZE_WHITESPACE
    [['The drug did not reduce mortality.', 'The drug failed to reduce mortality.', 'The drug reduced mortality.'],
     ['The protein does not have a signal peptide.', 'The protein lacks a signal peptide.',
      'The protein has a signal peptide.']]
    """
    rows = []
    rest = []
    for sentence in sentences:
        if CONCESSIVE.search(sentence):
            continue
        for family, antonym in ((_fail_forms, "fail"), (_lack_forms, "lack")):  # the first family that edits it
            forms = family(sentence)
            if forms is not None:
                rows += both_directions(*forms[:3], DIRECTIONS, forms[3], antonym, sentence)
                break
        else:
            rest.append(sentence)
    rest = [sentence for sentence in rest if not re.search(r"\b(absent|present|alive|dead) from\b", sentence, re.I)]
    adjectives = reworded_negations(rest, pairs=LEXICAL_ADJECTIVES, directions=DIRECTIONS)
    frames = [frame for frame in (pd.DataFrame(rows, columns=COLUMNS), adjectives) if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
