"""F4 MapTransformer: a small Transformer over patch x patch tiles of the similarity-map features (the verifier
paper)."""

from __future__ import annotations

import torch
from torch import nn

from ..registry import HeadSpec, register_head
from ..simmap import batch_mask
from .alignment_features import FEATURES, feature_inputs
from .cls_attention import NormedRows, cls_only_layer
from .patch_embedding import factorised_patch_embedding, plain_patch_embedding


class MapTransformerHead(nn.Module):
    """F4: phi(M) cut into patch x patch tiles on the grid of the actual lengths (ceil(m/p) x ceil(n/p), not a
    fixed 128 x 128), a linear patch embedding to ``dim``, a learned [CLS] and factorised row/column positions,
    pre-norm Transformer layer(s) with tiles holding no valid pair masked out, an MLP on [CLS], tanh.
    (B, m, n) map -> (B,) scores in [-1, 1]. The last layer computes [CLS] only, in inference and in training
    alike (the score reads only [CLS], so scores and gradients are the same; see ``cls_attention``);
    ``cls_only = False`` runs the full layer instead. The patch embedding is taken without forming the tiles'
    row-max and column-max channels (``patch_embedding``); ``factorised = False`` forms them (the reference, same
    scores up to float rounding). ``features=True`` adds a linear map of the map's length-free alignment features
    (``alignment_features.feature_inputs``) to [CLS] before its MLP; ``feature_dropout`` leaves them out for that
    share of the maps in training."""

    kind = "map"
    cls_only = True  # compute only [CLS] in the last layer (same scores and gradients, faster)
    factorised = True  # the patch embedding without 3 x p x p tiles (same scores, faster; see patch_embedding)

    def __init__(
        self,
        dim: int = 384,
        *,
        patch: int = 8,
        layers: int = 1,
        heads: int = 1,
        ff: int = 32,
        max_grid: int = 64,
        features: bool = False,
        feature_dropout: float = 0.0,
    ):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.row_pos = nn.Embedding(max_grid, dim)
        self.col_pos = nn.Embedding(max_grid, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim // 4), nn.GELU(), nn.Linear(dim // 4, 1))
        self.features = nn.Linear(len(FEATURES), dim) if features else None
        self.feature_dropout = feature_dropout  # training: share of maps whose features are left out
        nn.init.normal_(self.cls, std=0.02)

    @property
    def max_tokens(self) -> int:
        """The most tokens a map side can have: ``max_grid`` tiles of ``patch`` tokens."""
        return self.patch * self.row_pos.num_embeddings

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        b, m, n = sim.shape
        rows, cols = -(-m // self.patch), -(-n // self.patch)
        if rows > self.row_pos.num_embeddings or cols > self.col_pos.num_embeddings:
            raise ValueError(f"map of {rows}x{cols} tiles exceeds max_grid={self.row_pos.num_embeddings}")
        embedding = factorised_patch_embedding if self.factorised else plain_patch_embedding
        x, keep = embedding(sim, batch_mask(query_mask, b), cand_mask, self.embed.weight, self.patch)
        x = (x + self._offsets(rows, cols).reshape(rows, cols, -1)).reshape(b, rows * cols, -1)  # (B, T, dim)
        keep = keep.reshape(b, rows * cols)
        layers = self.encoder.layers
        extra = None if self.features is None else self._feature_share(sim, query_mask, cand_mask)
        if not self.cls_only:
            h = torch.cat([self.cls.expand(b, 1, -1), x], dim=1)
            return self._score(self.encoder(h, src_key_padding_mask=~self._with_cls(keep))[:, 0], extra)
        first = self.cls[:, 0]  # (1, dim): one [CLS] for every candidate, its terms computed once
        if len(layers) > 1:
            h = torch.cat([self.cls.expand(b, 1, -1), x], dim=1)
            for layer in layers[:-1]:
                h = layer(h, src_key_padding_mask=~self._with_cls(keep))
            first, x = h[:, 0], h[:, 1:]
        return self._score(cls_only_layer(layers[-1], first, NormedRows(layers[-1].norm1, x), keep), extra)

    def _feature_share(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        """(B, dim): the features' linear map; in training, zero for a random ``feature_dropout`` share of the maps,
        so the tiles must still learn what only they see (word order)."""
        extra = self.features(feature_inputs(sim, query_mask, cand_mask))
        if self.training and self.feature_dropout > 0:
            keep = torch.rand(extra.shape[0], 1, device=extra.device) >= self.feature_dropout
            extra = extra * keep.to(extra.dtype)
        return extra

    @staticmethod
    def _with_cls(keep: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.ones_like(keep[:, :1]), keep], dim=1)

    def _score(self, cls: torch.Tensor, extra: torch.Tensor | None) -> torch.Tensor:
        """[CLS] (B, dim) (plus the features' share (B, dim), if any) -> (B,) scores."""
        return torch.tanh(self.mlp(self.norm(cls if extra is None else cls + extra.to(cls.dtype)))).squeeze(-1)

    def _offsets(self, rows: int, cols: int) -> torch.Tensor:
        """(rows * cols, dim): the embedding bias plus each tile's row and column position."""
        device = self.embed.bias.device
        grid_r = torch.arange(rows, device=device).repeat_interleave(cols)
        grid_c = torch.arange(cols, device=device).repeat(rows)
        return self.embed.bias + self.row_pos(grid_r) + self.col_pos(grid_c)


register_head(
    HeadSpec(
        "F4",
        "map",
        True,
        lambda dim=384, **config: MapTransformerHead(dim, **config),
        "MapVerifier",
        "Transformer over 8x8 tiles of [M, row max, column max]",
    )
)
