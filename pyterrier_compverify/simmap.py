"""Masked token-token cosine maps between queries and candidates."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


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


def similarity_map(
    query: torch.Tensor, query_mask: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor
) -> torch.Tensor:
    """Token-token cosine map M[b, i, j] = <q_bi, c_bj> for L2-normalised token states.

    Args:
        query: (B, m, d) or (m, d) for one query shared by all B candidates.
        query_mask: (B, m) or (m,) booleans.
        cand: (B, n, d); cand_mask: (B, n) booleans.

    Returns:
        (B, m, n) map; cells whose query or candidate token is padding are 0 (heads mask them as they need).

    >>> q = torch.tensor([[1.0, 0.0]]); c = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
    >>> similarity_map(q, torch.tensor([True]), c, torch.tensor([[True, False]])).tolist()
    [[[0.0, 0.0]]]
    """
    if query.dim() == 2:
        query, query_mask = query.unsqueeze(0), query_mask.unsqueeze(0)
    sims = torch.matmul(query, cand.transpose(1, 2))
    valid = query_mask[:, :, None] & cand_mask[:, None, :]
    return sims.masked_fill(~valid, 0.0)
