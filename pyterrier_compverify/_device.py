"""The one place that turns a ``device`` option into a :class:`torch.device`."""

from __future__ import annotations

import torch


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``None`` means auto: CUDA when available, else Apple MPS, else CPU.

    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if device is not None:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
