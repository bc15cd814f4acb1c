"""Compressed token stores: bytes per token and nDCG@10 of dense % 100 >> MaxSim / >> MapVerifier() when the
TokenStore keeps fp16 states, bf16, int8 with a per-token scale, or product quantisation (``pq``, faiss-trained
codebooks), each reranked in every compute dtype of ``--dtypes`` (the reranker's ``dtype``). The fp16 store of
each collection is built once (or reused from the index cache, as ``compverify evaluate`` builds it) and recoded
to each codec without re-encoding (``TokenStore.recode``).

    COMPVERIFY_DATA=/path/to/data python experiments/store_codecs.py [--codecs fp16,int8,pq128,pq96,pq64]
    COMPVERIFY_DATA=/path/to/data python experiments/store_codecs.py --codecs fp16,bf16 --dtypes float32,bfloat16

One first stage per collection (dense top 100, query token states shared with the rerankers), so every row of a
collection reranks the same candidates; deltas are against the first variant (fp16, float32) with paired t-tests
over queries. The rerank time per query is measured on the same machine in one pass (no interleaving: indicative
only). Writes ``--out`` (default experiments/results/store-codecs).{md,json}, refusing to overwrite them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import pyterrier as pt
from ir_measures import nDCG

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.encoder import DEFAULT_MODEL
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.store_codecs import resolve_codec

COLLECTIONS = ["irds:beir/scifact/test", "irds:cranfield", "compverify/capretrieval/en"]
CODECS = {
    "fp16": "fp16",
    "bf16": "bf16",
    "int8": "int8",
    "pq": "pq",  # the package default: m=128 when store-codecs.md was made, m=96 since
    "pq128": {"name": "pq", "m": 128},
    "pq96": {"name": "pq", "m": 96},
    "pq64": {"name": "pq", "m": 64},
}


def coded_store(store: cv.TokenStore, name: str) -> tuple[cv.TokenStore, float | None]:
    """``store`` recoded to codec ``name`` beside it, and the seconds that took (None: reused, or fp16)."""
    if name == "fp16":
        return store, None
    codec = resolve_codec(CODECS[name])
    target = cv.TokenStore(Path(store.path).with_name(f"{Path(store.path).stem}.{name}.tokens"))
    codec.check_dim(store.encoder_info["dim"])
    if target.built() and target.codec == codec.describe() and target.encoder_info == store.encoder_info:
        return target, None
    started = time.time()
    store.recode(target.path, codec, mode="overwrite", verbose=False)
    return cv.TokenStore(target.path), time.time() - started


def states_bytes(store: cv.TokenStore) -> tuple[int, int]:
    """Bytes of the token states (payload and codec model) and of the whole folder."""
    files = {p.name: p.stat().st_size for p in Path(store.path).iterdir() if p.is_file()}
    whole = sum(files.values())
    return whole - sum(files.get(n, 0) for n in ("offsets.npy", "docnos.npids", "pt_meta.json")), whole


def top10(run: pd.DataFrame) -> pd.Series:
    """qid -> the tuple of its top 10 docnos."""
    return run.sort_values(["qid", "rank"]).groupby("qid")["docno"].apply(lambda d: tuple(d[:10]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default=",".join(COLLECTIONS))
    parser.add_argument("--codecs", default="fp16,int8,pq")
    parser.add_argument(
        "--dtypes", default="float32", help="reranker compute dtypes, e.g. float32,bfloat16 (each codec with each)"
    )
    parser.add_argument(
        "--variants", help="codec:dtype pairs instead of every codec with every dtype, e.g. fp16:float32,int8:int8"
    )
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    parser.add_argument("--out", default="experiments/results/store-codecs")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    started = time.time()
    encoder = cv.TokenEncoder(DEFAULT_MODEL, max_length=128, verbose=False)
    dtypes = args.dtypes.split(",")
    variants = [(c, d) for c in args.codecs.split(",") for d in dtypes]  # the first one is the baseline
    if args.variants:
        variants = [tuple(pair.split(":")) for pair in args.variants.split(",")]
    label = lambda codec, dtype: codec if dtype == "float32" else f"{codec}, {dtype} product"  # noqa: E731
    codecs = [label(c, d) for c, d in variants]
    rows = []
    for dataset_id in args.collections.split(","):
        collection = load_collection(dataset_id)
        indices = build_indices(collection, encoder, args.index_dir, verbose=False)
        topics, qrels = collection.topics(), collection.qrels()
        first = encoder.query_token_encoder() >> indices.flex.retriever(num_results=args.depth, drop_query_vec=True)
        candidates = first(topics)
        num_tokens = indices.store.meta["num_tokens"]
        for reranker_name in ("MaxSim", "MapVerifier"):
            runs = {}
            for (codec, dtype), name in zip(variants, codecs):
                store, recode_s = coded_store(indices.store, codec)
                reranker = (
                    cv.MaxSim(encoder, store=store, dtype=dtype)
                    if reranker_name == "MaxSim"
                    else cv.MapVerifier(encoder=encoder, store=store, dtype=dtype)
                )
                t0 = time.perf_counter()
                runs[name] = reranker(candidates)
                ms_per_query = (time.perf_counter() - t0) * 1e3 / len(topics)
                payload, whole = states_bytes(store)
                rows.append(
                    {
                        "collection": dataset_id,
                        "reranker": reranker_name,
                        "codec": name,
                        "dtype": dtype,
                        "codec_params": store.codec,
                        "bytes_per_token": round(payload / num_tokens, 1),
                        "store_bytes_per_token": round(whole / num_tokens, 1),
                        "store_mb": round(whole / 1e6, 1),
                        "recode_s": None if recode_s is None else round(recode_s, 1),
                        "rerank_ms_per_query": round(ms_per_query, 1),
                    }
                )
            res = pt.Experiment(
                list(runs.values()), topics, qrels, [nDCG @ 10], names=list(runs), baseline=0, round=4
            )  # fmt: skip
            for row in rows[-len(codecs) :]:
                got = res[res["name"] == row["codec"]].iloc[0]
                row["nDCG@10"] = float(got["nDCG@10"])
                row["delta_points"] = round(100 * (row["nDCG@10"] - float(res.iloc[0]["nDCG@10"])), 2)
                row["p_value"] = None if row["codec"] == codecs[0] else round(float(got["nDCG@10 p-value"]), 4)
                same = top10(runs[row["codec"]]) == top10(runs[codecs[0]])
                row["same_top10_share"] = round(float(same.mean()), 3)
            print(pd.DataFrame(rows[-len(codecs) :]).drop(columns="codec_params").to_markdown(index=False), flush=True)
    results = pd.DataFrame(rows)
    results["codec_params"] = results["codec_params"].map(str)
    wide = results.pivot_table(index=["reranker", "codec"], columns="collection", values="nDCG@10", sort=False)[
        args.collections.split(",")
    ]
    markdown = "\n".join(
        [
            "## nDCG@10 (dense top 100 reranked from each store)",
            "",
            wide.to_markdown(),
            "",
            "## All rows",
            "",
            "delta_points: nDCG@10 points against the first codec (fp16), with the paired t-test p-value;",
            "same_top10_share: queries whose top 10 equals fp16's; bytes_per_token: the states (payload and codec",
            "model); store_bytes_per_token: the whole folder (with offsets and docnos); recode_s: None when reused.",
            "",
            results.to_markdown(index=False),
        ]
    )
    write_table(results, Path(args.out), "TokenStore codecs: bytes per token and nDCG@10", encoder,
                time.time() - started, markdown)  # fmt: skip


if __name__ == "__main__":
    main()
