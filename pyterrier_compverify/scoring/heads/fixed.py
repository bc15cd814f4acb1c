"""Weight-free map heads: F0 bag of similarities, F1 MaxSim, F2 soft alignment (the verifier paper's family).

Each maps ``sim`` (B, m, n), ``query_mask`` (B, m) or (m,) and ``cand_mask`` (B, n) to (B,) scores; cells outside
either mask are ignored, so scores do not depend on how much padding a batch carries. Nothing to learn frozen,
but end-to-end training tunes the encoder through them.
"""

from __future__ import annotations

import torch
from torch import nn

from ...checks import check_number
from ..registry import HeadSpec, register_head
from ..simmap import batch_mask


def row_max(sim: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """sim (B, m, n), cand_mask (B, n) -> (B, m) each query token's best cosine over the real candidate tokens
    (padded cells set to -inf first, never multiplied by zero)."""
    return sim.masked_fill(~cand_mask[:, None, :], float("-inf")).amax(dim=-1)


def maxsim(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """F1 MaxSim: mean over real query tokens of the max over real candidate tokens.

    Padded candidate cells are set to -inf before the max (never multiplied by zero), so a query token whose
    similarities are all negative keeps its true (negative) maximum.

    >>> sim = torch.tensor([[[-0.5, -0.2, 0.0], [0.3, -0.1, 0.0]]])
    >>> round(maxsim(sim, torch.tensor([True, True]), torch.tensor([[True, True, False]])).item(), 6)  # (-0.2+0.3)/2
    0.05
    """
    query_mask = batch_mask(query_mask, sim.shape[0])
    best = row_max(sim, cand_mask).masked_fill(~query_mask, 0.0)
    return best.sum(dim=-1) / query_mask.sum(dim=-1).clamp(min=1)


def bag_of_similarities(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """F0: mean of the map over valid (query, candidate) pairs.

    >>> sim = torch.tensor([[[0.2, 0.4, 9.0]]])
    >>> round(bag_of_similarities(sim, torch.tensor([True]), torch.tensor([[True, True, False]])).item(), 6)
    0.3
    """
    query_mask = batch_mask(query_mask, sim.shape[0])
    valid = query_mask[:, :, None] & cand_mask[:, None, :]
    return (sim * valid).sum(dim=(1, 2)) / valid.sum(dim=(1, 2)).clamp(min=1)


def soft_align(
    sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor, *, lam: float = 0.1, tau: float = 0.1
) -> torch.Tensor:
    """F2 soft alignment: A = row-softmax((M - lam*|i-j|) / tau) over valid j; score = mean_i sum_j A*M.

    >>> sim = torch.tensor([[[1.0, 0.0]]])  # one query token, two candidate tokens
    >>> round(soft_align(sim, torch.tensor([True]), torch.tensor([[True, True]])).item(), 4)  # e^10/(e^10+e^-1)
    1.0
    """
    query_mask = batch_mask(query_mask, sim.shape[0])
    m, n = sim.shape[1:]
    distance = (torch.arange(m, device=sim.device)[:, None] - torch.arange(n, device=sim.device)[None, :]).abs()
    logits = ((sim - lam * distance) / tau).masked_fill(~cand_mask[:, None, :], float("-inf"))
    aligned = (torch.softmax(logits, dim=-1) * sim).sum(dim=-1)
    aligned = aligned.masked_fill(~query_mask, 0.0)
    return aligned.sum(dim=-1) / query_mask.sum(dim=-1).clamp(min=1)


class FixedHead(nn.Module):
    """A weight-free map head as a module, so it slots in wherever a learned head does."""

    kind = "map"

    def __init__(self, fn, name: str, **options):
        super().__init__()
        self.fn, self.name, self.options = fn, name, options

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        return self.fn(sim, query_mask, cand_mask, **self.options)

    def extra_repr(self) -> str:
        options = "".join(f", {k}={v}" for k, v in self.options.items())
        return f"{self.name}{options}"


register_head(
    HeadSpec(
        "F0",
        "map",
        False,
        lambda dim=None: FixedHead(bag_of_similarities, "F0 bag of similarities"),
        "BagOfSimilarities",
        "mean token-token cosine over all valid pairs",
    )
)
register_head(
    HeadSpec(
        "F1",
        "map",
        False,
        lambda dim=None: FixedHead(maxsim, "F1 MaxSim"),
        "MaxSim",
        "mean over query tokens of the best cosine with any candidate token",
    )
)
register_head(
    HeadSpec(
        "F2",
        "map",
        False,
        lambda dim=None, lam=0.1, tau=0.1: FixedHead(
            soft_align,
            "F2 soft alignment",
            lam=check_number(lam, "lam", at_least=0),
            tau=check_number(tau, "tau (the softmax temperature)", above=0),  # 0 gave NaN scores, < 0 the worst
        ),
        "SoftAlign",
        "distance-penalised soft alignment",
    )
)
