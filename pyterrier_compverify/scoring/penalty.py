"""The conditional penalty: a base score (MaxSim) lowered by a verifier only where a gate says near-duplicate."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..checks import check_number
from .heads.fixed import maxsim
from .simmap import batch_mask

GATES = ("forward", "symmetric")
REFERENCES = ("fixed", "query")
SKIP_BELOW = 1e-6  # the default: a penalty that cannot exceed this is not computed (score units)


def reverse_maxsim(sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
    """MaxSim the other way: mean over real candidate tokens of their best query token, (B, m, n) -> (B,).
    Low when the candidate says much the query does not (a longer, more detailed text).

    >>> sim = torch.tensor([[[1.0, 0.2, 0.0]]])  # one query token; two real candidate tokens, one padded
    >>> round(reverse_maxsim(sim, torch.tensor([True]), torch.tensor([[True, True, False]])).item(), 6)
    0.6
    """
    return maxsim(sim.transpose(1, 2), cand_mask, batch_mask(query_mask, sim.shape[0]))


class ConditionalPenalty(nn.Module):
    """S - beta * sigmoid(k (G - tau)) * D: a base score S (MaxSim) lowered by a verifier's verdict v in [-1, 1]
    only where the gate G says "near-duplicate" (G above about tau), so ordinary ranking stays MaxSim's.

    ``gate="forward"``: G = S (the query's words are all in the candidate). ``gate="symmetric"``:
    G = min(S, reverse MaxSim), near-duplicate both ways, so a candidate that adds much to the query (a richer
    description, a long passage) is never penalised, while a one-word edit of the query is.

    ``reference="fixed"``: D = 1 - v. ``reference="query"``: D = max(0, v(q, q) - v), the verdict measured against
    the verifier's verdict on the query's own text, so the query's own text is never penalised and a candidate is
    penalised by how much less the verifier believes it than the query itself. ``scoring.pairs`` passes v(q, q)
    (:meth:`query_verdict` on each query's self-map, one head pass per query).

    The verifier runs only on candidates whose penalty can exceed ``skip_below`` (score units): with v in
    [-1, 1], D <= 2, so a candidate with beta * sigmoid(k (G - tau)) * 2 <= ``skip_below`` keeps S, within
    ``skip_below`` of the full form (:meth:`gated`). A query and a long passage are never near-duplicates both
    ways, so on retrieval the head rarely runs; ``skip_below=0`` runs it on every candidate.

    >>> sim = torch.ones(1, 2, 2)  # identical texts: S = 1
    >>> class Reject(nn.Module):
    ...     def forward(self, sim, q, c): return -torch.ones(sim.shape[0])
    >>> head = ConditionalPenalty(Reject(), beta=0.5, tau=0.9)
    >>> q, c = torch.ones(2, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool)
    >>> round(head(sim, q, c).item(), 3)  # 1 - 0.5 * sigmoid(2) * 2
    0.119
    >>> head = ConditionalPenalty(Reject(), beta=0.5, tau=0.9, reference="query")
    >>> head(sim, q, c, query_verdict=torch.tensor([-1.0])).item()  # the query's own verdict: no penalty
    1.0
    """

    kind = "map"

    def __init__(
        self,
        verifier: nn.Module,
        *,
        beta: float = 0.5,
        tau: float = 0.9,
        sharpness: float = 20.0,
        gate: str = "forward",
        reference: str = "fixed",
        skip_below: float = SKIP_BELOW,
    ):
        super().__init__()
        if gate not in GATES:
            raise ValueError(f"gate={gate!r}: choose one of {', '.join(GATES)}")
        if reference not in REFERENCES:
            raise ValueError(f"reference={reference!r}: choose one of {', '.join(REFERENCES)}")
        beta = check_number(beta, "beta (0: MaxSim alone)", at_least=0)  # a NaN switched the penalty off
        skip_below = check_number(skip_below, "skip_below", at_least=0)
        tau, sharpness = check_number(tau, "tau"), check_number(sharpness, "sharpness", above=0)
        self.verifier, self.beta, self.tau, self.sharpness = verifier, beta, tau, sharpness
        self.gate, self.reference = gate, reference
        self.skip_below = skip_below

    @property
    def needs_query_verdict(self) -> bool:
        """Whether scoring must pass ``query_verdict`` (v(q, q) of each candidate's query)."""
        return self.reference == "query"

    def query_verdict(self, self_sim: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
        """The verifier's verdict on each query against itself: self-maps (G, m, m), mask (G, m) -> (G,)."""
        return self.verdict(self_sim, query_mask, query_mask)

    def verdict(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor:
        """The verifier on (k, m, n) maps -> (k,) float32, always in float32 (autocast off): it sees only the few
        maps whose gate is open, where bf16 autocast's casts cost more than its products save."""
        with torch.autocast(sim.device.type, enabled=False):
            return self.verifier(sim.float(), query_mask, cand_mask).float()

    def forward(
        self,
        sim: torch.Tensor,
        query_mask: torch.Tensor,
        cand_mask: torch.Tensor,
        query_verdict: torch.Tensor | None = None,
    ) -> torch.Tensor:
        self._check_query_verdict(query_verdict)
        query_mask = batch_mask(query_mask, sim.shape[0])
        base, reverse = maxsim(sim, query_mask, cand_mask), self._reverse(sim, query_mask, cand_mask)

        def verdicts(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
            every = len(rows) == sim.shape[0]  # no copy of the maps when every gate is open
            v = self.verdict(*(x if every else x[rows] for x in (sim, query_mask, cand_mask)))
            return v, None if query_verdict is None else query_verdict[rows]

        return self.gated(base, reverse, verdicts)

    def gated(
        self,
        base: torch.Tensor,
        reverse: torch.Tensor | None,
        verdicts: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor | None]],
    ) -> torch.Tensor:
        """S - penalty from S and the reverse MaxSim (B,) (``None`` for the forward gate), asking for verdicts
        only where the gate is open: ``verdicts(rows)`` -> (v, v(q, q)) of candidates ``rows`` (k,), each (k,)
        (v(q, q) of each one's query; ``None`` unless ``reference="query"``). (B,) scores."""
        weight, rows = self.open_gates(base, reverse)
        if len(rows) == 0:
            return base
        penalty = torch.zeros_like(base)
        penalty[rows] = self.penalty(weight[rows], *verdicts(rows))
        return base - penalty

    def open_gates(self, base: torch.Tensor, reverse: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """From S and the reverse MaxSim (B,) (``None`` for the forward gate): the gate weights beta * sigmoid(k (G -
        tau)) (B,) float32 and the candidates (k,) whose penalty can exceed ``skip_below`` (those to verify)."""
        weight, open_gate = self._weight(base, reverse)
        return weight, open_gate.nonzero()[:, 0]

    def penalty(self, weight: torch.Tensor, v: torch.Tensor, own: torch.Tensor | None) -> torch.Tensor:
        """What is subtracted from S: weight * D (k,) float32, from the verdicts v (k,) and, with
        ``reference="query"``, each candidate's query's own verdict ``own`` (k,)."""
        return weight * self._doubt(v, own)

    def components(
        self,
        sim: torch.Tensor,
        query_mask: torch.Tensor,
        cand_mask: torch.Tensor,
        query_verdict: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The parts of the score (each (B,)): the base S (MaxSim), the verifier's verdict v (on every candidate,
        gate open or not) and the penalty beta * sigmoid(sharpness (G - tau)) * D that is subtracted from S (0 where
        the gate is shut, as in scoring; what ``explain`` shows).
        ``query_verdict`` (B,): v(q, q) of each row's query, needed with ``reference="query"``."""
        self._check_query_verdict(query_verdict)
        base = maxsim(sim, query_mask, cand_mask)
        weight, open_gate = self._weight(base, self._reverse(sim, query_mask, cand_mask))
        v = self.verdict(sim, query_mask, cand_mask)
        return base, v, torch.where(open_gate, self.penalty(weight, v, query_verdict), 0.0)

    def _check_query_verdict(self, query_verdict: torch.Tensor | None) -> None:
        if self.needs_query_verdict and query_verdict is None:
            raise ValueError("ConditionalPenalty(reference='query') needs query_verdict: score through scoring.pairs")

    def _reverse(self, sim: torch.Tensor, query_mask: torch.Tensor, cand_mask: torch.Tensor) -> torch.Tensor | None:
        """The reverse MaxSim (B,) where the gate needs it (symmetric), else None."""
        return reverse_maxsim(sim, query_mask, cand_mask) if self.gate == "symmetric" else None

    def _weight(self, base: torch.Tensor, reverse: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(B,) float32 beta * sigmoid(k (G - tau)) and where it can matter: 2 * weight > skip_below (D <= 2)."""
        gate = base if reverse is None else torch.minimum(base, reverse)
        weight = self.beta * torch.sigmoid(self.sharpness * (gate.float() - self.tau))
        return weight, 2 * weight > self.skip_below

    def _doubt(self, v: torch.Tensor, own: torch.Tensor | None) -> torch.Tensor:
        """D in float32 (whatever dtype the verifier ran in): 1 - v, or max(0, v(q, q) - v) with ``own``."""
        v = v.float()
        return 1 - v if self.reference == "fixed" else (own.float() - v).clamp(min=0)

    def extra_repr(self) -> str:
        gate = "" if self.gate == "forward" else f", gate={self.gate}"
        reference = "" if self.reference == "fixed" else f", reference={self.reference}"
        skip = "" if self.skip_below == SKIP_BELOW else f", skip_below={self.skip_below}"
        return f"beta={self.beta}, tau={self.tau}, sharpness={self.sharpness}{gate}{reference}{skip}"
