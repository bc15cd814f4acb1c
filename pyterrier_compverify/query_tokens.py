"""Query token states made once, by the first stage of a pipeline, for a token reranker later in it.

A dense retriever needs the query's pooled vector; MaxSim and the verifier heads need its token states. Both come
from the same forward pass, so ``encoder.query_token_encoder() >> retriever >> MapVerifier(encoder, ...)`` encodes
each query once: the retriever keeps the ``query_toks`` column, and the reranker uses it when it was made by its
own encoder (a compatible ``EncoderSpec``: same weights and max_length); otherwise it encodes the queries itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyterrier_alpha as pta
import pyterrier_dr
import torch

from .spec import EncoderSpec


@dataclass(frozen=True, eq=False)
class QueryTokens:
    """One query's L2-normalised token states (m, dim) and the spec of the encoder that made them."""

    states: torch.Tensor
    spec: EncoderSpec


class QueryTokenEncoder(pyterrier_dr.BiQueryEncoder):
    """Adds ``query_vec`` (pooled, for a pyterrier-dr retriever) and ``query_toks`` (:class:`QueryTokens`, for a
    token reranker) to a query frame, encoding each distinct query once."""

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pta.validate.query_frame(inp, extra_columns=["query"])
        model = self.bi_encoder_model
        codes, texts = pd.factorize(inp["query"])
        if (codes < 0).any():
            raise ValueError("query column has missing values")
        encoded = model.encode(list(texts), batch_size=self.batch_size, verbose=self.verbose, what="query")
        pooled = encoded.pooled.numpy()
        spec = model.spec
        tokens = [QueryTokens(states, spec) for states in encoded.token_states]
        return inp.assign(query_vec=[pooled[i] for i in codes], query_toks=[tokens[i] for i in codes])

    def __repr__(self) -> str:
        return f"{self.bi_encoder_model!r}.query_token_encoder()"
