"""A small English inflector for the common verbs and nouns (enough to re-inflect after editing a sentence)."""

from __future__ import annotations

import re

_IRREGULAR_PAST = dict(
    pair.split(":")
    for pair in """
    arise:arose awake:awoke be:was bear:bore beat:beat become:became begin:began bend:bent bet:bet bind:bound
    bite:bit bleed:bled blow:blew break:broke breed:bred bring:brought broadcast:broadcast build:built buy:bought
    cast:cast catch:caught choose:chose cling:clung come:came cost:cost creep:crept cut:cut deal:dealt dig:dug do:did
    draw:drew drink:drank drive:drove eat:ate fall:fell feed:fed feel:felt fight:fought find:found flee:fled fly:flew
    forbid:forbade forecast:forecast foresee:foresaw forget:forgot forgive:forgave freeze:froze get:got give:gave
    go:went grind:ground grow:grew hang:hung have:had hear:heard hide:hid hit:hit hold:held hurt:hurt keep:kept
    know:knew lay:laid lead:led leave:left lend:lent let:let lie:lay light:lit lose:lost make:made mean:meant meet:met
    mislead:misled outgrow:outgrew overcome:overcame override:overrode overtake:overtook pay:paid put:put quit:quit
    read:read rebuild:rebuilt ride:rode ring:rang rise:rose run:ran say:said see:saw seek:sought sell:sold send:sent
    set:set shake:shook shed:shed shine:shone shoot:shot shrink:shrank shut:shut sing:sang sink:sank sit:sat
    sleep:slept slide:slid speak:spoke spend:spent spin:spun split:split spread:spread stand:stood steal:stole
    stick:stuck sting:stung strike:struck strive:strove swear:swore sweep:swept swim:swam swing:swung take:took
    teach:taught tear:tore tell:told think:thought throw:threw undergo:underwent understand:understood
    undertake:undertook uphold:upheld upset:upset wake:woke wear:wore weave:wove win:won wind:wound withdraw:withdrew
    withhold:withheld withstand:withstood write:wrote
    """.split()
)
_IRREGULAR_PRESENT = {"be": "is", "have": "has", "do": "does", "go": "goes"}
_DOUBLING = set(
    "occur recur incur concur refer prefer infer confer defer deter admit commit omit permit submit emit transmit "
    "control patrol compel expel propel repel excel rebel regret abet equip transfer".split()
)
_IRREGULAR_PLURAL = {"man": "men", "woman": "women", "child": "children", "person": "people", "foot": "feet",
                     "tooth": "teeth", "mouse": "mice", "goose": "geese", "ox": "oxen"}  # fmt: skip
_VOWELS = "aeiou"


def is_irregular(lemma: str) -> bool:
    """Whether the verb has an irregular past tense (in the small built-in list)."""
    return lemma.lower() in _IRREGULAR_PAST


def _doubles(lemma: str) -> bool:
    if lemma in _DOUBLING:
        return True
    # one-syllable consonant-vowel-consonant verbs: stop -> stopped, plan -> planned (but not fix, show, play)
    return len(re.findall(r"[aeiou]+", lemma)) == 1 and re.search(r"[^aeiou][aeiou][^aeiouwxy]$", lemma) is not None


def third_person(lemma: str) -> str:
    """shows, does, carries, fixes; has, is."""
    if lemma in _IRREGULAR_PRESENT:
        return _IRREGULAR_PRESENT[lemma]
    if re.search(r"(s|x|z|ch|sh|o)$", lemma):
        return lemma + "es"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ies"
    return lemma + "s"


def past(lemma: str) -> str:
    """Simple past: showed, reduced, stopped, carried; found, went (irregular list)."""
    if lemma in _IRREGULAR_PAST:
        return _IRREGULAR_PAST[lemma]
    if lemma.endswith("e"):
        return lemma + "d"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ied"
    if _doubles(lemma):
        return lemma + lemma[-1] + "ed"
    return lemma + "ed"


def present_participle(lemma: str) -> str:
    """showing, reducing, stopping, dying."""
    if lemma.endswith("ie"):
        return lemma[:-2] + "ying"
    if lemma.endswith("e") and not lemma.endswith(("ee", "ye", "oe")) and len(lemma) > 2:
        return lemma[:-1] + "ing"
    if _doubles(lemma):
        return lemma + lemma[-1] + "ing"
    return lemma + "ing"


def inflect_verb(lemma: str, tag: str) -> str | None:
    """The form of ``lemma`` for a Penn tag (VB, VBP, VBZ, VBD, VBN, VBG); None when unsure (irregular VBN)."""
    lemma = lemma.lower()
    if tag in ("VB", "VBP"):
        return "are" if lemma == "be" and tag == "VBP" else lemma
    if tag == "VBZ":
        return third_person(lemma)
    if tag == "VBD":
        return past(lemma)
    if tag == "VBN":
        return None if lemma in _IRREGULAR_PAST else past(lemma)
    if tag == "VBG":
        return present_participle(lemma)
    return None


def plural(noun: str) -> str | None:
    """cats, boxes, studies, analyses, men; None for Latin-looking words (datum, focus) that are easy to get wrong."""
    if noun in _IRREGULAR_PLURAL:
        return _IRREGULAR_PLURAL[noun]
    if re.search(r"(um|us|on|a|ex|ix)$", noun):
        return None
    if noun.endswith("is"):
        return noun[:-2] + "es"
    if re.search(r"(s|x|z|ch|sh)$", noun):
        return noun + "es"
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    return noun + "s"


def indefinite_article(word: str, capital: bool = False) -> str:
    """'a' or 'an' for the next word (by its sound, with the usual exceptions)."""
    w = word.strip()
    low = w.lower()
    digits = re.match(r"[\d,]+", w)
    if digits:  # numbers by their spoken form: an 8% rise, an 11-fold, an 18,000, a 110
        whole = digits.group().replace(",", "")
        vowel = whole.startswith("8") or (len(whole) % 3 == 2 and whole[:2] in ("11", "18"))
    elif w.isupper() and len(w) > 1:  # acronyms are read letter by letter: an MRI, a CT scan
        vowel = w[0] in "AEFHILMNORSX"
    elif re.match(r"(uni|use|usu|uti|uro|eu|one|once|ur[aeiou])", low):
        vowel = False
    elif re.match(r"(hour|honest|honou?r|heir)", low):
        vowel = True
    else:
        vowel = low[:1] in _VOWELS
    article = "an" if vowel else "a"
    return article.capitalize() if capital else article
