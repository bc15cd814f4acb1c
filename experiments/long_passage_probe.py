"""Do the map heads lose their near-miss skill on long texts? The same edits scored twice: as sentences, and
inside the passage (a window of the SciFact abstract, up to ``--words`` words) the sentence came from.

Why: F4 adds a learned embedding per tile row and column (8 tokens each). The verifier rows reach about 12 tile
rows and 16 tile columns (queries and sentences up to ~96 tokens, passages cut at 128), so at 256 tokens (CondaQA)
tiles 16-31 carry position vectors that training never moved from their random start. This probe measures that on
SciFact *train-corpus* text (the rows' own source, no test data), with a paraphrase edit of the sentence as the
positive and a negation / binding / spatial edit of the same sentence as the near-miss, and, as a diagnostic,
the same heads with the tile positions beyond ``--trained-tiles`` clamped to the last trained one (0: not run).
``--direction reverse`` turns the negation edits round, as in CondaQA's affirmative edits: the anchor is the
negated sentence, the positive a paraphrase edit of it, the near-miss the sentence without the negation.
``--direction reworded`` reads ``--edits runs/verifiers/data/scifact-reworded.jsonl`` (``negatives.affixal``: the
predicate negated with "not" / by an affix, the affirmative as near-miss), dev adjectives only (held out of training).
Items whose edited sentence ends past ``--max-length`` tokens in a passage are left out, as sentences too (the
first results, ``long-passage-probe.md`` and ``-reverse.md``, kept them: 3% ties there).

    python experiments/long_passage_probe.py --scorers maxsim,mapverifier,runs/verifiers/f4-ll-d0-s42 \\
        --out experiments/results/long-passage-probe-v2
    python experiments/long_passage_probe.py --scorers maxsim,mapverifier,runs/verifiers/f4-ll-d0-s42 \\
        --direction reverse --trained-tiles 0 --out experiments/results/long-passage-probe-reverse-v2
    python experiments/long_passage_probe.py --scorers maxsim,mapverifier,runs/verifiers/f4-ll-d0-s42 \\
        --direction reworded --edits runs/verifiers/data/scifact-reworded.jsonl --trained-tiles 0 --limit 1000 \\
        --out experiments/results/long-passage-probe-reworded-baselines

Needs ``runs/verifiers/data/scifact-edits.jsonl`` (``verifier_training.py data``). Nothing here feeds training,
a serving form or a threshold.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path

import pandas as pd
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.measures import nearmiss_table
from pyterrier_compverify.nearmiss_report import named_scorers
from pyterrier_compverify.reporting import refuse_overwrite, write_table
from pyterrier_compverify.scoring.heads.map_transformer import MapTransformerHead
from pyterrier_compverify.training.data import in_passage, sentence_homes, sentence_window


def edited_sentences(edits: pd.DataFrame, direction: str, limit: int, pool: int, seed: int) -> pd.DataFrame:
    """``sentence`` (as in the abstract) and the ``anchor``, ``positive`` and ``near_miss`` to put in its place.
    forward: the sentence, its paraphrase edit, its flipping edit (the rows' direction). reverse: the negated
    sentence, a paraphrase edit of it (the rule generator run on it), the sentence (CondaQA's affirmative
    direction: the anchor holds the negation, the near-miss lacks it)."""
    if direction == "reworded":
        dev = edits[edits["split"] == "dev"].sample(frac=1.0, random_state=seed).head(limit)
        return pd.DataFrame(
            {
                "sentence": dev["sentence"],
                "anchor": dev["anchor"],
                "positive": dev["positive"],
                "near_miss": dev["negative"],
                "category": dev["direction"],
            }
        )
    if direction == "forward":
        para = edits[edits["category"] == "paraphrase"].drop_duplicates("sentence1").set_index("sentence1")["sentence2"]
        flips = edits[(edits["category"] != "paraphrase") & edits["sentence1"].isin(para.index)]
        flips = flips.sample(frac=1.0, random_state=seed).drop_duplicates("sentence1").head(limit)
        return pd.DataFrame(
            {
                "sentence": flips["sentence1"],
                "anchor": flips["sentence1"],
                "positive": flips["sentence1"].map(para),
                "near_miss": flips["sentence2"],
                "category": flips["category"],
            }
        )
    from pyterrier_compverify.negatives import RuleBasedGenerator

    negated = edits[edits["category"] == "negation"].drop_duplicates("sentence1").drop_duplicates("sentence2")
    negated = negated.sample(n=min(pool, len(negated)), random_state=seed)
    made = RuleBasedGenerator(categories=("paraphrase",)).generate(negated["sentence2"], verbose=False, seed=seed)
    para = made.table.drop_duplicates("sentence1").set_index("sentence1")["sentence2"]
    negated = negated[negated["sentence2"].isin(para.index)].head(limit)
    return pd.DataFrame(
        {
            "sentence": negated["sentence1"],
            "anchor": negated["sentence2"],
            "positive": negated["sentence2"].map(para),
            "near_miss": negated["sentence1"],
            "category": "negation removed",
        }
    )


def triplets(edited: pd.DataFrame, words: int) -> pd.DataFrame:
    """Each edit as a sentence triplet and inside the passage (a window of its abstract) it came from."""
    home = sentence_homes(d["text"] for d in cv.datasets.load_collection("irds:beir/scifact/train").corpus_iter())
    rows = []
    for item, (sentence, anchor, positive, near_miss, category) in enumerate(edited.itertuples(index=False)):
        texts = [anchor, positive, near_miss]
        rows.append(("sentence", category, *texts, item, texts))
        if sentence in home:
            parts, i = home[sentence]
            lo, _ = sentence_window(parts, i, words)
            upto = [" ".join([*parts[lo:i], x]) for x in texts]  # the text up to the edit's end
            rows.append(("passage", category, *(in_passage(home[sentence], x, words) for x in texts), item, upto))
    columns = ["source", "category", "anchor", "positive", "near_miss", "item", "upto"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(kind=frame["category"])


def within(frame: pd.DataFrame, encoder: cv.TokenEncoder) -> pd.DataFrame:
    """The items whose edited sentence ends inside ``encoder.max_length`` tokens in all three passage texts (else
    truncation cuts the edit off and the pair ties), as sentence and passage rows alike."""
    passages = frame[frame["source"] == "passage"]
    reach = encoder.token_lengths([t for texts in passages["upto"] for t in texts]).reshape(-1, 3).max(axis=1)
    cut = set(passages["item"][reach >= encoder.max_length])
    return frame[~frame["item"].isin(cut) & frame["item"].isin(set(passages["item"]))]


@contextlib.contextmanager
def clamped_positions(tiles: int | None):
    """F4 heads use the row / column position of tile ``tiles - 1`` for every tile beyond it (None: unchanged)."""
    if tiles is None:
        yield
        return
    original = MapTransformerHead._offsets

    def offsets(self, rows, cols):
        device = self.embed.bias.device
        grid_r = torch.arange(rows, device=device).repeat_interleave(cols).clamp(max=tiles - 1)
        grid_c = torch.arange(cols, device=device).repeat(rows).clamp(max=tiles - 1)
        return self.embed.bias + self.row_pos(grid_r) + self.col_pos(grid_c)

    MapTransformerHead._offsets = offsets
    try:
        yield
    finally:
        MapTransformerHead._offsets = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scorers", default="maxsim,mapverifier")
    parser.add_argument("--edits", default="runs/verifiers/data/scifact-edits.jsonl")
    parser.add_argument("--words", type=int, default=180, help="passage window (CondaQA passages reach 183 words)")
    parser.add_argument("--limit", type=int, default=200, help="sentences (each with its passage)")
    parser.add_argument("--direction", default="forward", choices=["forward", "reverse", "reworded"])
    parser.add_argument("--pool", type=int, default=6000, help="reverse: negated sentences given to the paraphraser")
    parser.add_argument("--trained-tiles", type=int, default=16, help="clamp at (0: none); 128 tokens / 8")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    start = time.time()
    edits = pd.read_json(args.edits, lines=True)
    edited = edited_sentences(edits, args.direction, args.limit, args.pool, args.seed)
    frame = triplets(edited, args.words)
    encoder = cv.TokenEncoder(max_length=args.max_length)
    kept = within(frame, encoder)
    print(f"{kept['item'].nunique()} of {frame['item'].nunique()} items: edit inside {args.max_length} tokens")
    frame = kept.drop(columns=["item", "upto"])
    tokens = encoder.token_lengths(frame["anchor"].tolist())
    print(frame.assign(tokens=tokens).groupby("source")["tokens"].describe().round(1).to_markdown())
    tables = []
    for tiles in (None, args.trained_tiles) if args.trained_tiles else (None,):
        with clamped_positions(tiles):
            scorers = named_scorers(args.scorers.split(","), encoder)
            table = nearmiss_table(scorers, frame, distractors=0)
        tables.append(table.assign(positions="all" if tiles is None else f"clamped at {tiles}"))
    table = pd.concat(tables, ignore_index=True)
    table = table[table["positions"].eq("all") | ~table["scorer"].isin(["maxsim", "pooled"])]
    columns = ["scorer", "positions", "source", "category", "n", "headline", "win_rate", "identity_win"]
    shown = table[columns + ["para_ge_identity", "tie_rate"]].round(3)
    print(shown.to_markdown(index=False))
    lengths = frame.assign(tokens=tokens).groupby("source")["tokens"].describe().round(1).to_markdown()
    title = f"Sentence vs passage ({args.words} words) near-misses of SciFact train-corpus edits ({args.direction})"
    title += f", max length {args.max_length}"
    note = f"Items whose edit ends inside {args.max_length} tokens in the passage (others would tie): "
    note += f"{kept['item'].nunique()} of {len(edited)}."
    body = f"{note}\n\nAnchor tokens:\n\n{lengths}\n\n{shown.to_markdown(index=False)}"
    write_table(shown, Path(args.out), title, encoder, time.time() - start, body)


if __name__ == "__main__":
    main()
