"""Query token states made once, by the first stage of a pipeline, for a token reranker later in it.

A dense retriever needs the query's pooled vector; MaxSim and the verifier heads need its token states. Both come
from the same forward pass, so ``encoder.query_token_encoder() >> retriever >> MapVerifier(encoder, ...)`` encodes
each query once: the retriever keeps the ``query_toks`` column, and the reranker uses it when it was made by its
own encoder (a compatible ``EncoderSpec``: same weights and max_length); otherwise it encodes the queries itself.

A first stage that retrieves from an index holding token states (``cv.BiEncoder(...).retriever(index)``) also says
where the candidates' states are (``QueryTokens.store``), so ``retriever >> cv.MapVerifier()`` needs no ``store=``
and no text column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import pyterrier_alpha as pta
import pyterrier_dr
import torch

from .spec import EncoderSpec

if TYPE_CHECKING:
    from .store import TokenStore


@dataclass(frozen=True, eq=False)
class QueryTokens:
    """One query's L2-normalised token states (m, dim), the spec of the encoder that made them, the query text they
    encode (a reranker uses them only for a row whose ``query`` is still that text: a stage between may rewrite it)
    and, when the first stage knows it, the :class:`TokenStore` holding the token states of the documents it
    retrieved."""

    states: torch.Tensor
    spec: EncoderSpec
    store: TokenStore | None = None
    text: str | None = None

    def __repr__(self) -> str:  # not the states: a printed result frame shows one per row
        store = "" if self.store is None else f", store={self.store!r}"
        return f"QueryTokens(m={self.states.shape[0]}, text={self.text!r}, encoder={self.spec.name!r}{store})"


class QueryEncoderStage(pyterrier_dr.BiQueryEncoder):
    """pyterrier-dr's query encoder, equal to another (PyTerrier's tree plan runs equal stages once) only of the
    same class, encoder spec (name, weights fingerprint, max length, dtype), batch size and store: pyterrier-dr
    compares the model's name alone, so two indices' query encoders, or an fp32 and a bf16 one, were merged."""

    store: TokenStore | None = None

    def _eq_key(self) -> tuple:
        return (type(self), self.bi_encoder_model.spec, self.batch_size, self.store)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._eq_key() == other._eq_key()

    def __hash__(self) -> int:
        return hash(self._eq_key())


class QueryTokenEncoder(QueryEncoderStage):
    """Adds ``query_vec`` (pooled, for a pyterrier-dr retriever) and ``query_toks`` (:class:`QueryTokens`, for a
    token reranker) to a query frame, encoding each distinct query once. With ``store``, each ``query_toks`` also
    names the token store of the index the next stage retrieves from."""

    def __init__(self, bi_encoder_model, verbose=None, batch_size=None, store: TokenStore | None = None):
        super().__init__(bi_encoder_model, verbose=verbose, batch_size=batch_size)
        self.store = store

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pta.validate.query_frame(inp, extra_columns=["query"])  # before retrieval (pt.inspect reads it so)
        model = self.bi_encoder_model
        codes, texts = pd.factorize(inp["query"])
        if (codes < 0).any():
            raise ValueError("query column has missing values")
        encoded = model.encode(list(texts), batch_size=self.batch_size, verbose=self.verbose, what="query")
        pooled = encoded.pooled.numpy()
        spec = model.spec
        tokens = [QueryTokens(states, spec, self.store, text) for states, text in zip(encoded.token_states, texts)]
        return inp.assign(query_vec=[pooled[i] for i in codes], query_toks=[tokens[i] for i in codes])

    def __repr__(self) -> str:
        store = "" if self.store is None else f"store={self.store!r}"
        return f"{self.bi_encoder_model!r}.query_token_encoder({store})"
