"""Weight-space interpolation of a fine-tuned encoder with its base (WiSE-FT, Wortsman et al. 2022):
``theta = (1 - alpha) * theta_base + alpha * theta_tuned``. ``alpha = 0`` is the base model, ``1`` the
fine-tuned one; values in between often keep most of the in-domain gain and most of the base model's
zero-shot quality. Both models must have the same architecture (same parameter names and shapes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..artifacts import write_json
from ..encoder import DEFAULT_MODEL, resolve_model_path, weight_loading_bar, weights_fingerprint
from .hf import one_run_at_a_time

RECORD_FILE = "compverify_interpolation.json"


@one_run_at_a_time  # two interpolations into one folder could record one alpha over the other's weights
def interpolate_encoders(
    fine_tuned: str | os.PathLike,
    output_dir: str | os.PathLike,
    alpha: float,
    *,
    base: str = DEFAULT_MODEL,
    overwrite: bool = False,
) -> Path:
    """Save the sentence-transformers model ``(1 - alpha) * base + alpha * fine_tuned`` to ``output_dir`` and
    return that path (load it with ``cv.TokenEncoder(path)``). Integer buffers (position ids) are copied from the
    fine-tuned model. A folder that already holds the same interpolation (the same base, alpha and fine-tuned
    weights) is reused; another one is refused unless ``overwrite``."""
    import torch
    from sentence_transformers import SentenceTransformer

    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    output_dir = Path(output_dir).expanduser()
    with weight_loading_bar(False):  # two quick loads: no bars
        tuned = SentenceTransformer(resolve_model_path(str(fine_tuned)), device="cpu")
    state = tuned.state_dict()
    # the fine-tuned weights, not only their path: a model retrained at the same path is another interpolation
    record = {"base": str(base), "fine_tuned": str(fine_tuned), "alpha": float(alpha)}
    record["fine_tuned_fingerprint"] = weights_fingerprint(state)
    record_file = output_dir / RECORD_FILE
    if record_file.exists():
        try:
            held = json.loads(record_file.read_text(encoding="utf-8"))
        except ValueError:  # written by a version that wrote it in place, and cut: it vouches for nothing
            held = {}
        if held == record:
            return output_dir
        # a record from before the fingerprint was kept cannot vouch for the weights: rebuilt, not refused
        unvouched = held in ({}, {k: v for k, v in record.items() if k != "fine_tuned_fingerprint"})
        if not overwrite and not unvouched:
            raise FileExistsError(f"{output_dir} holds another interpolation: {record_file.read_text()}")
    record_file.unlink(missing_ok=True)  # first: a run killed while saving must not leave the old record on new weights
    with weight_loading_bar(False):
        start = SentenceTransformer(resolve_model_path(str(base)), device="cpu").state_dict()
    if set(start) != set(state) or any(start[k].shape != state[k].shape for k in state):
        raise ValueError("the base and the fine-tuned model differ in parameter names or shapes")
    with torch.no_grad():
        mixed = {
            k: ((1 - alpha) * start[k].float() + alpha * v.float()).to(v.dtype) if v.is_floating_point() else v
            for k, v in state.items()
        }
    tuned.load_state_dict(mixed)
    tuned.save(str(output_dir))
    write_json(record_file, record)  # last, in one step: the record says the weights are complete
    return output_dir


__all__ = ["interpolate_encoders"]
