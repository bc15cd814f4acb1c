"""F4's patch embedding of phi(M) = [M, row max, column max], computed without forming the 3 x p x p tiles.

Inside a p x p tile (I, J) the row-max channel is a_r * k_s (a_r: the row max of the tile's row r, zero on
padded query rows; k_s: 1 where column s is a real candidate token) and the column-max channel is q_r * b_s.
Their share of the patch embedding is therefore W_R(k) a_I + W_C(q) b_J, where W_R(k) sums E's row-max
weights over the columns that the tile's column pattern k keeps (likewise W_C over rows). A pattern is one of at
most 2^p bit patterns and a batch holds only a few (all ones inside a candidate, one at its end, all zeros past
it), so a tile's input is its p*p map values, then a_I in the slot of its column pattern and b_J in the slot of
its row pattern: p*p + p*(U_c + U_q) values (80-96 for p = 8) instead of 3*p*p, one matrix product, and the
(B, 3, m, n) features never exist. The result equals the plain embedding (:func:`plain_patch_embedding`) up to
float rounding, gradients included.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from ..simmap import map_features, patch_grid


def factorised_patch_embedding(
    sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor, weight: torch.Tensor, patch: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The patch embedding E p_t (no bias, no positions) of every tile of phi(M), without its tiles.

    One matrix product over tile inputs of p*p + p*(U_c + U_q) values: the tile of M, then the tile's row maxes
    a_I placed in the slot of its column pattern (one of U_c) and its column maxes b_J in the slot of its row
    pattern (one of U_q), against E's map weights and the pattern-summed row- and column-max weights.

    Args:
        sim: (B, m, n) map; query_mask (B, m) and cand_mask (B, n) boolean; weight: E, (dim, 3*patch*patch)
            over the channels [M, row max, column max] of a tile flattened as (channel, row, column).

    Returns:
        (B, R, C, dim) embeddings on the R x C grid of ceil(m/p) x ceil(n/p) tiles, and the (B, R, C) mask of
        tiles that hold a valid (query, candidate) pair.
    """
    b, m, n = sim.shape
    p = patch
    rows, cols = -(-m // p), -(-n // p)
    dim = weight.shape[0]
    dtype = torch.get_autocast_dtype(sim.device.type) if torch.is_autocast_enabled(sim.device.type) else weight.dtype
    w_map, w_row, w_col = weight.reshape(dim, 3, p, p).unbind(1)  # (dim, p, p) each, [d, r, s]
    valid = query_mask[:, :, None] & cand_mask[:, None, :]
    masked = sim.masked_fill(~valid, torch.finfo(sim.dtype).min)
    row_max = masked.amax(2).masked_fill(~(query_mask & cand_mask.any(1, keepdim=True)), 0.0)  # (B, m)
    col_max = masked.amax(1).masked_fill(~(cand_mask & query_mask.any(1, keepdim=True)), 0.0)  # (B, n)
    q_blocks = F.pad(query_mask, (0, rows * p - m)).reshape(b, rows, p)
    c_blocks = F.pad(cand_mask, (0, cols * p - n)).reshape(b, cols, p)
    c_patterns, c_which = _bit_patterns(c_blocks, weight.dtype)  # (U_c, p) kept columns, (B, C)
    q_patterns, q_which = _bit_patterns(q_blocks, weight.dtype)  # (U_q, p) kept rows, (B, R)
    u_c, u_q = len(c_patterns), len(q_patterns)
    inputs = sim.new_zeros((b, rows, cols, p * p + p * (u_c + u_q)), dtype=dtype)
    tile_map = inputs[..., : p * p].unflatten(-1, (p, p)).transpose(2, 3)  # (B, R, p, C, p) view
    grid = sim.new_zeros((b, rows * p, cols * p))
    grid[:, :m, :n] = torch.where(valid, sim, 0.0)
    tile_map.copy_(grid.reshape(b, rows, p, cols, p))
    row_slots = inputs[..., p * p : p * p + p * u_c].unflatten(-1, (u_c, p))  # (B, R, C, U_c, p)
    row_slots.copy_(  # in-place copies into the inputs keep autograd (training runs this path too)
        F.pad(row_max, (0, rows * p - m)).reshape(b, rows, 1, 1, p)
        * F.one_hot(c_which, u_c).to(row_max.dtype)[:, None, :, :, None]
    )
    col_slots = inputs[..., p * p + p * u_c :].unflatten(-1, (u_q, p))  # (B, R, C, U_q, p)
    col_slots.copy_(
        F.pad(col_max, (0, cols * p - n)).reshape(b, 1, cols, 1, p)
        * F.one_hot(q_which, u_q).to(col_max.dtype)[:, :, None, :, None]
    )
    # the row-max channel of a tile with column pattern k: sum_r a_r sum_{s in k} E_R[:, r, s] (likewise columns)
    w_rows = torch.einsum("drs,us->dur", w_row, c_patterns).reshape(dim, u_c * p)
    w_cols = torch.einsum("drs,ur->dus", w_col, q_patterns).reshape(dim, u_q * p)
    x = inputs @ torch.cat([w_map.reshape(dim, p * p), w_rows, w_cols], dim=1).T.to(dtype)
    keep = q_blocks.any(-1)[:, :, None] & c_blocks.any(-1)[:, None, :]
    return x, keep


def _bit_patterns(blocks: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean blocks (B, K, p) -> the distinct patterns as 0/1 values (U, p) and each block's pattern (B, K)."""
    bits = 2 ** torch.arange(blocks.shape[-1], device=blocks.device)
    codes, which = torch.unique((blocks.long() * bits).sum(-1), return_inverse=True)
    return ((codes[:, None] & bits) > 0).to(dtype), which


def plain_patch_embedding(
    sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor, weight: torch.Tensor, patch: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same as :func:`factorised_patch_embedding`, from the 3 x p x p tiles of phi(M) (the reference)."""
    features, valid = map_features(sim, query_mask, cand_mask)
    tiles, keep, (rows, cols) = patch_grid(features, valid, patch)
    x = tiles.to(weight.dtype) @ weight.T
    return x.reshape(sim.shape[0], rows, cols, -1), keep.reshape(sim.shape[0], rows, cols)
