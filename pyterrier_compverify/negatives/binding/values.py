"""Binding by value swaps: exchange two percentages of a sentence, so each lands on the other's entity."""

from __future__ import annotations

from ..edit import Candidate
from ..lexicon import DISTRIBUTION_WORDS, INTERVAL_LABELS, INTERVAL_WORDS, LIST_WORDS, PERCENT_SIGNS, SPREAD_LABELS
from .swaps import swap_words


def _percentage(token) -> bool:
    """Whether a number gives a share of something ("45% of patients", "a 12 percent drop"), not the bound of an
    interval ("from 10% to 20%", "80-92%"), a threshold ("> 20%"), a spread ("± 2%") or a confidence level
    ("95% CI")."""
    doc, i = token.doc, token.i
    if not token.like_num or i + 1 >= len(doc) or doc[i + 1].lower_ not in PERCENT_SIGNS:
        return False
    before = doc[i - 1].lower_ if i > 0 else ""
    if before in ("(", "[") and i > 1 and doc[i - 2].lower_ in PERCENT_SIGNS:  # "20.7% (8.6%)": a spread
        return False
    if before in INTERVAL_WORDS or (before == "and" and any(t.lower_ == "between" for t in doc[max(0, i - 4) : i])):
        return False
    after = doc[i + 2] if i + 2 < len(doc) else None
    if (after is not None and after.lower_ in INTERVAL_LABELS) or _in_spread_note(token):
        return False
    return not (after is not None and after.text in ("-", "–", "to") and i + 3 < len(doc) and doc[i + 3].like_num)


def _in_spread_note(token) -> bool:
    """Whether a number sits in a bracketed note on a spread after its label ("(95% CI: 0.5%, 7.1%)", "[IQR 20%,
    31%]"): a bound, not a value of its own."""
    for t in reversed(token.doc[: token.i]):
        if t.text in (")", "]"):
            return False
        if t.text in ("(", "["):
            return any(w.lower_ in SPREAD_LABELS for w in token.doc[t.i + 1 : token.i])
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


def swap_values(doc) -> list[Candidate]:
    """Swap two percentages of one sentence, so each figure lands on the other's entity ("mortality was 12% with
    the drug and 25% with placebo" -> "25% with the drug and 12% with placebo"). Two figures in a bare list
    ("85% and 90%") are bound to their entities only by "respectively"."""
    values = [t for t in doc if _percentage(t)]
    if len(values) < 2 or any(t.lemma_.lower() in DISTRIBUTION_WORDS for t in doc):  # "75th percentile": cut-offs
        return []
    out = []
    for first, second in zip(values, values[1:]):
        if _value(first) is None or _value(first) == _value(second):
            continue
        bare_list = all(t.lower_ in LIST_WORDS for t in _outside_brackets(doc[first.i + 1 : second.i]))
        if bare_list and not _respectively_after(second):
            continue
        out.append(swap_words(doc, first, second, "binding/swap-values"))
    return out
