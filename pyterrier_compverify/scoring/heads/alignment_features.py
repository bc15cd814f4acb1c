"""Alignment features: an MLP over eleven length-free summaries of the similarity map (not one of the paper's
F0-F4; a small, fast baseline for them).

Every feature is a mean, a share, an extreme or a ratio over the valid part of the map, so a 15-token caption
and a 200-token passage give values on the same scale (a tile head sees a 2 x 2 grid for the one and 25 x 25 for
the other). The features (each (B,)), with r_i the best match of query token i and c_j that of candidate token j:

- MaxSim both ways (mean r, mean c), the lowest r and the lowest c;
- the share of r above 0.9 and below 0.5, the same for c;
- the mean cosine over valid pairs;
- the crossing rate: the share of query-token pairs i < i' whose best matches come in the other order
  (argmax_j of row i after that of row i'), high when words swap places;
- log(n / m), the length ratio.
"""

from __future__ import annotations

import torch
from torch import nn

from ..registry import HeadSpec, register_head
from ..simmap import batch_mask

FEATURES = (
    "maxsim",
    "reverse_maxsim",
    "min_row_max",
    "min_col_max",
    "rows_above_0.9",
    "rows_below_0.5",
    "cols_above_0.9",
    "cols_below_0.5",
    "mean_cosine",
    "crossing_rate",
    "log_length_ratio",
)


def alignment_features(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """(B, m, n) map, (B, m) or (m,) and (B, n) masks -> (B, len(FEATURES)) float32 features (order of FEATURES);
    cells outside the masks are never read, and a pair without a real query or candidate token gets zeros.

    >>> sim = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]])  # same order / swapped
    >>> f = alignment_features(sim, torch.ones(2, dtype=torch.bool), torch.ones(2, 2, dtype=torch.bool))
    >>> f[:, FEATURES.index("crossing_rate")].tolist(), f[:, FEATURES.index("maxsim")].tolist()
    ([0.0, 1.0], [1.0, 1.0])
    """
    sim = sim.float()
    query_mask = batch_mask(query_mask, sim.shape[0])
    valid = query_mask[:, :, None] & cand_mask[:, None, :]
    low = sim.masked_fill(~valid, -2.0)
    row_max, best_col = low.max(2)  # (B, m)
    col_max = low.amax(1)  # (B, n)
    qf, cf = query_mask.float(), cand_mask.float()
    m, n = qf.sum(1).clamp(min=1), cf.sum(1).clamp(min=1)

    def mean(x, mask, count):
        return (x * mask).sum(1) / count

    before = torch.ones(sim.shape[1], sim.shape[1], device=sim.device).triu(1)  # (m, m): i < i'
    pairs = qf[:, :, None] * qf[:, None, :] * before  # (B, m, m): both real
    crossed = (best_col[:, :, None] > best_col[:, None, :]).float() * pairs
    features = [
        mean(row_max, qf, m),
        mean(col_max, cf, n),
        row_max.masked_fill(~query_mask, 2.0).amin(1),
        col_max.masked_fill(~cand_mask, 2.0).amin(1),
        mean((row_max > 0.9).float(), qf, m),
        mean((row_max < 0.5).float(), qf, m),
        mean((col_max > 0.9).float(), cf, n),
        mean((col_max < 0.5).float(), cf, n),
        sim.masked_fill(~valid, 0.0).sum((1, 2)) / (m * n),
        crossed.sum((1, 2)) / pairs.sum((1, 2)).clamp(min=1),
        torch.log(n / m),
    ]
    out = torch.stack(features, dim=1)
    return out.masked_fill(~valid.flatten(1).any(1, keepdim=True), 0.0)  # a pair with no real token: all 0


def feature_inputs(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """:func:`alignment_features` as a layer's input, near unit scale (most features lie in [0, 1]): 4 (x - 0.5)."""
    return (alignment_features(sim, query_mask, cand_mask) - 0.5) * 4


class AlignmentFeaturesHead(nn.Module):
    """(B, m, n) map -> :func:`feature_inputs` -> MLP (two layers of ``hidden`` units, GELU) -> tanh: (B,) scores
    in [-1, 1]."""

    kind = "map"

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(len(FEATURES), hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1)
        )

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mlp(feature_inputs(sim, query_mask, cand_mask))).squeeze(-1)


register_head(
    HeadSpec(
        "AF",
        "map",
        True,
        lambda dim=None, **config: AlignmentFeaturesHead(**config),
        "TrainedHeadReranker",
        "MLP over length-free alignment features of M",
    )
)
