"""The training configs: the schedule both trainers share, and each one's own settings (no torch here, so the
CLI's ``--help`` reads the defaults without loading models)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checks import check_number, check_whole
from ..spec import DEFAULT_MAX_LENGTH

MODES = ("frozen", "last-layer", "end-to-end")  # how much of the verifier learns


@dataclass(kw_only=True)
class TrainingSchedule:
    """What both trainers' configs share (the encoder's and the verifier's add their model and learning rates)."""

    steps: int = 300
    batch_size: int = 32  # the bi-encoder paper used 128; smaller fits a CPU
    weight_decay: float = 0.01  # AdamW's
    warmup: float = 0.1  # a fraction of the steps: linear warm-up, then linear decay
    seed: int = 42
    save_steps: int = 100  # a checkpoint every so many steps (a killed run resumes from the last)
    logging_steps: int = 10
    bf16: bool = False  # bf16 autocast for forward and backward (fast on CPUs with AVX-512 bf16)

    def __post_init__(self):
        for name in ("steps", "batch_size", "save_steps", "logging_steps", "seed"):  # ints: recorded as JSON
            setattr(self, name, check_whole(getattr(self, name), name, at_least=0 if name == "seed" else 1))
        if not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {self.warmup}")


@dataclass(kw_only=True)
class EncoderTrainingConfig(TrainingSchedule):
    """The schedule (:class:`TrainingSchedule`) and the bi-encoder's own settings."""

    steps: int = 500
    lr: float = 2e-5
    scale: float = 10.0
    max_length: int = DEFAULT_MAX_LENGTH  # tokens, as TokenEncoder's default
    no_duplicates: bool = False  # batches without repeated texts (needed when a passage has many queries)

    def __post_init__(self):
        super().__post_init__()
        if self.lr <= 0:
            raise ValueError(f"lr must be positive, got {self.lr}")


@dataclass(kw_only=True)
class VerifierTrainingConfig(TrainingSchedule):
    """The schedule (:class:`TrainingSchedule`) and the verifier's own settings."""

    head: str = "F4"
    head_config: dict = field(default_factory=dict)  # extra head arguments, e.g. {"channels": [32, 64]} for F3
    mode: str = "frozen"  # or "last-layer", "end-to-end"
    top_layers: int = 1  # last-layer mode: how many of the encoder's top layers learn
    cache_states: bool = True  # encode every training text once (False: every batch; frozen mode only)
    # dropout of the encoder layers that learn; None: 0 in last-layer mode (the head learns over the states serving
    # reads: at MiniLM's own 0.1 its dev headline fell to 0.588, at 0 it was 0.918 / 0.922 / 0.926 over 3 seeds), the
    # model's own in end-to-end mode
    encoder_dropout: float | None = None
    cache_dir: str | None = None  # where state caches are kept (default: OUTPUT/state-cache)
    shuffle: bool = True  # False: rows are taken in the given order (e.g. from verifier_mix.arrange_batches)
    cache_bf16: bool | None = None  # bf16 autocast when the state cache is built (None: as ``bf16``); True with
    # bf16=False encodes a large encoder's texts fast while the head still trains in fp32
    compile: bool = False  # torch.compile the head (fused kernels; the first steps compile; a C++ compiler on CPU)
    head_lr: float = 1e-4
    encoder_lr: float = 1.5e-5
    temperature: float = 0.1
    max_grad_norm: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.head_lr <= 0 or self.encoder_lr < 0:
            raise ValueError(
                f"head_lr must be positive and encoder_lr not negative, got {self.head_lr}, {self.encoder_lr}"
            )
        self.temperature = check_number(self.temperature, "temperature", above=0)  # 0 saved a head of NaNs
        self.max_grad_norm = check_number(self.max_grad_norm, "max_grad_norm (0: no clipping)", at_least=0)
        self.top_layers = check_whole(self.top_layers, "top_layers")
        if self.mode == "last-layer" and not self.cache_states:
            raise ValueError(
                "mode='last-layer' trains the top layers over cached states: leave cache_states on "
                "(cache_states=False re-encodes with the whole encoder; mode='end-to-end' trains all of it)"
            )
        if self.encoder_dropout is not None and not 0 <= self.encoder_dropout < 1:
            raise ValueError(f"encoder_dropout must be in [0, 1), got {self.encoder_dropout}")
        if self.encoder_dropout is not None and self.mode == "frozen":
            raise ValueError("encoder_dropout is for the encoder layers that learn: not with mode='frozen'")
        if self.encoder_dropout is None and self.mode == "last-layer":
            self.encoder_dropout = 0.0  # recorded, so a run made before this default (at 0.1) is not resumed by it
        from ..scoring import head_spec  # torch: imported when a config is made, not when the CLI lists options

        if not head_spec(self.head).learned and self.mode == "frozen":
            raise ValueError(f"{self.head} has no weights: train it end-to-end (the encoder learns through it)")
