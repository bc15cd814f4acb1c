"""How much the caption-edit table that training draws from differs between two versions of the rules: per kind, the
(caption, edit) pairs only the old table holds and those only the new one holds, and the share of the old table's
pairs that the new rules no longer make.

Each table holds at most one edit per kind and caption, drawn with one random stream per caption that all kinds
share, so a change in one kind's candidates can also change which edit another kind draws: a kind whose rules did
not change can differ by as many pairs as it gains and loses (negate's 65 / 65 in stop 57's comparison). The figure
measures the training data, not the rule changes alone.

    python experiments/caption_edits_drift.py write --out runs/edits-now.jsonl             # the rules as they are now
    git worktree add /tmp/old REV && PYTHONPATH=/tmp/old python experiments/caption_edits_drift.py write \\
        --out runs/edits-REV.jsonl                                                          # the rules of REV
    python experiments/caption_edits_drift.py compare runs/edits-REV.jsonl runs/edits-now.jsonl --out RESULT.md

``write`` makes the edits of the Flickr8k train captions as ``verifier_training.py data`` does (every kind, seed 0).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd


def write(args) -> None:
    import pyterrier_compverify as cv
    from pyterrier_compverify.datasets.flickr8k import flickr8k_captions
    from pyterrier_compverify.negatives.captions import KINDS, caption_edits

    _refuse(args.out, args.overwrite)
    cv.setup_local_data()
    edits = caption_edits(flickr8k_captions(args.split)["caption"].unique(), kinds=KINDS, seed=0)
    edits.to_json(args.out, orient="records", lines=True)
    print(f"{len(edits)} edits written to {args.out}")


def _refuse(path: str, overwrite: bool) -> None:
    """Stop before any work when ``path`` exists and ``--overwrite`` is not given."""
    from pyterrier_compverify.reporting import refuse_existing

    refuse_existing([Path(path)], overwrite)


def compare(args) -> None:
    _refuse(args.out, args.overwrite)
    old, new = (pd.read_json(p, lines=True) for p in (args.old, args.new))
    rows = []
    for kind in sorted(set(old["kind"]) | set(new["kind"])):
        a, b = ({tuple(r) for r in t[t["kind"] == kind][["caption", "edit"]].to_numpy()} for t in (old, new))
        rows.append({"kind": kind, "old": len(a), "new": len(b), "only old": len(a - b), "only new": len(b - a)})
    table = pd.DataFrame(rows)
    total = table[["old", "new", "only old", "only new"]].sum()
    table.loc[len(table)] = {"kind": "all", **total.to_dict()}
    table["share of old not made now"] = (table["only old"] / table["old"]).round(4)
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    text = f"# Caption edits: old rules against new\n\nCommand: `{command}`\n\n{table.to_markdown(index=False)}\n"
    Path(args.out).write_text(text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(required=True)
    p = sub.add_parser("write")
    p.add_argument("--out", required=True)
    p.add_argument("--split", default="train")
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=write)
    p = sub.add_parser("compare")
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--out", required=True)
    p.add_argument("--overwrite", action="store_true")
    p.set_defaults(func=compare)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
