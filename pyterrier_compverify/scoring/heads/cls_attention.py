"""The [CLS] output of a pre-norm Transformer layer without computing the other positions (F4's last layer, in
inference and in training: the score reads only [CLS], so its gradients are the full layer's too).

F4 reads only [CLS] after its last layer, so that layer's keys, values and feed-forward for the tiles are never
needed. With z_t = LN(x_t), the logits of [CLS] are (W_k^T q) . z_t per head and its attention output is
W_v (sum_t a_t z_t) + b_v, so every term is a dot product with z_t or a weighted sum of z_t: O(T d) per
sequence instead of O(T d^2). (The key bias adds one logit to every position and cancels in the softmax.)

When every sequence starts with the same first row (F4's learned [CLS] entering a one-layer head), that row's
terms (LN, query, W_k^T q) are computed once and broadcast.
"""

from __future__ import annotations

import torch
from torch import nn


class NormedRows:
    """z_t = LN(x_t) for explicit rows x (B, T, d): the two operations :func:`cls_only_layer` needs. Both are
    matrix-vector products that only read z, so they run in z's own dtype even under autocast (a bf16 copy of z
    would cost more than it saves)."""

    def __init__(self, norm: nn.LayerNorm, rows: torch.Tensor):
        self.z = norm(rows)

    def dot(self, v: torch.Tensor) -> torch.Tensor:
        """v (B, H, d) or (1, H, d) -> v . z_t (B, H, T)."""
        with torch.autocast(self.z.device.type, enabled=False):
            return torch.matmul(v.to(self.z.dtype), self.z.transpose(1, 2))

    def mix(self, w: torch.Tensor) -> torch.Tensor:
        """w (B, H, T) -> sum_t w_t z_t (B, H, d)."""
        with torch.autocast(self.z.device.type, enabled=False):
            return torch.matmul(w.to(self.z.dtype), self.z)


def cls_only_layer(layer: nn.TransformerEncoderLayer, first: torch.Tensor, rest, keep: torch.Tensor) -> torch.Tensor:
    """The output at the first position of a pre-norm ``layer`` (dropout off) over [first, rest].

    first (B, d), or (1, d) when every sequence starts with the same row; rest: :class:`NormedRows` (LN by
    ``layer.norm1``); keep (B, T) mask of the rest -> (B, d)."""
    if not layer.norm_first:
        raise ValueError("cls_only_layer needs a pre-norm (norm_first=True) layer")
    attn = layer.self_attn
    heads, d = attn.num_heads, first.shape[-1]
    w_q, w_k, w_v = attn.in_proj_weight.chunk(3)  # (d, d) each
    b_q, _, b_v = attn.in_proj_bias.chunk(3)
    z0 = layer.norm1(first)  # (B, d)
    q = (z0 @ w_q.T + b_q).view(-1, heads, d // heads)  # (B, H, d/H)
    u = torch.einsum("bhe,hed->bhd", q, w_k.view(heads, d // heads, d)) / (d // heads) ** 0.5  # (B, H, d)
    logits = rest.dot(u).masked_fill(~keep[:, None, :], float("-inf"))  # (B, H, T)
    first_logit = torch.einsum("bhd,bd->bh", u, z0)[:, :, None].expand(logits.shape[0], -1, 1)
    weights = torch.cat([first_logit, logits], dim=2).softmax(-1)
    mixed = weights[:, :, :1] * z0[:, None] + rest.mix(weights[:, :, 1:])  # (B, H, d)
    values = torch.einsum("bhd,hed->bhe", mixed, w_v.view(heads, d // heads, d)) + b_v.view(heads, -1)
    x = first + attn.out_proj(values.reshape(-1, d))
    return x + layer.linear2(layer.activation(layer.linear1(layer.norm2(x))))
