"""The helpers of ``experiments/`` that the issue 18 figures rest on: the depth cut of the cached pool, the rows
nDCG@10 reads and the pseudo-relevance-feedback signal (``weighted_fusion.py``), the Flickr8k query recipe
(``capretrieval_best.image_queries``), the covering label of ``cross_encoder.py``, the top-k ceiling
(``query_ndcg``), the dev rule (``token_weights.choose``) and the soft-AND floor (``soft_and.py``); the Wilson
interval and the verdict count of the issue 13 edit readings (``reworded_negations.py``, ``readings.py``); the
two error analyses (``capretrieval_errors.py``, ``condaqa_errors.py``): their samples' edit regions, their readers'
tables and their summaries; and the joined caption pool of ``capretrieval.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import weighted_fusion


def test_at_depth_keeps_either_first_stages_top_k_and_fills_bm25_over_the_cut_pool():
    frame = pd.DataFrame(
        {
            "qid": ["1"] * 4 + ["2"] * 2,
            "docno": ["a", "b", "c", "d", "a", "b"],
            "dense_rank": [0, 5, 1, 9, 0, 1],
            "bm25_rank": [9, 0, 9, 1, 9, 9],  # 9: absent from BM25's top 9 of the deep pool
            "bm25": [np.nan, 7.0, np.nan, 2.0, np.nan, np.nan],
        }
    )
    cut = weighted_fusion.at_depth(frame, 2)
    assert cut["docno"].tolist() == ["a", "b", "c", "d", "a", "b"][:4] + ["a", "b"]
    assert cut["bm25"].tolist() == [2.0, 7.0, 2.0, 2.0, 0.0, 0.0]  # the cut pool's lowest; none scored: 0
    shallow = weighted_fusion.at_depth(frame, 1)
    assert shallow["docno"].tolist() == ["a", "b", "a"]
    assert shallow["bm25"].tolist() == [7.0, 7.0, 0.0]  # "d" (2.0) is outside this pool, so it is not the floor


def test_top10_keeps_the_rows_tied_with_the_tenth_score():
    scores = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1, 1, 0]
    run = pd.DataFrame({"qid": "1", "docno": [f"d{i}" for i in range(13)], "score": scores, "rank": range(13)})
    run = pd.concat([run, pd.DataFrame({"qid": "2", "docno": ["x", "y"], "score": [2.0, 1.0], "rank": [0, 1]})])
    kept = weighted_fusion.top10(run)
    assert kept[kept["qid"] == "1"]["docno"].tolist() == [f"d{i}" for i in range(12)]  # d10, d11 tie with d9
    assert kept[kept["qid"] == "2"]["docno"].tolist() == ["x", "y"]  # fewer than ten: all kept


def test_feedback_is_each_candidates_cosine_to_the_mean_of_the_first_pass_top_k():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(8, 5)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    frame = pd.DataFrame(
        {
            "qid": ["1"] * 5 + ["2"] * 3,
            "docno": list("abcde") + list("abc"),
            "signal": [0.1, 0.9, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4],
            "vec_row": [0, 1, 2, 3, 4, 5, 6, 7],
        }
    )
    out = weighted_fusion.with_feedback(frame, vectors, {"signal": 1.0}, k=2)
    for _, group in frame.groupby("qid"):
        top = group.nlargest(2, "signal")["vec_row"]
        centroid = vectors[top].sum(axis=0)
        centroid /= np.linalg.norm(centroid)
        expected = vectors[group["vec_row"]] @ centroid
        np.testing.assert_allclose(out.loc[group.index, "prf"], expected, rtol=1e-5)


def test_image_queries_make_a_keyword_a_phrase_and_the_caption_from_each_images_first_caption():
    pytest.importorskip("spacy")
    import capretrieval_best

    captions = pd.DataFrame(
        {
            "image": ["b.jpg", "b.jpg", "a.jpg", "c.jpg"],
            "caption_id": [3, 4, 0, 0],
            "caption": ["A black dog runs on the grass .", "A dog outside .", "Two people fly a kite .", "Yes ."],
        }
    )
    made = capretrieval_best.image_queries(captions)
    assert list(made.columns) == ["qid", "query", "image", "kind", "own"]
    assert made["image"].unique().tolist() == ["a.jpg", "b.jpg", "c.jpg"]  # sorted by image
    dog = made[made["image"] == "b.jpg"].set_index("kind")
    assert dog.index.tolist() == ["keyword", "phrase", "caption"]
    assert dog.loc["keyword", "query"] == "black dog"  # the longest keyword
    assert dog.loc["phrase", "query"] == "dog running"
    assert dog.loc["caption", "query"] == "A black dog runs on the grass ."  # the first caption, not the second
    assert (dog["own"] == "b.jpg#3").all() and dog.loc["caption", "qid"] == "b.jpg/caption"
    assert made[made["image"] == "c.jpg"]["kind"].tolist() == ["caption"]  # nothing to make a keyword of


def test_covering_label_needs_every_query_content_word_by_stem():
    """``cross_encoder.py --covering``: a caption is relevant to a query when its content stems hold the query's."""
    import cross_encoder

    stems = cross_encoder.content_stems
    assert stems("boy in short") <= stems("A boy in blue shorts slides down a slide .")
    assert stems("spotted dog") <= stems("A dog with black and white spots walks on the beach .")
    assert not stems("pink dress") <= stems("A girl is in a dress .")
    assert not stems("red shirt") <= stems("A man in a blue shirt .")
    assert stems("the of a") == frozenset()  # nothing to cover: flickr_groups then keeps image-identity labels


def test_ceiling_puts_the_fusions_top_k_in_label_order():
    """``query_ndcg.ceiling`` (``cross_encoder.py seeds``): the ceiling reorders only the fusion's top k, by label,
    ties in fusion order."""
    import query_ndcg

    frame = pd.DataFrame({"qid": ["1"] * 4, "docno": ["a", "b", "c", "d"], "fusion": [4.0, 3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["1", "1", "1"], "docno": ["d", "e", "b"], "label": [2, 2, 1]})
    idcg = 2 + 2 / np.log2(3) + 1 / np.log2(4)  # trec_eval's gain is the label: e and d (2 each), then b (1)
    # top 4: d (2) then b (1) first; in the fusion's order d would come last
    assert query_ndcg.ceiling(frame, qrels, 4)["1"] == pytest.approx((2 + 1 / np.log2(3)) / idcg)
    # top 3 leaves d out: b first
    assert query_ndcg.ceiling(frame, qrels, 3)["1"] == pytest.approx(1 / idcg)


def test_reading_precision_counts_verdict_cells_and_gives_a_wilson_interval(tmp_path):
    import argparse

    import readings
    import reworded_negations

    assert [round(x, 3) for x in readings.wilson(77, 100)] == [0.678, 0.842]
    rows = [f"| {i} | a | b | c | {'CORRECT' if i % 4 else 'WRONG'} | a note saying CORRECT |" for i in range(1, 9)]
    (tmp_path / "r-reading.md").write_text(
        "# title\n\n| row | A | B | C | verdict | reason |\n|---|---|---|---|---|---|\n" + "\n".join(rows)
    )
    reworded_negations.precision(argparse.Namespace(out=str(tmp_path / "r"), seen_corpus=False))
    assert "| 8 | 6 | 0.75 |" in (tmp_path / "r-precision.md").read_text()
    assert "not written on" in (tmp_path / "r-precision.md").read_text()
    reworded_negations.precision(argparse.Namespace(out=str(tmp_path / "r"), seen_corpus=True))
    assert "not an unseen-text figure" in (tmp_path / "r-precision.md").read_text()


def test_soft_and_floor_is_applied_to_the_row_maxima_before_the_weighted_mean():
    """``soft_and.py``: g(r) = r - lam * relu(t - r), through ``token_weights.weighted``'s ``floor`` hook."""
    import soft_and
    import token_weights
    import torch

    from pyterrier_compverify.scoring.heads.token_weights import TokenWeightedMaxSim
    from pyterrier_compverify.scoring.packed_maxsim import weighted_mean

    torch.manual_seed(0)
    head = TokenWeightedMaxSim(4)
    torch.nn.init.normal_(head.linear.weight)  # unequal token weights
    states, maxima = torch.randn(2, 4), torch.tensor([[0.9, 0.2], [0.6, 0.6]])
    weights = head.token_weights(states[None], torch.ones(1, 2, dtype=torch.bool)).expand_as(maxima)
    floored = torch.tensor([[0.9, 0.2 - 1.0], [0.6 - 0.2, 0.6 - 0.2]])  # 0.5 and 0.1 under t, times lam 2
    got = token_weights.weighted(soft_and.Floored(head, 2.0, 0.7), states, maxima)
    assert torch.allclose(got, weighted_mean(floored, weights))
    assert torch.allclose(token_weights.weighted(head, states, maxima), weighted_mean(maxima, weights))


def test_choose_keeps_the_dev_rule_with_or_without_a_seed_prefix():
    """``token_weights.choose``: the best dev:flickr8k whose dev:scifact-train is within MARGIN of MaxSim's."""
    import token_weights

    dev = pd.DataFrame(
        {
            "system": ["MaxSim", "s42 epoch 1", "s42 epoch 2", "lam 2 t 0.7"],
            "dev:flickr8k": [0.40, 0.45, 0.47, 0.50],
            "dev:scifact-train": [0.60, 0.60, 0.58, 0.599],  # epoch 2 falls more than 0.005 below MaxSim
        }
    )
    assert token_weights.choose(dev, 42) == "s42 epoch 1"
    assert token_weights.choose(dev) == "lam 2 t 0.7"


def test_experiment_doctests_pass():
    """The examples in the docstrings of ``experiments/`` (which pytest does not collect for doctests)."""
    import doctest
    import importlib
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "experiments"
    names = sorted(p.stem for p in folder.glob("*.py") if ">>> " in p.read_text())
    assert {"condaqa_errors", "cross_encoder", "readings"} <= set(names)
    for name in names:
        result = doctest.testmod(importlib.import_module(name))
        assert result.attempted > 0 and result.failed == 0, name


def test_edit_regions_and_readings_of_the_error_analyses(tmp_path):
    """``condaqa_errors.changes`` shows each changed region with its context, nearby changes in one region; both
    readers' tables are checked, a short row named."""
    import capretrieval_errors
    import condaqa_errors

    anchor = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
    assert condaqa_errors.changes(anchor, anchor) == []
    edit = "one two three four five SIX seven eight nine ten eleven twelve thirteen fourteen fifteen and more"
    assert condaqa_errors.changes(anchor, edit) == [
        "two three four five [-six-] {+SIX+} seven eight nine ten",
        "twelve thirteen fourteen fifteen {+and more+}",  # 9 words after the first change: a region of its own
    ]
    assert condaqa_errors.changes("it is not legal, they said", "it is legal , they said") == [
        "it is [-not-] legal , they said"  # punctuation is a word of its own: spacing is no change
    ]
    table = "| number | cause | label doubt | reason |\n|---|---|---|---|\n"
    (tmp_path / "good.md").write_text(table + "| 1 | trap | yes | r |\n| 2 | KNOWLEDGE | no | r |\n")
    read = capretrieval_errors.reading_table(tmp_path / "good.md")
    assert read["cause"].tolist() == ["TRAP", "KNOWLEDGE"] and read["label_doubt"].tolist() == [True, False]
    (tmp_path / "bad.md").write_text(table + "| 1 | LUCK | no | r |\n")
    with pytest.raises(SystemExit, match="cause must be one of"):
        capretrieval_errors.reading_table(tmp_path / "bad.md")
    (tmp_path / "kinds.md").write_text("| 1 | WIDER | REWRITE | n |\n| 2 | CUE-DELETED | nope | n |\n")
    with pytest.raises(SystemExit, match="row 2"):
        condaqa_errors.reading_table(tmp_path / "kinds.md")
    (tmp_path / "short.md").write_text("| 1 | WIDER |\n")
    with pytest.raises(SystemExit, match="row 1 has 2 cells"):
        condaqa_errors.reading_table(tmp_path / "short.md")


def test_error_summaries_add_up_the_gap_and_count_wins_per_kind(tmp_path, monkeypatch):
    """Both ``summarise`` stages on a tiny key and reading: gaps and wins are counted per label, and a reading
    that misses a sampled item is refused."""
    import argparse
    import json

    import capretrieval_errors
    import condaqa_errors

    monkeypatch.setattr(capretrieval_errors, "query_types", lambda: {"a": "x", "b": "x", "c": "y"})
    sampled = ((1, "a", "mouse", 0.5), (2, "b", "green birds", 0.25), (3, "c", "tom and jerry", 0.125))
    key = [{"number": n, "qid": q, "query": t, "ndcg": 0.5, "ceiling": 0.5 + g, "gap": g} for n, q, t, g in sampled]
    meta = {"command": "sample", "queries": 10, "sampled": 3, "mean_ndcg": 0.8, "mean_ceiling": 0.9,
            "gap_total": 1.0, "gap_sampled": 0.875, "key": key}  # fmt: skip
    (tmp_path / "key.json").write_text(json.dumps(meta))
    rows = "| 1 | TRAP | no | r |\n| 2 | TRAP | yes | r |\n| 3 | KNOWLEDGE | no | r |\n"
    (tmp_path / "reading.md").write_text(rows)
    capretrieval_errors.summarise(argparse.Namespace(out=str(tmp_path)))
    table = json.loads((tmp_path / "summary.json").read_text())
    got = {r["cause"]: (r["queries"], r["gap (query-points)"], r["nDCG@10 if closed"]) for r in table["results"]}
    assert got["TRAP"] == (2, 0.75, 0.875) and got["KNOWLEDGE"] == (1, 0.12, 0.8125)
    assert got["TRAP, one-word query (word sense or sub-word)"][:2] == (1, 0.5)
    assert got["label doubt"][:2] == (1, 0.25)
    (tmp_path / "reading.md").write_text(rows.rsplit("| 3", 1)[0])
    with pytest.raises(SystemExit, match="missing"):
        capretrieval_errors.summarise(argparse.Namespace(out=str(tmp_path)))

    key = [{"number": n, "id": f"t{n}", "category": "affirmative", "v7 win": v, "MaxSim win": m}
           for n, v, m in ((1, True, False), (2, False, False), (3, True, True))]  # fmt: skip
    (tmp_path / "key.json").write_text(json.dumps({"command": "sample", "max_length": 256, "key": key}))
    (tmp_path / "reading.md").write_text("| 1 | WIDER | REWRITE | n |\n| 2 | WIDER | KEEPS-CUE | n |\n"
                                         "| 3 | AFFIXAL | REWRITE | n |\n")  # fmt: skip
    condaqa_errors.summarise(argparse.Namespace(out=str(tmp_path)))
    rows = json.loads((tmp_path / "summary.json").read_text())["results"]
    wider = next(r for r in rows if r["kind"] == "WIDER")
    assert wider["triplets"] == 2 and wider["v7 win"].startswith("0.50") and wider["MaxSim win"].startswith("0.00")
    (tmp_path / "reading.md").write_text("| 1 | WIDER | REWRITE | n |\n| 1 | WIDER | REWRITE | n |\n")
    with pytest.raises(SystemExit, match="missing \\[2, 3\\]"):
        condaqa_errors.summarise(argparse.Namespace(out=str(tmp_path)))


@pytest.mark.integration
def test_the_joined_caption_pool_holds_both_pools_with_distinct_docnos_and_images(data_dir):
    """``capretrieval.py --in-domain coco+flickr8k``: every COCO caption and every Flickr8k *train* caption, once."""
    import capretrieval

    coco, flickr = capretrieval.caption_pool("coco"), capretrieval.caption_pool("flickr8k")
    joined = capretrieval.caption_pool("coco+flickr8k")
    assert len(joined) == len(coco) + len(flickr) and len(flickr) == 30000
    assert joined["docno"].is_unique and not set(coco["image"]) & set(flickr["image"])
    assert joined.columns.tolist() == ["docno", "text", "image"] and joined["text"].str.strip().ne("").all()
    with pytest.raises(ValueError, match="unknown caption pool 'cc3m'"):
        capretrieval.caption_pool("coco+cc3m")


def test_capretrieval_names_each_pools_query_cache_apart():
    import capretrieval

    pools = [*capretrieval.IN_DOMAIN.values(), capretrieval.OUT_OF_DOMAIN]
    slugs = [capretrieval.pool_slug(pool) for pool in pools]
    assert slugs == ["in-domain-coco", "in-domain-flickr8k", "in-domain-coco+flickr8k", "out-of-domain"]


def test_capretrieval_train_reuses_a_finished_folder_and_refuses_one_trained_otherwise(tmp_path):
    """A finished run is read back without training; the same folder asked for other settings stops the run."""
    import json
    from argparse import Namespace
    from dataclasses import asdict

    import capretrieval

    from pyterrier_compverify.training import EncoderTrainingConfig

    args = Namespace(batch_size=32, lr=2e-5, seed=42, bf16=True, device=None)
    made = EncoderTrainingConfig(steps=400, batch_size=32, lr=2e-5, weight_decay=0.1, scale=100.0, seed=42,
                                 save_steps=50, no_duplicates=True, bf16=True)  # fmt: skip
    folder = tmp_path / "ID-flickr8k-SM-s42"
    folder.mkdir()
    (folder / "compverify_run.json").write_text(json.dumps({"config": asdict(made)}))
    (folder / "run.json").write_text(json.dumps({"steps": 400, "train_s": 1.5}))
    no_rows = pd.DataFrame(columns=["query", "passage", "docno", "backend"])  # training them would fail
    path, info = capretrieval.train(folder.name, no_rows, tmp_path, args, 400)
    assert path == str(folder / "final") and info == {"model": folder.name, "steps": 400, "train_s": 1.5}
    with pytest.raises(SystemExit, match=r"steps 400 -> 800"):
        capretrieval.train(folder.name, no_rows, tmp_path, args, 800)
    with pytest.raises(SystemExit, match=r"bf16 True -> False"):
        capretrieval.train(folder.name, no_rows, tmp_path, Namespace(**{**vars(args), "bf16": False}), 400)


def test_ship_packages_only_when_asked_and_only_a_minilm_head(tmp_path, tiny_encoder):
    """verifier_training.py ship replaced the packaged weights by default, whatever encoder the head was trained
    over (review 50-d)."""
    from argparse import Namespace

    import verifier_training

    import pyterrier_compverify as cv
    from pyterrier_compverify.scoring import build_head

    cv.Verifier.save(tmp_path / "tiny-f4", tiny_encoder, build_head("F4", dim=tiny_encoder.dim), "F4")
    packaged = sorted(p.stat().st_mtime for p in (verifier_training.Path(cv.__file__).parent / "weights").rglob("*"))
    args = dict(run_dir=str(tmp_path), name="tiny-f4", beta=3.0, tau=0.875, sharpness=40.0, gate="symmetric")
    args.update(reference="query", selected_on="a test", overwrite=False)
    verifier_training.ship(Namespace(**args, package=False))  # records the form only
    assert cv.Verifier(tmp_path / "tiny-f4").default_penalty["beta"] == 3.0
    with pytest.raises(SystemExit, match="the packaged heads are MiniLM's; not packaged"):
        verifier_training.ship(Namespace(**args, package=True))
    assert (
        sorted(p.stat().st_mtime for p in (verifier_training.Path(cv.__file__).parent / "weights").rglob("*"))
        == packaged
    )


def test_token_weights_replaces_a_head_only_of_the_same_settings(tmp_path, tiny_encoder):
    """The test stage saves the head the dev stage saved: same settings may replace it, others are refused."""
    from argparse import Namespace

    import token_weights

    import pyterrier_compverify as cv
    from pyterrier_compverify.scoring import build_head

    args = Namespace(tau=0.02, epochs=6, tag="", seeds="42", stage="dev", out="x", work=str(tmp_path), seed=42)
    training = {"tau": 0.02, "epochs": 6, "tag": "", "seeds": "42", "seed": 42, "chosen": "s42 epoch 5"}
    head = build_head("F1w", dim=tiny_encoder.dim)
    cv.Verifier.save(tmp_path / "f1w-s42", tiny_encoder, head, "F1w", training=training)
    differs = token_weights.other_settings
    assert not differs(tmp_path / "f1w-s42", Namespace(**{**vars(args), "stage": "test"}), tiny_encoder)
    assert differs(tmp_path / "f1w-s42", Namespace(**{**vars(args), "tau": 0.05}), tiny_encoder)
    other = type("Encoder", (), {"fingerprint": "another"})()  # a run over another --model
    assert differs(tmp_path / "f1w-s42", args, other)
    assert not differs(tmp_path / "none", args, tiny_encoder)


def test_biencoders_tells_a_model_trained_now_from_one_reloaded(tmp_path, tiny_model_dir):
    """``biencoders.train_all`` drops a model's old record and cached runs only when ``train_encoder`` trained it
    (it saves ``final`` again on a reload too): checked against the real trainer on the tiny model."""
    import biencoders

    from pyterrier_compverify.training import EncoderTrainingConfig, train_encoder

    rows = pd.DataFrame({"anchor": [f"query {i}" for i in range(8)], "positive": [f"text {i}" for i in range(8)]})
    config = EncoderTrainingConfig(steps=2, batch_size=4, save_steps=2, max_length=16)
    out = tmp_path / "A-42"

    def run(frame, overwrite=False):
        before = biencoders.finished_run(out)
        train_encoder(frame, out, model=tiny_model_dir, config=config, verbose=False, device="cpu", overwrite=overwrite)
        return biencoders.reloaded(before, biencoders.finished_run(out), overwrite)

    assert not run(rows)  # a new folder: trained
    assert run(rows) and run(rows, overwrite=True)  # the same run: reloaded
    assert not run(rows.iloc[::-1].reset_index(drop=True).assign(anchor=lambda f: f["anchor"] + "!"), overwrite=True)
