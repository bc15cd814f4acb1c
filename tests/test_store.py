import json

import numpy as np
import pandas as pd
import pyterrier as pt
import pyterrier_alpha as pta
import pytest

from pyterrier_compverify import CorruptStoreError, TokenStore

DOCS = [
    {"docno": "d1", "text": "a dog chases a cat"},
    {"docno": "d2", "text": "the cat chases the dog"},
    {"docno": "d3", "text": ""},
    {"docno": "d4", "text": "图片显示猫"},
    {"docno": "d5", "text": "protein " * 100},
]


@pytest.fixture
def store(tmp_path, tiny_encoder):
    return TokenStore(tmp_path / "docs.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)


def test_round_trip_matches_encoder_in_fp16(store, tiny_encoder):
    expected = tiny_encoder.encode([d["text"] for d in DOCS]).token_states
    got = store.token_states(["d4", "d1", "d5"])
    for g, e in zip(got, [expected[3], expected[0], expected[4]]):
        assert g.dtype == np.float16 and g.shape == tuple(e.shape)
        np.testing.assert_allclose(g.astype(np.float32), e.numpy(), atol=2e-3)
    assert len(store) == 5 and store.docnos() == [d["docno"] for d in DOCS]
    assert store.encoder_info == tiny_encoder.describe()


def test_loads_through_pt_artifact(store):
    loaded = pt.Artifact.load(str(store.path))
    assert isinstance(loaded, TokenStore) and len(loaded) == 5


def test_unknown_docno(store):
    with pytest.raises(KeyError, match="nope"):
        store.token_states(["d1", "nope"])


def test_duplicate_docnos_refused_and_nothing_left(tmp_path, tiny_encoder):
    path = tmp_path / "dup.tokens"
    with pytest.raises(ValueError, match="duplicate docno 'd1'"):
        TokenStore(path).indexer(tiny_encoder, verbose=False).index(DOCS + [{"docno": "d1", "text": "again"}])
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_interrupted_build_leaves_no_store(tmp_path, tiny_encoder):
    def killed():
        yield from DOCS
        raise KeyboardInterrupt

    path = tmp_path / "killed.tokens"
    with pytest.raises(KeyboardInterrupt):
        TokenStore(path).indexer(tiny_encoder, verbose=False).index(killed())
    assert not TokenStore(path).built() and list(tmp_path.iterdir()) == []


def test_missing_text_field_names_it(tmp_path, tiny_encoder):
    with pytest.raises(KeyError, match="'text'"):
        TokenStore(tmp_path / "s").indexer(tiny_encoder, verbose=False).index([{"docno": "d1", "body": "x"}])


def test_nan_text_named(tmp_path, tiny_encoder):
    with pytest.raises(ValueError, match="missing"):
        TokenStore(tmp_path / "s").indexer(tiny_encoder, verbose=False).index([{"docno": "d1", "text": None}])


def test_existing_store_not_overwritten_silently(store, tiny_encoder):
    with pytest.raises(FileExistsError, match=r"already exists; pass mode='overwrite' to rebuild it$"):
        TokenStore(store.path).indexer(tiny_encoder, verbose=False).index(DOCS)
    TokenStore(store.path).indexer(tiny_encoder, verbose=False, mode="overwrite").index(DOCS[:2])
    assert len(TokenStore(store.path)) == 2
    # pyterrier-alpha's enum, as pyterrier-dr's FlexIndex.indexer takes it
    TokenStore(store.path).indexer(tiny_encoder, verbose=False, mode=pta.ArtifactBuilderMode.overwrite).index(DOCS)
    assert len(TokenStore(store.path)) == len(DOCS)


def test_mode_is_checked_before_any_work_and_the_old_overwrite_flag_still_works(store, tiny_encoder):
    for mode in ("append", "reuse", pta.ArtifactBuilderMode.append):
        with pytest.raises(ValueError, match="mode must be 'create' or 'overwrite', got '(append|reuse)'"):
            TokenStore(store.path).indexer(tiny_encoder, mode=mode)
        with pytest.raises(ValueError, match="mode must be 'create' or 'overwrite'"):
            store.recode(store.path.with_name("copy.tokens"), "bf16", mode=mode)
    with pytest.warns(DeprecationWarning, match="mode='overwrite'"):
        indexer = TokenStore(store.path).indexer(tiny_encoder, verbose=False, overwrite=True)
    indexer.index(DOCS[:1])
    assert len(TokenStore(store.path)) == 1
    with pytest.warns(DeprecationWarning), pytest.raises(FileExistsError):
        TokenStore(store.path).indexer(tiny_encoder, verbose=False, overwrite=False).index(DOCS)
    with pytest.raises(ValueError, match="pass mode='overwrite' or overwrite=False, not both"):
        TokenStore(store.path).indexer(tiny_encoder, mode="overwrite", overwrite=False)


def test_truncated_file_is_a_clear_error(store):
    states = store.path / "states.f16"
    states.write_bytes(states.read_bytes()[:-10])
    with pytest.raises(CorruptStoreError, match="truncated"):
        TokenStore(store.path).token_states(["d1"])


def test_bad_metadata_is_a_clear_error(store):
    (store.path / "pt_meta.json").write_text("{not json")
    with pytest.raises(CorruptStoreError, match="pt_meta.json"):
        len(TokenStore(store.path))


def test_foreign_artifact_refused(store):
    meta = json.loads((store.path / "pt_meta.json").read_text())
    (store.path / "pt_meta.json").write_text(json.dumps({**meta, "type": "dense_index"}))
    with pytest.raises(CorruptStoreError, match="dense_index"):
        len(TokenStore(store.path))


def test_no_store_yet(tmp_path):
    with pytest.raises(FileNotFoundError, match="indexer"):
        len(TokenStore(tmp_path / "none"))


def test_one_pass_fills_flex_index(tmp_path, tiny_encoder, monkeypatch):
    from pyterrier_dr import FlexIndex

    calls = []
    original = type(tiny_encoder).encode

    def counting_encode(self, texts, **kw):
        calls.append(len(texts))
        return original(self, texts, **kw)

    monkeypatch.setattr(type(tiny_encoder), "encode", counting_encode)
    flex = FlexIndex(str(tmp_path / "docs.flex"), verbose=False)
    TokenStore(tmp_path / "docs.tokens").indexer(tiny_encoder, flex_index=flex, verbose=False).index(DOCS)
    assert sum(calls) == len(DOCS)  # one encoder forward per document serves both
    monkeypatch.undo()
    vecs = tiny_encoder.encode([d["text"] for d in DOCS]).pooled.numpy()
    stored_docnos, stored_vecs, _ = flex.payload()
    assert list(stored_docnos) == [d["docno"] for d in DOCS]
    np.testing.assert_allclose(np.asarray(stored_vecs), vecs, atol=1e-5)
    res = (tiny_encoder >> flex.retriever(num_results=2))(pd.DataFrame({"qid": ["q"], "query": ["dog"]}))
    assert len(res) == 2


def test_padded_states_match_token_states(store):
    x, mask = store.padded_states(["d5", "d3", "d1"])
    rows = store.token_states(["d5", "d3", "d1"])
    assert x.shape == (3, max(r.shape[0] for r in rows), rows[0].shape[1])
    for i, r in enumerate(rows):
        assert int(mask[i].sum()) == r.shape[0]
        np.testing.assert_array_equal(x[i, : r.shape[0]].numpy(), r.astype(np.float32))
        assert (x[i, r.shape[0] :] == 0).all()


def test_similarity_map_from_packed_rows_matches_padded(store, tiny_encoder):
    import torch

    from pyterrier_compverify.scoring import similarity_map, similarity_map_packed

    query = tiny_encoder.encode(["a dog chases a cat"]).token_states[0]
    packed, mask = store.packed_states(["d5", "d3", "d1"])
    assert packed.dtype == torch.float16 and packed.shape[0] == int(mask.sum())
    sim = similarity_map_packed(query, packed, mask, block=7)  # blocks smaller than a document
    x, expected_mask = store.padded_states(["d5", "d3", "d1"])
    assert torch.equal(mask, expected_mask)
    torch.testing.assert_close(sim, similarity_map(query, x), atol=1e-5, rtol=1e-5)


def test_pickling_a_store_keeps_its_path_not_its_states(store, tiny_model_dir):
    import pickle

    from pyterrier_compverify import MaxSim, TokenEncoder

    # a fresh encoder: the shared fixture may carry hooks other tests installed, which do not pickle
    tiny_encoder = TokenEncoder(tiny_model_dir, max_length=16, batch_size=4, device="cpu")

    data = pickle.dumps(store)
    assert len(data) < 2_000 < (store.path / "states.f16").stat().st_size  # the path, not the memory map
    again = pickle.loads(data)
    assert again.docnos() == store.docnos()
    frame = pd.DataFrame({"qid": "q", "query": "dog chases cat", "docno": ["d1", "d2"]})
    reranker = MaxSim(tiny_encoder, store=store)
    copy = pickle.loads(pickle.dumps(reranker))
    np.testing.assert_allclose(copy(frame)["score"], reranker(frame)["score"])


def test_the_indexers_batch_size_is_the_encoders_batch(tmp_path, tiny_encoder, monkeypatch):
    sizes = []
    encode = tiny_encoder.encode

    def spy(texts, **kw):
        sizes.append(kw.get("batch_size"))
        return encode(texts, **kw)

    monkeypatch.setattr(tiny_encoder, "encode", spy)
    TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, verbose=False, batch_size=2).index(DOCS)
    assert sizes and set(sizes) == {2}  # e.g. to fit a GPU's memory; not only the chunking
