import numpy as np
import pandas as pd
import pytest

import pyterrier_compverify as cv
from pyterrier_compverify.training import EncoderTrainingConfig, mix_rows, structural_triplets, train_encoder

RETRIEVAL = pd.DataFrame(
    {
        "anchor": [f"query about cell {i}" for i in range(40)],
        "positive": [f"a document about the cell protein {i}" for i in range(40)],
        "negative": [f"a text on the dog {i}" for i in range(40)],
        "kind": "retrieval",
    }
)
EDITS = pd.DataFrame(
    {
        "sentence1": ["the cat is on the mat", "the tall man greeted the short woman", "a red cat"] * 4,
        "sentence2": ["the cat is not on the mat", "the short man greeted the tall woman", "a red dog"] * 4,
        "category": ["negation", "binding", "spatial"] * 4,
    }
)


def test_structural_rows_use_identity_positives():
    rows = structural_triplets(EDITS)
    assert (rows["anchor"] == rows["positive"]).all() and (rows["negative"] == EDITS["sentence2"]).all()
    para = pd.concat(
        [EDITS, pd.DataFrame({"sentence1": ["a red cat"], "sentence2": ["a crimson cat"], "category": ["paraphrase"]})]
    )
    rows = structural_triplets(para, positives="paraphrase")
    assert set(rows.loc[rows.anchor == "a red cat", "positive"]) == {"a crimson cat"}
    assert len(rows) == 12  # paraphrases are positives, never negatives


def test_balanced_structural_rows():
    edits = pd.concat([EDITS, EDITS[EDITS.category == "negation"]] * 3)  # negation over-represented
    rows = structural_triplets(edits, balanced=True)
    assert rows["kind"].value_counts().to_dict() == {"binding": 12, "negation": 12, "spatial": 12}


@pytest.mark.parametrize("share", [0.0, 0.14, 0.5])
def test_structural_share_is_as_configured(share):
    mixed = mix_rows(RETRIEVAL, structural_triplets(EDITS), share=share, total=24)
    assert len(mixed) == 24
    assert (mixed["kind"] != "retrieval").sum() == round(share * 24)


def test_mix_rows_refuses_impossible_shares():
    with pytest.raises(ValueError, match="share"):
        mix_rows(RETRIEVAL, RETRIEVAL, share=1.0)
    with pytest.raises(ValueError, match="not enough rows"):
        mix_rows(RETRIEVAL, structural_triplets(EDITS), share=0.9, total=100)


def test_both_recipes_train_and_load_back_as_biencoder(tmp_path, tiny_model_dir):
    config = EncoderTrainingConfig(steps=3, batch_size=4, save_steps=2, logging_steps=1, max_length=16)
    recipes = {
        "A": mix_rows(RETRIEVAL, structural_triplets(EDITS), share=0.0, total=20),
        "B": mix_rows(RETRIEVAL, structural_triplets(EDITS), share=0.2, total=20),
    }
    base = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    docs = [{"docno": f"d{i}", "text": t} for i, t in enumerate(RETRIEVAL["positive"][:8])]
    topics = pd.DataFrame({"qid": ["q"], "query": ["query about cell 3"]})
    for name, rows in recipes.items():
        trained = train_encoder(rows, tmp_path / name, model=tiny_model_dir, config=config, verbose=False, device="cpu")
        assert trained.fingerprint != base.fingerprint
        model = cv.BiEncoder(str(tmp_path / name / "final"), max_length=16, device="cpu")
        assert model.fingerprint == trained.fingerprint
        model.index(docs, tmp_path / f"{name}.flex")
        res = model.retriever(tmp_path / f"{name}.flex", num_results=3)(topics)
        expected = np.argsort(
            -(trained.encode_docs([d["text"] for d in docs]) @ trained.encode_queries(["query about cell 3"])[0])
        )[:3]
        assert list(res.sort_values("rank")["docno"]) == [docs[i]["docno"] for i in expected]


def test_encoder_training_resumes_from_checkpoint(tmp_path, tiny_model_dir):
    from transformers import TrainerCallback

    rows = mix_rows(RETRIEVAL, structural_triplets(EDITS), share=0.0, total=24)
    config = EncoderTrainingConfig(steps=4, batch_size=4, save_steps=2, logging_steps=1, max_length=16)

    class Kill(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_encoder(
            rows, tmp_path / "r", model=tiny_model_dir, config=config, verbose=False, device="cpu", callbacks=[Kill()]
        )
    assert (tmp_path / "r" / "checkpoints" / "checkpoint-2").exists() and not (tmp_path / "r" / "final").exists()
    resumed = train_encoder(rows, tmp_path / "r", model=tiny_model_dir, config=config, verbose=False, device="cpu")
    straight = train_encoder(rows, tmp_path / "s", model=tiny_model_dir, config=config, verbose=False, device="cpu")
    a = resumed.encode(["query about cell 1"]).pooled
    b = straight.encode(["query about cell 1"]).pooled
    assert float((a - b).abs().max()) < 1e-4
    # a finished run is loaded from its last checkpoint, not trained one step further
    again = train_encoder(rows, tmp_path / "s", model=tiny_model_dir, config=config, verbose=False, device="cpu")
    assert float((again.encode(["query about cell 1"]).pooled - b).abs().max()) < 1e-6
    assert sorted(p.name for p in (tmp_path / "s" / "checkpoints").iterdir())[-1] == "checkpoint-4"


def test_malformed_training_file_names_the_problem(tmp_path, tiny_model_dir):
    path = tmp_path / "rows.jsonl"
    RETRIEVAL.drop(columns=["positive"]).to_json(path, orient="records", lines=True)
    with pytest.raises(ValueError, match="positive"):
        train_encoder(path, tmp_path / "x", model=tiny_model_dir, config=EncoderTrainingConfig(steps=1))
    RETRIEVAL.assign(negative=[""] + list(RETRIEVAL["negative"][1:])).to_json(path, orient="records", lines=True)
    with pytest.raises(ValueError, match="'negative' is empty or missing in 1 row.*first row 0"):
        train_encoder(path, tmp_path / "x", model=tiny_model_dir, config=EncoderTrainingConfig(steps=1))


@pytest.mark.integration
def test_recipes_on_scifact(data_dir):
    from pyterrier_compverify.training.data import recipe_rows, title_abstract_triplets

    pairs = title_abstract_triplets(limit=50)
    assert len(pairs) == 50 and (pairs["positive"] != pairs["negative"]).all()
    a = recipe_rows("A", self_supervised=50)
    assert set(a["kind"]) == {"retrieval", "title-abstract"}
    b = recipe_rows("B", edits=EDITS.sample(frac=40, replace=True, random_state=0), self_supervised=50)
    structural = (b["kind"] != "retrieval") & (b["kind"] != "title-abstract")
    assert abs(structural.mean() - 0.14) < 0.005 and len(b) - structural.sum() == len(a)
    with pytest.raises(ValueError, match="edits"):
        recipe_rows("B", self_supervised=10)


def test_bf16_training_runs_in_bf16_and_changes_the_weights(tmp_path, tiny_model_dir):
    import torch

    seen = []
    config = EncoderTrainingConfig(steps=2, batch_size=4, save_steps=2, logging_steps=1, max_length=16, bf16=True)
    rows = mix_rows(RETRIEVAL, structural_triplets(EDITS), share=0.0, total=12)
    base = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    from transformers import TrainerCallback

    class Dtype(TrainerCallback):  # the dtype the encoder's layers compute in during a training step
        def on_step_begin(self, args, state, control, model=None, **kwargs):
            layer = model[0].auto_model.encoder.layer[0].output.dense
            layer.register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))

    trained = train_encoder(
        rows, tmp_path / "bf16", model=tiny_model_dir, config=config, verbose=False, device="cpu", callbacks=[Dtype()]
    )
    assert torch.bfloat16 in seen
    assert trained.fingerprint != base.fingerprint
