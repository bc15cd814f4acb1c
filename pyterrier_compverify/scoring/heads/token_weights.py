"""F1w: MaxSim with learned query-token weights.

MaxSim averages the best cosine r_i of every query token, so "a", "the" and [CLS] count as much as "dog" or "red".
F1w takes the weighted mean sum_i w_i r_i / sum_i w_i instead, with w_i = softplus(a . h_i + b) read from the
query token's own state h_i (d,): d + 1 numbers (with ``hidden`` > 0, a . h_i becomes a one-hidden-layer MLP of
h_i). At initialisation the last layer is 0 and softplus(b) = 1, which is MaxSim.
Trained over a frozen encoder, it needs only each pair's row maxima (``experiments/token_weights.py``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..packed_maxsim import weighted_mean
from ..registry import HeadSpec, register_head
from ..simmap import batch_mask
from .fixed import row_max


class TokenWeightedMaxSim(nn.Module):
    """The F1w head: ``token_weights(queries (G, m, d), query_mask (G, m))`` -> (G, m), and the map head
    ``forward(sim (B, m, n), query_mask, cand_mask, *, query_weights (B, m))`` -> (B,)."""

    kind = "map"

    def __init__(self, dim: int = 384, hidden: int = 0):
        super().__init__()
        self.hidden = int(hidden)
        if self.hidden:
            self.mlp = nn.Sequential(nn.Linear(dim, self.hidden), nn.GELU())
        self.linear = nn.Linear(self.hidden or dim, 1)
        nn.init.zeros_(self.linear.weight)
        nn.init.constant_(self.linear.bias, math.log(math.e - 1.0))  # softplus(b) = 1: MaxSim

    def token_weights(self, queries: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
        """(G, m, d) query token states with mask (G, m) -> (G, m) weights, 0 outside the mask."""
        x = queries.to(self.linear.weight.dtype)
        weights = nn.functional.softplus(self.linear(self.mlp(x) if self.hidden else x)).squeeze(-1)
        return weights * query_mask

    def query_options(self, queries: torch.Tensor, query_mask: torch.Tensor) -> dict:
        """What the map head needs of each query besides the map (see ``scoring.pairs.query_verdicts``)."""
        return {"query_weights": self.token_weights(queries, query_mask)}

    def forward(
        self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor, *, query_weights: torch.Tensor
    ) -> torch.Tensor:
        query_mask = batch_mask(query_mask, sim.shape[0])
        best = row_max(sim, cand_mask)
        return weighted_mean(best, query_weights.to(best.dtype) * query_mask)


register_head(
    HeadSpec(
        "F1w",
        "map",
        True,
        lambda dim=384, hidden=0: TokenWeightedMaxSim(dim, hidden),
        "WeightedMaxSim",
        "MaxSim with learned query-token weights (softplus of a linear map of each query token's state)",
    )
)
