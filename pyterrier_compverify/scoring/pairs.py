"""Scoring (query, candidate) pairs with a head: the one path that serving, the store and training share.

The kind of the head (``registry.head_kind``) is read here and nowhere else: a map head gets the similarity map
of the pair (built by ``simmap``), a states head the token states themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from .heads.fixed import FixedHead, maxsim
from .heads.token_weights import TokenWeightedMaxSim
from .int8_rows import Int8Rows, int8_product, quantise_rows
from .packed_maxsim import concatenated_ranges, maxsim_both_ways, maxsim_packed, row_bounds
from .penalty import ConditionalPenalty
from .registry import head_kind
from .simmap import (
    map_from_products,
    reduced_product_dtype,
    similarity_map,
    similarity_map_packed,
    similarity_map_pairwise,
)


def run_head(head: nn.Module, dtype: torch.dtype, *inputs: torch.Tensor, **options) -> torch.Tensor:
    """``head(*inputs, **options)`` in float32, or under ``torch.autocast`` in ``dtype`` (bfloat16: matrix
    products in bf16, norms and softmax in float32); float32 scores either way."""
    if dtype == torch.float32:
        return head(*inputs, **options)
    with torch.autocast(inputs[0].device.type, dtype=dtype):
        return head(*inputs, **options).float()


def self_map(queries: torch.Tensor, product: torch.dtype = torch.float32, stored=None) -> torch.Tensor:
    """Each query's map with its own states (G, m, m), float32, made as a candidate's map is made, so a candidate
    whose text is the query gets the query's own map (and a penalty measured against it is zero, up to the
    encoder's batch-dependence: the stored text was encoded beside others, the query alone): the second
    side as the candidates' rows are held (``stored``: a function of (T, d) rows, e.g. a store's codec, or
    ``"int8"`` for int8 products of rows quantised per token), the product in ``product`` precision.

    >>> q = torch.nn.functional.normalize(torch.randn(1, 3, 8), dim=-1)
    >>> bool(torch.allclose(self_map(q), q @ q.transpose(1, 2)))
    True
    """
    if stored == "int8":
        g, m, d = queries.shape
        rows = quantise_rows(queries.reshape(-1, d))
        return torch.stack([int8_product(rows[i * m : (i + 1) * m], rows[i * m : (i + 1) * m]) for i in range(g)])
    if stored is None and product == torch.float32:
        return similarity_map(queries, queries)
    side = queries if stored is None else stored(queries.reshape(-1, queries.shape[-1])).reshape(queries.shape)
    return similarity_map(queries.to(product), side.to(queries.device, product)).float()


def candidate_side(packed, stored_form: Callable | None = None) -> Callable | str:
    """How the candidates' rows are held, for :func:`self_map`: ``"int8"`` for :class:`Int8Rows`, else the
    store's ``stored_form`` where given, else rounding to the rows' dtype."""
    if isinstance(packed, Int8Rows):
        return "int8"
    return stored_form if stored_form is not None else (lambda rows: rows.to(packed.dtype))


def query_verdicts(
    head: nn.Module,
    queries: torch.Tensor,
    query_mask: torch.Tensor,
    dtype: torch.dtype = torch.float32,
    product: torch.dtype = torch.float32,
    stored=None,
) -> dict:
    """The options a map head needs besides the map, per query of zero-padded queries (G, m, d) with mask (G, m):
    for a head that measures candidates against the query's own text (``needs_query_verdict``, e.g.
    ``ConditionalPenalty(reference="query")``) ``query_verdict`` (G,), its verifier on each query's self-map;
    for a head that reads the query's states itself (``query_options``, e.g. F1w's token weights) what it
    returns; else none. ``product`` / ``stored``: how the candidates' maps were made (:func:`self_map`)."""
    options = head.query_options(queries, query_mask) if hasattr(head, "query_options") else {}
    if getattr(head, "needs_query_verdict", False):
        self_maps = self_map(queries, product, stored)
        options["query_verdict"] = run_head(head.query_verdict, dtype, self_maps, query_mask)
    return options


def _per_row(options: dict, repeats: torch.Tensor | int) -> dict:
    """Each query's options repeated for its candidates (``repeats`` per query, or a count for all)."""
    return {k: v.repeat_interleave(repeats, dim=0) for k, v in options.items()}


def score_candidates(
    head: nn.Module,
    query: torch.Tensor,
    cand: torch.Tensor,
    cand_mask: torch.Tensor,
    *,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """One query's real token states (m, d) against B zero-padded candidates (B, n, d) with mask (B, n) -> (B,);
    the head runs in ``dtype`` (see :func:`run_head`)."""
    query_mask = torch.ones(query.shape[0], dtype=torch.bool, device=query.device)
    if head_kind(head) == "states":
        return run_head(head, dtype, query, query_mask, cand, cand_mask)
    options = _per_row(query_verdicts(head, query[None], query_mask[None], dtype), cand.shape[0])
    return run_head(head, dtype, similarity_map(query, cand), query_mask, cand_mask, **options)


def score_packed(
    head: nn.Module,
    query: torch.Tensor,
    packed: torch.Tensor | Int8Rows,
    mask: torch.Tensor,
    *,
    query_mask: torch.Tensor | None = None,
    sizes: Sequence[int] | None = None,
    dtype: torch.dtype = torch.float32,
    deferred: DeferredVerdicts | None = None,
    positions: np.ndarray | None = None,
    stored_form=None,
) -> torch.Tensor:
    """Candidates given as packed real-token rows (T, d) (any float dtype, e.g. fp16 rows of a store, or
    :class:`Int8Rows` of an int8 store, multiplied in integer arithmetic) with their (B, L) mask -> (B,) scores. A
    map head never sees a padded copy of the states.

    With a gated ``ConditionalPenalty`` head and ``deferred`` (a :class:`DeferredVerdicts` of that head), the
    scores returned are S alone and the candidates whose gate is open are recorded there under ``positions``
    (B,), to be penalised by ``deferred.apply`` (one verifier pass for many calls).

    ``query`` is one query (m, d) for all B candidates, or G zero-padded queries (G, m, d) with ``query_mask``
    (G, m), query g scored against ``sizes[g]`` consecutive candidates (several queries in one pass).
    ``dtype`` float32 is exact; bfloat16 multiplies the map in reduced precision
    (``simmap.reduced_product_dtype``) and runs the head under bf16 autocast (:func:`run_head`; the verifier of a
    gated ``ConditionalPenalty`` in float32, see its ``verdict``). ``stored_form``: a function giving (T, d) rows
    as the store holds them (``TokenStore.stored_form``), so that a form measured against the query's own text
    sees that text's map as a candidate's (:func:`self_map`; default: rounded to the rows' dtype)."""
    queries = query[None] if query.dim() == 2 else query
    if query_mask is None:
        query_mask = torch.ones(queries.shape[:2], dtype=torch.bool, device=query.device)
    sizes = [mask.shape[0]] if sizes is None else list(sizes)
    per_candidate = torch.tensor(sizes, device=query.device)
    cand_query_mask = query_mask.repeat_interleave(per_candidate, dim=0)  # (B, m)
    if head_kind(head) == "states":
        packed = packed.decode() if isinstance(packed, Int8Rows) else packed
        cand = torch.zeros((*mask.shape, packed.shape[1]), dtype=query.dtype, device=query.device)
        cand[mask] = packed.to(query.device, query.dtype)
        cand_query = queries.repeat_interleave(per_candidate, dim=0)
        return run_head(head, dtype, cand_query, cand_query_mask, cand, mask)
    side = candidate_side(packed, stored_form)
    reduced = dtype != torch.float32 and not isinstance(packed, Int8Rows)
    product = reduced_product_dtype(packed.dtype, query.device) if reduced else torch.float32
    weighted = isinstance(head, TokenWeightedMaxSim)  # F1w: F1 with a weighted mean over the query's tokens
    if weighted or (isinstance(head, FixedHead) and head.fn is maxsim and not head.options):  # no map, no masks
        weights = head.token_weights(queries, query_mask) if weighted else None
        lengths = mask.sum(1).cpu().numpy()
        return maxsim_packed(queries, query_mask, packed, lengths, sizes, dtype=product, weights=weights)
    if is_gated(head):
        return _gated_packed(head, queries, query_mask, packed, mask, sizes, product, deferred, positions, side)
    sim = similarity_map_packed(queries, packed, mask, sizes=sizes, dtype=product, query_mask=query_mask)
    options = _per_row(query_verdicts(head, queries, query_mask, dtype, product, side), per_candidate)
    return run_head(head, dtype, sim, cand_query_mask, mask, **options)


def is_gated(head: nn.Module) -> bool:
    """Whether ``head`` is a conditional penalty that runs its verifier only where the gate is open (``skip_below``
    > 0): :func:`score_packed` then scores it from MaxSim both ways, and a :class:`DeferredVerdicts` can wait."""
    return isinstance(head, ConditionalPenalty) and head.skip_below > 0


def _gated_packed(
    head: ConditionalPenalty,
    queries: torch.Tensor,
    query_mask: torch.Tensor,
    packed: torch.Tensor,
    mask: torch.Tensor,
    sizes: list[int],
    product: torch.dtype,
    deferred: DeferredVerdicts | None = None,
    positions: np.ndarray | None = None,
    side=None,
) -> torch.Tensor:
    """The conditional penalty from packed rows: MaxSim both ways from one product of all rows in ``product``
    (no map), then one float32 verifier pass over the maps of the candidates whose gate is open and, with
    ``reference="query"``, their queries' self-maps (``ConditionalPenalty.gated`` / ``verdict``); with
    ``deferred``, those maps are recorded there instead (see :func:`score_packed`). (B,) scores."""
    lengths = mask.sum(1).cpu().numpy()
    base, reverse, sims = maxsim_both_ways(queries, query_mask, packed, lengths, sizes, dtype=product)
    reverse = reverse if head.gate == "symmetric" else None
    m, device = queries.shape[1], queries.device
    owner = torch.arange(len(sizes), device=device).repeat_interleave(torch.tensor(sizes, device=device))
    token_ends = row_bounds(lengths, sizes)[0]

    def open_maps(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The maps of candidates ``rows`` (k,) and, with ``reference="query"``, their queries' self-maps after
        them, padded to one width: (sim, query masks, candidate masks, each candidate's self-map number)."""
        picked = rows.cpu().numpy()
        starts, counts = token_ends[picked], lengths[picked]
        token_rows = concatenated_ranges(starts, counts)
        cand_mask = mask[rows][:, : int(counts.max())]
        cand_query_mask = query_mask[owner[rows]]
        products = sims[torch.from_numpy(token_rows).to(device), :m]  # past a query's width: undefined
        real = cand_query_mask.repeat_interleave(torch.from_numpy(counts).to(device), 0)
        maps = [map_from_products(products.masked_fill(~real, 0.0), cand_mask)]  # (k, m, L)
        masks, query_masks, which = [cand_mask], [cand_query_mask], None
        if head.needs_query_verdict:  # the queries' own maps in the same pass, padded to one width
            needed, which = owner[rows].unique(return_inverse=True)
            maps.append(self_map(queries[needed], product, side))  # (g, m, m), made as the candidates
            masks.append(query_mask[needed])
            query_masks.append(query_mask[needed])
        width = max(x.shape[2] for x in maps)
        sim = torch.cat([torch.nn.functional.pad(x.float(), (0, width - x.shape[2])) for x in maps])
        cand = torch.cat([torch.nn.functional.pad(x, (0, width - x.shape[1])) for x in masks])
        return sim, torch.cat(query_masks), cand, which

    if deferred is None:

        def verdicts(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
            sim, query_masks, cand_masks, which = open_maps(rows)
            v = head.verdict(sim, query_masks, cand_masks)  # float32: a few maps (see ConditionalPenalty.verdict)
            return v[: len(rows)], (None if which is None else v[len(rows) :][which])

        return head.gated(base, reverse, verdicts)
    weight, rows = head.open_gates(base, reverse)
    if len(rows):
        deferred.add(np.asarray(positions)[rows.cpu().numpy()], weight[rows], *open_maps(rows))
    return base


VERIFY_CELLS = 256 * 32 * 128  # padded map cells per verifier call of DeferredVerdicts.apply (256 maps of 32 x 128)


class DeferredVerdicts:
    """The candidates of a gated ``ConditionalPenalty`` whose gate is open, gathered over several
    :func:`score_packed` passes and verified in one float32 verifier pass (a pass over a few maps costs mostly its
    fixed overhead): the same scores as penalising pass by pass, up to float rounding. ``len()`` counts the maps
    waiting; :meth:`apply` penalises and empties it."""

    def __init__(self, head: ConditionalPenalty):
        self.head, self.parts = head, []

    def __len__(self) -> int:
        return sum(part[2].shape[0] for part in self.parts)

    def add(self, positions, weight, sim, query_mask, cand_mask, which) -> None:
        """Candidates at ``positions`` (k,) with gate weights (k,), their maps (and their queries' self-maps after
        them: ``which`` (k,) numbers them) sim (k + g, m, n) with masks (k + g, m) and (k + g, n)."""
        self.parts.append((positions, weight, sim, query_mask, cand_mask, which))

    def apply(self, scores: np.ndarray) -> None:
        """Subtract each waiting candidate's penalty from ``scores`` at its position (``scores`` holds S there).
        The maps go through the verifier in calls of at most about ``VERIFY_CELLS`` padded map cells, passes of
        similar size together, so one long candidate does not pad every other map to its length."""
        parts = sorted(self.parts, key=lambda part: part[2].shape[1] * part[2].shape[2])
        self.parts, chunk = [], []
        for part in parts:
            grown = chunk + [part]
            m, n = (max(p[2].shape[dim] for p in grown) for dim in (1, 2))
            if chunk and sum(p[2].shape[0] for p in grown) * m * n > VERIFY_CELLS:
                self._verify(chunk, scores)
                grown = [part]
            chunk = grown
        if chunk:
            self._verify(chunk, scores)

    def _verify(self, parts: list, scores: np.ndarray) -> None:
        """One verifier pass over the maps of ``parts``, padded to their largest (m, n); penalties into ``scores``."""
        pad = torch.nn.functional.pad
        m = max(part[2].shape[1] for part in parts)
        n = max(part[2].shape[2] for part in parts)
        sim = torch.cat([pad(s, (0, n - s.shape[2], 0, m - s.shape[1])) for _, _, s, _, _, _ in parts])
        query_mask = torch.cat([pad(q, (0, m - q.shape[1])) for _, _, _, q, _, _ in parts])
        cand_mask = torch.cat([pad(c, (0, n - c.shape[1])) for _, _, _, _, c, _ in parts])
        v, start = self.head.verdict(sim, query_mask, cand_mask), 0
        for positions, weight, s, _, _, which in parts:
            part, start, k = v[start : start + s.shape[0]], start + s.shape[0], len(positions)
            own = None if which is None else part[k:][which]
            scores[positions] -= self.head.penalty(weight, part[:k], own).cpu().numpy()


def score_aligned(
    head: nn.Module, query: torch.Tensor, query_mask: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor
) -> torch.Tensor:
    """Query i against candidate i: (B, m, d) and (B, n, d) zero-padded states with their masks -> (B,)."""
    if head_kind(head) == "states":
        return head(query, query_mask, cand, cand_mask)
    return head(similarity_map(query, cand), query_mask, cand_mask, **query_verdicts(head, query, query_mask))


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
    return head(sim, qm, km, **_per_row(query_verdicts(head, query, query_mask), c)).reshape(a, c)
