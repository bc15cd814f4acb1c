"""Training: bi-encoders (Model A / B), verifiers (frozen / end-to-end), and training rows."""

from .biencoder import EncoderTrainingConfig, train_encoder
from .data import mix_rows, structural_triplets
from .triplets import load_triplets
from .verifier import VerifierModel, VerifierTrainingConfig, train_verifier

__all__ = [
    "EncoderTrainingConfig",
    "mix_rows",
    "structural_triplets",
    "train_encoder",
    "VerifierModel",
    "VerifierTrainingConfig",
    "load_triplets",
    "train_verifier",
]
