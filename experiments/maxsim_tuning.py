"""Issue 18: all-MiniLM-L6-v2's last layer fine-tuned for MaxSim itself, over cached states of the layer below.

The encoder fine-tunes of ``capretrieval.py`` train the pooled embedding (InfoNCE on the mean of the token states);
the pipelines here score with MaxSim over the token states. This trains the score that is served: per query group,
a listwise softmax (temperature ``--tau``) over MaxSim(query, candidate) of 1 relevant and ``--group - 1``
negatives, where MaxSim is ``fixed.maxsim`` over the states of the last layer (``TopLayers``), run on the cached
hidden states that enter it (``StateCache``, ``top_layers=1``), so a step never runs layers 1-5.

Groups are ``cross_encoder.py``'s (cached there): Flickr8k *train* caption queries (a keyword, a phrase and the
first caption per image, the leakage filter against CapRetrievalEn on) with the image's captions relevant, with
``--own-positive`` a keyword or phrase query's own caption too, with ``--covering`` also another image's caption that
holds every content stem of the query (a stem-subset heuristic for relevance by what a caption says); hard
negatives from the base dense top ``--depth`` (with ``--covering``: the first ``--depth`` non-covering captions of
the top ``2 x --depth``), and with ``--covering`` ``--random-negatives`` of each group's 7 pre-drawn random
non-covering captions; plus
``--scifact-groups`` SciFact *train* groups per step (the 509 queries outside dev:scifact-train) so that science
retrieval is kept. The run folder holds ``final`` (a sentence-transformers model: ``cv.TokenEncoder(path)``),
``state.pt`` (resume with ``--resume``), ``log.jsonl`` and ``config.json``. Its signals are then chosen on dev and
read on test by ``weighted_fusion.py --tuned``:

    COMPVERIFY_DATA=/path/to/data python experiments/maxsim_tuning.py --seed 42 --own-positive --covering
    COMPVERIFY_DATA=/path/to/data python experiments/weighted_fusion.py --seeds 42 --depths 100,200,300,500 \
        --heads pyterrier_compverify/weights/f1w-minilm-frozen --tuned 'runs/maxsim-tuning/ll-s{seed}/final' \
        --out experiments/results/weighted-fusion-maxsim-tuned-s42
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

import pyterrier_compverify as cv
from pyterrier_compverify.encoder import DEFAULT_MODEL
from pyterrier_compverify.pipelines import DEFAULT_INDEX_DIR
from pyterrier_compverify.scoring.heads.fixed import maxsim
from pyterrier_compverify.scoring.simmap import similarity_map
from pyterrier_compverify.training.state_cache import StateCache, TopLayers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cross_encoder import GROUP, flickr_groups, scifact_groups  # noqa: E402
from run_state import RunState  # noqa: E402


class Groups:
    """Query groups as ids into one table of distinct texts, sampled ``size`` candidates at a time: per group its
    query, positives, hard negatives and (``--covering`` groups) pre-drawn random non-covering negatives. A
    negative whose text is also a positive of the group, or repeats another, is left out; a group left with fewer
    than ``size - 1`` negatives (``k`` of them random where it has random ones) is left out (``dropped``)."""

    def __init__(self, groups: list[dict], texts: dict[str, int], size: int, k: int):
        def ids(items):
            return np.array([texts.setdefault(t, len(texts)) for t in items], dtype=np.int64)

        self.size, self.k, self.rows = size, k, []
        for g in groups:
            pos = np.unique(ids(g["positives"]))
            hard = np.setdiff1d(ids(g["negatives"]), pos)  # unique too
            random = np.setdiff1d(np.setdiff1d(ids(g.get("random", [])), pos), hard)
            if len(hard) >= size - 1 - min(k, len(random)):
                self.rows.append((texts.setdefault(g["query"], len(texts)), pos, hard, random))
        self.dropped = len(groups) - len(self.rows)

    def sample(self, rng: np.random.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(n,) query ids and (n, size) candidate ids, a relevant one first, then ``size - 1`` distinct negatives
        of which ``k`` are random (where the group has them)."""
        queries, cands = [], []
        for i in rng.choice(len(self.rows), n, replace=False):
            query, pos, hard, random = self.rows[i]
            k = min(self.k, len(random))
            negs = [hard[rng.choice(len(hard), self.size - 1 - k, replace=False)]]
            if k:
                negs.append(random[rng.choice(len(random), k, replace=False)])
            queries.append(query)
            cands.append(np.concatenate([pos[rng.integers(len(pos))][None], *negs]))
        return torch.tensor(queries), torch.from_numpy(np.stack(cands))


def group_scores(top: TopLayers, cache: StateCache, queries: torch.Tensor, cands: torch.Tensor) -> torch.Tensor:
    """(n,) query ids and (n, g) candidate ids -> (n, g) MaxSim of each query with each candidate, through the
    trained last layer."""
    n, g = cands.shape
    q_hidden, q_mask = cache.padded(queries)
    c_hidden, c_mask = cache.padded(cands.flatten())
    q = top(q_hidden, q_mask).float()  # (n, m, d)
    c = top(c_hidden, c_mask).float()  # (n * g, l, d)
    with torch.autocast("cpu", enabled=False):  # the map and its max in fp32, not rounded again to bf16
        sim = similarity_map(q.repeat_interleave(g, 0), c)  # (n * g, m, l), each query beside its g candidates
        return maxsim(sim, q_mask.repeat_interleave(g, 0), c_mask).view(n, g)


def run_dir(args) -> Path:
    return Path(args.work) / f"ll{args.tag and '-' + args.tag}-s{args.seed}"


def train(args) -> None:
    run = run_dir(args)
    RunState.check_new(run / "state.pt", args.resume)
    run.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    encoder = cv.TokenEncoder(DEFAULT_MODEL, max_length=128, device="cpu", verbose=False)  # a CPU recipe
    texts: dict[str, int] = {}
    made = flickr_groups(encoder, Path(args.groups_work), args.depth, args.own_positive, args.covering)
    flickr = Groups(made, texts, args.group, args.random_negatives)
    made = (
        scifact_groups(encoder, Path(args.index_dir), Path(args.groups_work), args.depth) if args.scifact_groups else []
    )
    scifact = Groups(made, texts, args.group, 0)
    for name, groups, n in (("Flickr8k", flickr, args.groups), ("SciFact", scifact, args.scifact_groups)):
        if n > len(groups.rows):
            raise SystemExit(f"{n} {name} groups per step, but {len(groups.rows)} have {args.group - 1} negatives: "
                             "lower the groups per step or --group")  # fmt: skip
    print(f"groups: Flickr8k {len(flickr.rows)} ({flickr.dropped} with too few negatives left out), SciFact "
          f"{len(scifact.rows)} ({scifact.dropped} left out); {len(texts)} distinct texts", flush=True)  # fmt: skip
    # the layer-5 states of the fp32 encoder (stored as fp16); only the trained layer runs under bf16 autocast
    cache = StateCache.build(encoder, list(texts), Path(args.work) / "states", top_layers=1)
    top = TopLayers(encoder, 1)
    top.eval()  # no dropout: the cached states below are dropout-free too
    state = RunState(run / "state.pt", "top", top, lr=args.lr, steps=args.steps, seed=args.seed, resume=args.resume)
    rng, start = state.rng, state.start
    config = {**vars(args), "flickr_groups": len(flickr.rows), "scifact_groups_total": len(scifact.rows),
              "left_out": [flickr.dropped, scifact.dropped]}  # fmt: skip
    (run / "config.json").write_text(json.dumps(config, indent=2))
    log, began = (run / "log.jsonl").open("a"), time.time()
    for step in tqdm(range(start, args.steps), total=args.steps, initial=start, desc="MaxSim tuning", mininterval=30):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = 0.0
            for groups, n in ((flickr, args.groups), (scifact, args.scifact_groups)):
                if n:
                    scores = group_scores(top, cache, *groups.sample(rng, n)) / args.tau
                    loss = loss + torch.nn.functional.cross_entropy(scores, torch.zeros(n, dtype=torch.long))
        loss.backward()
        state.update()
        log.write(json.dumps({"step": step + 1, "loss": round(loss.item(), 4), "s": round(time.time() - began, 1)}))
        log.write("\n")
        if (step + 1) % args.save_every == 0 or step + 1 == args.steps:
            log.flush()
            state.save(step + 1)
    encoder.model.save(str(run / "final"))  # the whole encoder, its last layer trained (shared with ``top``)
    print(f"saved {run / 'final'} ({time.time() - began:.0f} s of training)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--groups", type=int, default=16, help="Flickr8k query groups per step")
    parser.add_argument("--scifact-groups", type=int, default=2, help="SciFact train query groups per step")
    parser.add_argument("--group", type=int, default=16, help="candidates per group: 1 relevant + negatives")
    parser.add_argument("--depth", type=int, default=50, help="dense top k the negatives are drawn from")
    parser.add_argument(
        "--random-negatives", type=int, help="of a Flickr8k group's negatives (needs --covering; default 2 with it)"
    )
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--tau", type=float, default=0.02)
    parser.add_argument(
        "--own-positive", action="store_true", help="a keyword / phrase query's own caption is relevant"
    )
    parser.add_argument(
        "--covering", action="store_true", help="another image's caption holding every query content word is relevant"
    )
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--tag", default="")
    parser.add_argument("--work", default="runs/maxsim-tuning")
    parser.add_argument("--groups-work", default="runs/cross-encoder", help="where cross_encoder.py caches its groups")
    parser.add_argument("--index-dir", default=str(DEFAULT_INDEX_DIR))
    args = parser.parse_args()
    if args.random_negatives is None:
        args.random_negatives = 2 if args.covering else 0
    most = min(args.group - 1, GROUP - 1)  # a covering group holds GROUP - 1 pre-drawn random captions
    if not 0 <= args.random_negatives <= most:
        parser.error(f"--random-negatives must be 0-{most}")
    if min(args.groups, args.scifact_groups) < 0:
        parser.error("--groups and --scifact-groups must be at least 0")
    if args.random_negatives and not args.covering:
        parser.error("--random-negatives draws from the covering groups' random captions: add --covering")
    if args.groups + args.scifact_groups == 0:
        parser.error("--groups and --scifact-groups are both 0: nothing to train on")
    cv.setup_local_data()
    train(args)


if __name__ == "__main__":
    main()
