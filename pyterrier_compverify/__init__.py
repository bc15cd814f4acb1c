"""pyterrier_compverify: dense retrieval that tells "the same thing" from "almost the same words".

Public names are imported on first use (``cv.MaxSim`` loads torch and the encoder only then), so the
``compverify`` command starts fast; the dataset ids (``irds:compverify/...``) are registered on import.
"""

from __future__ import annotations

import importlib

from .datasets import setup_local_data

__version__ = "0.1.0"

_PUBLIC = {  # name -> the module that defines it
    "BiEncoder": "biencoder",
    "BagOfSimilarities": "rerank",
    "MaxSim": "rerank",
    "PooledCosine": "rerank",
    "CrossEncoderScorer": "cross_encoder",
    "ScoreFusion": "fusion",
    "SoftAlign": "rerank",
    "TokenReranker": "rerank",
    "MapCNN": "verifier",
    "MapVerifier": "verifier",
    "TrainedHeadReranker": "verifier",
    "Verifier": "verifier",
    "WeightedMaxSim": "verifier",
    "DEFAULT_MODEL": "spec",
    "EncodedTexts": "encoder",
    "TokenEncoder": "encoder",
    "QueryTokens": "query_tokens",
    "HEADS": "scoring",
    "MapCNNHead": "scoring",
    "MapTransformerHead": "scoring",
    "maxsim": "scoring",
    "EncoderSpec": "spec",
    "IncompatibleEncoderError": "spec",
    "CorruptArtifactError": "artifacts",
    "CorruptStoreError": "store",
    "CorruptVerifierError": "verifier",
    "TokenStore": "store",
    "WordNetCoverage": "wordnet_coverage",
}
_SUBMODULES = ("datasets", "measures", "negatives", "querygen", "scoring", "training", "verifier")
__all__ = [*_PUBLIC, "setup_local_data"]


def __getattr__(name: str):
    """Public classes and ``cv.training``, ``cv.negatives``, ... are imported on first use."""
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC, *_SUBMODULES])
