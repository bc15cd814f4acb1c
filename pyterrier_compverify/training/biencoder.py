"""Bi-encoder fine-tuning (Model A / Model B) on the sentence-transformers trainer: multiple-negatives ranking
loss (InfoNCE over in-batch positives plus the hard negatives) with scale 10, AdamW, 10% linear warm-up then
linear decay, seeds, checkpoints and resume. The trainer brings multi-GPU and mixed precision."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from ..encoder import DEFAULT_MODEL, TokenEncoder, resolve_model_path
from .hf import run_training, training_arguments
from .triplets import load_triplets


@dataclass
class EncoderTrainingConfig:
    steps: int = 500
    batch_size: int = 32  # the paper used 128; smaller fits a CPU
    lr: float = 2e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    scale: float = 10.0
    max_length: int = 128
    seed: int = 42
    save_steps: int = 100
    logging_steps: int = 10
    no_duplicates: bool = False  # batches without repeated texts (needed when a passage has many queries)


def train_encoder(
    rows: pd.DataFrame | str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    model: str = DEFAULT_MODEL,
    config: EncoderTrainingConfig | None = None,
    resume: bool = True,
    verbose: bool = True,
    device: str | None = None,
    callbacks: list | None = None,
) -> TokenEncoder:
    """Fine-tune ``model`` on (anchor, positive, negative) rows, or on (anchor, positive) pairs with in-batch
    negatives only (no ``negative`` column; ``scale=100`` is InfoNCE at temperature 0.01). ``no_duplicates``
    keeps repeated texts out of a batch. The result is saved in ``output_dir/final`` and returned as a
    :class:`TokenEncoder` (so ``cv.BiEncoder(output_dir / "final")`` loads it back)."""
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers

    config = config or EncoderTrainingConfig()
    frame = load_triplets(rows, columns=("anchor", "positive"))
    columns = ["anchor", "positive"]
    if "negative" in frame.columns:
        frame = load_triplets(frame)
        columns.append("negative")
    output_dir = Path(output_dir)
    checkpoints = output_dir / "checkpoints"
    st = SentenceTransformer(resolve_model_path(model), device=device)
    st.max_seq_length = config.max_length
    args = training_arguments(
        SentenceTransformerTrainingArguments,
        checkpoints,
        config,
        lr=config.lr,
        use_cpu=st.device.type == "cpu",
        verbose=verbose,
        batch_sampler=BatchSamplers.NO_DUPLICATES if config.no_duplicates else BatchSamplers.BATCH_SAMPLER,
    )
    dataset = Dataset.from_pandas(frame[columns].reset_index(drop=True))
    trainer = SentenceTransformerTrainer(
        model=st,
        args=args,
        train_dataset=dataset,
        loss=MultipleNegativesRankingLoss(st, scale=config.scale),
        callbacks=callbacks,
    )
    run_training(trainer, checkpoints, resume=resume, verbose=verbose)
    final = output_dir / "final"
    st.save(str(final))
    (final / "compverify_training.json").write_text(pd.Series({**asdict(config), "base_model": model}).to_json())
    return TokenEncoder(str(final), max_length=config.max_length, device=device)
