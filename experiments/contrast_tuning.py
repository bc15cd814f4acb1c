"""Contrast tuning: fine-tune the encoder's top layer(s) so that a word replaced by its WordNet antonym, or a dropped
"not", moves the token map, and a synonym swap (or "not X" -> antonym of X) does not.

Why: a head over the frozen map cannot see antonymy (``results/antonym-probe.md``: the frozen states of a word and
its antonym are *closer* than of a word and its synonym, ROC AUC 0.46), so CondaQA's affirmative edits look like its
paraphrase edits. This asks whether the encoder's top layer, trained over cached states of the layer below, can
learn it at CPU cost while ranking is kept.

Training triplets (anchor, meaning-kept edit, near-miss), from Flickr8k *train* captions and SciFact *train-corpus*
sentences only (nothing from CondaQA, SugarCrepe or any test split):
- ``swap``: a WordNet adjective / verb (verbs in every inflection) replaced by a synonym (positive) or an antonym
  (negative);
- ``not``: "not X" (X an adjective with an antonym) replaced by the antonym (positive) or by X (negative).
Words are split train / dev by a hash of the word, so dev measures words never trained on.

Loss per step: pairwise softplus over (MaxSim(a, positive) - MaxSim(a, near-miss)) of the contrast triplets;
InfoNCE over MaxSim of SciFact train retrieval rows (held-out dev queries excluded), so ranking is kept; and a
keep term, 1 - cos(new state, frozen state) over every token, so the states stay near the frozen encoder's.

    python experiments/contrast_tuning.py --name ct-s42 --steps 1500 --seed 42
    compverify nearmiss --model runs/contrast/ct-s42/encoder --scorers pooled,maxsim --max-length 256 ...

Writes runs/contrast/<name>/{encoder/,log.jsonl,result.json}.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

import pyterrier_compverify as cv
from pyterrier_compverify.negatives.inflect import inflect_verb
from pyterrier_compverify.scoring import build_head, maxsim, reverse_maxsim, score_all_pairs, similarity_map
from pyterrier_compverify.training.state_cache import StateCache, TopLayers, transformer_of

sys.path.insert(0, str(Path(__file__).parent))
from antonym_probe import wordnet_pairs  # noqa: E402

VERB_TAGS = ("VBZ", "VBD", "VBG", "VBN")
MAXSIM = build_head("F1")  # query-to-document MaxSim of every query with every document (the ranking term)


def is_dev_word(word: str) -> bool:
    """One word in five (by a stable hash of the lemma) is held out for dev."""
    return int(hashlib.md5(word.encode()).hexdigest(), 16) % 5 == 0


def word_forms(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` plus each verb pair in every inflection: (lemma, form, replacement form, kind)."""
    rows = [(p.word, p.word, p.replacement, p.kind) for p in pairs.itertuples()]
    for p in pairs[pairs["pos"] == "v"].itertuples():
        for tag in VERB_TAGS:
            a, b = inflect_verb(p.word, tag), inflect_verb(p.replacement, tag)
            if a and b and a != p.word:
                rows.append((p.word, a, b, p.kind))
    return pd.DataFrame(rows, columns=["lemma", "form", "replacement", "kind"]).drop_duplicates(["form", "replacement"])


def contrast_triplets(texts: list[str], max_per_form: int, seed: int) -> pd.DataFrame:
    """(anchor, positive, negative, lemma, kind, dev) triplets: synonym vs antonym swaps and "not X" rewrites."""
    rng = np.random.default_rng(seed)
    vocabulary = {w for t in texts for w in re.findall(r"[a-z]+", t.lower())}
    forms = word_forms(wordnet_pairs(vocabulary))
    index: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        for w in set(re.findall(r"[a-z]+", t)):
            index.setdefault(w, []).append(i)
    rows = []
    for form, group in forms.groupby("form"):
        synonyms = group.loc[group["kind"] == "synonym", "replacement"].tolist()
        antonyms = group.loc[group["kind"] == "antonym", "replacement"].tolist()
        holding = index.get(form, [])
        if not holding:
            continue
        lemma = group["lemma"].iloc[0]
        pattern = re.compile(rf"\b{re.escape(form)}\b")
        negated = re.compile(rf"\bnot {re.escape(form)}\b")
        with_not = [i for i in holding if antonyms and negated.search(texts[i])]
        for i in rng.choice(with_not, size=min(max_per_form, len(with_not)), replace=False) if with_not else []:
            antonym = antonyms[rng.integers(len(antonyms))]  # "not X" -> antonym (kept) / X (flipped)
            text = texts[i]
            rows.append((text, negated.sub(antonym, text, count=1), negated.sub(form, text, count=1), lemma, "not"))
        if not (synonyms and antonyms):
            continue
        for i in rng.choice(holding, size=min(max_per_form, len(holding)), replace=False):
            text = texts[i]
            synonym, antonym = synonyms[rng.integers(len(synonyms))], antonyms[rng.integers(len(antonyms))]
            rows.append((text, pattern.sub(synonym, text, count=1), pattern.sub(antonym, text, count=1), lemma,
                         "swap"))  # fmt: skip
    table = pd.DataFrame(rows, columns=["anchor", "positive", "negative", "lemma", "kind"])
    return table.assign(dev=table["lemma"].map(is_dev_word))


def symmetric_maxsim(a: torch.Tensor, am: torch.Tensor, b: torch.Tensor, bm: torch.Tensor) -> torch.Tensor:
    """Mean of MaxSim both ways for paired texts: (B, La, d), (B, La), (B, Lb, d), (B, Lb) -> (B,)."""
    sim = similarity_map(a, b)
    return (maxsim(sim, am, bm) + reverse_maxsim(sim, am, bm)) / 2


class Tuner:
    """The trained top layers and a frozen copy (the keep term's target), over one state cache of all texts."""

    def __init__(self, encoder: cv.TokenEncoder, texts: list[str], k: int, cache_dir: Path):
        self.position = {t: i for i, t in enumerate(texts)}
        self.cache = StateCache.build(encoder, texts, cache_dir, top_layers=k, verbose=True)
        self.top = TopLayers(encoder, k)
        self.frozen = copy.deepcopy(self.top).eval().requires_grad_(False)

    def states(self, texts: list[str], train: bool = True):
        hidden, mask = self.cache.padded(torch.tensor([self.position[t] for t in texts]))
        with torch.set_grad_enabled(train):
            new = self.top(hidden, mask)
        with torch.no_grad():
            old = self.frozen(hidden, mask)
        keep = ((1 - (new * old).sum(-1)) * mask).sum() / mask.sum()
        return new, mask, keep

    def pair_scores(self, anchors: list[str], others: list[str], batch: int = 64) -> np.ndarray:
        out = []
        for s in range(0, len(anchors), batch):
            a, am, _ = self.states(anchors[s : s + batch], train=False)
            b, bm, _ = self.states(others[s : s + batch], train=False)
            out.append(symmetric_maxsim(a, am, b, bm).numpy())
        return np.concatenate(out)


def dev_wins(tuner: Tuner, dev: pd.DataFrame) -> dict:
    """Win rate (MaxSim to the positive above MaxSim to the near-miss) on held-out words, by kind."""
    pos = tuner.pair_scores(dev["anchor"].tolist(), dev["positive"].tolist())
    neg = tuner.pair_scores(dev["anchor"].tolist(), dev["negative"].tolist())
    win = pd.Series(pos > neg, index=dev.index)
    return {"all": round(float(win.mean()), 4), **{k: round(float(win[g.index].mean()), 4) for k, g in
            dev.groupby("kind")}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True)
    parser.add_argument("--run-dir", default="runs/contrast")
    parser.add_argument("--verifier-data", default="runs/verifiers/data", help="the verifier mix's data folder")
    parser.add_argument("--top-layers", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--retrieval-batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--temperature", type=float, default=0.01, help="of the contrast term")
    parser.add_argument("--keep", type=float, default=1.0, help="weight of the keep term")
    parser.add_argument("--retrieval", type=float, default=1.0, help="weight of the retrieval term")
    parser.add_argument("--max-per-form", type=int, default=12)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--measure", action="store_true", help="only measure run <name>: train-lemma and dev wins")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    started = time.time()
    out = Path(args.run_dir) / args.name
    out.mkdir(parents=True, exist_ok=True)
    cv.setup_local_data()
    data = Path(args.verifier_data)
    captions = pd.read_json(data / "flickr-train-captions.jsonl", lines=True)["caption"]
    sentences = pd.read_json(data / "scifact-edits.jsonl", lines=True)["sentence1"]
    pool = [t.strip() for t in pd.concat([captions, sentences]).drop_duplicates()]
    triplets = contrast_triplets(pool, args.max_per_form, seed=0)
    train, dev = triplets[~triplets["dev"]].reset_index(drop=True), triplets[triplets["dev"]].reset_index(drop=True)
    retrieval = pd.read_json(data / "scifact-retrieval.jsonl", lines=True)
    kinds = train["kind"].value_counts().to_dict()
    print(f"contrast triplets: train {len(train)} ({kinds}, {train['lemma'].nunique()} lemmas), dev {len(dev)} "
          f"({dev['lemma'].nunique()} lemmas); retrieval rows {len(retrieval)}", flush=True)  # fmt: skip
    encoder = cv.TokenEncoder(device="cpu", verbose=False)
    texts = list(dict.fromkeys([*triplets[["anchor", "positive", "negative"]].to_numpy().ravel(),
                                *retrieval[["anchor", "positive", "negative"]].to_numpy().ravel()]))  # fmt: skip
    tuner = Tuner(encoder, texts, args.top_layers, Path(args.run_dir) / "state-cache")
    if args.measure:  # the trained run's top layers into the tuner (the layers below are the frozen encoder's)
        tuned = transformer_of(cv.TokenEncoder(str(out / "encoder"), device="cpu", verbose=False)).encoder.layer
        for i in range(1, args.top_layers + 1):
            transformer_of(encoder).encoder.layer[-i].load_state_dict(tuned[-i].state_dict())
        seen = train.sample(800, random_state=0)
        measured = {"command": shlex.join([sys.executable, *sys.argv]), "train_sample_800": dev_wins(tuner, seen),
                    "dev": dev_wins(tuner, dev)}  # fmt: skip
        (out / "measure.json").write_text(json.dumps(measured, indent=2))
        print(json.dumps(measured, indent=2))
        return
    before = dev_wins(tuner, dev)
    print(f"dev before: {before}", flush=True)
    optimiser = torch.optim.AdamW(tuner.top.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (args.steps - s) / max(1, args.steps - warmup)))
    )
    rng = np.random.default_rng(args.seed)
    log = open(out / "log.jsonl", "a")  # noqa: SIM115 (open for the whole loop)
    tuner.top.eval()  # no dropout: the keep term starts at 0 and the step is deterministic
    for step in range(args.steps):
        rows = train.iloc[rng.choice(len(train), args.batch_size, replace=False)]
        a, am, k1 = tuner.states(rows["anchor"].tolist())
        p, pm, k2 = tuner.states(rows["positive"].tolist())
        n, nm, k3 = tuner.states(rows["negative"].tolist())
        contrast = F.softplus(
            (symmetric_maxsim(a, am, n, nm) - symmetric_maxsim(a, am, p, pm)) / args.temperature
        ).mean()
        r = retrieval.iloc[rng.choice(len(retrieval), args.retrieval_batch, replace=False)]
        q, qm, k4 = tuner.states(r["anchor"].tolist())
        d, dm, k5 = tuner.states([*r["positive"], *r["negative"]])
        ranking = F.cross_entropy(score_all_pairs(MAXSIM, q, qm, d, dm) / 0.05, torch.arange(len(r)))
        keep = (k1 + k2 + k3 + k4 + k5) / 5
        loss = contrast + args.retrieval * ranking + args.keep * 100 * keep
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(tuner.top.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        entry = {"step": step + 1, "loss": loss.item(), "contrast": contrast.item(), "ranking": ranking.item(),
                 "keep": keep.item(), "seconds": round(time.time() - started, 1)}  # fmt: skip
        log.write(json.dumps(entry) + "\n")
        if (step + 1) % 100 == 0:
            log.flush()
            print(json.dumps(entry), flush=True)
    after = dev_wins(tuner, dev)
    print(f"dev after: {after}", flush=True)
    encoder.model.save(str(out / "encoder"))
    result = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "triplets": {
            "train": len(train),
            "dev": len(dev),
            "train_lemmas": int(train["lemma"].nunique()),
            "dev_lemmas": int(dev["lemma"].nunique()),
        },  # fmt: skip
        "dev_win_before": before,
        "dev_win_after": after,
        "seconds": round(time.time() - started, 1),
    }
    (out / "result.json").write_text(json.dumps(result, indent=2))
    dev.sample(min(30, len(dev)), random_state=0).to_json(out / "dev-sample.jsonl", orient="records", lines=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
