"""Bi-encoder fine-tuning (Model A / Model B) on the sentence-transformers trainer: multiple-negatives ranking
loss (InfoNCE over in-batch positives plus the hard negatives) with scale 10, AdamW, 10% linear warm-up then
linear decay, seeds, checkpoints and resume. The trainer brings multi-GPU and mixed precision."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from .._device import resolve_device
from ..encoder import DEFAULT_MODEL, TokenEncoder, load_sentence_transformer
from .config import EncoderTrainingConfig
from .hf import one_run_at_a_time, prepare_output, run_fingerprint, run_training, training_arguments
from .triplets import load_triplets

TRAINING_FILE = "compverify_training.json"


@one_run_at_a_time
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
    overwrite: bool = False,
) -> TokenEncoder:
    """Fine-tune ``model`` on (anchor, positive, negative) rows, or on (anchor, positive) pairs with in-batch
    negatives only (no ``negative`` column; ``scale=100`` is InfoNCE at temperature 0.01). ``no_duplicates``
    keeps repeated texts out of a batch. The result is saved in ``output_dir/final`` and returned as a
    :class:`TokenEncoder` (so ``cv.BiEncoder(output_dir / "final")`` loads it back). A folder holding another
    run (other rows, config or model) is refused unless ``overwrite``; the same run resumes or loads its result."""
    from datasets import Dataset
    from sentence_transformers import (
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
    if len(frame) < config.batch_size:
        raise ValueError(f"{len(frame)} training rows cannot fill one batch of {config.batch_size}: add rows")
    # the model first: a wrong device, model or max_length is told before the output folder is made
    st, _ = load_sentence_transformer(model, resolve_device(device), config.max_length, verbose)
    output_dir = Path(output_dir).expanduser()
    checkpoints = output_dir / "checkpoints"
    record = {**asdict(config), "base_model": model}
    fingerprint = run_fingerprint(frame, columns, asdict(config), base_model=model)
    same_config = lambda folder: _recorded_training(folder) == json.loads(json.dumps(record))  # noqa: E731
    prepare_output(output_dir, fingerprint, outputs=("final",), overwrite=overwrite, legacy_match=same_config)
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
    (final / TRAINING_FILE).write_text(pd.Series(record).to_json())
    return TokenEncoder(str(final), max_length=config.max_length, device=device)


def _recorded_training(folder: Path) -> dict | None:
    """The config an earlier run recorded in ``folder/final`` (None when there is none)."""
    try:
        return json.loads((folder / "final" / TRAINING_FILE).read_text())
    except (OSError, ValueError):
        return None
