"""Issue 18: the union pool (base dense top k | BM25 top k) reranked by a fusion of ``cv.WeightedMaxSim``
with BM25 and the pooled cosine, the pool depth k and the weights chosen on dev only.

Per query, every signal is z-normalised over the pool and summed with its weight (``cv.ScoreFusion``):
WeightedMaxSim (weight 1), MaxSim, the pooled cosine ("dense") and BM25 (a candidate outside BM25's top 1000 gets
the query's lowest BM25 score). The grid is searched with the seed given by ``--select-seed`` under
``capretrieval_best.py``'s rule: the best dev:flickr8k among the settings (depth x weights) whose dev:scifact-train
nDCG@10 is within 0.005 of ``(dense | BM25) >> MaxSim`` at depth 100. The chosen setting is then applied with each
seed's F1w head (``runs/token-weights/f1w-s<seed>``, made by ``experiments/token_weights.py``) on the test
collections.

Feedback (pseudo-relevance feedback, tried after the depth and weights are fixed): each candidate's cosine to the
mean dense-index vector of the chosen fusion's top k, added with its own weight; k and the weight are chosen on dev
by the same rule (``PRF_K`` x ``PRF_WEIGHTS``, or none).

    COMPVERIFY_DATA=/path/to/data python experiments/weighted_fusion.py --seeds 42,43,44 --depths 100,200,300,500

Writes ``--out`` (default experiments/results/weighted-fusion).{md,json}.
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
import time
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
from ir_measures import nDCG

import pyterrier_compverify as cv
from pyterrier_compverify.datasets.capretrieval import query_types
from pyterrier_compverify.fusion import ScoreFusion, fill_unretrieved, fuse
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, bm25_pipeline, build_indices
from pyterrier_compverify.reporting import refuse_overwrite, write_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capretrieval_best import DEVS, TESTS, task  # noqa: E402
from dev_rule import MARGIN, best_on_dev  # noqa: E402
from idf_maxsim import TREC  # noqa: E402

SEEDED = ("wmaxsim", "wmaxsim_tuned", "maxsim_tuned", "dense_tuned")
TUNED_GRID = {"maxsim_tuned": (0.0, 0.5, 1.0), "dense_tuned": (0.0, 0.25), "wmaxsim_tuned": (0.0, 0.5, 1.0)}
PRF_K = (3, 5, 10)
PRF_WEIGHTS = (0.25, 0.5, 1.0)
GRID = {"maxsim": (0.0, 0.5), "dense": (0.0, 0.25, 0.5), "bm25": (0.0, 0.1, 0.2, 0.3, 0.5)}


def features(task_name: str, encoder: cv.TokenEncoder, heads: dict, index_dir: Path, depth: int = 100) -> tuple:
    """(pool with one raw column per signal, with ``wmaxsim s<seed>`` per head, and the candidate's rank in each
    first stage, ``dense_rank`` / ``bm25_rank``, absent = ``depth``; qrels). The pool is dense top ``depth`` |
    BM25 top ``depth``; :func:`at_depth` cuts it to a shallower pool."""
    collection, topics, qrels = task(task_name, index_dir)
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    dense = encoder.query_encoder() >> indices.flex.retriever(num_results=depth, drop_query_vec=True)
    # BM25 as a retriever (top 1000): its top ``depth`` joins the pool, and its scores are a signal; a candidate it
    # did not return stays NaN here and is filled over the pool it is ranked in (at_depth)
    bm25 = bm25_pipeline(indices.pisa, num_results=1000, language=indices.language)(topics)
    firsts = [ranked[ranked["rank"] < depth][["qid", "docno", "rank"]].rename(columns={"rank": f"{name}_rank"})
              for name, ranked in (("dense", dense(topics)), ("bm25", bm25))]  # fmt: skip
    pool = firsts[0].merge(firsts[1], on=["qid", "docno"], how="outer")
    pool = pool.fillna({"dense_rank": depth, "bm25_rank": depth})
    pool = pool.merge(topics[["qid", "query"]], on="qid").assign(score=0.0, rank=0)
    weighted = {
        f"wmaxsim s{seed}": cv.WeightedMaxSim(path, encoder=encoder, store=indices.store)
        for seed, path in heads.items()
    }
    scorers = {
        **weighted,
        "maxsim": cv.MaxSim(encoder, store=indices.store),
        "dense": cv.PooledCosine(encoder, store=indices.store),
    }  # fmt: skip
    frame = ScoreFusion(scorers, weights={}).features(pool)
    bm25 = bm25[["qid", "docno", "score"]].rename(columns={"score": "bm25"})
    frame = frame.merge(bm25, on=["qid", "docno"], how="left")
    lookup, vectors = indices.flex.payload(return_dvecs=False)[0], indices.flex.np_vecs()
    frame["vec_row"] = lookup.inv[frame["docno"].tolist()]
    return frame, qrels.rename(columns={**TREC, "label": "relevance"}), np.asarray(vectors, dtype=np.float32)


def tuned_features(task_name: str, frame: pd.DataFrame, tuned: dict, index_dir: Path) -> pd.DataFrame:
    """(qid, docno, and per seed ``maxsim_tuned s<seed>``, ``dense_tuned s<seed>`` and, with a head,
    ``wmaxsim_tuned s<seed>``) over ``frame``'s pool: the signals of the seed's caption-tuned encoder
    (``tuned``: seed -> (encoder path, F1w head path or None)), read from its own index of the collection."""
    collection, _, _ = task(task_name, index_dir)
    pool = frame[["qid", "docno", "query"]].assign(score=0.0, rank=0)
    out = frame[["qid", "docno"]].copy()
    for seed, (path, head) in tuned.items():
        encoder = cv.TokenEncoder(path, max_length=128, batch_size=32, verbose=False)
        indices = build_indices(collection, encoder, index_dir, verbose=False)
        scorers = {f"maxsim_tuned s{seed}": cv.MaxSim(encoder, store=indices.store),
                   f"dense_tuned s{seed}": cv.PooledCosine(encoder, store=indices.store)}  # fmt: skip
        if head:
            scorers[f"wmaxsim_tuned s{seed}"] = cv.WeightedMaxSim(head, encoder=encoder, store=indices.store)
        scores = ScoreFusion(scorers, weights={}).features(pool)[["qid", "docno", *scorers]]
        out = out.merge(scores, on=["qid", "docno"], how="left")
    return out


def seeded(setting: dict, seed: int) -> dict:
    """``setting`` with each per-seed signal (``SEEDED``) named by its seed's column."""
    return {f"{k} s{seed}" if k in SEEDED else k: v for k, v in setting.items()}


def with_feedback(frame: pd.DataFrame, vectors: np.ndarray, first: dict, k: int) -> pd.DataFrame:
    """``frame`` with a ``prf`` column: each candidate's cosine to the mean pooled vector (the dense index's) of
    the top ``k`` candidates of the first pass ``fuse(frame, first)``: pseudo-relevance feedback.

    vectors: (documents, dim), L2-normalised rows; ``frame["vec_row"]`` indexes them."""
    ranked = fuse(frame, first)
    top = ranked[ranked["rank"] < k]
    qids, codes = np.unique(top["qid"].to_numpy(), return_inverse=True)
    centroid = np.zeros((len(qids), vectors.shape[1]), dtype=np.float32)
    np.add.at(centroid, codes, vectors[top["vec_row"].to_numpy()])
    centroid /= np.maximum(np.linalg.norm(centroid, axis=1, keepdims=True), 1e-9)
    rows = np.searchsorted(qids, frame["qid"].to_numpy())
    score = np.einsum("nd,nd->n", vectors[frame["vec_row"].to_numpy()], centroid[rows])
    return frame.assign(prf=score)


def at_depth(frame: pd.DataFrame, depth: int) -> pd.DataFrame:
    """The candidates of dense top ``depth`` | BM25 top ``depth`` (ranks count from 0); a candidate BM25 did not
    retrieve gets the query's lowest BM25 score in this pool (0 when BM25 scored none of it)."""
    cut = frame[(frame["dense_rank"] < depth) | (frame["bm25_rank"] < depth)]
    return cut.assign(bm25=fill_unretrieved(cut, "bm25"))


def top10(run: pd.DataFrame) -> pd.DataFrame:
    """The rows of a ranked frame that nDCG@10 can read: each query's top 10 and any row tied with its 10th score
    (ir_measures breaks ties by docno, not by our row order)."""
    tenth = run[run["rank"] == 9].set_index("qid")["score"]
    return run[run["score"] >= run["qid"].map(tenth).fillna(-np.inf)]


def ranking(
    frame: pd.DataFrame,
    vectors: np.ndarray,
    first: dict | None = None,
    *,
    depth: int,
    prf_k: int = 0,
    prf: float = 0.0,
    **weights: float,
) -> pd.DataFrame:
    """The pool cut to ``depth`` ranked by ``weights`` (``first``: extra weights, the head's column), with the
    feedback signal of the top ``prf_k`` at weight ``prf`` when ``prf`` is set."""
    frame, weights = at_depth(frame, depth), {**(first or {}), **weights}
    if prf:
        frame, weights = with_feedback(frame, vectors, weights, prf_k), {**weights, "prf": prf}
    return fuse(frame, weights)


def ndcg(frame: pd.DataFrame, qrels: pd.DataFrame, weights: dict | None = None) -> float:
    run = top10(fuse(frame, weights) if weights is not None else frame)[["qid", "docno", "score"]].rename(columns=TREC)
    return float(ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10])


def head_weights(folder: str) -> str | None:
    """The sha256 of an F1w head's weights (a cache of its features holds only for those), None without a file."""
    from pyterrier_compverify.artifacts import file_sha256

    path = Path(folder) / "head.safetensors"
    return file_sha256(path) if path.exists() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="42,43,44")
    parser.add_argument("--select-seed", type=int, default=42)
    parser.add_argument("--depths", default="100", help="pool depths tried on dev (dense top k | BM25 top k)")
    parser.add_argument("--cache", help="a pickle of the features: read when it exists, else written")
    parser.add_argument("--tuned", help="the caption-tuned encoder of each seed ({seed}), whose signals are tried")
    parser.add_argument("--tuned-heads", help="F1w heads over the tuned encoders ({seed})")
    parser.add_argument("--tuned-cache", help="a pickle per seed ({seed}) of its tuned encoder's features")
    parser.add_argument("--heads", default="runs/token-weights/f1w-s{seed}")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR / "capretrieval-best"))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "weighted-fusion"))
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    started = time.time()
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    seeds = [int(s) for s in args.seeds.split(",")]
    heads = {seed: args.heads.format(seed=seed) for seed in seeds}
    index_dir = Path(args.index_dir)
    depths = [int(d) for d in args.depths.split(",")]
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        data = pickle.loads(cache.read_bytes())
        held, depth, where = data["key"]
        assert "weights" in data, f"{cache} names its heads by path only (made before 2026-12-07): remove it"
        fits = depth == max(depths) and heads.items() <= held.items() and where == [str(index_dir), encoder.fingerprint]
        assert fits, f"{cache} holds other features: {data['key']}"
        changed = [h for s, h in heads.items() if data["weights"].get(s) != head_weights(h)]
        assert not changed, f"{cache} was made with other weights at {changed}: remove it or give another --cache"
    else:
        data = {"key": [heads, max(depths), [str(index_dir), encoder.fingerprint]]}
        data["weights"] = {seed: head_weights(head) for seed, head in heads.items()}
        for name in DEVS + TESTS:
            data[name] = features(name, encoder, heads, index_dir, depth=max(depths))
            print(f"{name}: {len(data[name][0])} rows, {time.time() - started:.0f} s", flush=True)
        if cache is not None:
            cache.write_bytes(pickle.dumps(data))
    if args.tuned:
        tuned = {seed: (args.tuned.format(seed=seed), args.tuned_heads.format(seed=seed) if args.tuned_heads else None)
                 for seed in seeds}  # fmt: skip
        for seed in seeds:  # one cache per seed: the signals of one tuned encoder
            key = [tuned[seed], max(depths)]
            path = Path(args.tuned_cache.format(seed=seed)) if args.tuned_cache else None
            if path is not None and path.exists():
                extra = pickle.loads(path.read_bytes())
                assert extra["key"] == key, f"{path} holds other features: {extra['key']}"
            else:
                extra = {"key": key}
                for name in DEVS + TESTS:
                    extra[name] = tuned_features(name, data[name][0], {seed: tuned[seed]}, index_dir)
                    print(f"{name}: seed {seed}'s tuned signals, {time.time() - started:.0f} s", flush=True)
                if path is not None:
                    path.write_bytes(pickle.dumps(extra))
            for name in DEVS + TESTS:
                frame, qrels, vectors = data[name]
                data[name] = (frame.merge(extra[name], on=["qid", "docno"], how="left"), qrels, vectors)
    frame, qrels, _ = data["dev:scifact-train"]
    floor = ndcg(at_depth(frame, 100), qrels, {"maxsim": 1.0}) - MARGIN

    def choose(settings: list[dict]) -> tuple[pd.DataFrame, dict]:
        """(dev table of ``settings``, the chosen one): best dev:flickr8k with dev:scifact-train >= floor, with
        the heads of ``--select-seed``."""
        rows = []
        for setting in settings:
            row = dict(setting)
            for name in DEVS:
                frame, qrels, vectors = data[name]
                row[name] = ndcg(ranking(frame, vectors, **seeded(setting, args.select_seed)), qrels)
            rows.append(row)
        table = pd.DataFrame(rows)
        return table.round(4), settings[int(best_on_dev(table, floor))]

    grid = [{"depth": d, "wmaxsim": 1.0, **dict(zip(GRID, values))}
            for d in depths for values in itertools.product(*GRID.values())]  # fmt: skip
    dev_table, chosen = choose(grid)
    print(f"chosen on dev with seed {args.select_seed}: {chosen}", flush=True)
    depth, stages = chosen["depth"], {"fusion": chosen}
    dev_tables = {"depth and weights": dev_table}
    if args.tuned:
        grid = {k: v for k, v in TUNED_GRID.items() if args.tuned_heads or k != "wmaxsim_tuned"}  # no head, no signal
        trial = [{**chosen, **dict(zip(grid, values))} for values in itertools.product(*grid.values())]
        dev_tables["the tuned encoder's signals"], chosen = choose(trial)
        stages["fusion + tuned encoder"] = chosen
        print(f"tuned signals chosen on dev: {chosen}", flush=True)
    feedback = [{**chosen, "prf_k": k, "prf": w} for k in PRF_K for w in PRF_WEIGHTS]
    dev_tables["feedback"], with_prf = choose([chosen] + feedback)
    if with_prf is not chosen:
        stages[f"{list(stages)[-1]} + feedback"] = chosen = with_prf
    print(f"chosen on dev: {chosen}", flush=True)
    systems = {
        "(dense | BM25) >> MaxSim": {"depth": 100, "maxsim": 1.0},
        "(dense | BM25) >> WeightedMaxSim": {"depth": 100, "wmaxsim": 1.0},
        f"(dense | BM25) top {depth} >> MaxSim": {"depth": depth, "maxsim": 1.0},
        f"(dense | BM25) top {depth} >> WeightedMaxSim": {"depth": depth, "wmaxsim": 1.0},
        **{f"(dense | BM25) top {depth} >> {stage}": setting for stage, setting in stages.items()},
    }
    if args.tuned:  # the tuned encoder's MaxSim alone over the same pool
        systems[f"(dense | BM25) top {depth} >> tuned MaxSim"] = {"depth": depth, "maxsim_tuned": 1.0}
    types = query_types()
    runs, per_type = [], []
    for seed in seeds:
        for system, setting in systems.items():
            for name in DEVS + TESTS:
                frame, qrels, vectors = data[name]
                run = ranking(frame, vectors, **seeded(setting, seed))
                run = top10(run)[["qid", "docno", "score"]].rename(columns=TREC)
                per_query = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, run)}
                runs.append({"seed": seed, "system": system, "task": name,
                             "nDCG@10": float(np.mean(list(per_query.values())))})  # fmt: skip
                if name == TESTS[0]:
                    for qid, value in per_query.items():
                        per_type.append({"seed": seed, "system": system, "type": types.get(qid, "unknown"),
                                         "qid": qid, "nDCG@10": value})  # fmt: skip
    runs = pd.DataFrame(runs)
    summary = runs.groupby(["system", "task"], sort=False)["nDCG@10"].agg(["mean", "std"]).reset_index()
    summary["cell"] = [
        f"{m:.4f}" + (f" ± {s:.4f}" if len(seeds) > 1 else "") for m, s in zip(summary["mean"], summary["std"])
    ]
    table = summary.pivot(index="system", columns="task", values="cell")[DEVS + TESTS]
    table = table.loc[list(systems)].reset_index()
    per_type = pd.DataFrame(per_type)
    kinds = per_type.groupby(["type", "system"], sort=False)["nDCG@10"].mean().unstack()[list(systems)]
    kinds.insert(0, "queries", per_type[per_type["seed"] == seeds[0]].groupby("type")["qid"].nunique())
    markdown = "\n".join(
        [
            f"Chosen on dev, stage by stage (seed {args.select_seed}; best dev:flickr8k within {MARGIN} of (dense | "
            f"BM25) >> MaxSim at depth 100 on dev:scifact-train; z-normalised weights): {stages}.",
            "",
            f"## nDCG@10, mean ± std over seeds {seeds} (the F1w head of each seed; MaxSim does not depend on it)",
            "",
            table.to_markdown(index=False),
            "",
            f"## {TESTS[0]} nDCG@10 per query type (mean over seeds)",
            "",
            kinds.round(4).to_markdown(),
            "",
            *[
                part
                for stage, grid_table in dev_tables.items()
                for part in (
                    f"## Dev grid: {stage} (seed {args.select_seed})",
                    "",
                    grid_table.to_markdown(index=False),
                    "",
                )
            ],
            "",
            "## Every run",
            "",
            runs.round(4).to_markdown(index=False),
        ]
    )
    write_table(table, Path(args.out), "WeightedMaxSim fused with BM25 and pooled cosine (issue 18)", encoder,
                time.time() - started, markdown=markdown + "\n")  # fmt: skip
    print(markdown)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
