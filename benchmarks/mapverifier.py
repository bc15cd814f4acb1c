"""Benchmark: MapVerifier (F4, the packaged weights and serving form) reranking SciFact test's dense top-k from a
TokenStore, query token states shared with the first stage, at depths 10 / 100 / 1000. In one run, interleaved
(A, B, A, B, ...), best of ``--rounds`` with every round shown:

- ``fp32``: ``MapVerifier(store=...)``, exact up to ``skip_below`` (the default: the head runs only on candidates
  whose gate lets the penalty exceed 1e-6);
- ``ungated``: the same with ``skip_below=0`` (the head on every candidate: the form as served before);
- ``maxsim``: the project's ``MaxSim(store=...)``, fp32 (what the default costs on top of it);
- ``bf16``: ``dtype="bfloat16"`` (map product in reduced precision, head under bf16 autocast);
- ``bf16_store``: the same over the store recoded to the bf16 codec (rows multiplied as stored, no conversion);
- ``int8_store`` / ``maxsim_int8``: ``dtype="int8"`` over the store recoded to the int8 codec (rows gathered as
  stored, multiplied by the query quantised per token in integer arithmetic; head in float32);
- ``plain_f4``: the ungated reranker with F4's tiles formed (``head.factorised = False``), fp32;
- ``plain_maxsim``: plain PyTorch MaxSim over an fp32 corpus padded once in memory (a floor for any map head);
- the paper's loop (query and candidate encoded for every pair, map padded to 128 x 128, full F4 layers) on
  ``--loop-queries`` queries of the top 100, in the same rounds as the fastest path this CPU has (bf16_store, or
  fp32 where bf16 is emulated), and with ``int8_store``.

The bf16 rows run only on a CPU with native bf16 (AVX-512 BF16 / AMX); an AVX2-only CPU emulates bf16 about 100x
slower than fp32, and the report says they were left out.

Also: nDCG@10 of fp32, bf16 and bf16_store over all queries at depth 100, and torch.profiler tables of where the
bf16 and bf16_store rerankers' time goes at depth 100.

    OMP_NUM_THREADS=2 COMPVERIFY_DATA=/path/to/data python benchmarks/mapverifier.py [--every 10] [--rounds 3]

Writes benchmarks/results/mapverifier.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from interleaved import benchmark_args
from rerank_common import (
    PaddedCorpus,
    at_depth,
    bf16_store,
    conditions,
    interleave,
    ndcg10,
    ratio_cells,
    recoded_store,
    scifact_candidates,
)

import pyterrier_compverify as cv
from pyterrier_compverify.encoder import fast_bf16, native_bf16
from pyterrier_compverify.reporting import write_table
from pyterrier_compverify.scoring.pairs import query_verdicts


def paper_loop(verifier: cv.MapVerifier, frame: pd.DataFrame, texts: dict, size: int = 128) -> np.ndarray:
    """Score each (query, candidate) pair on its own: encode both, pad the map to size x size, full F4 layers, the
    same serving form (MaxSim minus the conditional penalty) as the reranker, the head on every pair (pass an
    ungated form, ``skip_below=0``)."""
    encoder, head = verifier.encoder, verifier.head
    scores = []
    for row in frame.itertuples():
        q, c = encoder.encode([row.query, texts[row.docno]]).token_states
        sim = torch.zeros(1, size, size)
        sim[0, : q.shape[0], : c.shape[0]] = q @ c.T
        qmask = (torch.arange(size) < q.shape[0])[None]
        cmask = (torch.arange(size) < c.shape[0])[None]
        with torch.inference_mode():  # the query's own verdict where the serving form measures against it
            own = query_verdicts(head, q[None], torch.ones(1, q.shape[0], dtype=torch.bool))
            scores.append(float(head(sim, qmask, cmask, **own)))
    return np.array(scores)


def profile_table(reranker, frame: pd.DataFrame, rows: int = 15) -> str:
    reranker(frame)
    with torch.profiler.profile() as prof:
        reranker(frame)
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=int, default=10, help="time every n-th query (30 of SciFact's 300)")
    parser.add_argument("--loop-queries", type=int, default=2)
    args = benchmark_args(parser, "mapverifier")
    started = time.time()
    encoder = cv.TokenEncoder(device="cpu")
    collection, indices, top = scifact_candidates(encoder, depth=1000)
    plain = PaddedCorpus(indices.store)
    fp32 = cv.MapVerifier(encoder=encoder, store=indices.store)
    native = native_bf16()  # else bf16 is emulated (~100x fp32): its rows are skipped
    if native:
        bf16 = cv.MapVerifier(encoder=encoder, store=indices.store, dtype="bfloat16")
        bf16_rows = cv.MapVerifier(encoder=encoder, store=bf16_store(indices.store), dtype="bfloat16")
    # the fastest path this CPU has: bf16 only with AMX (AVX-512 BF16 alone multiplies bf16 slower than fp32)
    best_name, best = ("bf16_store", bf16_rows) if fast_bf16() else ("fp32", fp32)
    ungated = cv.MapVerifier(encoder=encoder, store=indices.store)
    ungated.head.skip_below = 0.0
    plain_f4 = cv.MapVerifier(encoder=encoder, store=indices.store)  # ungated too: the head on every candidate
    plain_f4.head.skip_below = 0.0
    plain_f4.head.verifier.factorised = False
    maxsim = cv.MaxSim(encoder, store=indices.store)
    int8_rows = recoded_store(indices.store, "int8")
    int8 = cv.MapVerifier(encoder=encoder, store=int8_rows, dtype="int8")
    maxsim_int8 = cv.MaxSim(encoder, store=int8_rows, dtype="int8")
    rows, diffs = [], {}
    for depth in (10, 100, 1000):
        frame = at_depth(top, depth, args.every)
        n = frame["qid"].nunique()
        fns = {
            "fp32": lambda f=frame: fp32(f),
            "ungated": lambda f=frame: ungated(f),
            "maxsim": lambda f=frame: maxsim(f),
            "int8_store": lambda f=frame: int8(f),
            "maxsim_int8": lambda f=frame: maxsim_int8(f),
            **({"bf16": lambda f=frame: bf16(f), "bf16_store": lambda f=frame: bf16_rows(f)} if native else {}),
            "plain_f4": lambda f=frame: plain_f4(f),
            "plain_maxsim": lambda f=frame: plain.maxsim(f),
        }
        for fn in fns.values():
            fn()  # warm-up: the store's pages in memory
        times, results = interleave(fns, args.rounds)
        for name, seconds in times.items():
            rows.append({"depth": depth, "path": name, "queries": n, "ms_per_query_best": 1000 * min(seconds) / n,
                         "ms_per_query_rounds": [round(1000 * s / n, 2) for s in seconds]})  # fmt: skip
        for a, b in (("fp32", "bf16"), ("ungated", "fp32"), ("fp32", "maxsim"), ("fp32", "plain_maxsim"),
                     ("plain_f4", "ungated"), ("bf16", "plain_maxsim"), ("bf16_store", "plain_maxsim"),
                     ("bf16_store", "maxsim"), ("int8_store", "fp32"), ("int8_store", "plain_maxsim"),
                     ("maxsim_int8", "maxsim"), ("maxsim_int8", "plain_maxsim")):  # fmt: skip
            if a in times and b in times:
                rows.append({"depth": depth, "path": f"{a} / {b}", **ratio_cells(times, a, b)})
        exact = results["fp32"]["score"]
        diffs[depth] = {
            f"{k}_vs_fp32_max_abs_diff": float((results[k]["score"] - exact).abs().max())
            for k in ("plain_f4", "bf16", "bf16_store", "ungated", "int8_store")
            if k in results
        }
        verified = []  # maps through fp32's head (candidates with an open gate and their queries' own maps)
        count = lambda module, inputs, output, seen=verified: seen.append(len(inputs[0]))  # noqa: E731
        hook = fp32.head.verifier.register_forward_hook(count)
        fp32(frame)
        hook.remove()
        diffs[depth]["head_maps_per_candidate"] = round(sum(verified) / len(frame), 4)
    texts = {d["docno"]: d["text"] for d in collection.corpus_iter()}
    few = at_depth(top, 100, 1)
    few = few[few["qid"].isin(few["qid"].drop_duplicates().iloc[: args.loop_queries])]
    loop_times, loop_results = interleave(
        {
            "paper_loop": lambda: paper_loop(ungated, few, texts),
            best_name: lambda: best(few),
            "int8_store": lambda: int8(few),
        },
        args.rounds,
    )
    loop_ms = [1000 * s / args.loop_queries for s in loop_times["paper_loop"]]
    loop_diff = float(np.abs(loop_results["paper_loop"] - fp32(few)["score"].to_numpy()).max())
    full = at_depth(top, 100, 1)
    qrels = collection.qrels()
    rerankers = (
        ("ndcg10_fp32", fp32),
        ("ndcg10_int8_store", int8),
        *((("ndcg10_bf16", bf16), ("ndcg10_bf16_store", bf16_rows)) if native else ()),
    )
    quality = {name: ndcg10(reranker(full), qrels) for name, reranker in rerankers}
    table = pd.DataFrame(rows)
    summary = {
        **conditions(),
        **{f"depth{d}_{k}": v for d, kv in diffs.items() for k, v in kv.items()},
        "paper_loop_ms_per_query_rounds": [round(x, 1) for x in loop_ms],
        f"paper_loop / {best_name} (same rounds)": ratio_cells(loop_times, "paper_loop", best_name),
        "paper_loop / int8_store (same rounds)": ratio_cells(loop_times, "paper_loop", "int8_store"),
        "cpu": f"{torch.backends.cpu.get_cpu_capability()}, native bf16: {native}, bf16 faster than fp32: {fast_bf16()}"
        + ("" if native else " (bf16 and bf16_store not run: emulated, about 100x slower than fp32)"),
        "paper_loop_vs_fp32_max_abs_diff": loop_diff,
        **quality,
    }
    profiles = {
        name: profile_table(r, at_depth(top, 100, args.every))
        for name, r in (
            *((("bf16", bf16), ("bf16_store", bf16_rows)) if native else (("fp32", fp32),)),
            ("int8_store", int8),
        )
    }
    markdown = (
        table.to_markdown(index=False, floatfmt=".2f")
        + "\n\n"
        + pd.DataFrame(list(summary.items()), columns=["measurement", "value"]).astype(str).to_markdown(index=False)
        + "".join(
            f"\n\nWhere the {name} reranker's time goes (depth 100, torch.profiler, self CPU):\n\n```\n{text}\n```\n"
            for name, text in profiles.items()
        )
    )
    table = pd.concat([table, pd.DataFrame([{"path": k, "value": str(v)} for k, v in summary.items()])])
    write_table(table.astype(str), Path(args.out), "MapVerifier from a TokenStore: fp32, bf16, plain F4, plain MaxSim,"
                " the paper's loop", encoder, time.time() - started, markdown=markdown)  # fmt: skip
    print(markdown)


if __name__ == "__main__":
    main()
