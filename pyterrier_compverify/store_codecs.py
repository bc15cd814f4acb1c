"""Codecs of a TokenStore's token states: how the (num_tokens, dim) rows are written to disk and read back.

- ``fp16``: the states as encoded, 2 bytes per value (768 bytes per token at 384 dims); the default.
- ``bf16``: the same size in bfloat16 (8-bit mantissa): rows come back as torch bf16 for the store's packed
  gather, so a bf16 reranker (``dtype="bfloat16"``) multiplies them as stored, with no conversion pass (on a
  CPU with AVX-512 BF16 / AMX several times faster than converting fp16 rows); other readers get float32.
- ``int8``: each token's values divided by a per-token scale (max |value| / 127) and rounded to int8, plus the
  scale as fp32 (dim + 4 bytes per token: 388 at 384 dims).
- ``pq``: product quantisation: the dim values are cut into ``m`` sub-vectors of dim / m values, each replaced
  by the number of its nearest of 256 centroids (``m`` bytes per token; the default is the largest divisor of
  dim <= 128). The centroids are trained with faiss (``pip install faiss-cpu``) on a sample of the corpus's
  token states when the store is built; decoding needs numpy only. Decoded rows are put back to unit length
  (the encoder's states are unit length; quantisation shrinks them).

A codec is picked at indexing time (``store.indexer(encoder, codec="int8")``) or applied to a built store
without re-encoding (``store.recode(path, codec="pq")``); its name and parameters are recorded in
``pt_meta.json`` and every reader (``token_states``, ``padded_states``, ``packed_states``) decodes
transparently: fp16 rows come back as stored, coded rows as float32 (bf16 rows as torch bf16 from
``TokenStore.gather``).

>>> resolve_codec("int8").bytes_per_token(384)
388
>>> resolve_codec({"name": "pq", "m": 64}).bytes_per_token(384)
64
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from .artifacts import file_sha256
from .checks import check_whole
from .extras import require
from .scoring.int8_rows import Int8Rows, quantise_rows
from .scoring.packed_maxsim import concatenated_ranges

DEFAULT_SAMPLE = 65536  # token states the pq codebooks are trained on (faiss uses at most 256 per centroid)
BLOCK = 65536  # rows encoded per step when writing


class StateCodec:
    """One way of storing token states. Subclasses set ``name`` and ``payload`` (file name -> (dtype, values per
    token)), and implement :meth:`encode_block` and :meth:`decode_rows`; a trained codec also :meth:`fit` and
    :meth:`save_model` / :meth:`load_model` its model."""

    name: str = ""
    payload: dict[str, tuple[np.dtype, int | None]] = {}  # None: dim values per token
    trained: bool = False  # True: :meth:`fit` learns a model from a sample of the corpus's states first

    def params(self) -> dict:
        """Parameters recorded in pt_meta.json beside the name (enough to read the store back)."""
        return {}

    def describe(self) -> dict:
        return {"name": self.name, **self.params()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    def widths(self, dim: int) -> dict[str, int]:
        """Values per token of each payload file."""
        return {name: dim if width is None else width for name, (_, width) in self.payload.items()}

    def bytes_per_token(self, dim: int) -> int:
        self.check_dim(dim)
        return sum(np.dtype(dt).itemsize * w for (dt, _), w in zip(self.payload.values(), self.widths(dim).values()))

    def check_dim(self, dim: int) -> None:
        """Raise a ValueError if this codec cannot store ``dim``-wide states."""

    def fit(self, sample: np.ndarray) -> None:
        """Train on a (N, dim) float32 sample of the corpus's states (codecs without a model: nothing)."""

    def model_files(self, folder: Path) -> list[str]:
        """Write the trained model into ``folder``; the names of the files written."""
        return []

    def load_model(self, folder: Path, dim: int, error: type[Exception]) -> None:
        """Read the model written by :meth:`model_files`; damage raises ``error`` naming the file."""

    def encode_block(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """(n, dim) float32 states -> one array per payload file, (n, width) of its dtype."""
        raise NotImplementedError

    def decode_rows(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The payload arrays of n tokens -> (n, dim) states."""
        raise NotImplementedError


class Fp16Codec(StateCodec):
    """The states as encoded, fp16 (the store's original layout: ``states.f16``)."""

    name = "fp16"
    payload = {"states.f16": (np.dtype(np.float16), None)}

    def encode_block(self, rows):
        return {"states.f16": torch.from_numpy(np.asarray(rows, dtype=np.float32)).half().numpy()}  # ~5x numpy

    def decode_rows(self, arrays):
        return arrays["states.f16"]


class Bf16Codec(StateCodec):
    """bfloat16 values (round to nearest even), kept as their 16 bits (``states.bf16``, numpy has no bf16):
    2 bytes per value, the exponent range of float32 and 8 significant bits (relative error <= 2^-8). An indexed
    store rounds the encoder's float32 states; one recoded from an fp16 store rounds those fp16 values (about 6%
    of the values then end one bf16 step away). :meth:`gather` hands a store's rows to torch as bf16 as stored."""

    name = "bf16"
    payload = {"states.bf16": (np.dtype(np.uint16), None)}

    def encode_block(self, rows):
        bf16 = torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32)).to(torch.bfloat16)
        return {"states.bf16": bf16.view(torch.int16).numpy().view(np.uint16)}

    def decode_rows(self, arrays):
        return (np.asarray(arrays["states.bf16"]).astype(np.uint32) << 16).view(np.float32)  # exact

    @staticmethod
    def gather(views: dict[str, torch.Tensor], starts: np.ndarray, ends: np.ndarray) -> torch.Tensor:
        """The rows ``starts[i]:ends[i]`` concatenated, as a (T, dim) torch bf16 tensor (one copy, no decoding)."""
        return gather_rows(views["states.bf16"], starts, ends).view(torch.bfloat16)


def readonly_tensor(array: np.ndarray) -> torch.Tensor:
    """A torch view of ``array`` (a memory map: nothing is read or copied), uint16 seen as int16, for
    :func:`gather_rows`; it must only be read (torch warns that a read-only array's view is writable)."""
    plain = array.view(np.ndarray)  # a memory map as a plain array: no np.memmap hooks
    if plain.dtype == np.uint16:  # torch indexes int16, not uint16
        plain = plain.view(np.int16)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(plain)


def gather_rows(view: torch.Tensor, starts: np.ndarray, ends: np.ndarray) -> torch.Tensor:
    """``view[starts[i]:ends[i]]`` for every i, concatenated into a new tensor: one ``index_select``, which torch
    runs in parallel over the rows (2 threads: about half the time of numpy's concatenation of the slices).

    >>> gather_rows(torch.arange(12.0).reshape(6, 2), np.array([4, 0]), np.array([6, 1])).tolist()
    [[8.0, 9.0], [10.0, 11.0], [0.0, 1.0]]
    """
    starts, ends = np.asarray(starts), np.asarray(ends)
    return view.index_select(0, torch.from_numpy(concatenated_ranges(starts, ends - starts)))


class Int8Codec(StateCodec):
    """int8 values with a per-token fp32 scale (max |value| / 127): dim + 4 bytes per token; the error of each
    value is at most half its token's scale."""

    name = "int8"
    payload = {"states.i8": (np.dtype(np.int8), None), "scales.f32": (np.dtype(np.float32), 1)}

    def encode_block(self, rows):
        coded = quantise_rows(torch.from_numpy(np.ascontiguousarray(rows)))  # the one rule, shared with the queries
        return {"states.i8": coded.codes.numpy(), "scales.f32": coded.scales.numpy()[:, None]}

    def decode_rows(self, arrays):
        return np.multiply(arrays["states.i8"], arrays["scales.f32"], dtype=np.float32)  # one pass, no int8 copy

    @staticmethod
    def gather_int8(views: dict[str, torch.Tensor], starts: np.ndarray, ends: np.ndarray) -> Int8Rows:
        """The rows of every document as stored (codes and scales, not decoded), for an int8 product."""
        rows = torch.from_numpy(concatenated_ranges(np.asarray(starts), np.asarray(ends) - np.asarray(starts)))
        return Int8Rows(views["states.i8"].index_select(0, rows), views["scales.f32"][:, 0].index_select(0, rows))


DEFAULT_PQ_BYTES = 96


class PQCodec(StateCodec):
    """Product quantisation: ``m`` sub-vectors of dim / m values, each stored as one byte (the number of its
    nearest of 256 centroids, trained with faiss on a sample of the corpus's states). ``m`` None: the largest
    divisor of dim that is <= 96 (96 for 384 dims: with the codebook, under 128 bytes per token for a store of
    about 15,000 tokens or more; m=96 kept nDCG@10 within 0.2 point of fp16 in ``experiments/store_codecs.py``).
    ``sample``: how many token states train the codebooks; ``seed``: which."""

    name = "pq"
    trained = True
    CENTROIDS = "pq_centroids.npy"
    KSUB = 256

    def __init__(self, m: int | None = None, *, sample: int = DEFAULT_SAMPLE, seed: int = 0, normalise: bool = True):
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 1):
            raise ValueError(f"pq codec: m={m!r} must be a positive integer (bytes per token)")
        sample = check_whole(sample, f"pq codec: sample (at least one state per centroid, {self.KSUB})", at_least=256)
        seed = check_whole(seed, "pq codec: seed", at_least=0)
        if seed >= 2**32:
            raise ValueError(f"pq codec: seed must be below 2**32, got {seed}")
        self.m, self.sample, self.seed, self.normalise = m, sample, seed, bool(normalise)
        self.centroids: np.ndarray | None = None  # (m, 256, dim / m) float32
        self._faiss = None  # the faiss quantiser: trained by fit, or rebuilt from the centroids to decode

    @property
    def payload(self):
        return {"codes.pq": (np.dtype(np.uint8), self.m)}

    def params(self):
        return {"m": self.m, "nbits": 8, "sample": self.sample, "seed": self.seed, "normalise": self.normalise}

    def check_dim(self, dim):
        if self.m is None:
            self.m = max(k for k in range(1, min(dim, DEFAULT_PQ_BYTES) + 1) if dim % k == 0)
        if dim % self.m:
            raise ValueError(f"pq codec: m={self.m} must divide the states' dim {dim}: choose a divisor of {dim}")

    def fit(self, sample):
        faiss = require("faiss", "pq", "the pq codec (training its codebooks)")
        if len(sample) < self.KSUB:
            raise ValueError(
                f"pq codec needs at least {self.KSUB} token states to train its codebooks, the corpus has "
                f"{len(sample)}: use codec='int8' for so small a store"
            )
        dim = sample.shape[1]
        pq = faiss.ProductQuantizer(dim, self.m, 8)
        pq.cp.seed = self.seed
        pq.verbose = False
        pq.train(np.ascontiguousarray(sample, dtype=np.float32))
        self._faiss = pq
        self.centroids = faiss.vector_to_array(pq.centroids).reshape(self.m, self.KSUB, dim // self.m)

    def model_files(self, folder):
        np.save(Path(folder) / self.CENTROIDS, self.centroids)
        return [self.CENTROIDS]

    def load_model(self, folder, dim, error):
        path = Path(folder) / self.CENTROIDS
        try:
            centroids = np.load(path, allow_pickle=False)
        except (ValueError, EOFError, OSError) as e:  # missing, not .npy, truncated
            raise error(f"{path} cannot be read ({e}): rebuild the store") from e
        shape = (self.m, self.KSUB, dim // self.m)
        if centroids.shape != shape or centroids.dtype != np.float32 or not np.isfinite(centroids).all():
            raise error(f"{path} holds {centroids.dtype} {centroids.shape}, expected finite float32 {shape}")
        self.centroids = centroids

    def encode_block(self, rows):
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        quantiser = self._quantiser()  # trained by fit, or rebuilt from a loaded store's centroids
        if quantiser is not None:
            return {"codes.pq": quantiser.compute_codes(rows)}
        return {"codes.pq": encode_pq_numpy(self.centroids, rows)}  # a reader without faiss (stored_form)

    def decode_rows(self, arrays):
        codes = np.ascontiguousarray(arrays["codes.pq"])
        quantiser = self._quantiser()
        if quantiser is not None:  # faiss: about 10x numpy's gather of m small sub-vectors per row
            rows = quantiser.decode(codes) if len(codes) else np.zeros((0, self.m * self.centroids.shape[2]), "f4")
        else:
            rows = decode_pq_numpy(self.centroids, codes)
        if self.normalise:
            rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        return rows

    def _quantiser(self):
        """A faiss quantiser holding these centroids, or None when faiss is not installed (numpy decodes)."""
        if self._faiss is None:
            try:
                import faiss
            except ImportError:
                return None
            m, ksub, dsub = self.centroids.shape
            self._faiss = faiss.ProductQuantizer(m * dsub, m, 8)
            faiss.copy_array_to_vector(self.centroids.ravel(), self._faiss.centroids)
        return self._faiss


def encode_pq_numpy(centroids: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(m, 256, dsub) centroids and (n, m * dsub) float rows -> (n, m) uint8 codes, each sub-vector's nearest
    centroid (L2, as faiss), without faiss.

    >>> c = np.zeros((1, 256, 2), np.float32); c[0, 7] = [1, 0]; c[0, 9] = [0, 1]
    >>> encode_pq_numpy(c, np.array([[0.9, 0.1], [0.2, 0.8]], np.float32)).ravel().tolist()
    [7, 9]
    """
    m, ksub, dsub = centroids.shape
    parts = rows.reshape(len(rows), m, dsub)
    distances = (centroids**2).sum(-1)[None] - 2 * np.einsum("nmd,mkd->nmk", parts, centroids)
    return distances.argmin(-1).astype(np.uint8)


def decode_pq_numpy(centroids: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(m, 256, dsub) centroids and (n, m) uint8 codes -> (n, m * dsub) rows, without faiss."""
    m, ksub, dsub = centroids.shape
    index = codes.astype(np.intp) + (np.arange(m) * ksub)[None, :]
    return centroids.reshape(m * ksub, dsub)[index].reshape(len(codes), m * dsub)


CODECS: dict[str, type[StateCodec]] = {"fp16": Fp16Codec, "bf16": Bf16Codec, "int8": Int8Codec, "pq": PQCodec}


def resolve_codec(codec: str | dict | StateCodec | None) -> StateCodec:
    """A codec from its name (``"int8"``), a dict of name and parameters (``{"name": "pq", "m": 64}``, as
    recorded in pt_meta.json) or a :class:`StateCodec`; None is fp16. Unknown names raise a one-line ValueError."""
    if codec is None:
        return Fp16Codec()
    if isinstance(codec, StateCodec):
        return codec
    params = dict(codec) if isinstance(codec, dict) else {"name": codec}
    name = params.pop("name", None)
    if not isinstance(name, str) or name not in CODECS:
        raise ValueError(f"unknown store codec {name!r}: choose one of {', '.join(map(repr, CODECS))}")
    params.pop("nbits", None)  # recorded for readers; always 8
    try:
        return CODECS[name](**params)
    except TypeError as e:
        raise ValueError(f"store codec {name!r}: bad parameters {params} ({e})") from e


class CodedRows:
    """The token states of a coded store, read like an array: ``rows[idx]`` (an index array or a slice) decodes
    those tokens to (n, dim) float32 (memory-mapped payload, only the rows asked for are read)."""

    def __init__(self, codec: StateCodec, arrays: dict[str, np.ndarray], dim: int):
        self.codec, self.arrays = codec, arrays
        self.shape = (len(next(iter(arrays.values()))), dim)
        self.dtype = np.dtype(np.float32)
        self.views = {name: readonly_tensor(values) for name, values in arrays.items()}  # no copy

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx) -> np.ndarray:
        return self.codec.decode_rows({name: values[idx] for name, values in self.arrays.items()})

    def gather(self, starts: np.ndarray, ends: np.ndarray) -> torch.Tensor:
        """The rows ``starts[i]:ends[i]`` of every document, concatenated: (T, dim), as the codec hands them to
        torch (bf16 as stored; the others decoded to float32 in one pass)."""
        if hasattr(self.codec, "gather"):
            return self.codec.gather(self.views, starts, ends)
        return torch.from_numpy(np.ascontiguousarray(self[concatenated_ranges(starts, ends - starts)]))


def open_states(folder: Path, meta: dict, num_tokens: int, dim: int, error: type[Exception]):
    """The states of the store at ``folder``: the fp16 memory map itself for an fp16 store (rows come back as
    stored), a :class:`CodedRows` for a coded one. Missing or wrongly sized payload files and damaged models
    raise ``error`` naming the file."""
    try:
        codec = resolve_codec(meta.get("codec"))
        codec.check_dim(dim)
    except (ValueError, TypeError) as e:
        raise error(f"{Path(folder) / 'pt_meta.json'}: bad 'codec' entry ({e}): rebuild the store") from e
    arrays = {}
    for name, width in codec.widths(dim).items():
        path, dtype = Path(folder) / name, codec.payload[name][0]
        if not path.exists():
            raise error(f"{path} is missing: rebuild the store")
        expected, actual = num_tokens * width * dtype.itemsize, path.stat().st_size
        if actual != expected:
            raise error(
                f"{path} has {actual} bytes, expected {expected} ({num_tokens} tokens x {width} x {dtype.name}): "
                "the file is truncated or corrupt; rebuild the store"
            )
        shape = (num_tokens, width)
        arrays[name] = np.memmap(path, dtype=dtype, mode="r", shape=shape) if num_tokens else np.zeros(shape, dtype)
    codec.load_model(Path(folder), dim, error)
    if codec.name == "fp16":
        return arrays["states.f16"]
    return CodedRows(codec, arrays, dim)


def write_states(
    states,
    folder: Path,
    codec: StateCodec,
    *,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict, dict[str, str]]:
    """Encode ``states`` ((T, dim) rows of any store, read by slices) into ``folder`` with ``codec`` (trained
    first on a sample when it has a model). Returns the codec's pt_meta.json entry and the sha256 of each file
    written. ``progress`` is called with the number of rows after each block."""
    folder = Path(folder)
    num_tokens, dim = states.shape
    codec.check_dim(dim)
    if codec.trained:
        rng = np.random.default_rng(getattr(codec, "seed", 0))
        size = min(num_tokens, getattr(codec, "sample", DEFAULT_SAMPLE))
        picked = np.sort(rng.choice(num_tokens, size=size, replace=False))
        codec.fit(np.asarray(states[picked], dtype=np.float32))
    sums = {name: file_sha256(folder / name) for name in codec.model_files(folder)}
    digests = {name: hashlib.sha256() for name in codec.payload}
    outs = {name: open(folder / name, "wb") for name in codec.payload}  # noqa: SIM115 (closed below)
    try:
        for start in range(0, num_tokens, BLOCK):
            block = np.asarray(states[start : start + BLOCK], dtype=np.float32)
            for name, values in codec.encode_block(block).items():
                data = np.ascontiguousarray(values).tobytes()
                outs[name].write(data)
                digests[name].update(data)
            if progress is not None:
                progress(len(block))
    finally:
        for out in outs.values():
            out.close()
    sums.update({name: digest.hexdigest() for name, digest in digests.items()})
    return codec.describe(), sums


__all__ = [
    "CODECS",
    "Bf16Codec",
    "CodedRows",
    "Fp16Codec",
    "Int8Codec",
    "PQCodec",
    "StateCodec",
    "open_states",
    "resolve_codec",
]
