"""CrossEncoderScorer (a cross-encoder's logit per row, the reranker contract), ScoreFusion over the input's own
score and its top k, and the fusion pipeline / ``compverify evaluate`` with a cross-encoder over the fused top."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.encoder import PADDING_NUMBERED
from pyterrier_compverify.fusion import ScoreFusion, fuse

ROWS = pd.DataFrame(
    {
        "qid": ["1", "1", "1", "2"],
        "query": ["a red cat", "a red cat", "a red cat", "the dog"],
        "docno": ["a", "b", "c", "d"],
        "text": ["a red cat on the mat", "a blue dog", "hello world", "the dog is not on the mat"],
        "score": [0.1, 0.2, 0.3, 0.4],
        "rank": [2, 1, 0, 0],
        "keep": ["x", "y", "z", "w"],
    }
)


def logits(folder: str, queries: list[str], texts: list[str], max_length: int = 128) -> np.ndarray:
    """The model's logits, computed here with transformers alone."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokens = AutoTokenizer.from_pretrained(folder)(
        queries, texts, truncation="only_second", max_length=max_length, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        return model(**tokens).logits[:, 0].numpy()


def test_scores_each_row_by_the_models_logit_and_keeps_columns(tiny_cross_encoder):
    out = cv.CrossEncoderScorer(tiny_cross_encoder, device="cpu")(ROWS)
    assert list(out.columns) == ["qid", "query", "docno", "text", "keep", "score", "rank"]
    expected = logits(tiny_cross_encoder, ROWS["query"].tolist(), ROWS["text"].tolist())
    np.testing.assert_allclose(out["score"].to_numpy(), expected, atol=1e-5)  # raw logits: no sigmoid
    first = out[out["qid"] == "1"]
    assert first["rank"].tolist() == list(np.argsort(np.argsort(-first["score"].to_numpy())))
    assert out["keep"].tolist() == ROWS["keep"].tolist()
    long = ROWS.assign(text=[" ".join(["cat"] * 200)] * 4)  # cut to max_length, the passage first
    short = cv.CrossEncoderScorer(tiny_cross_encoder, max_length=16, device="cpu")(long)
    np.testing.assert_allclose(
        short["score"].to_numpy(), logits(tiny_cross_encoder, long["query"].tolist(), long["text"].tolist(), 16),
        atol=1e-5,
    )  # fmt: skip


def test_bf16_runs_a_bf16_copy_and_gives_nearly_the_fp32_logits(tiny_cross_encoder, monkeypatch):
    fp32 = cv.CrossEncoderScorer(tiny_cross_encoder, device="cpu")
    bf16 = cv.CrossEncoderScorer(tiny_cross_encoder, device="cpu", dtype="bfloat16")
    assert fp32.dtype == "fp32" and next(fp32.cross_encoder.model.parameters()).dtype == torch.float32
    assert bf16.dtype == "bf16" and next(bf16.cross_encoder.model.parameters()).dtype == torch.bfloat16
    assert repr(bf16).endswith("dtype='bf16')") and "dtype" not in repr(fp32)
    a, b = fp32(ROWS)["score"].to_numpy(), bf16(ROWS)["score"].to_numpy()
    assert b.dtype == np.float64 and not np.array_equal(a, b)  # really another precision
    np.testing.assert_allclose(b, a, atol=0.05 * max(1.0, np.abs(a).max()))
    with pytest.raises(ValueError, match="dtype must be 'bf16' or 'fp32'"):
        cv.CrossEncoderScorer(tiny_cross_encoder, dtype="fp16")
    monkeypatch.setenv("COMPVERIFY_DTYPE", "bf16")  # the encoders' default; not the cross-encoder's
    assert cv.CrossEncoderScorer(tiny_cross_encoder, dtype=None).dtype == "fp32"
    assert cv.CrossEncoderScorer(tiny_cross_encoder, max_length=16.0).max_length == 16  # a whole number
    for bad in (16.5, "16"):
        with pytest.raises(ValueError, match=f"max_length must be a whole number of tokens >= 2, not {bad!r}"):
            cv.CrossEncoderScorer(tiny_cross_encoder, max_length=bad)


def test_empty_frames_bad_input_and_a_model_of_several_labels(tiny_cross_encoder, tiny_model_dir, tmp_path):
    scorer = cv.CrossEncoderScorer(tiny_cross_encoder, device="cpu")
    empty = scorer(ROWS.iloc[:0])
    assert len(empty) == 0 and list(empty.columns)[-2:] == ["score", "rank"]
    with pytest.raises(pt.validate.InputValidationError, match=r"add pt\.text\.get_text\(dataset, 'text'\) before it"):
        scorer(ROWS.drop(columns="text"))
    with pytest.raises(ValueError, match="'text' column value"):
        scorer(ROWS.assign(text=[None, "a", "b", "c"]))
    with pytest.raises(ValueError, match="max_length must be a whole number"):
        cv.CrossEncoderScorer(tiny_cross_encoder, max_length=1)
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    hf = Path(tiny_model_dir).parent / "hf"
    BertForSequenceClassification(BertConfig.from_pretrained(hf, num_labels=3)).save_pretrained(tmp_path / "nli")
    AutoTokenizer.from_pretrained(hf).save_pretrained(tmp_path / "nli")
    with pytest.raises(ValueError, match="gives 3 scores per pair, not one"):
        cv.CrossEncoderScorer(str(tmp_path / "nli"), device="cpu")
    columns = ["qid", "query", "docno", "text", "score", "rank"]
    assert pt.inspect.transformer_outputs(scorer, columns) == columns


class Constant(pt.Transformer):
    """A scorer that gives each docno a fixed score and records how many rows it was given."""

    def __init__(self, scores):
        self.scores, self.seen = scores, []

    def transform(self, inp):
        self.seen.append(len(inp))
        return inp.assign(score=inp["docno"].map(self.scores).astype(float))


def test_score_fusion_over_the_inputs_score_and_only_its_top_rows():
    frame = pd.DataFrame({"qid": ["q"] * 5, "query": "x", "docno": list("abcde"), "score": [5.0, 4, 3, 2, 1]})
    scorer = Constant({"a": 0.0, "b": 0.0, "c": 10.0, "d": 100.0, "e": 100.0})
    fusion = ScoreFusion({"ce": scorer}, {"first": 1.0, "ce": 1.0}, input_score="first", top=3)
    out = fusion(frame.sample(frac=1.0, random_state=0))  # any row order: the top is the input's by score
    assert scorer.seen == [3]  # the costly scorer read the top 3 only
    head = fuse(frame.iloc[:3].assign(first=frame["score"].iloc[:3], ce=[0.0, 0.0, 10.0]), {"first": 1, "ce": 1})
    assert out["docno"].tolist() == [*head["docno"], "d", "e"]  # the others below, in their order
    assert out["rank"].tolist() == [0, 1, 2, 3, 4] and "first" not in out.columns and "ce" not in out.columns
    assert np.allclose(out["score"].to_numpy()[:3], head["score"].to_numpy())
    every = ScoreFusion({"ce": Constant(scorer.scores)}, {"first": 1.0, "ce": 1.0}, input_score="first")(frame)
    whole = fuse(frame.assign(first=frame["score"], ce=frame["docno"].map(scorer.scores)), {"first": 1, "ce": 1})
    assert every["docno"].tolist() == whole["docno"].tolist() and every["docno"].tolist()[1] == "d"  # every row
    with pytest.raises(ValueError, match="input_score 'ce' is also a scorer's name"):
        ScoreFusion({"ce": scorer}, {"ce": 1.0}, input_score="ce")
    with pytest.raises(ValueError, match="name scorers that are not given: \\['first'\\]"):
        ScoreFusion({"ce": scorer}, {"first": 1.0})
    with pytest.raises(ValueError, match=r"top \(the rows fused per query\) must be at least 1, got 0"):
        ScoreFusion({"ce": scorer}, {"ce": 1.0}, top=0)
    with pytest.raises(ValueError, match="input_score='first' reads the input's score: the frame has no score column"):
        ScoreFusion({"ce": scorer}, {"first": 1.0}, input_score="first")(frame.drop(columns="score"))


def test_the_fusion_pipeline_with_a_cross_encoder_over_its_top(tiny_encoder, tiny_cross_encoder, tmp_path, tiny_fusion):
    from pyterrier_compverify.datasets import CorpusText
    from pyterrier_compverify.pipelines import fusion_pipeline

    collection, indices, weighted = tiny_fusion
    topics = collection.topics()
    plain = fusion_pipeline(indices, tiny_encoder, depth=6, weighted=weighted)(topics)
    with pytest.raises(ValueError, match="texts="):
        fusion_pipeline(indices, tiny_encoder, weighted=weighted, cross_encoder=tiny_cross_encoder)
    got = fusion_pipeline(
        indices, tiny_encoder, depth=6, weighted=weighted, texts=CorpusText(collection),
        cross_encoder=tiny_cross_encoder, cross_encoder_weight=0.5, cross_encoder_top=3,
    )(topics)  # fmt: skip
    assert len(got) == len(plain) and set(got.columns) == set(plain.columns)
    for qid, ranked in plain.groupby("qid"):
        top = ranked.sort_values("rank").head(3).merge(CorpusText(collection)(ranked)[["docno", "text"]], on="docno")
        ce = cv.CrossEncoderScorer(tiny_cross_encoder, device="cpu")(top)["score"]  # its logits: the test above
        expected = fuse(top.assign(first=top["score"], ce=ce.to_numpy()), {"first": 1.0, "ce": 0.5})
        mine = got[got["qid"] == qid].sort_values("rank")
        both = mine.head(3).merge(expected, on="docno", suffixes=("", "_expected"))  # ties: by docno, not order
        assert len(both) == 3 and np.allclose(both["score"], both["score_expected"], atol=1e-4)
        assert set(mine["docno"].iloc[3:]) == set(ranked["docno"]) - set(top["docno"])  # the others below
        assert mine["score"].iloc[3:].max() < mine["score"].iloc[:3].min()


def test_evaluate_adds_the_cross_encoder_system_and_refuses_it_without_fusion(
    tiny_encoder, tiny_cross_encoder, tmp_path, monkeypatch, capsys, tiny_collection
):
    from pyterrier_compverify import evaluate
    from pyterrier_compverify.cli import main
    from pyterrier_compverify.scoring import build_head

    cv.Verifier.save(tmp_path / "f1w", tiny_encoder, build_head("F1w", dim=tiny_encoder.dim), "F1w")
    plain, with_ce = evaluate.fusion_label(4), evaluate.fusion_label(4, 0.0, 0.25)
    results = evaluate.run_evaluation(
        "tiny", model=tiny_encoder.model_name, max_length=16, device="cpu", rerankers=["maxsim"],
        index_dir=tmp_path / "indices", out_dir=None, fusion=str(tmp_path / "f1w"), fusion_depth=4,
        fusion_cross_encoder=tiny_cross_encoder, baseline=plain, verbose=False,
    )  # fmt: skip
    assert {plain, with_ce} <= set(results["name"]) and with_ce.endswith("+ BM25 >> 0.25 CrossEncoder")
    assert "Loading weights" not in capsys.readouterr().err  # quiet with verbose=False
    made = []
    monkeypatch.setattr(cv.CrossEncoderScorer, "__init__", spy_on(cv.CrossEncoderScorer.__init__, made))
    in_bf16 = evaluate.fusion_label(4, 0.0, 0.25, "bf16")
    results = evaluate.run_evaluation(
        "tiny", model=tiny_encoder.model_name, max_length=16, device="cpu", rerankers=["maxsim"],
        index_dir=tmp_path / "indices", out_dir=None, fusion=str(tmp_path / "f1w"), fusion_depth=4,
        fusion_cross_encoder=tiny_cross_encoder, fusion_cross_encoder_dtype="bfloat16", baseline=in_bf16, verbose=False,
    )  # fmt: skip
    assert in_bf16 in set(results["name"]) and in_bf16 == f"{with_ce} (bf16)"
    assert [scorer.dtype for scorer in made] == ["bf16"]
    with pytest.raises(ValueError, match="fusion_cross_encoder_dtype: dtype must be 'bf16' or 'fp32'"):
        evaluate.run_evaluation("tiny", fusion=True, fusion_cross_encoder=tiny_cross_encoder,
                                fusion_cross_encoder_dtype="fp16")  # fmt: skip
    for argv, message in [
        (["--fusion", "--fusion-cross-encoder-dtype", "bf16"], "has no effect without --fusion-cross-encoder"),
        (["--fusion-cross-encoder", tiny_cross_encoder], "--fusion-cross-encoder has no effect without --fusion"),
        (["--fusion", "--fusion-cross-encoder-weight", "0.5"], "has no effect without --fusion-cross-encoder"),
        (["--fusion", "--fusion-cross-encoder", "x", "--fusion-cross-encoder-weight", "0"], "0 leaves the cross-enc"),
        (["--fusion", "--fusion-cross-encoder", __file__], "is a file: give the model's folder"),
    ]:
        with pytest.raises(SystemExit):
            main(["evaluate", "irds:cranfield", *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def spy_on(init, made: list):
    """``init`` that also appends each object it built to ``made``."""

    def spied(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    return spied


@pytest.mark.parametrize(
    ("model_type", "pad"),
    [(t, None) for t in ["bert", "distilbert", "electra", *PADDING_NUMBERED]] + [("roberta", 0), ("mpnet", 0)],
)
def test_positions_read_before_loading_equal_the_loaded_models(model_type, pad):
    """A cross-encoder is checked before its weights load, a bi-encoder from its loaded embeddings: the same answer,
    by the config alone and by the weightless skeleton."""
    from transformers import AutoConfig, AutoModel

    from pyterrier_compverify.encoder import skeleton_embeddings, usable_positions

    extra = {} if pad is None else {"pad_token_id": pad}
    config = AutoConfig.for_model(model_type, num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                  intermediate_size=37, vocab_size=99, max_position_embeddings=66, **extra)  # fmt: skip
    loaded = AutoModel.from_config(config).embeddings
    padding = getattr(loaded, "padding_idx", None)  # what the bi-encoder reads from its loaded model
    truth = 66 - (padding + 1) if padding is not None else 66
    assert usable_positions(config, skeleton_embeddings(config)) == truth
    assert usable_positions(config) == truth


def test_a_model_that_is_not_a_cross_encoder_or_too_short_is_refused_before_it_loads(
    tiny_model_dir, tiny_cross_encoder
):
    from pyterrier_compverify.encoder import MaxLengthError

    with pytest.raises(ValueError, match="is not a cross-encoder .*BertModel.*ForSequenceClassification"):
        cv.CrossEncoderScorer(tiny_model_dir)  # a bi-encoder: CrossEncoder would give it a random head
    with pytest.raises(MaxLengthError, match="max_length=65 exceeds the 64 positions"):
        cv.CrossEncoderScorer(tiny_cross_encoder, max_length=65)
    with pytest.raises(ValueError, match="device 'gpu' is not a torch device"):
        cv.CrossEncoderScorer(tiny_cross_encoder, device="gpu")
    with pytest.raises(FileNotFoundError, match="cannot load the cross-encoder 'no-org/no-model'"):
        cv.CrossEncoderScorer("no-org/no-model")  # offline: one line


def test_the_pyterrier_contract_and_the_users_progress_bar_setting(tiny_cross_encoder, monkeypatch):
    from test_contract import run_transformer_test_case
    from transformers.utils import logging as hf_logging

    scorer = cv.CrossEncoderScorer(tiny_cross_encoder, device="cpu", batch_size=2)
    run_transformer_test_case(scorer, monkeypatch)
    with pytest.raises(Exception, match="text"):  # pt.inspect learns that it needs the text
        pt.inspect.transformer_outputs(scorer, ["qid", "query", "docno", "score", "rank"])
    assert pt.inspect.transformer_attributes(scorer)  # its constructor's arguments, as attributes
    for shown in (False, True):
        (hf_logging.enable_progress_bar if shown else hf_logging.disable_progress_bar)()
        cv.CrossEncoderScorer(tiny_cross_encoder, device="cpu", verbose=False)
        assert hf_logging.is_progress_bar_enabled() == shown  # left as the user set it
    hf_logging.enable_progress_bar()


def test_score_fusion_top_with_first_rank_1_several_queries_duplicates_and_nan(monkeypatch):
    monkeypatch.setattr(pt.model, "FIRST_RANK", 1)
    frame = pd.DataFrame(
        {
            "qid": ["q"] * 4 + ["r"] * 2 + ["q"],
            "query": "x",
            "docno": ["a", "b", "c", "d", "a", "b", "a"],  # q/a twice: the first row counts
            "score": [4.0, 3, 2, 1, 2, 1, -9],
        }
    )
    scorer = Constant({"a": 0.0, "b": 1.0, "c": 2.0, "d": 9.0})
    out = ScoreFusion({"ce": scorer}, {"first": 1.0, "ce": 1.0}, input_score="first", top=2)(frame)
    assert scorer.seen == [4]  # q's a, b and r's a, b: the top 2 of each query
    assert out.groupby("qid")["rank"].apply(list).to_dict() == {"q": [1, 2, 3, 4], "r": [1, 2]}
    assert out[out["qid"] == "q"]["docno"].tolist()[2:] == ["c", "d"]  # below, in their order
    with pytest.raises(ValueError, match=r"top=2 reads the input's score: 1 row\(s\) have none \(NaN\)"):
        ScoreFusion({"ce": scorer}, {"first": 1.0, "ce": 1.0}, input_score="first", top=2)(
            frame.assign(score=[4.0, None, 2, 1, 2, 1, 0])
        )
    empty = ScoreFusion({"ce": scorer}, {"ce": 1.0})(
        frame.iloc[:0].assign(rank=0)[["qid", "score", "rank", "query", "docno"]]
    )
    assert list(empty.columns)[-2:] == ["score", "rank"]
    assert "input_score='first', top=2" in repr(ScoreFusion({"ce": scorer}, {"first": 1}, input_score="first", top=2))


def test_the_cross_encoder_stage_refuses_weight_0_and_no_texts(tiny_cross_encoder):
    from pyterrier_compverify.pipelines import cross_encoder_stage

    with pytest.raises(ValueError, match="weight of 0 leaves it out"):
        cross_encoder_stage(tiny_cross_encoder, object(), weight=0)
    with pytest.raises(ValueError, match="needs texts="):
        cross_encoder_stage(tiny_cross_encoder, None)
