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
from pathlib import Path

import numpy as np
import pyterrier as pt
import torch
from torch import nn

from ..artifacts import build_lock, building_name, remove_leftovers
from ..checks import check_whole
from ..encoder import TokenEncoder, check_count, check_texts
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
    def _opened(cls, path: Path) -> StateCache:
        """The finished cache in ``path``, its states memory-mapped."""
        return cls(np.load(path / "states.npy", mmap_mode="r"), np.load(path / "offsets.npy"))

    @classmethod
    def build(
        cls,
        encoder: TokenEncoder,
        texts: list[str],
        folder: str | os.PathLike,
        *,
        top_layers: int = 0,
        batch_size: int | None = None,
        bf16: bool = False,
        verbose: bool = True,
    ) -> StateCache:
        """Encode ``texts`` once into ``folder/<key>/`` (or open it when it is there already). Texts that another
        cache in ``folder`` holds for the same encoder, k and dtype are copied from it, not encoded again.
        ``batch_size``: texts encoded at once (default: the encoder's)."""
        texts = check_texts(texts, "training text")
        # the list as JSON: joined by newlines, ["a\nb", "c"] and ["a", "b\nc"] shared a key and so their states
        digest = hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]
        kind = f"{encoder.spec.key}-top{top_layers}-{'bf16' if bf16 else 'fp32'}"
        path = Path(folder) / f"{kind}-{digest}"
        if (path / "meta.json").exists():
            return cls._opened(path)
        hashes = text_hashes(texts)
        states_of = _cached_elsewhere(hashes, Path(folder).glob(f"{kind}-*"))
        todo = np.array([i for i in range(len(texts)) if i not in states_of], dtype=np.int64)
        order = todo[np.argsort(-encoder.token_lengths([texts[i] for i in todo]), kind="stable")] if len(todo) else todo
        batch_size = check_count(batch_size, encoder.batch_size)
        starts = range(0, len(order), batch_size)
        desc = f"caching states (top_layers={top_layers}; {len(states_of)} of {len(texts)} reused)"
        for start in pt.tqdm(starts, desc=desc, disable=not verbose):
            idx = order[start : start + batch_size]
            for i, states in zip(idx, _states(encoder, [texts[i] for i in idx], top_layers, bf16)):
                states_of[int(i)] = states.astype(np.float16)  # held as stored: a large encoder's fit in memory
        chunks = [states_of.pop(i) for i in range(len(texts))]
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum([c.shape[0] for c in chunks], out=offsets[1:])
        packed = np.concatenate(chunks)
        path.parent.mkdir(parents=True, exist_ok=True)
        with build_lock(path, wait=True) as locked:  # one save at a time; a process that waited opens the other's
            if (path / "meta.json").exists():  # built by another process meanwhile: the same texts and encoder
                return cls._opened(path)
            if locked:  # unlocked (not POSIX), another process's save may be in progress
                remove_leftovers(path)  # the folders of saves that were killed
            tmp = building_name(path)
            tmp.mkdir()
            try:
                np.save(tmp / "states.npy", packed)
                np.save(tmp / "offsets.npy", offsets)
                np.save(tmp / HASHES_FILE, hashes)
                meta = {"encoder": encoder.spec.to_dict(), "top_layers": top_layers, "texts": len(texts), "bf16": bf16}
                (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
                try:
                    os.replace(tmp, path)
                except OSError:  # "Directory not empty": saved meanwhile where builds are not locked (not POSIX)
                    if not (path / "meta.json").exists():
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return cls(packed, offsets)


HASHES_FILE = "text_hashes.npy"


def text_hashes(texts: list[str]) -> np.ndarray:
    """(N,) uint64: the first 8 bytes of each text's blake2b digest (what a cache records of its texts)."""
    return np.array(
        [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts], dtype=np.uint64
    )


def _cached_elsewhere(hashes: np.ndarray, folders) -> dict[int, np.ndarray]:
    """Position in ``hashes`` -> (n, d) float16 states (as stored), for the texts that complete caches in
    ``folders`` hold (caches of the same encoder, k and dtype, with their text hashes recorded)."""
    found: dict[int, np.ndarray] = {}
    wanted = {int(h): i for i, h in enumerate(hashes)}
    for folder in folders:
        if not (folder / "meta.json").exists() or not (folder / HASHES_FILE).exists():
            continue
        theirs = np.load(folder / HASHES_FILE)
        packed, offsets = np.load(folder / "states.npy", mmap_mode="r"), np.load(folder / "offsets.npy")
        for j, h in enumerate(theirs.tolist()):
            i = wanted.get(h)
            if i is not None and i not in found:
                found[i] = np.asarray(packed[offsets[j] : offsets[j + 1]], dtype=np.float16)
    return found


def _states(encoder: TokenEncoder, texts: list[str], top_layers: int, bf16: bool) -> list[np.ndarray]:
    """Per text, its real tokens' states: final normalised states (top_layers=0) or the input of the top layers."""
    features = encoder.preprocess(texts)  # padded on the right: real tokens first
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


def check_top_layers(encoder: TokenEncoder, k: int) -> int:
    """``k`` if the encoder has that many layers to train (1 to all of them), else a ValueError naming the range."""
    layers = len(transformer_of(encoder).encoder.layer)
    try:
        if check_whole(k, "top_layers") <= layers:
            return int(k)
    except ValueError:
        pass
    raise ValueError(f"top_layers must be between 1 and {layers} (the encoder's layers), got {k!r}")


class TopLayers(nn.Module):
    """The encoder's last k layers (shared with the encoder, so training them trains it), applied to cached
    hidden states: (B, L, d) hidden + (B, L) mask -> (B, L, d) normalised token states, zero at padding.
    Exact: equals the full encoder's final token states (the model's own layers, an additive attention mask)."""

    def __init__(self, encoder: TokenEncoder, k: int):
        super().__init__()
        self.layers = nn.ModuleList(transformer_of(encoder).encoder.layer[-check_top_layers(encoder, k) :])

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        additive = (~mask)[:, None, None, :].to(hidden.dtype) * torch.finfo(hidden.dtype).min
        for layer in self.layers:
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out
        return normalise_states(hidden, mask)
