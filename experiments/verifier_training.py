"""A verifier that verifies (issue 13): train F4 / F3 heads on caption paraphrase positives and near-miss edits
(Flickr8k train), structural edits of SciFact sentences and SciFact retrieval rows; select on dev; report.

Stages (each writes under ``--run-dir``; finished stages are reused):

    python experiments/verifier_training.py data
    python experiments/verifier_training.py train --name f4-para-s42 --head F4 --steps 3000 --seed 42
    python experiments/verifier_training.py dev --names f4-para-s42,...   # Flickr8k dev near-misses, SciFact dev
    python experiments/verifier_training.py ship --name f4-para-s42 --beta 0.5 --tau 0.9 [--package --overwrite]

Dev = Flickr8k dev captions and 200 SciFact *train* queries held out of the retrieval rows; nothing is tuned on
SugarCrepe, CondaQA, CapRetrieval, Cranfield or SciFact test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import pyterrier_compverify as cv
from pyterrier_compverify.spec import DEFAULT_MODEL
from pyterrier_compverify.training import VerifierTrainingConfig, train_verifier
from pyterrier_compverify.training.verifier_mix import (
    arrange_batches,
    caption_rows,
    granularity_rows,
    retrieval_rows,
    reworded_rows,
    structural_rows,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capretrieval_best import image_queries  # noqa: E402  (the Flickr8k dev queries' recipe)
from verifier_data import data, load_data  # noqa: E402  (the rows' data files under <run-dir>/data)


def train(args) -> None:
    run_dir = Path(args.run_dir)
    d = load_data(run_dir)
    if args.images:  # a quick ablation: the caption rows of the first N train images only (a smaller state cache)
        kept = d["train_captions"]["image"].drop_duplicates().head(args.images)
        d["train_captions"] = d["train_captions"][d["train_captions"]["image"].isin(kept)]
        d["train_edits"] = d["train_edits"][d["train_edits"]["caption"].isin(d["train_captions"]["caption"])]
    identity = args.positives == "identity"
    sources = {
        "caption": lambda epoch: caption_rows(
            d["train_captions"], d["train_edits"], identity=identity, seed=args.seed * 1000 + epoch
        ),
        # one draw for every run, so all runs share one pool of texts (and one state cache)
        "structural": structural_rows(d["scifact_edits"], identity=identity, seed=42),
        "retrieval": retrieval_rows(d["retrieval"]),
    }
    shares = {"caption": args.caption_share, "structural": args.structural_share, "retrieval": args.retrieval_share}
    if args.granularity_share > 0:  # keyword / phrase query -> its caption, against an edit touching the query
        sources["granularity"] = granularity_rows(d["train_kw"], d["train_edits"], seed=42)
        shares["granularity"] = args.granularity_share
    passages = None
    if args.reworded_passage_share > 0 and args.reworded_share <= 0:
        raise SystemExit("--reworded-passage-share takes a share of the reworded rows: give --reworded-share too")
    if args.reworded_share > 0:  # "is not clear" -> "is unclear", against "is clear" (train adjectives only)
        train_rows = d["reworded"][d["reworded"]["split"] == "train"].reset_index(drop=True)
        if args.reworded_passage_share > 0:  # the same rows in a window of their abstract (train adjectives only)
            if d["reworded_passages"] is None:
                raise SystemExit("--reworded-passage-share needs scifact-reworded-passages.jsonl: run the data stage")
            passages = d["reworded_passages"][d["reworded_passages"]["split"] == "train"]
        sources["reworded"] = lambda epoch: reworded_rows(
            train_rows, seed=args.seed * 1000 + epoch, passages=passages, passage_share=args.reworded_passage_share
        )
        shares["reworded"] = args.reworded_share
    if args.lexical_share > 0:  # "did not reduce" -> "failed to reduce", against "reduced" (train sentences only)
        if d["lexical"] is None:
            raise SystemExit("--lexical-share needs scifact-lexical.jsonl: run the data stage")
        lexical = d["lexical"][d["lexical"]["split"] == "train"].reset_index(drop=True)
        sources["lexical"] = lambda epoch: reworded_rows(lexical, seed=args.seed * 1000 + epoch).assign(
            source="lexical", positive_kind="lexical negation"
        )
        shares["lexical"] = args.lexical_share
    rows = arrange_batches(sources, shares, steps=args.steps, batch_size=args.batch_size, seed=args.seed)
    config = VerifierTrainingConfig(
        head=args.head,
        head_config=json.loads(args.head_config),
        mode=args.mode,
        steps=args.steps,
        batch_size=args.batch_size,
        head_lr=args.head_lr,
        encoder_lr=args.encoder_lr,
        encoder_dropout=args.encoder_dropout,
        seed=args.seed,
        save_steps=250,
        logging_steps=25,
        shuffle=False,
        bf16=args.bf16,
        cache_bf16=True if args.cache_bf16 else None,
        cache_dir=str(run_dir / "state-cache"),
    )
    encoder = cv.TokenEncoder(args.model, device="cpu")
    start = time.time()
    pool = [  # every text any seed's rows can hold: one state cache for all runs
        *d["train_captions"]["caption"],
        *d["train_edits"]["edit"],
        *sources["structural"][["anchor", "positive", "negative"]].to_numpy().ravel(),
        *sources["retrieval"][["anchor", "positive", "negative"]].to_numpy().ravel(),
        *([] if "granularity" not in sources else sources["granularity"]["anchor"].unique()),
        *([] if "reworded" not in sources else train_rows[["anchor", "negative"]].to_numpy().ravel()),
        # (both directions of a sentence are kept or dropped together, so the anchors hold every positive)
        *([] if passages is None else passages[["anchor", "negative"]].to_numpy().ravel()),
        *([] if "lexical" not in sources else lexical[["anchor", "negative"]].to_numpy().ravel()),
    ]
    verifier, log = train_verifier(rows, run_dir / args.name, encoder=encoder, config=config, cache_texts=pool)
    info = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "rows_by_source": rows["source"].value_counts().to_dict(),
        "positives_by_kind": rows["positive_kind"].value_counts().to_dict(),
        "seconds": round(time.time() - start, 1),
        "last_losses": [round(e["loss"], 4) for e in log[-5:]],
    }
    (run_dir / args.name / "mix.json").write_text(json.dumps(info, indent=2))
    print(json.dumps(info, indent=2))


BETAS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
TAUS = (0.7, 0.75, 0.8, 0.85, 0.875, 0.9, 0.925, 0.95)
SHARPNESS = (10.0, 20.0, 40.0)


def fused(
    s: np.ndarray,
    v: np.ndarray,
    beta: float,
    tau: float,
    sharpness: float = 20.0,
    r: np.ndarray | None = None,
    v_self: np.ndarray | None = None,
) -> np.ndarray:
    """MaxSim minus the conditional penalty (``scoring.ConditionalPenalty``), from precomputed S and v; with the
    reverse MaxSim ``r`` the gate is symmetric, min(S, r); with the query's own verdict ``v_self`` the doubt is
    max(0, v_self - v) (``reference="query"``), else 1 - v."""
    gate = s if r is None else np.minimum(s, r)
    doubt = 1 - v if v_self is None else np.maximum(0.0, v_self - v)
    return s - beta / (1 + np.exp(-sharpness * (gate - tau))) * doubt


def reverse_maxsim_reranker(encoder, store=None):
    """The reverse MaxSim (mean over candidate tokens of their best query token) as a reranker."""
    from pyterrier_compverify.scoring import reverse_maxsim
    from pyterrier_compverify.scoring.heads.fixed import FixedHead

    return cv.TokenReranker(encoder, head=FixedHead(reverse_maxsim, "reverse MaxSim"), store=store)


def dev_triplets(d: dict, seed: int = 7) -> pd.DataFrame:
    """Flickr8k dev: per image an anchor with a near-miss; one row with another caption as positive and, where
    the anchor has a meaning-kept edit, one with it."""
    other = caption_rows(d["dev_captions"], d["dev_edits"], paraphrase_share=0.0, seed=seed)
    para = caption_rows(d["dev_captions"], d["dev_edits"], paraphrase_share=1.0, seed=seed)
    return pd.concat([other, para[para["positive_kind"] == "paraphrase"]], ignore_index=True)


def dev_pairs(table: pd.DataFrame) -> dict:
    """The cached dev scores of the triplets' (anchor, positive / near-miss / anchor) pairs, in triplet order,
    each with ``v_self`` = v(a, a) (the anchor is the query of its triplet)."""
    pairs = {k: table[table["part"] == k].sort_values("row") for k in ("positive", "negative", "identity")}
    identity_v = pairs["identity"]["v"].to_numpy()
    return {k: p.assign(v_self=identity_v) for k, p in pairs.items()}


def win_rates(triplets: pd.DataFrame, score: dict, by: str) -> dict:
    """Share of triplets with score(positive) > score(near-miss), per value of the column ``by``."""
    won = score["positive"] > score["negative"]
    return {kind: float(np.mean(won[rows])) for kind, rows in sorted(triplets.groupby(by).indices.items())}


def nearmiss_dev(triplets: pd.DataFrame, score: dict, worst_kind: bool = False) -> dict:
    """Win rate (positive > near-miss) per positive kind, identity win (anchor itself > near-miss), and the win
    rate of the near-miss kind where it is lowest (``worst kind``; with ``worst_kind`` it enters the headline)."""
    out = {f"win ({kind})": win for kind, win in win_rates(triplets, score, "positive_kind").items()}
    out["identity win"] = float(np.mean(score["identity"] > score["negative"]))
    by_kind = win_rates(triplets, score, "negative_kind")
    out["headline"] = min(out.values()) if not worst_kind else min(*out.values(), *by_kind.values())
    out["worst kind"] = min(by_kind.values())
    out["worst kind name"] = min(by_kind, key=by_kind.get)
    return out


def dev_scores(name: str, run_dir: Path, d: dict, triplets: pd.DataFrame, base) -> pd.DataFrame:
    """MaxSim (S) and the head's own score (v) on the dev triplets' pairs and on the dense top 100 of the held-out
    SciFact train queries; kept in ``<run>/dev-scores.parquet`` (the grid of serving forms is computed from it)."""
    from pyterrier_compverify.datasets import load_collection
    from pyterrier_compverify.measures import score_pairs
    from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices

    path = run_dir / name / "dev-scores.parquet"
    if path.exists():
        return pd.read_parquet(path)
    verifier = cv.Verifier(run_dir / name)
    encoder = verifier.load_encoder(encoder=None if verifier.meta["fine_tuned_encoder"] else base, device="cpu")
    maxsim, head = cv.MaxSim(encoder), verifier.reranker(encoder=encoder, penalty=False)
    reverse = reverse_maxsim_reranker(encoder)
    parts = []
    for key in ("positive", "negative", "identity"):
        texts = triplets["anchor" if key == "identity" else key].tolist()
        s = score_pairs(maxsim, triplets["anchor"].tolist(), texts)
        v = score_pairs(head, triplets["anchor"].tolist(), texts)
        r = score_pairs(reverse, triplets["anchor"].tolist(), texts)
        rows = np.arange(len(texts))
        parts.append(pd.DataFrame({"part": key, "qid": "", "docno": "", "row": rows, "s": s, "v": v, "r": r}))
    # SciFact's train and test splits share one corpus, so the corpus index built for evaluation serves; only
    # train topics and qrels (the held-out queries) are read here
    indices = build_indices(load_collection("irds:beir/scifact/test"), encoder, DEFAULT_INDEX_DIR)
    topics = load_collection("irds:beir/scifact/train").topics()
    topics = topics[topics["query"].isin(set(d["dev_queries"]))]
    run = (encoder.query_encoder() >> indices.flex.retriever(num_results=100, drop_query_vec=True))(topics)
    run_s = cv.MaxSim(encoder, store=indices.store)(run)
    run_v = verifier.reranker(encoder=encoder, store=indices.store, penalty=False)(run)
    run_r = reverse_maxsim_reranker(encoder, indices.store)(run)[["qid", "docno", "score"]]
    merged = run_s.merge(run_v[["qid", "docno", "score"]], on=["qid", "docno"], suffixes=("_s", "_v"))
    merged = merged.merge(run_r.rename(columns={"score": "score_r"}), on=["qid", "docno"])
    parts.append(
        pd.DataFrame(
            {
                "part": "scifact",
                "qid": merged["qid"],
                "docno": merged["docno"],
                "row": -1,
                "s": merged["score_s"],
                "v": merged["score_v"],
                "r": merged["score_r"],
            }
        )
    )
    table = pd.concat(parts, ignore_index=True)
    table.to_parquet(path)
    return table


def self_verdicts(name: str, run_dir: Path, d: dict, base) -> dict:
    """The head's verdict v(q, q) on each dev query against itself (SciFact dev and caption dev queries), for the
    ``reference="query"`` forms; kept in ``<run>/dev-self.parquet``. Returns {qid: v(q, q)} per part."""
    from pyterrier_compverify.datasets import load_collection
    from pyterrier_compverify.measures import score_pairs

    path = run_dir / name / "dev-self.parquet"
    if not path.exists():
        verifier = cv.Verifier(run_dir / name)
        encoder = verifier.load_encoder(encoder=None if verifier.meta["fine_tuned_encoder"] else base, device="cpu")
        head = verifier.reranker(encoder=encoder, penalty=False)
        topics = load_collection("irds:beir/scifact/train").topics()
        parts = {
            "scifact": topics[topics["query"].isin(set(d["dev_queries"]))],
            "caption": caption_retrieval_dev(d, run_dir)[0],
        }
        frames = []
        for part, t in parts.items():
            queries = t["query"].tolist()
            v = score_pairs(head, queries, queries)
            frames.append(pd.DataFrame({"part": part, "qid": t["qid"].to_numpy(), "v_self": v}))
        pd.concat(frames, ignore_index=True).to_parquet(path)
    table = pd.read_parquet(path)
    return {part: dict(zip(rows["qid"], rows["v_self"])) for part, rows in table.groupby("part")}


def caption_retrieval_dev(d: dict, run_dir: Path):
    """A dev retrieval task of the granularity kind on Flickr8k dev: the 5,000 dev captions are the passages; per
    image three queries (a keyword and a phrase from ``querygen.KeywordQueries``, and the image's first caption);
    the image's captions are relevant. Returns (topics, qrels, passages)."""
    path = run_dir / "data" / "flickr-dev-kw.json"
    captions = d["dev_captions"]
    passages = [{"docno": f"{i}#{c}", "text": t} for i, c, t in captions[["image", "caption_id", "caption"]].values]
    if not path.exists():
        made = image_queries(captions)[["qid", "query", "image", "kind"]]
        path.write_text(json.dumps(made.to_dict("records")))
    topics = pd.DataFrame(json.loads(path.read_text()))
    qrels = topics[["qid", "image"]].merge(
        pd.DataFrame({"image": captions["image"], "docno": [p["docno"] for p in passages]}), on="image"
    )
    return topics[["qid", "query"]], qrels.assign(label=1)[["qid", "docno", "label"]], passages


def kw_scores(name: str, run_dir: Path, d: dict, base) -> pd.DataFrame:
    """S and v on the dense top 100 of :func:`caption_retrieval_dev` (kept in ``<run>/dev-kw-scores.parquet``)."""
    import tempfile

    from pyterrier_dr import FlexIndex

    path = run_dir / name / "dev-kw-scores.parquet"
    if path.exists():
        return pd.read_parquet(path)
    topics, _, passages = caption_retrieval_dev(d, run_dir)
    verifier = cv.Verifier(run_dir / name)
    encoder = verifier.load_encoder(encoder=None if verifier.meta["fine_tuned_encoder"] else base, device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        flex = FlexIndex(f"{tmp}/dev.flex", sim_fn=encoder.sim_fn)
        store = cv.TokenStore(f"{tmp}/dev.tokens").indexer(encoder, flex_index=flex, verbose=False).index(passages)
        run = (encoder.query_encoder() >> flex.retriever(num_results=100, drop_query_vec=True))(topics)
        run_s = cv.MaxSim(encoder, store=store)(run)
        run_v = verifier.reranker(encoder=encoder, store=store, penalty=False)(run)
        run_r = reverse_maxsim_reranker(encoder, store)(run)[["qid", "docno", "score"]]
    merged = run_s.merge(run_v[["qid", "docno", "score"]], on=["qid", "docno"], suffixes=("_s", "_v"))
    merged = merged.merge(run_r.rename(columns={"score": "score_r"}), on=["qid", "docno"])
    table = pd.DataFrame(
        {
            "qid": merged["qid"],
            "docno": merged["docno"],
            "s": merged["score_s"],
            "v": merged["score_v"],
            "r": merged["score_r"],
        }
    )
    table.to_parquet(path)
    return table


def form_row(context, form: str, score_fn, **extra) -> dict:
    """One serving form's dev row: SciFact dev nDCG@10 and the Flickr8k dev near-miss measures."""
    import ir_measures
    from ir_measures import nDCG

    name, sci, run, dev_qrels, pairs, triplets, kw, kw_qrels, worst_kind = context
    ndcg = ir_measures.calc_aggregate([nDCG @ 10], dev_qrels, run.assign(score=score_fn(sci)))[nDCG @ 10]
    kw_run = kw[["qid", "docno"]].rename(columns={"qid": "query_id", "docno": "doc_id"})
    kw_ndcg = ir_measures.calc_aggregate([nDCG @ 10], kw_qrels, kw_run.assign(score=score_fn(kw)))[nDCG @ 10]
    near = nearmiss_dev(triplets, {k: score_fn(p) for k, p in pairs.items()}, worst_kind=worst_kind)
    return {
        "verifier": name,
        "form": form,
        **extra,
        "SciFact dev nDCG@10": ndcg,
        "caption dev nDCG@10": kw_ndcg,
        **near,
    }


def dev(args) -> None:
    from pyterrier_compverify.datasets import load_collection

    run_dir = Path(args.run_dir)
    out = run_dir / f"dev-{args.tag}.json"
    if out.exists() and args.tag != "latest" and not args.overwrite:  # select reads it; committed ones are copies
        raise SystemExit(f"{out} exists: another --tag, or --overwrite to replace it")
    d = load_data(run_dir)
    triplets = dev_triplets(d)
    base = cv.TokenEncoder(args.model, device="cpu")
    qrels = load_collection("irds:beir/scifact/train").qrels()
    kw_qrels = caption_retrieval_dev(d, run_dir)[1]
    kw_qrels = kw_qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    rows = []
    for name in args.names.split(","):
        table = dev_scores(name, run_dir, d, triplets, base)
        sci = table[table["part"] == "scifact"]
        dev_qrels = qrels[qrels["qid"].isin(set(sci["qid"]))]  # only the held-out queries count
        dev_qrels = dev_qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
        run = sci[["qid", "docno"]].rename(columns={"qid": "query_id", "docno": "doc_id"})
        pairs = dev_pairs(table)
        own = self_verdicts(name, run_dir, d, base)
        sci = sci.assign(v_self=sci["qid"].map(own["scifact"]))

        kw = kw_scores(name, run_dir, d, base)
        kw = kw.assign(v_self=kw["qid"].map(own["caption"]))
        context = (name, sci, run, dev_qrels, pairs, triplets, kw, kw_qrels, args.worst_kind)
        rows.append(form_row(context, "MaxSim", lambda t: t["s"].to_numpy()))
        rows.append(form_row(context, "head", lambda t: t["v"].to_numpy()))
        taus = TAUS if args.taus is None else tuple(float(t) for t in args.taus.split(","))
        grid = itertools.product(args.gates.split(","), args.references.split(","), BETAS, taus, SHARPNESS)
        for gate, reference, beta, tau, k in grid:
            label = ("" if gate == "forward" else f" {gate}") + ("" if reference == "fixed" else f" {reference}")
            rows.append(
                form_row(
                    context,
                    f"fused beta={beta} tau={tau} k={k:g}" + label,
                    lambda t, beta=beta, tau=tau, k=k, gate=gate, reference=reference: fused(
                        t["s"].to_numpy(),
                        t["v"].to_numpy(),
                        beta,
                        tau,
                        k,
                        r=None if gate == "forward" else t["r"].to_numpy(),
                        v_self=None if reference == "fixed" else t["v_self"].to_numpy(),
                    ),
                    beta=beta,
                    tau=tau,
                    sharpness=k,
                    gate=gate,
                    reference=reference,
                )
            )
    table = pd.DataFrame(rows)
    table.to_json(out, orient="records", indent=1)
    show_selection(table, args.max_drop)
    kinds = triplets["positive_kind"].value_counts().to_dict()
    print(f"dev triplets: {kinds}; {sci['qid'].nunique()} SciFact dev queries")


def show_selection(table: pd.DataFrame, max_drop: float) -> None:
    """Print the head and MaxSim rows, then the fused forms at most ``max_drop`` below MaxSim on both dev
    collections for every verifier of ``table``, best mean headline first."""
    for collection in ("SciFact", "caption"):
        maxsim = table[table["form"] == "MaxSim"].set_index("verifier")[f"{collection} dev nDCG@10"]
        table[f"{collection} - MaxSim"] = table[f"{collection} dev nDCG@10"] - table["verifier"].map(maxsim)
    fused_rows = table[table["form"].str.startswith("fused")]
    columns = ["SciFact - MaxSim", "caption - MaxSim", "headline", "identity win", "worst kind"]
    mean = fused_rows.groupby(["gate", "reference", "beta", "tau", "sharpness"])[columns].agg(["mean", "min"])
    mean.columns = [" ".join(c) for c in mean.columns]
    safe = (mean["SciFact - MaxSim min"] >= -max_drop) & (mean["caption - MaxSim min"] >= -max_drop)
    keep = mean[safe].sort_values("headline mean", ascending=False)
    form_columns = ["gate", "reference", "beta", "tau", "sharpness"]
    shown = table[~table["form"].str.startswith("fused")].drop(columns=form_columns).round(4)
    print(shown.to_markdown(index=False))
    print(f"\nfused forms at most {max_drop} below MaxSim on both dev collections for every verifier, best first:")
    print(keep.head(10).round(4).to_markdown())


def select(args) -> None:
    """The form selection over the verifiers of several ``dev`` runs (e.g. seeds scored by separate runs)."""
    run_dir = Path(args.run_dir)
    table = pd.concat([pd.read_json(run_dir / f"dev-{tag}.json") for tag in args.tags.split(",")], ignore_index=True)
    form = ["beta", "tau", "sharpness"]  # JSON reads 0.95 back as 0.9500000000000001: one form, one group
    table[form] = table[form].round(6)
    show_selection(table, args.max_drop)


def kinds(args) -> None:
    """Dev win rate per near-miss kind (Flickr8k dev triplets, both positive kinds) of each verifier's head alone
    and of one serving form, from the scores ``dev`` cached; writes ``--out``.md/.json."""
    from pyterrier_compverify.reporting import write_table

    start = time.time()
    run_dir = Path(args.run_dir)
    triplets = dev_triplets(load_data(run_dir))
    beta, tau, k = (float(x) for x in args.form.split(","))
    rows = []
    counts = triplets["negative_kind"].value_counts()
    forms = {
        "MaxSim": lambda t: t["s"].to_numpy(),
        "head": lambda t: t["v"].to_numpy(),
        f"fused ({beta:g}, {tau:g}, {k:g})": lambda t: fused(
            t["s"].to_numpy(), t["v"].to_numpy(), beta, tau, k, r=t["r"].to_numpy(), v_self=t["v_self"].to_numpy()
        ),
    }
    for name in args.names.split(","):
        pairs = dev_pairs(pd.read_parquet(run_dir / name / "dev-scores.parquet"))
        for form, score_fn in forms.items():
            wins = win_rates(triplets, {p: score_fn(t) for p, t in pairs.items()}, "negative_kind")
            rows.append({"verifier": name, "form": form, **{f"{kd} (n={counts[kd]})": w for kd, w in wins.items()}})
    title = f"Dev win rate per near-miss kind (symmetric gate, reference query, form beta, tau, k = {args.form})"
    write_table(pd.DataFrame(rows).round(3), Path(args.out), title, None, time.time() - start)


def ship(args) -> None:
    """Record the chosen serving form in the artifact and copy it into the package's weights folder."""
    import shutil

    verifier = cv.Verifier(Path(args.run_dir) / args.name)
    penalty = None
    if args.beta:
        penalty = {"beta": args.beta, "tau": args.tau, "sharpness": args.sharpness, "gate": args.gate}
        if args.reference != "fixed":
            penalty["reference"] = args.reference
    verifier.set_default_penalty(penalty, selected_on=args.selected_on)
    if not args.package:
        print(f"{verifier}: serving form {penalty}")
        return
    if verifier.meta["fine_tuned_encoder"]:  # the package holds the tuned layer's changes, not an 88 MB copy
        if verifier.compact():
            print(f"{verifier}: encoder/ replaced by its changes against the stock model (encoder-delta.safetensors)")
        if not verifier.meta.get("base_encoder"):
            raise SystemExit(f"{verifier}'s tuned encoder cannot be stored as changes to the stock model: not packaged")
    stock = cv.TokenEncoder(DEFAULT_MODEL, device="cpu").fingerprint  # the packaged folders are MiniLM heads
    base = verifier.meta.get("base_encoder") or verifier.spec.to_dict()  # a tuned layer: the model it changed
    if base["fingerprint"] != stock:  # by weights: a local MiniLM folder has another name, the same weights
        raise SystemExit(f"{verifier} was trained over {verifier.spec.name!r}: the packaged heads are MiniLM's; "
                         "not packaged")  # fmt: skip
    target = Path(cv.__file__).parent / "weights" / f"{verifier.meta['head'].lower()}-minilm-frozen"
    if target.exists() and not args.overwrite:
        raise SystemExit(f"{target} holds the packaged {verifier.meta['head']} weights: --overwrite replaces them")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    names = [
        "pt_meta.json",
        "head.safetensors",
        *(["encoder-delta.safetensors"] if "base_encoder" in verifier.meta else []),
    ]
    for name in names:
        shutil.copy(Path(verifier.path) / name, target / name)
    print(f"shipped {verifier} as {target} with penalty {penalty}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", default="runs/verifiers")
    sub = parser.add_subparsers(dest="stage", required=True)
    p = sub.add_parser("data")
    p.add_argument("--sentences", type=int, default=20000, help="SciFact sentences for structural edits")
    p.set_defaults(func=data)
    p = sub.add_parser("train")
    p.add_argument("--name", required=True)
    p.add_argument("--head", default="F4")
    p.add_argument("--head-config", default="{}", help="head arguments as JSON, e.g. '{\"dim\": 128}' for F4")
    p.add_argument("--mode", default="frozen")
    p.add_argument("--positives", default="paraphrase", choices=["paraphrase", "identity"])
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--head-lr", type=float, default=5e-4)
    p.add_argument("--encoder-lr", type=float, default=2e-5)
    p.add_argument(
        "--encoder-dropout",
        type=float,
        default=None,
        help="dropout of the layers that learn (default: 0 for last-layer, the model's for end-to-end)",
    )
    p.add_argument("--caption-share", type=float, default=0.65)
    p.add_argument("--structural-share", type=float, default=0.15)
    p.add_argument("--retrieval-share", type=float, default=0.2)
    p.add_argument(
        "--granularity-share", type=float, default=0.0, help="keyword/phrase query -> caption rows (needs data)"
    )
    p.add_argument("--reworded-share", type=float, default=0.0, help="reworded-negation rows (needs data)")
    p.add_argument(
        "--lexical-share", type=float, default=0.0, help="lexical-negation rows, fail / lack / absent (needs data)"
    )
    p.add_argument(
        "--reworded-passage-share",
        type=float,
        default=0.0,
        help="the chance that a reworded row whose sentence has a passage form (about 80%%: a neighbour in 80 words, "
        "within 128 MiniLM tokens) is taken in it (needs --reworded-share)",
    )
    p.add_argument("--bf16", action="store_true")
    p.add_argument(
        "--cache-bf16", action="store_true", help="encode the state cache under bf16 autocast (the head: as --bf16)"
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--model", default=cv.DEFAULT_MODEL, help="the encoder whose states the head reads")
    p.add_argument("--images", type=int, default=0, help="caption rows of the first N train images only (0: all)")
    p.set_defaults(func=train)
    p = sub.add_parser("dev")
    p.add_argument("--names", required=True, help="comma-separated trained verifier names under --run-dir")
    p.add_argument("--tag", default="latest", help="writes <run-dir>/dev-TAG.json ('latest' is replaced each run)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dev-TAG.json")
    p.add_argument("--model", default=cv.DEFAULT_MODEL, help="the encoder the verifiers were trained over")
    p.add_argument("--max-drop", type=float, default=0.005, help="largest dev nDCG@10 loss against MaxSim allowed")
    p.add_argument("--gates", default="forward,symmetric", help="penalty gates to search (scoring.GATES)")
    p.add_argument("--references", default="fixed,query", help="doubt references to search (scoring.REFERENCES)")
    p.add_argument(
        "--taus", default=None, help="gate thresholds to search, comma-separated (default: TAUS, set for MiniLM)"
    )
    p.add_argument(
        "--worst-kind",
        action="store_true",
        help="the headline also takes the near-miss kind with the lowest win rate (results before it: without)",
    )
    p.set_defaults(func=dev)
    p = sub.add_parser("select")
    p.add_argument("--tags", required=True, help="comma-separated tags of dev runs to select over together")
    p.add_argument("--max-drop", type=float, default=0.005, help="largest dev nDCG@10 loss against MaxSim allowed")
    p.set_defaults(func=select)

    p = sub.add_parser("kinds")
    p.add_argument("--names", required=True, help="comma-separated verifiers that `dev` has scored")
    p.add_argument("--form", default="4,0.9,40", help="beta,tau,sharpness of the fused form to show")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.set_defaults(func=kinds)
    p = sub.add_parser("ship")
    p.add_argument("--name", required=True)
    p.add_argument("--beta", type=float, default=None, help="fused form: MaxSim - penalty (omit: the head's score)")
    p.add_argument("--tau", type=float, default=None)
    p.add_argument("--sharpness", type=float, default=20.0)
    p.add_argument("--gate", default="forward", choices=["forward", "symmetric"])
    p.add_argument("--reference", default="fixed", choices=["fixed", "query"])
    p.add_argument(
        "--package",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also copy it into the package's weights (what cv.MapVerifier() / cv.MapCNN() load); off by default "
        "since 2026-12-07, when packaging was the default and --no-package recorded the form only",
    )
    p.add_argument("--overwrite", action="store_true", help="with --package: replace the packaged weights")
    p.add_argument("--selected-on", default="Flickr8k dev near-misses + 200 held-out SciFact train queries")
    p.set_defaults(func=ship)
    args = parser.parse_args()
    if args.func is kinds:  # before any work, the data folder included
        from pyterrier_compverify.reporting import refuse_overwrite

        refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    args.func(args)


if __name__ == "__main__":
    main()
