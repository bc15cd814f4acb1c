"""What the reranking benchmarks share: SciFact test's dense top-k with the first stage's query token states, the
plain PyTorch MaxSim over a padded fp32 corpus; interleaved timing comes from ``interleaved``."""

from __future__ import annotations

import os

import ir_measures
import numpy as np
import pandas as pd
import torch
from interleaved import benchmark_args, interleave, load_average, ratio  # noqa: F401 (interleave: for the benchmarks)

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices


def reranking_args(parser, name: str, dataset: str = "irds:beir/scifact/test"):
    """``interleaved.benchmark_args`` with ``--dataset``, ``--depth`` (the dense top k reranked, 100) and
    ``--index-dir``."""
    parser.add_argument("--dataset", default=dataset)
    parser.add_argument("--depth", type=int, default=100, help="dense top k reranked (default %(default)s)")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    return benchmark_args(parser, name)


def open_indices(dataset: str, index_dir=DEFAULT_INDEX_DIR, encoder=None):
    """(collection, encoder, indices) of ``dataset``, from the local data folder; ``encoder`` by default MiniLM on
    the CPU at its default dtype; the indices are built once (BM25, FlexIndex, TokenStore) and reused, all quiet."""
    cv.setup_local_data()
    collection = load_collection(dataset)
    encoder = encoder if encoder is not None else cv.TokenEncoder(device="cpu", verbose=False)
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    return collection, encoder, indices


def scifact_candidates(encoder, depth: int = 1000, dataset: str = "irds:beir/scifact/test"):
    """(collection, indices, top-``depth`` frame with ``query_toks`` from the first stage's one forward pass)."""
    collection, _, indices = open_indices(dataset, encoder=encoder)
    queries = encoder.query_token_encoder()(collection.topics())
    return collection, indices, indices.flex.retriever(num_results=depth, drop_query_vec=True)(queries)


def recoded_store(store: cv.TokenStore, codec: str) -> cv.TokenStore:
    """``store`` recoded to ``codec`` ("bf16", "int8") beside it (``<name>.<codec>.tokens``; made once, then reused)."""
    from pathlib import Path

    target = cv.TokenStore(Path(store.path).with_name(f"{Path(store.path).stem}.{codec}.tokens"))
    if not (target.built() and target.codec == {"name": codec} and target.encoder_info == store.encoder_info):
        store.recode(target.path, codec, mode="overwrite", verbose=False)
    return cv.TokenStore(target.path)


def bf16_store(store: cv.TokenStore) -> cv.TokenStore:
    """``store`` recoded to the bf16 codec beside it."""
    return recoded_store(store, "bf16")


def at_depth(frame: pd.DataFrame, depth: int, every: int = 1) -> pd.DataFrame:
    """The top ``depth`` rows of every ``every``-th query."""
    qids = frame["qid"].drop_duplicates().iloc[::every]
    return frame[(frame["rank"] < depth) & frame["qid"].isin(qids)]


class PaddedCorpus:
    """Every document's states of a store, fp32, padded once to (N, L, d) in memory: the plain PyTorch baseline."""

    def __init__(self, store: cv.TokenStore):
        docnos = store.docnos()
        states, mask = store.padded_states(docnos)
        self.states, self.mask = states, mask
        self.row = {d: i for i, d in enumerate(docnos)}

    def maxsim(self, frame: pd.DataFrame) -> np.ndarray:
        """Plain MaxSim of each row (query states from ``query_toks``): a gather of padded fp32 rows, one batched
        matrix product per query, -inf on padding, max over candidate tokens, mean over query tokens."""
        scores = np.empty(len(frame))
        rows = frame["docno"].map(self.row).to_numpy()
        for positions in pd.Series(np.arange(len(frame))).groupby(frame["qid"].to_numpy(), sort=False).indices.values():
            query = frame["query_toks"].iat[positions[0]].states
            with torch.inference_mode():
                sim = torch.matmul(self.states[rows[positions]], query.T)  # (B, L, m)
                sim.masked_fill_(~self.mask[rows[positions]][:, :, None], float("-inf"))
                scores[positions] = sim.amax(1).mean(1).numpy()
        return scores


def ratio_cells(times: dict, a: str, b: str) -> dict:
    """a / b, best over best, and per round (same round's pair)."""
    best, per_round = ratio(times, a, b)
    return {"best_over_best": round(best, 3), "per_round": [round(x, 3) for x in per_round]}


def ndcg10(frame: pd.DataFrame, qrels: pd.DataFrame) -> float:
    run = frame[["qid", "docno", "score"]].rename(columns={"qid": "query_id", "docno": "doc_id"})
    qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return float(ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, run)[ir_measures.nDCG @ 10])


def conditions() -> dict:
    """Threads and machine load when a benchmark ran (a loaded machine slows the many small ops most)."""
    return {
        "torch_threads": torch.get_num_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "load_average_1_5_15": load_average(),
    }
