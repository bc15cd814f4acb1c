"""Training: bi-encoders (Model A / B), verifiers (frozen / end-to-end), and training rows.

The names are imported on first use, so ``compverify train-* --help`` reads the configs without loading models.
"""

from __future__ import annotations

import importlib

_PUBLIC = {  # name -> the module that defines it
    "EncoderTrainingConfig": "config",
    "VerifierTrainingConfig": "config",
    "TrainingSchedule": "config",
    "mix_rows": "data",
    "structural_triplets": "data",
    "load_triplets": "triplets",
    "train_encoder": "biencoder",
    "VerifierModel": "verifier",
    "train_verifier": "verifier",
}
__all__ = list(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
