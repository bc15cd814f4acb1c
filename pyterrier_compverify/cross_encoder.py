"""A cross-encoder as a PyTerrier reranker: each (query, passage) pair read together by one transformer.

:class:`CrossEncoderScorer` wraps sentence-transformers' ``CrossEncoder`` (a hub name or a local folder, e.g. one
trained by ``experiments/cross_encoder.py``) and scores every row of a result frame by its raw output (the logit,
no sigmoid), so that a fusion can z-normalise it beside other scores. It reads the passage text: put
``pt.text.get_text(dataset, "text")`` before it where the first stage gives none. It costs one transformer pass per
pair, so it is meant for the top few candidates (``fusion_pipeline(..., cross_encoder=...)`` reads the top 30).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyterrier as pt

from ._device import resolve_device
from .encoder import (
    check_count,
    check_dtype,
    check_texts,
    checked_max_length,
    hub_could_not_give,
    not_on_the_hub,
    resolve_model_path,
    skeleton_embeddings,
    usable_positions,
    warn_if_emulated,
    weight_loading_bar,
)
from .rerank import check_text_rows, empty_scored, scored


class CrossEncoderScorer(pt.Transformer):
    """Scores each row of a result frame by a cross-encoder's logit for (``query``, ``text_field``).

    Input: ``qid, query, docno`` and the text; output: the same rows and columns with ``score`` and ``rank``
    replaced, put last. ``model``: a hub name or a folder of a ``*ForSequenceClassification`` model with one
    output (a bi-encoder or a bare transformer, which would get a random head, is refused); ``max_length``: tokens
    of query and passage together (the passage is cut first), at most the model's positions (None: 128, or its
    positions where fewer); ``batch_size``: pairs
    per forward pass; ``device``: where the model runs (None: CUDA, else MPS, else CPU); ``dtype``: ``"fp32"`` (the
    default, also for None, in which the results' cross-encoder figures were made; ``COMPVERIFY_DTYPE`` does not
    change it) or ``"bf16"``, the model in bf16, faster where :func:`~.encoder.fast_bf16` holds and ranking nearly
    alike (``benchmarks/results/cross_encoder-stop53b.md``).

        pipeline = bm25 % 30 >> pt.text.get_text(dataset, "text") >> cv.CrossEncoderScorer("path/to/cross-encoder")
    """

    def __init__(
        self,
        model: str,
        *,
        max_length: int | None = None,
        batch_size: int | None = None,
        text_field: str = "text",
        device: str | None = None,
        dtype: str | None = "fp32",
        verbose: bool = False,
    ):
        import torch
        from sentence_transformers import CrossEncoder

        self.model = str(model)
        self.batch_size = check_count(batch_size, 64)
        self.text_field = text_field
        self.device = resolve_device(device)
        self.dtype = check_dtype(dtype) if dtype is not None else "fp32"
        warn_if_emulated(self.dtype, self.device)
        self.verbose = verbose
        resolved = resolve_model_path(self.model)
        self.max_length = relevance_model_length(self.model, resolved, max_length)
        with weight_loading_bar(verbose):
            self.cross_encoder = CrossEncoder(
                resolved, max_length=self.max_length, activation_fn=torch.nn.Identity(), device=str(self.device)
            )
        if self.dtype == "bf16":
            self.cross_encoder.to(torch.bfloat16)

    def __repr__(self) -> str:
        dtype = f", dtype={self.dtype!r}" if self.dtype != "fp32" else ""
        return f"CrossEncoderScorer({self.model!r}, max_length={self.max_length}{dtype})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        check_text_rows(inp, self.text_field, "CrossEncoderScorer")
        if len(inp) == 0:
            return empty_scored(inp)
        queries = check_texts(inp["query"], "query column")
        texts = check_texts(inp[self.text_field], f"{self.text_field!r} column")
        scores = self.cross_encoder.predict(
            list(zip(queries, texts)), batch_size=self.batch_size, show_progress_bar=self.verbose
        )
        return scored(inp, np.asarray(scores, dtype=np.float64))


def relevance_model_length(name: str, resolved: str, max_length: int | None) -> int:
    """``max_length`` (None: 128, or the model's positions where fewer), checked before the model's weights load:
    a model that is not a one-output ``*ForSequenceClassification`` model, or a ``max_length`` beyond its
    positions, is refused; a name neither on disk nor on the hub is one line."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(resolved)
    except OSError as error:
        if os.path.exists(resolved) or not hub_could_not_give(error):
            raise
        raise not_on_the_hub("the cross-encoder", name, error) from error
    heads = [a for a in (config.architectures or []) if a.endswith("ForSequenceClassification")]
    if not heads:
        raise ValueError(
            f"{name} is not a cross-encoder (architectures {config.architectures}): give a model trained to score "
            "(query, passage) pairs, a *ForSequenceClassification model"
        )
    if config.num_labels != 1:
        raise ValueError(
            f"{name} gives {config.num_labels} scores per pair, not one: give a cross-encoder trained to score "
            "relevance (num_labels=1)"
        )
    return checked_max_length(name, max_length, usable_positions(config, skeleton_embeddings(config)))
