"""The caption near-miss rules read again as they are now, on captions no reader has read.

The first reading (``experiments/caption_edits.py``, ``experiments/results/caption-edits-precision.md``) was of the
rules as they were then; later fixes narrowed several rules. This study draws new rows and has them read again by
readers who did not write the rules and get only the criteria.

``sample``: every Flickr8k dev caption through ``caption_edits`` (seed 0, as the first reading), leaving out each
caption that any earlier sample file showed a reader (``--exclude``: folders whose ``caption-edits-sample-*.md``,
``sample-*.md`` and ``caption-edits-*/sample-*.md`` files are read); then
``--rows`` rows per kind drawn at random (``--sample-seed``). Where dev has too few (the swaps), the rest comes from
edits of train captions that were neither looked at while the rules were written (``caption_edits.TUNING_SAMPLES``)
nor read before. Writes ``sample-<kind>.md`` (caption and edit only), ``criteria.md`` (the first reading's criteria,
unchanged) and ``key.json`` (the rule and split of each row, not for the reader).

``summarise``: reads ``reading-<kind>.md`` (a first line ``Reader X; ...``, then rows ``| # | CORRECT or WRONG |
note |``, one per sampled row) and writes
``precision.md``: precision per kind with a 95% Wilson interval, borderline rows counted both ways, and per rule.

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data python experiments/caption_edits_reread.py sample
    python experiments/caption_edits_reread.py summarise
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pandas as pd
from caption_edits import TUNING_SAMPLES
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

from pyterrier_compverify.datasets.flickr8k import flickr8k_captions
from pyterrier_compverify.negatives.captions import KINDS, caption_edits
from pyterrier_compverify.reporting import refuse_existing

RESULTS = Path("experiments/results")
OUT = RESULTS / "caption-edits-2"


def read_captions(files: list[Path]) -> set[str]:
    """The captions shown in earlier sample files (second column of their numbered rows)."""
    shown = set()
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[0].isdigit():
                shown.add(cells[1].replace("\\|", "|"))
    return shown


def draw(dev: pd.DataFrame, spare: pd.DataFrame, kind: str, rows: int, seed: int) -> tuple[pd.DataFrame, str]:
    """``rows`` edits of ``kind``: from dev at random, then from the spare train edits; with a line saying where
    they come from."""
    pool = dev[dev["kind"] == kind]
    sample = pool.sample(min(rows, len(pool)), random_state=seed).assign(split="dev")
    source = f"drawn at random (seed {seed}) from the {len(pool)} such edits of unread Flickr8k dev captions"
    if len(sample) < rows:
        extra = spare[spare["kind"] == kind]
        extra = extra.sample(min(rows - len(sample), len(extra)), random_state=seed).assign(split="train")
        train = f"drawn at random (seed {seed}) from edits of Flickr8k train captions"
        source = (
            f"rows 1-{len(sample)} are all {len(pool)} such edits of unread Flickr8k dev captions; rows "
            f"{len(sample) + 1}-{len(sample) + len(extra)} are {train}"
            if len(sample)
            else f"no unread Flickr8k dev caption has such an edit; all rows are {train}"
        )
        sample = pd.concat([sample, extra])
    return sample.reset_index(drop=True), source


def sample_command(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if (out / "key.json").exists():  # its rows may have been read: never drawn again over them
        raise SystemExit(f"{out / 'key.json'}: already drawn (its rows may have been read); choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    folders = [Path(f) for f in args.exclude.split(",")]
    patterns = ("caption-edits-sample-*.md", "sample-*.md", "caption-edits-*/sample-*.md")  # every earlier reading
    earlier = sorted({p for f in folders for pattern in patterns for p in f.glob(pattern)})
    shown = read_captions(earlier)
    print(f"{len(shown)} captions shown in {len(earlier)} earlier sample files")
    dev = flickr8k_captions("dev", data_dir=args.data_dir)
    dev = dev[~dev["caption"].str.strip().isin(shown)]
    dev_edits = caption_edits(dev["caption"], seed=args.seed)
    train = flickr8k_captions("train", data_dir=args.data_dir)
    seen = set(shown)
    for n, seed in TUNING_SAMPLES:
        seen |= set(train["caption"].sample(n, random_state=seed))
    spare_captions = train[~train["caption"].isin(seen) & ~train["caption"].str.strip().isin(shown)]["caption"]
    spare = caption_edits(spare_captions, seed=args.seed)
    key = []
    for kind in args.kinds.split(","):
        sample, source = draw(dev_edits, spare, kind, args.rows, args.sample_seed)
        nature = "a meaning-kept edit (paraphrase)" if kind == "paraphrase" else f"a near-miss edit of kind `{kind}`"
        lines = [
            f"# Caption edits to read: `{kind}`",
            "",
            f"Each row is a caption from Flickr8k and {nature}. Judge every row with the criteria in `criteria.md`",
            f"only. {len(sample)} rows: {source}.",
            "",
            "| # | caption | edit |",
            "|---|---|---|",
        ]
        for i, row in enumerate(sample.itertuples(), start=1):
            lines.append(f"| {i} | {cell(row.caption)} | {cell(row.edit)} |")
            key.append({"kind": kind, "number": i, "rule": row.rule, "split": row.split})
        (out / f"sample-{kind}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"sample {kind}: {len(sample)} rows; {source}")
    shutil.copyfile(RESULTS / "caption-edits-criteria.md", out / "criteria.md")
    command = "python experiments/caption_edits_reread.py " + " ".join(sys.argv[1:])
    meta = {"command": command, "seed": args.seed, "sample_seed": args.sample_seed, "excluded": len(shown),
            "key": key}  # fmt: skip
    (out / "key.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def summarise_command(args: argparse.Namespace) -> None:
    out = Path(args.out)
    refuse_existing([out / "precision.md"], args.overwrite)
    meta, key, rows = first_readings(out, "kind")
    per_kind = precision_table(rows, "kind")
    per_kind["rows from dev"] = (
        rows.groupby("kind", sort=False)["split"].apply(lambda s: int((s == "dev").sum())).values
    )
    summary = command_line("experiments/caption_edits_reread.py")
    report = [
        "# Caption near-miss edits, read again: precision of the rules as they are now",
        "",
        f"Samples: `{meta['command']}` (edit seed {meta['seed']}, sample seed {meta['sample_seed']}; "
        f"{meta['excluded']} captions shown in earlier sample files left out). Summary: `{summary}`. Readers: "
        "assistant-model sessions that did not write or see the rules, the code or the key, each given only "
        "`criteria.md` and its sample files; their verdicts are in `reading-<kind>.md`. 95% intervals are Wilson "
        "score intervals.",
        "",
        table(per_kind),
        "",
        *second_readings(out, key, rows, "kind"),
        *rule_sections(rows, "kind"),
    ]
    (out / "precision.md").write_text("\n".join(report), encoding="utf-8")
    print("\n".join(report[:6]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    sample = commands.add_parser("sample", help="draw the rows to read")
    sample.add_argument("--rows", type=int, default=100, help="rows per kind")
    sample.add_argument("--seed", type=int, default=0, help="seed of the edits")
    sample.add_argument("--sample-seed", type=int, default=31415, help="seed of the reading samples")
    sample.add_argument(
        "--exclude",
        default=str(RESULTS),
        help="folders of earlier samples (comma-separated; their caption-edits-*/ subfolders too)",
    )
    sample.add_argument("--kinds", default=",".join(KINDS), help="kinds to draw (comma-separated)")
    sample.add_argument("--out", default=str(OUT))
    sample.add_argument("--data-dir", default=None, help="data folder (default: COMPVERIFY_DATA)")
    add_summarise(commands, OUT)
    args = parser.parse_args()
    sample_command(args) if args.command == "sample" else summarise_command(args)


if __name__ == "__main__":
    main()
