"""Token states of a fixed set of training texts, computed once, so a training step costs only what it trains.

``top_layers=0``: the encoder's final token states (L2-normalised, as serving computes them); a frozen-encoder
step then runs only the head. ``top_layers=k``: the hidden states that enter the encoder's last k layers; a
step runs those k layers (which it fine-tunes) and the head, never the layers below.
A cache is written once under a folder keyed by the texts, the encoder spec and k, and reused (also on resume).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyterrier as pt
import torch
from torch import nn

from ..encoder import TokenEncoder, check_texts
from ..scoring import normalise_states


class StateCache:
    """Packed fp16 states of N texts: ``padded(ids)`` gives (B, L, d) float32 states and the (B, L) mask."""

    def __init__(self, packed: np.ndarray, offsets: np.ndarray):
        self.packed, self.offsets = packed, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def padded(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ids = ids.cpu().numpy()
        starts, lengths = self.offsets[ids], self.offsets[ids + 1] - self.offsets[ids]
        mask = np.arange(int(lengths.max()))[None, :] < lengths[:, None]
        rows = (starts[:, None] + np.arange(mask.shape[1])[None, :])[mask]
        out = np.zeros((*mask.shape, self.packed.shape[1]), dtype=np.float32)
        out[mask] = self.packed[rows]
        return torch.from_numpy(out), torch.from_numpy(mask)

    @classmethod
    def build(
        cls,
        encoder: TokenEncoder,
        texts: list[str],
        folder: str | os.PathLike,
        *,
        top_layers: int = 0,
        batch_size: int = 64,
        bf16: bool = False,
        verbose: bool = True,
    ) -> StateCache:
        """Encode ``texts`` once into ``folder/<key>/`` (or open it when it is there already)."""
        texts = check_texts(texts, "training text")
        digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
        path = Path(folder) / f"{encoder.spec.key}-top{top_layers}-{'bf16' if bf16 else 'fp32'}-{digest}"
        if (path / "meta.json").exists():
            return cls(np.load(path / "states.npy", mmap_mode="r"), np.load(path / "offsets.npy"))
        lengths, chunks = [], []
        order = np.argsort(-encoder.token_lengths(texts), kind="stable")
        starts = range(0, len(texts), batch_size)
        states_of = {}
        for start in pt.tqdm(starts, desc=f"caching states (top_layers={top_layers})", disable=not verbose):
            idx = order[start : start + batch_size]
            for i, states in zip(idx, _states(encoder, [texts[i] for i in idx], top_layers, bf16)):
                states_of[int(i)] = states
        for i in range(len(texts)):
            chunks.append(states_of.pop(i))
            lengths.append(chunks[-1].shape[0])
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        packed = np.concatenate(chunks).astype(np.float16)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
        try:
            np.save(tmp / "states.npy", packed)
            np.save(tmp / "offsets.npy", offsets)
            meta = {"encoder": encoder.spec.to_dict(), "top_layers": top_layers, "texts": len(texts), "bf16": bf16}
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
            os.replace(tmp, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return cls(packed, offsets)


def _states(encoder: TokenEncoder, texts: list[str], top_layers: int, bf16: bool) -> list[np.ndarray]:
    """Per text, its real tokens' states: final normalised states (top_layers=0) or the input of the top layers."""
    features = encoder.model.preprocess(texts)
    features = {k: v.to(encoder.device) for k, v in features.items() if isinstance(v, torch.Tensor)}
    with torch.inference_mode(), torch.autocast(encoder.device.type, dtype=torch.bfloat16, enabled=bf16):
        if top_layers == 0:
            out = encoder.model(dict(features))
            hidden = normalise_states(out["token_embeddings"].float(), out["attention_mask"])
        else:
            bert = transformer_of(encoder)
            kwargs = {k: features[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in features}
            hidden = bert(**kwargs, output_hidden_states=True).hidden_states[-(top_layers + 1)].float()
    lengths = features["attention_mask"].sum(dim=1).tolist()
    return [hidden[row, :n].cpu().numpy() for row, n in enumerate(lengths)]


def transformer_of(encoder: TokenEncoder) -> nn.Module:
    """The Hugging Face model inside the sentence-transformers encoder (its first module)."""
    bert = getattr(encoder.model[0], "auto_model", None)
    if bert is None or not hasattr(getattr(bert, "encoder", None), "layer"):
        raise ValueError(f"{encoder!r} is not a BERT-style encoder: top-layer training needs model.encoder.layer")
    return bert


class TopLayers(nn.Module):
    """The encoder's last k layers (shared with the encoder, so training them trains it), applied to cached
    hidden states: (B, L, d) hidden + (B, L) mask -> (B, L, d) normalised token states, zero at padding.
    Exact: equals the full encoder's final token states (the model's own layers, an additive attention mask)."""

    def __init__(self, encoder: TokenEncoder, k: int):
        super().__init__()
        layers = transformer_of(encoder).encoder.layer
        if not 1 <= k <= len(layers):
            raise ValueError(f"top_layers must be between 1 and {len(layers)}, got {k}")
        self.layers = nn.ModuleList(layers[-k:])

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        additive = (~mask)[:, None, None, :].to(hidden.dtype) * torch.finfo(hidden.dtype).min
        for layer in self.layers:
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out
        return normalise_states(hidden, mask)
