"""The verifier tables: each head (Pooled, F0-F4) x {frozen, end-to-end} as a reranker of the dense MiniLM top-100
on SciFact test, Cranfield and CapRetrievalEn, and on the near-miss benchmark; with parameter counts and times.

    COMPVERIFY_DATA=/path/to/data python experiments/verifiers.py [--frozen-steps 200] [--e2e-steps 100]

Training rows: SciFact train claims -> cited abstracts with BM25 hard negatives, plus structural rows generated
from SciFact abstract sentences (identity positives, as in the paper, or with --positives paraphrase their
generated paraphrases). SugarCrepe, CondaQA, CapRetrieval and Cranfield stay out of training.
Writes experiments/results/verifiers.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pyterrier as pt
from ir_measures import RR, Success, nDCG

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.datasets.nearmiss import nearmiss_triplets
from pyterrier_compverify.measures import nearmiss_table
from pyterrier_compverify.negatives import RuleBasedGenerator
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.scoring import head_spec
from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier
from pyterrier_compverify.training.data import (
    SCIFACT_TEST,
    corpus_sentences,
    mix_rows,
    retrieval_triplets,
    structural_triplets,
)

COLLECTIONS = ["irds:beir/scifact/test", "irds:cranfield", "compverify/capretrieval/en"]
MEASURES = [nDCG @ 10, RR @ 10, Success @ 1, Success @ 10]
PENALTY = {"beta": 0.5, "tau": 0.9}  # PAPERS.md: beta about 0.5-1, tau 0.9


def training_rows(args) -> pd.DataFrame:
    retrieval = retrieval_triplets("irds:beir/scifact/train", held_out=SCIFACT_TEST)
    if args.edits and Path(args.edits).exists():
        edits = pd.read_json(args.edits, lines=True)
    else:
        sentences = corpus_sentences("irds:beir/scifact/train", limit=args.sentences, seed=args.seed)
        edits = RuleBasedGenerator().generate(sentences, verbose=True).table
    structural = structural_triplets(edits, positives=args.positives)
    if args.positives == "paraphrase":  # only sentences with a generated paraphrase: no identity fallback
        structural = structural[structural["positive"] != structural["anchor"]]
    n_struct = min(len(structural), int(round(len(retrieval) * args.share / (1 - args.share))))
    return mix_rows(retrieval, structural, share=n_struct / (n_struct + len(retrieval)), seed=args.seed)


def export_default(verifier) -> None:
    """Copy a frozen head's artifact (meta + weights, a few MB) into the package as the default weights."""
    import shutil

    target = Path(cv.__file__).parent / "weights" / "f4-minilm-frozen"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("pt_meta.json", "head.safetensors"):
        shutil.copyfile(Path(verifier.path) / name, target / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frozen-steps", type=int, default=200)
    parser.add_argument("--e2e-steps", type=int, default=100)
    parser.add_argument(
        "--configs",
        default="F4:frozen,F4:end-to-end,F3:frozen,F3:end-to-end",
        help="comma-separated head:mode pairs to train",
    )
    parser.add_argument("--share", type=float, default=0.5, help="structural share of the training rows")
    parser.add_argument("--sentences", type=int, default=3000, help="sentences to edit when --edits is absent")
    parser.add_argument(
        "--edits",
        default=str(DEFAULT_INDEX_DIR / "negatives-scifact.jsonl"),
        help="edits from `compverify negatives` (generated here when the file is absent)",
    )
    parser.add_argument(
        "--positives",
        default="identity",
        choices=["identity", "paraphrase"],
        help="positive of a structural row: the sentence itself (the paper) or its generated paraphrase",
    )
    parser.add_argument("--batch-size", type=int, default=16, help="the paper used 32; 16 fits 2 CPU cores")
    parser.add_argument("--cnn-channels", default="32,64", help="F3 channels (the paper: 128,256)")
    parser.add_argument(
        "--export-default",
        action="store_true",
        help="copy the frozen F4 head into the package as MapVerifier()'s default weights",
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--collections", default=",".join(COLLECTIONS))
    parser.add_argument("--nearmiss-per-category", type=int, default=200)
    parser.add_argument("--work", default=str(DEFAULT_INDEX_DIR / "verifiers"))
    parser.add_argument("--out", default="experiments/results/verifiers")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    started = time.time()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    base = cv.TokenEncoder(device="cpu")
    rows = training_rows(args)
    rows.to_json(work / "rows.jsonl", orient="records", lines=True)
    print(f"training rows: {len(rows)} ({rows['kind'].value_counts().to_dict()})")

    verifiers, timings = {}, {}
    for pair in args.configs.split(","):
        head, mode = pair.split(":")
        steps = args.frozen_steps if mode == "frozen" else args.e2e_steps
        head_config = {"channels": [int(c) for c in args.cnn_channels.split(",")]} if head == "F3" else {}
        config = VerifierTrainingConfig(
            head=head,
            head_config=head_config,
            mode=mode,
            steps=steps,
            batch_size=args.batch_size,
            seed=args.seed,
            save_steps=25,
        )
        encoder = base if mode == "frozen" else cv.TokenEncoder(device="cpu")
        folder = work / f"{head}-{mode}-{args.seed}"
        timing_file = folder / "timing.json"  # a verifier trained by an earlier run keeps that run's timing
        trained_before = (folder / "head.safetensors").exists()
        t = time.time()
        verifier, log = train_verifier(rows, folder, encoder=encoder, config=config)
        if not timing_file.exists():
            elapsed = time.time() - t
            timing = (
                {"steps": steps, "trained": "by an earlier run, timing not kept"}
                if trained_before
                else {
                    "train_s": round(elapsed, 1),
                    "steps": steps,
                    "pairs_per_s": round(steps * args.batch_size * (args.batch_size + 1) / elapsed, 1),
                    "final_loss": round(log[-1]["loss"], 4) if log else None,
                    "trained": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                }
            )
            timing_file.write_text(json.dumps(timing))
        timings[f"{head} {mode}"] = json.loads(timing_file.read_text())
        verifiers[f"{head} {mode}"] = verifier
        if args.export_default and head == "F4" and mode == "frozen":
            export_default(verifier)

    def rerankers(store_for):
        """name -> (reranker, head parameters)."""
        out = {
            "Pooled": (cv.PooledCosine(base, store=store_for(base)), 0),
            "F0 bag of similarities": (cv.BagOfSimilarities(base, store=store_for(base)), 0),
            "F1 MaxSim": (cv.MaxSim(base, store=store_for(base)), 0),
            "F2 soft alignment": (cv.SoftAlign(base, store=store_for(base)), 0),
        }
        for name, verifier in verifiers.items():
            encoder = verifier.load_encoder(
                encoder=base if not verifier.meta["fine_tuned_encoder"] else None, device="cpu"
            )
            reranker = verifier.reranker(encoder=encoder, store=store_for(encoder))
            out[f"{name}"] = (reranker, sum(p.numel() for p in reranker.head.parameters()))
            if not head_spec(verifier.meta["head"]).learned:
                continue  # a weight-free head's score is no verifier in [-1, 1] for the penalty
            penalised = verifier.reranker(encoder=encoder, store=store_for(encoder), penalty=PENALTY)
            out[f"F1 MaxSim - penalty({name})"] = (penalised, sum(p.numel() for p in penalised.head.parameters()))
        return out

    retrieval_tables = []
    for dataset_id in args.collections.split(","):
        collection = load_collection(dataset_id)
        stores = {}

        def store_for(encoder, collection=collection, stores=stores):
            if encoder.fingerprint not in stores:
                stores[encoder.fingerprint] = build_indices(collection, encoder, DEFAULT_INDEX_DIR).store
            return stores[encoder.fingerprint]

        indices = build_indices(collection, base, DEFAULT_INDEX_DIR)
        indices.flex.verbose = False
        dense = base.query_encoder() >> indices.flex.retriever(num_results=100, drop_query_vec=True)
        systems = {"Dense (encoder only)": dense}
        params = {"Dense (encoder only)": 0}
        for name, (reranker, n_params) in rerankers(store_for).items():
            systems[f"Dense >> {name}"] = dense >> reranker
            params[f"Dense >> {name}"] = n_params
        t = time.time()
        res = pt.Experiment(
            list(systems.values()),
            collection.topics(),
            collection.qrels(),
            MEASURES,
            names=list(systems),
            baseline=2,
            round=4,
            precompute_prefix=True,
        )
        res.insert(0, "collection", dataset_id)
        res["head_params"] = res["name"].map(params)
        retrieval_tables.append(res)
        print(res[["name"] + [str(m) for m in MEASURES]].to_markdown(index=False), f"({time.time() - t:.0f} s)")

    triplets = nearmiss_triplets("all").groupby("category", group_keys=False).head(args.nearmiss_per_category)
    scorers = {name: reranker for name, (reranker, _) in rerankers(lambda encoder: None).items()}
    near = nearmiss_table(scorers, triplets)
    print(near.round(4).to_markdown(index=False))

    retrieval = pd.concat(retrieval_tables, ignore_index=True)
    summary = retrieval[["collection", "name", "head_params"] + [str(m) for m in MEASURES]]
    wins = near.pivot_table(index="scorer", columns=["source", "category"], values="win_rate").round(3)
    markdown = "\n".join(
        [
            "## Training",
            "",
            pd.DataFrame(timings).T.to_markdown(),
            "",
            f"Rows: {len(rows)} ({rows['kind'].value_counts().to_dict()}), "
            f"structural share {args.share}, {args.positives} positives, seed {args.seed}.",
            "",
            "## Reranking the dense MiniLM top-100",
            "",
            summary.to_markdown(index=False),
            "",
            "## Near-miss win rate (positive above near-miss), per category",
            "",
            wins.to_markdown(),
            "",
            "## Near-miss table",
            "",
            near.round(4).to_markdown(index=False),
            "",
            "## Significance (paired t-test against F1 MaxSim)",
            "",
            retrieval.to_markdown(index=False),
        ]
    )
    table = pd.concat([retrieval.assign(table="retrieval"), near.assign(table="nearmiss")], ignore_index=True)
    write_table(
        table,
        Path(args.out),
        "Verifier family as rerankers and near-miss detectors",
        base,
        time.time() - started,
        markdown,
    )


if __name__ == "__main__":
    main()
