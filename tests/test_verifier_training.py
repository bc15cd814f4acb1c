import warnings

import pandas as pd
import pyterrier as pt
import pytest
import torch

from pyterrier_compverify import MapVerifier, Verifier
from pyterrier_compverify.training import VerifierTrainingConfig, load_triplets, train_verifier

SENTENCES = [
    ("the tall man greeted the short woman", "the short man greeted the tall woman"),
    ("a red cat", "a blue cat"),
    ("the dog is on the mat", "the dog is not on the mat"),
    ("a cell protein", "a protein cell"),
]
ROWS = pd.DataFrame([{"anchor": a, "positive": a, "negative": n} for a, n in SENTENCES] * 4)


def config(**kw):
    base = dict(head="F4", steps=6, batch_size=4, save_steps=3, logging_steps=1, seed=7)
    return VerifierTrainingConfig(**{**base, **kw})


def test_frozen_training_saves_a_loadable_artifact(tmp_path, tiny_encoder):
    before = {k: v.clone() for k, v in tiny_encoder.model.state_dict().items()}
    verifier, log = train_verifier(ROWS, tmp_path / "v", encoder=tiny_encoder, config=config(), verbose=False)
    assert len(log) == 6 and all(torch.isfinite(torch.tensor(e["loss"])) for e in log)
    for k, v in tiny_encoder.model.state_dict().items():  # frozen: the encoder did not move
        assert torch.equal(v, before[k])
    loaded = pt.Artifact.load(str(tmp_path / "v"))
    assert isinstance(loaded, Verifier) and loaded.meta["head"] == "F4"
    reranker = MapVerifier(loaded, encoder=tiny_encoder)
    frame = pd.DataFrame(
        {"qid": ["1", "1"], "query": ["a red cat"] * 2, "docno": ["a", "b"], "text": ["a red cat", "a blue cat"]}
    )
    out = reranker(frame)
    assert out["score"].between(-1, 1).all() and list(out.columns[:4]) == ["qid", "query", "docno", "text"]


def test_end_to_end_moves_the_encoder_and_ships_it(tmp_path, tiny_model_dir):
    from pyterrier_compverify import TokenEncoder

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    fingerprint = encoder.fingerprint
    verifier, _ = train_verifier(
        ROWS, tmp_path / "e2e", encoder=encoder, config=config(mode="end-to-end", steps=3), verbose=False
    )
    assert verifier.meta["fine_tuned_encoder"] and verifier.meta["encoder"]["fingerprint"] != fingerprint
    reloaded = verifier.load_encoder(device="cpu")
    assert reloaded.fingerprint == verifier.meta["encoder"]["fingerprint"]
    with pytest.raises(ValueError, match="fingerprint"):
        verifier.load_encoder(encoder=TokenEncoder(tiny_model_dir, max_length=16, device="cpu"))
    assert reloaded.max_length == 16 and verifier.load_encoder(device="cpu", max_length=24).max_length == 24
    # the caller's encoder is not tuned in place: a second run (here another seed) starts from the same weights
    assert encoder.fingerprint == fingerprint
    second, _ = train_verifier(
        ROWS, tmp_path / "e2e-2", encoder=encoder, config=config(mode="end-to-end", steps=3, seed=8), verbose=False
    )
    assert encoder.fingerprint == fingerprint and second.meta["encoder"]["fingerprint"] != fingerprint


def test_a_frozen_encoder_runs_without_dropout_while_the_head_trains(tiny_encoder):
    """Uncached frozen training: the Trainer's model.train() switched the encoder's dropout on, so the head learnt
    from noisy states that serving never gives."""
    from pyterrier_compverify.scoring import build_head
    from pyterrier_compverify.training.verifier import EncoderStates, VerifierModel

    model = VerifierModel(EncoderStates(tiny_encoder, train=False), build_head("F1", dim=tiny_encoder.dim))
    model.train()
    assert model.head.training and not tiny_encoder.model.training
    trained = VerifierModel(EncoderStates(tiny_encoder, train=True), build_head("F1", dim=tiny_encoder.dim))
    trained.train()
    assert tiny_encoder.model.training  # end-to-end: the encoder's own dropout applies
    trained.eval()


def test_nearmiss_scores_a_fine_tuned_verifier_at_the_length_asked_for(tmp_path, tiny_model_dir):
    """The near-miss report's fallback to a verifier's own (fine-tuned) encoder keeps the requested max length:
    CondaQA passages need 256 tokens, and the length the verifier was trained at would cut the edit off."""
    from pyterrier_compverify import TokenEncoder
    from pyterrier_compverify.nearmiss_report import named_scorers

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    train_verifier(ROWS, tmp_path / "e2e", encoder=encoder, config=config(mode="end-to-end", steps=2), verbose=False)
    asked = TokenEncoder(tiny_model_dir, max_length=40, device="cpu")
    scorer = named_scorers([str(tmp_path / "e2e")], asked)[str(tmp_path / "e2e")]
    assert scorer.encoder.max_length == 40 and scorer.encoder.fingerprint != asked.fingerprint


def test_a_fine_tuned_verifiers_own_encoder_keeps_the_dtype_asked_for_and_names_a_length_too_long(
    tmp_path, tiny_model_dir
):
    from pyterrier_compverify import TokenEncoder
    from pyterrier_compverify.verifier import CorruptVerifierError

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    verifier, _ = train_verifier(
        ROWS, tmp_path / "e2e", encoder=encoder, config=config(mode="end-to-end", steps=2), verbose=False
    )
    other = "bf16" if encoder.dtype == "fp32" else "fp32"  # not the device's default
    with warnings.catch_warnings():  # bf16 on a CPU that emulates it warns; not what is tested here
        warnings.simplefilter("ignore")
        asked = TokenEncoder(tiny_model_dir, max_length=24, device="cpu", dtype=other)
        assert verifier.encoder_for(asked).dtype == other
    with pytest.raises(ValueError, match="exceeds") as raised:  # the request is wrong, the folder is fine
        verifier.load_encoder(device="cpu", max_length=100_000)
    assert not isinstance(raised.value, CorruptVerifierError)


def test_resume_after_a_kill_continues_the_same_loss_curve(tmp_path, tiny_encoder):
    from transformers import TrainerCallback

    _, full = train_verifier(ROWS, tmp_path / "full", encoder=tiny_encoder, config=config(), verbose=False)

    class Kill(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 4:  # after the checkpoint of step 3
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_verifier(
            ROWS, tmp_path / "killed", encoder=tiny_encoder, config=config(), callbacks=[Kill()], verbose=False
        )
    assert not (tmp_path / "killed" / "pt_meta.json").exists()
    _, resumed = train_verifier(ROWS, tmp_path / "killed", encoder=tiny_encoder, config=config(), verbose=False)
    full_losses = {e["step"]: e["loss"] for e in full}
    resumed_losses = {e["step"]: e["loss"] for e in resumed}
    assert set(resumed_losses) >= {4, 5, 6}
    for step in (4, 5, 6):
        assert resumed_losses[step] == pytest.approx(full_losses[step], rel=1e-4)


def test_malformed_training_rows(tmp_path):
    with pytest.raises(ValueError, match=r"missing column\(s\) \['negative'\]"):
        load_triplets(ROWS.drop(columns=["negative"]))
    bad = ROWS.copy()
    bad.loc[5, "positive"] = "  "
    with pytest.raises(ValueError, match="'positive' is empty or missing in 1 row.*first row 5"):
        load_triplets(bad)
    path = tmp_path / "rows.csv"
    ROWS.to_csv(path, index=False)
    assert len(load_triplets(path)) == len(ROWS)
    with pytest.raises(ValueError, match="no training rows"):
        load_triplets(ROWS.iloc[:0])


def test_bad_config():
    with pytest.raises(ValueError, match="mode"):
        VerifierTrainingConfig(mode="sideways")
    with pytest.raises(ValueError, match="unknown head"):
        VerifierTrainingConfig(head="F9")
    with pytest.raises(ValueError, match="no weights"):
        VerifierTrainingConfig(head="F1", mode="frozen")


def test_both_trainers_share_one_schedule_and_its_checks():
    from pyterrier_compverify.training import EncoderTrainingConfig, TrainingSchedule

    for config in (VerifierTrainingConfig, EncoderTrainingConfig):
        assert issubclass(config, TrainingSchedule)
        with pytest.raises(ValueError, match="steps must be at least 1, got 0"):
            config(steps=0)
        with pytest.raises(ValueError, match=r"warmup is a fraction of the steps in \[0, 1\), got 10"):
            config(warmup=10)  # transformers would read 10 as ten steps, not a fraction
    assert (VerifierTrainingConfig().steps, EncoderTrainingConfig().steps) == (300, 500)  # own defaults kept
    with pytest.raises(ValueError, match="lr must be positive"):
        EncoderTrainingConfig(lr=0)


def test_the_optimizer_gives_the_head_and_the_learning_encoder_layers_their_own_rates(tiny_encoder):
    from pyterrier_compverify.scoring import build_head
    from pyterrier_compverify.training.verifier import EncoderStates, VerifierModel, _optimizer

    config = VerifierTrainingConfig(mode="end-to-end", head_lr=1e-3, encoder_lr=2e-5, weight_decay=0.05)
    before = {id(p): p.requires_grad for p in tiny_encoder.model.parameters()}
    model = VerifierModel(EncoderStates(tiny_encoder, train=True), build_head("F4", dim=tiny_encoder.dim))
    groups = _optimizer(model, config).param_groups
    assert [g["lr"] for g in groups] == [1e-3, 2e-5] and {g["weight_decay"] for g in groups} == {0.05}
    assert sum(p.numel() for g in groups for p in g["params"]) == sum(p.numel() for p in model.parameters())
    frozen = VerifierModel(EncoderStates(tiny_encoder, train=False), build_head("F4", dim=tiny_encoder.dim))
    assert [g["lr"] for g in _optimizer(frozen, config).param_groups] == [1e-3]  # no empty encoder group
    for p in tiny_encoder.model.parameters():
        p.requires_grad_(before[id(p)])  # the session's encoder as the other tests expect it


def test_a_weight_free_head_trains_its_encoder_end_to_end(tmp_path, tiny_model_dir):
    from pyterrier_compverify import MaxSim, TokenEncoder

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    fingerprint = encoder.fingerprint
    cfg = config(head="F1", mode="end-to-end", steps=3)
    verifier, log = train_verifier(ROWS, tmp_path / "f1", encoder=encoder, config=cfg, verbose=False)
    assert len(log) == 3 and verifier.meta["encoder"]["fingerprint"] != fingerprint
    reranker = verifier.reranker()
    assert isinstance(reranker, MaxSim) and reranker.encoder.fingerprint == verifier.meta["encoder"]["fingerprint"]
    frame = pd.DataFrame({"qid": ["1"], "query": ["a red cat"], "docno": ["a"], "text": ["a red cat"]})
    assert reranker(frame)["score"].iloc[0] == pytest.approx(1.0, abs=1e-5)  # MaxSim of a text with itself


def test_conditional_penalty_only_lowers_near_duplicates(tmp_path, tiny_encoder):
    from pyterrier_compverify import MaxSim

    verifier, _ = train_verifier(ROWS, tmp_path / "p", encoder=tiny_encoder, config=config(steps=2), verbose=False)
    frame = pd.DataFrame(
        {
            "qid": ["1"] * 3,
            "query": ["a red cat"] * 3,
            "docno": ["same", "near", "far"],
            "text": ["a red cat", "a blue cat", "the protein gene science"],
        }
    )
    plain = MapVerifier(verifier, encoder=tiny_encoder)(frame).set_index("docno")["score"]
    base = MaxSim(tiny_encoder)(frame).set_index("docno")["score"]
    penalised = MapVerifier(verifier, encoder=tiny_encoder, penalty={"beta": 0.5, "tau": 0.9})(frame)
    penalised = penalised.set_index("docno")["score"]
    expected = base - 0.5 * torch.sigmoid(20 * (torch.tensor(base.to_numpy()) - 0.9)).numpy() * (1 - plain)
    assert penalised.to_numpy() == pytest.approx(expected.to_numpy(), abs=1e-5)
    assert (penalised <= base + 1e-6).all()


def test_pooled_trains_end_to_end_on_the_mean_states(tmp_path, tiny_model_dir):
    from pyterrier_compverify import PooledCosine, TokenEncoder

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    cfg = config(head="Pooled", mode="end-to-end", steps=3)
    verifier, log = train_verifier(ROWS, tmp_path / "pooled", encoder=encoder, config=cfg, verbose=False)
    assert len(log) == 3 and all(torch.isfinite(torch.tensor(e["loss"])) for e in log)
    reranker = verifier.reranker()
    assert isinstance(reranker, PooledCosine)
    frame = pd.DataFrame({"qid": ["1"], "query": ["a red cat"], "docno": ["a"], "text": ["a red cat"]})
    assert reranker(frame)["score"].iloc[0] == pytest.approx(1.0, abs=1e-5)


def test_a_finished_run_is_loaded_not_trained_further(tmp_path, tiny_encoder):
    cfg = config(head="F3", head_config={"channels": [4, 8]}, steps=3)  # F3 has BatchNorm statistics
    first, first_log = train_verifier(ROWS, tmp_path / "f3", encoder=tiny_encoder, config=cfg, verbose=False)
    weights = {k: v.clone() for k, v in first.load_head().state_dict().items()}
    again, log = train_verifier(ROWS, tmp_path / "f3", encoder=tiny_encoder, config=cfg, verbose=False)
    assert first_log and log == first_log  # the finished run's log, read from its checkpoint (it was [])
    assert sorted(p.name for p in (tmp_path / "f3" / "checkpoints").iterdir())[-1] == "checkpoint-3"
    for k, v in again.load_head().state_dict().items():
        assert torch.equal(v, weights[k]), k


def test_compiled_head_trains_the_same_steps_and_saves_a_plain_head(tmp_path, tiny_encoder, monkeypatch):
    """``compile=True`` runs the head through torch.compile: the same losses up to float rounding, a checkpoint
    with the plain head's keys, an artifact that loads and serves like the eager one's."""
    steps = dict(steps=4, save_steps=2)
    _, eager = train_verifier(ROWS, tmp_path / "eager", encoder=tiny_encoder, config=config(**steps), verbose=False)
    compiled_calls = []
    real_compile = torch.compile
    # dynamo and AOT autograd trace the head as in training; inductor's C++ code generation (minutes on an AVX2
    # CPU, and not what this test is about) is left out
    compile_traced = lambda m, **kw: compiled_calls.append(m) or real_compile(m, backend="aot_eager", **kw)  # noqa: E731
    monkeypatch.setattr(torch, "compile", compile_traced)
    compiled, log = train_verifier(
        ROWS, tmp_path / "compiled", encoder=tiny_encoder, config=config(compile=True, **steps), verbose=False
    )
    assert len(compiled_calls) == 1 and compiled_calls[0].head_name == "F4"  # the head, and it really compiled
    torch.testing.assert_close([e["loss"] for e in log], [e["loss"] for e in eager], rtol=1e-3, atol=1e-4)
    plain, head = Verifier(tmp_path / "eager").load_head().state_dict(), compiled.load_head().state_dict()
    assert head.keys() == plain.keys() and not any("_orig_mod" in k for k in head)
    for key, value in plain.items():
        torch.testing.assert_close(head[key], value, rtol=1e-3, atol=1e-4)


def test_a_replica_of_the_model_scores_with_its_own_head():
    """``DataParallel`` copies a module's attributes shallowly and replaces its submodules: a replica must score
    with its own copy of the head, not the compiled original (which lives outside the module tree)."""
    from pyterrier_compverify.scoring import build_head
    from pyterrier_compverify.training.verifier import VerifierModel

    for compile in (False, True):
        model = VerifierModel(torch.nn.Identity(), build_head("F4", dim=8), compile=compile)
        assert (model.scorer is not model.head) == compile  # compiled: the wrapper of this very head
        replica = model._replicate_for_data_parallel()
        replica._modules["head"] = build_head("F4", dim=8)
        assert replica.scorer is replica.head


def test_evaluate_reranks_with_a_fine_tuned_verifiers_own_encoder_and_store(tmp_path, tiny_model_dir):
    """``compverify evaluate --rerankers FOLDER`` with a fine-tuned verifier: its own encoder (at the run's max
    length) and a store built by that encoder; the run's store, made by the base encoder, would be refused."""
    from types import SimpleNamespace

    from pyterrier_compverify import TokenEncoder, TokenStore
    from pyterrier_compverify.evaluate import build_rerankers

    encoder = TokenEncoder(tiny_model_dir, max_length=16, device="cpu")
    verifier, _ = train_verifier(
        ROWS, tmp_path / "e2e", encoder=encoder, config=config(mode="end-to-end", steps=2), verbose=False
    )
    asked = TokenEncoder(tiny_model_dir, max_length=40, device="cpu", batch_size=3)
    docs = [{"docno": "a", "text": "a red cat"}, {"docno": "b", "text": "a blue cat"}]
    base_store = TokenStore(tmp_path / "base.tokens")
    base_store.indexer(asked, verbose=False).index(docs)
    built = []

    def store_for(own):
        built.append(TokenStore(tmp_path / "own.tokens"))
        built[-1].indexer(own, verbose=False).index(docs)
        return built[-1]

    indices = SimpleNamespace(store=base_store)
    reranker = build_rerankers([str(tmp_path / "e2e")], asked, indices, store_for=store_for)[str(tmp_path / "e2e")]
    assert len(built) == 1 and reranker.store is built[0]
    assert reranker.encoder.fingerprint == verifier.meta["encoder"]["fingerprint"] != asked.fingerprint
    assert reranker.encoder.max_length == 40 and reranker.encoder.batch_size == 3
    frame = pd.DataFrame({"qid": "1", "query": "a red cat", "docno": ["a", "b"]})
    assert reranker(frame)["score"].notna().all()
    with pytest.raises(ValueError, match="fingerprint"):
        build_rerankers([str(tmp_path / "e2e")], asked, indices)


def test_a_second_run_into_a_folder_in_use_is_refused_at_once(tmp_path, tiny_encoder):
    """Two runs into one folder: the second replaced the first's record until it had checkpoints, and a rerun then
    loaded the other's model as its own (review 50-f). The folder's run lock refuses the second."""
    from pyterrier_compverify.artifacts import BuildBusyError, build_lock

    with build_lock(tmp_path / "v.compverify-run"), pytest.raises(BuildBusyError, match="another run is writing to"):
        train_verifier(ROWS, tmp_path / "v", encoder=tiny_encoder, config=config(seed=8), verbose=False)
    assert not (tmp_path / "v").exists()
    train_verifier(ROWS, tmp_path / "v", encoder=tiny_encoder, config=config(steps=1), verbose=False)
    assert not list(tmp_path.glob(".*.lock"))  # released
