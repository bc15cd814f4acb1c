"""The conditional penalty: a base score (MaxSim) lowered by a verifier only where the base says near-duplicate."""

from __future__ import annotations

import torch
from torch import nn

from .heads.fixed import maxsim


class ConditionalPenalty(nn.Module):
    """S - beta * sigmoid(20 (S - tau)) * (1 - v): a base score S (MaxSim) lowered by a verifier v in [-1, 1]
    only where S says "near-duplicate" (S above about tau), so ordinary ranking stays MaxSim's.

    >>> sim = torch.ones(1, 2, 2)  # identical texts: S = 1
    >>> class Reject(nn.Module):
    ...     def forward(self, sim, q, c): return -torch.ones(sim.shape[0])
    >>> head = ConditionalPenalty(Reject(), beta=0.5, tau=0.9)
    >>> q, c = torch.ones(2, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool)
    >>> round(head(sim, q, c).item(), 3)  # 1 - 0.5 * sigmoid(2) * 2
    0.119
    """

    kind = "map"

    def __init__(self, verifier: nn.Module, *, beta: float = 0.5, tau: float = 0.9, sharpness: float = 20.0):
        super().__init__()
        self.verifier, self.beta, self.tau, self.sharpness = verifier, beta, tau, sharpness

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        base, _, penalty = self.components(sim, query_mask, cand_mask)
        return base - penalty

    def components(
        self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The parts of the score (each (B,)): the base S (MaxSim), the verifier's verdict v and the penalty
        beta * sigmoid(sharpness (S - tau)) * (1 - v) that is subtracted from S (what ``explain`` shows)."""
        base = maxsim(sim, query_mask, cand_mask)
        v = self.verifier(sim, query_mask, cand_mask)
        return base, v, self.beta * torch.sigmoid(self.sharpness * (base - self.tau)) * (1 - v)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, tau={self.tau}"
