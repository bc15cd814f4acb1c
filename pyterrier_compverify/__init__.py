"""pyterrier_compverify: dense retrieval that tells "the same thing" from "almost the same words"."""

from .biencoder import BiEncoder
from .datasets import setup_local_data
from .encoder import DEFAULT_MODEL, EncodedTexts, TokenEncoder
from .query_tokens import QueryTokens
from .rerank import BagOfSimilarities, MaxSim, PooledCosine, SoftAlign, TokenReranker
from .scoring import HEADS, MapCNNHead, MapTransformerHead, maxsim
from .spec import EncoderSpec, IncompatibleEncoderError
from .store import CorruptStoreError, TokenStore
from .verifier import MapCNN, MapVerifier, TrainedHeadReranker, Verifier

__version__ = "0.1.0"
__all__ = [
    "BiEncoder",
    "BagOfSimilarities",
    "MapCNN",
    "MapCNNHead",
    "MapTransformerHead",
    "MapVerifier",
    "PooledCosine",
    "QueryTokens",
    "SoftAlign",
    "Verifier",
    "DEFAULT_MODEL",
    "EncoderSpec",
    "HEADS",
    "IncompatibleEncoderError",
    "TrainedHeadReranker",
    "CorruptStoreError",
    "EncodedTexts",
    "MaxSim",
    "TokenEncoder",
    "TokenReranker",
    "TokenStore",
    "maxsim",
    "setup_local_data",
]

_SUBMODULES = ("datasets", "measures", "negatives", "querygen", "scoring", "training")


def __getattr__(name: str):
    """``cv.training``, ``cv.negatives``, ``cv.querygen``, ``cv.measures``: imported on first use (spaCy)."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
