"""pyterrier_compverify: dense retrieval that tells "the same thing" from "almost the same words"."""

from .datasets import setup_local_data
from .encoder import DEFAULT_MODEL, EncodedTexts, TokenEncoder
from .heads import MaxSimHead, maxsim
from .rerank import MaxSim, TokenReranker
from .store import CorruptStoreError, TokenStore

__version__ = "0.1.0"
__all__ = [
    "DEFAULT_MODEL",
    "CorruptStoreError",
    "EncodedTexts",
    "MaxSim",
    "MaxSimHead",
    "TokenEncoder",
    "TokenReranker",
    "TokenStore",
    "maxsim",
    "setup_local_data",
]
