"""Issue 18: a judged Flickr8k dev sample for choosing a signal's weight beside the packaged fusion.

``dev:flickr8k`` (``capretrieval_best.py``) judges a query's relevant captions by image: the five captions of the
image the query was made from. Another image's caption that meets the query is judged 0, so every signal that
ranks such captions higher loses on that dev (SPLADE, the WordNet category signal), while CapRetrieval
judges a passage by what it says. This study judges by what a caption says, with a reader who did not write the
pipeline or the signal:

- ``sample``: ``--queries`` dev queries drawn at random (``--seed``); for each weight of ``signal_study.WEIGHTS``
  the packaged fusion plus ``--signal`` at that weight ranks the query's depth-300 pool (from the signal study's
  ``--cache``), and the union of the top 10s is written as numbered (query, caption) pairs in a shuffled order
  that names no system (``sample.md``, ``key.json``) beside the reader's criteria (``criteria.md``).
- ``summarise``: the reader's ``reading.md`` (``| number | label | note |``, label 1 or 0; several readers' tables
  put one after the other) gives the judged qrels; nDCG@10 of each weight over the queries with a relevant pair,
  and the weight chosen by ``signal_study``'s rule with the judged sample in place of ``dev:flickr8k`` (the best
  judged nDCG@10 among the weights whose ``dev:scifact-train`` stays within ``MARGIN`` of ``(dense | BM25) >>
  MaxSim``). With ``--test`` the chosen weight is read on the test collections (``signal_study.test_table``).

A second, harder sample (``judged-dev-2``, planned in stop 49's note and written down here before it was drawn):
the first sat near its ceiling (judged nDCG@10 0.97: a caption query meets its own caption, and a one-word query
meets most of its top 10). It draws ``--queries 100`` of the keyword and phrase queries of two words or more
(``--kinds keyword,phrase --min-words 2``), none of the first sample's (``--exclude``), read by four readers;
the weight is chosen by the same rule on this sample alone, and that weight, whatever it is, is then run over
three seeds (``wordnet_seeds.py``). ``second-sample`` then draws 200 of its pairs for a second reader, whose
``second-reading.md`` ``summarise`` compares with the first readers' (agreement, Cohen's kappa, and the weight the
rule chooses with the second reader's labels on those pairs).

Made after ``wordnet_signal.py``'s diagnostic (test nDCG@10 at every weight, read after its dev chose 0) had been
seen, so a weight chosen here is not blind to test; the results say so.

    python experiments/judged_dev.py sample --signal wordnet --cache runs/wordnet-features.pkl
    (a reader writes experiments/results/judged-dev/reading.md from criteria.md and sample.md)
    python experiments/judged_dev.py summarise --signal wordnet --cache runs/wordnet-features.pkl [--test]
    python experiments/judged_dev.py sample --queries 100 --seed 1 --kinds keyword,phrase --min-words 2 \
        --exclude experiments/results/judged-dev/key.json --out experiments/results/judged-dev-2
    python experiments/judged_dev.py second-sample --out experiments/results/judged-dev-2 --size 200 --seed 7
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import time
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import signal_study
import weighted_fusion as wf
from capretrieval_best import task
from dev_rule import DEV_TARGET, best_on_dev
from ir_measures import nDCG
from readings import agreement, keyed_reading, labelled_rows, reading_study
from scipy.stats import ttest_rel

from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, FUSION_WEIGHTS
from pyterrier_compverify.reporting import refuse_existing, write_table

OUT = Path(__file__).parent / "results" / "judged-dev"
KINDS = {"keyword", "phrase", "caption"}  # capretrieval_best.image_queries' query kinds
NUMBERED = re.compile(r"^\| \d+ \|")  # a pair's row of sample.md
DEV = "dev:flickr8k"
CRITERIA = """# Relevance criteria: does this caption meet the search query?

Each row is a search query and the caption of a photo. Label **1** when a photo that this caption describes is a
good result for the query: everything the query asks for (each object, person, animal, attribute, number, action,
place or relation in it) is stated in the caption or follows from it, by a synonym or another form of the word
(bike / bicycle, kids / children, runs / running), by membership of a category (a poodle is a dog, a dog is an
animal, a tulip is a flower, soccer is a sport), or by a detail that makes it plain (a caption about a wedding
dress meets "bride"). Label **0** when anything the query asks for is missing, contradicted or only possible: "a
man in a shirt" does not meet "a man in a red shirt", "a dog" does not meet "two dogs", "a dog near water" does not
meet "a dog swimming". Judge what the caption says, not what the photo might also show. A query written as a full
sentence is met only when the caption describes the same kind of scene with every element of the query, in other
words if need be.

Write a markdown table with one row per numbered pair of your range, in order:

| number | label | note |
|---|---|---|
| 1 | 1 | |
| 2 | 0 | "red" missing |

The note is optional (a few words where the label was a close call).
"""


def load_dev(cache: str) -> dict:
    """The signal study's cached features (``signal_study.study``'s ``--cache``): task -> (frame, qrels, vectors)."""
    return pickle.loads(Path(cache).read_bytes())


def top10s(frame: pd.DataFrame, vectors: np.ndarray, signal: str) -> dict[float, pd.DataFrame]:
    """Weight -> the top-10 rows (``wf.top10``) of the fusion with ``signal`` at that weight, depth 300."""
    depth = max(signal_study.DEPTHS)
    return {
        w: wf.top10(wf.ranking(frame, vectors, depth=depth, **{**wf.seeded(FUSION_WEIGHTS, 42), signal: w}))
        for w in signal_study.WEIGHTS
    }


def sample(args) -> None:
    data = load_dev(args.cache)
    frame, _, vectors = data[DEV]
    queries = frame.drop_duplicates("qid").set_index("qid")["query"]
    kinds = set(args.kinds.split(",")) if args.kinds else None
    if kinds and not kinds <= KINDS:
        raise SystemExit(f"--kinds: {sorted(kinds - KINDS)} not among {sorted(KINDS)}")
    excluded = set(json.loads(Path(args.exclude).read_text())["queries"]) if args.exclude else set()
    qids = sorted(
        q
        for q, text in queries.items()
        if (kinds is None or q.rsplit("/", 1)[-1] in kinds)
        and len(text.split()) >= args.min_words
        and q not in excluded
    )
    if len(qids) < args.queries:
        raise SystemExit(f"only {len(qids)} queries meet --kinds / --min-words / --exclude; lower --queries")
    chosen = set(np.random.default_rng(args.seed).choice(qids, size=args.queries, replace=False))
    frame = frame[frame["qid"].isin(chosen)]
    pairs = pd.concat(list(top10s(frame, vectors, args.signal).values()))[["qid", "docno"]].drop_duplicates()
    collection, _, _ = task(DEV, Path(DEFAULT_INDEX_DIR))
    wanted = set(pairs["docno"])
    captions = {d["docno"]: d["text"] for d in collection.corpus_iter() if d["docno"] in wanted}
    pairs = pairs.sample(frac=1.0, random_state=args.seed).reset_index(drop=True)  # no system's order shows
    pairs["number"] = np.arange(1, len(pairs) + 1)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    rows = ["| number | query | caption |", "|---|---|---|"]
    rows += [f"| {n} | {queries[q]} | {captions[d]} |" for n, q, d in pairs[["number", "qid", "docno"]].values]
    (folder / "sample.md").write_text(f"# {len(pairs)} pairs of {args.queries} queries\n\n" + "\n".join(rows) + "\n")
    (folder / "criteria.md").write_text(CRITERIA)
    key = {
        "signal": args.signal,
        "seed": args.seed,
        "drawn from": {"kinds": args.kinds, "min words": args.min_words, "excluded": args.exclude},
        "queries": sorted(chosen),
        "weights": list(signal_study.WEIGHTS),
        "key": pairs[["number", "qid", "docno"]].to_dict("records"),
    }
    (folder / "key.json").write_text(json.dumps(key, indent=1))
    print(f"{len(pairs)} pairs of {args.queries} queries -> {folder / 'sample.md'}")


def per_query(run: pd.DataFrame, qrels: pd.DataFrame) -> dict[str, float]:
    run = run[["qid", "docno", "score"]].rename(columns=wf.TREC)
    return {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, run)}


def second_sample(args) -> None:
    """``second-sample.md``: ``--size`` of ``sample.md``'s pairs drawn at random (Python's ``random``, ``--seed``)
    for a second reader, whose ``second-reading.md`` ``summarise`` compares with the first readers' labels."""
    import random

    folder = Path(args.out)
    refuse_existing([folder / "second-sample.md"], args.overwrite)
    rows = [line for line in (folder / "sample.md").read_text().splitlines() if NUMBERED.match(line)]
    random.seed(args.seed)
    picked = sorted(random.sample(range(len(rows)), args.size))
    head = f"# {args.size} pairs\n\n| number | query | caption |\n|---|---|---|\n"
    (folder / "second-sample.md").write_text(head + "\n".join(rows[i] for i in picked) + "\n")
    print(f"{args.size} of {len(rows)} pairs -> {folder / 'second-sample.md'}")


def second_reading(folder: Path, judged: pd.DataFrame) -> pd.DataFrame | None:
    """The second reader's labels (``second-reading.md``) merged with the first readers' on ``number``, or None."""
    path = folder / "second-reading.md"
    if not path.exists():
        return None
    second = labelled_rows(path, {"label": ("1", "0")}).rename(columns={"label": "second"})
    drawn = {int(line.split("|")[1]) for line in (folder / "second-sample.md").read_text().splitlines()
             if NUMBERED.match(line)}  # fmt: skip
    if set(second["number"]) != drawn or second["number"].duplicated().any():
        missing, unknown = sorted(drawn - set(second["number"])), sorted(set(second["number"]) - drawn)
        raise SystemExit(f"{path} must label each pair of second-sample.md once: missing {missing[:10]}, not "
                         f"drawn {unknown[:10]}, rows {len(second)}")  # fmt: skip
    return judged.merge(second.astype({"second": int}), on="number")


def summarise(args) -> None:
    started = time.time()
    folder = Path(args.out)
    read = labelled_rows(folder / "reading.md", {"label": ("1", "0")})
    meta, judged = keyed_reading(folder, read)
    judged["label"] = judged["label"].astype(int)
    data = load_dev(args.cache)
    table, scores, met, chosen = weights_by_rule(judged, data, meta["signal"])
    lines = []
    both = second_reading(folder, judged)
    if both is not None:
        alike, kappa = agreement(both["label"], both["second"])
        relabelled = judged.assign(label=judged["number"].map(both.set_index("number")["second"]).fillna(
            judged["label"]).astype(int))  # fmt: skip
        _, _, _, chosen_second = weights_by_rule(relabelled, data, meta["signal"])
        lines = [
            "",
            f"A second reader (`second-reading.md`, given only `criteria.md` and the {len(both)} pairs of "
            f"`second-sample.md`) labelled {int(both['second'].sum())} relevant where the first readers labelled "
            f"{int(both['label'].sum())}: {alike:.1%} alike, Cohen's kappa {kappa:.2f}. With the second reader's "
            f"labels in place of the first readers' on those pairs, the rule chooses {chosen_second}.",
        ]
    report(args, folder, started, data, meta, judged, table, scores, met, chosen, lines)


def weights_by_rule(judged: pd.DataFrame, data: dict, signal: str):
    """(table of judged dev, image-label dev and dev:scifact-train nDCG@10 per weight, per-query judged scores,
    scored queries, the weight chosen by the rule) for the reader's labels ``judged``."""
    qrels = judged[["qid", "docno", "label"]].rename(columns={**wf.TREC, "label": "relevance"})
    met = sorted(set(judged.loc[judged["label"] > 0, "qid"]))  # queries with a relevant pair
    frame, image_qrels, vectors = data[DEV]
    frame = frame[frame["qid"].isin(met)]
    runs = top10s(frame, vectors, signal)
    image_qrels = image_qrels[image_qrels["query_id"].isin(met)]  # the cache keeps ir_measures' columns
    scifact, scifact_qrels, scifact_vectors = data["dev:scifact-train"]
    floor = signal_study.scifact_floor(data)
    fusion = wf.seeded(FUSION_WEIGHTS, 42)
    depth = max(signal_study.DEPTHS)
    rows, scores = [], {}
    for weight, run in runs.items():
        scores[weight] = per_query(run, qrels)
        setting = {**fusion, signal: weight}
        rows.append(
            {
                signal: weight,
                "judged dev nDCG@10": np.mean([scores[weight].get(q, 0.0) for q in met]),
                "image-label dev nDCG@10 (same queries)": wf.ndcg(run, image_qrels),
                "dev:scifact-train": wf.ndcg(
                    wf.ranking(scifact, scifact_vectors, depth=depth, **setting), scifact_qrels
                ),
            }
        )
    table = pd.DataFrame(rows)
    judged_rule = table.rename(columns={"judged dev nDCG@10": DEV_TARGET}).set_index(signal)
    chosen = float(best_on_dev(judged_rule, floor))  # the rule with the judged sample as its target (a tie: the lower)
    return table, scores, met, chosen


def report(args, folder, started, data, meta, judged, table, scores, met, chosen, second: list[str]) -> None:
    """Write ``summary.{md,json}``: the table, the chosen weight and, with ``--test``, its test figures."""
    floor = signal_study.scifact_floor(data)
    fusion = wf.seeded(FUSION_WEIGHTS, 42)
    depth = max(signal_study.DEPTHS)
    base, new = scores[0.0], scores[chosen]
    up = sum(new.get(q, 0) > base.get(q, 0) for q in met)
    down = sum(new.get(q, 0) < base.get(q, 0) for q in met)
    p = float(ttest_rel([new.get(q, 0) for q in met], [base.get(q, 0) for q in met]).pvalue) if chosen else float("nan")
    relevant = int((judged["label"] > 0).sum())
    lines = [
        f"Reader's labels: {len(judged)} pairs of {len(meta['queries'])} queries (seed {meta['seed']}; drawn from "
        f"{meta.get('drawn from', 'every dev query')}), {relevant} "
        f"judged relevant; {len(met)} queries have a relevant pair and are scored. Signal: {meta['signal']}; "
        f"fusion {FUSION_WEIGHTS} (the packaged seed-42 F1w head), depth {depth}. dev:scifact-train floor "
        f"{floor:.4f}.",
        "",
        table.round(4).to_markdown(index=False),
        "",
        f"Chosen: {meta['signal']} {chosen} (judged dev {up} queries up / {down} down against weight 0, paired t-test "
        f"p = {p:.3g}). This sample was made after the signal's test diagnostic had been read, so the choice is "
        "not blind to test.",
        *second,
    ]
    if args.test:
        test = signal_study.test_table(data, fusion, meta["signal"], chosen)
        lines += ["", "## Test nDCG@10 (the weight chosen here)", "", test.round(4).to_markdown(index=False)]
    markdown = "\n".join(lines) + "\n"
    title = f"Judged Flickr8k dev sample: {meta['signal']} beside the packaged fusion (issue 18)"
    write_table(table.round(4), folder / "summary", title, None, time.time() - started, markdown=markdown)
    print(markdown)


def options(parser) -> None:
    parser.add_argument("--signal", default="wordnet", help="the signal column of the study's cache")
    parser.add_argument("--cache", default="runs/wordnet-features.pkl", help="the signal study's --cache")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default="", help="sample: draw only these query kinds (keyword,phrase,caption)")
    parser.add_argument("--min-words", type=int, default=1, help="sample: draw only queries of this many words")
    parser.add_argument("--exclude", default="", help="sample: a key.json whose queries are not drawn again")
    parser.add_argument("--test", action="store_true", help="summarise: read the chosen weight on test")


def main() -> None:
    if sys.argv[1:2] == ["second-sample"]:  # a stage of its own: reading_study's refuse sample.md, which it reads
        parser = argparse.ArgumentParser(description="draw pairs of sample.md for a second reader")
        parser.add_argument("stage", choices=["second-sample"])
        parser.add_argument("--out", default=str(OUT))
        parser.add_argument("--size", type=int, default=200)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--overwrite", action="store_true")
        second_sample(parser.parse_args())
        return
    reading_study(__doc__, OUT, sample, summarise, options)


if __name__ == "__main__":
    main()
