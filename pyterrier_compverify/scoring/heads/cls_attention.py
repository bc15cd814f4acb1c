"""The [CLS] output of a pre-norm Transformer layer without computing the other positions (F4 inference).

F4 reads only [CLS] after its last layer, so that layer's keys, values and feed-forward for the tiles are never
needed. With z_t = LN(x_t), the logits of [CLS] are (W_k^T q) . z_t per head and its attention output is
W_v (sum_t a_t z_t) + b_v, so every term is a dot product with z_t or a weighted sum of z_t: O(T d) per
sequence instead of O(T d^2). (The key bias adds one logit to every position and cancels in the softmax.)

When the tiles come straight from the patch embedding (x_t = E p_t + c_t, one layer), even x_t need not be
formed: its mean, norm and those dot products and sums are taken in the smaller patch space.
"""

from __future__ import annotations

import torch
from torch import nn


class NormedRows:
    """z_t = LN(x_t) for explicit rows x (B, T, d): the two operations :func:`cls_only_layer` needs."""

    def __init__(self, norm: nn.LayerNorm, rows: torch.Tensor):
        self.z = norm(rows)

    def dot(self, v: torch.Tensor) -> torch.Tensor:
        """v (B, H, d) -> v . z_t (B, H, T)."""
        return torch.einsum("bhd,btd->bht", v, self.z)

    def mix(self, w: torch.Tensor) -> torch.Tensor:
        """w (B, H, T) -> sum_t w_t z_t (B, H, d)."""
        return torch.einsum("bht,btd->bhd", w, self.z)


class PatchSpace:
    """What :class:`NormedEmbeddedRows` needs of a patch embedding x_t = E p_t + c_t that does not depend on the
    patches: E (d, k), offsets c (T, d), the Gram matrix E^T E with E's column mean appended, c_t E, mean_t c_t
    and |c_t|^2. Built once per grid shape and weight version (see ``MapTransformerHead``)."""

    def __init__(self, weight: torch.Tensor, offsets: torch.Tensor):
        k = weight.shape[1]
        self.weight, self.offsets = weight, offsets
        extra = torch.zeros(k, 8, dtype=weight.dtype, device=weight.device)  # 8 columns keep the matmul fast
        extra[:, 0] = weight.mean(0)
        self.gram_and_mean = torch.cat([weight.T @ weight, extra], dim=1)  # (k, k + 8)
        self.cross2 = 2 * offsets @ weight  # (T, k)
        self.offsets_mean = offsets.mean(1)  # (T,)
        self.offsets_square = (offsets * offsets).sum(-1)  # (T,)


class NormedEmbeddedRows:
    """z_t = LN(E p_t + c_t) for patches p (B, T, k) in a :class:`PatchSpace`, never formed: mean_t and |x_t|^2
    come from E's column mean and the Gram matrix E^T E, dot products and sums from E^T v and E (sum_t w_t p_t)."""

    def __init__(self, norm: nn.LayerNorm, patches: torch.Tensor, space: PatchSpace):
        d, k = space.weight.shape
        self.patches, self.weight, self.offsets = patches, space.weight, space.offsets
        self.gamma, self.beta = norm.weight, norm.bias
        product = patches @ space.gram_and_mean  # (B, T, k + 8)
        self.mean = product[..., k] + space.offsets_mean  # (B, T)
        cross = torch.linalg.vecdot(product[..., :k] + space.cross2, patches)  # |E p_t|^2 + 2 c_t E p_t
        square = cross + space.offsets_square  # |x_t|^2, (B, T)
        self.inv_std = (square / d - self.mean**2 + norm.eps).rsqrt()  # (B, T)

    def dot(self, v: torch.Tensor) -> torch.Tensor:
        scaled = v * self.gamma  # (B, H, d)
        raw = torch.einsum("bhk,btk->bht", scaled @ self.weight, self.patches) + scaled @ self.offsets.T
        centred = raw - self.mean[:, None] * scaled.sum(-1, keepdim=True)
        return self.inv_std[:, None] * centred + (v * self.beta).sum(-1, keepdim=True)

    def mix(self, w: torch.Tensor) -> torch.Tensor:
        scaled = w * self.inv_std[:, None]  # (B, H, T)
        summed = torch.einsum("bht,btk->bhk", scaled, self.patches) @ self.weight.T + scaled @ self.offsets
        centred = summed - (scaled * self.mean[:, None]).sum(-1, keepdim=True)
        return self.gamma * centred + self.beta * w.sum(-1, keepdim=True)


def cls_only_layer(layer: nn.TransformerEncoderLayer, first: torch.Tensor, rest, keep: torch.Tensor) -> torch.Tensor:
    """The output at the first position of a pre-norm ``layer`` (dropout off) over [first, rest].

    first (B, d); rest: :class:`NormedRows` or :class:`NormedEmbeddedRows` (LN by ``layer.norm1``); keep (B, T)
    mask of the rest -> (B, d)."""
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
    weights = torch.cat([torch.einsum("bhd,bd->bh", u, z0)[:, :, None], logits], dim=2).softmax(-1)
    mixed = weights[:, :, :1] * z0[:, None] + rest.mix(weights[:, :, 1:])  # (B, H, d)
    values = torch.einsum("bhd,hed->bhe", mixed, w_v.view(heads, d // heads, d)) + b_v.view(heads, -1)
    x = first + attn.out_proj(values.reshape(-1, d))
    return x + layer.linear2(layer.activation(layer.linear1(layer.norm2(x))))
