"""Token states -> similarity maps: the one place that normalises token states and builds the token-token
cosine map, for serving (one query against B candidates, or packed store rows) and training (all pairs of a batch).

Shapes: states (B, L, d) with a (B, L) boolean mask of real tokens; a map M is (B, m, n) with
M[b, i, j] = <q_bi, c_bj>; padded cells are exactly 0 and heads mask them as each needs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch

from .packed_maxsim import last_true, packed_products, row_bounds


def normalise_states(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """L2-normalise each token state and zero the padding rows.

    Args:
        hidden: (B, L, d) last-layer token states; mask: (B, L) boolean (or 0/1) mask of real tokens.

    Returns:
        (B, L, d) unit-length states at real tokens, zero vectors at padding (so padded map cells are 0).

    >>> normalise_states(torch.tensor([[[3.0, 4.0], [1.0, 1.0]]]), torch.tensor([[1, 0]])).tolist()
    [[[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]]
    """
    return torch.nn.functional.normalize(hidden, dim=-1) * mask[..., None].to(hidden.dtype)


def pad_token_states(
    states: Sequence[torch.Tensor | np.ndarray], *, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack ragged token states into a padded batch.

    Args:
        states: B tensors or arrays of shape (n_i, d).

    Returns:
        (B, L, d) states with zeros in the padding and a (B, L) boolean mask of real tokens, L = max n_i.

    >>> x, mask = pad_token_states([torch.ones(2, 3), torch.ones(1, 3)])
    >>> tuple(x.shape), mask.tolist()
    ((2, 2, 3), [[True, True], [True, False]])
    """
    if len(states) == 0:
        raise ValueError("pad_token_states needs at least one text")
    lengths = torch.tensor([s.shape[0] for s in states])
    if isinstance(states[0], np.ndarray):  # e.g. fp16 memory-mapped rows of a TokenStore: one converting copy
        padded_np = np.zeros((len(states), int(lengths.max()), states[0].shape[1]), dtype=np.float32)
        for i, s in enumerate(states):
            padded_np[i, : s.shape[0]] = s
        padded = torch.from_numpy(padded_np).to(dtype)
    else:
        padded = torch.nn.utils.rnn.pad_sequence([s.to(dtype) for s in states], batch_first=True)
    mask = torch.arange(padded.shape[1])[None, :] < lengths[:, None]
    return padded, mask


def batch_mask(query_mask: torch.Tensor, batch: int) -> torch.Tensor:
    """A query mask of shape (m,) shared by B candidates -> (B, m); a (B, m) mask unchanged."""
    return query_mask.unsqueeze(0).expand(batch, -1) if query_mask.dim() == 1 else query_mask


def similarity_map(query: torch.Tensor, cand: torch.Tensor) -> torch.Tensor:
    """Token-token cosine map M[b, i, j] = <q_bi, c_bj> for L2-normalised token states.

    Padding rows must be zero vectors (as :func:`pad_token_states` makes them), so padded cells are exactly 0;
    heads still mask them as each needs (-inf before a max, excluded from means).

    Args:
        query: (B, m, d), or (m, d) for one query shared by all B candidates (one matrix product).
        cand: (B, n, d).

    Returns:
        (B, m, n) map.

    >>> q = torch.tensor([[1.0, 0.0]]); c = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
    >>> similarity_map(q, c).tolist()
    [[[0.0, 1.0]]]
    """
    if query.dim() == 2:
        return torch.einsum("md,bnd->bmn", query, cand)
    return torch.matmul(query, cand.transpose(1, 2))


def similarity_map_pairwise(query: torch.Tensor, cand: torch.Tensor) -> torch.Tensor:
    """Every query against every candidate (in-batch negatives in training).

    Args:
        query: (A, m, d); cand: (C, n, d).

    Returns:
        (A, C, m, n) maps; ``[i, j]`` equals ``similarity_map(query[i], cand[j:j+1])[0]``.

    >>> similarity_map_pairwise(torch.eye(2)[None], torch.eye(2)[None].repeat(3, 1, 1)).shape
    torch.Size([1, 3, 2, 2])
    """
    return torch.einsum("imd,jnd->ijmn", query, cand)


def similarity_map_packed(
    query: torch.Tensor,
    packed: torch.Tensor,
    mask: torch.Tensor,
    *,
    sizes: Sequence[int] | None = None,
    dtype: torch.dtype | None = None,
    query_mask: torch.Tensor | None = None,
    block: int = 2048,
) -> torch.Tensor:
    """Queries against candidates whose real token rows are packed (no padded copy of the states).

    The product runs in ``dtype`` (default: the query's). In float32, fp16 rows are converted block by block and
    multiplied while they sit in cache (several times faster than padding first on a CPU); in float16 the stored
    fp16 rows are multiplied as they are (see :func:`reduced_product_dtype`). The map itself is float32.

    Args:
        query: (m, d) float token states of one query for all B candidates, or (G, m, d) zero-padded states of
            G queries, query g against ``sizes[g]`` consecutive candidates. packed: (T, d) rows of the B
            candidates in batch order, any float dtype (fp16 from a store). mask: (B, L) boolean,
            ``mask.sum() == T``, real tokens first in each row. query_mask: (G, m) real query tokens of
            (G, m, d) queries; when given, each query is multiplied by its own width only (its map columns
            past it are 0), not by the longest query's.

    Returns:
        (B, m, L) float32 map, 0 in padded cells; equal to ``similarity_map(query, padded)`` for one query.

    >>> q = torch.tensor([[1.0, 0.0]]); rows = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> similarity_map_packed(q, rows, torch.tensor([[True, True], [True, False]])).tolist()
    [[[1.0, 0.0]], [[0.5, 0.0]]]
    """
    queries = query[None] if query.dim() == 2 else query
    groups, m, _ = queries.shape
    sizes = [mask.shape[0]] if sizes is None else list(sizes)
    if len(sizes) != groups or sum(sizes) != mask.shape[0]:
        raise ValueError(f"similarity_map_packed: {groups} queries for candidate groups of sizes {sizes}")
    lengths = mask.sum(1).cpu().numpy()
    bounds = row_bounds(lengths, sizes)[1]  # each query's rows in ``packed``
    widths = None if query_mask is None or query.dim() == 2 else last_true(query_mask).tolist()
    sims = packed_products(queries, packed, bounds, dtype or query.dtype, widths=widths, block=block)[:, :m]
    if widths is not None:  # a shorter query's columns past its own width are undefined: zero them
        for g, (first, last) in enumerate(zip(bounds[:-1], bounds[1:])):
            sims[first:last, widths[g] :] = 0.0
    return map_from_products(sims, mask)


def map_from_products(sims: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Products (T, m) of B candidates' real rows (any float dtype) with their (B, L) mask (``mask.sum() == T``,
    real tokens first) -> the (B, m, L) float32 map, 0 in padded cells."""
    b, width = mask.shape
    m = sims.shape[1]
    if b and bool(mask.all()):  # every candidate fills the width: the packed rows are the map
        return sims.float().reshape(b, width, m).transpose(1, 2)
    sim = torch.zeros((mask.numel(), m), dtype=torch.float32, device=sims.device)
    sim.index_copy_(0, mask.reshape(-1).nonzero()[:, 0].to(sims.device), sims.float())
    return sim.reshape(*mask.shape, m).transpose(1, 2)


@functools.cache
def _cpu_flags() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return frozenset(next((line for line in f if line.startswith("flags")), "").split())
    except OSError:
        return frozenset()


def reduced_product_dtype(rows_dtype: torch.dtype, device: torch.device | str = "cpu") -> torch.dtype:
    """The dtype of a reduced-precision map product of stored rows: fp16 rows are multiplied as stored (11-bit
    mantissa, no conversion pass) on a GPU or a CPU with fp16 arithmetic (AVX512-FP16 / AMX-FP16), bf16
    otherwise (a CPU without fp16 arithmetic runs an fp16 product far slower than bf16).

    >>> reduced_product_dtype(torch.float16, "cuda")
    torch.float16
    """
    native_fp16 = torch.device(device).type != "cpu" or bool(_cpu_flags() & {"avx512_fp16", "amx_fp16"})
    return torch.float16 if rows_dtype == torch.float16 and native_fp16 else torch.bfloat16


def map_features(
    sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """phi(M) = [M, row max broadcast, column max broadcast], zero outside valid pairs.

    Args:
        sim: (B, m, n) map; query_mask: (B, m); cand_mask: (B, n).

    Returns:
        (B, 3, m, n) features and the (B, m, n) boolean mask of valid pairs.

    >>> f, v = map_features(torch.tensor([[[0.1, 0.5], [0.3, 0.9]]]), torch.tensor([[True, True]]),
    ...                     torch.tensor([[True, False]]))
    >>> (f[0, 1] * 10).round().int().tolist()  # row max over valid columns (x10)
    [[1, 0], [3, 0]]
    >>> (f[0, 2] * 10).round().int().tolist()  # column max over valid rows (x10)
    [[3, 0], [3, 0]]
    """
    valid = query_mask[:, :, None] & cand_mask[:, None, :]
    neg = torch.finfo(sim.dtype).min
    row_max = sim.masked_fill(~valid, neg).amax(dim=2, keepdim=True).expand_as(sim)
    col_max = sim.masked_fill(~valid, neg).amax(dim=1, keepdim=True).expand_as(sim)
    features = torch.stack([sim, row_max, col_max], dim=1).masked_fill(~valid[:, None], 0.0)
    return features, valid


def patch_grid(
    features: torch.Tensor, valid: torch.Tensor, patch: int
) -> tuple[torch.Tensor, torch.Tensor, tuple[int, int]]:
    """Cut (B, C, m, n) features into patch x patch tiles on the grid of the map's own size (m and n padded up to
    multiples of ``patch``, never to a fixed size).

    Returns:
        tiles (B, R*C', C*patch*patch), tile mask (B, R*C') true where a tile holds a valid pair, and (R, C').

    >>> tiles, keep, grid = patch_grid(torch.ones(1, 3, 9, 8), torch.ones(1, 9, 8, dtype=torch.bool), 8)
    >>> tuple(tiles.shape), keep.tolist(), grid
    ((1, 2, 192), [[True, True]], (2, 1))
    """
    b, c, m, n = features.shape
    rows, cols = -(-m // patch), -(-n // patch)
    pad = (0, cols * patch - n, 0, rows * patch - m)
    features = torch.nn.functional.pad(features, pad)
    valid = torch.nn.functional.pad(valid, pad)
    tiles = features.reshape(b, c, rows, patch, cols, patch).permute(0, 2, 4, 1, 3, 5)
    tiles = tiles.reshape(b, rows * cols, c * patch * patch)
    keep = valid.reshape(b, rows, patch, cols, patch).any(dim=4).any(dim=2).reshape(b, rows * cols)
    return tiles, keep, (rows, cols)
