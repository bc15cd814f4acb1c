"""Issue 18 probe: MaxSim with query tokens weighted by their inverse document frequency in the corpus.

MaxSim averages the best cosine of every query token, so "a", "the" and [CLS] count as much as "dog" or "red".
Here the mean becomes a weighted mean, weight = idf(token) ** p, where idf is the BM25 form
log(1 + (N - df + 0.5) / (df + 0.5)) over the word pieces of the collection's documents (truncated as stored) and
[CLS] / [SEP] get the mean weight of the query's other tokens (``--specials mean``) or none (``zero``). p = 0 with
mean specials is plain MaxSim (checked against ``cv.MaxSim`` on every task). Rows: the base encoder's dense
top 100.

The exponent is chosen on the dev tasks of ``capretrieval_best.py`` (Flickr8k dev captions; 300 held-out SciFact
train queries) only; ``--stage test`` then reports the chosen setting and the grid on the test collections.

    COMPVERIFY_DATA=/path/to/data python experiments/idf_maxsim.py --stage dev
    COMPVERIFY_DATA=/path/to/data python experiments/idf_maxsim.py --stage test

Writes ``--out`` (default experiments/results/idf-maxsim-<stage>).{md,json}.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import nDCG

import pyterrier_compverify as cv
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.scoring import pad_token_states, similarity_map
from pyterrier_compverify.scoring.heads.fixed import row_max

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capretrieval_best import DEVS, TESTS, task  # noqa: E402

EXPONENTS = (0.0, 0.25, 0.5, 1.0, 2.0)
SPECIALS = ("mean", "zero")
TREC = {"qid": "query_id", "docno": "doc_id"}


def document_frequencies(tokenizer, texts: list[str], max_length: int) -> tuple[np.ndarray, int]:
    """(vocab,) number of documents holding each word piece (as the store truncated them), and N."""
    df = np.zeros(tokenizer.vocab_size + len(tokenizer.get_added_vocab()), dtype=np.int64)
    for start in range(0, len(texts), 1024):
        for ids in tokenizer(texts[start : start + 1024], truncation=True, max_length=max_length)["input_ids"]:
            df[np.unique(ids)] += 1
    return df, len(texts)


def row_maxima(frame: pd.DataFrame, store: cv.TokenStore) -> list[np.ndarray]:
    """For each row, (m,) best cosine of every query token (states from ``query_toks``) with the document."""
    out = [None] * len(frame)
    docnos, query_toks = frame["docno"].to_numpy(dtype=object), frame["query_toks"].to_numpy()  # once, not per query
    for _, rows in frame.groupby("qid", sort=False).indices.items():
        q = query_toks[rows[0]].states.float()
        cand, mask = pad_token_states(store.token_states(docnos[rows].tolist()))
        for i, best in zip(rows, row_max(similarity_map(q, cand), mask).numpy()):
            out[i] = best
    return out


def weights(ids: list[int], idf: np.ndarray, special_ids: set[int], p: float, specials: str) -> np.ndarray:
    """(m,) weight of each query token."""
    w = idf[ids] ** p
    is_special = np.array([i in special_ids for i in ids])
    w[is_special] = w[~is_special].mean() if specials == "mean" and (~is_special).any() else 0.0
    return w


def measure(task_name: str, encoder: cv.TokenEncoder, index_dir: Path, work: Path) -> tuple[list[dict], dict]:
    started = time.time()
    collection, topics, qrels = task(task_name, work)
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    first = encoder.query_token_encoder() >> indices.flex.retriever(num_results=100, drop_query_vec=True)
    frame = first(topics).reset_index(drop=True)
    texts = [d["text"] for d in collection.corpus_iter()]
    tokenizer = encoder.model.tokenizer
    df, n = document_frequencies(tokenizer, texts, encoder.max_length)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    special_ids = set(tokenizer.all_special_ids)
    query_ids = dict(zip(topics["query"], tokenizer(topics["query"].tolist(), truncation=True,
                                                      max_length=encoder.max_length)["input_ids"]))  # fmt: skip
    maxima = row_maxima(frame, indices.store)
    qrels_m = qrels.rename(columns={**TREC, "label": "relevance"})
    plain = cv.MaxSim(encoder, store=indices.store)(frame)["score"].to_numpy()
    results = []
    for p in EXPONENTS:
        for specials in SPECIALS:
            scores = np.empty(len(frame))
            for i, (query, best) in enumerate(zip(frame["query"], maxima)):
                ids = query_ids[query]
                assert len(ids) == len(best), "query states and word pieces differ in length"
                w = weights(ids, idf, special_ids, p, specials)
                scores[i] = float((w * best).sum() / w.sum())
            if p == 0.0 and specials == "mean":
                gap = float(np.abs(scores - plain).max())
                assert gap < 1e-4, f"p=0 should be plain MaxSim, max |diff| {gap}"
            run = frame[["qid", "docno"]].assign(score=scores)
            value = ir_measures.calc_aggregate([nDCG @ 10], qrels_m, run.rename(columns=TREC))[nDCG @ 10]
            results.append({"task": task_name, "p": p, "specials": specials, "nDCG@10": round(float(value), 4)})
    info = {
        "task": task_name,
        "queries": int(frame["qid"].nunique()),
        "docs": n,
        "seconds": round(time.time() - started, 1),
    }
    print(info, flush=True)
    return results, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=["dev", "test"], default="dev")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR / "capretrieval-best"))
    parser.add_argument("--out", default=None, help="output stem (default: results/idf-maxsim-STAGE)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    out = Path(args.out or Path(__file__).parent / "results" / f"idf-maxsim-{args.stage}")
    refuse_overwrite(out, args.overwrite)
    started = time.time()
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    work = Path(args.index_dir)
    work.mkdir(parents=True, exist_ok=True)
    tasks = DEVS if args.stage == "dev" else DEVS + TESTS
    rows, infos = [], []
    for name in tasks:
        r, info = measure(name, encoder, work, work)
        rows += r
        infos.append(info)
    table = pd.DataFrame(rows).pivot_table(index=["p", "specials"], columns="task", values="nDCG@10")
    table = table[[t for t in tasks]].reset_index()
    dev_mean = table[DEVS].mean(axis=1)
    chosen = table.iloc[int(dev_mean.idxmax())]
    notes = (
        f"Rows: base all-MiniLM-L6-v2 dense top 100. p = 0 with mean specials is plain MaxSim. Chosen on the mean "
        f"of the dev columns: p {chosen['p']}, specials {chosen['specials']}. Tasks: {infos}."
    )
    markdown = table.to_markdown(index=False) + "\n\n" + notes + "\n"
    write_table(table, out, "MaxSim with idf-weighted query tokens (issue 18 probe)", encoder, time.time() - started,
                markdown=markdown)  # fmt: skip
    print(table.to_string())


if __name__ == "__main__":
    main()
