"""The Model A vs Model B trade-off (PAPERS.md part A): backbone (no training), Model A (retrieval rows only) and
Model B (the same plus structural rows at a 14% share), trained with the same steps and hyperparameters for each
seed, then evaluated zero-shot and on near-misses.

    COMPVERIFY_DATA=/path/to/data python experiments/biencoders.py [--seeds 42,43,44] [--steps 90] [--balanced-seeds 42]

- Retrieval: dense exact search with each model on Cranfield, Vaswani and CapRetrievalEn (zero-shot) and SciFact
  test (in-domain: SciFact train and corpus sentences feed the training rows), nDCG@10, RR@10, Success@1/10;
  mean and std over seeds, relative change B vs A, a paired t-test B vs A on per-query nDCG@10 averaged over
  seeds, and `pt.Experiment`'s paired tests of every run against the backbone.
- Near-misses: SugarCrepe and CondaQA triplets (win rate, AUC, mean near-miss similarity) and held-out generated
  SciFact edits (negation / binding / spatial sentences that no training row used: mean similarity and the paper's
  B-lower share against A of the same seed).

Finished trainings and runs are kept under --work, so a killed experiment resumes where it stopped.
Writes ``--out`` (default experiments/results/biencoders).{md,json}, refusing to overwrite them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
from ir_measures import RR, Success, nDCG
from scipy.stats import ttest_rel

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.datasets.nearmiss import nearmiss_triplets
from pyterrier_compverify.encoder import DEFAULT_MODEL
from pyterrier_compverify.measures import b_lower_share, nearmiss_scores, roc_auc, win_rate
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.training import EncoderTrainingConfig, train_encoder
from pyterrier_compverify.training.data import recipe_rows
from pyterrier_compverify.training.hf import RUN_FILE

ZERO_SHOT = ["irds:cranfield", "vaswani", "compverify/capretrieval/en"]
IN_DOMAIN = ["irds:beir/scifact/test"]
MEASURES = [nDCG @ 10, RR @ 10, Success @ 1, Success @ 10]
NAMES = [str(m) for m in MEASURES]


def train_all(args, edits: pd.DataFrame, work: Path) -> tuple[dict[str, str], pd.DataFrame, set[str]]:
    """Train (or reuse) A and B for every seed; returns name -> model folder, timings, training sentences."""
    models, timings, used = {"backbone": args.model}, [], set()
    for seed in args.seeds:
        for recipe in ("A", "B", "Bbal") if seed in args.balanced_seeds else ("A", "B"):
            out = work / f"{recipe}-{seed}"
            balanced = recipe == "Bbal"  # B with as many negation, binding and spatial rows each
            rows = recipe_rows(recipe.removesuffix("bal"), edits=edits, share=args.share, balanced=balanced, seed=seed)
            used |= set(rows["anchor"])
            info_file = out / "run.json"
            started = time.time()
            config = EncoderTrainingConfig(steps=args.steps, batch_size=args.batch_size, seed=seed, save_steps=20)
            # a finished run with these rows and settings is reloaded; one with others is refused (not reused)
            before = finished_run(out)
            train_encoder(rows, out, model=args.model, config=config, device=args.device, overwrite=args.overwrite)
            if not reloaded(before, finished_run(out), args.overwrite):  # trained now: old record and runs are stale
                info_file.unlink(missing_ok=True)
                shutil.rmtree(work / "runs" / f"{recipe}-{seed}", ignore_errors=True)
            if not info_file.exists():
                info = {
                    "rows": len(rows),
                    "structural_rows": int((rows["kind"].isin(["negation", "binding", "spatial"])).sum()),
                    "train_s": round(time.time() - started, 1),
                }
                info_file.write_text(json.dumps(info))
            timings.append({"model": f"{recipe}-{seed}", **json.loads(info_file.read_text())})
            models[f"{recipe}-{seed}"] = str(out / "final")
    return models, pd.DataFrame(timings), used


def finished_run(out: Path) -> tuple[bool, str | None]:
    """(whether ``out`` holds a finished model, the run fingerprint it records or None): read before and after
    ``train_encoder``, which saves ``final`` again even when it only reloads a finished run."""
    record = out / RUN_FILE
    return (out / "final").exists(), record.read_text() if record.exists() else None


def reloaded(before: tuple[bool, str | None], after: tuple[bool, str | None], overwrite: bool) -> bool:
    """Whether ``train_encoder`` reloaded the finished run ``before`` rather than training: the same fingerprint,
    or a folder from before fingerprints, which it takes over only without ``overwrite``."""
    finished, fingerprint = before
    return finished and (fingerprint == after[1] or (fingerprint is None and not overwrite))


def dense_run(name: str, model: str, dataset_id: str, work: Path, args) -> pd.DataFrame:
    """Exact dense retrieval (top 100) with ``model`` on a collection, cached as a TSV."""
    collection = load_collection(dataset_id)
    path = work / "runs" / name / f"{collection.name}.tsv.gz"
    if path.exists():
        return pd.read_csv(path, sep="\t", dtype={"qid": str, "docno": str})
    encoder = cv.BiEncoder(model, max_length=128, batch_size=args.batch_size, device=args.device, verbose=False)
    folder = work / "runs" / name / f"{collection.name}.index"  # pooled vectors only: this run reranks nothing
    flex = encoder.index(collection.corpus_iter(), folder, mode="overwrite", token_states=False, verbose=False).flex
    run = (encoder.query_encoder() >> flex.retriever(num_results=100, drop_query_vec=True))(collection.topics())
    run = run[["qid", "docno", "score", "rank"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    run.to_csv(path, sep="\t", index=False)
    return run


def retrieval_tables(models: dict[str, str], collections: list[str], work: Path, args):
    """Per collection: pt.Experiment of every run against the backbone, the seed summary and B vs A tests."""
    experiments, summary = [], []
    for dataset_id in collections:
        collection = load_collection(dataset_id)
        topics, qrels = collection.topics(), collection.qrels()
        runs = {name: dense_run(name, path, dataset_id, work, args) for name, path in models.items()}
        t = time.time()
        res = pt.Experiment(list(runs.values()), topics, qrels, MEASURES, names=list(runs), baseline=0, round=4)
        res.insert(0, "collection", dataset_id)
        experiments.append(res)
        per_query = pt.Experiment(list(runs.values()), topics, qrels, [nDCG @ 10], names=list(runs), perquery=True)
        per_query = per_query.pivot_table(index="qid", columns="name", values="value").fillna(0.0)
        res["model"] = res["name"].str.split("-").str[0]
        for model, g in res.groupby("model", sort=False):
            row = {"collection": dataset_id, "model": model, "seeds": len(g)}
            for m in NAMES:
                row[m] = f"{g[m].mean():.4f} ± {g[m].std(ddof=0):.4f}"
            summary.append(row)
        rows = {row["model"]: row for row in summary if row["collection"] == dataset_id}
        for model in ("B", "Bbal"):  # each B variant against A on the seeds the variant has
            if model not in rows:
                continue
            seeds = [name.split("-")[1] for name in res.loc[res["model"] == model, "name"]]
            a = res.loc[res["name"].isin([f"A-{seed}" for seed in seeds]), "nDCG@10"].mean()
            b = res.loc[res["model"] == model, "nDCG@10"].mean()
            a_q = per_query[[f"A-{seed}" for seed in seeds]].mean(axis=1)
            b_q = per_query[[f"{model}-{seed}" for seed in seeds]].mean(axis=1)
            rows[model]["B vs A nDCG@10"] = f"{100 * (b - a) / a:+.1f}%"
            rows[model]["p (paired t, per query)"] = f"{ttest_rel(b_q, a_q).pvalue:.3g}"
        print(pd.DataFrame(list(rows.values())).to_markdown(index=False), f"({time.time() - t:.0f} s)", flush=True)
    return pd.concat(experiments, ignore_index=True), pd.DataFrame(summary)


def generated_triplets(edits: pd.DataFrame, used: set[str], per_category: int, seed: int = 0) -> pd.DataFrame:
    """Held-out generated edits (sentence never a training anchor), ``per_category`` of each flip category;
    the positive is the sentence itself, so only the near-miss similarity is informative."""
    held = edits[(edits["category"] != "paraphrase") & ~edits["sentence1"].isin(used)]
    held = held.sample(frac=1, random_state=seed).groupby("category").head(per_category)
    return pd.DataFrame(
        {
            "source": "scifact-generated (held out)",
            "category": held["category"].to_numpy(),
            "kind": "near_miss",
            "anchor": held["sentence1"].to_numpy(),
            "positive": held["sentence1"].to_numpy(),
            "near_miss": held["sentence2"].to_numpy(),
        }
    )


def nearmiss_tables(models: dict[str, str], triplets: pd.DataFrame, args):
    """Per model and category: win rate, AUC, mean near-miss similarity; B-lower share against A per seed."""
    scored = {}
    for name, path in models.items():
        encoder = cv.TokenEncoder(path, max_length=128, batch_size=args.batch_size, device=args.device, verbose=False)
        scored[name] = nearmiss_scores(encoder.text_scorer(), triplets)
    rows = []
    for name, frame in scored.items():
        for (source, category), g in frame.groupby(["source", "category"], sort=True):
            pos, neg = g["s_pos"].to_numpy(), g["s_neg"].to_numpy()
            identity = source.startswith("scifact-generated")
            row = {
                "model": name.split("-")[0],
                "seed": name.split("-")[1] if "-" in name else "",
                "source": source,
                "category": category,
                "n": len(g),
                "win_rate": np.nan if identity else win_rate(pos, neg),
                "auc": np.nan if identity else roc_auc(pos, neg),
                "mean_nearmiss_sim": float(neg.mean()),
            }
            if name.split("-")[0] in ("B", "Bbal"):
                a = scored["A-" + name.split("-")[1]]
                row["b_lower_share"] = b_lower_share(a.loc[g.index, "s_neg"].to_numpy(), neg)
            rows.append(row)
    detail = pd.DataFrame(rows)
    summary = (
        detail.groupby(["source", "category", "model"], sort=False)[
            ["win_rate", "auc", "mean_nearmiss_sim", "b_lower_share"]
        ]
        .mean()
        .round(4)
        .reset_index()
    )
    return detail, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--seeds", default="42,43,44")
    parser.add_argument("--steps", type=int, default=90, help="90 steps at batch 32 take about 20 min on 2 cores")
    parser.add_argument("--batch-size", type=int, default=32, help="the paper used 128")
    parser.add_argument("--share", type=float, default=0.14, help="structural share of Model B's rows")
    parser.add_argument(
        "--balanced-seeds",
        default="",
        help="seeds for which to train also Bbal: Model B with equal negation, binding and spatial rows",
    )
    parser.add_argument(
        "--edits",
        default=str(DEFAULT_INDEX_DIR / "negatives-scifact-v3.jsonl"),
        help="`compverify negatives` output over SciFact abstract sentences",
    )
    parser.add_argument("--collections", default=",".join(ZERO_SHOT + IN_DOMAIN))
    parser.add_argument("--nearmiss-per-category", type=int, default=300)
    parser.add_argument("--device", default=None)
    parser.add_argument("--work", default=str(DEFAULT_INDEX_DIR / "biencoders"))
    parser.add_argument("--out", default="experiments/results/biencoders")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out, and retrain models made with other rows"
    )
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.balanced_seeds = [int(s) for s in args.balanced_seeds.split(",") if s]
    cv.setup_local_data()
    started = time.time()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if not Path(args.edits).exists():
        raise SystemExit(f"{args.edits} not found: run `compverify negatives {args.edits}` first")
    edits = pd.read_json(args.edits, lines=True)

    models, timings, used = train_all(args, edits, work)
    print(timings.to_markdown(index=False), flush=True)
    experiments, summary = retrieval_tables(models, args.collections.split(","), work, args)
    sugar_conda = nearmiss_triplets("all").groupby("category", group_keys=False).head(args.nearmiss_per_category)
    triplets = pd.concat([sugar_conda, generated_triplets(edits, used, args.nearmiss_per_category)], ignore_index=True)
    near_detail, near = nearmiss_tables(models, triplets, args)
    print(near.to_markdown(index=False), flush=True)

    markdown = "\n".join(
        [
            "## Training runs",
            "",
            timings.to_markdown(index=False),
            "",
            f"Same steps ({args.steps}) and hyperparameters for A and B: batch {args.batch_size}, MNRL scale 10, "
            f"AdamW lr 2e-5, 10% warm-up then linear decay, max length 128. Model B: structural share "
            f"{args.share} (identity positives), edits from `{Path(args.edits).name}`."
            + (
                f" Bbal (seeds {args.balanced_seeds}): Model B with the structural rows drawn equally from negation, "
                "binding and spatial edits."
                if args.balanced_seeds
                else ""
            ),
            "",
            "## Retrieval: mean ± std over seeds (zero-shot: Cranfield, Vaswani, CapRetrievalEn; in-domain: SciFact)",
            "",
            summary.to_markdown(index=False),
            "",
            "## Near-misses: mean over seeds (mean_nearmiss_sim: lower is better; b_lower_share: B below A by > 0.01)",
            "",
            near.pivot_table(
                index=["source", "category"], columns="model", values=["mean_nearmiss_sim", "win_rate", "b_lower_share"]
            ).to_markdown(),
            "",
            "## Every run (`pt.Experiment`, paired t-tests against the backbone)",
            "",
            experiments.drop(columns=["model"]).to_markdown(index=False),
        ]
    )
    table = pd.concat(
        [experiments.assign(table="retrieval"), summary.assign(table="summary"), near_detail.assign(table="nearmiss")],
        ignore_index=True,
    )
    encoder = cv.TokenEncoder(args.model, verbose=False)
    write_table(table, Path(args.out), "Model A vs Model B: zero-shot retrieval and near-misses", encoder,
                time.time() - started, markdown)  # fmt: skip


if __name__ == "__main__":
    main()
