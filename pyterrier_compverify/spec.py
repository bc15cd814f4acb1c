"""EncoderSpec: what decides whether token states from two encoders can be mixed (the one compatibility check)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"  # the encoder every option defaults to
DEFAULT_MAX_LENGTH = 128  # tokens; capped at the model's positions when not given
DEFAULT_BATCH_SIZE = 32  # texts per encoder forward


class IncompatibleEncoderError(ValueError):
    """Token states (a store, query states, a trained head) made by another encoder than the one given."""


@dataclass(frozen=True)
class EncoderSpec:
    """An encoder's identity: its name (informative only), weight fingerprint, max_length, width and compute dtype.

    Two specs are compatible when the weights and max_length agree; the name may differ (a hub name and a local
    copy of the same weights are the same encoder), and so may the dtype (states encoded in bf16 agree with fp32
    ones within tolerance, so a store built in bf16 serves an fp32 reranker). The dtype is recorded, not checked.

    >>> a = EncoderSpec("minilm", "abc", 128, 384)
    >>> a.compatible(EncoderSpec("/local/minilm", "abc", 128, 384)), a.compatible(EncoderSpec("minilm", "abc", 64, 384))
    (True, False)
    >>> a.compatible(EncoderSpec("minilm", "abc", 128, 384, "bf16")), a.dtype
    (True, 'fp32')
    >>> a.key
    'abc-128'
    """

    name: str
    fingerprint: str
    max_length: int
    dim: int
    dtype: str = "fp32"

    @property
    def key(self) -> str:
        """A short string that differs between incompatible specs (cache folders, index names)."""
        return f"{self.fingerprint}-{self.max_length}"

    def compatible(self, other: EncoderSpec) -> bool:
        return self.mismatch(other) is None

    def mismatch(self, other: EncoderSpec, *, fields=("fingerprint", "max_length", "dim")) -> str | None:
        """The first of ``fields`` that differs, as ``field this != other``, else None."""
        for field in fields:
            mine, theirs = getattr(self, field), getattr(other, field)
            if mine != theirs:
                return f"{field} {mine} != {theirs}"
        return None

    def check(self, given: EncoderSpec, what: str, *, same_length: bool = True) -> None:
        """Raise :class:`IncompatibleEncoderError` unless ``given`` can use token states made by this spec.

        ``what`` names the thing made with this spec, e.g. ``"TokenStore('scifact.tokens')"``. With
        ``same_length=False`` only the weights must agree (a trained head reads maps of any size).
        """
        fields = ("fingerprint", "max_length", "dim") if same_length else ("fingerprint", "dim")
        difference = self.mismatch(given, fields=fields)
        if difference is not None:
            raise IncompatibleEncoderError(
                f"{what} was made with encoder {self.name!r} and the given encoder {given.name!r} differs "
                f"({difference}): pass the encoder it was made with, or rebuild it with this one"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> EncoderSpec:
        """From ``to_dict``'s output; a dict without ``dtype`` (made before it was recorded) means fp32."""
        dims = int(data["max_length"]), int(data["dim"])
        return cls(str(data["name"]), str(data["fingerprint"]), *dims, str(data.get("dtype", "fp32")))
