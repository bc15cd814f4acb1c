"""Issue 18: the WordNet category signal at a given weight beside the fusion of each seed's F1w head, on test.

``wordnet_signal.py`` and ``judged_dev.py`` read the signal beside the packaged head (seed 42) only. This script
adds, for each of ``--seeds``, that seed's head (``token_weights.py``'s ``f1w-s<seed>``) as the fusion's
WeightedMaxSim column of the cached depth-300 pools (the other columns, BM25 and the signal, do not depend on the
head) and reads the fusion with and without the signal at ``--weight`` on the test collections, with the mean and
standard deviation over the seeds (seed 42 = the packaged head, already in the cache). Nothing is chosen here: the
weight comes from ``judged_dev.py``.

    python experiments/token_weights.py --stage dev --seeds 43,44 --out runs/token-weights-dev-4344 --overwrite
    python experiments/wordnet_seeds.py --seeds 42,43,44 --weight 0.1 --cache runs/wordnet-features.pkl
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import pandas as pd
import signal_study
import weighted_fusion as wf
from capretrieval_best import TESTS, task

import pyterrier_compverify as cv
from pyterrier_compverify.fusion import ScoreFusion
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR, FUSION_WEIGHTS, build_indices
from pyterrier_compverify.reporting import refuse_overwrite, write_table


def head_column(frame: pd.DataFrame, name: str, head: str, encoder, index_dir: Path) -> pd.Series:
    """WeightedMaxSim with the F1w head in folder ``head`` over the pool ``frame`` of task ``name``."""
    collection, _, _ = task(name, index_dir)
    store = build_indices(collection, encoder, index_dir, verbose=False).store
    pool = frame[["qid", "docno", "query"]].assign(score=0.0, rank=0)
    scorer = {"w": cv.WeightedMaxSim(head, encoder=encoder, store=store)}
    scored = ScoreFusion(scorer, weights={}).features(pool)[["qid", "docno", "w"]]
    return frame[["qid", "docno"]].merge(scored, on=["qid", "docno"], how="left")["w"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="42,43,44")
    parser.add_argument("--heads", default="runs/token-weights/f1w-s{seed}", help="seed 42: the packaged head")
    parser.add_argument("--weight", type=float, required=True, help="the signal's weight (chosen elsewhere)")
    parser.add_argument("--signal", default="wordnet")
    parser.add_argument("--cache", default="runs/wordnet-features.pkl", help="the signal study's --cache")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "wordnet-signal" / "seeds"))
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    started = time.time()
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    data = pickle.loads(Path(args.cache).read_bytes())
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        column = f"wmaxsim s{seed}"
        fusion = wf.seeded(FUSION_WEIGHTS, seed)
        for name in TESTS:
            frame, qrels, vectors = data[name]
            if column not in frame:  # seed 42's packaged head is in the cache already
                frame = frame.assign(**{column: head_column(frame, name, args.heads.format(seed=seed), encoder,
                                                             Path(args.index_dir)).to_numpy()})  # fmt: skip
            depth = max(signal_study.DEPTHS)
            for weight in (0.0, args.weight):
                run = wf.ranking(frame, vectors, depth=depth, **{**fusion, args.signal: weight})
                rows.append({"seed": seed, "task": name, "weight": weight, "nDCG@10": wf.ndcg(run, qrels)})
            print(rows[-2:], flush=True)
    runs = pd.DataFrame(rows)
    summary = runs.groupby(["task", "weight"], sort=False)["nDCG@10"].agg(["mean", "std"]).reset_index()
    summary["cell"] = [f"{m:.4f} ± {s:.4f}" for m, s in zip(summary["mean"], summary["std"])]
    table = summary.pivot(index="weight", columns="task", values="cell")[TESTS].reset_index()
    markdown = "\n".join(
        [
            f"Fusion {FUSION_WEIGHTS} with each seed's F1w head ({args.heads}; seed 42 the packaged one), depth "
            f"{max(signal_study.DEPTHS)}, with and without {args.signal} at {args.weight} (the weight judged_dev.py "
            "chose; nothing is chosen here). nDCG@10, mean ± std over seeds " + args.seeds + ".",
            "",
            table.to_markdown(index=False),
            "",
            "## Every run",
            "",
            runs.pivot_table(index=["seed", "weight"], columns="task", values="nDCG@10")[TESTS].round(4).to_markdown(),
        ]
    )
    title = f"{args.signal} at {args.weight} beside the fusion of each seed's head (issue 18)"
    write_table(runs.round(4), Path(args.out), title, encoder, time.time() - started, markdown=markdown + "\n")
    print(markdown)


if __name__ == "__main__":
    main()
