"""Issue 13: which CondaQA edits the packaged ``cv.MapVerifier()`` (v7) gets wrong, read by someone who did not
write the verifier or its training rules.

Each CondaQA triplet is a passage (anchor), its paraphrase edit (positive) and an edit that changes the meaning
of its negation (near-miss: the affirmative edit removes the negation, the scope edit moves it). The verifier wins
a triplet when s(anchor, positive) > s(anchor, near-miss). ``sample`` writes every triplet of both categories as
word-level differences from the passage (what each edit changed, with a few words around it), without the
scores; a reader labels the kind of each edit by ``criteria.md``. ``summarise`` then counts the wins of v7 and
MaxSim per kind. Nothing is tuned on CondaQA: this is an analysis of test errors. The criteria were written
before the sample was drawn; their examples are the writer's own, and one ("illegal" -> "legal") occurs in it.

    COMPVERIFY_DATA=/path/to/data python experiments/condaqa_errors.py sample
    # a reader writes experiments/results/condaqa-errors/reading.md from criteria.md and sample.md
    COMPVERIFY_DATA=/path/to/data python experiments/condaqa_errors.py summarise
"""

from __future__ import annotations

import difflib
import json
import re
import sys
import time
from pathlib import Path

import pandas as pd

import pyterrier_compverify as cv
from pyterrier_compverify.datasets.nearmiss import condaqa_triplets
from pyterrier_compverify.measures import nearmiss_scores
from pyterrier_compverify.reporting import write_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from readings import keyed_reading, labelled_rows, reading_study, wilson  # noqa: E402

OUT = Path(__file__).parent / "results" / "condaqa-errors"
NEAR_MISS_KINDS = ("CUE-DELETED", "AFFIXAL", "LEXICAL", "WIDER")
PARAPHRASE_KINDS = ("KEEPS-CUE", "REWORDED-CUE", "REWRITE")
CONTEXT = 4
WORD = re.compile(r"\w+|[^\w\s]")  # a word, or one punctuation mark


def changes(anchor: str, edit: str) -> list[str]:
    """The regions where ``edit`` differs from ``anchor`` word by word (punctuation marks count as words), each as
    ``context [-removed-] {+added+} context``; changes at most twice ``CONTEXT`` words apart share one region, so
    every word shown outside brackets is one both texts have there.

    >>> changes("the cat is not here today", "the cat is here today")
    ['the cat is [-not-] here today']
    >>> changes("a b c d e f", "a B c D e f")
    ['a [-b-] {+B+} c [-d-] {+D+} e f']
    """
    a, b = WORD.findall(anchor), WORD.findall(edit)
    out = []
    for group in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_grouped_opcodes(CONTEXT):
        parts = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                parts.append(" ".join(a[i1:i2]))
                continue
            parts += [f"[-{' '.join(a[i1:i2])}-]"] if i2 > i1 else []
            parts += [f"{{+{' '.join(b[j1:j2])}+}}"] if j2 > j1 else []
        out.append(" ".join(parts))
    return out


def sample(args) -> None:
    """Write ``sample.md`` (for the reader: the edits, no scores) and ``key.json`` (each number's triplet id and
    whether v7 and MaxSim win it)."""
    began = time.time()
    out = Path(args.out)
    triplets = condaqa_triplets().reset_index(drop=True)
    encoder = cv.TokenEncoder(max_length=256, verbose=False)
    scorers = {"v7": cv.MapVerifier(encoder=encoder), "MaxSim": cv.MaxSim(encoder)}
    key = triplets[["id", "category"]].copy()
    for name, scorer in scorers.items():
        scored = nearmiss_scores(scorer, triplets)
        key[f"{name} win"] = (scored["s_pos"] > scored["s_neg"]).to_numpy()
    lines = []
    for number, row in enumerate(triplets.itertuples(), start=1):
        lines += [f"## {number}. ({row.category} edit)", "", "Paraphrase edit changed:", ""]
        lines += [f"- {c}" for c in changes(row.anchor, row.positive)] or ["- (nothing)"]
        lines += ["", "Near-miss edit changed:", ""]
        lines += [f"- {c}" for c in changes(row.anchor, row.near_miss)] or ["- (nothing)"]
        lines.append("")
    out.mkdir(parents=True, exist_ok=True)
    header = (f"# CondaQA: the {len(triplets)} triplets as edits of their passage\n\nRead with `criteria.md`. "
              "`[-words-]` were removed from the passage, `{+words+}` added; the words outside brackets are in both "
              f"texts ({CONTEXT} on each side of a change; changes at most {2 * CONTEXT} words apart share one "
              "line). Punctuation marks count as words.\n\n")  # fmt: skip
    (out / "sample.md").write_text(header + "\n".join(lines))
    key.insert(0, "number", range(1, len(key) + 1))
    meta = {"command": " ".join(sys.argv), "max_length": 256, "encoder": encoder.describe(),
            "seconds": round(time.time() - began, 1),
            "key": key.to_dict("records")}  # fmt: skip
    (out / "key.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(key.groupby("category")[["v7 win", "MaxSim win"]].mean().round(3))


def reading_table(path: Path) -> pd.DataFrame:
    """The reader's table (``| number | near-miss kind | paraphrase kind | note |``), checked."""
    return labelled_rows(path, {"near-miss kind": NEAR_MISS_KINDS, "paraphrase kind": PARAPHRASE_KINDS})


def summarise(args) -> None:
    """Win rates of v7 and MaxSim per edit kind read in ``reading.md``, with 95% Wilson intervals."""
    began = time.time()
    out = Path(args.out)
    meta, frame = keyed_reading(out, reading_table(out / "reading.md"))
    parts, tables = [], []
    for by in ("near-miss kind", "paraphrase kind"):
        rows = []
        for (category, kind), part in frame.groupby(["category", by]):
            row = {"category": category, by: kind, "triplets": len(part)}
            for name in ("v7", "MaxSim"):
                wins = int(part[f"{name} win"].sum())
                low, high = wilson(wins, len(part))
                row[f"{name} win"] = f"{wins / len(part):.2f} ({low:.2f}-{high:.2f})"
            rows.append(row)
        table = pd.DataFrame(rows)
        tables.append(table.rename(columns={by: "kind"}).assign(by=by))
        parts += [f"## Wins by {by} (95% Wilson interval)", table.to_markdown(index=False)]
    both = pd.crosstab([frame["category"], frame["near-miss kind"]], frame["paraphrase kind"])
    markdown = "\n\n".join([
        f"Every CondaQA triplet ({len(frame)}; sample: `{meta['command']}`, max length {meta['max_length']}), its "
        "edits' kinds as read by a reader given only `criteria.md` (`reading.md`); a win is s(anchor, paraphrase) > "
        "s(anchor, near-miss), for the packaged `cv.MapVerifier()` (v7) and MaxSim.",
        *parts, "## Near-miss kind x paraphrase kind", both.to_markdown(),
    ])  # fmt: skip
    title = "Which CondaQA edits v7 gets wrong (issue 13)"
    write_table(pd.concat(tables, ignore_index=True), out / "summary", title, None, time.time() - began, markdown)
    print(markdown)


def main() -> None:
    reading_study(__doc__, OUT, sample, summarise)


if __name__ == "__main__":
    main()
