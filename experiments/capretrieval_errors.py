"""Issue 18: where the packaged fusion loses CapRetrievalEn points, read by someone who did not write the pipeline.

The fusion's top 30 put in the order of the test labels would score 0.9549 nDCG@10 against its own 0.8249, so the
loss is in the ordering of candidates it already holds. This script takes the queries with the largest gap
(ceiling - achieved) and writes them as a reading sample: the query, the fusion's top 3 with their labels and the
best-ranked relevant passages. A reader given only ``criteria.md`` labels each query's cause; ``summarise`` then
adds up the gap per cause. Nothing is tuned here, but it reads test errors: the idea ``soft_and.py`` tries came
from this reading (its settings were then chosen on dev). The criteria were written by the script's author after
looking at the fusion's 14 lowest-scoring queries, 9 of which are in the sample; its examples are made up.

    COMPVERIFY_DATA=/path/to/data python experiments/capretrieval_errors.py sample
    # a reader writes experiments/results/capretrieval-errors/reading.md from criteria.md and sample.md
    COMPVERIFY_DATA=/path/to/data python experiments/capretrieval_errors.py summarise
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

import pyterrier_compverify as cv
from pyterrier_compverify.datasets.capretrieval import query_types
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, build_indices, fusion_pipeline
from pyterrier_compverify.reporting import write_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capretrieval_best import TARGET, task  # noqa: E402
from query_ndcg import ceiling, per_query  # noqa: E402
from readings import keyed_reading, labelled_rows, reading_study, wilson  # noqa: E402

OUT = Path(__file__).parent / "results" / "capretrieval-errors"
CAUSES = ("KNOWLEDGE", "TRAP", "OTHER")
CHARS = 300


def scored(index_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    """(the packaged fusion's top 30 with its score as ``fusion``, per query nDCG@10 / top-30 ceiling / gap, qrels,
    docno -> text) on CapRetrievalEn."""
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    collection, topics, qrels = task(TARGET, index_dir)
    indices = build_indices(collection, encoder, index_dir, verbose=False)
    indices.flex.verbose = False
    ranked = fusion_pipeline(indices, encoder)(topics)
    top = ranked[ranked["rank"] < 30][["qid", "query", "docno", "rank", "score"]].rename(columns={"score": "fusion"})
    achieved, best = per_query(top, {"fusion": 1.0}, qrels), ceiling(top, qrels, 30)
    queries = pd.DataFrame({"ndcg": achieved, "ceiling": best}).assign(gap=lambda f: f["ceiling"] - f["ndcg"])
    text = {d["docno"]: d["text"] for d in collection.corpus_iter()}
    return top.reset_index(drop=True), queries, qrels, text


def clip(text: str) -> str:
    """``text`` cut at a word boundary before ``CHARS`` characters."""
    return text if len(text) <= CHARS else text[:CHARS].rsplit(" ", 1)[0] + " ..."


def sample(args) -> None:
    """Write ``sample.md`` (for the reader: no gaps, no scores) and ``key.json`` (each number's qid, query and gap)."""
    began = time.time()
    out = Path(args.out)
    top, queries, qrels, text = scored(Path(args.index_dir))
    chosen = queries[queries["gap"] > 0].sort_values(["gap"], ascending=False, kind="stable").head(args.queries)
    labels = dict(zip(zip(qrels["qid"], qrels["docno"]), qrels["label"]))
    lines, key = [], []
    for number, (qid, row) in enumerate(chosen.iterrows(), start=1):
        rows = top[top["qid"] == qid].sort_values("rank")
        graded = rows.assign(label=[labels.get((qid, d), 0) for d in rows["docno"]])
        query = rows["query"].iat[0]
        lines += [f'## {number}. query: "{query}"', "", "Ranked first by the pipeline:", ""]
        lines += [
            f"- rank {r + 1}, label {g}: {clip(text[d])}"
            for r, g, d in graded.head(3)[["rank", "label", "docno"]].values
        ]
        relevant = graded[graded["label"] > 0]
        lines += ["", "Relevant passages, best ranked first (label 2 = fully relevant, 1 = partly):", ""]
        lines += [
            f"- rank {r + 1}, label {g}: {clip(text[d])}"
            for r, g, d in relevant.head(3)[["rank", "label", "docno"]].values
        ]
        lines.append("")
        key.append({"number": number, "qid": qid, "query": query, **{k: round(float(v), 4) for k, v in row.items()}})
    out.mkdir(parents=True, exist_ok=True)
    header = (f"# CapRetrievalEn: the {len(chosen)} queries the packaged fusion loses most on\n\nRead with "
              "`criteria.md`. Labels are the collection's (0 = not judged relevant). Passages are cut at "
              f"{CHARS} characters.\n\n")  # fmt: skip
    (out / "sample.md").write_text(header + "\n".join(lines))
    total = queries["gap"].sum()
    means = {f"mean_{k}": round(float(queries[k].mean()), 4) for k in ("ndcg", "ceiling")}
    meta = {"command": " ".join(sys.argv), "queries": len(queries), "sampled": len(chosen), **means,
            "gap_total": round(float(total), 4), "gap_sampled": round(float(chosen["gap"].sum()), 4),
            "seconds": round(time.time() - began, 1), "key": key}  # fmt: skip
    (out / "key.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(
        f"{len(chosen)} queries hold {chosen['gap'].sum():.2f} of the {total:.2f} query-points lost "
        f"(mean nDCG@10 {queries['ndcg'].mean():.4f}, ceiling {queries['ceiling'].mean():.4f}); {out}/sample.md"
    )


def reading_table(path: Path) -> pd.DataFrame:
    """The reader's table (``| number | cause | label doubt | reason |``) as a frame, checked."""
    read = labelled_rows(path, {"cause": CAUSES, "label doubt": ("YES", "NO")})
    return read.assign(label_doubt=read.pop("label doubt") == "YES")


def summarise(args) -> None:
    """Add up the gap per cause read in ``reading.md``; a TRAP on a one-word query can only be a word-sense or
    sub-word trap, so TRAP is also split by the query's length."""
    began = time.time()
    out = Path(args.out)
    meta, frame = keyed_reading(out, reading_table(out / "reading.md"))
    frame = frame.assign(type=frame["qid"].map(query_types()))
    one_word = frame["query"].str.split().str.len() == 1
    parts = {cause: frame[frame["cause"] == cause] for cause in CAUSES}
    parts["TRAP, one-word query (word sense or sub-word)"] = frame[(frame["cause"] == "TRAP") & one_word]
    parts["TRAP, query of several words"] = frame[(frame["cause"] == "TRAP") & ~one_word]
    parts["label doubt"] = frame[frame["label_doubt"]]
    rows = []
    for cause, part in parts.items():
        low, high = wilson(len(part), len(frame))
        rows.append({"cause": cause, "queries": len(part), "share": round(len(part) / len(frame), 3),
                     "95% interval": f"{low:.2f}-{high:.2f}", "gap (query-points)": round(part["gap"].sum(), 2),
                     "share of the sampled gap": round(part["gap"].sum() / frame["gap"].sum(), 3),
                     "nDCG@10 if closed": round(meta["mean_ndcg"] + part["gap"].sum() / meta["queries"], 4),
                     })  # fmt: skip
    table = pd.DataFrame(rows)
    by_type = pd.crosstab(frame["type"], frame["cause"])
    markdown = "\n\n".join([
        f"The {meta['sampled']} queries with the largest gap between the packaged fusion's nDCG@10 and its top-30 "
        f"ceiling hold {meta['gap_sampled']:.2f} of the {meta['gap_total']:.2f} query-points lost over "
        f"{meta['queries']} queries (mean nDCG@10 {meta['mean_ndcg']}, ceiling {meta['mean_ceiling']}; sample: "
        f"`{meta['command']}`). Causes as read by a reader given only `criteria.md` (`reading.md`); 'label doubt' "
        "is counted across causes. 'nDCG@10 if closed': the mean over all queries if that part of the gap were "
        "closed (an upper bound on what fixing that cause could give). The criteria were written after their author "
        "had looked at the fusion's 14 lowest-scoring queries (9 of them in the sample); its examples are made up.",
        table.to_markdown(index=False),
        "## Causes per query type", by_type.to_markdown(),
    ])  # fmt: skip
    write_table(table, out / "summary", "Where the packaged fusion loses CapRetrievalEn points (issue 18)", None,
                time.time() - began, markdown)  # fmt: skip
    print(markdown)


def options(parser) -> None:
    parser.add_argument("--queries", type=int, default=60, help="how many of the largest-gap queries to sample")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))


def main() -> None:
    reading_study(__doc__, OUT, sample, summarise, options)


if __name__ == "__main__":
    main()
