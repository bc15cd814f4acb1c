"""Reworded negation with a lexical negative: the same predicate said with "not" and with a word that means "not"
it, against the affirmative. Three families, each written three ways:

- "failed to reduce" / "did not reduce" / "reduced" (also "fails to" / "does not", "fail to" / "do not");
- "lacks a domain" / "does not have a domain" / "has a domain" (also "lacked" / "did not have"), read either way;
- "is absent" / "is not present" / "is present" (copular complementaries, ``LEXICAL_ADJECTIVES``, by
  :func:`.affixal.reworded_negations`), read either way.

CondaQA's paraphrase edits reword a negation in such ways, not only by an affix (:mod:`.affixal`). "failed to V" is
only read one way: "did not V" says "failed to V" only where V was tried ("did not smoke" is not "failed to smoke").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import pandas as pd

from .affixal import COLUMNS, CONCESSIVE, clause_allows_flip, reworded_negations
from .inflect import past, third_person

# "not true" / "false" was left out: "this is not true for all viruses" is not "this is false for all viruses"
LEXICAL_ADJECTIVES = {"present": "absent", "alive": "dead"}
DIRECTIONS = ("not->lexical", "lexical->not")
DO = {"VBP": "do", "VBZ": "does", "VBD": "did"}
FAIL = {"fail": "VBP", "fails": "VBZ", "failed": "VBD"}
LACK = {"lack": "VBP", "lacks": "VBZ", "lacked": "VBD"}
HAVE = {"VBP": "have", "VBZ": "has", "VBD": "had"}
# a word before "failed" / "lacks" that makes it a participle, an infinitive or a noun ("had failed to", "to lack",
# "a lack"), or a negation already ("not fail to")
BLOCKERS = set(
    "to has have had having may might can could will would shall should must not never did does do be been being "
    "is are was were a an the this its their his her our my your any no some lack of".split()
)
# negative-polarity words after the predicate: "did not show any effect" has no affirmative "showed any effect"
POLARITY = re.compile(r"\b(any|anything|anyone|anybody|anywhere|either|yet|ever|at all)\b", re.I)
_FAIL = re.compile(r"\b(fail|fails|failed) to ([a-z]+)\b")
_LACK = re.compile(r"\b(lacks|lacked)\b(?! of\b)")
_NOT_HAVE = re.compile(r"\b(do|does|did) not have\b(?! to\b| been\b)")


@functools.lru_cache(maxsize=1)
def _verb_lemmas() -> frozenset[str]:
    """Every single-word verb lemma of WordNet."""
    from .wordnet import load_wordnet

    return frozenset(n for n in load_wordnet().all_lemma_names("v") if n.isalpha())


def _clear(before: str, after: str) -> bool:
    """Whether a predicate between ``before`` and ``after`` can be flipped: no blocking word right before it, no
    negation (or "only") earlier in its clause, no negative-polarity word after it."""
    return clause_allows_flip(before, BLOCKERS) and not POLARITY.search(re.split(r"[,;:.]", after)[0])


def _fail_forms(sentence: str) -> tuple[str, str, str, str] | None:
    """(with "not", with "fail", affirmative, verb) of the first "fail(s/ed) to V" that can be flipped."""
    for match in _FAIL.finditer(sentence):
        fail, verb = match.group(1), match.group(2)
        before, after = sentence[: match.start()], sentence[match.end() :]
        if verb in ("be", "have") or verb not in _verb_lemmas() or not _clear(before, after):
            continue
        tag = FAIL[fail]
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
            tag = LACK[match.group(1)] if lacked else {v: k for k, v in DO.items()}[match.group(1)]
            lack = next(word for word, t in LACK.items() if t == tag)
            with_not, with_lack = f"{before}{DO[tag]} not have{after}", f"{before}{lack}{after}"
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
    sentences = list(sentences)
    rows = []
    rest = []
    for sentence in sentences:
        if CONCESSIVE.search(sentence):
            continue
        for forms, antonym in ((_fail_forms(sentence), "fail"), (_lack_forms(sentence), "lack")):
            if forms is not None:
                with_not, with_lexical, affirmative, word = forms
                rows.append((with_not, with_lexical, affirmative, DIRECTIONS[0], word, antonym, sentence))
                rows.append((with_lexical, with_not, affirmative, DIRECTIONS[1], word, antonym, sentence))
                break
        else:
            rest.append(sentence)
    adjectives = reworded_negations(rest, pairs=LEXICAL_ADJECTIVES, directions=DIRECTIONS)
    return pd.concat([pd.DataFrame(rows, columns=COLUMNS), adjectives], ignore_index=True)
