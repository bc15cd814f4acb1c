"""Scoring: token states -> similarity map -> head -> score, shared by rerankers and training.

- ``simmap``: normalisation of token states and every shape of the token-token cosine map;
- ``registry``: heads by name and kind (``map`` or ``states``), each registered by its own module in ``heads/``;
- ``pairs``: applying a head to pairs (one query vs candidates, packed store rows, aligned, all pairs);
- ``penalty``: MaxSim lowered by a verifier where MaxSim says near-duplicate.

Adding a head is one module in ``heads/`` that calls ``register_head`` (it is found and imported here).
"""

from __future__ import annotations

import importlib
import pkgutil

from . import heads as _heads_package
from .heads.cnn import MapCNNHead
from .heads.fixed import FixedHead, bag_of_similarities, maxsim, soft_align
from .heads.map_transformer import MapTransformerHead
from .heads.pooled import PooledHead, masked_mean, pooled_cosine
from .pairs import score_aligned, score_all_pairs, score_candidates, score_packed
from .penalty import GATES, REFERENCES, ConditionalPenalty, reverse_maxsim
from .registry import HEADS, HeadSpec, build_head, check_head_length, head_kind, head_spec, register_head
from .simmap import (
    map_features,
    normalise_states,
    pad_token_states,
    patch_grid,
    similarity_map,
    similarity_map_packed,
    similarity_map_pairwise,
)

for _module in pkgutil.iter_modules(_heads_package.__path__):  # every head module registers itself on import
    importlib.import_module(f"{_heads_package.__name__}.{_module.name}")

__all__ = [
    "HEADS",
    "ConditionalPenalty",
    "GATES",
    "REFERENCES",
    "reverse_maxsim",
    "FixedHead",
    "HeadSpec",
    "MapCNNHead",
    "MapTransformerHead",
    "PooledHead",
    "bag_of_similarities",
    "build_head",
    "check_head_length",
    "head_kind",
    "head_spec",
    "map_features",
    "masked_mean",
    "maxsim",
    "normalise_states",
    "pad_token_states",
    "patch_grid",
    "pooled_cosine",
    "register_head",
    "score_aligned",
    "score_all_pairs",
    "score_candidates",
    "score_packed",
    "similarity_map",
    "similarity_map_packed",
    "similarity_map_pairwise",
    "soft_align",
]
