"""One experiment training run's optimiser, schedule and random stream, saved together so that ``--resume`` goes
on where a killed run stopped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import get_linear_schedule_with_warmup


class RunState:
    """AdamW (weight decay 0.01) with a linear schedule (10% warm-up) over ``steps`` for ``model``, and the run's
    random stream; ``start`` is the step to go on from (0, or what ``path`` holds when ``resume``). A ``path``
    that exists without ``resume`` is refused."""

    def __init__(self, path: Path, name: str, model: torch.nn.Module, *, lr: float, steps: int, seed: int,
                 resume: bool = False):  # fmt: skip
        self.check_new(path, resume)
        self.path, self.model = path, model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        self.sched = get_linear_schedule_with_warmup(self.opt, int(0.1 * steps), steps)
        self.rng = np.random.default_rng(seed)
        self.parts = {name: model, "opt": self.opt, "sched": self.sched}
        self.start = self.load() if resume and path.exists() else 0

    @staticmethod
    def check_new(path: Path, resume: bool) -> None:
        """Refuse a run's state at ``path`` without ``resume`` (restarting over it mixed two runs' logs and
        replaced the first's model); a script calls it first, before minutes of set-up."""
        if path.exists() and not resume:
            raise SystemExit(f"{path.parent} holds a run: --resume goes on with it; another --tag starts a new one")

    def update(self) -> None:
        """One optimiser step on the gradients ``backward`` left (their norm clipped to 1), then zero them."""
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.sched.step()
        self.opt.zero_grad()

    def save(self, step: int) -> None:
        """Write the parts' states, the random stream and ``step`` atomically (a kill while writing leaves the
        previous state)."""
        state = {name: part.state_dict() for name, part in self.parts.items()}
        state.update(rng=self.rng.bit_generator.state, step=step)
        torch.save(state, self.path.with_suffix(".tmp"))
        self.path.with_suffix(".tmp").replace(self.path)

    def load(self) -> int:
        state = torch.load(self.path, weights_only=False)
        for name, part in self.parts.items():
            part.load_state_dict(state[name])
        self.rng.bit_generator.state = state["rng"]
        print(f"resumed at step {state['step']}", flush=True)
        return state["step"]
