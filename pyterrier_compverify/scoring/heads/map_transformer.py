"""F4 MapTransformer: a small Transformer over patch x patch tiles of the similarity-map features (PAPERS.md)."""

from __future__ import annotations

import torch
from torch import nn

from ..registry import HeadSpec, register_head
from ..simmap import batch_mask, map_features, patch_grid
from .cls_attention import NormedEmbeddedRows, NormedRows, PatchSpace, cls_only_layer


class MapTransformerHead(nn.Module):
    """F4: phi(M) cut into patch x patch tiles on the grid of the actual lengths (ceil(m/p) x ceil(n/p), not a
    fixed 128 x 128), a linear patch embedding to ``dim``, a learned [CLS] and factorised row/column positions,
    pre-norm Transformer layer(s) with tiles holding no valid pair masked out, an MLP on [CLS], tanh.
    (B, m, n) map -> (B,) scores in [-1, 1]. Without gradients (inference) the last layer computes [CLS] only,
    with the same result (see ``cls_attention``); ``cls_only = False`` runs the full layer instead."""

    kind = "map"

    def __init__(
        self, dim: int = 384, *, patch: int = 8, layers: int = 1, heads: int = 1, ff: int = 32, max_grid: int = 64
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
        nn.init.normal_(self.cls, std=0.02)
        self.cls_only = True  # without gradients, compute only [CLS] in the last layer (same scores, faster)

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        query_mask = batch_mask(query_mask, sim.shape[0])
        x, valid = map_features(sim, query_mask, cand_mask)
        tiles, tile_valid, (rows, cols) = patch_grid(x, valid, self.patch)  # (B, T, 3*p*p), (B, T)
        if rows > self.row_pos.num_embeddings or cols > self.col_pos.num_embeddings:
            raise ValueError(f"map of {rows}x{cols} tiles exceeds max_grid={self.row_pos.num_embeddings}")
        cls = self.cls.expand(tiles.shape[0], 1, -1)
        layers = self.encoder.layers
        full = torch.is_grad_enabled() or not self.cls_only  # else inference: the last layer computes [CLS] only
        if not full and len(layers) == 1:  # one layer: the tiles' states are never formed
            rest = NormedEmbeddedRows(layers[0].norm1, tiles, self._patch_space(rows, cols))
            return self._score(cls_only_layer(layers[0], cls[:, 0], rest, tile_valid))
        h = torch.cat([cls, tiles @ self.embed.weight.T + self._offsets(rows, cols)], dim=1)
        keep = torch.cat([torch.ones_like(tile_valid[:, :1]), tile_valid], dim=1)
        if full:
            return self._score(self.encoder(h, src_key_padding_mask=~keep)[:, 0])
        for layer in layers[:-1]:
            h = layer(h, src_key_padding_mask=~keep)
        rest = NormedRows(layers[-1].norm1, h[:, 1:])
        return self._score(cls_only_layer(layers[-1], h[:, 0], rest, tile_valid))

    def _score(self, cls: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mlp(self.norm(cls))).squeeze(-1)

    def _offsets(self, rows: int, cols: int) -> torch.Tensor:
        """(rows * cols, dim): the embedding bias plus each tile's row and column position."""
        device = self.embed.bias.device
        grid_r = torch.arange(rows, device=device).repeat_interleave(cols)
        grid_c = torch.arange(cols, device=device).repeat(rows)
        return self.embed.bias + self.row_pos(grid_r) + self.col_pos(grid_c)

    def _patch_space(self, rows: int, cols: int) -> PatchSpace:
        """The inference-time :class:`PatchSpace` of a grid, kept while the weights are unchanged (any in-place
        update, from an optimiser step or ``load_state_dict``, bumps a parameter's version)."""
        params = (self.embed.weight, self.embed.bias, self.row_pos.weight, self.col_pos.weight)
        key = (
            rows,
            cols,
            self.embed.weight.device,
            self.embed.weight.dtype,
            *(p._version for p in params),
            *(id(p) for p in params),
        )
        cache = self.__dict__.setdefault("_patch_spaces", {})
        if key not in cache:
            if len(cache) > 64:
                cache.clear()
            cache[key] = PatchSpace(self.embed.weight, self._offsets(rows, cols))
        return cache[key]


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
