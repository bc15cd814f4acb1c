"""F3 MapCNN: a small CNN over the similarity-map features phi(M) (the verifier paper)."""

from __future__ import annotations

import torch
from torch import nn

from ..registry import HeadSpec, register_head
from ..simmap import batch_mask, map_features


class MapCNNHead(nn.Module):
    """F3: phi(M) (3 channels) -> [conv3x3 + BN + ReLU + maxpool2] x 2 (3->128->256) -> masked global average
    pool -> MLP -> tanh. (B, m, n) map -> (B,) scores in [-1, 1]."""

    kind = "map"

    def __init__(self, channels: tuple[int, int] = (128, 256), hidden: int = 64):
        super().__init__()
        c1, c2 = tuple(channels)
        self.block1 = nn.Sequential(nn.Conv2d(3, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU())
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.mlp = nn.Sequential(nn.Linear(c2, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        query_mask = batch_mask(query_mask, sim.shape[0])
        x, valid = map_features(sim, query_mask, cand_mask)  # (B, 3, m, n), (B, m, n)
        valid = valid[:, None].float()
        x = self.pool(self.block1(x) * valid)
        valid = self.pool(valid)
        x = self.pool(self.block2(x) * valid)
        valid = self.pool(valid)
        pooled = (x * valid).sum(dim=(2, 3)) / valid.sum(dim=(2, 3)).clamp(min=1)
        return torch.tanh(self.mlp(pooled)).squeeze(-1)


register_head(
    HeadSpec(
        "F3",
        "map",
        True,
        lambda dim=None, **config: MapCNNHead(**config),
        "MapCNN",
        "CNN over [M, row max, column max]",
    )
)
