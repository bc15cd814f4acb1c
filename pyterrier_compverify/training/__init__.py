"""Training: verifiers (frozen / end-to-end) and shared training-row handling."""

from .triplets import load_triplets
from .verifier import VerifierModel, VerifierTrainingConfig, train_verifier

__all__ = ["VerifierModel", "VerifierTrainingConfig", "load_triplets", "train_verifier"]
