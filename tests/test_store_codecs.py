"""TokenStore codecs (bf16, int8 with a per-token scale, product quantisation): round-trip error, metadata, every
reranker reading a coded store, bytes per token, damaged files, refused codecs."""

import json

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify import CorruptStoreError, TokenStore
from pyterrier_compverify.scoring import build_head
from pyterrier_compverify.store_codecs import decode_pq_numpy

pytest.importorskip("faiss", reason="the pq codec trains with faiss: pip install faiss-cpu")

WORDS = "a the dog cat chases is not on under left right big small red blue man woman tall short science".split()
RNG = np.random.default_rng(0)
DOCS = [{"docno": f"d{i}", "text": " ".join(RNG.choice(WORDS, size=12))} for i in range(40)]  # 480 tokens


@pytest.fixture(scope="module")
def stores(tmp_path_factory, tiny_encoder):
    """The same corpus as fp16 (the reference), bf16, int8 and pq (m=8: 4 values per byte) stores."""
    root = tmp_path_factory.mktemp("codecs")
    fp16 = TokenStore(root / "fp16.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)
    bf16 = TokenStore(root / "bf16.tokens").indexer(tiny_encoder, verbose=False, codec="bf16").index(DOCS)
    int8 = TokenStore(root / "int8.tokens").indexer(tiny_encoder, verbose=False, codec="int8").index(DOCS)
    pq = TokenStore(root / "pq.tokens").indexer(tiny_encoder, verbose=False, codec={"name": "pq", "m": 8}).index(DOCS)
    return {"fp16": fp16, "bf16": bf16, "int8": int8, "pq": pq}


def reference_states(tiny_encoder):
    return [s.numpy() for s in tiny_encoder.encode([d["text"] for d in DOCS]).token_states]


def test_int8_round_trip_within_half_a_step(stores, tiny_encoder):
    docnos = [d["docno"] for d in DOCS]
    for got, expected in zip(stores["int8"].token_states(docnos), reference_states(tiny_encoder)):
        assert got.dtype == np.float32 and got.shape == expected.shape
        step = np.abs(expected).max(axis=1, keepdims=True) / 127  # coded from the fp16 rows: their rounding too
        assert (np.abs(got - expected) <= step / 2 + np.abs(expected) * 2.0**-11 + 1e-6).all()


def test_bf16_keeps_each_value_rounded_to_bf16(stores, tiny_encoder):
    """Indexing rounds the encoder's float32 states (not their fp16 copy); recoding an fp16 store rounds its
    values."""
    docnos = [d["docno"] for d in DOCS]
    for got, states in zip(stores["bf16"].token_states(docnos), reference_states(tiny_encoder)):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, torch.from_numpy(states).to(torch.bfloat16).float().numpy())
        assert not np.array_equal(got, states)  # 8 significant bits: really bf16
    recoded = stores["fp16"].recode(stores["fp16"].path.with_name("recoded.bf16.tokens"), "bf16", verbose=False)
    for got, fp16 in zip(recoded.token_states(docnos), stores["fp16"].token_states(docnos)):
        expected = torch.from_numpy(np.asarray(fp16, dtype=np.float32)).to(torch.bfloat16).float().numpy()
        np.testing.assert_array_equal(got, expected)


def test_indexing_codes_the_float32_states_directly(stores, tiny_encoder):
    """A codec without a model codes each document's float32 states as the encoder gives them (no fp16 step)."""
    docnos = [d["docno"] for d in DOCS]
    for name in ("fp16", "bf16", "int8"):
        codec = cv.store_codecs.resolve_codec(name)
        for got, states in zip(stores[name].token_states(docnos), reference_states(tiny_encoder)):
            expected = codec.decode_rows(codec.encode_block(states))
            np.testing.assert_array_equal(np.asarray(got, dtype=np.float32), np.asarray(expected, dtype=np.float32))


def test_bf16_gather_hands_rows_to_torch_as_stored(stores):
    store = stores["bf16"]
    starts, ends = store.row_ranges(["d5", "d0", "d5"])
    rows = store.gather(starts, ends)
    assert rows.dtype == torch.bfloat16 and rows.shape == (int((ends - starts).sum()), 32)
    np.testing.assert_array_equal(rows.float().numpy(), np.concatenate(store.token_states(["d5", "d0", "d5"])))
    assert store.gather(starts[:0], ends[:0]).shape == (0, 32)
    rows.zero_()  # a copy of its own: writing it leaves the memory-mapped store alone
    assert np.abs(np.concatenate(store.token_states(["d5"]))).max() > 0


@pytest.mark.parametrize("reranker", ["MaxSim", "MapVerifier"])
def test_bf16_reranker_multiplies_a_bf16_store_as_stored(stores, tiny_encoder, trained_rerankers, reranker):
    """A bf16 reranker takes the bf16 rows into its product unconverted: the same scores as float32 over those
    rows, up to the query's rounding to bf16."""
    frame = pd.DataFrame({"qid": "q1", "query": DOCS[3]["text"], "docno": [d["docno"] for d in DOCS], "score": 0.0})
    scores = {}
    for dtype in ("float32", "bfloat16"):
        if reranker in trained_rerankers:
            made = trained_rerankers[reranker](stores["bf16"], dtype=dtype)
        else:
            made = cv.MaxSim(tiny_encoder, store=stores["bf16"], dtype=dtype)
        scores[dtype] = made(frame)["score"].to_numpy()
    np.testing.assert_allclose(scores["bfloat16"], scores["float32"], rtol=0, atol=5e-3)
    assert not np.array_equal(scores["bfloat16"], scores["float32"])  # really a reduced-precision product


def test_pq_round_trip_keeps_cosines(stores, tiny_encoder):
    got = np.concatenate(stores["pq"].token_states([d["docno"] for d in DOCS]))
    expected = np.concatenate(reference_states(tiny_encoder))
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)  # decoded rows are unit length again
    cosines = (got * expected).sum(axis=1)
    assert cosines.mean() > 0.9 and cosines.min() > 0.5
    assert cosines.mean() < 0.9999  # lossy: the test would notice a codec that stored fp16 under another name


def test_pq_decodes_alike_with_and_without_faiss(stores):
    store = TokenStore(stores["pq"].path)
    store._load()
    pq = store._states.codec
    codes = np.asarray(store._states.arrays["codes.pq"][:50])
    np.testing.assert_allclose(pq._quantiser().decode(codes), decode_pq_numpy(pq.centroids, codes), atol=1e-6)


def test_pq_encodes_alike_with_and_without_faiss_and_stored_form_needs_no_gather_first(stores, monkeypatch):
    """stored_form (the query's rows as the store holds them) encoded with faiss only once a decode had built the
    quantiser, and not at all without faiss, which reading a pq store does not need (review 50-e)."""
    import torch

    from pyterrier_compverify.store_codecs import encode_pq_numpy

    rows = np.concatenate(TokenStore(stores["pq"].path).token_states([d["docno"] for d in DOCS]))
    fresh = TokenStore(stores["pq"].path)
    with_faiss = fresh.stored_form(torch.from_numpy(rows))  # before any gather
    centroids = fresh._states.codec.centroids
    codes = fresh._states.codec._quantiser().compute_codes(np.ascontiguousarray(rows))
    assert (codes == encode_pq_numpy(centroids, rows)).mean() > 0.999  # the same nearest centroid, but near-ties
    monkeypatch.setitem(__import__("sys").modules, "faiss", None)  # import faiss now fails
    without = TokenStore(stores["pq"].path).stored_form(torch.from_numpy(rows))
    same_rows = ((without - with_faiss).abs().amax(dim=1) < 1e-5).float().mean()
    assert same_rows > 0.99


def test_metadata_records_codec_and_loads_through_pt_artifact(stores):
    assert stores["fp16"].codec == {"name": "fp16"} and stores["int8"].codec == {"name": "int8"}
    assert stores["bf16"].codec == {"name": "bf16"}
    assert stores["pq"].codec == {"name": "pq", "m": 8, "nbits": 8, "sample": 65536, "seed": 0, "normalise": True}
    meta = json.loads((stores["pq"].path / "pt_meta.json").read_text())
    assert meta["format"] == "pq" and set(meta["sha256"]) == {
        "codes.pq",
        "pq_centroids.npy",
        "offsets.npy",
        "docnos.npids",
    }
    for name, store in stores.items():
        loaded = pt.Artifact.load(str(store.path))
        assert isinstance(loaded, TokenStore) and loaded.codec == store.codec and len(loaded) == len(DOCS)
        loaded.verify()
        assert pt.inspect.artifact_type_format(TokenStore(store.path)) == ("token_store", name)  # not yet opened
        assert pt.inspect.artifact_type_format(loaded) == ("token_store", name)
    assert pt.inspect.artifact_type_format(TokenStore) == ("token_store", "fp16")  # a new store's default


def test_bytes_per_token(stores):
    num_tokens = stores["fp16"].meta["num_tokens"]
    sizes = {name: {p.name: p.stat().st_size for p in store.path.iterdir()} for name, store in stores.items()}
    assert sizes["fp16"]["states.f16"] == num_tokens * 32 * 2
    assert sizes["bf16"]["states.bf16"] == num_tokens * 32 * 2
    assert sizes["int8"]["states.i8"] + sizes["int8"]["scales.f32"] == num_tokens * (32 + 4)
    assert sizes["pq"]["codes.pq"] == num_tokens * 8
    assert not any("states.f16" in sizes[name] for name in ("bf16", "int8", "pq"))
    assert cv.store_codecs.resolve_codec("pq").bytes_per_token(384) == 96


def test_recode_equals_indexing_with_the_codec(stores, tmp_path):
    # pq is trained on a sample of the fp16 states when indexing too: recoding gives the same bytes (no
    # re-encoding, a seeded sample); bf16 and int8 code the float32 states when indexing, the fp16 ones here
    for name, codec in (("bf16", "bf16"), ("int8", "int8"), ("pq", {"name": "pq", "m": 8})):
        recoded = stores["fp16"].recode(tmp_path / f"{name}.tokens", codec=codec, verbose=False)
        assert recoded.codec == stores[name].codec and recoded.docnos() == stores[name].docnos()
        for file in stores[name].path.iterdir():
            if name == "pq" or file.name in ("offsets.npy", "docnos.npids"):
                assert (recoded.path / file.name).read_bytes() == file.read_bytes(), file.name
    back = TokenStore(tmp_path / "int8.tokens").recode(tmp_path / "back.tokens", codec="fp16", verbose=False)
    assert back.codec == {"name": "fp16"} and back.token_states(["d1"])[0].dtype == np.float16


@pytest.fixture(scope="module")
def trained_rerankers(tmp_path_factory, tiny_encoder):
    root = tmp_path_factory.mktemp("verifiers")
    torch.manual_seed(0)  # the heads' random weights: the same whichever tests ran before (the bf16 check's margin)
    saved = {h: cv.Verifier.save(root / h, tiny_encoder, build_head(h, dim=32), h) for h in ("F3", "F4")}
    return {
        "MapVerifier": lambda store, **kw: cv.MapVerifier(saved["F4"], encoder=tiny_encoder, store=store, **kw),
        "MapCNN": lambda store, **kw: cv.MapCNN(saved["F3"], encoder=tiny_encoder, store=store, **kw),
    }


@pytest.mark.parametrize("codec", ["bf16", "int8", "pq"])
@pytest.mark.parametrize(
    "reranker", ["MaxSim", "BagOfSimilarities", "SoftAlign", "PooledCosine", "MapVerifier", "MapCNN"]
)
def test_every_reranker_reads_a_coded_store(stores, tiny_encoder, trained_rerankers, codec, reranker):
    def make(store):
        if reranker in trained_rerankers:
            return trained_rerankers[reranker](store)
        return getattr(cv, reranker)(tiny_encoder, store=store)

    frame = pd.DataFrame(
        {"qid": "q1", "query": DOCS[0]["text"], "docno": [d["docno"] for d in DOCS[:10]], "score": 0.0, "x": 1}
    )
    reference = make(stores["fp16"])(frame)
    out = make(stores[codec])(frame)
    assert list(out.columns) == list(reference.columns) and list(out["docno"]) == list(reference["docno"])
    tolerance = {"bf16": 0.01, "int8": 0.02, "pq": 0.2}[codec]
    np.testing.assert_allclose(out["score"], reference["score"], atol=tolerance)
    assert not np.array_equal(out["score"], reference["score"])  # the coded rows were read, not the fp16 ones


def test_padded_and_packed_states_decode_alike(stores):
    docnos = ["d3", "d0", "d7"]
    for name in ("int8", "pq"):
        packed, mask = stores[name].packed_states(docnos)
        padded, padded_mask = stores[name].padded_states(docnos)
        assert packed.dtype == padded.dtype == torch.float32
        np.testing.assert_array_equal(padded[padded_mask].numpy(), packed.numpy())
        np.testing.assert_array_equal(np.concatenate(stores[name].token_states(docnos)), packed.numpy())


@pytest.mark.parametrize(
    ("codec", "file", "damage", "match"),
    [
        ("bf16", "states.bf16", "truncate", "truncated"),
        ("bf16", "states.bf16", "remove", "missing"),
        ("int8", "states.i8", "truncate", "truncated"),
        ("int8", "scales.f32", "remove", "missing"),
        ("pq", "codes.pq", "truncate", "truncated"),
        ("pq", "pq_centroids.npy", "garbage", "cannot be read"),
        ("pq", "pq_centroids.npy", "remove", "cannot be read"),
    ],
)
def test_damaged_codec_file_names_it(stores, tmp_path, codec, file, damage, match):
    copy = stores["fp16"].recode(
        tmp_path / "c.tokens",
        codec={"bf16": "bf16", "int8": "int8", "pq": {"name": "pq", "m": 8}}[codec],
        verbose=False,
    )
    path = copy.path / file
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-3])
    elif damage == "remove":
        path.unlink()
    else:
        path.write_bytes(b"not a numpy file")
    with pytest.raises(CorruptStoreError, match=match) as caught:
        TokenStore(copy.path).token_states(["d1"])
    assert file in str(caught.value)


def test_flipped_code_bytes_found_by_verify(stores, tmp_path):
    copy = stores["fp16"].recode(tmp_path / "c.tokens", codec={"name": "pq", "m": 8}, verbose=False)
    data = bytearray((copy.path / "codes.pq").read_bytes())
    data[5] ^= 0xFF
    (copy.path / "codes.pq").write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="codes.pq"):
        TokenStore(copy.path).verify()


def test_bad_codec_entry_in_metadata_names_the_file(stores, tmp_path):
    copy = stores["fp16"].recode(tmp_path / "c.tokens", codec="int8", verbose=False)
    meta = json.loads((copy.path / "pt_meta.json").read_text())
    (copy.path / "pt_meta.json").write_text(json.dumps({**meta, "codec": {"name": "int3"}}))
    with pytest.raises(CorruptStoreError, match="pt_meta.json.*int3"):
        len(TokenStore(copy.path))


@pytest.mark.parametrize(
    "codec",
    [
        "int4",
        ["int8"],
        {"name": "pq", "m": 5},
        {"name": "pq", "bits": 4},
        {"name": "pq", "sample": 100},  # fewer than the 256 centroids: before, refused only after encoding
        {"name": "pq", "sample": 1000.5},
        {"name": "pq", "seed": -1},
    ],
)
def test_unknown_codec_refused_in_one_line_before_any_work(stores, tiny_encoder, tmp_path, codec):
    with pytest.raises(ValueError) as caught:
        TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, verbose=False, codec=codec)
    assert "\n" not in str(caught.value) and "codec" in str(caught.value)
    with pytest.raises(ValueError, match="codec"):
        stores["fp16"].recode(tmp_path / "r.tokens", codec=codec, verbose=False)
    assert list(tmp_path.iterdir()) == []


def test_unknown_codec_names_the_choices(tiny_encoder, tmp_path):
    with pytest.raises(ValueError, match="unknown store codec 'int4': choose one of 'fp16', 'bf16', 'int8', 'pq'"):
        TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, codec="int4")


def test_pq_on_too_small_a_corpus_says_what_to_use(tiny_encoder, tmp_path):
    with pytest.raises(ValueError, match="codec='int8'"):
        TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, verbose=False, codec="pq").index(DOCS[:2])
    assert not TokenStore(tmp_path / "s.tokens").built()


def test_recode_in_place_refused(stores, monkeypatch):
    with pytest.raises(ValueError, match="in place"):
        stores["int8"].recode(stores["int8"].path, codec="pq", mode="overwrite")
    monkeypatch.setenv("HOME", str(stores["int8"].path.parent))  # the same folder as "~/...", which TokenStore reads
    with pytest.raises(ValueError, match="in place"):
        stores["int8"].recode(f"~/{stores['int8'].path.name}", codec="pq", mode="overwrite")
