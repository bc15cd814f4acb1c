"""Benchmark: encoding throughput against ``SentenceTransformer.encode`` in fp32, on the same texts in one run.

Variants, interleaved (each round runs them all once), best of ``--rounds``, spread shown:

- ``st_fp32``: ``SentenceTransformer.encode(texts, batch_size=32)``, fp32, pooled vectors only: the baseline;
- ``st_autocast_bf16`` / ``st_bf16_weights``: the same under ``torch.autocast("cpu", dtype=torch.bfloat16)`` /
  on a bf16 copy of the model;
- ``token_encoder_fp32`` / ``token_encoder_autocast`` / ``token_encoder_bf16``: ``TokenEncoder.encode`` (token
  states + pooled) with ``dtype="fp32"``, with ``dtype="fp32"`` under autocast, and with ``dtype="bf16"``
  (its bf16 copy of the transformer, pooling in fp32);
- ``indexer_bf16``: the one-pass indexer, ``TokenStore.indexer(encoder, flex_index=FlexIndex(...))``, writing
  the token store and the FlexIndex (``dtype="bf16"``).

Pooled vectors are compared with ``st_fp32`` (cosine; the indexer's read back from its FlexIndex) and token states
of ``token_encoder_bf16`` with ``token_encoder_fp32``.

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data OMP_NUM_THREADS=2 python benchmarks/encode.py [--docs 2000]

Writes benchmarks/results/encode.{md,json}.
"""

from __future__ import annotations

import argparse
import copy
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
from interleaved import benchmark_args, interleave, load_average, ratio, spread, write_results
from pyterrier_dr import FlexIndex

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection


def min_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Smallest row-wise cosine between two (N, d) tensors."""
    return float(torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=-1).min())


def token_state_agreement(a: list[torch.Tensor], b: list[torch.Tensor]) -> dict:
    """Cosine between corresponding token states of two encodings (each list: N tensors (n_i, d))."""
    cos = torch.nn.functional.cosine_similarity(torch.cat(a), torch.cat(b), dim=-1)
    return {"min": float(cos.min()), "mean": float(cos.mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="irds:beir/scifact/test")
    parser.add_argument("--docs", type=int, default=2000, help="first N documents of the corpus")
    args = benchmark_args(parser, "encode")
    started = time.time()
    cv.setup_local_data()
    collection = load_collection(args.dataset)
    docs = [doc for _, doc in zip(range(args.docs), collection.corpus_iter())]
    texts = [doc["text"] for doc in docs]

    fp32 = cv.TokenEncoder(device="cpu", dtype="fp32")
    bf16 = cv.TokenEncoder(device="cpu", dtype="bf16")
    st = fp32.model
    st_bf16 = copy.deepcopy(st).to(torch.bfloat16)
    n_tokens = int(fp32.token_lengths(texts).sum())
    tmp = Path(tempfile.mkdtemp(prefix="encode-bench-"))

    def st_encode(model):
        return model.encode(texts, batch_size=fp32.batch_size, convert_to_tensor=True).float()

    def autocast(fn):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return fn()

    def indexer():
        flex = FlexIndex(str(tmp / "bench.flex"), verbose=False)
        store = cv.TokenStore(tmp / "bench.tokens")
        store.indexer(bf16, flex_index=flex, verbose=False, mode="overwrite").index(iter(docs))
        vectors = flex.payload(return_docnos=False)[0]  # in corpus order
        return torch.from_numpy(vectors.astype("float32"))

    variants = {
        "st_fp32": lambda: st_encode(st),
        "st_autocast_bf16": lambda: autocast(lambda: st_encode(st)),
        "st_bf16_weights": lambda: st_encode(st_bf16),
        "token_encoder_fp32": lambda: fp32.encode(texts),
        "token_encoder_autocast": lambda: autocast(lambda: fp32.encode(texts)),
        "token_encoder_bf16": lambda: bf16.encode(texts),
        "indexer_bf16": indexer,
    }
    for run in variants.values():  # a warm-up: lazy loads and first-call costs are not timed (one broken round
        run()  # of encode.md, 0.24x against 3.54x, was the first)
    load_before = load_average()
    times, results = interleave(variants, rounds=args.rounds)
    load_after = load_average()
    shutil.rmtree(tmp, ignore_errors=True)

    def pooled(name):
        out = results[name]
        return out.pooled if isinstance(out, cv.encoder.EncodedTexts) else out

    rows = []
    for name, seconds in times.items():
        best, per_round = ratio(times, "st_fp32", name)
        rows.append(
            {
                "variant": name,
                "docs_per_s": round(len(texts) / min(seconds), 1),
                "docs_per_s_all_rounds": ", ".join(f"{len(texts) / s:.1f}" for s in seconds),
                "tokens_per_s": round(n_tokens / min(seconds)),
                "x_st_fp32_throughput": round(best, 2),
                "x_st_fp32_per_round": spread(per_round),
                "pooled_min_cosine_to_st_fp32": round(min_cosine(pooled(name), pooled("st_fp32")), 6),
            }
        )
    table = pd.DataFrame(rows)
    states = token_state_agreement(*(results[f"token_encoder_{d}"].token_states for d in ("bf16", "fp32")))
    notes = (
        f"{len(texts)} documents of {args.dataset} ({n_tokens} tokens after truncation to {fp32.max_length}), "
        f"batch size {fp32.batch_size}, {torch.get_num_threads()} torch threads, {args.rounds} interleaved rounds. "
        f"Load average before / after: {load_before} / {load_after}. Token states bf16 vs fp32: cosine min "
        f"{states['min']:.6f}, mean {states['mean']:.6f}."
    )
    write_results(
        table, Path(args.out), "Encoding throughput against SentenceTransformer.encode fp32", bf16, started, notes
    )


if __name__ == "__main__":
    main()
