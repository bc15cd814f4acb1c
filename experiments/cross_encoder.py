"""Issue 18: a MiniLM cross-encoder on top of the packaged fusion pipeline.

The cross-encoder is all-MiniLM-L6-v2's weights with one linear output on [CLS] (22.7M parameters, MiniLM-sized),
reading "query [SEP] passage" at ``--max-length`` 128 tokens (the bi-encoder's length). It is trained here, on the
CPU, full fine-tuning:

- Flickr8k *train* caption retrieval: every train image's keyword, phrase and caption query
  (``capretrieval_best.flickr_dev``'s recipe), relevant = the image's other captions, negatives = the dense top
  ``--depth`` captions of other images. Captions whose ROUGE-L F1 with a CapRetrieval passage exceeds 0.6 are
  dropped (the leakage filter of ``experiments/capretrieval.py``).
- SciFact *train* queries outside dev:scifact-train (509), relevant = their abstracts, negatives = dense top
  ``--depth`` abstracts, so that science retrieval is kept.

``--own-positive`` makes a keyword or phrase query's own caption relevant too (without it the positives are only
the image's *other* captions, which share fewer words with the query than the dense-mined negatives do, so the model
learns to prefer less overlap); ``--random-negatives K`` draws K of a Flickr8k group's 7 negatives at random from the
groups' positives (every kept train caption with ``--own-positive``; without it each image's first caption is
missing) instead of the dense top ``--depth``. The draw does not exclude the query image's own captions (about
0.03% of draws land there); the committed results were made so. ``--covering`` labels by what a caption says rather
than which image it came from: another image's caption that holds every content word of the query (Porter stems)
is relevant, never a negative, and the random negatives are checked not to hold them (``flickr_groups``).

Each step: ``--groups`` Flickr8k groups and ``--scifact-groups`` SciFact groups of 1 relevant + 7 negatives,
listwise softmax loss per group (``--bf16``: under bf16 autocast, weights and optimiser in fp32); AdamW, 10% warm-up
then linear decay; a checkpoint every ``--save-every`` steps
(``--resume`` continues from the last one).

Serving: the packaged ``fusion_pipeline`` (dense | BM25 top 300 >> WeightedMaxSim + BM25), its top ``--top`` read
by the cross-encoder, and the two z-normalised (per query, over those ``--top``) and summed with weight ``w`` for the
cross-encoder. ``w`` is chosen on dev with ``capretrieval_best.py``'s rule: the best dev:flickr8k among the weights
whose dev:scifact-train nDCG@10 is at least the fusion's minus 0.005 (``--weight W`` gives ``w`` instead, e.g.
seed 42's dev choice for seeds 43 and 44, and dev is not read). Test collections are read once, after.

    COMPVERIFY_DATA=/path/to/data python experiments/cross_encoder.py train --seed 42
    COMPVERIFY_DATA=/path/to/data python experiments/cross_encoder.py evaluate --seed 42
    ... train --seed 42 --tag cover --own-positive --random-negatives 2 --covering; ... evaluate --seed 42 --tag cover
    ... train --seed 43 --tag cover ... --covering; ... evaluate --seed 43 --tag cover --weight 0.25
    ... seeds --tag cover --seeds 42,43,44 --weight 0.25

Writes ``--out`` (default experiments/results/cross-encoder[-<tag>]-s<seed>).{md,json}; the ``seeds`` stage
(mean ± std over ``--seeds`` at ``--weight``, their ensemble and the top-k ceilings) writes
experiments/results/cross-encoder[-<tag>]-seeds.{md,json}; both refuse to overwrite them.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import ttest_rel
from tqdm import tqdm
from transformers import AutoModelForSequenceClassification, AutoTokenizer

import pyterrier_compverify as cv
from pyterrier_compverify.datasets import load_collection
from pyterrier_compverify.datasets.capretrieval import query_types
from pyterrier_compverify.encoder import DEFAULT_MODEL, resolve_model_path
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices, fusion_pipeline
from pyterrier_compverify.reporting import refuse_overwrite, write_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capretrieval_best import DEVS, TARGET, TESTS, Passages, image_queries, scifact_train_split, task  # noqa: E402
from dev_rule import MARGIN, best_on_dev  # noqa: E402
from query_ndcg import ceiling, per_query  # noqa: E402
from run_state import RunState  # noqa: E402

GROUP = 8  # 1 relevant + 7 negatives
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)


# ---------------------------------------------------------------- training data


def content_stems(text: str) -> frozenset[str]:
    """Porter stems of the words of ``text`` that are not spaCy stop words.

    >>> sorted(content_stems("A boy in blue shorts slides down"))
    ['blue', 'boy', 'short', 'slide']
    """
    stem, stop_words = _stemmer()
    return frozenset(stem(w) for w in re.findall(r"[a-z]+", text.lower()) if w not in stop_words)


@functools.cache
def _stemmer():
    """(Porter stemmer's ``stem``, spaCy's English stop words), built once."""
    from nltk.stem import PorterStemmer
    from spacy.lang.en.stop_words import STOP_WORDS

    return PorterStemmer().stem, STOP_WORDS


def flickr_groups(
    encoder: cv.TokenEncoder, work: Path, depth: int, own_positive: bool = False, covering: bool = False
) -> list[dict]:
    """Per Flickr8k train query: {"query", "positives": [text], "negatives": [text]} (cached). The caption a query
    was made from is never a positive of a caption query; of a keyword or phrase query only with ``own_positive``
    (as in ``token_weights.py`` and dev:flickr8k's qrels).

    ``covering``: a caption of another image whose content stems hold all of the query's (``content_stems``) is
    relevant, not a negative: "boy in short" is met by "a boy in blue shorts" whichever image it describes. The
    dense top ``2 * depth`` is read so that ``depth`` non-covering negatives remain where they exist; a group with
    fewer than 7 is filled with random non-covering captions."""
    from pyterrier_compverify.datasets.flickr8k import flickr8k_captions
    from pyterrier_compverify.querygen import drop_leaking

    cache = work / f"flickr-groups-{depth}{'-own' if own_positive else ''}{'-cover' if covering else ''}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    captions = flickr8k_captions("train")
    test_texts = [d["text"] for d in load_collection(TARGET).corpus_iter()]
    keep = drop_leaking(captions["caption"].tolist(), test_texts, threshold=0.6)
    print(f"leakage filter: {int((~keep).sum())} of {len(captions)} train captions dropped", flush=True)
    captions = captions[keep].reset_index(drop=True)
    text = {f"{i}#{c}": t for i, c, t in captions[["image", "caption_id", "caption"]].values}
    topics = image_queries(captions)
    passages = [{"docno": d, "text": t} for d, t in text.items()]
    indices = build_indices(Passages("flickr8k-train-captions-noleak", passages), encoder, work, verbose=True)
    indices.flex.verbose = False
    read = 2 * depth if covering else depth + 1
    first = encoder.query_encoder() >> indices.flex.retriever(num_results=read, drop_query_vec=True)
    ranked = first(topics[["qid", "query"]])
    stems = {d: content_stems(t) for d, t in text.items()} if covering else {}
    rng = np.random.default_rng(0)
    docnos = list(text)
    by_image = captions.assign(docno=lambda f: f["image"] + "#" + f["caption_id"].astype(str)).groupby("image")
    by_image = by_image["docno"].apply(list).to_dict()
    ranked = dict(list(ranked.groupby("qid", sort=False)))
    groups = []
    for t in topics.itertuples():
        cands = ranked.get(t.qid, pd.DataFrame({"docno": []}))
        keep_own = own_positive and t.kind != "caption"
        positives = [text[d] for d in by_image[t.image] if d != t.own or keep_own]
        others = [d for d in cands["docno"] if not d.startswith(f"{t.image}#")]
        wanted = content_stems(t.query) if covering else frozenset()
        randoms = []
        if wanted:
            positives += [text[d] for d in others if wanted <= stems[d]]
            others = [d for d in others if not wanted <= stems[d]]
            while len(randoms) < GROUP - 1 + max(0, GROUP - 1 - len(others)):
                d = docnos[rng.integers(len(docnos))]
                if not wanted <= stems[d] and not d.startswith(f"{t.image}#") and d not in others + randoms:
                    randoms.append(d)
            others += randoms[GROUP - 1 :]  # fill a group short of negatives
        negatives = [text[d] for d in others][:depth]
        if positives and len(negatives) >= GROUP - 1:
            group = {"query": t.query, "positives": positives, "negatives": negatives}
            if wanted:
                group["random"] = [text[d] for d in randoms[: GROUP - 1]]  # non-covering, for --random-negatives
            groups.append(group)
    cache.write_text(json.dumps(groups))
    print(f"Flickr8k train: {len(groups)} query groups", flush=True)
    return groups


def scifact_groups(encoder: cv.TokenEncoder, index_dir: Path, work: Path, depth: int) -> list[dict]:
    """Per SciFact train query outside dev:scifact-train: {"query", "positives", "negatives"} (cached)."""
    cache = work / f"scifact-groups-{depth}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    _, _, topics, qrels = scifact_train_split()
    collection, _, _ = task("dev:scifact-train", index_dir)
    text = {d["docno"]: d["text"] for d in collection.corpus_iter()}
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    ranked = (encoder.query_encoder() >> indices.flex.retriever(num_results=depth, drop_query_vec=True))(topics)
    relevant = qrels[qrels["label"] > 0].groupby("qid")["docno"].apply(set).to_dict()
    groups = []
    for qid, cands in ranked.groupby("qid", sort=False):
        rel = relevant.get(qid, set())
        negatives = [text[d] for d in cands["docno"] if d not in rel]
        if rel:
            query = topics.loc[topics["qid"] == qid, "query"].iat[0]
            groups.append({"query": query, "positives": [text[d] for d in sorted(rel)], "negatives": negatives})
    cache.write_text(json.dumps(groups))
    print(f"SciFact train mix: {len(groups)} query groups", flush=True)
    return groups


# ---------------------------------------------------------------- training


def group_loss(
    model, tokenizer, groups: list[dict], rng: np.random.Generator, max_length: int, pool: list[str] = (), k: int = 0
) -> torch.Tensor:
    """Listwise softmax loss of ``groups`` (each: its relevant text first, then 7 negatives: ``7 - k`` sampled from
    its own and ``k`` drawn from ``pool``, the texts of other groups)."""
    queries, texts = [], []
    for g in groups:
        picks = rng.choice(len(g["negatives"]), GROUP - 1 - k, replace=False)
        drawn = [pool[i] for i in rng.choice(len(pool), k, replace=False)] if k else []
        if k and "random" in g:  # checked not to cover the query (``flickr_groups``); the pool draw above is
            # discarded then, kept only so that the random stream, and so the committed --covering run, stay as made
            drawn = [g["random"][i] for i in rng.choice(len(g["random"]), k, replace=False)]
        texts += [g["positives"][rng.integers(len(g["positives"]))], *(g["negatives"][i] for i in picks), *drawn]
        queries += [g["query"]] * GROUP
    batch = tokenizer(queries, texts, truncation="only_second", max_length=max_length, padding=True,
                      return_tensors="pt")  # fmt: skip
    logits = model(**batch).logits.float().view(len(groups), GROUP)
    return torch.nn.functional.cross_entropy(logits, torch.zeros(len(groups), dtype=torch.long))


def run_dir(args, seed: int) -> Path:
    """The folder of one training run: checkpoints, ``final`` and the cached evaluation features."""
    return Path(args.work) / f"ce{args.tag and '-' + args.tag}-s{seed}"


def features_path(args, seed: int, task_name: str) -> Path:
    """Where ``features`` caches a task's fusion top ``--top`` with the cross-encoder's scores."""
    name = f"features-{task_name.replace('/', '_')}-top{args.top}-len{args.max_length}.pkl"
    return run_dir(args, seed) / name


def train(args) -> None:
    work = Path(args.work)
    run = run_dir(args, args.seed)
    RunState.check_new(run / "state.pt", args.resume)
    run.mkdir(parents=True, exist_ok=True)
    encoder = cv.TokenEncoder(DEFAULT_MODEL)
    flickr = flickr_groups(encoder, work, args.depth, args.own_positive, args.covering)
    pool = sorted({text for g in flickr for text in g["positives"]})  # the positives' captions (see the docstring)
    scifact = scifact_groups(encoder, Path(args.index_dir), work, args.depth) if args.scifact_groups else []
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    path = resolve_model_path(DEFAULT_MODEL)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
    state = RunState(run / "state.pt", "model", model, lr=args.lr, steps=args.steps, seed=args.seed,
                     resume=args.resume)  # fmt: skip
    rng, start = state.rng, state.start
    config = {k: v for k, v in vars(args).items() if k not in ("overwrite", "resume")}  # how it runs, not what
    if start and (run / "config.json").exists():  # a resumed run goes on in the precision it began in
        began_bf16 = json.loads((run / "config.json").read_text()).get("bf16", False)
        if began_bf16 != args.bf16:
            raise SystemExit(f"{run} began {'with' if began_bf16 else 'without'} --bf16: resume it the same way")
    (run / "config.json").write_text(json.dumps({**config, "flickr_groups": len(flickr),
                                                 "scifact_groups_total": len(scifact)}, indent=2))  # fmt: skip
    model.train()
    log = (run / "log.jsonl").open("a")
    began = time.time()
    for step in tqdm(range(start, args.steps), total=args.steps, initial=start, desc="cross-encoder", mininterval=30):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            picks = [flickr[i] for i in rng.choice(len(flickr), args.groups, replace=False)]
            loss = group_loss(model, tokenizer, picks, rng, args.max_length, pool, args.random_negatives)
            if scifact:
                picks = [scifact[i] for i in rng.choice(len(scifact), args.scifact_groups, replace=False)]
                loss = loss + group_loss(model, tokenizer, picks, rng, args.max_length)
        loss.backward()
        state.update()
        record = {"step": step + 1, "loss": round(loss.item(), 4), "s": round(time.time() - began, 1)}
        log.write(json.dumps(record) + "\n")
        if (step + 1) % args.save_every == 0 or step + 1 == args.steps:
            log.flush()
            state.save(step + 1)
    for stale in run.glob("features-*.pkl"):  # scores of an earlier model of this seed
        stale.unlink()
    model.save_pretrained(run / "final")
    tokenizer.save_pretrained(run / "final")
    print(f"saved {run / 'final'}", flush=True)


# ---------------------------------------------------------------- serving and evaluation


@torch.inference_mode()
def cross_scores(model, tokenizer, queries: list[str], texts: list[str], max_length: int, batch: int = 64):
    """(n,) cross-encoder logits, computed in batches of similar length."""
    order = np.argsort([len(q) + len(t) for q, t in zip(queries, texts)])
    out = np.zeros(len(texts), dtype=np.float32)
    for start in tqdm(range(0, len(order), batch), desc="cross-encoder scores", mininterval=30):
        idx = order[start : start + batch]
        enc = tokenizer([queries[i] for i in idx], [texts[i] for i in idx], truncation="only_second",
                        max_length=max_length, padding=True, return_tensors="pt")  # fmt: skip
        out[idx] = model(**enc).logits[:, 0].float().numpy()
    return out


def features(task_name: str, args, encoder, model, tokenizer) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the fusion pipeline's top ``--top`` with its score as ``fusion`` and the cross-encoder's as ``ce``,
    qrels); cached per task under the run folder."""
    index_dir = Path(args.index_dir)
    collection, topics, qrels = task(task_name, index_dir)
    cache = features_path(args, args.seed, task_name)
    if cache.exists():
        return pd.read_pickle(cache), qrels
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    ranked = fusion_pipeline(indices, encoder)(topics)
    top = ranked[ranked["rank"] < args.top][["qid", "docno", "score"]].rename(columns={"score": "fusion"})
    text = {d["docno"]: d["text"] for d in collection.corpus_iter()}
    query = dict(zip(topics["qid"], topics["query"]))
    top = top.assign(ce=cross_scores(model, tokenizer, [query[q] for q in top["qid"]],
                                     [text[d] for d in top["docno"]], args.max_length))  # fmt: skip
    top = top.reset_index(drop=True)
    top.to_pickle(cache)
    return top, qrels


def evaluate(args) -> None:
    began = time.time()
    out = Path(args.out or f"experiments/results/cross-encoder{args.tag and '-' + args.tag}-s{args.seed}")
    refuse_overwrite(out, args.overwrite)
    run = run_dir(args, args.seed) / "final"
    tokenizer = AutoTokenizer.from_pretrained(run)
    model = AutoModelForSequenceClassification.from_pretrained(run).eval()
    torch.set_num_threads(args.threads)
    encoder = cv.TokenEncoder(DEFAULT_MODEL)
    weights = WEIGHTS if args.weight is None else (0.0, args.weight)
    systems = {f"fusion + CE {w}": {"fusion": 1.0, "ce": w} for w in weights}
    systems["CE alone"] = {"ce": 1.0}
    scores = {}
    devs = DEVS if args.weight is None else []  # a weight given: dev is not read
    for name in devs:
        frame, qrels = features(name, args, encoder, model, tokenizer)
        scores[name] = {s: per_query(frame, w, qrels) for s, w in systems.items()}
    if args.weight is None:
        dev = pd.DataFrame({t: {s: v.mean() for s, v in by.items()} for t, by in scores.items()})
        floor = dev.loc["fusion + CE 0.0", "dev:scifact-train"] - MARGIN
        weighted = dev.loc[[f"fusion + CE {w}" for w in WEIGHTS]]  # "CE alone" is shown, not a candidate
        chosen = best_on_dev(weighted, floor)
        print(f"dev:\n{dev}\nchosen: {chosen}", flush=True)
        how = f"Chosen on dev (seed {args.seed}; best dev:flickr8k with dev:scifact-train >= fusion's - {MARGIN})"
    else:
        chosen = f"fusion + CE {args.weight}"
        how = f"Weight given (--weight {args.weight}, dev not read; seed {args.seed})"
    shown = ["fusion + CE 0.0", "CE alone", chosen] if chosen != "fusion + CE 0.0" else ["fusion + CE 0.0", "CE alone"]
    for name in TESTS:
        frame, qrels = features(name, args, encoder, model, tokenizer)
        scores[name] = {s: per_query(frame, systems[s], qrels) for s in shown}
    rows = []
    for s in shown:
        row = {"system": s.replace("fusion + CE 0.0", "fusion (packaged)")}
        for t in devs + TESTS:
            row[t] = round(float(scores[t][s].mean()), 4)
        for t in TESTS:
            base, this = scores[t]["fusion + CE 0.0"], scores[t][s]
            row[f"{t} up/down, p"] = f"{int((this > base).sum())}/{int((this < base).sum())}, " + (
                f"{ttest_rel(this, base).pvalue:.2g}" if s != "fusion + CE 0.0" else "-"
            )
        rows.append(row)
    table = pd.DataFrame(rows)
    report(out, "A MiniLM cross-encoder over the packaged fusion (issue 18)", encoder, began, table, [
        f"{how}: **{chosen}**. Cross-encoder over the fusion's top {args.top}, max length {args.max_length}.",
        "## nDCG@10 (up/down, p: queries above / below the packaged fusion, paired t-test)",
        table.to_markdown(index=False),
        *(["## Dev grid", dev.round(4).to_markdown()] if args.weight is None else []),
        f"## {TARGET} nDCG@10 per query type",
        by_type({s: scores[TARGET][s] for s in shown}).round(4).to_markdown(),
    ])  # fmt: skip


def by_type(scores: dict[str, pd.Series]) -> pd.DataFrame:
    """Per CapRetrieval query type: the number of queries and each system's mean of its per-query ``scores``."""
    types = query_types()
    frame = pd.DataFrame({s: v.groupby(v.index.map(types)).mean() for s, v in scores.items()})
    frame.insert(0, "queries", next(iter(scores.values())).index.map(types).value_counts())
    return frame


def report(out: Path, title: str, encoder, began: float, table: pd.DataFrame, parts: list[str]) -> None:
    """Write ``table`` with the markdown ``parts`` (joined by blank lines) to ``out``.{md,json} and print them."""
    markdown = "\n\n".join(parts)
    write_table(table, out, title, encoder, time.time() - began, markdown)
    print(markdown)


def seeds(args) -> None:
    """Mean ± std over ``--seeds`` of the cross-encoder runs evaluated at ``--weight``, and their ensemble: the
    fusion plus ``--weight`` times the mean of the seeds' z-normalised cross-encoder scores. Reads the test features
    each ``evaluate`` cached; nothing is trained or chosen here."""
    began = time.time()
    if args.weight is None:
        raise SystemExit("seeds needs --weight (the weight the runs were evaluated at)")
    out = Path(args.out or f"experiments/results/cross-encoder{args.tag and '-' + args.tag}-seeds")
    refuse_overwrite(out, args.overwrite)
    seed_list = [int(x) for x in args.seeds.split(",")]
    if len(seed_list) < 2:
        raise SystemExit("seeds needs at least two --seeds (a standard deviation over seeds)")
    w, scores, rows = args.weight, {}, []
    for name in TESTS:
        frames = []
        for seed in seed_list:
            cache = features_path(args, seed, name)
            if not cache.exists():
                raise SystemExit(f"{cache} is missing: run evaluate --seed {seed} --tag {args.tag} first")
            frames.append(pd.read_pickle(cache).rename(columns={"ce": f"ce{seed}"}))
        frame = frames[0]
        for other in frames[1:]:
            merged = frame.merge(other, on=["qid", "docno"], suffixes=("", "_other"))
            drift = (merged["fusion"] - merged.pop("fusion_other")).abs().max()
            if len(merged) != len(frame) or len(merged) != len(other) or drift > 1e-4:
                raise SystemExit(
                    f"{name}: the seeds' fusion candidates differ ({len(frame)} vs {len(other)} rows, "
                    f"fusion scores up to {drift:.2g} apart)"
                )
            frame = merged
        qrels = task(name, Path(args.index_dir))[2]
        scores[name] = {  # what a perfect reranker of the fusion's top 10 / 30 reaches (nothing chosen by them)
            f"ceiling: fusion top {k} in label order": ceiling(frame, qrels, k) for k in (10, args.top)
        }
        systems = {"fusion (packaged)": {"fusion": 1.0}}
        for seed in seed_list:
            systems[f"CE alone s{seed}"] = {f"ce{seed}": 1.0}
            systems[f"fusion + CE {w} s{seed}"] = {"fusion": 1.0, f"ce{seed}": w}
        systems[f"fusion + CE {w}, {len(seed_list)}-seed ensemble"] = {
            "fusion": 1.0, **{f"ce{seed}": w / len(seed_list) for seed in seed_list}
        }  # fmt: skip
        scores[name] |= {s: per_query(frame, weights, qrels) for s, weights in systems.items()}
    for label, prefix in [("CE alone", "CE alone s"), (f"fusion + CE {w}", f"fusion + CE {w} s")]:
        row = {"system": f"{label}, mean ± std over seeds {args.seeds}"}
        for name in TESTS:
            means = [scores[name][f"{prefix}{seed}"].mean() for seed in seed_list]
            row[name] = f"{np.mean(means):.4f} ± {np.std(means, ddof=1):.4f}"
        rows.append(row)
    for s in ["fusion (packaged)", f"fusion + CE {w}, {len(seed_list)}-seed ensemble"]:
        row = {"system": s}
        for name in TESTS:
            this, base = scores[name][s], scores[name]["fusion (packaged)"]
            row[name] = f"{this.mean():.4f}" + (
                f" ({int((this > base).sum())}/{int((this < base).sum())}, p {ttest_rel(this, base).pvalue:.2g})"
                if s != "fusion (packaged)" else ""
            )  # fmt: skip
        rows.append(row)
    table = pd.DataFrame(rows)
    every = pd.DataFrame({t: {s: round(v.mean(), 4) for s, v in by.items()} for t, by in scores.items()})
    report(out, "A MiniLM cross-encoder over the packaged fusion, seeds (issue 18)", None, began, table, [
        f"Cross-encoder runs `--tag {args.tag}`, seeds {args.seeds}, each fused with the packaged fusion at the given "
        f"weight {w} (`--weight`; nothing is chosen here). Ensemble: the fusion + {w} x the mean of the seeds' "
        "z-normalised cross-encoder scores. In brackets: queries above / below the packaged fusion, paired t-test. "
        f"Ceilings (under Every run): the fusion's top 10 or {args.top} put in the order of the test labels, what a "
        "perfect reranker of those candidates would reach.",
        table.to_markdown(index=False),
        "## Every run (nDCG@10)",
        every.to_markdown(),
        f"## {TARGET} nDCG@10 per query type",
        by_type(scores[TARGET]).round(4).to_markdown(),
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stage", choices=["train", "evaluate", "seeds"])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--groups", type=int, default=6, help="Flickr8k query groups per step")
    parser.add_argument("--scifact-groups", type=int, default=1, help="SciFact train query groups per step")
    parser.add_argument("--depth", type=int, default=50, help="dense top k the negatives are drawn from")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument(
        "--own-positive", action="store_true", help="a keyword / phrase query's own caption is relevant"
    )
    parser.add_argument(
        "--random-negatives", type=int, default=0, help="of a Flickr8k group's 7 negatives, drawn at random"
    )
    parser.add_argument(
        "--covering", action="store_true", help="another image's caption holding every query content word is relevant"
    )
    parser.add_argument("--seeds", default="42,43,44", help="seeds stage: the runs to summarise")
    parser.add_argument("--tag", default="", help="a name part of the run folder and the results, e.g. 'own'")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--top", type=int, default=30, help="fusion candidates the cross-encoder reads")
    parser.add_argument(
        "--weight",
        type=float,
        help="the cross-encoder's fusion weight, given (e.g. another seed's dev choice): dev is not read",
    )
    parser.add_argument(
        "--bf16", action="store_true", help="train: bf16 autocast (fp32 weights; about 1.4x faster on 2 cores)"
    )
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", default="runs/cross-encoder")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    parser.add_argument("--out")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    if not 0 <= args.random_negatives < GROUP:
        parser.error(f"--random-negatives must be 0-{GROUP - 1} (of a group's {GROUP - 1} negatives)")
    {"train": train, "evaluate": evaluate, "seeds": seeds}[args.stage](args)


if __name__ == "__main__":
    main()
