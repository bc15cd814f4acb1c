"""Issue 18, stop 54: what the WordNetCoverage clitic fix moves in fusion + WordNet 0.5.

``WORD = [a-z]+`` split "driver's" into driver + s and "don't" into don + t, and the fragments counted as words
("s" meets six WordNet terms). Since stop 54 a clitic after an apostrophe is dropped and a negated auxiliary goes
whole, in query words and passage terms alike (``wordnet_coverage.CLITIC``). This script builds the fusion's
depth-300 pool of each collection with the packaged seed-42 F1w head, reads the WordNet coverage of every pool row
as the package now does and as it did before (``CLITIC`` that matches nothing), fuses each at weight 0.5 and
compares nDCG@10. It runs in the encoder's default dtype: fp32 on a CPU without fast bf16 (the README's WordNet
figures were made with bf16 features, which such a CPU cannot run in reasonable time).

    COMPVERIFY_DATA=/path/to/data python experiments/wordnet_clitics.py --out experiments/results/wordnet-signal/clitics
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import ir_measures
import pandas as pd
from ir_measures import nDCG

from pyterrier_compverify import wordnet_coverage as wc
from pyterrier_compverify.datasets.collection import CorpusText
from pyterrier_compverify.encoder import DEFAULT_MODEL, TokenEncoder
from pyterrier_compverify.evaluate import judged_topics, open_collection
from pyterrier_compverify.fusion import fuse
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, FUSION_WEIGHTS, build_indices, fusion_pipeline
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.verifier import WeightedMaxSim

DATASETS = ("compverify/capretrieval/en", "irds:beir/scifact/test", "irds:cranfield")
NOTHING = re.compile(r"(?!x)x")  # a pattern that matches nothing: the words as read before the fix


def compare(dataset: str, encoder: TokenEncoder) -> dict:
    """nDCG@10 of fusion + WordNet 0.5 over ``dataset`` with the coverage read after and before the fix."""
    collection = open_collection(dataset)
    topics, qrels = judged_topics(collection)
    indices = build_indices(collection, encoder, DEFAULT_INDEX_DIR, verbose=False)
    head = WeightedMaxSim(encoder=encoder, store=indices.store)
    texts = CorpusText(collection)
    pool = fusion_pipeline(indices, encoder, depth=300, weighted=head, wordnet=0.5, texts=texts, features=True)(topics)
    rows = texts(pool)
    pattern = wc.CLITIC
    clitic_queries = int(topics["query"].str.lower().str.contains(pattern).sum())
    after = [wc.coverage(wc.query_words(q), wc.terms(t)) for q, t in zip(rows["query"], rows["text"])]
    wc.CLITIC = NOTHING
    try:
        before = [wc.coverage(wc.query_words(q), wc.terms(t)) for q, t in zip(rows["query"], rows["text"])]
    finally:
        wc.CLITIC = pattern
    measured = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    per = {}
    for name, coverage in (("before", before), ("after", after)):
        fused = fuse(pool.assign(wordnet=coverage), {**FUSION_WEIGHTS, "wordnet": 0.5})
        run = fused.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
        per[name] = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], measured, run)}
    moved = sum(abs(per["before"][q] - per["after"].get(q, 0.0)) > 1e-9 for q in per["before"])
    return {
        "dataset": dataset,
        "queries": len(per["before"]),
        "queries with a clitic": clitic_queries,
        "nDCG@10 before": sum(per["before"].values()) / len(per["before"]),
        "nDCG@10 after": sum(per["after"].values()) / len(per["after"]),
        "queries moved": moved,
        "pool rows": len(after),
        "pool rows whose coverage changed": sum(abs(a - b) > 1e-12 for a, b in zip(before, after)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--out", default="experiments/results/wordnet-signal/clitics")
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args()
    refuse_overwrite(Path(args.out), args.overwrite, FileExistsError)
    started = time.time()
    encoder = TokenEncoder(DEFAULT_MODEL, verbose=False)
    table = pd.DataFrame([compare(d, encoder) for d in args.datasets.split(",")])
    title = "fusion + WordNet 0.5 before and after the clitic fix (seed-42 head, depth 300)"
    print(table.round(4).to_markdown(index=False))
    write_table(table.round(4), Path(args.out), title, encoder, time.time() - started)


if __name__ == "__main__":
    main()
