"""``compverify demo``: BM25 / dense / dense >> MaxSim on a small collection of structural near-misses."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyterrier as pt

from .demo_collection import DEMO_DOCS, DEMO_QRELS, DEMO_TOPICS
from .reporting import MEASURES
from .spec import DEFAULT_MODEL


class DemoCollection:
    """The embedded demo collection, written to ``folder`` as docs.jsonl / topics.tsv / qrels.tsv."""

    name = "compverify-demo"

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).expanduser()
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "docs.jsonl", "w", encoding="utf-8") as f:
            for doc in DEMO_DOCS:
                f.write(json.dumps(doc) + "\n")
        self.topics().to_csv(self.folder / "topics.tsv", sep="\t", index=False)
        self.qrels().to_csv(self.folder / "qrels.tsv", sep="\t", index=False)

    def corpus_iter(self):
        with open(self.folder / "docs.jsonl", encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                yield {"docno": doc["docno"], "text": doc["text"]}

    def kinds(self) -> dict[str, str]:
        return {d["docno"]: d["kind"] for d in DEMO_DOCS}

    def topics(self) -> pd.DataFrame:
        return pd.DataFrame(DEMO_TOPICS)

    def qrels(self) -> pd.DataFrame:
        return pd.DataFrame(DEMO_QRELS)


NEAR_MISS_KINDS = ("negation", "binding", "spatial")


def near_miss_view(run: pd.DataFrame, collection: DemoCollection) -> pd.DataFrame:
    """Per query: rank (1-based) of the relevant document and the near-miss kinds scored above it, by score: a
    document with the same score is "tied" (the evaluator breaks ties its own way, not by the run's ranks).

    >>> run = pd.DataFrame({"qid": "q1", "docno": ["d1-rel", "d1-bind", "d1-spat"], "score": [4.6, 4.6, 4.7],
    ...                     "rank": [0, 1, 2]})
    >>> near_miss_view(run, DemoCollection.__new__(DemoCollection)).iloc[0].tolist()[:3]
    ['q1', '2 (tied with 1)', 'spatial; tied: binding']
    >>> run = pd.DataFrame({"qid": "q1", "docno": ["d2-rel", "d1-bind", "d1-rel"], "score": [5.0, 4.0, 3.0],
    ...                     "rank": [0, 1, 2]})  # q2's relevant document above: not q1's
    >>> near_miss_view(run, DemoCollection.__new__(DemoCollection)).iloc[0].tolist()[:3]
    ['q1', '3', 'binding']
    """
    kinds = collection.kinds()
    qrels = collection.qrels()
    run = run.assign(kind=run["docno"].map(kinds)).sort_values(["qid", "rank"])
    rows = []
    for qid in collection.topics()["qid"]:
        res = run[run["qid"] == qid]
        own = set(qrels.loc[(qrels["qid"] == qid) & (qrels["label"] > 0), "docno"])  # not another query's
        relevant = res[res["docno"].isin(own)]
        if len(relevant):
            score = relevant["score"].iloc[0]
            better, tied = res[res["score"] > score], res[(res["score"] == score) & ~res["docno"].isin(own)]
            above = ", ".join(better.loc[better["kind"].isin(NEAR_MISS_KINDS), "kind"]) or "-"
            level = ", ".join(tied.loc[tied["kind"].isin(NEAR_MISS_KINDS), "kind"])
            rows.append(
                {
                    "qid": qid,
                    "relevant at": f"{len(better) + 1}" + (f" (tied with {len(tied)})" if len(tied) else ""),
                    "near-misses above": above + (f"; tied: {level}" if level else ""),
                }
            )
        else:
            rows.append({"qid": qid, "relevant at": "not retrieved", "near-misses above": "-"})
    return pd.DataFrame(rows)


def run_demo(
    *, model: str = DEFAULT_MODEL, folder: str | None = None, device: str | None = None, verbose: bool = False
) -> dict[str, pd.DataFrame]:
    """Run the demo and print its tables; returns them (``experiment``, and one near-miss view per system).
    Without ``folder`` the collection and indices go to a temporary folder that is deleted at the end."""
    if folder is not None and Path(folder).expanduser().is_file():
        raise NotADirectoryError(f"--folder {folder} is a file; give a folder (made if missing) for the demo's files")
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="compverify-demo-") as tmp:
            return _run_demo(model, Path(tmp), device, verbose, where="")
    return _run_demo(model, Path(folder).expanduser(), device, verbose, where=f", in {folder}")


def _run_demo(model: str, folder: Path, device, verbose: bool, where: str) -> dict[str, pd.DataFrame]:
    from .encoder import TokenEncoder
    from .pipelines import build_indices, standard_pipelines

    started = time.time()
    collection = DemoCollection(folder / "collection")
    encoder = TokenEncoder(model, device=device)
    indices = build_indices(collection, encoder, folder / "indices", verbose=verbose)
    indices.flex.verbose = verbose
    systems = standard_pipelines(indices, encoder, depth=100)
    systems = {name: systems[name] for name in ("BM25", "Dense", "Dense >> MaxSim@100")}
    topics, qrels = collection.topics(), collection.qrels()
    experiment = pt.Experiment(list(systems.values()), topics, qrels, MEASURES[:4], names=list(systems), round=3)
    print(
        f"Demo collection: {len(topics)} queries, {len(DEMO_DOCS)} documents "
        f"(each query: 1 relevant + 2-3 near-misses: negated, role/modifier-swapped, spatially flipped){where}"
    )
    print()
    print(experiment.to_markdown(index=False))
    tables = {"experiment": experiment}
    views = []
    for name, system in systems.items():
        view = near_miss_view(system(topics), collection).set_index("qid")
        views.append(view.add_prefix(f"{name}: "))
        tables[name] = view
    print()
    print(
        "Where near-misses outrank the relevant document (its rank by score; the near-miss kinds scored above it, "
        "and those tied with it):"
    )
    print(topics.set_index("qid").join(pd.concat(views, axis=1)).to_markdown())
    print(f"\nDone in {time.time() - started:.1f} s.")
    return tables


def register(subparsers) -> None:
    """Add ``compverify demo`` (run by :func:`demo_command`) to the command's sub-parsers."""
    from .cli_options import add_common_options

    parser = subparsers.add_parser(
        "demo",
        help="BM25 / dense / dense >> MaxSim on an embedded near-miss collection",
        description="Indexes a small collection embedded in the package (queries, their relevant documents and "
        "structural near-misses of them: negation, swapped roles, flipped relations) with BM25 and the encoder, "
        "then prints pt.Experiment of BM25, dense retrieval and dense >> MaxSim, and which near-misses each puts "
        "above the relevant document. Downloads nothing; about 10 s on 2 CPU cores.",
    )
    add_common_options(parser, data_dir=False)  # the collection is embedded: no dataset is read
    parser.add_argument("--folder", default=None, help="where to write the collection and indices (default: temp)")
    parser.set_defaults(func=demo_command)


def demo_command(args: argparse.Namespace) -> dict[str, pd.DataFrame]:
    """``compverify demo`` from its parsed options."""
    from .cli_options import given

    return run_demo(folder=args.folder, **given(args, "model", "device"))
