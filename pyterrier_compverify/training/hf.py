"""What both trainers share on top of the Hugging Face Trainer: arguments, run fingerprints, resume and quiet
runs."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..artifacts import BuildBusyError, build_lock, remove_path, write_json
from .config import TrainingSchedule

RUN_FILE = "compverify_run.json"  # the fingerprint of the run whose outputs the folder holds
# change where files go or how fast a step runs, not the model (compile: the same steps up to float rounding)
NOT_IN_FINGERPRINT = ("save_steps", "logging_steps", "cache_dir", "compile")


def training_arguments(
    args_class, checkpoints: Path, config: TrainingSchedule, *, lr: float, use_cpu: bool, verbose: bool, **extra
):
    """Trainer arguments from one of our configs (its :class:`TrainingSchedule` fields). ``bf16`` on a CPU that
    only emulates it warns (``encoder.warn_if_emulated``)."""
    from ..encoder import warn_if_emulated

    if use_cpu and config.bf16:
        warn_if_emulated("bf16", "cpu")
    return args_class(
        output_dir=str(checkpoints),
        max_steps=config.steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=lr,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup,  # transformers 5 reads a float below 1 as a fraction (warmup_ratio is gone)
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
        bf16=config.bf16,
        **extra,
    )


def run_fingerprint(frame: pd.DataFrame, columns, config: dict, **model) -> dict:
    """What decides a run's result: the rows (count and sha256 of ``columns`` in order), the training config
    (without ``NOT_IN_FINGERPRINT``) and the starting model (``model``, JSON values)."""
    digest = hashlib.sha256(json.dumps(frame[list(columns)].to_numpy().tolist()).encode())
    config = {k: v for k, v in config.items() if k not in NOT_IN_FINGERPRINT}
    fingerprint = {"rows": {"count": len(frame), "sha256": digest.hexdigest()}, "config": config, **model}
    return json.loads(json.dumps(fingerprint))  # as read back from the file (tuples -> lists)


def one_run_at_a_time(train: Callable) -> Callable:
    """``train`` holding a lock on its ``output_dir`` (``.NAME.compverify-run.lock`` beside it) from start to end: a
    second run into the same folder meanwhile is refused at once (:class:`~..artifacts.BuildBusyError`), not
    recorded over the first and mixed with it (a run with other options replaced the record until the first had
    checkpoints, and a rerun then loaded the other's model as its own)."""
    signature = inspect.signature(train)

    @functools.wraps(train)
    def locked(*args, **kwargs):
        output_dir = Path(signature.bind(*args, **kwargs).arguments["output_dir"]).expanduser().resolve()
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(build_lock(output_dir.with_name(f"{output_dir.name}.compverify-run")))
            except BuildBusyError:
                raise BuildBusyError(
                    f"another run is writing to {output_dir}: wait for it to finish, or choose another folder"
                ) from None
            except OSError:  # no lock beside a new parent folder (nothing to race on yet) or a read-only one
                pass  # (reusing a finished run there): the run goes on unlocked
            return train(*args, **kwargs)

    return locked


def prepare_output(
    output_dir: Path,
    fingerprint: dict,
    *,
    outputs: tuple[str, ...],
    overwrite: bool = False,
    legacy_match: Callable[[Path], bool] | None = None,
) -> None:
    """Check ``output_dir`` against the run before anything is written there, and record the run.

    The same run (equal fingerprint) resumes, or its finished model is loaded. A folder holding another run's
    checkpoints or ``outputs`` is refused with what differs, unless ``overwrite`` (then they are removed; other
    files stay). A folder from before fingerprints is taken over only when ``legacy_match(output_dir)`` says its
    recorded config is this one (the rows cannot be checked: a warning says so).
    """
    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise FileExistsError(f"{output_dir} is a file, not a folder: choose another output folder")
    record = output_dir / RUN_FILE
    held = [output_dir / name for name in ("checkpoints", *outputs) if (output_dir / name).exists()]
    old = _read_json(record)
    if old == fingerprint:
        return
    if held and old is None and not overwrite and legacy_match is not None and legacy_match(output_dir):
        warnings.warn(
            f"{output_dir} was trained by an older version with this config; its rows are not checked", stacklevel=3
        )
    elif held:
        differs = _differences(old, fingerprint) if old is not None else "a run without a fingerprint"
        if not overwrite:
            raise FileExistsError(
                f"{output_dir} holds another training run ({differs}): pass overwrite=True (--overwrite) "
                "to replace it, or choose another folder"
            )
        for path in held:
            remove_path(path)
    output_dir.mkdir(parents=True, exist_ok=True)
    write_json(record, fingerprint)


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):  # missing, unreadable or damaged: no usable record
        return None
    return value if isinstance(value, dict) else None


def _differences(old: dict, new: dict) -> str:
    """'rows, seed 42 -> 7, head F4 -> F3': what differs between two fingerprints."""
    changes = []
    for key in sorted(set(old) | set(new), key=lambda k: (k != "rows", k)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict) and key != "rows":
            changes += [f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        else:
            changes.append("other rows" if key == "rows" else f"{key} {a!r} -> {b!r}")
    return ", ".join(changes[:6]) + (", ..." if len(changes) > 6 else "")


def run_training(trainer, checkpoints: Path, *, resume: bool, verbose: bool) -> None:
    """Train, resuming from the last complete checkpoint under ``checkpoints`` when there is one and ``resume``
    is set (a checkpoint whose write was cut short is removed: it would be overwritten anyway)."""
    from transformers.trainer_callback import PrinterCallback

    if not verbose:
        trainer.remove_callback(PrinterCallback)
    last = last_complete_checkpoint(Path(checkpoints)) if resume else None
    if last is not None and _finished(last, trainer.args.max_steps):
        # resuming a finished run would take one more step (and move BatchNorm statistics): load it instead, and its
        # state (the training log) with it
        from transformers import TrainerState

        trainer._load_from_checkpoint(str(last))
        trainer.state = TrainerState.load_from_json(str(last / "trainer_state.json"))
        return
    trainer.train(resume_from_checkpoint=None if last is None else str(last))


def last_complete_checkpoint(checkpoints: Path) -> Path | None:
    """The ``checkpoint-N`` folder with the highest N whose ``trainer_state.json`` (written last) reads back;
    later, incomplete ones (a kill during the write) are deleted with a warning."""
    if not checkpoints.is_dir():
        return None
    steps = {p: p.name.removeprefix("checkpoint-") for p in checkpoints.iterdir() if p.name.startswith("checkpoint-")}
    found = [p for p, step in steps.items() if p.is_dir() and step.isdigit()]
    for path in sorted(found, key=lambda p: int(steps[p]), reverse=True):
        if "global_step" in (_read_json(path / "trainer_state.json") or {}):
            return path
        warnings.warn(
            f"{path} is incomplete (killed while it was written): removed, resuming from an earlier one", stacklevel=3
        )
        shutil.rmtree(path, ignore_errors=True)
    return None


def _finished(checkpoint: Path, max_steps: int) -> bool:
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    return state["global_step"] >= max_steps
