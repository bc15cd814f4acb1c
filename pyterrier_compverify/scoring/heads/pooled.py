"""The Pooled head: cosine of the masked means of the token states (a states head: the cosine of two means is
not a function of the token-token cosines)."""

from __future__ import annotations

import torch
from torch import nn

from ..registry import HeadSpec, register_head


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, L, d) states, (B, L) mask -> (B, d) mean over the real tokens.

    >>> masked_mean(torch.tensor([[[1.0], [3.0], [9.0]]]), torch.tensor([[True, True, False]])).tolist()
    [[2.0]]
    """
    return (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)


def pooled_cosine(
    query: torch.Tensor, query_mask: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor
) -> torch.Tensor:
    """Cosine of the masked means. query (B, m, d) or (m, d) shared by all candidates; cand (B, n, d) -> (B,)."""
    if query.dim() == 2:
        query, query_mask = query.unsqueeze(0), query_mask.unsqueeze(0)
    return torch.nn.functional.cosine_similarity(masked_mean(query, query_mask), masked_mean(cand, cand_mask), dim=-1)


class PooledHead(nn.Module):
    """Pooled cosine as a states head: ``(query, query_mask, cand, cand_mask) -> (B,)``."""

    kind = "states"

    def forward(self, query, query_mask, cand, cand_mask) -> torch.Tensor:
        return pooled_cosine(query, query_mask, cand, cand_mask)

    def all_pairs(self, query, query_mask, cand, cand_mask) -> torch.Tensor:
        """(A, m, d) queries against (C, n, d) candidates -> (A, C) cosines, each mean taken once."""
        q = nn.functional.normalize(masked_mean(query, query_mask), dim=-1)
        c = nn.functional.normalize(masked_mean(cand, cand_mask), dim=-1)
        return q @ c.T

    def extra_repr(self) -> str:
        return "Pooled cosine"


register_head(
    HeadSpec(
        "Pooled", "states", False, lambda dim=None: PooledHead(), "PooledCosine", "cosine of the mean token states"
    )
)
