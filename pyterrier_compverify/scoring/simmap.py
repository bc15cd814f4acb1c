"""Token states -> similarity maps: the one place that normalises token states and builds the token-token
cosine map, for serving (one query against B candidates, or packed store rows) and training (all pairs of a batch).

Shapes: states (B, L, d) with a (B, L) boolean mask of real tokens; a map M is (B, m, n) with
M[b, i, j] = <q_bi, c_bj>; padded cells are exactly 0 and heads mask them as each needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


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
    query: torch.Tensor, packed: torch.Tensor, mask: torch.Tensor, *, block: int = 2048
) -> torch.Tensor:
    """One query against B candidates whose real token rows are packed (no padded copy of the states).

    On a CPU, converting fp16 rows block by block and multiplying while they sit in cache is several times faster
    than padding first.

    Args:
        query: (m, d) float token states. packed: (T, d) rows of the B candidates in batch order, any float dtype
            (fp16 from a store). mask: (B, L) boolean, ``mask.sum() == T``, real tokens first in each row.

    Returns:
        (B, m, L) map, 0 in padded cells; equal to ``similarity_map(query, padded)``.

    >>> q = torch.tensor([[1.0, 0.0]]); rows = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> similarity_map_packed(q, rows, torch.tensor([[True, True], [True, False]])).tolist()
    [[[1.0, 0.0]], [[0.5, 0.0]]]
    """
    m = query.shape[0]
    padded = query.new_zeros((-(-m // 8) * 8, query.shape[1]))  # BLAS is up to 2x faster on multiples of 8
    padded[:m] = query
    sims = torch.empty((packed.shape[0], padded.shape[0]), dtype=query.dtype, device=query.device)
    for start in range(0, packed.shape[0], block):
        chunk = packed[start : start + block].to(query.device, query.dtype)
        torch.mm(chunk, padded.T, out=sims[start : start + block])
    sim = torch.zeros((*mask.shape, m), dtype=query.dtype, device=query.device)
    sim[mask] = sims[:, :m]
    return sim.transpose(1, 2)


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
