"""Benchmark: verifier training throughput (scored pairs per second), the re-encoding frozen trainer against the
cached-state trainers, side by side in one run on real rows (SciFact train triplets with BM25 negatives, max
length 128). Each step scores B x (B + 1) pairs. The baseline is the trainer as the verifier issue filed it
(re-encoding every batch with an fp32 encoder); the next row gives it today's default (bf16) encoder, which the
re-encoding trainer runs in its fp32 weights without autocast either way, so the two rows measure one trainer
twice (a control of the run-to-run spread).
Rounds are interleaved; best of ``--rounds``, spread shown. The state caches are built once before timing (their
cost is reported on its own line); a step's time is the best interval between consecutive optimiser steps inside
one run (start-up and saving excluded).

    COMPVERIFY_DATA=/path/to/data python benchmarks/verifier_training.py [--head F4 --batch-size 32]

Writes benchmarks/results/verifier_training-<head>[-<config>]-<batch>.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd

import pyterrier_compverify as cv
from pyterrier_compverify.reporting import write_table
from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier
from pyterrier_compverify.training.data import retrieval_triplets

VARIANTS = {  # name -> config overrides (``encoder_dtype``: the encoder's); the first is the baseline of the ratios
    "frozen, re-encoding every batch, fp32 encoder (as filed)": {
        "mode": "frozen",
        "cache_states": False,
        "encoder_dtype": "fp32",
    },
    "frozen, re-encoding every batch (old)": {"mode": "frozen", "cache_states": False},
    "frozen, cached states": {"mode": "frozen"},
    "frozen, cached states, bf16": {"mode": "frozen", "bf16": True},
    "last layer, cached hidden states": {"mode": "last-layer"},
    "last layer, cached hidden states, bf16": {"mode": "last-layer", "bf16": True},
}


def seconds_per_step(rows, encoder, base: dict, overrides: dict, steps: int, cache_dir: str) -> float:
    """Best wall time between consecutive optimiser steps of one run of ``1 + steps`` steps (the first step, start-up,
    caching and saving are outside every interval)."""
    from transformers import TrainerCallback

    stamps = []

    class Stamp(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())

    overrides = dict(overrides)
    if "encoder_dtype" in overrides:
        encoder = cv.TokenEncoder(device="cpu", dtype=overrides.pop("encoder_dtype"))
    config = VerifierTrainingConfig(**{**base, **overrides, "steps": 1 + steps, "cache_dir": cache_dir})
    with tempfile.TemporaryDirectory() as tmp:
        train_verifier(rows, tmp, encoder=encoder, config=config, verbose=False, resume=False, callbacks=[Stamp()])
    return min(b - a for a, b in zip(stamps, stamps[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--head", default="F4")
    parser.add_argument("--head-config", default="{}", help='head arguments as JSON, e.g. {"dim": 128}')
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per measurement (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2000, help="training rows (all their texts are cached)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "verifier_training"))
    args = parser.parse_args()
    cv.setup_local_data()
    started = time.time()
    rows = retrieval_triplets("irds:beir/scifact/train").head(args.rows)
    encoder = cv.TokenEncoder(device="cpu")
    head_config = json.loads(args.head_config)
    base = dict(head=args.head, head_config=head_config, batch_size=args.batch_size, save_steps=10_000, logging_steps=1)
    with tempfile.TemporaryDirectory() as cache_dir:
        cache_times = {}
        for name, overrides in VARIANTS.items():  # build each cache once, untimed by the rounds
            if overrides.get("cache_states", True):
                start = time.perf_counter()
                seconds_per_step(rows, encoder, base, overrides, 1, cache_dir)
                cache_times[name] = time.perf_counter() - start
        measured = {name: [] for name in VARIANTS}
        for _ in range(args.rounds):
            for name, overrides in VARIANTS.items():
                measured[name].append(seconds_per_step(rows, encoder, base, overrides, args.steps, cache_dir))
    pairs = args.batch_size * (args.batch_size + 1)
    baseline = min(measured[next(iter(VARIANTS))])
    table = pd.DataFrame(
        [
            {
                "trainer": name,
                "s/step (best)": round(min(times), 3),
                "s/step (all rounds)": ", ".join(f"{t:.3f}" for t in times),
                "pairs/s": round(pairs / min(times), 1),
                "x old": round(baseline / min(times), 1),
                "first run incl. caching (s)": round(cache_times[name], 1) if name in cache_times else "",
            }
            for name, times in measured.items()
        ]
    )
    widths = "".join(f"-{k}{v}" for k, v in head_config.items())
    stem = Path(f"{args.out}-{args.head}{widths}-{args.batch_size}")
    title = (
        f"Verifier training throughput ({args.head} {head_config or 'default widths'}, batch {args.batch_size}, "
        f"{len(rows)} SciFact train rows)"
    )
    write_table(table, stem, title, encoder, time.time() - started)
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()
