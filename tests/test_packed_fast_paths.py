"""The store's fast serving paths score like the reference paths: MaxSim straight from packed rows (no map), the map
built with each query's own width, row ranges looked up once per frame, and ranks without a pandas group-by."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_compverify as cv
from pyterrier_compverify.rerank import ranks
from pyterrier_compverify.scoring import FixedHead, build_head, maxsim, score_packed, similarity_map_packed
from pyterrier_compverify.scoring.packed_maxsim import maxsim_packed, segment_max


def ragged_pass(seed: int = 0, d: int = 40):
    """Three queries of different lengths (one with a hole in its mask), padded together, against ragged fp16
    packed candidates (one empty-free pass with lengths 1..12)."""
    g = torch.Generator().manual_seed(seed)
    lengths = [5, 9, 3]
    queries = torch.nn.utils.rnn.pad_sequence([torch.randn(m, d, generator=g) for m in lengths], batch_first=True)
    query_mask = torch.arange(9)[None] < torch.tensor(lengths)[:, None]
    query_mask[1, 4] = False
    queries[1, 4] = 0.0
    cand = [[7, 2, 12, 3], [12, 12], [1, 5, 12]]
    sizes = [len(c) for c in cand]
    flat = [n for c in cand for n in c]
    packed = torch.randn(sum(flat), d, generator=g).half()
    mask = torch.arange(12)[None] < torch.tensor(flat)[:, None]
    return queries, query_mask, packed, mask, sizes


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_maxsim_from_packed_rows_equals_maxsim_of_the_map(dtype):
    queries, query_mask, packed, mask, sizes = ragged_pass()
    fast = maxsim_packed(queries, query_mask, packed, mask.sum(1).numpy(), sizes, dtype=dtype)
    sim = similarity_map_packed(queries, packed, mask, sizes=sizes, dtype=dtype)
    reference = maxsim(sim, query_mask.repeat_interleave(torch.tensor(sizes), 0), mask)
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=0)


def test_score_packed_takes_the_fast_maxsim_and_matches_the_map_path():
    queries, query_mask, packed, mask, sizes = ragged_pass(1)
    via_map = FixedHead(lambda s, q, c: maxsim(s, q, c), "MaxSim through the map")  # not the fast path
    with torch.inference_mode():
        fast = score_packed(build_head("F1"), queries, packed, mask, query_mask=query_mask, sizes=sizes)
        reference = score_packed(via_map, queries, packed, mask, query_mask=query_mask, sizes=sizes)
    torch.testing.assert_close(fast, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("equal_lengths", [False, True])
def test_map_with_each_query_width_equals_the_full_width_map(equal_lengths):
    queries, query_mask, packed, mask, sizes = ragged_pass(2)
    if equal_lengths:
        mask = torch.ones(mask.shape[0], 6, dtype=torch.bool)
        packed = torch.randn(mask.numel(), queries.shape[2]).half()
    full = similarity_map_packed(queries, packed, mask, sizes=sizes)
    own = similarity_map_packed(queries, packed, mask, sizes=sizes, query_mask=query_mask)
    keep = query_mask.repeat_interleave(torch.tensor(sizes), 0)[:, :, None]
    torch.testing.assert_close(own * keep, full * keep, atol=1e-5, rtol=0)
    last = [int(np.flatnonzero(row).max()) + 1 for row in query_mask.numpy()]
    for g, (start, count) in enumerate(zip(np.cumsum([0, *sizes[:-1]]), sizes)):
        assert (own[start : start + count, last[g] :] == 0).all()  # past a query's width: exactly 0


def test_segment_max_of_ragged_and_equal_segments():
    values = torch.randn(10, 3)
    for lengths in (np.array([4, 1, 5]), np.array([5, 5])):
        ends = np.cumsum(lengths)
        expected = torch.stack([values[e - n : e].amax(0) for n, e in zip(lengths, ends)])
        assert torch.equal(segment_max(values[: ends[-1]], lengths), expected)


def test_ranks_equal_pyterrier_add_ranks_with_ties():
    rng = np.random.default_rng(0)
    qids = pd.Series(rng.choice(["q1", "q2", "q3"], 300))
    scores = rng.integers(0, 6, 300).astype(float)
    expected = pt.model.add_ranks(pd.DataFrame({"qid": qids, "score": scores}))["rank"].to_numpy()
    assert (ranks(qids, scores) == expected).all()


@pytest.mark.parametrize("codec", ["fp16", "int8"])
def test_store_row_ranges_and_gather_equal_token_states(tiny_encoder, tmp_path, codec):
    docs = [{"docno": f"d{i}", "text": t} for i, t in enumerate(["a dog", "the cat sat on a mat", "red", "x y z"])]
    store = cv.TokenStore(tmp_path / "s.tokens")
    store.indexer(tiny_encoder, verbose=False, codec=codec).index(docs)
    docnos = ["d3", "d1", "d3", "d0"]
    starts, ends = store.row_ranges(docnos)
    expected = np.concatenate(store.token_states(docnos))
    np.testing.assert_array_equal(store.gather(starts, ends).numpy(), expected)
    packed, mask = store.packed_states(docnos)
    np.testing.assert_array_equal(packed.numpy(), expected)
    assert mask.sum(1).tolist() == (ends - starts).tolist()


def test_store_maxsim_reranker_equals_the_map_path(tiny_encoder, tmp_path):
    texts = ["a dog chases a cat", "the cat sat", "a red car", "dogs and cats and more dogs", "car"]
    docs = [{"docno": f"d{i}", "text": t} for i, t in enumerate(texts)]
    store = cv.TokenStore(tmp_path / "s.tokens")
    store.indexer(tiny_encoder, verbose=False).index(docs)
    queries = ["a dog", "red car on the road today", "cat"]
    frame = pd.DataFrame(
        [{"qid": f"q{i}", "query": q, "docno": f"d{j}"} for i, q in enumerate(queries) for j in (4, 0, 2, 1, 3)]
    )
    via_map = FixedHead(lambda s, q, c: maxsim(s, q, c), "MaxSim through the map")
    fast = cv.MaxSim(tiny_encoder, store=store, score_batch_size=7)(frame)
    reference = cv.TokenReranker(tiny_encoder, head=via_map, store=store)(frame)
    np.testing.assert_allclose(fast["score"], reference["score"], atol=1e-5, rtol=0)
    assert (fast["rank"] == reference["rank"]).all()
