"""Standard pipelines (BM25, dense, each >> MaxSim) over a collection, and their pt.Experiment."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
from ir_measures import RR, R, Success, nDCG

from .chinese import chinese_terms
from .encoder import DEFAULT_MODEL, TokenEncoder
from .rerank import MaxSim
from .results import write_table
from .store import TokenStore

MEASURES = [nDCG @ 10, RR @ 10, Success @ 1, Success @ 10, R @ 100]
DEFAULT_INDEX_DIR = Path(os.environ.get("COMPVERIFY_CACHE", Path.home() / ".cache" / "pyterrier_compverify"))


def strip_punctuation(text: str) -> str:
    """Punctuation to spaces, for PISA's query parser.

    >>> strip_punctuation("what's (a) test?")
    'what s a test'
    """
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


@contextlib.contextmanager
def quiet_native_output():
    """Silence stdout and stderr at the file-descriptor level (native libraries too) for the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


@dataclass
class Indices:
    """The three indices of one collection: PISA (BM25), FlexIndex (pooled vectors), TokenStore."""

    pisa: object
    flex: object
    store: TokenStore
    language: str = "en"


def bm25_index(collection, path: str | os.PathLike):
    """A PISA index of ``collection``, built once at ``path``: porter2 stemming for English; for Chinese, jieba
    words (jieba search mode, see :func:`chinese_terms`) without stemming, in a sibling ``*-jieba-search.pisa``."""
    from pyterrier_pisa import PisaIndex

    docs = collection.corpus_iter()
    language = getattr(collection, "language", "en")  # collections of our own: en unless they say otherwise
    if language == "zh":
        path = Path(path).with_name(Path(path).stem + "-jieba-search.pisa")
        docs = ({"docno": d["docno"], "text": chinese_terms(d["text"])} for d in docs)
    pisa = PisaIndex(str(path), text_field="text", stemmer="porter2" if language == "en" else "none")
    with quiet_native_output():  # PISA's native code logs every step
        if not pisa.built():
            pisa.index(docs)
        pisa.bm25()(pd.DataFrame({"qid": ["0"], "query": ["warm"]}))  # builds its block-max data once
    return pisa


def bm25_pipeline(pisa, num_results: int = 1000, *, language: str = "en") -> pt.Transformer:
    """BM25 over a :func:`bm25_index`: the query is prepared as the documents were (punctuation stripped for
    PISA's parser; jieba words for Chinese), and the original query is restored after."""
    prepare = chinese_terms if language == "zh" else strip_punctuation
    return pt.apply.query(lambda row: prepare(row["query"])) >> pisa.bm25(num_results=num_results) >> pt.rewrite.reset()


def build_indices(collection, encoder: TokenEncoder, index_dir: str | os.PathLike, *, verbose: bool = True) -> Indices:
    """Build (or reuse) the indices of ``collection`` under ``index_dir/<collection name>/``.

    The FlexIndex and the TokenStore are filled by one encoder pass over the corpus.
    """
    from pyterrier_dr import FlexIndex

    root = Path(index_dir) / collection.name
    pisa = bm25_index(collection, root / "bm25.pisa")
    tag = f"{encoder.fingerprint}-{encoder.max_length}"
    flex = FlexIndex(str(root / f"{tag}.flex"), sim_fn=encoder.sim_fn, verbose=verbose)
    store = TokenStore(root / f"{tag}.tokens")
    if not (flex.built() and store.built()):
        store.indexer(encoder, flex_index=flex, verbose=verbose, overwrite=True).index(collection.corpus_iter())
    store.check_encoder(encoder)
    return Indices(pisa, flex, store, getattr(collection, "language", "en"))


def standard_pipelines(indices: Indices, encoder: TokenEncoder, *, depth: int = 100) -> dict[str, pt.Transformer]:
    """BM25, dense, and each of them reranked at ``depth`` by MaxSim from the TokenStore."""
    bm25 = bm25_pipeline(indices.pisa, language=indices.language)
    dense = encoder.query_encoder() >> indices.flex.retriever(num_results=1000, drop_query_vec=True)
    maxsim = MaxSim(encoder, store=indices.store)
    return {
        "BM25": bm25,
        "Dense": dense,
        f"BM25 >> MaxSim@{depth}": (bm25 % depth) >> maxsim,
        f"Dense >> MaxSim@{depth}": (dense % depth) >> maxsim,
    }


def plain_dense_run(collection, encoder: TokenEncoder, topics: pd.DataFrame, k: int = 1000) -> pd.DataFrame:
    """Reference run: ``SentenceTransformer.encode`` on queries and documents, exact cosine, top k.

    Independent of TokenEncoder batching and pyterrier-dr, to check that the dense pipeline matches it.
    """
    docs = list(collection.corpus_iter())
    kw = {"batch_size": 32, "convert_to_numpy": True, "normalize_embeddings": True}
    doc_vecs = encoder.model.encode([d["text"] for d in docs], show_progress_bar=True, **kw)
    query_vecs = encoder.model.encode(topics["query"].tolist(), **kw)
    scores = query_vecs @ doc_vecs.T
    k = min(k, len(docs))
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    rows = []
    for qi, qid in enumerate(topics["qid"]):
        for di in top[qi]:
            rows.append((qid, docs[di]["docno"], float(scores[qi, di])))
    return pt.model.add_ranks(pd.DataFrame(rows, columns=["qid", "docno", "score"]))


def run_evaluation(
    dataset_id: str,
    *,
    model: str | None = None,
    max_length: int = 128,
    batch_size: int = 32,
    device: str | None = None,
    depth: int = 100,
    index_dir: str | os.PathLike = DEFAULT_INDEX_DIR,
    out_dir: str | os.PathLike | None = "experiments/results",
    baseline: str = "Dense",
    reference: bool = False,
    verbose: bool = True,
) -> pd.DataFrame:
    """``pt.Experiment`` of the standard pipelines on ``dataset_id``; writes ``evaluate-<name>.{md,json}``."""
    from .datasets import load_collection

    started = time.time()
    collection = load_collection(dataset_id)
    encoder = TokenEncoder(
        model or DEFAULT_MODEL, max_length=max_length, batch_size=batch_size, device=device, verbose=False
    )
    indices = build_indices(collection, encoder, index_dir, verbose=verbose)
    topics, qrels = collection.topics(), collection.qrels()
    systems = standard_pipelines(indices, encoder, depth=depth)
    if reference:
        systems["ST.encode + exact cosine (reference)"] = plain_dense_run(collection, encoder, topics)
    runs = {name: system if isinstance(system, pd.DataFrame) else system(topics) for name, system in systems.items()}
    names = list(runs)
    measures = MEASURES + collection.extra_measures
    results = pt.Experiment(
        list(runs.values()),
        topics,
        qrels,
        eval_metrics=measures,
        names=names,
        baseline=names.index(baseline) if baseline in names else None,
        round=4,
        verbose=verbose,
    )
    sections = [
        summary_table(results, [str(m) for m in measures]).to_markdown(index=False, disable_numparse=True),
        "",
        "`*`: paired t-test p < 0.05 against the baseline (the row without p-values).",
    ]
    types = collection.query_types()
    if types:
        per_type = by_query_type(runs, topics, qrels, types, measures)
        errors = error_view(runs, qrels, types)
        sections += [
            "",
            "## nDCG@10 per query type",
            "",
            per_type.to_markdown(),
            "",
            "## Misses: relevant documents in BM25's top 10 but not the system's (literal miss) or in "
            "neither (other miss), queries per type",
            "",
            errors.to_markdown(),
        ]
    sections += ["", "## All columns", "", results.to_markdown(index=False)]
    elapsed = time.time() - started
    if out_dir is not None:
        markdown = "\n".join(sections)
        write_table(results, Path(out_dir) / f"evaluate-{collection.name}", dataset_id, encoder, elapsed, markdown)
    return results


def by_query_type(runs: dict, topics, qrels, types: dict, measures) -> pd.DataFrame:
    """Mean per-query nDCG@10 by query type (rows) and system (columns), with the number of queries."""
    table = {}
    for name, run in runs.items():
        per_query = pt.Experiment([run], topics, qrels, [nDCG @ 10], names=[name], perquery=True)
        per_query["type"] = per_query["qid"].map(types)
        table[name] = per_query.groupby("type")["value"].mean()
    out = pd.DataFrame(table).round(4)
    out.insert(0, "queries", pd.Series(types).value_counts())
    return out


def error_view(runs: dict, qrels: pd.DataFrame, types: dict, k: int = 10) -> pd.DataFrame:
    """Per system and query type: queries with no relevant document in the system's top k although BM25 has
    one there (literal miss), and queries that neither finds (other miss)."""
    relevant = qrels[qrels["label"] > 0].groupby("qid")["docno"].apply(set)

    def hits(run):
        top = run[run["rank"] < k].groupby("qid")["docno"].apply(set)
        return {qid: bool(top.get(qid, set()) & docs) for qid, docs in relevant.items()}

    bm25 = hits(runs["BM25"])
    rows = []
    for name, run in runs.items():
        if name == "BM25":
            continue
        found = hits(run)
        for qid in relevant.index:
            if not found[qid]:
                kind = "literal miss" if bm25[qid] else "other miss"
                rows.append({"system": name, "type": types.get(qid, "unknown"), "kind": kind})
    if not rows:
        return pd.DataFrame()
    return pd.crosstab(
        [pd.Series([r["system"] for r in rows], name="system"), pd.Series([r["kind"] for r in rows], name="miss")],
        pd.Series([r["type"] for r in rows], name="type"),
        margins=True,
    )


def summary_table(results: pd.DataFrame, measures: list[str]) -> pd.DataFrame:
    """Name and measures, a measure marked ``*`` where its p-value against the baseline is below 0.05."""
    table = results[["name"]].copy()
    for m in measures:
        p = results.get(f"{m} p-value")
        marks = ["*" if p is not None and pv < 0.05 else "" for pv in (p if p is not None else [None] * len(results))]
        table[m] = [f"{v:.4f}{mark}" for v, mark in zip(results[m], marks)]
    return table


__all__ = ["MEASURES", "build_indices", "plain_dense_run", "run_evaluation", "standard_pipelines"]
