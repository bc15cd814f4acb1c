"""What a similarity map shows of CondaQA's edits (issue 13: why the map heads do not pass CondaQA).

For every CondaQA triplet (anchor = passage, positive = its paraphrase edit, near-miss = its affirmative or scope
edit) at max length 256: MaxSim both ways, how many anchor tokens lose their match (best cosine below
``--unmatched``) in each candidate, how many words each edit changes, and a verifier's parts: its verdicts v, its
penalty and its served score (the packaged MapVerifier, or ``--verifier PATH``, a trained artifact over its own
encoder). An analysis of the test set, not a tuning step: nothing here feeds training or the serving form.

    COMPVERIFY_DATA=/path/to/data python experiments/condaqa_map_evidence.py
    python experiments/condaqa_map_evidence.py --verifier runs/verifiers/f4-ll-rw-s42 --out OUT

Writes experiments/results/condaqa-map-evidence.{md,json}.
"""

from __future__ import annotations

import argparse
import difflib
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import binomtest

import pyterrier_compverify as cv
from pyterrier_compverify.datasets.nearmiss import condaqa_triplets
from pyterrier_compverify.reporting import refuse_overwrite, write_table

CUES = re.compile(r"\b(not|no|never|none|nobody|nothing|neither|nor|without|cannot|\w+n't)\b", re.IGNORECASE)


def words_changed(a: str, b: str) -> int:
    """Words of ``a`` or ``b`` inside the edit's replaced, deleted or inserted spans (the larger side of each)."""
    a, b = a.split(), b.split()
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in ops if op != "equal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--unmatched", type=float, default=0.8, help="best cosine below which a token is unmatched")
    parser.add_argument("--verifier", help="a trained verifier artifact folder (default: the packaged MapVerifier)")
    parser.add_argument("--out", help="output stem (default: results/condaqa-map-evidence; needed with --verifier)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    if args.out is None:
        if args.verifier:
            raise SystemExit("--verifier needs --out: the default holds the packaged MapVerifier's committed results")
        args.out = str(Path(__file__).parent / "results" / "condaqa-map-evidence")
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    started = time.time()
    triplets = condaqa_triplets()
    encoder = cv.TokenEncoder(device="cpu", max_length=args.max_length)
    if args.verifier:
        artifact = cv.Verifier(args.verifier)
        verifier = artifact.reranker(encoder=artifact.encoder_for(encoder), verbose=False)
        if not hasattr(verifier.head, "components"):
            raise SystemExit(f"{args.verifier} records no served form (MaxSim minus a penalty): ship it with one first")
    else:
        verifier = cv.MapVerifier(encoder=encoder, verbose=False)
    encoder = verifier.encoder  # the artifact's own (fine-tuned) encoder where it has one
    texts = sorted(set(triplets["anchor"]) | set(triplets["positive"]) | set(triplets["near_miss"]))
    states = dict(zip(texts, encoder.encode(texts, verbose=False).token_states))
    head = verifier.head
    rows = []
    with torch.inference_mode():
        for t in triplets.itertuples():
            q = states[t.anchor].float()
            one = torch.ones(1, q.shape[0], dtype=torch.bool)
            v_self = float(head.query_verdict((q @ q.T)[None], one))
            row = {"category": t.category, "v_self": v_self}
            for key in ("positive", "near_miss"):
                text = getattr(t, key)
                c = states[text].float()
                sim = q @ c.T  # (m, n)
                base, v, penalty = head.components(
                    sim[None], one[0], torch.ones(1, c.shape[0], dtype=torch.bool), torch.tensor([v_self])
                )
                row |= {
                    f"{key} S": float(sim.amax(1).mean()),
                    f"{key} reverse": float(sim.amax(0).mean()),
                    f"{key} unmatched": int((sim.amax(1) < args.unmatched).sum()),
                    f"{key} words": words_changed(t.anchor, text),
                    f"{key} cues": len(CUES.findall(text)),
                    f"{key} v": float(v),
                    f"{key} score": float(base - penalty),
                    f"{key} penalty": float(penalty),
                }
            row["anchor cues"] = len(CUES.findall(t.anchor))
            rows.append(row)
    d = pd.DataFrame(rows)
    summary = []
    for category, g in d.groupby("category"):
        summary.append(
            {
                "category": category,
                "triplets": len(g),
                "MaxSim win": (g["positive S"] > g["near_miss S"]).mean(),
                "served form win" if args.verifier else "shipped MapVerifier win": (
                    g["positive score"] > g["near_miss score"]
                ).mean(),
                "head verdict win (v)": (g["positive v"] > g["near_miss v"]).mean(),
                "head win: two-sided binomial p against 0.5 (ties lose)": binomtest(
                    int((g["positive v"] > g["near_miss v"]).sum()), len(g)
                ).pvalue,
                "served order = MaxSim's": (
                    np.sign(g["positive score"] - g["near_miss score"]) == np.sign(g["positive S"] - g["near_miss S"])
                ).mean(),
                "no penalty on either": ((g["positive penalty"] == 0) & (g["near_miss penalty"] == 0)).mean(),
                "median |S(pos) - S(near-miss)|": (g["positive S"] - g["near_miss S"]).abs().median(),
                "median |v(pos) - v(near-miss)|": (g["positive v"] - g["near_miss v"]).abs().median(),
                "positive loses more anchor tokens": (g["positive unmatched"] > g["near_miss unmatched"]).mean(),
                "as many": (g["positive unmatched"] == g["near_miss unmatched"]).mean(),
                "median unmatched (pos / near-miss)": f"{g['positive unmatched'].median():g} / "
                f"{g['near_miss unmatched'].median():g}",
                "median words changed (pos / near-miss)": f"{g['positive words'].median():g} / "
                f"{g['near_miss words'].median():g}",
                "near-miss has fewer negation cue words": (g["near_miss cues"] < g["anchor cues"]).mean(),
                "positive keeps the cue count": (g["positive cues"] == g["anchor cues"]).mean(),
                "win where the positive loses fewer tokens": (
                    (g["positive score"] > g["near_miss score"])[g["positive unmatched"] < g["near_miss unmatched"]]
                ).mean(),
                "win where it loses more": (
                    (g["positive score"] > g["near_miss score"])[g["positive unmatched"] > g["near_miss unmatched"]]
                ).mean(),
            }
        )
    table = pd.DataFrame(summary)
    markdown = (
        f"Unmatched = best cosine below {args.unmatched}; max length {args.max_length}; "
        "cue words: not, no, never, none, nobody, nothing, neither, nor, without, cannot, -n't.\n\n"
        + table.round(3).set_index("category").T.to_markdown()
        + "\n"
    )
    write_table(
        table,
        Path(args.out),
        "CondaQA: what the similarity map shows of the edits" + (f" ({args.verifier})" if args.verifier else ""),
        encoder,
        time.time() - started,
        markdown=markdown,
    )
    print(markdown)
    print(np.round(d.groupby("category").mean(numeric_only=True), 3).T.to_markdown())


if __name__ == "__main__":
    main()
