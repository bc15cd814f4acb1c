"""Benchmark: cold reranking (no TokenStore: candidates encoded from their text) of the dense top 100 on SciFact,
against the paper's loop, in one run.

The paper's loop (the reference code's evaluation, as described in ``shared/reviews/performance.md``): for each
query, the candidates in batches of 32; for each batch the query is encoded again (32 copies) and the candidates
are encoded from text, fp32, padded to the batch's longest text (``padding=True``, max length 128); the verifier
scores the batch. F1 is MaxSim; F4 runs the packaged MapVerifier head with full layers on maps padded to 128 x 128
(the reference pads every map to that size; its own untrained F4 module is not used here).

The project's side: ``cv.MaxSim(encoder)`` / ``cv.MapVerifier(encoder=encoder)`` on the frame with a ``text``
column: each distinct text and query encoded once, texts sorted by token length into batches, bf16
(``TokenEncoder(dtype="bf16")``, the default on this CPU); also fp32, and one query per call (no sharing of
texts between queries). Interleaved rounds (each runs every variant once), best of ``--rounds``, spread shown;
ratios best over best and per round.

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data OMP_NUM_THREADS=2 python benchmarks/cold.py [--queries 5]

Writes benchmarks/results/cold.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from interleaved import benchmark_args, interleave, load_average, ratio, spread, write_results

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices
from pyterrier_compverify.scoring import build_head, score_aligned
from pyterrier_compverify.scoring.simmap import normalise_states

LOOP_BATCH = 32
MAP_SIZE = 128


def padded_states(encoder: cv.TokenEncoder, texts: list[str], pad_to: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's encoding of one batch: fp32 transformer, padded to the longest text (or to ``pad_to``)."""
    features = encoder.model.tokenizer(
        texts, padding=True, truncation=True, max_length=encoder.max_length, return_tensors="pt"
    )
    with torch.inference_mode():
        hidden = encoder.model[0].auto_model(**features).last_hidden_state
    mask = features["attention_mask"].bool()
    hidden = normalise_states(hidden, mask)
    if pad_to is not None:
        hidden = torch.nn.functional.pad(hidden, (0, 0, 0, pad_to - hidden.shape[1]))
        mask = torch.nn.functional.pad(mask, (0, pad_to - mask.shape[1]))
    return hidden, mask


def paper_loop(encoder: cv.TokenEncoder, head: torch.nn.Module, frame: pd.DataFrame, pad_to: int | None) -> np.ndarray:
    """Scores of ``frame``'s rows (grouped by query, in frame order) by the paper's per-batch loop."""
    scores = []
    for _, group in frame.groupby("qid", sort=False):
        query, texts = group["query"].iloc[0], group["text"].tolist()
        for start in range(0, len(texts), LOOP_BATCH):
            batch = texts[start : start + LOOP_BATCH]
            q, q_mask = padded_states(encoder, [query] * len(batch), pad_to)
            c, c_mask = padded_states(encoder, batch, pad_to)
            with torch.inference_mode():
                scores.append(score_aligned(head, q, q_mask, c, c_mask).float())
    return torch.cat(scores).numpy()


def agreement(frame: pd.DataFrame, project: pd.DataFrame, loop_scores: np.ndarray) -> dict:
    """Largest score difference between the project's result and the loop's scores of the same rows, the share of
    queries whose top 10 is the same list, and the mean share of the loop's top 10 in the project's."""
    ours = frame[["qid", "docno"]].merge(project[["qid", "docno", "score"]], on=["qid", "docno"], how="left")
    ours = ours.assign(loop=loop_scores)
    tops = [
        (g.nlargest(10, "score")["docno"].tolist(), g.nlargest(10, "loop")["docno"].tolist())
        for _, g in ours.groupby("qid")
    ]
    return {
        "max_abs_diff": float((ours["score"] - ours["loop"]).abs().max()),
        "same_top10": float(np.mean([a == b for a, b in tops])),
        "top10_overlap": float(np.mean([len(set(a) & set(b)) / 10 for a, b in tops])),
    }


def compare(name: str, figures: dict) -> str:
    """``agreement``'s figures in words."""
    return (
        f"{name} max |score diff| {figures['max_abs_diff']:.1e}, same top-10 list on {figures['same_top10']:.0%} of "
        f"queries, top-10 overlap {figures['top10_overlap']:.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="irds:beir/scifact/test")
    parser.add_argument("--queries", type=int, default=5, help="every k-th query of the topics, this many")
    parser.add_argument("--depth", type=int, default=100)
    args = benchmark_args(parser, "cold")
    started = time.time()
    cv.setup_local_data()
    collection = load_collection(args.dataset)
    fp32 = cv.TokenEncoder(device="cpu", dtype="fp32")
    bf16 = cv.TokenEncoder(device="cpu", dtype="bf16")
    indices = build_indices(collection, fp32, DEFAULT_INDEX_DIR, verbose=False)
    topics = collection.topics()
    topics = topics.iloc[:: max(1, len(topics) // args.queries)].head(args.queries)
    dense = fp32.query_encoder() >> indices.flex.retriever(num_results=args.depth, drop_query_vec=True)
    texts = {d["docno"]: d["text"] for d in collection.corpus_iter()}
    frame = dense(topics)
    frame = frame.assign(text=frame["docno"].map(texts))

    maxsim_bf16, maxsim_fp32 = cv.MaxSim(bf16), cv.MaxSim(fp32)
    mapverifier_bf16 = cv.MapVerifier(encoder=bf16, device="cpu")
    loop_f1 = build_head("F1")
    loop_f4 = cv.MapVerifier(encoder=fp32, device="cpu", penalty=False).head
    loop_f4.cls_only = False  # the reference runs full layers

    def per_query(reranker):
        return pd.concat([reranker(group) for _, group in frame.groupby("qid", sort=False)])

    variants = {
        "paper_loop_F1": lambda: paper_loop(fp32, loop_f1, frame, None),
        "maxsim_bf16": lambda: maxsim_bf16(frame),
        "maxsim_bf16_one_query_per_call": lambda: per_query(maxsim_bf16),
        "maxsim_fp32": lambda: maxsim_fp32(frame),
        "paper_loop_F4": lambda: paper_loop(fp32, loop_f4, frame, MAP_SIZE),
        "mapverifier_bf16": lambda: mapverifier_bf16(frame),
    }
    for run in variants.values():  # a warm-up: lazy loads and first-call costs are not timed (one broken round
        run()  # of encode.md, 0.24x against 3.54x, was the first)
    load_before = load_average()
    times, results = interleave(variants, rounds=args.rounds)
    load_after = load_average()

    n_queries = frame["qid"].nunique()
    baseline = {"maxsim": "paper_loop_F1", "mapverifier": "paper_loop_F4"}
    rows = []
    for name, seconds in times.items():
        row = {
            "variant": name,
            "ms_per_query": round(1000 * min(seconds) / n_queries, 1),
            "ms_per_query_all_rounds": ", ".join(f"{1000 * s / n_queries:.1f}" for s in seconds),
        }
        loop = next((v for k, v in baseline.items() if name.startswith(k)), None)
        if loop is not None:
            best, per_round = ratio(times, loop, name)
            row.update({"x_faster_than": loop, "x": round(best, 2), "x_per_round": spread(per_round)})
        rows.append(row)
    table = pd.DataFrame(rows)
    f1 = agreement(frame, results["maxsim_bf16"], results["paper_loop_F1"])
    f1_fp32 = agreement(frame, results["maxsim_fp32"], results["paper_loop_F1"])
    notes = (
        f"{args.dataset}: {n_queries} queries (every {max(1, len(collection.topics()) // args.queries)}th), dense top "
        f"{args.depth} from the FlexIndex ({len(frame)} rows, {frame['text'].nunique()} distinct texts), "
        f"{torch.get_num_threads()} torch threads, {args.rounds} interleaved rounds. Load average before / after: "
        f"{load_before} / {load_after}. Against the fp32 paper loop F1: {compare('MaxSim bf16', f1)}; "
        f"{compare('MaxSim fp32', f1_fp32)}."
    )
    write_results(
        table,
        Path(args.out),
        "Cold reranking (no store) of the dense top 100 against the paper's loop",
        bf16,
        started,
        notes,
    )


if __name__ == "__main__":
    main()
