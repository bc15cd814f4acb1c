"""int8 products of an int8 store's rows (``dtype="int8"`` on a reranker): the integer product against decoded
rows, rerankers over an int8 store within tolerance of float32 over the same rows, and the refusals."""

import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify import TokenStore
from pyterrier_compverify.scoring import build_head
from pyterrier_compverify.scoring.int8_rows import int8_product, quantise_rows
from pyterrier_compverify.scoring.packed_maxsim import packed_products

WORDS = "a the dog cat chases is not on under left right big small red blue man woman tall short science".split()
RNG = np.random.default_rng(1)
DOCS = [{"docno": f"d{i}", "text": " ".join(RNG.choice(WORDS, size=int(RNG.integers(3, 14))))} for i in range(30)]


@pytest.fixture(scope="module")
def stores(tmp_path_factory, tiny_encoder):
    root = tmp_path_factory.mktemp("int8")
    fp16 = TokenStore(root / "fp16.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)
    int8 = TokenStore(root / "int8.tokens").indexer(tiny_encoder, verbose=False, codec="int8").index(DOCS)
    return {"fp16": fp16, "int8": int8}


@pytest.mark.parametrize("d, k", [(32, 8), (32, 16), (12, 8), (32, 5)])  # _int_mm shapes, and the float fallback
def test_int8_product_is_the_product_of_the_decoded_rows(d, k):
    gen = torch.Generator().manual_seed(d + k)
    rows, query = quantise_rows(torch.randn(50, d, generator=gen)), quantise_rows(torch.randn(k, d, generator=gen))
    expected = rows.decode().double() @ query.decode().double().T
    torch.testing.assert_close(int8_product(rows, query).double(), expected, rtol=1e-6, atol=1e-6)


def test_quantise_rows_keeps_each_value_within_half_a_step():
    x = torch.randn(20, 32, generator=torch.Generator().manual_seed(0))
    rows = quantise_rows(x)
    assert rows.codes.dtype == torch.int8 and rows.codes.abs().max() == 127
    assert ((rows.decode() - x).abs() <= rows.scales[:, None] / 2 + 1e-7).all()


def test_packed_products_of_int8_rows_quantise_each_query_once():
    gen = torch.Generator().manual_seed(3)
    queries = torch.zeros(2, 5, 32)
    queries[0, :5], queries[1, :3] = torch.randn(5, 32, generator=gen), torch.randn(3, 32, generator=gen)
    rows = quantise_rows(torch.randn(40, 32, generator=gen))
    sims = packed_products(queries, rows, [0, 25, 40], torch.float32, block=7)  # blocks cut inside a query's rows
    assert sims.dtype == torch.float32 and sims.shape == (40, 8)
    for g, (first, last) in enumerate([(0, 25), (25, 40)]):
        expected = rows[first:last].decode() @ quantise_rows(queries[g]).decode().T
        torch.testing.assert_close(sims[first:last, :5], expected, rtol=1e-6, atol=1e-6)


def frame(query: str) -> pd.DataFrame:
    return pd.DataFrame({"qid": "q1", "query": query, "docno": [d["docno"] for d in DOCS], "score": 0.0, "x": 1})


@pytest.mark.parametrize("reranker", ["MaxSim", "MapVerifier"])
def test_int8_reranker_over_an_int8_store_is_close_to_float32(stores, tiny_encoder, tmp_path, reranker):
    """Within the query's quantisation of float32 over the same int8 rows, every column kept."""
    if reranker == "MapVerifier":
        saved = cv.Verifier.save(tmp_path / "f4", tiny_encoder, build_head("F4", dim=32), "F4")
        saved.set_default_penalty({"beta": 1.0, "tau": 0.5, "gate": "symmetric", "reference": "query"})
        make = lambda **kw: cv.MapVerifier(saved, encoder=tiny_encoder, store=stores["int8"], **kw)  # noqa: E731
    else:
        make = lambda **kw: cv.MaxSim(tiny_encoder, store=stores["int8"], **kw)  # noqa: E731
    inp = frame(DOCS[4]["text"])
    exact, fast = make()(inp), make(dtype="int8")(inp)
    assert list(fast.columns) == list(exact.columns) and list(fast["docno"]) == list(exact["docno"])
    np.testing.assert_allclose(fast["score"], exact["score"], rtol=0, atol=0.01)
    assert not np.array_equal(fast["score"], exact["score"])  # really the integer product
    assert fast.sort_values("rank")["docno"].iloc[0] == "d4"  # the query's own text still first


def test_int8_dtype_refused_without_an_int8_store(stores, tiny_encoder):
    with pytest.raises(ValueError, match="codec='int8'"):
        cv.MaxSim(tiny_encoder, store=stores["fp16"], dtype="int8")(frame("dog"))
    with_text = frame("dog").assign(text=[d["text"] for d in DOCS])
    with pytest.raises(ValueError, match="codec='int8'"):
        cv.MaxSim(tiny_encoder, dtype="int8")(with_text)


def test_int8_option_is_part_of_the_reranker_identity(stores, tiny_encoder):
    fast = cv.MaxSim(tiny_encoder, store=stores["int8"], dtype="int8")
    assert fast != cv.MaxSim(tiny_encoder, store=stores["int8"])
    assert fast == cv.MaxSim(tiny_encoder, store=stores["int8"], dtype="int8")
    import pyterrier as pt

    assert pt.inspect.transformer_attributes(fast)  # dtype read back
    assert {a.name: a.value for a in pt.inspect.transformer_attributes(fast)}["dtype"] == "int8"


def test_queries_of_different_lengths_in_one_pass(stores, tiny_encoder):
    """Several queries share a pass (each multiplied by its own width): each scored as when alone."""
    queries = {"q1": DOCS[2]["text"], "q2": "dog", "q3": DOCS[7]["text"] + " " + DOCS[9]["text"]}
    inp = pd.concat([frame(text).assign(qid=qid) for qid, text in queries.items()], ignore_index=True)
    together = cv.MaxSim(tiny_encoder, store=stores["int8"], dtype="int8")(inp)
    for qid, text in queries.items():
        alone = cv.MaxSim(tiny_encoder, store=stores["int8"], dtype="int8")(frame(text).assign(qid=qid))
        np.testing.assert_allclose(together[together["qid"] == qid]["score"], alone["score"], rtol=0, atol=1e-6)
    exact = cv.MaxSim(tiny_encoder, store=stores["int8"])(inp)
    np.testing.assert_allclose(together["score"], exact["score"], rtol=0, atol=0.01)


@pytest.mark.parametrize("reranker", ["SoftAlign", "BagOfSimilarities"])
def test_ungated_map_heads_read_int8_products(stores, tiny_encoder, reranker):
    inp = frame(DOCS[5]["text"])
    exact = getattr(cv, reranker)(tiny_encoder, store=stores["int8"])(inp)
    fast = getattr(cv, reranker)(tiny_encoder, store=stores["int8"], dtype="int8")(inp)
    np.testing.assert_allclose(fast["score"], exact["score"], rtol=0, atol=0.02)


def test_int8_rows_follow_the_queries_device():
    """Rows gathered on the CPU are moved to the queries' device block by block (meta: shapes only)."""
    rows = quantise_rows(torch.randn(20, 32))
    sims = packed_products(torch.randn(1, 8, 32, device="meta"), rows, [0, 20], torch.float32)
    assert sims.device.type == "meta" and sims.shape == (20, 8)


def test_int8_repr_and_bad_dtype(stores, tiny_encoder):
    assert "dtype='int8'" in repr(cv.MaxSim(tiny_encoder, store=stores["int8"], dtype="int8"))
    assert not repr(cv.MaxSim(tiny_encoder, store=stores["int8"])).endswith("dtype='int8')")
    with pytest.raises(ValueError, match="'int8' over a store built with codec='int8'"):
        cv.MaxSim(tiny_encoder, store=stores["int8"], dtype="int4")
