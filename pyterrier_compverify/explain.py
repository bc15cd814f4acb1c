"""Why did a reranker score a text as it did? The token-token similarity map of one (query, text) pair, each
query token's best match, and the reranker's score taken apart (MaxSim, the head's verdict, the penalty).

``reranker.explain(query, text)`` returns an :class:`Explanation`; ``.plot(path)`` draws it (matplotlib, the
``explain`` extra); :func:`plot_explanations` draws several texts against one query side by side.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from .extras import missing, require
from .scoring import ConditionalPenalty, maxsim, pad_token_states, score_candidates, similarity_map
from .scoring.heads.token_weights import TokenWeightedMaxSim
from .scoring.pairs import query_verdicts

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .rerank import TokenReranker

MATPLOTLIB = ("matplotlib", "explain", "drawing the map")  # the module, its extra, what needs it
INSTALL_HINT = missing(*MATPLOTLIB)


@dataclass
class Explanation:
    """One (query, text) pair as a reranker sees it.

    query_tokens (m) and doc_tokens (n): the tokenizer's tokens (word pieces, special tokens kept), in the order
    of the token states; sim: (m, n) float32 cosine map; best: (m,) index of each query token's best match in
    ``doc_tokens`` (the row's argmax). score: the reranker's score of the pair; maxsim: the mean of the best
    matches; verdict: a learned head's own score v (None for a weight-free head); penalty: what the fused form
    subtracts from MaxSim (None when the reranker is not fused).
    """

    reranker: str
    query: str
    text: str
    query_tokens: list[str]
    doc_tokens: list[str]
    sim: np.ndarray
    best: np.ndarray
    score: float
    maxsim: float
    verdict: float | None = None
    penalty: float | None = None

    @property
    def best_sim(self) -> np.ndarray:
        """(m,) similarity of each query token's best match."""
        return self.sim[np.arange(len(self.best)), self.best]

    def scores(self) -> str:
        """The score and, where they apply, MaxSim, the verdict v and the penalty, on one line."""
        parts = [f"score {self.score:.4f}"]
        if self.verdict is not None or self.penalty is not None:
            parts.append(f"MaxSim {self.maxsim:.4f}")
        if self.verdict is not None:
            parts.append(f"verdict v {self.verdict:+.3f}")
        if self.penalty is not None:
            parts.append(f"penalty {self.penalty:.4f}")
        return ", ".join(parts)

    def summary(self) -> str:
        """One line: the reranker and :meth:`scores`."""
        return f"{self.reranker}: {self.scores()}"

    def matches(self) -> list[tuple[str, str, float]]:
        """(query token, its best match, their similarity) for each query token."""
        return [(q, self.doc_tokens[j], float(s)) for q, j, s in zip(self.query_tokens, self.best, self.best_sim)]

    def plot(self, path: str | os.PathLike | None = None) -> Figure:
        """The map as a figure (query tokens down, text tokens across, best matches boxed); saved to ``path``
        (format from its suffix, e.g. ``.png``) when given."""
        return plot_explanations([self], path)

    def _repr_png_(self) -> bytes | None:  # Jupyter shows the map when matplotlib is there, the repr otherwise
        try:
            figure = self.plot()
        except ImportError:
            return None
        import io

        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()

    def __repr__(self) -> str:
        return f"Explanation({self.summary()}; {len(self.query_tokens)} x {len(self.doc_tokens)} tokens)"


def explain(reranker: TokenReranker, query: str, text: str) -> Explanation:
    """The :class:`Explanation` of ``reranker``'s score for ``text`` against ``query``.

    Both texts are encoded by the reranker's encoder, each on its own as ``transform`` encodes a one-row frame (a
    store is not read: the score is the one the reranker gives from text); the map comes from ``scoring.simmap``
    and the score from ``scoring.pairs``, the path ``transform`` takes, so the explained score is the one served
    for this pair alone. In bf16 a text's states move slightly with the texts padded beside it, so the score of
    the same pair within a larger frame can differ in the third decimal (fp32: the same).
    """
    encoder = reranker.encoder
    states = [encoder.encode([t], what=what).token_states[0] for t, what in ((query, "query"), (text, "text"))]
    query_tokens, doc_tokens = (tokens_of(encoder, t) for t in (query, text))
    for tokens, state, what in ((query_tokens, states[0], "query"), (doc_tokens, states[1], "text")):
        if len(tokens) != state.shape[0]:
            raise RuntimeError(f"{what}: {len(tokens)} tokens but {state.shape[0]} token states from {encoder!r}")
    head = reranker.head.to(reranker.device).eval()
    q = states[0].to(reranker.device)
    cand, cand_mask = pad_token_states([states[1]], dtype=q.dtype)
    cand, cand_mask = cand.to(q.device), cand_mask.to(q.device)
    query_mask = torch.ones(q.shape[0], dtype=torch.bool, device=q.device)
    with torch.inference_mode():
        sim = similarity_map(q, cand)  # (1, m, n)
        score = score_candidates(head, q, cand, cand_mask, dtype=reranker.dtype)  # as transform runs it from text
        base = maxsim(sim, query_mask, cand_mask)
        verdict = penalty = None
        if isinstance(head, ConditionalPenalty):
            options = query_verdicts(head, q[None], query_mask[None])  # v(q, q) where the form needs it
            _, verdict, penalty = head.components(sim, query_mask, cand_mask, **options)
        elif any(True for _ in head.parameters()) and not isinstance(head, TokenWeightedMaxSim):
            # a learned verifier alone: its score is its verdict (F1w's score is a weighted MaxSim, not a verdict)
            verdict = score
    if not torch.isfinite(score).all():  # as transform refuses it
        raise FloatingPointError(f"{reranker!r} gave a non-finite score for this pair: check the head's weights")
    sim_np = sim[0].float().cpu().numpy()
    return Explanation(
        reranker=_label(reranker),
        query=query,
        text=text,
        query_tokens=query_tokens,
        doc_tokens=doc_tokens,
        sim=sim_np,
        best=sim_np.argmax(axis=1),
        score=float(score[0]),
        maxsim=float(base[0]),
        verdict=None if verdict is None else float(verdict[0]),
        penalty=None if penalty is None else float(penalty[0]),
    )


def tokens_of(encoder, text: str) -> list[str]:
    """The tokenizer's tokens of ``text`` as the encoder cuts it (special tokens kept, truncated at max_length)."""
    tokenizer = encoder.model.tokenizer
    ids = tokenizer(text, truncation=True, max_length=encoder.max_length)["input_ids"]
    return tokenizer.convert_ids_to_tokens(ids)


def _label(reranker: TokenReranker) -> str:
    """The reranker's class and, for the fused form, its penalty settings."""
    head = reranker.head
    if isinstance(head, ConditionalPenalty):
        gate = "" if head.gate == "forward" else f", {head.gate} gate"
        gate += "" if head.reference == "fixed" else ", against the query's own verdict"
        return f"{type(reranker).__name__} (MaxSim - penalty, beta {head.beta:g}, tau {head.tau:g}{gate})"
    return type(reranker).__name__


def require_matplotlib() -> None:
    """Raise one line naming the extra to install when matplotlib is missing (:class:`~.extras.MissingExtraError`)."""
    require(*MATPLOTLIB)


def plot_explanations(
    explanations: Sequence[Explanation],
    path: str | os.PathLike | None = None,
    *,
    labels: Sequence[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Several explanations side by side on one colour scale (e.g. a paraphrase and a near-miss of one query);
    saved to ``path`` when given. ``labels``: a word per panel put before its text (``"near-miss"``);
    ``title``: the figure's title (default: the query, the reranker and how to read the boxes)."""
    require_matplotlib()
    from matplotlib.figure import Figure  # no pyplot: no global state, works without a display

    if not explanations:
        raise ValueError("plot_explanations needs at least one explanation")
    low = min(0.0, *(float(e.sim.min()) for e in explanations))
    widths = [max(len(e.doc_tokens), 4) for e in explanations]
    rows = max(len(e.query_tokens) for e in explanations)
    size = (min(2.5 + 0.32 * sum(widths) + 1.4 * len(widths), 40), min(3.0 + 0.3 * rows, 40))
    figure = Figure(figsize=size, layout="constrained")
    axes = figure.subplots(1, len(explanations), squeeze=False, gridspec_kw={"width_ratios": widths})[0]
    if labels is not None and len(labels) != len(explanations):
        raise ValueError(f"{len(labels)} labels for {len(explanations)} explanations: give one per explanation")
    image = None
    for ax, explanation, label in zip(axes, explanations, labels or [None] * len(explanations)):
        image = _draw(ax, explanation, low, label)
    figure.colorbar(image, ax=list(axes), fraction=0.025, pad=0.02, label="cosine")
    queries = {e.query for e in explanations}
    default = f"query {explanations[0].query!r} · {explanations[0].reranker}\n" if len(queries) == 1 else ""
    legend = "red boxes: each query token's best match (its cosine on the right)"
    figure.suptitle(title or f"{default}{legend}", fontsize=10, parse_math=False)  # "$5 and $10" as written
    if path is not None:
        figure.savefig(path, dpi=110, bbox_inches="tight")
    return figure


def _draw(ax: Axes, e: Explanation, low: float, label: str | None):
    """One map on ``ax``: query tokens down the left, each best match's similarity down the right, text tokens
    across the bottom, best matches boxed; the score in the title."""
    from matplotlib.patches import Rectangle

    m, n = e.sim.shape
    image = ax.imshow(e.sim, cmap="viridis", vmin=low, vmax=1.0, aspect="auto", interpolation="nearest")
    for i, j in enumerate(e.best):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.8))
    ax.set_xticks(range(n), e.doc_tokens, rotation=60, ha="right", rotation_mode="anchor", fontsize=9, parse_math=False)
    ax.set_yticks(range(m), e.query_tokens, fontsize=9, parse_math=False)
    right = ax.secondary_yaxis("right")
    right.set_yticks(range(m), [f"{s:.2f}" for s in e.best_sim], fontsize=8)
    right.tick_params(length=0)
    text = textwrap.fill(f"{label}: {e.text!r}" if label else repr(e.text), 60)
    ax.set_title(f"{text}\n{e.scores()}", fontsize=9, parse_math=False)  # a text's "$\\alpha$" is not mathtext
    return image
