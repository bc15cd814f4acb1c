"""Issue 18: does a coverage signal help the packaged CapRetrievalEn fusion? Chosen on dev, then read on test.

The granularity dilemma (PAPERS.md) is about how much of a caption a short query accounts for. MaxSim reads the
query's side only (each query token's best match in the caption); coverage reads the caption's side: the mean
over the caption's tokens of each one's best cosine with any query token, so a caption about the query scores
higher than one where the query is a detail. Its weight beside the packaged fusion is chosen on dev and read on
test by ``signal_study.py``'s procedure.

    COMPVERIFY_DATA=/path/to/data python experiments/coverage_signal.py [--test] [--cache runs/coverage-features.pkl]

Writes ``--out`` (default experiments/results/coverage-signal/coverage).{md,json}.
"""

from __future__ import annotations

from pathlib import Path

import signal_study
import torch
from capretrieval_best import task

import pyterrier_compverify as cv
from pyterrier_compverify.fusion import ScoreFusion
from pyterrier_compverify.pipelines import build_indices
from pyterrier_compverify.reporting import refuse_overwrite
from pyterrier_compverify.rerank import TokenReranker
from pyterrier_compverify.scoring.heads.fixed import FixedHead, maxsim
from pyterrier_compverify.scoring.simmap import batch_mask


def coverage(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """sim (B, m, n) -> (B,): mean over real candidate tokens of the best cosine with a real query token.

    >>> sim = torch.tensor([[[0.9, 0.1], [0.2, 0.3]]])  # two query tokens, two candidate tokens
    >>> round(coverage(sim, torch.tensor([True, True]), torch.tensor([[True, True]])).item(), 4)  # (0.9 + 0.3) / 2
    0.6
    """
    return maxsim(
        sim.transpose(1, 2), cand_mask, batch_mask(query_mask, sim.shape[0])
    )  # MaxSim from the caption's side


def features(name: str, encoder: cv.TokenEncoder, index_dir: Path) -> signal_study.Features:
    """The packaged fusion's features at depth 300 (``signal_study.packaged_features``), plus ``coverage``."""
    frame, qrels, vectors = signal_study.packaged_features(name, encoder, index_dir)
    collection, _, _ = task(name, index_dir)
    store = build_indices(collection, encoder, index_dir, verbose=False).store
    scorer = TokenReranker(encoder, head=FixedHead(coverage, "coverage"), store=store)
    pool = frame[["qid", "docno", "query"]].assign(score=0.0, rank=0)
    scores = ScoreFusion({"coverage": scorer}, weights={}).features(pool)[["qid", "docno", "coverage"]]
    return frame.merge(scores, on=["qid", "docno"], how="left"), qrels, vectors


def main() -> None:
    out = str(Path(__file__).parent / "results" / "coverage-signal" / "coverage")
    args = signal_study.parser(__doc__, out).parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    title = "Coverage signal beside the packaged fusion (issue 18)"
    study = signal_study.study("coverage", lambda name: features(name, encoder, Path(args.index_dir)), args, title,
                               encoder)  # fmt: skip
    print(study)


if __name__ == "__main__":
    main()
