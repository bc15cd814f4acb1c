"""Issue 18: MaxSim with learned query-token weights (the F1w head, ``cv.WeightedMaxSim``), trained on Flickr8k
train caption retrieval.

MaxSim is the plain mean over query tokens of each token's best cosine r_i with the document. F1w makes it
sum_i w_i r_i / sum_i w_i with w_i = softplus(a . h_i + b), h_i the query token's frozen MiniLM state (a 385-number
model; a = 0 and softplus(b) = 1 at the start, which is plain MaxSim). The encoder stays frozen, so every
(query, candidate) pair is reduced once to its row maxima r (m,) and training touches only a and b.

Training (Flickr8k *train* images only): corpus = their 30,000 captions; per image among ``--images`` drawn ones,
the queries of ``capretrieval_best.flickr_dev``'s recipe (a keyword and a phrase from ``KeywordQueries``, and the
first caption, whose own text is left out of its candidates); relevant = the image's captions (with
``--covering`` also another image's caption holding every content stem of the query, ``cross_encoder.content_stems``:
a stem-subset heuristic for relevance by what a caption says); candidates = the base dense top ``--depth``. Loss:
multi-positive listwise softmax over the candidates (temperature ``--tau``), plus ``--l2`` on a. The epoch count
is chosen on dev (``dev:flickr8k`` and ``dev:scifact-train`` of ``capretrieval_best.py``, the same rule: the best
dev:flickr8k whose dev:scifact-train is within 0.005 of plain MaxSim's); ``--stage test`` then reports it on the
test collections.

    COMPVERIFY_DATA=/path/to/data python experiments/token_weights.py --stage dev
    COMPVERIFY_DATA=/path/to/data python experiments/token_weights.py --stage test

Writes ``--out`` (default experiments/results/token-weights-<stage>).{md,json}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import torch
from ir_measures import nDCG

import pyterrier_compverify as cv
from pyterrier_compverify.encoder import DEFAULT_MODEL
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, bm25_pipeline, build_indices
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.scoring.heads.token_weights import TokenWeightedMaxSim
from pyterrier_compverify.scoring.packed_maxsim import weighted_mean

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capretrieval_best import DEVS, TESTS, Passages, image_queries, scifact_train_split, task  # noqa: E402
from cross_encoder import content_stems  # noqa: E402
from dev_rule import DEV_GUARD, MARGIN, best_on_dev  # noqa: E402
from idf_maxsim import TREC, row_maxima  # noqa: E402

from pyterrier_compverify.datasets.capretrieval import query_types  # noqa: E402


def weighted(model: torch.nn.Module | None, states: torch.Tensor, maxima: torch.Tensor) -> torch.Tensor:
    """(m, d) states of one query, (k, m) row maxima of its k candidates -> (k,) F1w score (MaxSim for None);
    ``model`` is an F1w head or anything with its ``token_weights``.
    A model with a ``floor`` method has it applied to the row maxima first (``soft_and.py``)."""
    if model is None:
        return maxima.mean(1)
    weights = model.token_weights(states[None], torch.ones(1, states.shape[0], dtype=torch.bool))
    if hasattr(model, "floor"):
        maxima = model.floor(maxima)
    return weighted_mean(maxima, weights.expand_as(maxima))


def query_rows(frame: pd.DataFrame, store: cv.TokenStore, relevant: pd.Series) -> list:
    """Per query of ``frame`` (the first stage's rows) with a relevant row: (states (m, d), row maxima (k, m),
    relevant flags (k,))."""
    maxima = row_maxima(frame, store)
    data = []
    for _, rows in frame.groupby("qid", sort=False).indices.items():
        if relevant.iloc[rows].any():
            states = frame["query_toks"].iat[rows[0]].states.float()
            flags = torch.tensor(relevant.iloc[rows].to_numpy())
            data.append((states, torch.from_numpy(np.stack([maxima[i] for i in rows])), flags))
    return data


def flickr_training_data(args, encoder: cv.TokenEncoder, work: Path) -> list:
    """The Flickr8k train caption-retrieval queries of one seed (see the module docstring), cached."""
    from pyterrier_compverify.datasets.flickr8k import flickr8k_captions

    tuned = f"-{encoder.fingerprint}" if args.model else ""  # another encoder, other states
    cover = "-cover" if args.covering else ""
    cache = work / f"train-{args.images}-{args.depth}-s{args.seed}{tuned}{cover}.pt"
    if cache.exists():
        return torch.load(cache)
    captions = flickr8k_captions("train")
    passages = [{"docno": f"{i}#{c}", "text": t} for i, c, t in captions[["image", "caption_id", "caption"]].values]
    images = np.random.default_rng(args.seed).permutation(captions["image"].unique())[: args.images]
    topics = image_queries(captions[captions["image"].isin(set(images))])
    indices = build_indices(Passages("flickr8k-train-captions", passages), encoder, work, verbose=True)
    indices.flex.verbose = False
    first = encoder.query_token_encoder() >> indices.flex.retriever(num_results=args.depth + 1, drop_query_vec=True)
    frame = first(topics[["qid", "query"]]).merge(topics[["qid", "image", "own", "kind"]], on="qid")
    frame = frame[frame["docno"] != np.where(frame["kind"] == "caption", frame["own"], "")]
    frame = frame[frame.groupby("qid").cumcount() < args.depth].reset_index(drop=True)
    relevant = frame["docno"].str.split("#").str[0] == frame["image"]
    if args.covering:  # another image's caption that holds every content stem of the query is relevant too
        text = dict(zip(captions["image"] + "#" + captions["caption_id"].astype(str), captions["caption"]))
        wanted = {q: content_stems(t) for q, t in zip(topics["qid"], topics["query"])}
        stems = {d: content_stems(text[d]) for d in frame["docno"].unique()}
        covers = pd.Series([bool(wanted[q]) and wanted[q] <= stems[d] for q, d in zip(frame["qid"], frame["docno"])])
        print(f"covering: {int((~relevant & covers).sum())} more relevant rows, {int(relevant.sum())} by image")
        relevant = relevant | covers
    data = query_rows(frame, indices.store, relevant)
    torch.save(data, cache)
    print(f"training data: {len(data)} queries with a relevant caption in the top {args.depth}", flush=True)
    return data


def scifact_training_data(args, encoder: cv.TokenEncoder, index_dir: Path) -> list:
    """The SciFact *train* queries outside dev:scifact-train (``capretrieval_best.scifact_train_split``'s mix
    part, 509 queries) over the SciFact corpus, dense top ``--depth``: science queries, so that the weights keep
    SciFact-like retrieval."""
    _, _, topics, qrels = scifact_train_split()
    collection, _, _ = task("dev:scifact-train", index_dir)  # the SciFact corpus
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    first = encoder.query_token_encoder() >> indices.flex.retriever(num_results=args.depth, drop_query_vec=True)
    frame = first(topics).reset_index(drop=True)
    relevant = pd.Series(list(zip(frame["qid"], frame["docno"]))).isin(set(zip(qrels["qid"], qrels["docno"])))
    data = query_rows(frame, indices.store, relevant)
    print(f"SciFact train mix: {len(data)} queries with a relevant abstract in the top {args.depth}", flush=True)
    return data


def training_data(args, encoder: cv.TokenEncoder, work: Path, index_dir: Path) -> list:
    """Per training query: (states (m, d), row maxima of its candidates (k, m), relevant flags (k,)); with
    ``--mix-scifact N``, each SciFact mix query N times beside the Flickr8k queries."""
    data = flickr_training_data(args, encoder, work)
    if args.mix_scifact:
        data = data + scifact_training_data(args, encoder, index_dir) * args.mix_scifact
    return data


def train(data, args, dim: int) -> list[dict]:
    """Train an F1w head; the state after each epoch (list of state dicts, epoch 0 = plain MaxSim)."""
    torch.manual_seed(args.seed)
    model = TokenWeightedMaxSim(dim, args.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    states = [{k: v.clone() for k, v in model.state_dict().items()}]
    for epoch in range(1, args.epochs + 1):
        order, total = torch.randperm(len(data)), 0.0
        for start in range(0, len(data), args.batch):
            loss = 0.0
            for i in order[start : start + args.batch].tolist():
                q, maxima, rel = data[i]
                logits = weighted(model, q, maxima) / args.tau
                loss = loss + torch.logsumexp(logits, 0) - torch.logsumexp(logits[rel], 0)
            loss = loss / args.batch + args.l2 * model.linear.weight.pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        print(f"epoch {epoch}: loss {total / -(-len(data) // args.batch):.4f}", flush=True)
        states.append({k: v.clone() for k, v in model.state_dict().items()})
    return states


POOLS = ("dense", "dense | BM25")


def candidates(collection, topics: pd.DataFrame, encoder: cv.TokenEncoder, index_dir: Path, pool: str):
    """(rows to rerank with ``query_toks``, token store): the base dense top 100, or its union with BM25's."""
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    queries = encoder.query_token_encoder()(topics)
    frame = indices.flex.retriever(num_results=100, drop_query_vec=True)(queries)[["qid", "docno"]]
    if pool == "dense | BM25":
        bm25 = bm25_pipeline(indices.pisa, num_results=100, language=indices.language)(topics)
        frame = pd.concat([frame, bm25[["qid", "docno"]]]).drop_duplicates()
    frame = frame.merge(queries[["qid", "query", "query_toks"]], on="qid")
    return frame.sort_values(["qid", "docno"], kind="stable").reset_index(drop=True), indices.store


def evaluate(task_name: str, encoder: cv.TokenEncoder, models: dict, pools, index_dir: Path) -> tuple[list, list]:
    """nDCG@10 of plain MaxSim and of each model's weighted MaxSim over each pool; and per-query rows."""
    started = time.time()
    collection, topics, qrels = task(task_name, index_dir)
    qrels_m = qrels.rename(columns={**TREC, "label": "relevance"})
    out, per_query = [], []
    for pool in pools:
        frame, store = candidates(collection, topics, encoder, index_dir, pool)
        maxima = row_maxima(frame, store)
        groups = frame.groupby("qid", sort=False).indices
        for name, model in models.items():
            scores = np.empty(len(frame))
            with torch.no_grad():
                for _, rows in groups.items():
                    q = frame["query_toks"].iat[rows[0]].states.float()
                    scores[rows] = weighted(model, q, torch.from_numpy(np.stack([maxima[i] for i in rows]))).numpy()
            run = frame[["qid", "docno"]].assign(score=scores).rename(columns=TREC)
            system = name if pool == "dense" else f"({pool}) >> {name}"
            value = ir_measures.calc_aggregate([nDCG @ 10], qrels_m, run)[nDCG @ 10]
            out.append({"task": task_name, "system": system, "nDCG@10": round(float(value), 4)})
            for m in ir_measures.iter_calc([nDCG @ 10], qrels_m, run):
                per_query.append({"task": task_name, "system": system, "qid": m.query_id, "value": m.value})
    print(f"{task_name}: {time.time() - started:.0f} s", flush=True)
    return out, per_query


def choose(dev: pd.DataFrame, seed: int | None = None) -> str:
    """The system chosen by the dev rule (dense pool): best dev:flickr8k within MARGIN of plain MaxSim's
    dev:scifact-train, among plain MaxSim and the systems named ``s<seed> ...`` (every system for no seed)."""
    plain = dev[dev["system"] == "MaxSim"].iloc[0]
    mine = dev if seed is None else dev[dev["system"].str.startswith(f"s{seed} ") | (dev["system"] == "MaxSim")]
    return mine.loc[best_on_dev(mine, plain[DEV_GUARD] - MARGIN), "system"]


PER_RUN = ("out", "overwrite", "stage", "seed", "seeds", "work", "index_dir", "model")  # not what a head is


def other_settings(folder: Path, args, encoder) -> bool:
    """Whether ``folder`` holds a head trained with other settings than ``args`` or over another encoder than
    ``encoder`` (a dev run's head is the test run's: both stages save it)."""
    if not folder.exists():
        return False
    try:
        verifier = cv.Verifier(folder)
        held, spec = verifier.meta.get("training", {}), verifier.spec
    except Exception:  # not a readable head: something else is there
        return True
    made = {k: v for k, v in held.items() if k not in (*PER_RUN, "chosen", "training_queries")}
    return spec.fingerprint != encoder.fingerprint or made != {k: v for k, v in vars(args).items() if k not in PER_RUN}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=["dev", "test"], default="dev")
    parser.add_argument("--seeds", default="42")
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--tau", type=float, default=0.02)
    parser.add_argument("--l2", type=float, default=0.0)
    parser.add_argument("--hidden", type=int, default=0, help="F1w's weight model: 0 linear, N a hidden layer of N")
    parser.add_argument("--mix-scifact", type=int, default=0, help="repeat the 509 SciFact train mix queries N times")
    parser.add_argument(
        "--covering", action="store_true", help="another image's caption holding every query content word is relevant"
    )
    parser.add_argument("--model", default=None, help="the frozen encoder (default all-MiniLM-L6-v2); {seed} is filled")
    parser.add_argument("--tag", default="", help="a name part of the saved heads, e.g. 'tuned' for another --model")
    parser.add_argument("--work", default="runs/token-weights")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR / "capretrieval-best"))
    parser.add_argument("--out", default=None, help="output stem (default: results/token-weights-STAGE)")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out and the heads of the same name under --work"
    )
    args = parser.parse_args()
    out = Path(args.out or Path(__file__).parent / "results" / f"token-weights-{args.stage}")
    refuse_overwrite(out, args.overwrite)
    started = time.time()
    cv.setup_local_data()
    seeds = [int(x) for x in args.seeds.split(",")]
    if args.model and "{seed}" in args.model and len(seeds) > 1:
        parser.error("a per-seed --model takes one seed per run")
    model_path = args.model.format(seed=seeds[0]) if args.model else None
    encoder = cv.TokenEncoder(model_path or DEFAULT_MODEL, max_length=128, batch_size=32, verbose=False)
    work, index_dir = Path(args.work), Path(args.index_dir)
    work.mkdir(parents=True, exist_ok=True)
    stem = (
        "f1w"
        + (f"-{args.tag}" if args.tag else "")
        + (f"-mix{args.mix_scifact}" if args.mix_scifact else "")
        + (f"-h{args.hidden}" if args.hidden else "")
    )
    stem += f"-i{args.images}" if args.images != 2000 else ""
    held = [work / f"{stem}-s{seed}" for seed in seeds if other_settings(work / f"{stem}-s{seed}", args, encoder)]
    if held and not args.overwrite:  # committed results name these heads; the stem holds only some settings
        parser.error(f"{', '.join(map(str, held))} hold heads trained with other settings (other results may use "
                     "them): give --tag, or --overwrite to replace them")  # fmt: skip
    models, sizes = {"MaxSim": None}, {}
    for seed in seeds:
        args.seed = seed
        data = training_data(args, encoder, work, index_dir)
        sizes[seed] = len(data)
        for epoch, state in enumerate(train(data, args, data[0][0].shape[1])[1:], start=1):
            model = TokenWeightedMaxSim(data[0][0].shape[1], args.hidden)
            model.load_state_dict(state)
            models[f"s{seed} epoch {epoch}"] = model.eval()
    rows = []
    for name in DEVS:
        rows += evaluate(name, encoder, models, ("dense",), index_dir)[0]
    dev = pd.DataFrame(rows).pivot_table(index="system", columns="task", values="nDCG@10", sort=False)
    dev = dev[DEVS].reset_index()
    chosen = {seed: choose(dev, seed) for seed in seeds}
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "overwrite", "stage", "seed")}
    for seed, name in chosen.items():  # each seed's chosen head as a Verifier artifact (cv.Verifier(path).reranker())
        if models[name] is not None:
            machine = ("work", "index_dir", "model")  # paths of this machine stay out of the artifact
            training = {k: v for k, v in settings.items() if k not in machine}
            training.update(seed=seed, chosen=name, training_queries=sizes[seed])
            folder = work / f"{stem}-s{seed}"
            config = {"dim": encoder.dim, **({"hidden": args.hidden} if args.hidden else {})}
            cv.Verifier.save(folder, encoder, models[name], "F1w", head_config=config, training=training)
    parts = [dev.to_markdown(index=False), "", f"Chosen per seed on dev (dense pool; best dev:flickr8k within "
             f"{MARGIN} of plain MaxSim on dev:scifact-train): {chosen}."]  # fmt: skip
    table = dev
    if args.stage == "test":
        final = {"MaxSim": None, **{f"weighted s{seed}": models[name] for seed, name in chosen.items()}}
        rows, per_query = [], []
        for name in DEVS + TESTS:
            r, q = evaluate(name, encoder, final, POOLS, index_dir)
            rows, per_query = rows + r, per_query + q
        runs = pd.DataFrame(rows)
        runs["family"] = runs["system"].str.replace(r"weighted s\d+", "weighted MaxSim", regex=True)
        summary = runs.groupby(["family", "task"], sort=False)["nDCG@10"].agg(["mean", "std"]).reset_index()
        summary["cell"] = [f"{m:.4f} ± {0 if np.isnan(s) else s:.4f}" for m, s in zip(summary["mean"], summary["std"])]
        table = summary.pivot(index="family", columns="task", values="cell")[DEVS + TESTS].reset_index()
        types = query_types()
        pq = pd.DataFrame(per_query)
        pq = pq[pq["task"] == TESTS[0]].assign(type=lambda f: f["qid"].map(types))
        pq["family"] = pq["system"].str.replace(r"weighted s\d+", "weighted MaxSim", regex=True)
        by_type = pq.groupby(["type", "family"], sort=False)["value"].mean().unstack("family").round(4)
        by_type.insert(0, "queries", pq[pq["system"] == "MaxSim"].groupby("type").size())
        parts = [
            f"## nDCG@10, mean ± std over seeds {seeds} (plain MaxSim does not depend on the seed)", "",
            table.to_markdown(index=False), "", f"## {TESTS[0]} nDCG@10 per query type (mean over seeds)", "",
            by_type.reset_index().to_markdown(index=False), "", "## Dev: every epoch (dense pool)", "", *parts, "",
            "## Every run", "", runs.drop(columns="family").to_markdown(index=False),
        ]  # fmt: skip
    parts += ["", f"Training queries per seed (a relevant caption in the dense top {args.depth}): {sizes}. "
              f"Settings: {json.dumps(settings)}. Artifacts: {work}/{stem}-s<seed>."]  # fmt: skip
    write_table(table, out, "MaxSim with learned query-token weights (issue 18)", encoder,
                time.time() - started, markdown="\n".join(parts) + "\n")  # fmt: skip
    print("\n".join(parts))


if __name__ == "__main__":
    main()
