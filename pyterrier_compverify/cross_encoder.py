"""A cross-encoder as a PyTerrier reranker: each (query, passage) pair read together by one transformer.

:class:`CrossEncoderScorer` wraps sentence-transformers' ``CrossEncoder`` (a hub name or a local folder, e.g. one
trained by ``experiments/cross_encoder.py``) and scores every row of a result frame by its raw output (the logit,
no sigmoid), so that a fusion can z-normalise it beside other scores. It reads the passage text: put
``pt.text.get_text(dataset, "text")`` before it where the first stage gives none. It costs one transformer pass per
pair, so it is meant for the top few candidates (``fusion_pipeline(..., cross_encoder=...)`` reads the top 30).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyterrier as pt
import pyterrier_alpha as pta

from .encoder import check_batch_size, check_texts, resolve_model_path
from .rerank import scored


class CrossEncoderScorer(pt.Transformer):
    """Scores each row of a result frame by a cross-encoder's logit for (``query``, ``text_field``).

    Input: ``qid, query, docno`` and the text; output: the same rows and columns with ``score`` and ``rank``
    replaced, put last. ``max_length``: tokens of query and passage together (the passage is cut first);
    ``batch_size``: pairs per forward pass; ``device``: where the model runs (default: sentence-transformers'
    choice).

        pipeline = bm25 % 30 >> pt.text.get_text(dataset, "text") >> cv.CrossEncoderScorer("path/to/cross-encoder")
    """

    def __init__(
        self,
        model: str,
        *,
        max_length: int = 128,
        batch_size: int | None = None,
        text_field: str = "text",
        device: str | None = None,
        verbose: bool = False,
    ):
        import torch
        from sentence_transformers import CrossEncoder

        self.batch_size = check_batch_size(batch_size, 64)
        if not isinstance(max_length, int) or max_length < 2:
            raise ValueError(f"max_length must be a whole number of tokens >= 2, not {max_length!r}")
        self.name = str(model)
        self.max_length = max_length
        self.text_field = text_field
        self.verbose = verbose
        from transformers.utils import logging as hf_logging

        shown = hf_logging.is_progress_bar_enabled()
        if not verbose:
            hf_logging.disable_progress_bar()  # transformers' "Loading weights" bar
        try:
            self.model = CrossEncoder(
                resolve_model_path(self.name), max_length=max_length, activation_fn=torch.nn.Identity(), device=device
            )
        finally:
            if shown:
                hf_logging.enable_progress_bar()
        if self.model.num_labels != 1:
            raise ValueError(
                f"{self.name} gives {self.model.num_labels} scores per pair, not one: give a cross-encoder "
                "trained to score relevance (num_labels=1)"
            )

    def __repr__(self) -> str:
        return f"CrossEncoderScorer({self.name!r}, max_length={self.max_length})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pta.validate.result_frame(inp, extra_columns=["query"])
        if len(inp) == 0:
            out = inp.drop(columns=["score", "rank"], errors="ignore")
            return out.assign(score=pd.Series(dtype="float64"), rank=pd.Series(dtype="int64"))
        if self.text_field not in inp.columns:
            raise ValueError(
                f"CrossEncoderScorer reads the passages' text: add pt.text.get_text(dataset, {self.text_field!r}) "
                "before it (or give text_field=, the column that holds it)"
            )
        queries = check_texts(inp["query"], "query column")
        texts = check_texts(inp[self.text_field], f"{self.text_field!r} column")
        scores = self.model.predict(
            list(zip(queries, texts)), batch_size=self.batch_size, show_progress_bar=self.verbose
        )
        return scored(inp, np.asarray(scores, dtype=np.float64))
