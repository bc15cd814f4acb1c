"""Issue 19: the near-miss controls on hand-made scorers (pure Python over a hand-written frame, no model).

An overlap-averse scorer wins the SugarCrepe-style win rate (the positive is another caption, the near-miss a
small edit of the anchor) but must fail the headline; a MaxSim-like overlap scorer passes identity and fails the
win rate."""

import re

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_compverify import nearmiss_report
from pyterrier_compverify.datasets import nearmiss
from pyterrier_compverify.measures import (
    WordJaccard,
    near_miss_identity_win,
    near_miss_win,
    nearmiss_scores,
    nearmiss_table,
    score_pairs,
)

# (category, anchor, positive = another caption of the same scene, near-miss = a small edit of the anchor)
ROWS = [
    (
        "replace",
        "a brown dog runs on the green grass",
        "a puppy playing outside in a park",
        "a brown cat runs on the green grass",
    ),
    (
        "replace",
        "a man rides a red bike down the street",
        "someone cycling through town",
        "a man rides a red horse down the street",
    ),
    (
        "replace",
        "two children eat ice cream at the beach",
        "kids enjoying a cold treat by the sea",
        "two children eat pizza at the beach",
    ),
    (
        "replace",
        "a woman reads a book on a bench",
        "a lady enjoying a novel in the park",
        "a woman reads a newspaper on a bench",
    ),
    (
        "replace",
        "a white boat sails on the blue lake",
        "a small vessel out on the water",
        "a white boat sinks in the blue lake",
    ),
    (
        "swap",
        "a black cat sits next to a white dog",
        "two pets resting together indoors",
        "a white cat sits next to a black dog",
    ),
    (
        "swap",
        "the tall man greets the short woman",
        "two people saying hello to each other",
        "the short man greets the tall woman",
    ),
    (
        "swap",
        "a red ball lies under a wooden chair",
        "a toy on the floor of a room",
        "a wooden ball lies under a red chair",
    ),
    (
        "swap",
        "a girl throws a frisbee to a boy",
        "young people playing catch in a field",
        "a boy throws a frisbee to a girl",
    ),
    (
        "swap",
        "a small bird sits on a large branch",
        "a sparrow perched high in a tree",
        "a large bird sits on a small branch",
    ),
]
TRIPLETS = pd.DataFrame(
    [(f"toy/{c}/{i}", "toy", c, "other", f"scene{i}", a, p, n) for i, (c, a, p, n) in enumerate(ROWS)],
    columns=nearmiss.COLUMNS,
)


class PairScorer(pt.Transformer):
    """A result-frame scorer from a pure Python function of (query, text)."""

    def __init__(self, fn):
        self.fn = fn

    def transform(self, inp):
        scores = [self.fn(q, t) for q, t in zip(inp["query"], inp["text"])]
        return pt.model.add_ranks(inp.drop(columns=["score", "rank"], errors="ignore").assign(score=scores))


def words(text):
    return re.findall(r"\w+", text.lower())


def overlap(query, text):
    """MaxSim-like: mean over the query's words and word bigrams of "found in the text" (1.0 for an exact copy;
    the bigrams stand in for contextual token states, so a swap is not an exact match)."""
    q, t = words(query), words(text)
    bigrams = set(zip(t, t[1:]))
    found = [w in t for w in q] + [b in bigrams for b in zip(q, q[1:])]
    return float(np.mean(found))


ANTI = WordJaccard(anti=True)
SCORERS = {
    "jaccard-anti": ANTI,
    "neg-maxsim": PairScorer(lambda q, t: -overlap(q, t)),
    "maxsim-like": PairScorer(overlap),
}


@pytest.fixture(scope="module")
def table():
    return nearmiss_table(SCORERS, TRIPLETS).set_index(["scorer", "category"])


@pytest.mark.parametrize("name", ["jaccard-anti", "neg-maxsim"])
def test_overlap_averse_scorers_win_but_fail_the_headline(table, name):
    for category in ("replace", "swap"):
        row = table.loc[(name, category)]
        assert row["win_rate"] == 1.0  # the "different words = better" shortcut wins every triplet
        assert row["identity_win"] == 0.0  # ... and ranks the anchor's own text below its near-miss
        assert row["headline"] == 0.0
        assert row["para_ge_identity"] == 1.0  # a paraphrase beats an exact copy
        assert row["distractor_r1"] <= 0.2  # unrelated captions overlap even less than the positive


def test_overlap_scorer_passes_identity_and_fails_win_rate(table):
    for category in ("replace", "swap"):
        row = table.loc[("maxsim-like", category)]
        assert row["identity_win"] == 1.0 and row["para_ge_identity"] == 0.0
        assert row["win_rate"] == 0.0 and row["headline"] == 0.0


def test_table_columns_and_one_call_per_scorer():
    calls = []

    class Counting(PairScorer):
        def transform(self, inp):
            calls.append(len(inp))
            return super().transform(inp)

    table = nearmiss_table({"c": Counting(overlap)}, TRIPLETS, distractors=3)
    assert len(calls) == 1
    # per triplet: positive, near-miss, identity and 3 distractors, every pair distinct here
    assert calls[0] == len(TRIPLETS) * 6
    assert list(table.columns[:10]) == [
        "scorer",
        "source",
        "category",
        "kind",
        "n",
        "headline",
        "win_rate",
        "identity_win",
        "para_ge_identity",
        "distractor_r1",
    ]


def test_distractors_come_from_other_items_and_are_reproducible():
    pools = nearmiss.distractor_texts(TRIPLETS, k=4, seed=3)
    assert pools == nearmiss.distractor_texts(TRIPLETS, k=4, seed=3)
    assert pools != nearmiss.distractor_texts(TRIPLETS, k=4, seed=4)
    for (_, row), pool in zip(TRIPLETS.iterrows(), pools):
        assert len(pool) == 4 and len(set(pool)) == 4
        assert not {row.anchor, row.positive, row.near_miss} & set(pool)
        assert set(pool) <= set(TRIPLETS.anchor) | set(TRIPLETS.positive)
    # fewer candidates than k: all of them (18 = anchors and positives of the 9 other scenes)
    assert {len(p) for p in nearmiss.distractor_texts(TRIPLETS, k=100)} == {18}
    # the same group (image) shares no distractors with itself
    same = TRIPLETS.assign(group=["one"] * 5 + ["two"] * 5)
    for pool, group in zip(nearmiss.distractor_texts(same, k=100), same.group):
        assert set(pool) == set(same[same.group != group][["anchor", "positive"]].to_numpy().ravel())


def test_scores_and_distractor_maximum():
    scored = nearmiss_scores(SCORERS["maxsim-like"], TRIPLETS, [["a dog"], []] + [[]] * 8)
    assert (scored["s_id"] == 1.0).all()
    assert scored["s_dist_max"].iloc[0] == overlap(TRIPLETS.anchor[0], "a dog")
    assert scored["s_dist_max"].iloc[1:].isna().all()


def test_score_pairs_scores_each_distinct_pair_once():
    seen = []
    scorer = PairScorer(lambda q, t: seen.append((q, t)) or len(q) + len(t))
    assert list(score_pairs(scorer, ["a", "bb", "a"], ["x", "y", "x"])) == [2.0, 3.0, 2.0]
    assert len(seen) == 2
    assert len(score_pairs(scorer, [], [])) == 0


def test_identity_control_in_the_retrieval_task():
    docs, topics, qrels, near = nearmiss.retrieval_task(TRIPLETS)
    docs_i, topics_i, qrels_i, near_i = nearmiss.retrieval_task(TRIPLETS, identity=True)
    assert docs_i == docs and len(docs) == 2 * len(TRIPLETS)
    assert list(topics.qid) == list(TRIPLETS.id) and list(topics["query"]) == list(TRIPLETS.positive)
    assert list(topics_i.qid) == [f"{i}/identity" for i in TRIPLETS.id]
    assert list(topics_i["query"]) == list(TRIPLETS.anchor)
    assert list(qrels_i.docno) == list(qrels.docno) == list(TRIPLETS.anchor.map(nearmiss.text_docno))
    assert near_i["toy/swap/5/identity"] == near["toy/swap/5"] == nearmiss.text_docno(TRIPLETS.near_miss[5])
    corpus = pd.DataFrame(docs)

    def experiment(topics, qrels, measure):
        runs = [s(topics.merge(corpus, how="cross"))[["qid", "docno", "score"]] for s in (ANTI, PairScorer(overlap))]
        return pt.Experiment(runs, topics, qrels, [measure], names=["anti", "overlap"]).set_index("name").iloc[:, 0]

    # the task's query is the positive: an overlap-averse scorer cannot tell anchor and near-miss apart there
    # (both share about as many words with it); the identity control exposes it outright
    identity = experiment(topics_i, qrels_i, near_miss_identity_win(near_i))
    assert identity.name == "IdentityWin" and identity["anti"] == 0.0 and identity["overlap"] == 1.0
    assert experiment(topics, qrels, near_miss_win(near)).name == "NearMissWin"
    with pytest.raises(ValueError, match="compverify/nearmiss/<source>/identity"):
        experiment(topics, qrels, near_miss_identity_win(near))


def test_nearmiss_command_writes_the_table(tmp_path, monkeypatch, tiny_model_dir, capsys):
    monkeypatch.setattr(nearmiss_report, "nearmiss_triplets", lambda source: TRIPLETS)
    out = tmp_path / "nm"
    table = nearmiss_report.run_nearmiss(
        scorers=["pooled", "maxsim", "jaccard-anti"],
        model=tiny_model_dir,
        max_length=32,
        device="cpu",
        distractors=5,
        out=out,
    )
    assert list(table["max_length"].astype(object)) == [32, 32] * 2 + [pd.NA] * 2
    anti = table[table.scorer == "jaccard-anti"]
    assert (anti["win_rate"] == 1.0).all() and (anti["headline"] == 0.0).all()
    text = out.with_suffix(".md").read_text()
    assert "Command: `" in text and "identity_win" in text and "5 texts" in text
    assert "headline" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown scorer"):
        nearmiss_report.named_scorers(["nope"], None)

    def unread(source):
        raise AssertionError("the triplets were read before the refusal")

    monkeypatch.setattr(nearmiss_report, "nearmiss_triplets", unread)
    with pytest.raises(FileExistsError, match=r"nm\.md and .*nm\.json: already written; pass overwrite=True"):
        nearmiss_report.run_nearmiss(scorers=["jaccard"], out=out)
    monkeypatch.setattr(nearmiss_report, "nearmiss_triplets", lambda source: TRIPLETS)

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded for model-free scorers")

    monkeypatch.setattr("pyterrier_compverify.encoder.TokenEncoder", no_model)
    assert (
        nearmiss_report.run_nearmiss(scorers=["jaccard"], distractors=0, out=out, overwrite=True)["scorer"]
        .eq("jaccard")
        .all()
    )


def test_limit_draws_a_seeded_sample_of_each_category_not_its_first_rows():
    frame = pd.DataFrame({"source": "s", "category": ["a"] * 50 + ["b"] * 3, "id": range(53)})
    drawn = nearmiss_report.sample_per_category(frame, 5, seed=0)
    assert drawn.groupby("category").size().to_dict() == {"a": 5, "b": 3}  # a category smaller than N: all of it
    assert drawn["id"].is_monotonic_increasing  # kept in the file's order
    assert drawn[drawn.category == "a"]["id"].tolist() != list(range(5))
    assert drawn.equals(nearmiss_report.sample_per_category(frame, 5, seed=0))
    assert not drawn.equals(nearmiss_report.sample_per_category(frame, 5, seed=1))


def test_seed_with_no_distractors_is_accepted_when_it_draws_the_limit_sample(monkeypatch):
    from pyterrier_compverify.cli import main

    seen = {}

    def run(**kwargs):
        seen.update(kwargs)

    run.__wrapped__ = nearmiss_report.run_nearmiss  # the parser reads the defaults from its signature
    monkeypatch.setattr(nearmiss_report, "run_nearmiss", run)
    main(["nearmiss", "--distractors", "0", "--limit", "4", "--seed", "3", "--model", "/no/model"])
    assert seen["seed"] == 3 and seen["limit"] == 4 and seen["distractors"] == 0
