"""Scoring (query, candidate) pairs with a head: the one path that serving, the store and training share.

The kind of the head (``registry.head_kind``) is read here and nowhere else: a map head gets the similarity map
of the pair (built by ``simmap``), a states head the token states themselves.
"""

from __future__ import annotations

import torch
from torch import nn

from .registry import head_kind
from .simmap import similarity_map, similarity_map_packed, similarity_map_pairwise


def score_candidates(head: nn.Module, query: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """One query's real token states (m, d) against B zero-padded candidates (B, n, d) with mask (B, n) -> (B,)."""
    query_mask = torch.ones(query.shape[0], dtype=torch.bool, device=query.device)
    if head_kind(head) == "states":
        return head(query, query_mask, cand, cand_mask)
    return head(similarity_map(query, cand), query_mask, cand_mask)


def score_packed(head: nn.Module, query: torch.Tensor, packed: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """One query (m, d) against B candidates given as packed real-token rows (T, d) (any float dtype, e.g. fp16
    rows of a store) and their (B, L) mask -> (B,). A map head never sees a padded copy of the states."""
    if head_kind(head) == "states":
        cand = torch.zeros((*mask.shape, packed.shape[1]), dtype=query.dtype, device=query.device)
        cand[mask] = packed.to(query.device, query.dtype)
        return score_candidates(head, query, cand, mask)
    query_mask = torch.ones(query.shape[0], dtype=torch.bool, device=query.device)
    return head(similarity_map_packed(query, packed, mask), query_mask, mask)


def score_aligned(
    head: nn.Module, query: torch.Tensor, query_mask: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor
) -> torch.Tensor:
    """Query i against candidate i: (B, m, d) and (B, n, d) zero-padded states with their masks -> (B,)."""
    if head_kind(head) == "states":
        return head(query, query_mask, cand, cand_mask)
    return head(similarity_map(query, cand), query_mask, cand_mask)


def score_all_pairs(
    head: nn.Module, query: torch.Tensor, query_mask: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor
) -> torch.Tensor:
    """Every query against every candidate (in-batch negatives): (A, m, d), (C, n, d) -> (A, C) scores.

    All A x C maps go through a map head in one call; a states head may offer ``all_pairs`` to do better than
    scoring the A x C expanded pairs.
    """
    a, m = query.shape[:2]
    c, n = cand.shape[:2]
    if head_kind(head) == "states":
        if hasattr(head, "all_pairs"):
            return head.all_pairs(query, query_mask, cand, cand_mask)
        q = query[:, None].expand(a, c, *query.shape[1:]).reshape(a * c, *query.shape[1:])
        qm = query_mask[:, None].expand(a, c, m).reshape(a * c, m)
        k = cand[None].expand(a, c, *cand.shape[1:]).reshape(a * c, *cand.shape[1:])
        km = cand_mask[None].expand(a, c, n).reshape(a * c, n)
        return head(q, qm, k, km).reshape(a, c)
    sim = similarity_map_pairwise(query, cand).reshape(a * c, m, n)
    qm = query_mask[:, None].expand(a, c, m).reshape(a * c, m)
    km = cand_mask[None].expand(a, c, n).reshape(a * c, n)
    return head(sim, qm, km).reshape(a, c)
