"""Does the antonym probe's signal reach CondaQA? A fixed, untuned measurement (issue 13: what a states head
over aligned token pairs could give there; nothing here feeds training, the serving form or a threshold).

The probe of ``antonym_probe.py`` (logistic regression on [h_a, h_b, h_a * h_b, |h_a - h_b|] of a word and its
replacement, frozen MiniLM last-layer states) is trained on *all* the Flickr8k train WordNet swaps. A pair of
texts (a, b) then gets a contrast score: each token of b is aligned to its best-matching token of a (cosine of
the states, as the map does); tokens whose best cosine is below 0.8 (the "unmatched" line fixed in
``condaqa_map_evidence.py``) are the changed ones; contrast = the probe's highest "flipped" probability over
them (0 when none changed). A CondaQA triplet (passage a, paraphrase edit p, affirmative / scope edit n) is won
when contrast(a, p) < contrast(a, n); ties lose. Max length 256.

    COMPVERIFY_DATA=/path/to/data python experiments/condaqa_contrast.py

Writes experiments/results/condaqa-contrast.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from antonym_probe import swap_states
from sklearn.linear_model import LogisticRegression

import pyterrier_compverify as cv
from pyterrier_compverify.datasets.nearmiss import condaqa_triplets
from pyterrier_compverify.reporting import refuse_overwrite, write_table

UNMATCHED = 0.8  # fixed beforehand (condaqa_map_evidence.py), not tuned here


def pair_features(h_a: np.ndarray, h_b: np.ndarray) -> np.ndarray:
    return np.concatenate([h_a, h_b, h_a * h_b, np.abs(h_a - h_b)], axis=1)


def contrast(probe: LogisticRegression, a: torch.Tensor, b: torch.Tensor) -> tuple[float, int]:
    """(highest flipped probability over b's changed tokens, how many changed) for token states a (m, d), b (n, d)."""
    a, b = torch.nn.functional.normalize(a.float(), dim=-1), torch.nn.functional.normalize(b.float(), dim=-1)
    best, match = (b @ a.T).max(dim=1)
    changed = (best < UNMATCHED).nonzero()[:, 0]
    if len(changed) == 0:
        return 0.0, 0
    features = pair_features(a[match[changed]].numpy(), b[changed].numpy())
    return float(probe.predict_proba(features)[:, 1].max()), len(changed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-per-word", type=int, default=8)
    parser.add_argument("--out", default="experiments/results/condaqa-contrast")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    started = time.time()
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=256, verbose=False)
    _, table, h_a, h_b = swap_states(encoder, args.max_per_word)
    label = (table["kind"] == "antonym").to_numpy().astype(int)
    probe = LogisticRegression(C=1.0, max_iter=3000).fit(pair_features(h_a, h_b), label)

    triplets = condaqa_triplets()
    texts = sorted(set(triplets[["anchor", "positive", "near_miss"]].to_numpy().ravel()))
    states = dict(zip(texts, encoder.encode(texts, verbose=False).token_states))
    rows = []
    for t in triplets.itertuples():
        pos, pos_changed = contrast(probe, states[t.anchor], states[t.positive])
        neg, neg_changed = contrast(probe, states[t.anchor], states[t.near_miss])
        rows.append({"category": t.category, "win": pos < neg, "tie": pos == neg, "pos_contrast": pos,
                     "neg_contrast": neg, "pos_changed": pos_changed, "neg_changed": neg_changed})  # fmt: skip
    per = pd.DataFrame(rows)
    frame = per.groupby("category").agg(
        triplets=("win", "size"),
        win_rate=("win", "mean"),
        tie_rate=("tie", "mean"),
        mean_contrast_positive=("pos_contrast", "mean"),
        mean_contrast_near_miss=("neg_contrast", "mean"),
        median_changed_positive=("pos_changed", "median"),
        median_changed_near_miss=("neg_changed", "median"),
    )
    frame = frame.reset_index().round(4)
    markdown = frame.to_markdown(index=False) + (
        f"\n\nProbe trained on {len(table)} Flickr8k train swaps of {table['word'].nunique()} words "
        f"(antonym share {label.mean():.3f}); changed token = best cosine below {UNMATCHED}."
    )
    title = "CondaQA: the antonym probe's contrast over aligned changed tokens (untuned)"
    write_table(frame, Path(args.out), title, encoder, time.time() - started, markdown=markdown)
    print(markdown)


if __name__ == "__main__":
    main()
