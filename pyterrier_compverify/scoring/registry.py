"""The head registry: every scoring head declares its name, its kind and how to build it, in its own file.

Two kinds of head:
- ``map`` heads read the similarity map: ``head(sim (B, m, n), query_mask (B, m) or (m,), cand_mask (B, n))``;
- ``states`` heads read token states: ``head(query (B, m, d), query_mask, cand (B, n, d), cand_mask)``.
Both return (B,) scores. Rerankers and the trainer dispatch on the kind once (``scoring.pairs``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

KINDS = ("map", "states")


@dataclass(frozen=True)
class HeadSpec:
    """A registered head. ``build(dim=..., **config)`` makes the module (``dim`` is the encoder width; a head
    that does not need it ignores it); ``learned`` heads have weights; ``reranker`` names the public
    reranker class that scores with it."""

    name: str
    kind: str
    learned: bool
    build: Callable[..., nn.Module]
    reranker: str
    summary: str

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"head kind must be one of {KINDS}, got {self.kind!r}")


HEADS: dict[str, HeadSpec] = {}


def register_head(spec: HeadSpec) -> HeadSpec:
    """Add a head to the registry (called at the bottom of the head's own module)."""
    if spec.name in HEADS and HEADS[spec.name] != spec:
        raise ValueError(f"a head named {spec.name!r} is registered already")
    HEADS[spec.name] = spec
    return spec


def head_spec(name: str) -> HeadSpec:
    """The registered head called ``name``; an unknown name raises a ValueError listing the known ones."""
    if name not in HEADS:
        raise ValueError(f"unknown head {name!r}; choose from {sorted(HEADS)}")
    return HEADS[name]


def check_head_length(head: nn.Module, max_length: int) -> None:
    """Refuse a head that cannot read maps as long as an encoder's ``max_length`` (F4's ``max_grid`` tiles of
    ``patch`` tokens: 512 by default), before any text is scored; a wrapped head (a penalty's) is read too."""
    inner = getattr(head, "verifier", head)
    limit = getattr(inner, "max_tokens", None)
    if limit is not None and max_length > limit:
        name, grid = getattr(inner, "head_name", type(inner).__name__), -(-max_length // inner.patch)
        raise ValueError(
            f"the {name} head reads texts of up to {limit} tokens (max_grid={limit // inner.patch} tiles of "
            f"{inner.patch}); the encoder's max_length is {max_length}: use max_length <= {limit}, or train a head "
            f"with head_config={{'max_grid': {grid}}}"
        )


def build_head(name: str, **config) -> nn.Module:
    """A head module by name, its ``kind`` set from the registry; ``config`` goes to its constructor."""
    spec = head_spec(name)
    head = spec.build(**config)
    head.kind = spec.kind
    head.head_name = spec.name
    return head


def head_kind(head: nn.Module) -> str:
    """``map`` or ``states``; a module built outside the registry (a wrapper, a test head) reads the map."""
    return getattr(head, "kind", "map")
