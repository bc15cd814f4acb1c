"""Verifier training: InfoNCE over a batch of (anchor, positive, hard negative) on the Hugging Face Trainer.

For anchor i the logits are V(a_i, p_j) for every positive j of the batch plus V(a_i, n_i), divided by a
temperature (0.1); cross-entropy to p_i. All B x (B + 1) maps of a batch go through the head in one call.
*frozen*: only the head learns; *end-to-end*: the encoder too, at its own learning rate.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from ..encoder import TokenEncoder
from ..scoring import build_head, head_spec, normalise_states, score_aligned, score_all_pairs
from .hf import run_training, training_arguments
from .triplets import load_triplets


@dataclass
class VerifierTrainingConfig:
    head: str = "F4"
    head_config: dict = field(default_factory=dict)  # extra head arguments, e.g. {"channels": [32, 64]} for F3
    mode: str = "frozen"  # or "end-to-end"
    steps: int = 300
    batch_size: int = 32
    head_lr: float = 1e-4
    encoder_lr: float = 1.5e-5
    weight_decay: float = 0.01
    warmup: float = 0.1
    temperature: float = 0.1
    max_grad_norm: float = 1.0
    seed: int = 42
    save_steps: int = 100
    logging_steps: int = 10

    def __post_init__(self):
        if self.mode not in ("frozen", "end-to-end"):
            raise ValueError(f"mode must be 'frozen' or 'end-to-end', got {self.mode!r}")
        if not head_spec(self.head).learned and self.mode == "frozen":
            raise ValueError(f"{self.head} has no weights: train it end-to-end (the encoder learns through it)")


class VerifierModel(nn.Module):
    """Encoder + head; ``forward(anchor, candidates)`` returns the in-batch InfoNCE loss and logits.

    ``candidates`` holds the B positives followed by the B negatives, tokenised together (one padded length).
    """

    def __init__(self, encoder: TokenEncoder, head: nn.Module, *, train_encoder: bool, temperature: float = 0.1):
        super().__init__()
        self.st = encoder.model
        self.head = head
        self.train_encoder = train_encoder
        self.temperature = temperature
        for p in self.st.parameters():
            p.requires_grad_(train_encoder)

    def token_states(self, features: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, L, d) L2-normalised token states (zero at padding) and (B, L) mask."""
        with torch.set_grad_enabled(self.train_encoder and torch.is_grad_enabled()):
            out = self.st(dict(features))
        mask = out["attention_mask"].bool()
        return normalise_states(out["token_embeddings"], mask), mask

    def pair_logits(self, anchor: dict, candidates: dict) -> torch.Tensor:
        """(B, B + 1) scores: column j < B is V(a_i, p_j), column B is V(a_i, n_i)."""
        a, a_mask = self.token_states(anchor)
        c, c_mask = self.token_states(candidates)
        b = a.shape[0]
        in_batch = score_all_pairs(self.head, a, a_mask, c[:b], c_mask[:b])
        hard = score_aligned(self.head, a, a_mask, c[b:], c_mask[b:])
        return torch.cat([in_batch, hard[:, None]], dim=1)

    def forward(self, anchor: dict, candidates: dict) -> dict:
        logits = self.pair_logits(anchor, candidates) / self.temperature
        labels = torch.arange(logits.shape[0], device=logits.device)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


class _Rows(torch.utils.data.Dataset):
    def __init__(self, frame: pd.DataFrame):
        self.rows = frame[["anchor", "positive", "negative"]].to_dict(orient="records")

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


class _Collate:
    def __init__(self, encoder: TokenEncoder):
        self.encoder = encoder

    def __call__(self, rows: list[dict]) -> dict:
        prep = self.encoder.model.preprocess
        anchor = prep([r["anchor"] for r in rows])
        candidates = prep([r["positive"] for r in rows] + [r["negative"] for r in rows])
        strip = lambda f: {k: v for k, v in f.items() if isinstance(v, torch.Tensor)}  # noqa: E731
        return {"anchor": strip(anchor), "candidates": strip(candidates)}


def _trainer_class():
    from transformers import Trainer

    class VerifierTrainer(Trainer):
        """The HF Trainer with the model's own loss and separate head / encoder learning rates."""

        def __init__(self, *args, encoder_lr: float, **kwargs):
            self.encoder_lr = encoder_lr
            super().__init__(*args, **kwargs)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**inputs)
            return (outputs["loss"], outputs) if return_outputs else outputs["loss"]

        def create_optimizer(self, model=None):
            if self.optimizer is None:
                model = self.model if model is None else model
                groups = [
                    {"params": [p for p in model.head.parameters() if p.requires_grad], "lr": self.args.learning_rate},
                    {"params": [p for p in model.st.parameters() if p.requires_grad], "lr": self.encoder_lr},
                ]
                groups = [g for g in groups if g["params"]]
                self.optimizer = torch.optim.AdamW(groups, weight_decay=self.args.weight_decay)
            return self.optimizer

    return VerifierTrainer


def train_verifier(
    rows: pd.DataFrame | str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    encoder: TokenEncoder | None = None,
    config: VerifierTrainingConfig | None = None,
    resume: bool = True,
    verbose: bool = True,
    callbacks: list | None = None,
):
    """Train a verifier head (and, end-to-end, the encoder) and save it as a :class:`~.Verifier` artifact in
    ``output_dir`` (checkpoints under ``output_dir/checkpoints``; an interrupted run resumes from the last one).

    Returns the saved :class:`pyterrier_compverify.Verifier` and the training log (list of dicts).
    """
    from transformers import TrainingArguments

    from ..verifier import Verifier

    config = config or VerifierTrainingConfig()
    frame = load_triplets(rows)
    encoder = encoder or TokenEncoder()
    torch.manual_seed(config.seed)
    head_config = {"dim": encoder.dim, **config.head_config}
    head = build_head(config.head, **head_config)
    model = VerifierModel(encoder, head, train_encoder=config.mode == "end-to-end", temperature=config.temperature)
    output_dir = Path(output_dir)
    checkpoints = output_dir / "checkpoints"
    args = training_arguments(
        TrainingArguments,
        checkpoints,
        config,
        lr=config.head_lr,
        use_cpu=encoder.device.type == "cpu",
        verbose=verbose,
        max_grad_norm=config.max_grad_norm,
        remove_unused_columns=False,
    )
    trainer = _trainer_class()(
        model=model,
        args=args,
        train_dataset=_Rows(frame),
        data_collator=_Collate(encoder),
        encoder_lr=config.encoder_lr,
        callbacks=callbacks,
    )
    run_training(trainer, checkpoints, resume=resume, verbose=verbose)
    model.eval()
    if model.train_encoder:
        encoder.weights_changed()
    log = [entry for entry in trainer.state.log_history if "loss" in entry]
    verifier = Verifier.save(
        output_dir,
        encoder,
        head,
        config.head,
        head_config=head_config,
        training=asdict(config),
        fine_tuned=model.train_encoder,
    )
    return verifier, log
