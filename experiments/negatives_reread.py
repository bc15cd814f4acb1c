"""Structural negatives read again: on Cranfield, a corpus they were not tuned on, as ``compverify negatives`` gives
it, and on SciFact (``--corpus SciFact``), where the rules were written, after stops 54 and 55 narrowed them.

The first out-of-domain reading (``shared/reviews/negatives-reading.md``: Cranfield and Vaswani, binding 77% and
spatial 68%) found senses and terms the SciFact-tuned rules broke; the rules were then narrowed on its WRONG rows.
This study reads the rules' output again, on Cranfield sentences that reading did not show.

``sample TABLE``: ``TABLE`` is the output of ``compverify negatives TABLE --sentences irds:cranfield --seed 0``; rows
whose sentence1 the first reading showed (``--exclude``, matched after lower-casing and dropping punctuation) are left
out, then ``--rows`` rows per category are drawn at random (``--seed``; all of them where fewer). Writes
``sample-<category>.md`` (sentence1 and sentence2 only) and ``key.json`` (the rule of each row, not for the reader);
``criteria.md`` is written before the draw, by hand.

``summarise``: reads ``reading-<category>.md`` (a first line ``Reader X; ...``, then rows ``| # | CORRECT or WRONG |
note |``) and, where a second reader read a category, ``reading-<category>-second.md``; writes ``precision.md``.

    compverify negatives runs/negatives-cranfield.jsonl --sentences irds:cranfield --seed 0
    python experiments/negatives_reread.py sample runs/negatives-cranfield.jsonl
    python experiments/negatives_reread.py summarise
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
from readings import (
    add_summarise,
    cell,
    command_line,
    first_readings,
    precision_table,
    rule_sections,
    second_readings,
    table,
)

from pyterrier_compverify.reporting import refuse_existing

OUT = Path("experiments/results/negatives-reading-2")
REVIEW = "../shared/reviews/negatives-reading.md"
ROWS = {"binding": 100, "spatial": 100, "negation": 50, "paraphrase": 50}
# the earlier reading of each corpus: (where, CORRECT / rows per category)
FIRST = {
    "Cranfield": (
        "`shared/reviews/negatives-reading.md`, Cranfield and Vaswani sentences it split itself, before the rules were "
        "narrowed on its WRONG rows",
        {"negation": (40, 40), "binding": (46, 60), "spatial": (27, 40), "paraphrase": (38, 40)},
    ),
    "SciFact": (
        "`experiments/results/negatives-precision.md`, of the rules before stops 54 and 55 narrowed them (binding: "
        "reader 1)",
        {"negation": (97, 100), "binding": (93, 100), "spatial": (92, 100), "paraphrase": (93, 100)},
    ),
}


def normalise(text: str) -> str:
    """Lower case, letters and digits only, single spaces.

    >>> normalise("Flow over a plate ,  at M = 2 .")
    'flow over a plate at m 2'
    """
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def earlier_texts(spec: str) -> list[str]:
    """The text of an earlier reading: a file, or ``git:PATH``, every version of PATH in the repository's history
    (a reading file that later readings replaced)."""
    if not spec.startswith("git:"):
        return [Path(spec).read_text(encoding="utf-8")]
    path = spec.removeprefix("git:")
    commits = subprocess.run(["git", "log", "--format=%H", "--", path], capture_output=True, text=True, check=True)
    return [
        subprocess.run(["git", "show", f"{c}:{path}"], capture_output=True, text=True, check=True).stdout
        for c in commits.stdout.split()
    ]


def shown_sentences(text: str) -> set[str]:
    """The normalised sentences an earlier reading printed (``- sentence1: ...`` lines and table cells of six words
    or more)."""
    shown = set()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("- sentence1:"):
            shown.add(normalise(line.removeprefix("- sentence1:")))
        elif line.startswith("|"):
            shown.update(normalise(c) for c in line.strip("|").split("|") if len(c.split()) >= 6)
    return shown


def sample_command(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if (out / "key.json").exists():  # its rows may have been read: never drawn again over them
        raise SystemExit(f"{out / 'key.json'}: already drawn (its rows may have been read); choose another --out")
    if not (out / "criteria.md").exists():
        raise SystemExit(f"{out / 'criteria.md'}: write the criteria before the draw")
    path = Path(args.table)
    edits = pd.read_json(path, lines=True) if path.suffix == ".jsonl" else pd.read_csv(path)
    shown = set().union(*(shown_sentences(t) for spec in args.exclude.split(",") for t in earlier_texts(spec)))
    fresh = edits[~edits["sentence1"].map(normalise).isin(shown)]
    print(f"{len(edits)} edits, {len(edits) - len(fresh)} of sentences earlier readings showed left out")
    key, counts = [], []
    for category in args.categories.split(","):
        rows = ROWS[category]
        pool = fresh[fresh["category"] == category]
        sample = pool.sample(min(rows, len(pool)), random_state=args.seed).reset_index(drop=True)
        counts.append({"category": category, "edits": int((edits["category"] == category).sum()),
                       "unread": len(pool), "drawn": len(sample)})  # fmt: skip
        lines = [
            f"# Edits to read: `{category}`",
            "",
            f"{len(sample)} rows. Judge every row with the criteria in `criteria.md` only.",
            "",
            "| # | sentence1 | sentence2 |",
            "|---|---|---|",
        ]
        for i, row in enumerate(sample.itertuples(), start=1):
            lines.append(f"| {i} | {cell(row.sentence1)} | {cell(row.sentence2)} |")
            key.append({"category": category, "number": i, "rule": row.rule})
        (out / f"sample-{category}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(pd.DataFrame(counts).to_string(index=False))
    meta = {"command": "python experiments/negatives_reread.py " + " ".join(sys.argv[1:]), "table": str(path),
            "seed": args.seed, "excluded_sentences": len(shown), "excluded_edits": len(edits) - len(fresh),
            "counts": counts, "key": key,
            "made_by": args.made_by or f"compverify negatives {path} --sentences irds:cranfield --seed 0",
            "corpus": args.corpus}  # fmt: skip
    (out / "key.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def summarise_command(args: argparse.Namespace) -> None:
    out = Path(args.out)
    refuse_existing([out / "precision.md"], args.overwrite)
    meta, key, first = first_readings(out, "category")
    per_category = precision_table(first, "category")
    corpus = meta.get("corpus", "Cranfield")
    where, earlier = FIRST[corpus]
    per_category["earlier reading"] = [" / ".join(map(str, earlier[c])) for c in per_category["category"]]
    summary = command_line("experiments/negatives_reread.py")
    excluded_edits = f": {meta['excluded_edits']} edits" if "excluded_edits" in meta else ""
    made_by = meta.get("made_by", f"compverify negatives {meta['table']} --sentences irds:cranfield --seed 0")
    report = [
        f"# Structural negatives on {corpus}, read again: precision of the rules as they are now",
        "",
        f"Edits: `{made_by}` (every {corpus} sentence "
        "as the package splits it, one edit per category per sentence). Samples: "
        f"`{meta['command']}` ({meta['excluded_sentences']} strings printed by earlier readings: the edits of those "
        f"sentences left out{excluded_edits}). Summary: "
        f"`{summary}`. Readers: assistant-model sessions that did not write or "
        "see the rules, the code or the key, each given only `criteria.md` and its sample files (their verdicts in "
        "`reading-<category>.md`; a second reader's in `reading-<category>-second.md`). 95% intervals are Wilson "
        f"score intervals. The earlier reading: {where}.",
        "",
        table(pd.DataFrame(meta["counts"])),
        "",
        table(per_category),
        "",
    ]
    report += second_readings(out, key, first, "category")
    report += rule_sections(first, "category")
    (out / "precision.md").write_text("\n".join(report), encoding="utf-8")
    print("\n".join(report[:12]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    sample = commands.add_parser("sample", help="draw the rows to read")
    sample.add_argument("table", help="output of compverify negatives over irds:cranfield")
    sample.add_argument("--seed", type=int, default=2718, help="seed of the draw")
    sample.add_argument(
        "--exclude",
        default=REVIEW,
        help="earlier readings (comma-separated; git:PATH for every version of PATH): their sentences are left out",
    )
    sample.add_argument("--made-by", default=None, help="the command that made TABLE, for the report")
    sample.add_argument("--corpus", default="Cranfield", choices=sorted(FIRST), help="the corpus TABLE was made from")
    sample.add_argument("--categories", default=",".join(ROWS), help="categories to draw (comma-separated)")
    sample.add_argument("--out", default=str(OUT))
    add_summarise(commands, OUT)
    args = parser.parse_args()
    sample_command(args) if args.command == "sample" else summarise_command(args)


if __name__ == "__main__":
    main()
