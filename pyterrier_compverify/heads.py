"""Scoring heads over masked token-token similarity maps (PAPERS.md, the verifier family).

Every head maps ``sim`` (B, m, n), ``query_mask`` (B, m) or (m,) and ``cand_mask`` (B, n) to (B,) scores.
Cells outside either mask are ignored, so scores do not depend on how much padding a batch carries.
"""

from __future__ import annotations

import torch
from torch import nn

from .cls_attention import NormedEmbeddedRows, NormedRows, PatchSpace, cls_only_layer
from .simmap import map_features, patch_grid


def _batch_mask(query_mask: torch.Tensor, batch: int) -> torch.Tensor:
    return query_mask.unsqueeze(0).expand(batch, -1) if query_mask.dim() == 1 else query_mask


def maxsim(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """F1 MaxSim: mean over real query tokens of the max over real candidate tokens.

    Padded candidate cells are set to -inf before the max (never multiplied by zero), so a query token whose
    similarities are all negative keeps its true (negative) maximum.

    >>> sim = torch.tensor([[[-0.5, -0.2, 0.0], [0.3, -0.1, 0.0]]])
    >>> round(maxsim(sim, torch.tensor([True, True]), torch.tensor([[True, True, False]])).item(), 6)  # (-0.2+0.3)/2
    0.05
    """
    query_mask = _batch_mask(query_mask, sim.shape[0])
    best = sim.masked_fill(~cand_mask[:, None, :], float("-inf")).amax(dim=-1)
    best = best.masked_fill(~query_mask, 0.0)
    return best.sum(dim=-1) / query_mask.sum(dim=-1).clamp(min=1)


def bag_of_similarities(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """F0: mean of the map over valid (query, candidate) pairs.

    >>> sim = torch.tensor([[[0.2, 0.4, 9.0]]])
    >>> round(bag_of_similarities(sim, torch.tensor([True]), torch.tensor([[True, True, False]])).item(), 6)
    0.3
    """
    query_mask = _batch_mask(query_mask, sim.shape[0])
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
    query_mask = _batch_mask(query_mask, sim.shape[0])
    m, n = sim.shape[1:]
    distance = (torch.arange(m, device=sim.device)[:, None] - torch.arange(n, device=sim.device)[None, :]).abs()
    logits = ((sim - lam * distance) / tau).masked_fill(~cand_mask[:, None, :], float("-inf"))
    aligned = (torch.softmax(logits, dim=-1) * sim).sum(dim=-1)
    aligned = aligned.masked_fill(~query_mask, 0.0)
    return aligned.sum(dim=-1) / query_mask.sum(dim=-1).clamp(min=1)


def pooled_cosine(
    query: torch.Tensor, query_mask: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor
) -> torch.Tensor:
    """Pooled: cosine of the masked means of the token states. query (B, m, d) or (m, d); cand (B, n, d)."""
    if query.dim() == 2:
        query, query_mask = query.unsqueeze(0), query_mask.unsqueeze(0)
    return torch.nn.functional.cosine_similarity(masked_mean(query, query_mask), masked_mean(cand, cand_mask), dim=-1)


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, L, d) states, (B, L) mask -> (B, d) mean over the real tokens."""
    return (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)


class FixedHead(nn.Module):
    """A weight-free head (F0, F1, F2) as a module, so it slots in wherever a learned head does."""

    def __init__(self, fn, name: str):
        super().__init__()
        self.fn, self.name = fn, name

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        return self.fn(sim, query_mask, cand_mask)

    def extra_repr(self) -> str:
        return self.name


class PooledHead(nn.Module):
    """Pooled cosine as a head for end-to-end training: it reads token states, not the map (the cosine of two
    means is not a function of the token-token cosines), so training scores the :func:`masked_mean` states."""

    reads_states = True

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        raise TypeError("PooledHead scores token states with pooled_cosine, not a similarity map")

    def extra_repr(self) -> str:
        return "Pooled cosine"


def MaxSimHead() -> FixedHead:  # noqa: N802 (a factory that reads like a class)
    return FixedHead(maxsim, "F1 MaxSim")


class MapCNNHead(nn.Module):
    """F3: phi(M) (3 channels) -> [conv3x3 + BN + ReLU + maxpool2] x 2 (3->128->256) -> masked global average
    pool -> MLP -> tanh. (B, m, n) map -> (B,) scores in [-1, 1]."""

    def __init__(self, channels: tuple[int, int] = (128, 256), hidden: int = 64):
        super().__init__()
        c1, c2 = tuple(channels)
        self.block1 = nn.Sequential(nn.Conv2d(3, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU())
        self.block2 = nn.Sequential(nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU())
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.mlp = nn.Sequential(nn.Linear(c2, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        query_mask = _batch_mask(query_mask, sim.shape[0])
        x, valid = map_features(sim, query_mask, cand_mask)  # (B, 3, m, n), (B, m, n)
        valid = valid[:, None].float()
        x = self.pool(self.block1(x) * valid)
        valid = self.pool(valid)
        x = self.pool(self.block2(x) * valid)
        valid = self.pool(valid)
        pooled = (x * valid).sum(dim=(2, 3)) / valid.sum(dim=(2, 3)).clamp(min=1)
        return torch.tanh(self.mlp(pooled)).squeeze(-1)


class MapTransformerHead(nn.Module):
    """F4: phi(M) cut into patch x patch tiles on the grid of the actual lengths (ceil(m/p) x ceil(n/p), not a
    fixed 128 x 128), a linear patch embedding to ``dim``, a learned [CLS] and factorised row/column positions,
    pre-norm Transformer layer(s) with tiles holding no valid pair masked out, an MLP on [CLS], tanh.
    (B, m, n) map -> (B,) scores in [-1, 1]. Without gradients (inference) the last layer computes [CLS] only,
    with the same result (see ``cls_attention``); ``cls_only = False`` runs the full layer instead."""

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
        query_mask = _batch_mask(query_mask, sim.shape[0])
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


HEADS = {"F3": MapCNNHead, "F4": MapTransformerHead}
# weight-free heads over the map: nothing to learn frozen, but end-to-end training tunes the encoder through them
FIXED_HEADS = {
    "Pooled": PooledHead,
    "F0": lambda: FixedHead(bag_of_similarities, "F0 bag of similarities"),
    "F1": MaxSimHead,
    "F2": lambda: FixedHead(soft_align, "F2 soft alignment"),
}


def build_head(name: str, **config) -> nn.Module:
    """A head by name: learned ``F3`` (map CNN) or ``F4`` (map Transformer), with ``config`` going to its
    constructor (F4 takes ``dim``, the encoder width; F3 ignores it), or weight-free ``Pooled``, ``F0``-``F2``."""
    if name in FIXED_HEADS:
        return FIXED_HEADS[name]()
    if name not in HEADS:
        raise ValueError(f"unknown head {name!r}; choose from {sorted(HEADS | FIXED_HEADS)}")
    if name == "F3":
        config = {k: v for k, v in config.items() if k != "dim"}
    return HEADS[name](**config)


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

    def __init__(self, verifier: nn.Module, *, beta: float = 0.5, tau: float = 0.9, sharpness: float = 20.0):
        super().__init__()
        self.verifier, self.beta, self.tau, self.sharpness = verifier, beta, tau, sharpness

    def forward(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        base = maxsim(sim, query_mask, cand_mask)
        v = self.verifier(sim, query_mask, cand_mask)
        return base - self.beta * torch.sigmoid(self.sharpness * (base - self.tau)) * (1 - v)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, tau={self.tau}"
