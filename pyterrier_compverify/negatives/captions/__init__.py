"""Caption near-misses and paraphrases: the edits people make when they describe a scene wrongly, and edits that keep
the scene, each labelled with its ``kind`` and ``rule``.

Near-miss kinds: ``swap_att`` (two nouns exchange attributes), ``swap_obj`` (agent and patient exchange places),
``replace_att`` / ``replace_obj`` / ``replace_rel`` (an attribute, object or relation becomes a co-hyponym or
antonym), ``add_att`` / ``add_obj`` (an unstated attribute or object is added), ``negate``, ``spatial`` (a spatial
relation is flipped) and ``count``. Meaning-kept kind: ``paraphrase`` (article, synonym, conjunct order, aspect,
"in" <-> "wearing"). The rules read spaCy's dependency parse so that edits stay grammatical; the word lists are
written for everyday scenes (:mod:`.lexicon`), with WordNet to class unlisted nouns.

Example::

    from pyterrier_compverify.datasets.flickr8k import flickr8k_captions
    from pyterrier_compverify.negatives.captions import caption_edits, caption_triplets
    edits = caption_edits(["A black dog chases a white cat ."], seed=0)
    triplets = caption_triplets(flickr8k_captions("train"), seed=0)
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable

import pandas as pd

from .paraphrase import paraphrase
from .rules import NEAR_MISS_RULES

NEAR_MISS_KINDS = tuple(NEAR_MISS_RULES)
KINDS = (*NEAR_MISS_KINDS, "paraphrase")
COLUMNS = ["caption", "edit", "kind", "rule"]
TRIPLET_COLUMNS = ["anchor", "positive", "negative", "positive_kind", "negative_kind", "negative_rule", "image"]
_RULES = {**NEAR_MISS_RULES, "paraphrase": paraphrase}


def _parser():
    from ...spacy_english import english_parser

    return english_parser()


def _check_kinds(kinds) -> tuple[str, ...]:
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown caption edit kinds {unknown}; choose from {KINDS}")
    return kinds


def doc_edits(doc, kinds: Iterable[str] = KINDS) -> list[tuple[str, str, str]]:
    """Every candidate ``(edit, kind, rule)`` of one parsed caption (distinct, and different from the caption)."""
    seen, out = {doc.text.strip()}, []
    for kind in _check_kinds(kinds):
        for edit, k, rule in _RULES[kind](doc):
            if edit not in seen:
                seen.add(edit)
                out.append((edit, k, rule))
    return out


def parse(captions: list[str], nlp=None, batch_size: int = 256, n_process: int = 1) -> dict[str, object]:
    """caption -> spaCy Doc, each distinct caption parsed once (named entities are not needed and not run)."""
    nlp = nlp or _parser()
    distinct = list(dict.fromkeys(c for c in captions if c.strip()))
    disable = [p for p in ("ner",) if p in nlp.pipe_names]
    docs = nlp.pipe(distinct, batch_size=batch_size, n_process=n_process, disable=disable)
    return dict(zip(distinct, docs))


def _pick(candidates: list[tuple[str, str, str]], rng: random.Random, per_kind: int | None):
    """Up to ``per_kind`` edits of each kind: a rule drawn at random among those that fired, then one of its edits."""
    by_kind: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for edit, kind, rule in candidates:
        by_kind[kind][rule].append((edit, kind, rule))
    picked = []
    for kind in sorted(by_kind):
        rules = {r: list(v) for r, v in sorted(by_kind[kind].items())}
        for _ in range(sum(map(len, rules.values())) if per_kind is None else per_kind):
            if not rules:
                break
            rule = rng.choice(sorted(rules))
            picked.append(rules[rule].pop(rng.randrange(len(rules[rule]))))
            if not rules[rule]:
                del rules[rule]
    return picked


def caption_edits(
    captions: Iterable[str],
    kinds: Iterable[str] = KINDS,
    seed: int = 0,
    *,
    per_kind: int | None = 1,
    nlp=None,
    batch_size: int = 256,
    n_process: int = 1,
) -> pd.DataFrame:
    """Labelled edits of captions: ``caption, edit, kind, rule``, up to ``per_kind`` edits of each kind per caption
    (``None``: all), picked reproducibly from ``seed`` and the caption's position.

    A caption with nothing to edit is skipped and counted: ``result.attrs`` holds ``n_captions``, ``skipped`` (captions
    with no edit of any requested kind) and ``skipped_by_kind`` (captions with no edit of that kind).
    """
    kinds = _check_kinds(kinds)
    captions = [str(c) for c in captions]
    docs = parse(captions, nlp=nlp, batch_size=batch_size, n_process=n_process)
    rows, skipped, missing = [], 0, Counter()
    cache: dict[str, list] = {}
    for i, caption in enumerate(captions):
        doc = docs.get(caption)
        if doc is not None and caption not in cache:
            cache[caption] = doc_edits(doc, kinds)
        candidates = cache.get(caption, [])
        picked = _pick(candidates, random.Random(f"{seed}:{i}"), per_kind)
        found = {kind for _, kind, _ in picked}
        missing.update(k for k in kinds if k not in found)
        skipped += not picked
        rows.extend((caption, edit, kind, rule) for edit, kind, rule in picked)
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.attrs.update(n_captions=len(captions), skipped=skipped, skipped_by_kind={k: missing[k] for k in kinds})
    return table


def caption_triplets(
    captions: pd.DataFrame,
    seed: int = 0,
    *,
    kinds: Iterable[str] = NEAR_MISS_KINDS,
    positive_kinds: Iterable[str] = ("caption", "paraphrase"),
    edits: pd.DataFrame | None = None,
    balance: bool = True,
    nlp=None,
) -> pd.DataFrame:
    """Training triplets from captions with an ``image`` column: ``anchor, positive, negative, positive_kind,
    negative_kind, negative_rule, image``.

    Each anchor caption gets one near-miss edit of itself (the kind drawn among those it has; with ``balance``, the
    kind used least so far) and one row per positive kind: ``caption`` = another caption of the same image,
    ``paraphrase`` = a meaning-kept edit of the anchor. Anchors without a near-miss are skipped and counted in
    ``result.attrs["skipped"]``; ``edits`` may pass a table from :func:`caption_edits` to avoid parsing again.
    """
    missing_columns = {"image", "caption"} - set(captions.columns)
    if missing_columns:
        raise ValueError(f"caption_triplets needs columns 'image' and 'caption'; missing {sorted(missing_columns)}")
    kinds = _check_kinds(kinds)
    positive_kinds = tuple(positive_kinds)
    if set(positive_kinds) - {"caption", "paraphrase"}:
        raise ValueError(f"positive kinds are 'caption' and 'paraphrase', not {positive_kinds}")
    if "paraphrase" in kinds:
        raise ValueError("'paraphrase' edits keep the meaning: they are positives, not negatives")
    if edits is None:
        wanted = (*kinds, "paraphrase") if "paraphrase" in positive_kinds else kinds
        edits = caption_edits(pd.unique(captions["caption"]), kinds=wanted, seed=seed, nlp=nlp)
    negatives: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    paraphrases: dict[str, list[str]] = defaultdict(list)
    for caption, edit, kind, rule in edits[COLUMNS].itertuples(index=False):
        if kind == "paraphrase":
            paraphrases[caption].append(edit)
        elif kind in kinds:
            negatives[caption][kind].append((edit, rule))
    by_image = captions.groupby("image", sort=False)["caption"].apply(list).to_dict()
    rng = random.Random(seed)
    used: Counter = Counter()
    rows, skipped, no_positive = [], 0, Counter()
    for image, anchor in captions[["image", "caption"]].itertuples(index=False):
        options = negatives.get(anchor)
        if not options:
            skipped += 1
            continue
        available = sorted(options)
        if balance:
            fewest = min(used[k] for k in available)
            kind = rng.choice([k for k in available if used[k] == fewest])
        else:
            kind = rng.choice(available)
        used[kind] += 1
        negative, rule = rng.choice(options[kind])
        positives = {
            "caption": [c for c in by_image[image] if c != anchor],
            "paraphrase": paraphrases.get(anchor, []),
        }
        for positive_kind in positive_kinds:
            if positives[positive_kind]:
                positive = rng.choice(positives[positive_kind])
                rows.append((anchor, positive, negative, positive_kind, kind, rule, image))
            else:
                no_positive[positive_kind] += 1
    table = pd.DataFrame(rows, columns=TRIPLET_COLUMNS)
    table.attrs.update(n_anchors=len(captions), skipped=skipped, no_positive=dict(no_positive))
    return table


__all__ = ["COLUMNS", "KINDS", "NEAR_MISS_KINDS", "TRIPLET_COLUMNS", "caption_edits", "caption_triplets", "doc_edits"]
