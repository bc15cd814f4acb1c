"""Issue 18: the cross-encoder's weight beside the fusion + WordNet 0.5, chosen on the judged Flickr8k dev sample.

The cross-encoder's weight (0.25) was chosen by ``cross_encoder.py evaluate`` on ``dev:flickr8k``, which judges a
caption relevant only when it belongs to the query's own image, so a reranker that finds other images' captions
that meet the query is undervalued there (stop 51's note). The second judged sample (``judged_dev.py``,
``experiments/results/judged-dev-2``: 100 keyword and phrase queries, their pairs labelled by readers given only
``criteria.md``) judges by what a caption says. This study chooses the weight on it. Written down before any of
its pairs was drawn:

- System: the packaged seed-42 fusion plus WordNet at ``--wordnet`` (0.5, judged-dev-2's choice) ranks each query's
  depth-300 pool (the signal study's ``--cache``); the seed-42 ``--tag cover`` cross-encoder reads its top ``--top``
  (30) and the two scores, z-normalised per query over those candidates, are summed with the cross-encoder at each
  weight of ``cross_encoder.WEIGHTS`` (0, 0.25, 0.5, 1, 2, 4), as ``wordnet_cross_encoder.py`` does on test.
- ``sample``: over judged-dev-2's 100 queries, the (query, caption) pairs of the top 10s at those weights that
  judged-dev-2 has not labelled, shuffled, numbered, with no system named (``sample.md``, ``key.json``), beside the
  same ``criteria.md``. Readers who did not write the pipeline label them (``reading.md``).
- ``summarise``: judged-dev-2's first readers' labels plus this reading are the judged qrels; each weight's judged
  nDCG@10 over the queries with a relevant pair, its ``dev:scifact-train`` nDCG@10 (the same system over held-out
  SciFact train queries), and the weight chosen by the issue's dev rule (``dev_rule.best_on_dev``: the best judged
  nDCG@10 among the weights whose ``dev:scifact-train`` is at least ``signal_study.scifact_floor``; a tie goes to
  the lower weight).
- Then that weight, whatever it is, is run on test over the three seeds by ``wordnet_cross_encoder.py --ce W``;
  at 0.25 the committed ``experiments/results/wordnet-signal/cross-encoder.md`` is already that run.

Not blind to test: the cross-encoder's test figures at 0.25 and alone (``cross-encoder-cover-s42.md``) and the
WordNet diagnostic on test had been read; its test figures at 0.5, 1, 2 and 4 had not.

    python experiments/judged_ce.py sample
    (readers write experiments/results/judged-dev-2-ce/reading.md from criteria.md and sample.md)
    python experiments/judged_ce.py summarise

Second study (stop 53): a cross-encoder trained twice as long. Written down before its model was read on any data:

- Model: ``cross_encoder.py train --seed 42 --tag long --own-positive --random-negatives 2 --covering --steps 2400
  --bf16``: the ``--tag cover`` recipe, twice the steps (14,400 Flickr8k groups of 17,133 instead of 7,200, and
  2,400 draws of the 509 SciFact groups instead of 1,200; the schedule stretched alike), under bf16 autocast (1.4x
  faster here; the reference trained in fp32). Two things change at once, so a difference is not put down to
  length alone.
- ``sample --model runs/cross-encoder/ce-long-s42/final --against runs/cross-encoder/ce-cover-s42/final --judged
  experiments/results/judged-dev-2-ce --out experiments/results/judged-dev-2-ce-long``: the unlabelled pairs of the
  new model's top 10s at every weight (and of the reference's at 0.25, all labelled already), over the same
  queries; every earlier reading of the chain is excluded and counted in the judged qrels.
- ``summarise``: the new model's weight is chosen by the rule above; it replaces the 1200-step model only if that
  weight is not 0 (which leaves the model out) and its judged nDCG@10 there is above the reference's at 0.25 on the
  same judged qrels (a tie keeps the reference), with ``dev:scifact-train`` at least the floor. The new model gets
  the best of six weights and the reference its one: a small lead favours the new model by that choice alone.
  Then, and only then, seeds 43 and 44 are trained alike and the three seeds
  are read on test once with the packaged command (``compverify evaluate ... --fusion-cross-encoder``); otherwise
  no test reading is made.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pandas as pd
import signal_study
import torch
import weighted_fusion as wf
from capretrieval_best import task
from cross_encoder import WEIGHTS
from dev_rule import DEV_TARGET, best_on_dev
from judged_dev import CRITERIA, DEV, per_query
from readings import keyed_reading, labelled_rows, reading_study
from scipy.stats import ttest_rel
from wordnet_cross_encoder import candidates, ce_scores

from pyterrier_compverify.artifacts import file_sha256
from pyterrier_compverify.fusion import fuse
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, FUSION_WEIGHTS
from pyterrier_compverify.reporting import write_table

RESULTS = Path(__file__).parent / "results"
OUT = RESULTS / "judged-dev-2-ce"
SEED = 42  # the packaged head's seed and the cross-encoder's


def reranked(name: str, data: dict, args, qids=None) -> dict[float, pd.DataFrame]:
    """Cross-encoder weight -> the ranked top ``--top`` (``fuse``'s frame) of the fusion + WordNet on task
    ``name``, for the queries ``qids`` (all when None); the cross-encoder's scores cached beside its model."""
    frame, _, vectors = data[name]
    if qids is not None:
        frame = frame[frame["qid"].isin(qids)]
    setting = {**wf.seeded(FUSION_WEIGHTS, SEED), "wordnet": args.wordnet}
    top = candidates(frame, vectors, setting, args.top)
    model = Path(args.model)
    if not (model / "model.safetensors").exists():
        raise SystemExit(f"no cross-encoder at {model}: train it with cross_encoder.py train first")
    key = f"{name.replace('/', '_').replace(':', '_')}-wordnet{args.wordnet}-top{args.top}-len{args.max_length}"
    cache = model.parent / f"judged-ce-{key}-{file_sha256(model / 'model.safetensors')[:12]}.pkl"
    collection, _, _ = task(name, Path(args.index_dir))
    wanted = set(top["docno"])
    texts = {d["docno"]: d["text"] for d in collection.corpus_iter() if d["docno"] in wanted}
    top = top.merge(ce_scores(top, frame, texts, model, cache, args.max_length), on=["qid", "docno"])
    return {w: fuse(top, {"fusion": 1.0, "ce": w}) for w in getattr(args, "weights", WEIGHTS)}


def reference(name: str, data: dict, args, qids=None) -> list[pd.DataFrame]:
    """[the ranked top ``--top`` of the fusion + WordNet + ``--against`` at ``--against-weight``] on task ``name``."""
    other = argparse.Namespace(**{**vars(args), "model": args.against, "weights": (args.against_weight,)})
    return list(reranked(name, data, other, qids).values())


def judged_pairs(folder: Path) -> tuple[dict, pd.DataFrame]:
    """(key.json, its pairs with the readers' ``label`` as int) of a judged sample folder."""
    meta, judged = keyed_reading(folder, labelled_rows(folder / "reading.md", {"label": ("1", "0")}))
    return meta, judged.assign(label=judged["label"].astype(int))


def earlier_pairs(folder: Path, meta: dict) -> tuple[pd.DataFrame, int]:
    """(the labelled pairs of the folders ``meta`` names as ``judged``, in turn, oldest first; how many folders)."""
    if "judged" not in meta:
        return pd.DataFrame(columns=["qid", "docno", "label"]), 0
    older = folder / meta["judged"]
    older_meta, pairs = judged_pairs(older)
    before, depth = earlier_pairs(older, older_meta)
    return pd.concat([before, pairs], ignore_index=True), depth + 1


def sample(args) -> None:
    torch.set_num_threads(args.threads)
    meta, judged = judged_pairs(Path(args.judged))
    judged = pd.concat([earlier_pairs(Path(args.judged), meta)[0], judged], ignore_index=True)
    data = pickle.loads(Path(args.cache).read_bytes())
    runs = list(reranked(DEV, data, args, set(meta["queries"])).values())
    if args.against:
        runs += reference(DEV, data, args, set(meta["queries"]))
    pairs = pd.concat([wf.top10(run) for run in runs])[["qid", "docno"]].drop_duplicates()
    pairs = pairs.merge(judged[["qid", "docno"]], how="left", indicator=True)
    pairs = pairs[pairs["_merge"] == "left_only"][["qid", "docno"]]
    pairs = pairs.sample(frac=1.0, random_state=args.seed).reset_index(drop=True)  # no system's order shows
    pairs["number"] = np.arange(1, len(pairs) + 1)
    collection, _, _ = task(DEV, Path(args.index_dir))
    captions = {d["docno"]: d["text"] for d in collection.corpus_iter() if d["docno"] in set(pairs["docno"])}
    queries = data[DEV][0].drop_duplicates("qid").set_index("qid")["query"]
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["| number | query | caption |", "|---|---|---|"]
    rows += [f"| {n} | {queries[q]} | {captions[d]} |" for n, q, d in pairs[["number", "qid", "docno"]].values]
    (folder / "sample.md").write_text(f"# {len(pairs)} pairs of {pairs['qid'].nunique()} queries\n\n"
                                      + "\n".join(rows) + "\n")  # fmt: skip
    (folder / "criteria.md").write_text(CRITERIA)
    key = {
        "judged": os.path.relpath(args.judged, args.out),  # from this folder
        "seed": args.seed,
        "wordnet": args.wordnet,
        "top": args.top,
        "weights": list(WEIGHTS),
        "model": args.model,
        **({"against": args.against, "against weight": args.against_weight} if args.against else {}),
        "queries": meta["queries"],
        "key": pairs[["number", "qid", "docno"]].to_dict("records"),
    }
    (folder / "key.json").write_text(json.dumps(key, indent=1))
    print(f"{len(pairs)} new pairs of {pairs['qid'].nunique()} queries -> {folder / 'sample.md'}")


def summarise(args) -> None:
    started = time.time()
    torch.set_num_threads(args.threads)
    folder = Path(args.out)
    meta, new = judged_pairs(folder)
    old, depth = earlier_pairs(folder, meta)
    judged = pd.concat([old, new])[["qid", "docno", "label"]]
    if judged.duplicated(["qid", "docno"]).any():
        raise SystemExit(f"{folder}: a pair is labelled in two readings of the chain; sample again")
    qrels = judged.rename(columns={**wf.TREC, "label": "relevance"})
    met = sorted(set(judged.loc[judged["label"] > 0, "qid"]))
    data = pickle.loads(Path(args.cache).read_bytes())
    args.wordnet, args.top, args.model, args.weights = meta["wordnet"], meta["top"], meta["model"], meta["weights"]
    runs = reranked(DEV, data, args, set(met))
    scifact = reranked("dev:scifact-train", data, args)
    scifact_qrels = data["dev:scifact-train"][1]
    _, image_qrels, _ = data[DEV]
    image_qrels = image_qrels[image_qrels["query_id"].isin(met)]
    scores = {}

    def row(name, run, scifact_run) -> dict:
        scores[name] = per_query(wf.top10(run), qrels)
        unjudged = wf.top10(run)[["qid", "docno"]].merge(judged[["qid", "docno"]], how="left", indicator=True)
        return {
            "cross-encoder": name,
            "judged dev nDCG@10": np.mean([scores[name].get(q, 0.0) for q in met]),
            "image-label dev nDCG@10 (same queries)": wf.ndcg(run, image_qrels),
            "dev:scifact-train": wf.ndcg(scifact_run, scifact_qrels),
            "unjudged top-10 pairs": int((unjudged["_merge"] == "left_only").sum()),
        }

    table = pd.DataFrame([row(w, run, scifact[w]) for w, run in runs.items()])
    floor = signal_study.scifact_floor(data)
    rule = table.rename(columns={"judged dev nDCG@10": DEV_TARGET}).set_index("cross-encoder")
    chosen = float(best_on_dev(rule, floor))
    against, label = meta.get("against"), "reference"
    if against:
        args.against, args.against_weight = against, meta["against weight"]
        (run,) = reference(DEV, data, args, set(met))
        (scifact_run,) = reference("dev:scifact-train", data, args)
        theirs = pd.DataFrame([row(label, run, scifact_run)]).assign(**{"cross-encoder": args.against_weight})
    earlier = {2: "one earlier reading"}.get(depth, f"{depth - 1} earlier readings")
    chain = f"`{meta['judged']}`" + (f" (and its {earlier})" if depth > 1 else "")
    lines = [
        f"Judged pairs: {len(old)} of {chain} and {len(new)} read for this study "
        f"({int(new['label'].sum())} relevant); {len(met)} queries have a relevant pair and are scored. System: the "
        f"packaged fusion {FUSION_WEIGHTS} + WordNet {meta['wordnet']}, depth 300, its top {meta['top']} read by the "
        f"seed-{SEED} cross-encoder (`{meta['model']}`)"
        + (f"; the reference: `{against}` at {meta['against weight']}" if against else "")
        + f". dev:scifact-train floor {floor:.4f}.",
        "",
        table.round(4).to_markdown(index=False),
        "",
    ]
    if against:
        lines += [f"The reference, `{against}`:", "", theirs.round(4).to_markdown(index=False), ""]
    named = {0.0: "the new model at 0 (no cross-encoder)", 0.25: "the new model at 0.25", label: "the reference"}
    for base in [0.0, 0.25] + ([label] if against else []):
        if chosen != base:
            new_q, base_q = [scores[chosen].get(q, 0) for q in met], [scores[base].get(q, 0) for q in met]
            up = sum(a > b for a, b in zip(new_q, base_q))
            down = sum(a < b for a, b in zip(new_q, base_q))
            lines.append(f"Against {named[base] if against else base}: judged dev {up} queries up / {down} down, "
                         f"paired t-test p = {ttest_rel(new_q, base_q).pvalue:.3g}.")  # fmt: skip
    if against:
        ours, ref = rule.loc[chosen, DEV_TARGET], theirs["judged dev nDCG@10"].iat[0]
        verdict = "replaces" if chosen > 0 and ours > ref else "does not replace"
        lines += ["", f"Chosen: cross-encoder {chosen} (judged {ours:.4f}); it {verdict} the reference (judged "
                      f"{ref:.4f} at {args.against_weight}) by the rule written before the sample (weight above 0, "
                      "judged nDCG@10 above the reference's)."]  # fmt: skip
    else:
        lines += [
            "",
            f"Chosen: cross-encoder {chosen}. Not blind to test: the cross-encoder's test figures at 0.25 and alone, "
            "and the WordNet diagnostic on test, had been read before this study.",
        ]
    markdown = "\n".join(lines) + "\n"
    title = "Judged Flickr8k dev sample: the cross-encoder's weight beside the fusion + WordNet (issue 18)"
    recorded = pd.concat([table.assign(model=meta["model"]), theirs.assign(model=against)]) if against else table
    write_table(recorded.round(4), folder / "summary", title, None, time.time() - started, markdown=markdown)
    print(markdown)


def options(parser) -> None:
    parser.add_argument("--judged", default=str(RESULTS / "judged-dev-2"), help="sample: the judged sample's folder")
    parser.add_argument("--cache", default="runs/wordnet-features.pkl", help="the signal study's --cache")
    parser.add_argument("--model", default="runs/cross-encoder/ce-cover-s42/final", help="sample: the cross-encoder")
    parser.add_argument("--against", help="sample: a reference cross-encoder whose top 10s are judged too")
    parser.add_argument("--against-weight", type=float, default=0.25, help="sample: the reference's weight")
    parser.add_argument("--wordnet", type=float, default=0.5, help="sample: WordNet's weight (judged-dev-2's choice)")
    parser.add_argument("--top", type=int, default=30, help="sample: candidates the cross-encoder reads")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=2, help="sample: the shuffle of the pairs")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))


if __name__ == "__main__":
    reading_study(__doc__, OUT, sample, summarise, options)
