"""Token rows kept as int8 codes with a per-row scale, and their product in integer arithmetic: the serving path
of an int8-coded TokenStore (``dtype="int8"`` on a reranker).

A row x is stored as codes c = rint(x / s) in [-127, 127] with s = max |x| / 127 (the ``int8`` store codec's
rule), so x ~= c * s. The product of a stored row with a query token quantised the same way is
<x, q> ~= s_x * s_q * <c_x, c_q>: the integer dot product runs as int8 x int8 -> int32 (VNNI on a CPU: about 4x
an fp32 product of the same shape, with no fp16 -> fp32 conversion pass and half the bytes gathered), then one
multiply by the two scales.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True, eq=False)
class Int8Rows:
    """Rows as int8 codes (T, d) with their float32 scales (T,): row i ~= codes[i] * scales[i].

    >>> rows = quantise_rows(torch.tensor([[0.5, -1.0], [0.0, 0.0]]))
    >>> rows.codes.tolist(), [round(s * 127, 4) for s in rows.scales.tolist()]
    ([[64, -127], [0, 0]], [1.0, 0.0])
    """

    codes: torch.Tensor
    scales: torch.Tensor

    @property
    def shape(self) -> torch.Size:
        return self.codes.shape

    def __getitem__(self, rows: slice) -> Int8Rows:
        return Int8Rows(self.codes[rows], self.scales[rows])

    def to(self, device: torch.device | str) -> Int8Rows:
        """The same rows on ``device`` (no copy when they are there already)."""
        return Int8Rows(self.codes.to(device), self.scales.to(device))

    def decode(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """(T, d) rows in ``dtype``: codes times scales."""
        return (self.codes.float() * self.scales[:, None]).to(dtype)


def quantise_rows(x: torch.Tensor) -> Int8Rows:
    """(T, d) float rows -> :class:`Int8Rows` by the int8 store codec's rule (a zero row gets scale 0)."""
    x = x.float()
    scales = x.abs().amax(dim=1) / 127.0
    codes = torch.round(x / torch.where(scales > 0, scales, 1.0)[:, None]).clamp_(-127, 127).to(torch.int8)
    return Int8Rows(codes, scales)


def int8_product(rows: Int8Rows, query: Int8Rows, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """Rows (T, d) against query tokens (k, d), both int8 -> (T, k) float32 ~= decoded rows @ decoded query.T,
    written into ``out`` (T, k) float32 (any strides) when given.

    The integer sums are exact (|sum| <= d * 127^2 fits int32, and float32 up to d = 1040): on a CPU they run as
    ``torch._int_mm`` (int8 x int8 -> int32, any shape there), elsewhere as an exact float32 product (a GPU's
    ``_int_mm`` has shape limits of its own).

    >>> r, q = quantise_rows(torch.eye(8)[:3]), quantise_rows(torch.eye(8)[:1])
    >>> int8_product(r, q).flatten().tolist()
    [1.0, 0.0, 0.0]
    """
    if rows.codes.device.type == "cpu":
        sums = torch._int_mm(rows.codes, query.codes.T)
    else:
        sums = torch.mm(rows.codes.float(), query.codes.float().T)
    out = torch.mul(sums, rows.scales[:, None], out=out)  # int32 * float32 -> float32, one pass
    return out.mul_(query.scales[None, :])
