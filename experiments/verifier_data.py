"""The data files of the verifier training (``experiments/verifier_training.py data``), under ``<run-dir>/data``:
Flickr8k train / dev captions and their near-miss edits, keyword / phrase queries of the train captions, rule edits
of SciFact train-corpus sentences, reworded negations (a fifth of the adjectives held out for dev; also set inside
a window of their abstract) and SciFact train retrieval triplets (200 queries held out for dev). Each file is
written once and reused.

"SciFact train-corpus" is the corpus as read through the train split; BEIR's SciFact has one corpus for train and
test, so these sentences are test-corpus text too (no test query or label is read). The retrieval triplets leave
out the two train claims that repeat test claims word for word, after the dev draw, so the dev queries stay those
of the committed runs (since 2026-12-07; the committed runs' training rows had them, one row each).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

DEV_QUERIES = 200
PASSAGE_WORDS = 80  # the reworded rows' passage window (words)


def data(args) -> None:
    """Write the data files that are missing (``--sentences``: SciFact sentences given to the rule edits)."""
    from pyterrier_compverify.datasets.flickr8k import flickr8k_captions
    from pyterrier_compverify.negatives import RuleBasedGenerator
    from pyterrier_compverify.negatives.captions import KINDS, caption_edits
    from pyterrier_compverify.training.data import SCIFACT_TEST, corpus_sentences, retrieval_triplets

    out = Path(args.run_dir) / "data"
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev"):
        path = out / f"flickr-{split}-edits.jsonl"
        if not path.exists():
            start = time.time()
            captions = flickr8k_captions(split)
            edits = caption_edits(captions["caption"].unique(), kinds=KINDS, seed=0)
            edits.to_json(path, orient="records", lines=True)
            captions.to_json(out / f"flickr-{split}-captions.jsonl", orient="records", lines=True)
            kinds = edits["kind"].value_counts().to_dict()
            print(f"{split}: {len(edits)} caption edits in {time.time() - start:.0f}s {kinds}", flush=True)
    path = out / "flickr-train-kw.jsonl"
    if not path.exists():  # keyword and phrase queries of each train caption, for the granularity rows
        from pyterrier_compverify.querygen import KeywordQueries

        start = time.time()
        captions = pd.read_json(out / "flickr-train-captions.jsonl", lines=True)["caption"].unique().tolist()
        made = KeywordQueries().generate(captions)
        kw = [
            {"caption": c, "query": q, "kind": kind}
            for c, queries in zip(captions, made)
            for q, kind in queries
            if kind in ("keyword", "phrase")
        ]
        pd.DataFrame(kw).to_json(path, orient="records", lines=True)
        print(f"train KW: {len(kw)} keyword/phrase queries of {len(captions)} captions in {time.time() - start:.0f}s")
    path = out / "scifact-edits.jsonl"
    if not path.exists():
        start = time.time()
        sentences = corpus_sentences("irds:beir/scifact/train", limit=args.sentences, seed=0)
        result = RuleBasedGenerator().generate(sentences, one_per_category=False, seed=0)
        result.table.to_json(path, orient="records", lines=True)
        print(f"scifact: {len(result.table)} edits in {time.time() - start:.0f}s")
    path = out / "scifact-retrieval.jsonl"
    if not path.exists():
        from pyterrier_compverify.datasets import load_collection

        triplets = retrieval_triplets("irds:beir/scifact/train")
        queries = sorted(triplets["anchor"].unique())
        dev = set(np.random.default_rng(0).choice(queries, DEV_QUERIES, replace=False))  # the committed runs' draw
        kept = set(load_collection("irds:beir/scifact/train").topics_outside(*SCIFACT_TEST)["query"])
        repeated = set(queries) - kept  # train claims that are test claims word for word: in neither
        dev -= repeated
        triplets = triplets[~triplets["anchor"].isin(repeated)]
        triplets[~triplets["anchor"].isin(dev)].to_json(path, orient="records", lines=True)
        (out / "scifact-dev-queries.json").write_text(json.dumps(sorted(dev), indent=0))
        print(f"retrieval: {len(triplets)} rows, {len(dev)} dev queries held out")

    path = out / "scifact-reworded.jsonl"
    if not path.exists():  # negation said two ways vs the affirmative; a fifth of the adjectives held out for dev
        from pyterrier_compverify.negatives.affixal import reworded_negations

        table = reworded_negations(corpus_sentences("irds:beir/scifact/train", seed=0))
        words = sorted(table["word"].unique())
        dev = set(np.random.default_rng(0).choice(words, len(words) // 5, replace=False))
        table.assign(split=np.where(table["word"].isin(dev), "dev", "train")).to_json(
            path, orient="records", lines=True
        )
        print(f"reworded negations: {len(table)} triplets of {len(words)} adjectives, {len(dev)} held out for dev")

    path = out / "scifact-lexical.jsonl"
    if not path.exists():  # negation said with "not" and with a lexical negative ("fail", "lack", "absent")
        from pyterrier_compverify.negatives.lexical import lexical_negations

        table = lexical_negations(corpus_sentences("irds:beir/scifact/train", seed=0))
        sentences = sorted(table["sentence"].unique())
        dev = set(np.random.default_rng(0).choice(sentences, len(sentences) // 5, replace=False))
        table.assign(split=np.where(table["sentence"].isin(dev), "dev", "train")).to_json(
            path, orient="records", lines=True
        )
        counts = table.groupby("antonym")["sentence"].nunique().to_dict()
        print(f"lexical negations: {len(table)} triplets of {len(sentences)} sentences {counts}, {len(dev)} for dev")

    path = out / "scifact-reworded-passages.jsonl"
    if not path.exists():  # the same triplets inside a window of their abstract that fits the training length
        import pyterrier_compverify as cv
        from pyterrier_compverify.datasets import load_collection
        from pyterrier_compverify.encoder import DEFAULT_MAX_LENGTH
        from pyterrier_compverify.training.data import sentence_homes, triplets_in_passages

        reworded = pd.read_json(out / "scifact-reworded.jsonl", lines=True)
        homes = sentence_homes(d["text"] for d in load_collection("irds:beir/scifact/train").corpus_iter())
        placed = triplets_in_passages(reworded, homes, words=PASSAGE_WORDS)
        texts = placed[["anchor", "positive", "negative"]].to_numpy().ravel().tolist()
        longest = cv.TokenEncoder(max_length=512).token_lengths(texts).reshape(-1, 3).max(axis=1)
        fits = placed[longest <= DEFAULT_MAX_LENGTH]  # the training encoder's length: a longer text loses its edit
        fits.to_json(path, orient="records", lines=True)
        print(
            f"reworded negations in passages: {len(fits)} of {len(reworded)} triplets (a home with a neighbour in "
            f"{PASSAGE_WORDS} words: {len(placed)}; all three texts within {DEFAULT_MAX_LENGTH} tokens: {len(fits)})"
        )


def load_data(run_dir: Path) -> dict:
    d = Path(run_dir) / "data"
    read = lambda name: pd.read_json(d / name, lines=True)  # noqa: E731
    return {
        "train_captions": read("flickr-train-captions.jsonl"),
        "train_edits": read("flickr-train-edits.jsonl"),
        "dev_captions": read("flickr-dev-captions.jsonl"),
        "dev_edits": read("flickr-dev-edits.jsonl"),
        "scifact_edits": read("scifact-edits.jsonl"),
        "retrieval": read("scifact-retrieval.jsonl"),
        "dev_queries": json.loads((d / "scifact-dev-queries.json").read_text()),
        "train_kw": read("flickr-train-kw.jsonl") if (d / "flickr-train-kw.jsonl").exists() else None,
        "reworded": read("scifact-reworded.jsonl") if (d / "scifact-reworded.jsonl").exists() else None,
        "lexical": read("scifact-lexical.jsonl") if (d / "scifact-lexical.jsonl").exists() else None,
        "reworded_passages": read("scifact-reworded-passages.jsonl")
        if (d / "scifact-reworded-passages.jsonl").exists()
        else None,
    }
