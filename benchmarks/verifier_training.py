"""Benchmark: verifier training throughput (scored pairs per second) for a head and mode at a batch size, on real
training rows (SciFact train triplets with BM25 negatives). Each step scores B x (B + 1) pairs.

    COMPVERIFY_DATA=/path/to/data python benchmarks/verifier_training.py [--head F4 --mode end-to-end --batch-size 32]

Writes benchmarks/results/verifier_training-<head>-<mode>-<batch>.{md,json}.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

import pyterrier_compverify as cv
from pyterrier_compverify.reporting import write_table
from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier
from pyterrier_compverify.training.data import retrieval_triplets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--head", default="F4")
    parser.add_argument("--mode", default="end-to-end")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4, help="timed steps (one more runs first as warm-up)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "verifier_training"))
    args = parser.parse_args()
    cv.setup_local_data()
    rows = retrieval_triplets("irds:beir/scifact/train")
    encoder = cv.TokenEncoder(device="cpu")
    times = []
    for steps in (1, 1 + args.steps):  # the difference removes start-up and saving
        config = VerifierTrainingConfig(
            head=args.head, mode=args.mode, steps=steps, batch_size=args.batch_size, save_steps=10_000, logging_steps=1
        )
        with tempfile.TemporaryDirectory() as tmp:
            start = time.time()
            train_verifier(
                rows,
                tmp,
                encoder=encoder if args.mode == "frozen" else cv.TokenEncoder(device="cpu"),
                config=config,
                verbose=False,
                resume=False,
            )
            times.append(time.time() - start)
    per_step = (times[1] - times[0]) / args.steps
    pairs = args.batch_size * (args.batch_size + 1)
    result = {
        "head": args.head,
        "mode": args.mode,
        "batch_size": args.batch_size,
        "timed_steps": args.steps,
        "seconds_per_step": round(per_step, 2),
        "pairs_per_step": pairs,
        "pairs_per_second": round(pairs / per_step, 1),
        "triplets_per_second": round(args.batch_size / per_step, 2),
    }
    table = pd.DataFrame(list(result.items()), columns=["measurement", "value"]).astype(str)
    stem = Path(f"{args.out}-{args.head}-{args.mode}-{args.batch_size}")
    write_table(table, stem, "Verifier training throughput", encoder, sum(times))
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()
