"""Issue 18: does WordNet's category knowledge help the packaged CapRetrievalEn fusion? Chosen on dev, then read on
test.

A third of the points the fusion loses on CapRetrievalEn are queries that need a fact neither text states, and
eight of those nineteen are plain category membership ("animal" for a dog, "seafood" for clams;
``experiments/results/capretrieval-errors/``). WordNet holds that knowledge offline. The signal ``wordnet`` is the
share of a query's content words that a candidate contains, itself or as one of its WordNet hyponyms (any noun
sense, the whole hyponym tree: "animal" is met by "dog", "seafood" by "clam"); words are lower-cased and reduced
to their WordNet base forms (``morphy``), a candidate's two-word phrases count too ("golden retriever"):
``pyterrier_compverify.wordnet_coverage`` (the package's ``cv.WordNetCoverage``). Its
weight beside the packaged fusion is chosen on dev and read on test by ``signal_study.py``'s procedure. The
idea came from a reading of CapRetrievalEn *test* errors (above), so the signal is test-informed; no setting of
it was tuned on a test collection.

    COMPVERIFY_DATA=/path/to/data python experiments/wordnet_signal.py [--test] [--cache runs/wordnet-features.pkl]

Writes ``--out`` (default experiments/results/wordnet-signal/wordnet).{md,json}.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import signal_study
from capretrieval_best import task

import pyterrier_compverify as cv
from pyterrier_compverify.reporting import refuse_overwrite
from pyterrier_compverify.wordnet_coverage import coverage, query_words, terms


def features(name: str, encoder: cv.TokenEncoder, index_dir: Path) -> signal_study.Features:
    """The packaged fusion's features at depth 300 (``signal_study.packaged_features``), plus ``wordnet``."""
    frame, qrels, vectors = signal_study.packaged_features(name, encoder, index_dir)
    collection, _, _ = task(name, index_dir)
    wanted = set(frame["docno"])
    held = {doc["docno"]: terms(doc["text"]) for doc in collection.corpus_iter() if doc["docno"] in wanted}
    words = {qid: query_words(query) for qid, query in frame.drop_duplicates("qid")[["qid", "query"]].values}
    score = [coverage(words[qid], held[docno]) for qid, docno in zip(frame["qid"], frame["docno"])]
    return frame.assign(wordnet=np.asarray(score)), qrels, vectors


def main() -> None:
    out = str(Path(__file__).parent / "results" / "wordnet-signal" / "wordnet")
    args = signal_study.parser(__doc__, out).parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    note = (
        "Signal: the share of a query's content words that a candidate meets itself or by a WordNet hyponym "
        "(WordNet 3.0, any noun sense, the whole hyponym tree)."
    )
    title = "WordNet category signal beside the packaged fusion (issue 18)"
    print(signal_study.study("wordnet", lambda name: features(name, encoder, Path(args.index_dir)), args, title,
                             encoder, note))  # fmt: skip


if __name__ == "__main__":
    main()
