"""F1 MaxSim straight from packed token rows (a store's serving path): one product per query against all its
candidates' rows, then each document's max over its own rows, without the (B, m, L) map or any masked pass over it.

The scores equal ``maxsim(similarity_map_packed(...))`` exactly in float32 (same products, same sums): the map
is laid out (B, L, m) with padded rows at -inf (no copy at all when every candidate has L rows, as when documents
reach the encoder's max length), and the max over L is a pairwise tree of contiguous element-wise maxima (a CPU
reduces a middle axis several times slower).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .int8_rows import Int8Rows, int8_product, quantise_rows


def packed_products(
    queries: torch.Tensor,
    packed: torch.Tensor | Int8Rows,
    bounds: Sequence[int],
    dtype: torch.dtype,
    *,
    widths: Sequence[int] | None = None,
    block: int = 2048,
) -> torch.Tensor:
    """Rows against their query: queries (G, m, d) (zero-padded), packed (T, d) any float dtype, query g owning
    rows ``bounds[g]:bounds[g+1]`` -> (T, m8) products in ``dtype``, m8 = m rounded up to a multiple of 8 (BLAS
    runs up to 2x faster). With ``widths`` (query g's own token count), query g is multiplied by its own m_g
    rounded up to 8 columns only, not the pass's longest query; its other columns are then undefined (mask
    them). Rows are converted block by block while they sit in cache (converting a whole pass first is ~4x
    slower: the fp32 copy leaves the cache before the product reads it). :class:`Int8Rows` (an int8 store's rows)
    are multiplied in integer arithmetic by each query quantised per token (``int8_product``), float32 out."""
    groups, m, d = queries.shape
    m8 = -(-m // 8) * 8
    int8 = isinstance(packed, Int8Rows)
    dtype = torch.float32 if int8 else dtype
    padded = queries.new_zeros((groups, m8, d), dtype=dtype)
    padded[:, :m] = queries
    sims = torch.empty((packed.shape[0], m8), dtype=dtype, device=queries.device)
    via = torch.float32 if not int8 and packed.dtype == torch.float16 and dtype == torch.bfloat16 else dtype
    for g, (first, last) in enumerate(zip(bounds[:-1], bounds[1:])):  # (fp16 -> bf16 directly is slow)
        k = m8 if widths is None else min(m8, -(-int(widths[g]) // 8) * 8)
        query = quantise_rows(padded[g, :k]) if int8 else padded[g, :k].T
        step = block * 4 if int8 else block  # int8 rows take 1/4 the bytes: 4x the rows stay in cache
        for start in range(first, last, step):
            stop = min(start + step, last)
            if int8:
                int8_product(packed[start:stop].to(queries.device), query, out=sims[start:stop, :k])
                continue
            rows = packed[start:stop].to(queries.device, via).to(dtype)
            if k == m8:
                torch.mm(rows, query, out=sims[start:stop])
            else:
                sims[start:stop, :k] = torch.mm(rows, query)
    return sims


def segment_max(values: torch.Tensor, lengths: np.ndarray) -> torch.Tensor:
    """values (T, k) of B consecutive segments of ``lengths`` rows -> (B, k) max over each segment's rows
    (-inf for an empty segment)."""
    b, k = len(lengths), values.shape[1]
    width = int(lengths.max()) if b else 0
    if b and (lengths == width).all():
        grid = values.reshape(b, width, k)
    elif b and (lengths > 0).all():  # a shorter segment repeats its last row up to the width: the same max
        firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        rows = firsts[:, None] + np.minimum(np.arange(width)[None, :], lengths[:, None] - 1)
        grid = values.index_select(0, torch.from_numpy(rows.reshape(-1)).to(values.device)).reshape(b, width, k)
    else:
        real = torch.from_numpy((np.arange(width)[None, :] < lengths[:, None]).reshape(-1))
        grid = values.new_full((b * width, k), float("-inf"))
        grid.index_copy_(0, real.nonzero()[:, 0].to(values.device), values)
        grid = grid.reshape(b, width, k)
    while grid.shape[1] > 1:  # pairwise maxima of contiguous halves: exact, and fast on any CPU
        half = grid.shape[1] // 2
        top = torch.maximum(grid[:, :half], grid[:, half : 2 * half])
        grid = torch.cat([top, grid[:, 2 * half :]], dim=1) if grid.shape[1] % 2 else top
    return grid[:, 0] if width else values.new_full((b, k), float("-inf"))


def last_true(mask: torch.Tensor) -> torch.Tensor:
    """(G, m) boolean -> (G,) one past the last True of each row (0 for none): the columns a row needs."""
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return (positions * mask).amax(1) if mask.shape[1] else mask.new_zeros(mask.shape[0], dtype=torch.long)


def concatenated_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Row numbers ``starts[i] : starts[i] + lengths[i]`` of every item, concatenated (one vectorised pass).

    >>> concatenated_ranges(np.array([5, 0]), np.array([2, 3])).tolist()
    [5, 6, 0, 1, 2]
    """
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(np.sum(lengths)))


def row_bounds(lengths: np.ndarray, sizes: Sequence[int]) -> tuple[np.ndarray, list[int]]:
    """Candidates' row counts (B,) and queries' candidate counts (G,) -> each candidate's first row (B + 1,) and
    each query's first row (G + 1,) in the packed rows."""
    token_ends = np.concatenate([[0], np.cumsum(lengths)])
    return token_ends, token_ends[np.concatenate([[0], np.cumsum(sizes)])].tolist()


def maxsim_packed(
    queries: torch.Tensor,
    query_mask: torch.Tensor,
    packed: torch.Tensor | Int8Rows,
    lengths: np.ndarray,
    sizes: Sequence[int],
    *,
    dtype: torch.dtype = torch.float32,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """MaxSim of every candidate: queries (G, m, d) zero-padded with query_mask (G, m), query g against
    ``sizes[g]`` consecutive candidates whose real rows are packed (T, d) (``lengths`` (B,) rows each, B =
    sum(sizes)); the product in ``dtype`` -> (B,) float32 scores. With ``weights`` (G, m) (0 outside the mask),
    each candidate's score is the weighted mean over its query's tokens (F1w) instead of the plain mean."""
    sims = packed_products(queries, packed, row_bounds(lengths, sizes)[1], dtype, widths=last_true(query_mask).tolist())
    return _maxsim_of_products(sims, query_mask, lengths, sizes, weights)


def maxsim_both_ways(
    queries: torch.Tensor,
    query_mask: torch.Tensor,
    packed: torch.Tensor | Int8Rows,
    lengths: np.ndarray,
    sizes: Sequence[int],
    *,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """As :func:`maxsim_packed`, and from the same product: (MaxSim (B,), reverse MaxSim (B,) (mean over each
    candidate's rows of their best real query token), the (T, m8) products, for maps of some candidates)."""
    bounds = row_bounds(lengths, sizes)[1]
    widths = last_true(query_mask).tolist()
    sims = packed_products(queries, packed, bounds, dtype, widths=widths)
    forward = _maxsim_of_products(sims, query_mask, lengths, sizes)
    row_best = torch.empty(sims.shape[0], dtype=torch.float32, device=sims.device)  # each row's best query token
    for g, (first, last) in enumerate(zip(bounds[:-1], bounds[1:])):
        block, real = sims[first:last, : widths[g]], query_mask[g, : widths[g]]
        if not bool(real.all()):  # a query mask with holes (never from pad_token_states)
            block = block.masked_fill(~real, float("-inf"))
        row_best[first:last] = block.amax(1) if widths[g] else float("-inf")
    per_row = torch.from_numpy(np.asarray(lengths)).to(sims.device)
    backward = torch.segment_reduce(row_best, "sum", lengths=per_row) / per_row.clamp(min=1)
    return forward, backward, sims


def weighted_mean(best: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """best (B, m) row maxima, weights (B, m) (0 for a padded query token) -> (B,) their weighted mean.

    >>> round(weighted_mean(torch.tensor([[0.2, 0.8, float("-inf")]]), torch.tensor([[1.0, 3.0, 0.0]])).item(), 6)
    0.65
    """
    best = best.masked_fill(weights == 0, 0.0)  # a padded column may hold -inf or anything: it weighs nothing
    return (best * weights).sum(dim=-1) / weights.sum(dim=-1).clamp(min=torch.finfo(weights.dtype).tiny)


def _maxsim_of_products(
    sims: torch.Tensor,
    query_mask: torch.Tensor,
    lengths: np.ndarray,
    sizes: Sequence[int],
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """(T, m8) products -> (B,) MaxSim: each candidate's max over its rows, mean over its query's real tokens
    (weighted by ``weights`` (G, m) when given)."""
    m = query_mask.shape[1]
    best = segment_max(sims, np.asarray(lengths))[:, :m].float()  # (B, m)
    per_candidate = torch.tensor(list(sizes), device=query_mask.device)
    weights = query_mask if weights is None else weights * query_mask  # plain MaxSim: weight 1 per real token
    return weighted_mean(best, weights.float().repeat_interleave(per_candidate, dim=0))  # (B, m) -> (B,)
