"""Benchmark: MaxSim reranking of SciFact test's dense top-k from a TokenStore (query token states shared with the
first stage) against plain PyTorch MaxSim over an fp32 corpus padded once in memory (1 GB for SciFact), at depths
10 / 100 / 1000. In one run, interleaved (A, B, A, B, ...), best of ``--rounds`` with every round shown; the
project's MaxSim in fp32 (exact, the default), with ``dtype="bfloat16"`` (the fp16 rows multiplied as stored
on a CPU with fp16 arithmetic, else in bf16), and ``bf16_store``: ``dtype="bfloat16"`` over the same store recoded
to the bf16 codec (rows multiplied as stored, no conversion). Scores are compared with the plain path's.

    OMP_NUM_THREADS=2 COMPVERIFY_DATA=/path/to/data python benchmarks/maxsim_store.py [--every 10] [--rounds 3]

Writes benchmarks/results/maxsim_store.{md,json}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from interleaved import benchmark_args
from rerank_common import PaddedCorpus, at_depth, bf16_store, conditions, interleave, ratio_cells, scifact_candidates

import pyterrier_compverify as cv
from pyterrier_compverify.reporting import write_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=int, default=10, help="time every n-th query (30 of SciFact's 300)")
    args = benchmark_args(parser, "maxsim_store")
    started = time.time()
    encoder = cv.TokenEncoder(device="cpu")
    _, indices, top = scifact_candidates(encoder, depth=1000)
    plain = PaddedCorpus(indices.store)
    fp32 = cv.MaxSim(encoder, store=indices.store)
    bf16 = cv.MaxSim(encoder, store=indices.store, dtype="bfloat16")
    bf16_rows = cv.MaxSim(encoder, store=bf16_store(indices.store), dtype="bfloat16")
    rows = []
    for depth in (10, 100, 1000):
        frame = at_depth(top, depth, args.every)
        n = frame["qid"].nunique()
        fns = {
            "plain": lambda f=frame: plain.maxsim(f),
            "fp32": lambda f=frame: fp32(f),
            "bf16": lambda f=frame: bf16(f),
            "bf16_store": lambda f=frame: bf16_rows(f),
        }
        for fn in fns.values():
            fn()  # warm-up: the store's pages in memory
        times, results = interleave(fns, args.rounds)
        for name, seconds in times.items():
            diff = 0.0 if name == "plain" else float(np.abs(results[name]["score"].to_numpy() - results["plain"]).max())
            rows.append({"depth": depth, "path": name, "queries": n, "ms_per_query_best": 1000 * min(seconds) / n,
                         "ms_per_query_rounds": [round(1000 * s / n, 2) for s in seconds],
                         "max_abs_diff_to_plain": diff})  # fmt: skip
        for name in ("fp32", "bf16", "bf16_store"):
            rows.append({"depth": depth, "path": f"{name} / plain", **ratio_cells(times, name, "plain")})
    table = pd.DataFrame(rows)
    summary = pd.DataFrame(list(conditions().items()), columns=["measurement", "value"]).astype(str)
    markdown = table.to_markdown(index=False, floatfmt=".3g") + "\n\n" + summary.to_markdown(index=False)
    write_table(table.astype(str), Path(args.out), "MaxSim from a TokenStore vs plain PyTorch MaxSim over a padded fp32"
                " corpus", encoder, time.time() - started, markdown=markdown)  # fmt: skip
    print(markdown)


if __name__ == "__main__":
    main()
