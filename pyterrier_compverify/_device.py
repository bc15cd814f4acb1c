"""The one place that turns a ``device`` option into a :class:`torch.device`."""

from __future__ import annotations

import torch


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``None`` means auto: CUDA when available, else Apple MPS, else CPU.

    A device that is not a device, or one this machine lacks, is a ValueError that says what is there.

    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("gpu")
    Traceback (most recent call last):
    ...
    ValueError: device 'gpu' is not a torch device: use 'cpu', 'cuda', 'cuda:1' or 'mps' (None: auto)
    """
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"  # torch's own reading of an index
    if device is not None:
        try:
            resolved = torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(
                f"device {device!r} is not a torch device: use 'cpu', 'cuda', 'cuda:1' or 'mps' (None: auto)"
            ) from None
        if resolved.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {device!r}: this torch sees no CUDA GPU; use device='cpu' (or None: auto)")
        if resolved.type == "cuda" and (resolved.index or 0) >= torch.cuda.device_count():
            raise ValueError(
                f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s), from cuda:0"
            )
        if resolved.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError(f"device {device!r}: Apple MPS is not available here; use device='cpu' (or None: auto)")
        return resolved
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
