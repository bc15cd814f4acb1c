"""The verifier's training mix: caption triplets with real paraphrase positives, structural edits of scientific
sentences, and retrieval rows that keep ranking; laid out in batches of one source each.

Every row is (anchor, positive, negative, source, positive_kind). Sources:
- ``caption``: anchor = a caption of a training image; positive = another caption of the same image (a human
  paraphrase) or a meaning-kept edit of the anchor; negative = a near-miss edit of the anchor (swap, replace,
  add, negate, spatial, count);
- ``structural``: anchor = a sentence; positive = its meaning-kept (paraphrase) edit; negative = a
  negation / binding / spatial edit of it (``compverify negatives`` output);
- ``retrieval``: (query, relevant passage, BM25 hard negative) rows, so ranking is kept;
- ``granularity``: anchor = a keyword or phrase query made from a caption; positive = that caption (it says more
  than the query, and is still a match); negative = a near-miss edit of the caption that changes a word of the
  query (so "more words" is not what the head learns to punish, a changed detail is).
- ``reworded``: anchor = a sentence whose predicate is negated one way ("is not clear" / "is unclear"); positive =
  negated the other way; negative = the affirmative ("is clear"), which shares more words with the anchor
  (``negatives.affixal``).
``identity=True`` (an ablation) makes the anchor its own positive.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

import numpy as np
import pandas as pd

COLUMNS = ["anchor", "positive", "negative", "source", "positive_kind", "negative_kind"]


def caption_rows(
    captions: pd.DataFrame,
    edits: pd.DataFrame,
    *,
    paraphrase_share: float = 0.5,
    identity: bool = False,
    balance_kinds: bool = True,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per image: a random anchor caption that has a near-miss edit, its positive and that edit.
    With ``balance_kinds``, the edit's kind is drawn among the anchor's kinds with weight 1 / (the kind's count
    over all edits), so rare kinds (swaps) are not drowned by common ones (negation).

    Args:
        captions: ``image, caption`` (several captions per image).
        edits: ``caption, edit, kind`` with ``kind == "paraphrase"`` for meaning-kept edits, else a near-miss.
        paraphrase_share: share of rows whose positive is a meaning-kept edit of the anchor (where it has one)
            rather than another caption of the image.
    """
    rng = np.random.default_rng(seed)
    keep = edits["kind"] == "paraphrase"
    near = _lists_by(edits[~keep], "caption", ["edit", "kind"])
    rarity = (1.0 / edits[~keep]["kind"].value_counts()).to_dict() if balance_kinds else {}
    para = {
        caption: [edit for (edit,) in rows] for caption, rows in _lists_by(edits[keep], "caption", ["edit"]).items()
    }
    rows = []
    for _image, group in captions.groupby("image", sort=True):
        texts = group["caption"].tolist()
        usable = [t for t in texts if t in near]
        if not usable or len(set(texts)) < 2:  # no other caption to be the positive (all alike: it crashed)
            continue
        anchor = usable[rng.integers(len(usable))]
        options = near[anchor]
        weights = np.array([rarity.get(kind, 1.0) for _, kind in options])
        negative, negative_kind = options[rng.choice(len(options), p=weights / weights.sum())]
        if identity:
            positive, kind = anchor, "identity"
        elif anchor in para and rng.random() < paraphrase_share:
            positive, kind = para[anchor][rng.integers(len(para[anchor]))], "paraphrase"
        else:
            others = [t for t in texts if t != anchor]
            positive, kind = others[rng.integers(len(others))], "caption"
        rows.append((anchor, positive, negative, "caption", kind, negative_kind))
    return pd.DataFrame(rows, columns=COLUMNS)


def _lists_by(frame: pd.DataFrame, key: str, columns: list[str]) -> dict[str, list[tuple]]:
    """{key value: [(columns...) of its rows, in frame order]}: a plain pass over the columns (a pandas group-by
    apply building tuples took minutes per epoch over 143k caption edits).

    >>> _lists_by(pd.DataFrame({"k": ["a", "b", "a"], "v": [1, 2, 3]}), "k", ["v"])
    {'a': [(1,), (3,)], 'b': [(2,)]}
    """
    out: dict[str, list[tuple]] = {}
    for k, *values in zip(frame[key], *(frame[c] for c in columns)):
        out.setdefault(k, []).append(tuple(values))
    return out


def structural_rows(edits: pd.DataFrame, *, identity: bool = False, seed: int = 0) -> pd.DataFrame:
    """(sentence, its paraphrase edit, one of its near-miss edits) for every sentence that has both.

    ``edits``: ``sentence1, sentence2, category`` as written by ``compverify negatives`` (``--all-edits``);
    categories that keep meaning come from the negatives registry.
    """
    from ..negatives.registry import MEANING_KEEPING

    rng = np.random.default_rng(seed)
    keep = edits["category"].isin(MEANING_KEEPING)
    para = {s: [p for (p,) in rows] for s, rows in _lists_by(edits[keep], "sentence1", ["sentence2"]).items()}
    near = _lists_by(edits[~keep], "sentence1", ["sentence2", "category"])
    rows = []
    for sentence in sorted(set(para) & set(near)):
        paraphrase = para[sentence][rng.integers(len(para[sentence]))]  # drawn either way: same negatives
        negative, category = near[sentence][rng.integers(len(near[sentence]))]
        positive = sentence if identity else paraphrase
        rows.append((sentence, positive, negative, "structural", "identity" if identity else "paraphrase", category))
    return pd.DataFrame(rows, columns=COLUMNS)


def retrieval_rows(triplets: pd.DataFrame) -> pd.DataFrame:
    """``anchor, positive, negative`` retrieval triplets (e.g. ``training.data.retrieval_triplets``) as mix rows."""
    out = triplets[["anchor", "positive", "negative"]].copy()
    return out.assign(source="retrieval", positive_kind="relevant", negative_kind="bm25")[COLUMNS]


def reworded_rows(
    triplets: pd.DataFrame, *, seed: int = 0, passages: pd.DataFrame | None = None, passage_share: float = 0.0
) -> pd.DataFrame:
    """``negatives.affixal.reworded_negations`` (or ``negatives.lexical.lexical_negations``) triplets as mix rows,
    one direction per sentence drawn at random (both in one batch would make each row's anchor another row's
    in-batch negative).

    ``passages``: the same triplets inside a window of their abstract (``training.data.triplets_in_passages``;
    ``sentence`` and ``direction`` columns), for some sentences; each drawn row whose sentence has one is taken in
    its passage form with probability ``passage_share`` (positive kind "reworded negation in a passage")."""
    rng = np.random.default_rng(seed)
    one = triplets.groupby("sentence", sort=True).nth(0).index  # the first row of each sentence, or the next one:
    # the two directions are adjacent rows, as reworded_negations writes them
    in_order = triplets.index.equals(pd.RangeIndex(len(triplets)))
    if not in_order or not (triplets["sentence"].shift(-1)[one] == triplets["sentence"][one]).all():
        raise ValueError("reworded_rows needs reworded_negations' rows in their order (both directions, reset_index)")
    pick = one + rng.integers(0, 2, len(one))
    texts = ["anchor", "positive", "negative"]
    out = triplets.loc[pick, texts].reset_index(drop=True).assign(positive_kind="reworded negation")
    if passages is not None and passage_share > 0:
        placed = passages.drop_duplicates(["sentence", "direction"]).set_index(["sentence", "direction"])[texts]
        keys = pd.MultiIndex.from_frame(triplets.loc[pick, ["sentence", "direction"]])
        use = keys.isin(placed.index) & (rng.random(len(pick)) < passage_share)
        inside = placed.loc[keys[use]].to_numpy()
        if not all(plain in passage for plain, passage in zip(out.loc[use, texts].to_numpy().ravel(), inside.ravel())):
            raise ValueError("passages do not hold these rows' texts: rebuild them from these triplets")
        out.loc[use, texts] = inside
        out.loc[use, "positive_kind"] = "reworded negation in a passage"
    return out.assign(source="reworded", negative_kind="affirmative")[COLUMNS]


ADDITIONS = ("add_att", "add_obj")  # a caption with an added detail still matches a shorter query
_WORD = re.compile(r"[a-z]+")


def replaced_words(caption: str, edit: str) -> set[str]:
    """Lower-cased words of ``caption`` that ``edit`` replaces or deletes (insertions alone give none).

    >>> sorted(replaced_words("A black dog chases a white cat", "A white dog chases a black cat"))
    ['black', 'white']
    >>> replaced_words("A dog runs", "A big dog runs")
    set()
    """
    a, b = _WORD.findall(caption.lower()), _WORD.findall(edit.lower())
    changed = set()
    for op, i1, i2, _, _ in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            changed.update(a[i1:i2])
    return changed


def granularity_rows(queries: pd.DataFrame, edits: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """One row per (query, caption) with a near-miss edit that touches the query: anchor = the query, positive =
    the caption it came from, negative = an edit of that caption replacing one of the query's words. Added-detail
    edits are never negatives here (the caption says more than the query and still matches), nor are edits that
    leave every query word in place (a negated verb does not unmake a keyword match).

    Args:
        queries: ``caption, query`` (e.g. keyword and phrase queries of ``querygen.KeywordQueries``).
        edits: ``caption, edit, kind`` as for :func:`caption_rows` (paraphrases and additions are skipped).

    >>> q = pd.DataFrame({"caption": ["A black dog runs"], "query": ["black dog"]})
    >>> e = pd.DataFrame({"caption": ["A black dog runs"] * 3, "edit": ["A big black dog runs", "A white dog runs",
    ...     "A black dog sits"], "kind": ["add_att", "replace_att", "replace_rel"]})
    >>> granularity_rows(q, e)[["anchor", "positive", "negative", "negative_kind"]].values.tolist()
    [['black dog', 'A black dog runs', 'A white dog runs', 'replace_att']]
    """
    rng = np.random.default_rng(seed)
    usable = edits[~edits["kind"].isin(("paraphrase", *ADDITIONS))]
    by_caption = _lists_by(usable, "caption", ["edit", "kind"])
    rows = []
    for caption, query in queries[["caption", "query"]].itertuples(index=False):
        words = set(_WORD.findall(query.lower()))
        touching = [(edit, kind) for edit, kind in by_caption.get(caption, []) if words & replaced_words(caption, edit)]
        if touching:
            edit, kind = touching[rng.integers(len(touching))]
            rows.append((query, caption, edit, "granularity", "superset", kind))
    return pd.DataFrame(rows, columns=COLUMNS)


def arrange_batches(
    sources: dict[str, pd.DataFrame], shares: dict[str, float], *, steps: int, batch_size: int, seed: int = 0
) -> pd.DataFrame:
    """``steps * batch_size`` rows in training order: each block of ``batch_size`` rows comes from one source
    (so in-batch negatives are of the same kind and no batch pads short captions to passage length), sources
    drawn by ``shares``; a source's rows are reshuffled each time they run out. Train with ``shuffle=False``.

    A source is a frame or a function ``epoch -> frame`` (called again, with the next epoch, each time its rows
    run out: e.g. a new anchor caption per image).

    >>> a = pd.DataFrame({"anchor": list("abcd"), "source": "x"})
    >>> b = lambda epoch: pd.DataFrame({"anchor": [f"{w}{epoch}" for w in "WXYZ"], "source": "y"})
    >>> arranged = arrange_batches({"x": a, "y": b}, {"x": 0.5, "y": 0.5}, steps=10, batch_size=2)
    >>> len(arranged), int(arranged.groupby(arranged.index // 2)["source"].nunique().max())
    (20, 1)
    """
    unknown = sorted(n for n, share in shares.items() if share > 0 and n not in sources)
    if unknown:
        raise ValueError(f"shares name no source: {', '.join(unknown)} (the sources are {', '.join(sources)})")
    rng = np.random.default_rng(seed)
    epoch = {n: 0 for n in sources}
    frames = {n: s(0) if callable(s) else s for n, s in sources.items()}
    names = [n for n in sources if shares.get(n, 0) > 0]
    if not names:
        raise ValueError("no source has a positive share")
    short = [f"{n} ({len(frames[n])} rows)" for n in names if len(frames[n]) < batch_size]
    if short:  # dropping it would train on another mix than the one asked for
        raise ValueError(
            f"source(s) with fewer rows than one batch of {batch_size}: {', '.join(short)}; lower the batch size or "
            "give them share 0"
        )
    weights = np.array([shares[n] for n in names], dtype=float)
    picks = rng.choice(len(names), size=steps, p=weights / weights.sum())
    cursors = {n: 0 for n in names}
    orders = {n: rng.permutation(len(frames[n])) for n in names}
    blocks = []
    for pick in picks:
        name = names[pick]
        if cursors[name] + batch_size > len(orders[name]):
            epoch[name] += 1
            if callable(sources[name]):
                frames[name] = sources[name](epoch[name])
                if len(frames[name]) < batch_size:  # a short block would mix it with the next source's rows
                    raise ValueError(
                        f"source {name} gave {len(frames[name])} rows at epoch {epoch[name]}, fewer than one batch of "
                        f"{batch_size}; lower the batch size or give it share 0"
                    )
            orders[name], cursors[name] = rng.permutation(len(frames[name])), 0
        idx = orders[name][cursors[name] : cursors[name] + batch_size]
        cursors[name] += batch_size
        blocks.append(frames[name].iloc[idx])
    return pd.concat(blocks, ignore_index=True)
