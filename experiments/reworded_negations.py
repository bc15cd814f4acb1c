"""Reworded negations (``negatives.affixal``, or ``negatives.lexical`` with ``--rules lexical``): a reading sample
for a reader who did not write the rules, and the precision that reading gives.

The rules were written while reading SciFact train-corpus output only; the first sample is drawn from Cranfield
abstracts (aerodynamics), text the rules never saw. After that reading (and a code review) the rules were fixed, and
the second sample is drawn from Vaswani abstracts (electronics and physics), which neither the rules nor the fixes
saw. Nothing here trains or selects anything.

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data python experiments/reworded_negations.py sample
    # a reader given only reworded-negations-criteria.md fills reworded-negations-reading.md (one verdict per row)
    python experiments/reworded_negations.py precision
    ... --out experiments/results/reworded-negations-v2 sample --collection vaswani; ... --out ...-v2 precision
    ... --out experiments/results/lexical-negations sample --rules lexical --collection irds:cranfield,vaswani
    ... --out experiments/results/lexical-negations-scifact sample --rules lexical --collection irds:beir/scifact/train
        --n 73 --exclude experiments/results/lexical-negations-seen.json
    ... --out experiments/results/lexical-negations-scifact precision --seen-corpus  (the rules' own corpus)

``sample`` writes ``--out``-sample.md (numbered rows: the "not" form, the affix form, the affirmative) and
``--out``-key.md (each row's adjective and antonym); ``precision`` reads ``--out``-reading.md and writes
``--out``-precision.md (CORRECT share with a 95% Wilson interval); neither stage overwrites its files without
``--overwrite``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pyterrier_compverify.reporting import refuse_existing

sys.path.insert(0, str(Path(__file__).resolve().parent))
from readings import (
    cell,  # noqa: E402  (a table cell: pipes escaped)
    wilson,  # noqa: E402
)

OUT = "experiments/results/reworded-negations"


def sentences_of(collection: str) -> list[str]:
    """Cranfield abstracts split at their spaced full stops (the text is lower case: " . " ends a sentence);
    Vaswani abstracts whole (lower case, no punctuation at all); other collections by ``corpus_sentences``."""
    import pyterrier_compverify as cv
    from pyterrier_compverify.training.data import corpus_sentences

    if collection not in ("irds:cranfield", "vaswani"):
        return corpus_sentences(collection, seed=0)
    sentences = []
    for doc in cv.datasets.load_collection(collection).corpus_iter():
        if collection == "vaswani":
            sentences.append(" ".join(doc["text"].split()))
            continue
        parts = re.split(r"\s\.\s*", doc["text"])
        sentences += [" ".join(p.split()) + " ." for p in parts if len(p.split()) >= 5]
    return sentences


def sample(args) -> None:
    import pyterrier_compverify as cv
    from pyterrier_compverify.negatives.affixal import reworded_negations
    from pyterrier_compverify.negatives.lexical import lexical_negations

    cv.setup_local_data()
    rules = {"affixal": reworded_negations, "lexical": lexical_negations}[args.rules]
    sentences = [s for collection in args.collection.split(",") for s in sentences_of(collection)]
    table = rules(sentences)
    table = table[table["direction"].str.startswith("not->")]  # one row per sentence: the three forms
    if args.exclude:  # sentences the rule writer read: not a reading of unseen output
        table = table[~table["sentence"].isin(json.loads(Path(args.exclude).read_text()))]
    print(f"{len(table)} {args.collection} texts edited; sampling {args.n}")
    rows = table.sample(n=min(args.n, len(table)), random_state=args.seed).reset_index(drop=True)
    negator = "the word itself" if args.rules == "affixal" else "a word that means *not* (fail to, lack, absent, dead)"
    lines = [
        f"# Reworded negations: reading sample ({len(rows)} rows, {args.collection}, seed {args.seed})",
        "",
        f"Judge each row with `{Path(args.out).name}-criteria.md` only. A = negated with *not*, B = negated by",
        f"{negator}, C = not negated.",
        "",
        "| row | A | B | C | verdict | reason |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in rows.iterrows():
        lines.append(f"| {i + 1} | {cell(r.anchor)} | {cell(r.positive)} | {cell(r.negative)} |  |  |")
    Path(args.out + "-sample.md").write_text("\n".join(lines) + "\n")
    key = rows.assign(row=rows.index + 1)[["row", "word", "antonym"]]
    Path(args.out + "-key.md").write_text(f"# Reworded negations: sample key\n\n{key.to_markdown(index=False)}\n")


def precision(args) -> None:
    text = Path(args.out + "-reading.md").read_text()
    verdicts = re.findall(r"^\|\s*\d+\s*\|.*\|\s*(CORRECT|WRONG)\s*\|", text, flags=re.MULTILINE)
    n, k = len(verdicts), verdicts.count("CORRECT")
    where = "text the rules were not written on"
    if args.seen_corpus:
        where = "the corpus the rules were written on, without the rows their writer read: not an unseen-text figure"
    lo, hi = wilson(k, n)
    body = (
        f"# Reworded negations: precision read by an independent reader\n\n"
        f"Rows: `{args.out}-sample.md` ({where}); reading: "
        f"`{args.out}-reading.md`.\n\n| rows | CORRECT | precision | 95% Wilson interval |\n|---|---|---|---|\n"
        f"| {n} | {k} | {k / n:.2f} | {lo:.3f}-{hi:.3f} |\n"
    )
    Path(args.out + "-precision.md").write_text(body)
    print(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT)
    sub = parser.add_subparsers(dest="stage", required=True)
    p = sub.add_parser("sample")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--seed", type=int, default=2718)
    p.add_argument("--collection", default="irds:cranfield", help="irds:cranfield or vaswani, or both (a comma)")
    p.add_argument("--exclude", help="a JSON list of sentences not to sample (those the rule writer read)")
    p.add_argument("--rules", default="affixal", choices=("affixal", "lexical"), help="negatives.affixal or .lexical")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out-sample.md / -key.md")
    p.set_defaults(func=sample, writes=("-sample.md", "-key.md"))
    p = sub.add_parser("precision")
    p.add_argument("--seen-corpus", action="store_true", help="the sample is from the corpus the rules were written on")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out-precision.md")
    p.set_defaults(func=precision, writes=("-precision.md",))
    args = parser.parse_args()
    refuse_existing([args.out + suffix for suffix in args.writes], args.overwrite)
    args.func(args)


if __name__ == "__main__":
    main()
