"""Rerankers that score (query, candidate) pairs from token states: one shared base, a class per head."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyterrier as pt
import pyterrier_alpha as pta
import torch
from torch import nn

from .encoder import TokenEncoder, check_texts
from .heads import FIXED_HEADS, ConditionalPenalty, FixedHead, MaxSimHead, pooled_cosine, soft_align
from .query_tokens import QueryTokens
from .simmap import pad_token_states, similarity_map
from .store import TokenStore


class TokenReranker(pt.Transformer):
    """Base of every reranker over token states; subclasses give a head ``(B,m,n) map, masks -> (B,) scores``.

    Input: a result frame with ``qid``, ``query``, ``docno`` and, unless a ``store`` is given, the text column.
    Output: the same rows and columns, with ``score`` and ``rank`` replaced by the head's scores.
    Each distinct query is encoded once; document token states come from the store when one is given (no
    re-encoding), otherwise each distinct text in the frame is encoded once.
    """

    needs_states = False  # True for scorers that read token states rather than the similarity map

    def __init__(
        self,
        encoder: TokenEncoder | None = None,
        *,
        store: TokenStore | str | os.PathLike | None = None,
        text_field: str | None = None,
        batch_size: int | None = None,
        score_batch_size: int = 256,
        verbose: bool = False,
    ):
        self.encoder = encoder if encoder is not None else TokenEncoder()
        self.store = TokenStore(store) if isinstance(store, (str, os.PathLike)) else store
        if self.store is not None:
            self.store.check_encoder(self.encoder)
        self.text_field = text_field or self.encoder.text_field
        self.batch_size = int(batch_size or self.encoder.batch_size)
        self.score_batch_size = int(score_batch_size)
        self.verbose = verbose
        self.head = self.build_head()

    def build_head(self) -> nn.Module:
        raise NotImplementedError

    def score(
        self, query: torch.Tensor, query_mask: torch.Tensor, cand: torch.Tensor, cand_mask: torch.Tensor
    ) -> torch.Tensor:
        """query (m, d) + mask (m,), candidates (B, n, d) + mask (B, n) -> (B,) scores through the head."""
        return self.head(similarity_map(query, cand), query_mask, cand_mask)

    def __repr__(self) -> str:
        store = f", store={self.store!r}" if self.store is not None else ""
        return f"{type(self).__name__}({self.encoder!r}{store})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        extra = ["query"] if self.store is not None else ["query", self.text_field]
        pta.validate.result_frame(inp, extra_columns=extra)
        out = inp.drop(columns=["score", "rank"], errors="ignore")
        if len(inp) == 0:
            return out.assign(score=pd.Series(dtype="float64"), rank=pd.Series(dtype="int64"))
        query_states = self._query_states(inp.drop_duplicates("qid"))
        doc_states = self._doc_states(inp)
        docnos = inp["docno"].to_numpy()
        scores = np.empty(len(inp), dtype=np.float64)
        groups = inp.groupby("qid", sort=False).indices
        device = self.encoder.device
        self.head.to(device).eval()
        for qid, rows in pt.tqdm(groups.items(), desc=repr(self), unit="query", disable=not self.verbose):
            query = query_states[qid].to(device)
            query_mask = torch.ones(query.shape[0], dtype=torch.bool, device=device)
            for start in range(0, len(rows), self.score_batch_size):
                chunk = rows[start : start + self.score_batch_size]
                with torch.inference_mode():
                    if self.store is not None and not self.needs_states:  # map straight from packed fp16 rows
                        sim, cand_mask = self.store.similarity_map(query, docnos[chunk])
                        chunk_scores = self.head(sim, query_mask, cand_mask)
                    else:
                        cand, cand_mask = doc_states(chunk)
                        chunk_scores = self.score(query, query_mask, cand.to(device), cand_mask.to(device))
                scores[chunk] = chunk_scores.float().cpu().numpy()
        out["score"] = scores
        return pt.model.add_ranks(out)

    def _query_states(self, queries: pd.DataFrame) -> dict:
        """qid -> (m, d) token states: from a ``query_toks`` column made by this reranker's encoder (one forward
        pass shared with the first stage), else encoded here."""
        if "query_toks" in queries.columns:
            tokens = queries["query_toks"].tolist()
            fingerprint = self.encoder.fingerprint
            if all(isinstance(t, QueryTokens) and t.fingerprint == fingerprint for t in tokens):
                return dict(zip(queries["qid"], (t.states for t in tokens)))
        texts = check_texts(queries["query"], "query")
        states = self.encoder.encode(texts, batch_size=self.batch_size, verbose=self.verbose, what="query")
        return dict(zip(queries["qid"], states.token_states))

    def _doc_states(self, inp: pd.DataFrame):
        """A function from row positions to the candidates' padded token states (B, n, d) and mask (B, n)."""
        if self.store is not None:
            docnos = inp["docno"].to_numpy()
            return lambda rows: self.store.padded_states(docnos[rows])
        texts = check_texts(inp[self.text_field], f"{self.text_field!r} column")
        text_ids, unique_texts = pd.factorize(pd.Series(texts))
        states = self.encoder.encode(
            list(unique_texts), batch_size=self.batch_size, verbose=self.verbose, what="document"
        ).token_states
        return lambda rows: pad_token_states([states[i] for i in text_ids[rows]])


class MaxSim(TokenReranker):
    """F1 MaxSim reranker: mean over query tokens of the best cosine with any candidate token.

    Example::

        enc = TokenEncoder()
        pipeline = dense_retriever % 100 >> MaxSim(enc, store=TokenStore("corpus.tokens"))
    """

    def build_head(self) -> nn.Module:
        return MaxSimHead()


class BagOfSimilarities(TokenReranker):
    """F0: mean token-token cosine over all valid pairs."""

    def build_head(self) -> nn.Module:
        return FIXED_HEADS["F0"]()


class SoftAlign(TokenReranker):
    """F2 soft alignment with a distance penalty ``lam`` and temperature ``tau`` (PAPERS.md: 0.1, 0.1)."""

    def __init__(self, encoder: TokenEncoder | None = None, *, lam: float = 0.1, tau: float = 0.1, **kwargs):
        self.lam, self.tau = lam, tau
        super().__init__(encoder, **kwargs)

    def build_head(self) -> nn.Module:
        return FixedHead(lambda s, q, c: soft_align(s, q, c, lam=self.lam, tau=self.tau), "F2 soft alignment")


class PooledCosine(TokenReranker):
    """Pooled: cosine of the masked means of the (L2-normalised) token states."""

    needs_states = True

    def build_head(self) -> nn.Module:
        return nn.Identity()

    def score(self, query, query_mask, cand, cand_mask):
        return pooled_cosine(query, query_mask, cand, cand_mask)


class LearnedVerifier(TokenReranker):
    """Base of rerankers with trained weights from a :class:`~pyterrier_compverify.Verifier` artifact."""

    HEAD = ""

    def __init__(
        self,
        verifier=None,
        *,
        encoder: TokenEncoder | None = None,
        device=None,
        penalty: dict | None = None,
        **kwargs,
    ):
        """``penalty``, e.g. ``{"beta": 0.5, "tau": 0.9}``, scores with MaxSim minus the conditional penalty
        beta * sigmoid(20 (MaxSim - tau)) * (1 - v) instead of the verifier's own score v."""
        from .verifier import Verifier

        self.penalty = penalty
        if verifier is None:
            verifier = default_verifier_path(self.HEAD)
        self.verifier = verifier if isinstance(verifier, Verifier) else Verifier(verifier)
        if self.verifier.meta["head"] != self.HEAD:
            raise ValueError(f"{self.verifier} holds a {self.verifier.meta['head']} head, not {self.HEAD}")
        super().__init__(self.verifier.load_encoder(encoder=encoder, device=device), **kwargs)

    @classmethod
    def from_pretrained(cls, name_or_path: str, **kwargs):
        """A local artifact folder, or ``hf:org/repo`` / a Hugging Face repo id shared with ``Verifier.to_hf``."""
        from .verifier import Verifier

        if os.path.isdir(name_or_path):
            return cls(Verifier(name_or_path), **kwargs)
        return cls(Verifier.from_hf(name_or_path.removeprefix("hf:")), **kwargs)

    def build_head(self) -> nn.Module:
        head = self.verifier.load_head()
        return ConditionalPenalty(head, **self.penalty) if self.penalty else head

    def __repr__(self) -> str:
        store = f", store={self.store!r}" if self.store is not None else ""
        penalty = f", penalty={self.penalty}" if self.penalty else ""
        return f"{type(self).__name__}({self.verifier!r}{store}{penalty})"


class MapVerifier(LearnedVerifier):
    """F4: a small Transformer over 8x8 patches of the similarity map (PAPERS.md). ``MapVerifier()`` loads the
    default weights shipped with the package (a frozen-encoder head over all-MiniLM-L6-v2)."""

    HEAD = "F4"


class MapCNN(LearnedVerifier):
    """F3: a CNN over the similarity map features."""

    HEAD = "F3"


def default_verifier_path(head: str) -> str:
    """The packaged default weights for a head, if this package ships them."""
    from importlib.resources import files

    folder = files("pyterrier_compverify") / "weights" / f"{head.lower()}-minilm-frozen"
    if not (folder / "pt_meta.json").is_file():
        raise FileNotFoundError(f"no default {head} weights are shipped with this version; pass a trained Verifier")
    return str(folder)
