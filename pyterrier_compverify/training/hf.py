"""What both trainers share on top of the Hugging Face Trainer: arguments, resume and quiet runs."""

from __future__ import annotations

import json
from pathlib import Path


def training_arguments(args_class, checkpoints: Path, config, *, lr: float, use_cpu: bool, verbose: bool, **extra):
    """Trainer arguments from one of our configs: ``steps``, ``batch_size``, ``weight_decay``, ``warmup`` (a
    fraction: linear warm-up, then linear decay), ``seed``, ``save_steps``, ``logging_steps``."""
    return args_class(
        output_dir=str(checkpoints),
        max_steps=config.steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=lr,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup,
        lr_scheduler_type="linear",
        seed=config.seed,
        data_seed=config.seed,
        save_steps=config.save_steps,
        save_total_limit=2,
        logging_steps=config.logging_steps,
        report_to="none",
        dataloader_drop_last=True,
        disable_tqdm=not verbose,
        use_cpu=use_cpu,
        **extra,
    )


def run_training(trainer, checkpoints: Path, *, resume: bool, verbose: bool) -> None:
    """Train, resuming from the last checkpoint under ``checkpoints`` when there is one and ``resume`` is set."""
    from transformers.trainer_callback import PrinterCallback
    from transformers.trainer_utils import get_last_checkpoint

    if not verbose:
        trainer.remove_callback(PrinterCallback)
    last = get_last_checkpoint(str(checkpoints)) if resume and Path(checkpoints).exists() else None
    if last is not None and _finished(Path(last), trainer.args.max_steps):
        # resuming a finished run would take one more step (and move BatchNorm statistics): load it instead
        trainer._load_from_checkpoint(last)
        return
    trainer.train(resume_from_checkpoint=last)


def _finished(checkpoint: Path, max_steps: int) -> bool:
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    return state["global_step"] >= max_steps
