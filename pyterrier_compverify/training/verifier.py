"""Verifier training: InfoNCE over a batch of (anchor, positive, hard negative) on the Hugging Face Trainer.

For anchor i the logits are V(a_i, p_j) for every positive j of the batch plus V(a_i, n_i), divided by a
temperature (0.1); cross-entropy to p_i. All B x (B + 1) maps of a batch go through the head in one call
(``scoring.pairs``, the path serving uses too).

Modes: *frozen*: only the head learns, over token states computed once for every training text (a
``StateCache``; ``cache_states=False`` re-encodes each batch instead, the slow original path); *last-layer*: the
encoder's top ``top_layers`` layers learn too, over cached hidden states of the layer below; *end-to-end*: the
whole encoder learns, at its own learning rate.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import torch
from torch import nn

from ..encoder import TokenEncoder
from ..scoring import build_head, check_head_length, normalise_states, score_aligned, score_all_pairs
from .config import VerifierTrainingConfig
from .hf import one_run_at_a_time, prepare_output, run_fingerprint, run_training, training_arguments
from .state_cache import StateCache, TopLayers, check_top_layers
from .triplets import COLUMNS, load_triplets

ARTIFACT_FILES = ("head.safetensors", "encoder", "encoder-delta.safetensors", "pt_meta.json")  # Verifier.save's


class EncoderStates(nn.Module):
    """Token states from the full encoder: tokenised ``features`` -> (B, L, d) normalised states, (B, L) mask."""

    def __init__(self, encoder: TokenEncoder, *, train: bool):
        super().__init__()
        self.st, self.train_encoder = encoder.model, train
        for p in self.st.parameters():
            p.requires_grad_(train)

    def train(self, mode: bool = True):
        """A frozen encoder stays in eval mode (no dropout) when the Trainer switches the model to training: the
        head then learns from the states it is served."""
        super().train(mode)
        if not self.train_encoder:
            self.st.eval()
        return self

    def forward(self, features: dict) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.set_grad_enabled(self.train_encoder and torch.is_grad_enabled()):
            out = self.st(dict(features))
        mask = out["attention_mask"].bool()
        return normalise_states(out["token_embeddings"], mask), mask


class CachedStates(nn.Module):
    """Token states from a :class:`StateCache`: text ids (B,) -> (B, L, d) normalised states, (B, L) mask; with
    ``top`` (the encoder's top layers, trained) applied to the cached hidden states below them."""

    def __init__(self, cache: StateCache, top: TopLayers | None = None):
        super().__init__()
        self.cache, self.top = cache, top

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        states, mask = self.cache.padded(ids)
        return (states, mask) if self.top is None else (self.top(states, mask), mask)


class VerifierModel(nn.Module):
    """A state source (:class:`EncoderStates` or :class:`CachedStates`) + head; ``forward(anchor, candidates)``
    returns the in-batch InfoNCE loss and logits. ``candidates`` holds the B positives, then the B negatives.
    ``compile``: the head runs as ``torch.compile(head, dynamic=True)`` (the same weights; on a CPU, inductor's
    C++ kernels fuse its many small element-wise steps); ``head`` stays the plain module that is saved."""

    def __init__(self, source: nn.Module, head: nn.Module, *, temperature: float = 0.1, compile: bool = False):
        super().__init__()
        self.source, self.head, self.temperature = source, head, temperature
        # kept outside the module tree: the checkpoint's keys stay those of the plain head
        self.__dict__["_compiled_head"] = torch.compile(head, dynamic=True) if compile else None

    @property
    def scorer(self) -> nn.Module:
        """The head as it scores in training: compiled when asked for, unless this is a copy whose ``head`` is not
        the compiled one's (e.g. a ``DataParallel`` replica, which copies modules, not this attribute)."""
        compiled = self.__dict__.get("_compiled_head")
        return compiled if compiled is not None and compiled._orig_mod is self.head else self.head

    def pair_logits(self, anchor, candidates) -> torch.Tensor:
        """(B, B + 1) scores: column j < B is V(a_i, p_j), column B is V(a_i, n_i)."""
        a, a_mask = self.source(anchor)
        c, c_mask = self.source(candidates)
        b = a.shape[0]
        in_batch = score_all_pairs(self.scorer, a, a_mask, c[:b], c_mask[:b])
        hard = score_aligned(self.scorer, a, a_mask, c[b:], c_mask[b:])
        return torch.cat([in_batch, hard[:, None]], dim=1)

    def forward(self, anchor, candidates) -> dict:
        logits = self.pair_logits(anchor, candidates).float() / self.temperature
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
    """Rows -> the model's inputs: tokenised texts (encoder source) or text ids (cache source)."""

    def __init__(self, encoder: TokenEncoder, text_ids: dict[str, int] | None = None):
        self.encoder, self.text_ids = encoder, text_ids

    def __call__(self, rows: list[dict]) -> dict:
        anchors = [r["anchor"] for r in rows]
        candidates = [r["positive"] for r in rows] + [r["negative"] for r in rows]
        if self.text_ids is not None:
            ids = lambda texts: torch.tensor([self.text_ids[t] for t in texts])  # noqa: E731
            return {"anchor": ids(anchors), "candidates": ids(candidates)}
        prep = self.encoder.preprocess  # padded on the right, as every map reads it
        strip = lambda f: {k: v for k, v in f.items() if isinstance(v, torch.Tensor)}  # noqa: E731
        return {"anchor": strip(prep(anchors)), "candidates": strip(prep(candidates))}


def _trainer_class():
    from transformers import Trainer

    class VerifierTrainer(Trainer):
        """The HF Trainer with the model's own loss."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**inputs)
            return (outputs["loss"], outputs) if return_outputs else outputs["loss"]

    return VerifierTrainer


@one_run_at_a_time
def train_verifier(
    rows: pd.DataFrame | str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    encoder: TokenEncoder | None = None,
    config: VerifierTrainingConfig | None = None,
    resume: bool = True,
    verbose: bool = True,
    callbacks: list | None = None,
    cache_texts: list[str] | None = None,
    overwrite: bool = False,
):
    """Train a verifier head (and, end-to-end, a copy of the encoder: ``encoder`` itself is not changed) and save it
    as a :class:`~.Verifier` artifact in ``output_dir`` (checkpoints under ``output_dir/checkpoints``; an
    interrupted run resumes from the last one). ``cache_texts``: cache the states of these texts (a superset of
    the rows' texts) so runs over different rows of one pool share one cache. A folder holding another run
    (other rows, config or encoder: see ``compverify_run.json``) is refused unless ``overwrite``; the same run
    resumes or loads its finished model.

    Returns the saved :class:`pyterrier_compverify.Verifier` and the training log (list of dicts).
    """
    from transformers import TrainingArguments

    from ..verifier import Verifier

    config = config or VerifierTrainingConfig()
    frame = load_triplets(rows)
    if len(frame) < config.batch_size:
        raise ValueError(f"{len(frame)} training rows cannot fill one batch of {config.batch_size}: add rows")
    encoder = encoder or TokenEncoder()
    if config.mode != "frozen":  # the tuned weights go to the artifact; the caller's encoder stays as it was
        encoder = copy.deepcopy(encoder)  # (a seed sweep over one encoder object chained its runs)
    output_dir = Path(output_dir).expanduser()
    checkpoints = output_dir / "checkpoints"
    record = _config_record(config)
    fingerprint = run_fingerprint(
        frame, COLUMNS, record, encoder={"fingerprint": encoder.fingerprint, "max_length": encoder.max_length}
    )
    same_config = lambda folder: _recorded_training(folder) == json.loads(json.dumps(record))  # noqa: E731
    prepare_output(output_dir, fingerprint, outputs=ARTIFACT_FILES, overwrite=overwrite, legacy_match=same_config)
    base = encoder.spec  # the encoder before tuning: a last-layer one is saved as its changes against it
    torch.manual_seed(config.seed)
    head_config = {"dim": encoder.dim, **config.head_config}
    head = build_head(config.head, **head_config)
    check_head_length(head, encoder.max_length)  # before the states are cached
    dropouts = {m: m.p for m in encoder.model.modules() if isinstance(m, nn.Dropout)}
    requires_grad = [p.requires_grad for p in encoder.model.parameters()]
    source, text_ids = _state_source(encoder, frame, config, output_dir, verbose, cache_texts)
    model = VerifierModel(source, head, temperature=config.temperature, compile=config.compile)
    args = training_arguments(
        TrainingArguments,
        checkpoints,
        config,
        lr=config.head_lr,
        use_cpu=encoder.device.type == "cpu",
        verbose=verbose,
        max_grad_norm=config.max_grad_norm,
        remove_unused_columns=False,
        train_sampling_strategy="random" if config.shuffle else "sequential",
    )
    trainer = _trainer_class()(
        model=model,
        args=args,
        train_dataset=_Rows(frame),
        data_collator=_Collate(encoder, text_ids),
        callbacks=callbacks,
        optimizers=(_optimizer(model, config), None),  # the Trainer adds its warm-up and decay schedule
    )
    try:
        run_training(trainer, checkpoints, resume=resume, verbose=verbose)
    finally:  # the encoder gets its own dropout back (training may have set it), and a frozen one its flags
        for module, p in dropouts.items():
            module.p = p
        if config.mode == "frozen":  # the caller's encoder itself
            for p, flag in zip(encoder.model.parameters(), requires_grad):
                p.requires_grad_(flag)
    model.eval()
    fine_tuned = config.mode != "frozen"
    if fine_tuned:  # the tuned copy
        for p in encoder.model.parameters():
            p.requires_grad_(False)
        encoder.weights_changed()
    log = [entry for entry in trainer.state.log_history if "loss" in entry]
    verifier = Verifier.save(
        output_dir,
        encoder,
        head,
        config.head,
        head_config=head_config,
        training=record,
        fine_tuned=fine_tuned,
        base=base if config.mode == "last-layer" else None,  # end-to-end changes every tensor: a full copy
    )
    return verifier, log


def _optimizer(model: VerifierModel, config: VerifierTrainingConfig) -> torch.optim.AdamW:
    """AdamW with the head at ``head_lr`` and the encoder layers that learn (if any) at ``encoder_lr``."""
    groups = [
        {"params": [p for p in model.head.parameters() if p.requires_grad], "lr": config.head_lr},
        {"params": [p for p in model.source.parameters() if p.requires_grad], "lr": config.encoder_lr},
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], weight_decay=config.weight_decay)


def _config_record(config: VerifierTrainingConfig) -> dict:
    """The config as runs record it; options left at None are left out, so runs from before an option existed
    keep their fingerprint (and resume)."""
    return {k: v for k, v in asdict(config).items() if not (k in ("encoder_dropout", "cache_bf16") and v is None)}


def _recorded_training(folder: Path) -> dict | None:
    """The training config in the Verifier meta of ``folder`` (None when there is none)."""
    try:
        return json.loads((folder / "pt_meta.json").read_text()).get("training")
    except (OSError, ValueError, AttributeError):
        return None


def _state_source(encoder, frame, config, output_dir: Path, verbose: bool, cache_texts=None):
    """The model's state source and, for a cache, the text -> id map its collator needs."""
    if config.mode == "end-to-end" or not config.cache_states:
        source = EncoderStates(encoder, train=config.mode != "frozen")
        set_dropout(source, config.encoder_dropout)
        return source, None
    texts = list(dict.fromkeys(frame[["anchor", "positive", "negative"]].to_numpy().ravel().tolist()))
    if cache_texts is not None:
        universe = list(dict.fromkeys(cache_texts))
        missing = set(texts) - set(universe)
        if missing:
            raise ValueError(f"{len(missing)} row texts are not in cache_texts, e.g. {sorted(missing)[:1]}")
        texts = universe
    top_layers = check_top_layers(encoder, config.top_layers) if config.mode == "last-layer" else 0  # before caching
    folder = config.cache_dir or output_dir / "state-cache"
    bf16 = config.bf16 if config.cache_bf16 is None else config.cache_bf16
    cache = StateCache.build(encoder, texts, folder, top_layers=top_layers, bf16=bf16, verbose=verbose)
    for p in encoder.model.parameters():
        p.requires_grad_(False)
    top = TopLayers(encoder, top_layers) if top_layers else None
    if top is not None:
        for p in top.parameters():
            p.requires_grad_(True)
        set_dropout(top, config.encoder_dropout)
    return CachedStates(cache, top), {t: i for i, t in enumerate(texts)}


def set_dropout(module: nn.Module, p: float | None) -> None:
    """Set every dropout of ``module`` to probability ``p`` (None: leave them as they are). Trained layers run in
    train mode, so their dropout perturbs the token states the head learns from; 0 makes them the states that
    serving reads (BERT's attention reads its dropout module's ``p`` too)."""
    if p is None:
        return
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
