"""Benchmark: verifier training throughput (scored pairs per second), the re-encoding frozen trainer against the
cached-state trainers, side by side in one run on real rows (SciFact train triplets with BM25 negatives, max
length 128). Each step scores B x (B + 1) pairs. The baseline is the frozen trainer as the verifier issue
filed it: the code of commit 47fb551, run in a child process (``git archive``; needs a full clone), on the same
rows and config; the next row is today's code re-encoding every batch. "full last layer" is the cached trainer
with F4's last layer computing every position (as before [CLS]-only training). The bf16 rows run only on a CPU
with native bf16 (AVX-512 BF16 / AMX); elsewhere the report says they were skipped.
Rounds are interleaved; best of ``--rounds``, spread shown. The state caches are built once before timing (their
cost is reported on its own line); a step's time is the best interval between consecutive optimiser steps inside
one run (start-up and saving excluded).

    COMPVERIFY_DATA=/path/to/data python benchmarks/verifier_training.py [--head F4 --batch-size 32]

Writes benchmarks/results/verifier_training-<head>[-<config>]-<batch>.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.encoder import native_bf16
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.scoring.heads.map_transformer import MapTransformerHead
from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier
from pyterrier_compverify.training.data import SCIFACT_TEST, retrieval_triplets

AS_FILED = "47fb551"  # main when the verifier issue measured "today's frozen trainer"
VARIANTS = {  # name -> config overrides (``as_filed``: that commit's code); the first is the baseline of the ratios
    f"frozen, re-encoding every batch, as filed ({AS_FILED})": {"mode": "frozen", "as_filed": AS_FILED},
    "frozen, re-encoding every batch (today's code)": {"mode": "frozen", "cache_states": False},
    "frozen, cached states, full last layer (before [CLS]-only training)": {"mode": "frozen", "full_layers": True},
    "frozen, cached states": {"mode": "frozen"},
    "frozen, cached states, bf16": {"mode": "frozen", "bf16": True},
    "frozen, cached states, bf16, compiled head": {"mode": "frozen", "bf16": True, "compile": True},
    "last layer, cached hidden states": {"mode": "last-layer"},
    "last layer, cached hidden states, bf16": {"mode": "last-layer", "bf16": True},
    # another head on the same rows: the alignment-features MLP (AF), for its own throughput, not the F4 trainer's
    "AF head (not F4), frozen, cached states, bf16": {"mode": "frozen", "bf16": True, "head": "AF", "head_config": {}},
}

# run in a child process whose ``pyterrier_compverify`` is an older commit's (PYTHONPATH before the installed one)
_AS_FILED_STEP = """
import json, sys, tempfile, time
import pandas as pd
import pyterrier_compverify as cv
from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier
from transformers import TrainerCallback
spec = json.loads(sys.argv[1])
stamps = []
class Stamp(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        stamps.append(time.perf_counter())
config = VerifierTrainingConfig(**spec["config"])
with tempfile.TemporaryDirectory() as tmp:
    train_verifier(pd.read_json(spec["rows"], lines=True), tmp, encoder=cv.TokenEncoder(device="cpu"), config=config,
                   verbose=False, resume=False, callbacks=[Stamp()])
print(cv.__file__)
print(min(b - a for a, b in zip(stamps, stamps[1:])))
"""


def seconds_per_step(rows, encoder, base: dict, overrides: dict, steps: int, cache_dir: str) -> float:
    """Best wall time between consecutive optimiser steps of one run of ``1 + steps`` steps (the first step, start-up,
    caching and saving are outside every interval). ``full_layers``: F4's last layer computes every position, as the
    trainer did before it computed only [CLS] in training too."""
    from transformers import TrainerCallback

    overrides = dict(overrides)
    if "as_filed" in overrides:
        return _as_filed_seconds_per_step(rows, overrides.pop("as_filed"), {**base, **overrides, "steps": 1 + steps})
    if overrides.pop("full_layers", False):
        MapTransformerHead.cls_only = False
        try:
            return seconds_per_step(rows, encoder, base, overrides, steps, cache_dir)
        finally:
            MapTransformerHead.cls_only = True
    stamps = []

    class Stamp(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())

    config = VerifierTrainingConfig(**{**base, **overrides, "steps": 1 + steps, "cache_dir": cache_dir})
    with tempfile.TemporaryDirectory() as tmp:
        train_verifier(rows, tmp, encoder=encoder, config=config, verbose=False, resume=False, callbacks=[Stamp()])
    return min(b - a for a, b in zip(stamps, stamps[1:]))


def _as_filed_seconds_per_step(rows, rev: str, config: dict) -> float:
    """The same measurement with the trainer of commit ``rev`` (its package extracted by ``git archive``)."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "pyterrier_compverify"], capture_output=True)
        if archive.returncode:
            raise RuntimeError(f"git archive {rev} failed ({archive.stderr.decode().strip()}): run in a full clone")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        rows.to_json(f"{tmp}/rows.jsonl", orient="records", lines=True)
        spec = json.dumps({"rows": f"{tmp}/rows.jsonl", "config": config})
        env = {**os.environ, "PYTHONPATH": tmp}
        if "COMPVERIFY_DATA" in env:  # the child runs elsewhere (below): a relative data folder must stay valid
            env["COMPVERIFY_DATA"] = str(Path(env["COMPVERIFY_DATA"]).resolve())
        # cwd = the extracted folder: ``python -c`` puts the working directory first on sys.path, so a checkout's
        # own package there would shadow the old one; the child prints which package it ran
        command = [sys.executable, "-c", _AS_FILED_STEP, spec]
        out = subprocess.run(command, env=env, cwd=tmp, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"the {rev} trainer failed: {out.stderr.strip().splitlines()[-1]}")
        package, seconds = out.stdout.strip().splitlines()[-2:]
        if not Path(package).resolve().is_relative_to(Path(tmp).resolve()):
            raise RuntimeError(f"the child ran {package}, not commit {rev}'s package")
        return float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--head", default="F4")
    parser.add_argument("--head-config", default="{}", help='head arguments as JSON, e.g. {"dim": 128}')
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per measurement (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2000, help="training rows (all their texts are cached)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "verifier_training"))
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out (the stem is OUT-HEAD[-WIDTHS]-BATCH)"
    )
    args = parser.parse_args()
    head_config = json.loads(args.head_config)
    widths = "".join(f"-{k}{v}" for k, v in head_config.items())
    stem = Path(f"{args.out}-{args.head}{widths}-{args.batch_size}")
    refuse_overwrite(stem, args.overwrite)
    cv.setup_local_data()
    started = time.time()
    rows = retrieval_triplets("irds:beir/scifact/train", held_out=SCIFACT_TEST).head(args.rows)
    encoder = cv.TokenEncoder(device="cpu")
    base = dict(head=args.head, head_config=head_config, batch_size=args.batch_size, save_steps=10_000, logging_steps=1)
    variants = {name: o for name, o in VARIANTS.items() if native_bf16() or not o.get("bf16")}
    skipped = [name for name in VARIANTS if name not in variants]
    with tempfile.TemporaryDirectory() as cache_dir:
        cache_times = {}
        for name, overrides in variants.items():  # build each cache once, untimed by the rounds
            if overrides.get("cache_states", True) and "as_filed" not in overrides:
                start = time.perf_counter()
                seconds_per_step(rows, encoder, base, overrides, 1, cache_dir)
                cache_times[name] = time.perf_counter() - start
        measured = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, overrides in variants.items():
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
    title = (
        f"Verifier training throughput ({args.head} {head_config or 'default widths'}, batch {args.batch_size}, "
        f"{len(rows)} SciFact train rows)"
    )
    cpu = f"CPU: {torch.backends.cpu.get_cpu_capability()}, native bf16: {native_bf16()}."
    if skipped:
        cpu += " Not run (bf16 is emulated on this CPU, about 100x slower than fp32): " + "; ".join(skipped) + "."
    markdown = table.to_markdown(index=False) + "\n\n" + cpu
    write_table(table, stem, title, encoder, time.time() - started, markdown=markdown)
    print(markdown)


if __name__ == "__main__":
    main()
