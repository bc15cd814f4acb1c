"""The granularity dilemma (its paper) with the offline MiniLM: fine-tune on SM, KW or SM+KW training
queries for an in-domain pool (``--in-domain``: Flickr8k's train captions, the default; COCO captions from
SugarCrepe, a near-miss test set whose text is then trained on (no labels: its captions as passages); or both)
and an out-of-domain pool (SciFact and Vaswani abstracts), then evaluate on CapRetrievalEn (fine-grained, also per
query type) and on SciFact test and Cranfield (generalisation), dense and dense >> MaxSim@100; the baseline also
with >> MapVerifier. Each seed trains into its own folder under ``--work``.

    COMPVERIFY_DATA=/path/to/data python experiments/capretrieval.py [--steps 150]

Queries, all made offline and labelled by backend:
- SM: human-written whole-passage descriptions (another caption of the same image; a paper's title for its
  abstract; Vaswani abstracts have none), standing in for the paper's LLM summaries;
- KW: keywords, WordNet hypernyms and short phrases from a spaCy parse (`KeywordQueries`).
Leakage filter: pool passages with ROUGE-L > 0.6 against any CapRetrievalEn passage are dropped; 5% of the
passages (with their queries) are held out for validation. Training: InfoNCE with in-batch negatives at
temperature 0.01 (scale 100), no repeated text in a batch, weight decay 0.1.
Writes ``--out``.{md,json} (default experiments/results/capretrieval), refusing to overwrite them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
from ir_measures import RR, Success, nDCG

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.datasets.nearmiss import sugarcrepe_captions
from pyterrier_compverify.encoder import DEFAULT_MODEL
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, bm25_pipeline, build_indices
from pyterrier_compverify.querygen import (
    KeywordQueries,
    drop_leaking,
    generate_queries,
    label_human,
    sibling_captions,
    titles,
    validation_split,
)
from pyterrier_compverify.reporting import by_query_type, refuse_overwrite, write_table
from pyterrier_compverify.training import EncoderTrainingConfig, train_encoder
from pyterrier_compverify.training.hf import NOT_IN_FINGERPRINT, RUN_FILE

TARGET = "compverify/capretrieval/en"
GENERALISATION = ["irds:beir/scifact/test", "irds:cranfield"]
MEASURES = [nDCG @ 10, nDCG @ 1, nDCG @ 5, RR @ 10, Success @ 10]


IN_DOMAIN = {
    "coco": "in-domain (COCO captions)",
    "flickr8k": "in-domain (Flickr8k train captions)",
    "coco+flickr8k": "in-domain (COCO + Flickr8k train captions)",
}
OUT_OF_DOMAIN = "out-of-domain (SciFact + Vaswani)"


def caption_pool(name: str) -> pd.DataFrame:
    """The captions of an in-domain pool (``coco``, ``flickr8k`` or both joined by ``+``): ``docno, text, image``.
    Flickr8k gives its train split only: its dev and test images stay out of training."""
    frames = []
    for part in name.split("+"):
        if part == "coco":
            frames.append(sugarcrepe_captions())
        elif part == "flickr8k":
            from pyterrier_compverify.datasets.flickr8k import flickr8k_captions

            frame = flickr8k_captions("train")
            frames.append(pd.DataFrame(
                {"docno": frame["image"] + "#" + frame["caption_id"].astype(str), "text": frame["caption"],
                 "image": frame["image"]}
            ))  # fmt: skip
        else:
            raise ValueError(f"unknown caption pool {part!r}: use coco, flickr8k or coco+flickr8k")
    return pd.concat(frames, ignore_index=True)


def pools(args, test_texts: list[str]) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """name -> (passages after the leakage filter, human SM queries), for the pools in ``args.pools``."""
    wanted = []
    if "in" in args.pools.split(","):
        captions = caption_pool(args.in_domain)
        wanted.append((IN_DOMAIN[args.in_domain], captions, sibling_captions(captions)))
    if "out" in args.pools.split(","):
        scifact = pd.DataFrame(  # abstracts without their titles, which serve as SM queries
            [{"docno": d["docno"], "title": d["title"], "text": d["text"]}
             for d in load_collection("irds:beir/scifact/test").dataset.get_corpus_iter(verbose=False)]
        )  # fmt: skip
        vaswani = pd.DataFrame(list(load_collection("vaswani").corpus_iter()))
        rng = np.random.default_rng(args.seed)
        half = args.ood_passages // 2
        ood = pd.concat(
            [
                scifact.iloc[rng.permutation(len(scifact))[:half]],
                vaswani.iloc[rng.permutation(len(vaswani))[:half]].assign(docno=lambda f: "vaswani-" + f["docno"]),
            ],
            ignore_index=True,
        )
        wanted.append((OUT_OF_DOMAIN, ood, titles(ood)))
    out = {}
    for name, passages, human in wanted:
        keep = drop_leaking(passages["text"].tolist(), test_texts, threshold=0.6)
        print(f"{name}: {len(passages)} passages, {int((~keep).sum())} dropped by the leakage filter", flush=True)
        out[name] = (passages[keep].reset_index(drop=True), human)
    return out


def pool_slug(pool: str) -> str:
    """A file-name form of a pool's name.

    >>> pool_slug("in-domain (COCO + Flickr8k train captions)"), pool_slug(OUT_OF_DOMAIN)
    ('in-domain-coco+flickr8k', 'out-of-domain')
    """
    return {name: "in-domain-" + key for key, name in IN_DOMAIN.items()}.get(pool, pool.split()[0])


def training_queries(pool: str, passages, human, work: Path) -> dict[str, pd.DataFrame]:
    """strategy -> labelled query rows (SM, KW, SM+KW), cached as JSONL under a name that holds a digest of the
    pool's docnos (the out-of-domain sample depends on ``--seed`` and ``--ood-passages``)."""
    digest = hashlib.sha256("\n".join(passages["docno"].astype(str)).encode()).hexdigest()[:10]
    path = work / f"queries-{pool_slug(pool)}-{digest}.jsonl"
    if path.exists():
        rows = pd.read_json(path, lines=True, dtype={"docno": str})
    else:
        captions = pool != OUT_OF_DOMAIN
        sm = label_human(human, passages, source="sibling-caption" if captions else "scifact-title")
        kw = generate_queries(passages, KeywordQueries(prefer_concrete=captions))
        rows = pd.concat([sm, kw], ignore_index=True)
        rows.to_json(path, orient="records", lines=True)
    return {"SM": rows[rows.strategy == "SM"], "KW": rows[rows.strategy == "KW"], "SM+KW": rows}


def train(name: str, rows: pd.DataFrame, work: Path, args, steps: int) -> tuple[str, dict]:
    """Fine-tune MiniLM on ``rows`` into ``work/name`` (once: a finished folder is reused, and refused when it was
    trained with other settings); its model path and the run's facts."""
    out = work / name
    info_file = out / "run.json"
    config = EncoderTrainingConfig(
        steps=steps,
        batch_size=args.batch_size,
        lr=args.lr,
        weight_decay=0.1,
        scale=100.0,  # temperature 0.01
        seed=args.seed,
        save_steps=50,
        no_duplicates=True,
        bf16=args.bf16,
    )
    if info_file.exists():
        made = json.loads((out / RUN_FILE).read_text())["config"]
        wanted = json.loads(json.dumps({k: v for k, v in asdict(config).items() if k not in NOT_IN_FINGERPRINT}))
        differs = [f"{k} {made.get(k)!r} -> {v!r}" for k, v in wanted.items() if made.get(k) != v]
        if differs:
            raise SystemExit(f"{out} was trained with other settings ({', '.join(differs)}): move it away")
    else:
        train_rows, valid = validation_split(rows, share=0.05, seed=args.seed)
        pairs = train_rows.rename(columns={"query": "anchor", "passage": "positive"})[["anchor", "positive"]]
        started = time.time()
        train_encoder(pairs, out, config=config, device=args.device)
        info = {
            "queries": len(rows),
            "passages": rows["docno"].nunique(),
            "validation_queries": len(valid),
            "backends": "; ".join(f"{k} {v}" for k, v in rows.groupby("backend").size().items()),
            "steps": steps,
            "train_s": round(time.time() - started, 1),
        }
        info_file.write_text(json.dumps(info))
    return str(out / "final"), {"model": name, **json.loads(info_file.read_text())}


def evaluate(models: dict[str, str], work: Path, args) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """All measures of every system on each collection, and nDCG@10 per query type where it has types."""
    tables, per_type = [], {}
    for dataset_id in args.collections.split(","):
        collection = load_collection(dataset_id)
        topics, qrels = collection.topics(), collection.qrels()
        systems = {}
        for name, path in models.items():
            encoder = cv.TokenEncoder(path, max_length=128, batch_size=32, device=args.device, verbose=False)
            indices = build_indices(collection, encoder, work / "indices", verbose=False)
            dense = encoder.query_encoder() >> indices.flex.retriever(num_results=100, drop_query_vec=True)
            systems[name] = dense
            systems[f"{name} >> MaxSim"] = dense >> cv.MaxSim(encoder, store=indices.store)
            if name == "baseline":
                systems["baseline >> MapVerifier"] = dense >> cv.MapVerifier(encoder=encoder, store=indices.store)
                systems["BM25"] = bm25_pipeline(indices.pisa, language=indices.language)
        t = time.time()
        runs = {name: system(topics) for name, system in systems.items()}  # once, for both tables
        res = pt.Experiment(
            list(runs.values()), topics, qrels, MEASURES, names=list(runs), baseline=0, round=4, verbose=True
        )
        res.insert(0, "collection", dataset_id)
        tables.append(res)
        types = collection.query_types()
        if types:
            per_type[dataset_id] = by_query_type(runs, topics, qrels, types)
        print(res[["name", "nDCG@10"]].to_markdown(index=False), f"({time.time() - t:.0f} s)", flush=True)
    return pd.concat(tables, ignore_index=True), per_type


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=120, help="steps on the in-domain pool")
    parser.add_argument("--ood-steps", type=int, default=60, help="steps on the out-of-domain pool (long passages)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-5, help="the paper: 5e-6 over about 4K steps")
    parser.add_argument("--ood-passages", type=int, default=2000)
    parser.add_argument("--strategies", default="SM,KW,SM+KW")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--pools", default="in,out", help="in (in-domain captions) and/or out (abstracts)")
    parser.add_argument(
        "--in-domain",
        default="flickr8k",
        choices=sorted(IN_DOMAIN),
        help="the in-domain caption pool (coco: SugarCrepe's captions, a near-miss test set's text; the default "
        "before 2026-12-07, behind capretrieval.md)",
    )
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast in training")
    parser.add_argument("--collections", default=",".join([TARGET, *GENERALISATION]))
    parser.add_argument("--device", default=None)
    parser.add_argument("--work", default=str(DEFAULT_INDEX_DIR / "capretrieval-finetune"))
    parser.add_argument("--out", default="experiments/results/capretrieval")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    started = time.time()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    test_texts = [d["text"] for d in load_collection(TARGET).corpus_iter()]
    models, runs = {"baseline": DEFAULT_MODEL}, []
    for pool, (passages, human) in pools(args, test_texts).items():
        queries = training_queries(pool, passages, human, work)
        for strategy in args.strategies.split(","):
            tag = f"{'OOD' if pool == OUT_OF_DOMAIN else 'ID-' + args.in_domain} {strategy}"
            steps = args.ood_steps if pool == OUT_OF_DOMAIN else args.steps
            name = f"{tag}-s{args.seed}".replace(" ", "-")  # one folder per seed
            models[tag], info = train(name, queries[strategy], work, args, steps)
            runs.append({"pool": pool, "strategy": strategy, **info})
    runs = pd.DataFrame(runs)
    print(runs.to_markdown(index=False), flush=True)

    results, per_type = evaluate(models, work, args)
    wide = results.pivot_table(index="name", columns="collection", values="nDCG@10", sort=False)
    wide = wide[args.collections.split(",")]
    delta = (wide - wide.loc["baseline"]).add_suffix(" Δ vs baseline")
    markdown = "\n".join(
        [
            "## Training runs (ID = in-domain captions, OOD = SciFact + Vaswani abstracts)",
            "",
            runs.to_markdown(index=False),
            "",
            f"Batch {args.batch_size}, lr {args.lr}, weight decay 0.1, InfoNCE temperature "
            f"0.01 with in-batch negatives, max length 128, seed {args.seed}.",
            "",
            "## nDCG@10 (dense top 100; >> reranks it)",
            "",
            pd.concat([wide, delta], axis=1).round(4).to_markdown(),
            "",
            *[
                part
                for dataset_id, table in per_type.items()
                for part in (f"## {dataset_id}: nDCG@10 per query type", "", table.to_markdown(), "")
            ],
            "## All measures (`pt.Experiment`, paired t-tests against the baseline dense run)",
            "",
            results.to_markdown(index=False),
        ]
    )
    write_table(results, Path(args.out), "CapRetrieval fine-tuning: the granularity dilemma", None,
                time.time() - started, markdown)  # fmt: skip


if __name__ == "__main__":
    main()
