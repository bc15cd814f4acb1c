"""bf16 encoding against fp32: tolerance of states and pooled vectors (tiny model), the dtype really run, stores
and query states shared across dtypes, and the same rankings on a real collection (MiniLM, Cranfield)."""

import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.encoder import check_dtype, default_dtype, fast_bf16, native_bf16
from pyterrier_compverify.spec import EncoderSpec

TEXTS = [
    "a dog chases a cat",
    "the man greeted the tall woman on the left",
    "",
    "中文本图片显示猫",
    "big red dog " * 20,
    "the cell protein is not a gene",
]


@pytest.fixture(scope="module")
def encoders(tiny_model_dir):
    make = lambda dtype: cv.TokenEncoder(tiny_model_dir, max_length=16, batch_size=4, device="cpu", dtype=dtype)  # noqa: E731
    return make("fp32"), make("bf16")


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


def test_bf16_pooled_and_token_states_close_to_fp32(encoders):
    fp32, bf16 = (enc.encode(TEXTS) for enc in encoders)
    assert bf16.pooled.dtype == torch.float32 and bf16.token_states[0].dtype == torch.float32
    assert cosine(bf16.pooled, fp32.pooled).min().item() >= 0.999
    for a, b in zip(bf16.token_states, fp32.token_states):
        assert a.shape == b.shape
        assert cosine(a, b).min().item() >= 0.999
        assert torch.allclose(a, b, atol=0.02)
        assert torch.allclose(a.norm(dim=-1), torch.ones(len(a)), atol=1e-5)  # normalised in fp32


def test_bf16_differs_from_fp32(encoders):
    """The tolerance test above cannot pass by both encoders running the same path."""
    fp32, bf16 = (enc.encode(TEXTS) for enc in encoders)
    assert not torch.equal(torch.cat(fp32.token_states), torch.cat(bf16.token_states))


def linear_input_dtypes(encoder) -> set:
    """The dtypes that reach the transformer's Linear layers during one encode call."""
    seen = set()
    module = encoder._bf16_first_module if encoder.dtype == "bf16" else encoder.model[0]
    hooks = [
        m.register_forward_hook(lambda mod, args, out: seen.add(args[0].dtype))
        for m in module.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    try:
        encoder.encode(TEXTS[:2])
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def test_each_dtype_really_runs_its_precision(encoders):
    fp32, bf16 = encoders
    assert linear_input_dtypes(fp32) == {torch.float32}
    assert linear_input_dtypes(bf16) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in bf16.model.parameters())  # the trainable weights stay fp32


def test_dtype_option_and_default(monkeypatch):
    monkeypatch.delenv("COMPVERIFY_DTYPE", raising=False)  # the timed default, not the user's fixed one
    assert check_dtype("bfloat16") == "bf16" and check_dtype(torch.float32) == "fp32"
    for wrong in ("fp16", ["bf16"], {"bf16"}, 16):  # a list or set: the same one-line error, not a TypeError
        with pytest.raises(ValueError, match="'bf16' or 'fp32'"):
            check_dtype(wrong)
    assert default_dtype(torch.device("cuda")) == "fp32"
    assert default_dtype(torch.device("cpu")) == ("bf16" if fast_bf16() else "fp32")


@pytest.mark.parametrize("fast", [True, False])
def test_bf16_is_the_cpu_default_only_where_it_is_faster(monkeypatch, fast):
    """bf16 is the CPU default only where its products are faster than fp32 (AMX, or measured so)."""
    import pyterrier_compverify.encoder as encoder_module

    monkeypatch.delenv("COMPVERIFY_DTYPE", raising=False)

    monkeypatch.setattr(encoder_module, "fast_bf16", lambda: fast)
    assert default_dtype(torch.device("cpu")) == ("bf16" if fast else "fp32")
    assert fast_bf16() <= native_bf16()  # fast implies native bf16


def test_fast_bf16_follows_the_measured_speedup_where_torch_sees_no_amx(monkeypatch):
    import pyterrier_compverify.encoder as encoder_module

    monkeypatch.setattr(encoder_module, "native_bf16", lambda: True)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    try:
        for speedup, fast in ((2.5, True), (0.6, False)):
            monkeypatch.setattr(encoder_module, "bf16_speedup", lambda s=speedup: s)
            encoder_module.fast_bf16.cache_clear()
            assert encoder_module.fast_bf16() is fast
        encoder_module.fast_bf16.cache_clear()
        monkeypatch.setattr(encoder_module, "native_bf16", lambda: False)
        assert encoder_module.fast_bf16() is False  # emulated bf16 is never measured
    finally:
        encoder_module.fast_bf16.cache_clear()  # no faked answer stays cached: the next caller measures again


def test_the_bf16_speed_check_leaves_the_global_random_state_alone():
    from pyterrier_compverify.encoder import bf16_speedup

    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    bf16_speedup(rows=8, size=16, repeats=1)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("native", [True, False])
def test_bf16_warns_only_on_a_cpu_that_emulates_it(monkeypatch, tiny_model_dir, native):
    """An AVX2-only CPU runs bf16 about 100x slower than fp32: asking for it there warns, with the fix."""
    import warnings

    import pyterrier_compverify.encoder as encoder_module

    monkeypatch.setattr(encoder_module, "native_bf16", lambda: native)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fp32 = cv.TokenEncoder(tiny_model_dir, device="cpu", dtype="fp32")
        cv.MaxSim(fp32)
    assert not [w for w in seen if "emulated" in str(w.message)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cv.TokenEncoder(tiny_model_dir, device="cpu", dtype="bf16")
        cv.MaxSim(fp32, dtype="bfloat16")
    emulated = [str(w.message) for w in seen if "emulated" in str(w.message)]
    assert len(emulated) == (0 if native else 2)
    assert all("use dtype='fp32'" in message for message in emulated)
    assert all(w.filename == __file__ for w in seen if "emulated" in str(w.message))  # points at the user's line


def test_the_emulated_bf16_warning_points_at_the_users_line_from_a_subclass(monkeypatch, tmp_path, tiny_model_dir):
    """MapVerifier reaches the warning three constructors deep; the warning still names this file, not rerank.py."""
    import warnings

    import pyterrier_compverify.encoder as encoder_module
    from pyterrier_compverify.scoring import build_head

    monkeypatch.setattr(encoder_module, "native_bf16", lambda: False)
    fp32 = cv.TokenEncoder(tiny_model_dir, device="cpu", dtype="fp32")
    verifier = cv.Verifier.save(tmp_path / "v", fp32, build_head("F4", dim=fp32.dim), "F4")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cv.MapVerifier(verifier, encoder=fp32, dtype="bf16")
    assert [w.filename for w in seen if "emulated" in str(w.message)] == [__file__]


def test_the_emulated_bf16_warning_skips_library_frames_to_the_users_line(monkeypatch, tiny_model_dir):
    """Built inside an installed library's code (as PyTerrier builds and runs pipelines), the warning still names the
    user's file, not the library's."""
    import os
    import sysconfig
    import warnings

    import pyterrier_compverify.encoder as encoder_module

    monkeypatch.setattr(encoder_module, "native_bf16", lambda: False)
    fp32 = cv.TokenEncoder(tiny_model_dir, device="cpu", dtype="fp32")
    library_file = os.path.join(sysconfig.get_paths()["purelib"], "some_library", "build.py")  # never written
    namespace = {}
    source = "def build(reranker, encoder):\n    return reranker(encoder, dtype='bf16')\n"
    exec(compile(source, library_file, "exec"), namespace)  # a library function that builds a reranker
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        namespace["build"](cv.MaxSim, fp32)
    assert [w.filename for w in seen if "emulated" in str(w.message)] == [__file__]


def test_same_spec_apart_from_the_recorded_dtype(encoders):
    fp32, bf16 = encoders
    assert fp32.spec.compatible(bf16.spec) and bf16.spec.compatible(fp32.spec)
    assert fp32.spec.key == bf16.spec.key and fp32.fingerprint == bf16.fingerprint
    assert (fp32.spec.dtype, bf16.spec.dtype) == ("fp32", "bf16")
    old = {k: v for k, v in bf16.describe().items() if k != "dtype"}  # a store made before dtypes were recorded
    assert EncoderSpec.from_dict(old).dtype == "fp32"
    assert "dtype='bf16'" in repr(bf16)


def test_bf16_copy_follows_weights_changed(tiny_model_dir):
    enc = cv.TokenEncoder(tiny_model_dir, max_length=16, device="cpu", dtype="bf16")
    before = enc.encode(TEXTS).pooled
    with torch.no_grad():
        for p in enc.model[0].parameters():
            p.add_(0.05 * torch.randn_like(p))
    enc.weights_changed()
    after = enc.encode(TEXTS).pooled
    enc.dtype = "fp32"
    reference = enc.encode(TEXTS).pooled
    assert cosine(after, reference).min().item() >= 0.999
    assert cosine(before, reference).min().item() < 0.999


def test_store_built_in_bf16_records_it_and_serves_an_fp32_reranker(encoders, tmp_path):
    fp32, bf16 = encoders
    docs = [{"docno": f"d{i}", "text": t} for i, t in enumerate(TEXTS)]
    store = cv.TokenStore(tmp_path / "bf16.tokens").indexer(bf16, verbose=False).index(docs)
    assert store.meta["encoder"]["dtype"] == "bf16"
    frame = pd.DataFrame([{"qid": "q", "query": "a red dog", "docno": d["docno"], "text": d["text"]} for d in docs])
    served = cv.MaxSim(fp32, store=store)(frame.drop(columns=["text"])).sort_values("docno")
    exact = cv.MaxSim(fp32)(frame).sort_values("docno")
    np.testing.assert_allclose(served["score"], exact["score"], atol=0.01)


def test_query_states_of_one_dtype_used_by_a_reranker_of_the_other(encoders):
    fp32, bf16 = encoders
    topics = pd.DataFrame({"qid": ["q"], "query": ["a red dog"]})
    with_toks = bf16.query_token_encoder()(topics)
    frame = with_toks.merge(pd.DataFrame({"docno": ["d0", "d1"], "text": TEXTS[:2]}), how="cross")
    frame = frame.assign(score=0.0, rank=0)
    calls = []
    original = fp32.encode
    fp32.encode = lambda texts, **kw: calls.append(kw.get("what")) or original(texts, **kw)
    try:
        cv.MaxSim(fp32)(frame)
    finally:
        del fp32.encode
    assert "query" not in calls and calls  # documents encoded, the bf16 query states reused


# ---- integration: real MiniLM on Cranfield ------------------------------------------------------------------------


def ndcg10(run: pd.DataFrame, qrels: pd.DataFrame) -> float:
    import ir_measures
    from ir_measures import nDCG

    run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10]


@pytest.mark.integration
@pytest.mark.skipif(
    not native_bf16(),
    reason="this CPU has no native bf16 (AVX-512 BF16 / AMX): emulated bf16 runs about 100x slower than fp32, so "
    "encoding Cranfield twice would take most of an hour; the tiny-model bf16 tests above still run",
)
def test_bf16_keeps_dense_and_maxsim_ndcg_on_cranfield(minilm, data_dir, tmp_path):
    """Cranfield (1,400 abstracts, 225 queries): nDCG@10 of dense and dense >> MaxSim (top 100) stay within 0.3
    point between a bf16 and an fp32 encoder, each with its own FlexIndex and TokenStore; and MaxSim in bf16 from
    the bf16 encoder's store recoded to the bf16 codec.

    Measured: dense 0.3552 (fp32) / 0.3542 (bf16), dense >> MaxSim 0.3542 / 0.3544 (AVX512-BF16 kernels); a
    broken bf16 path (wrong pooling, truncated states) moves nDCG@10 by whole points."""
    from pyterrier_dr import FlexIndex

    from pyterrier_compverify.datasets import load_collection

    collection = load_collection("irds:cranfield")
    docs, topics, qrels = list(collection.corpus_iter()), collection.topics(), collection.qrels()
    scores, pooled = {}, {}
    for dtype in ("fp32", "bf16"):
        enc = cv.TokenEncoder(device="cpu", dtype=dtype)
        flex = FlexIndex(str(tmp_path / f"{dtype}.flex"), verbose=False)
        store = cv.TokenStore(tmp_path / f"{dtype}.tokens").indexer(enc, flex_index=flex, verbose=False).index(docs)
        dense = enc.query_token_encoder() >> flex.retriever(num_results=100)
        first = dense(topics)
        reranked = cv.MaxSim(enc, store=store)(first)
        scores[dtype] = (ndcg10(first, qrels), ndcg10(reranked, qrels))
        pooled[dtype] = torch.from_numpy(np.array(flex.payload(return_docnos=False)[0]))
    # the bf16 encoder's store recoded to the bf16 codec, its rows multiplied as stored (bf16 product)
    rows = store.recode(tmp_path / "bf16-codec.tokens", codec="bf16", verbose=False)
    scores["bf16 store"] = (scores["bf16"][0], ndcg10(cv.MaxSim(enc, store=rows, dtype="bfloat16")(first), qrels))
    print(f"Cranfield nDCG@10 (dense, dense >> MaxSim): {scores}")  # shown with pytest -s
    assert cosine(pooled["bf16"], pooled["fp32"]).min().item() >= 0.999
    for name in ("bf16", "bf16 store"):
        for fp32_score, bf16_score in zip(scores["fp32"], scores[name]):
            assert abs(fp32_score - bf16_score) < 3e-3, scores
