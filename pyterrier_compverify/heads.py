"""Scoring heads over masked token-token similarity maps (see PAPERS.md, the verifier family)."""

from __future__ import annotations

import torch
from torch import nn


def maxsim(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """F1 MaxSim: mean over real query tokens of the max over real candidate tokens.

    Padded candidate cells are set to -inf before the max (never multiplied by zero), so a query token whose
    similarities are all negative keeps its true (negative) maximum.

    Args:
        sim: (B, m, n) similarity map.
        query_mask: (B, m) or (m,) booleans; cand_mask: (B, n) booleans.

    Returns:
        (B,) scores.

    >>> sim = torch.tensor([[[-0.5, -0.2, 0.0], [0.3, -0.1, 0.0]]])
    >>> round(maxsim(sim, torch.tensor([True, True]), torch.tensor([[True, True, False]])).item(), 6)  # (-0.2+0.3)/2
    0.05
    """
    if query_mask.dim() == 1:
        query_mask = query_mask.unsqueeze(0).expand(sim.shape[0], -1)
    best = sim.masked_fill(~cand_mask[:, None, :], float("-inf")).amax(dim=-1)
    best = best.masked_fill(~query_mask, 0.0)
    return best.sum(dim=-1) / query_mask.sum(dim=-1).clamp(min=1)


class MaxSimHead(nn.Module):
    """F1 MaxSim as a module with no weights, so it slots in wherever a learned head does."""

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        """(B, m, n) map and masks -> (B,) scores."""
        return maxsim(sim, query_mask, cand_mask)
