"""Verifier artifact: a trained head (safetensors), its config, and the encoder it expects."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pyterrier as pt
from torch import nn

from .encoder import TokenEncoder
from .heads import build_head

META_FILE = "pt_meta.json"
HEAD_FILE = "head.safetensors"
ENCODER_DIR = "encoder"


class Verifier(pt.Artifact):
    """A folder holding a trained verifier: ``pt_meta.json`` (head name and config, the encoder's name,
    fingerprint and max_length, the training config), ``head.safetensors`` and, when the encoder was fine-tuned
    end-to-end, ``encoder/``. Load with ``Verifier(path)`` or ``pt.Artifact.load(path)``; share with
    ``to_hf`` / ``from_hf``; make a reranker with :meth:`reranker`."""

    ARTIFACT_TYPE = "verifier"
    ARTIFACT_FORMAT = "compverify"

    def __repr__(self) -> str:
        return f"Verifier({str(self.path)!r})"

    @property
    def meta(self) -> dict:
        path = Path(self.path) / META_FILE
        if not path.exists():
            raise FileNotFoundError(f"no verifier at {self.path} ({META_FILE} missing)")
        meta = json.loads(path.read_text())
        if meta.get("type") != self.ARTIFACT_TYPE:
            raise ValueError(f"{self.path} holds a {meta.get('type')!r} artifact, not a verifier")
        return meta

    @classmethod
    def save(
        cls,
        path: str | os.PathLike,
        encoder: TokenEncoder,
        head: nn.Module,
        head_name: str,
        *,
        head_config: dict | None = None,
        training: dict | None = None,
        fine_tuned: bool = False,
    ) -> Verifier:
        """Write the artifact atomically (a temporary folder renamed into place); replaces an earlier one."""
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)  # the folder may hold training checkpoints
        tmp = Path(tempfile.mkdtemp(prefix=".verifier-", dir=path))
        try:
            save_file({k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}, tmp / HEAD_FILE)
            if fine_tuned:
                encoder.model.save(str(tmp / ENCODER_DIR))
            meta = {
                "type": cls.ARTIFACT_TYPE,
                "format": cls.ARTIFACT_FORMAT,
                "package_hint": "pyterrier-compverify",
                "head": head_name,
                "head_config": head_config or {"dim": encoder.dim},
                "encoder": encoder.describe(),
                "fine_tuned_encoder": fine_tuned,
                "training": training or {},
            }
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
            for name in (HEAD_FILE, ENCODER_DIR, META_FILE):  # meta last: a reader never sees a partial artifact
                target = path / name
                if (tmp / name).exists():
                    with contextlib.suppress(FileNotFoundError):
                        shutil.rmtree(target) if target.is_dir() else target.unlink()
                    os.replace(tmp / name, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return cls(path)

    def load_head(self) -> nn.Module:
        from safetensors.torch import load_file

        meta = self.meta
        head = build_head(meta["head"], **meta["head_config"])
        try:
            head.load_state_dict(load_file(Path(self.path) / HEAD_FILE))
        except Exception as e:  # safetensors / shape errors: name the file
            raise ValueError(f"{Path(self.path) / HEAD_FILE} cannot be loaded into a {meta['head']} head: {e}") from e
        return head.eval()

    def load_encoder(self, *, encoder: TokenEncoder | None = None, device=None, batch_size: int = 32) -> TokenEncoder:
        """The encoder this verifier was trained with (its fine-tuned copy if any); a given ``encoder`` is
        checked against the recorded fingerprint and max_length."""
        info = self.meta["encoder"]
        if encoder is None:
            source = str(Path(self.path) / ENCODER_DIR) if self.meta["fine_tuned_encoder"] else info["name"]
            encoder = TokenEncoder(source, max_length=info["max_length"], device=device, batch_size=batch_size)
        given = encoder.describe()
        for key in ("fingerprint", "max_length"):
            if given[key] != info[key]:
                raise ValueError(
                    f"{self} expects encoder {info['name']!r} with {key} {info[key]}, got {given['name']!r} with "
                    f"{key} {given[key]}: pass the encoder it was trained with"
                )
        return encoder

    def reranker(self, **kwargs):
        """A PyTerrier reranker for this verifier (MapVerifier for F4, MapCNN for F3; for a weight-free head
        trained end-to-end, PooledCosine / BagOfSimilarities / MaxSim / SoftAlign over its fine-tuned encoder);
        kwargs as for it."""
        from .rerank import BagOfSimilarities, MapCNN, MapVerifier, MaxSim, PooledCosine, SoftAlign

        head = self.meta["head"]
        fixed = {"Pooled": PooledCosine, "F0": BagOfSimilarities, "F1": MaxSim, "F2": SoftAlign}
        if head in fixed:
            encoder = self.load_encoder(encoder=kwargs.pop("encoder", None), device=kwargs.pop("device", None))
            return fixed[head](encoder, **kwargs)
        return {"F4": MapVerifier, "F3": MapCNN}[head](self, **kwargs)
