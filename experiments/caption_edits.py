"""Caption near-misses and paraphrases on Flickr8k: counts and runtime on train, reading samples from dev, and the
overlap with SugarCrepe's human near-misses.

1. Every train caption (30,000) through ``caption_edits`` (one edit per kind per caption, seed 0): edits per kind and
   rule, skipped captions, wall time; then ``caption_triplets`` over the same edits.
2. Every dev caption through ``caption_edits``; a seeded sample of ``--sample`` rows per kind written to
   ``caption-edits-sample-<kind>.md`` (numbered rows, caption and edit only) for a reader who did not write the rules
   and gets only ``caption-edits-criteria.md``; where dev has fewer edits of a kind (the swaps), train edits of captions
   never looked at while writing the rules fill the file. The rule of each row is kept apart in
   ``caption-edits-sample-key.md``.
3. Exact-match overlap with SugarCrepe: (a) Flickr8k edits that equal any SugarCrepe negative caption; (b) the rules
   run on SugarCrepe's own captions (every candidate edit), and how often one equals the human near-miss of that item.
   The rules were written and tuned on Flickr8k train captions only; dev, SugarCrepe and CondaQA were not read.

    HF_HUB_OFFLINE=1 COMPVERIFY_DATA=/path/to/data python experiments/caption_edits.py
"""

from __future__ import annotations

import argparse
import platform
import re
import time
from pathlib import Path

import pandas as pd
from readings import cell, table

from pyterrier_compverify.datasets.flickr8k import flickr8k_captions
from pyterrier_compverify.datasets.nearmiss import SUGARCREPE_CATEGORIES, sugarcrepe_items
from pyterrier_compverify.negatives.captions import KINDS, caption_edits, caption_triplets
from pyterrier_compverify.reporting import refuse_existing

# the random train samples (size, seed of DataFrame.sample) read while the rules were written; reading rows drawn
# from train come only from the other captions
TUNING_SAMPLES = [(300, 1), (300, 2), (400, 3), (3000, 4), (1000, 5), (600, 6), (1000, 7), (3000, 9), (3000, 10)]


def normalise(text: str) -> str:
    """Lower-case, punctuation to spaces, single spaces.

    >>> normalise("A red, big  Cat .")
    'a red big cat'
    """
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def write_samples(
    dev_edits: pd.DataFrame, spare_edits: pd.DataFrame, out: Path, n: int, seed: int
) -> list[tuple[str, int, int, int]]:
    """One reading file per kind: ``n`` dev edits drawn at random; where dev has fewer, all of them and then train
    edits of captions never looked at while writing the rules (``spare_edits``). Returns (kind, rows, from dev,
    dev edits of the kind)."""
    written, key_rows = [], []
    for kind in KINDS:
        pool = dev_edits[dev_edits["kind"] == kind]
        sample = pool.sample(min(n, len(pool)), random_state=seed).assign(split="dev")
        if len(sample) < n:
            spare = spare_edits[spare_edits["kind"] == kind]
            extra = spare.sample(min(n - len(sample), len(spare)), random_state=seed).assign(split="train")
            sample = pd.concat([sample, extra])
        sample = sample.reset_index(drop=True)
        from_dev = int((sample["split"] == "dev").sum())
        nature = "a meaning-kept edit (paraphrase)" if kind == "paraphrase" else f"a near-miss edit of kind `{kind}`"
        source = (
            f"drawn at random (seed {seed}) from the {len(pool)} such edits of Flickr8k dev captions"
            if from_dev == len(sample)
            else f"rows 1-{from_dev} are all {len(pool)} such edits of Flickr8k dev captions; rows {from_dev + 1}-"
            f"{len(sample)} are drawn at random (seed {seed}) from edits of Flickr8k train captions"
        )
        lines = [
            f"# Caption edits to read: `{kind}`",
            "",
            f"Each row is a caption from Flickr8k and {nature}. Judge every row with the criteria in",
            "`caption-edits-criteria.md` only; write CORRECT or WRONG in the verdict column and a short reason for",
            f"every WRONG or borderline row. {len(sample)} rows: {source}.",
            "",
            "| # | caption | edit | verdict | note |",
            "|---|---|---|---|---|",
        ]
        for i, row in enumerate(sample.itertuples(), start=1):
            lines.append(f"| {i} | {cell(row.caption)} | {cell(row.edit)} | | |")
            key_rows.append((kind, i, row.rule, row.split))
        (out / f"caption-edits-sample-{kind}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append((kind, len(sample), from_dev, len(pool)))
    key = pd.DataFrame(key_rows, columns=["kind", "#", "rule", "split"])
    text = (
        "# Rules behind the reading samples (not for the reader)\n\n"
        "The rule that made each row of `caption-edits-sample-<kind>.md` and the split of its caption, to break "
        "precision down by rule after the reading.\n\n" + table(key) + "\n"
    )
    (out / "caption-edits-sample-key.md").write_text(text, encoding="utf-8")
    return written


def sugarcrepe_overlap(flickr_edits: pd.DataFrame, seed: int) -> tuple[int, int, pd.DataFrame]:
    """(a) distinct Flickr8k edits equal to a SugarCrepe negative, (b) per category: items whose human negative is
    among the rules' candidate edits of the item's caption."""
    items = {c: list(sugarcrepe_items(c).values()) for c in SUGARCREPE_CATEGORIES}
    negatives = {normalise(i["negative_caption"]) for its in items.values() for i in its}
    ours = set(flickr_edits["edit"].map(normalise))
    captions = sorted({i["caption"].strip() for its in items.values() for i in its})
    edits = caption_edits(captions, seed=seed, per_kind=None)
    candidates = edits.groupby("caption")["edit"].apply(lambda s: {normalise(x) for x in s}).to_dict()
    rows = []
    for category, its in items.items():
        hits = sum(normalise(i["negative_caption"]) in candidates.get(i["caption"].strip(), set()) for i in its)
        rows.append((category, len(its), hits, round(hits / len(its), 4)))
    per_category = pd.DataFrame(rows, columns=["category", "items", "exact match", "rate"])
    return len(ours & negatives), len(ours), per_category


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=100, help="rows per kind in each reading file")
    parser.add_argument("--seed", type=int, default=0, help="seed of the edits")
    parser.add_argument("--sample-seed", type=int, default=2718, help="seed of the reading samples")
    parser.add_argument("--out", default="experiments/results")
    parser.add_argument("--data-dir", default=None, help="data folder (default: COMPVERIFY_DATA)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing reports in --out")
    args = parser.parse_args()
    out = Path(args.out)
    written = [
        "caption-edits-train.md",
        "caption-edits-sample-key.md",
        *(f"caption-edits-sample-{k}.md" for k in KINDS),
    ]
    refuse_existing([out / name for name in written], args.overwrite)
    out.mkdir(parents=True, exist_ok=True)

    train = flickr8k_captions("train", data_dir=args.data_dir)
    start = time.perf_counter()
    edits = caption_edits(train["caption"], seed=args.seed)
    edit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    triplets = caption_triplets(train, seed=args.seed, edits=edits)
    triplet_seconds = time.perf_counter() - start
    counts = edits.groupby(["kind", "rule"]).size().rename("edits").reset_index()
    per_kind = edits.groupby("kind").size().reindex(KINDS, fill_value=0)
    skipped_by_kind = edits.attrs["skipped_by_kind"]
    kind_table = pd.DataFrame(
        {
            "kind": KINDS,
            "edits": [int(per_kind[k]) for k in KINDS],
            "captions without one": [skipped_by_kind[k] for k in KINDS],
        }
    )
    mix = triplets.groupby(["negative_kind", "positive_kind"]).size().unstack(fill_value=0).reset_index()
    print(kind_table.to_string(index=False))
    print(f"train: {len(train)} captions, {len(edits)} edits in {edit_seconds:.1f} s; "
          f"skipped {edits.attrs['skipped']}; triplets {len(triplets)} in {triplet_seconds:.1f} s")  # fmt: skip

    dev = flickr8k_captions("dev", data_dir=args.data_dir)
    dev_edits = caption_edits(dev["caption"], seed=args.seed)
    seen = set()
    for n, seed in TUNING_SAMPLES:
        seen |= set(train["caption"].sample(n, random_state=seed))
    spare = edits[~edits["caption"].isin(seen)]
    written = write_samples(dev_edits, spare, out, args.sample, args.sample_seed)
    for kind, n, from_dev, pool in written:
        print(f"sample {kind}: {n} rows, {from_dev} from dev ({pool} dev edits)")

    both = pd.concat([edits, dev_edits])
    hits, distinct, per_category = sugarcrepe_overlap(both, args.seed)
    print(f"Flickr8k edits equal to a SugarCrepe negative: {hits} of {distinct} distinct edits")
    print(per_category.to_string(index=False))

    report = [
        "# Caption edits on Flickr8k: counts, runtime, overlap with SugarCrepe",
        "",
        f"Made by `experiments/caption_edits.py` (seed {args.seed}, reading samples seed {args.sample_seed}) on "
        f"{platform.processor() or platform.machine()}, 2 CPU cores shared with other jobs. The rules "
        "(`pyterrier_compverify/negatives/captions/`) were written and tuned on Flickr8k train captions only.",
        "",
        "## Train split",
        "",
        f"- {len(train):,} captions -> {len(edits):,} edits (one per kind per caption where the kind applies) in "
        f"**{edit_seconds:.0f} s** wall time: spaCy parse with `nlp.pipe` (batch 256, NER off) plus the rules.",
        f"- Captions with nothing to edit in any kind (skipped and counted): {edits.attrs['skipped']}.",
        f"- `caption_triplets` over those edits: {len(triplets):,} rows in {triplet_seconds:.1f} s "
        f"({triplets.attrs['skipped']} anchors without a near-miss; missing positives: "
        f"{triplets.attrs['no_positive']}).",
        "",
        table(kind_table),
        "",
        "### Per rule",
        "",
        table(counts),
        "",
        "### Triplet mix (negative kind x positive kind)",
        "",
        table(mix),
        "",
        "## Reading samples (dev split)",
        "",
        "Criteria: `caption-edits-criteria.md`. Rules per row: `caption-edits-sample-key.md`.",
        "",
        "Where dev has fewer than the rows wanted (the swaps), the file holds all dev edits of the kind and then "
        f"edits of train captions never shown while the rules were written ({len(set(train['caption']) - seen):,} "
        "of the 30,000 train captions; the tuning looked at random samples of the others).",
        "",
        table(pd.DataFrame(written, columns=["kind", "rows", "from dev", "dev edits of that kind"])),
        "",
        "## Overlap with SugarCrepe's near-misses (exact match after lower-casing and removing punctuation)",
        "",
        f"- Flickr8k train + dev edits equal to any SugarCrepe negative caption: **{hits}** of {distinct:,} "
        "distinct edits.",
        "- The rules run on SugarCrepe's own captions (every candidate edit, not one per kind), share of items whose "
        "human near-miss is among them:",
        "",
        table(per_category),
        "",
    ]
    (out / "caption-edits-train.md").write_text("\n".join(report), encoding="utf-8")


if __name__ == "__main__":
    main()
