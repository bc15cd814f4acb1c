"""TokenStore: a PyTerrier artifact of packed fp16 token states, memory-mapped, with a docno lookup."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path

import numpy as np
import pyterrier as pt
import torch
from npids import Lookup

from .encoder import TokenEncoder
from .spec import EncoderSpec

STATES_FILE = "states.f16"
OFFSETS_FILE = "offsets.npy"
DOCNOS_FILE = "docnos.npids"
META_FILE = "pt_meta.json"


class CorruptStoreError(ValueError):
    """A TokenStore folder whose files do not match its pt_meta.json (truncated, missing or foreign)."""


class TokenStore(pt.Artifact):
    """Token states of a document collection, for rerankers that must not re-encode documents.

    Layout of the folder: ``states.f16`` (all token states, shape (num_tokens, dim), fp16, row-packed),
    ``offsets.npy`` (int64, num_docs + 1), ``docnos.npids`` and ``pt_meta.json`` (the encoder's name, weight
    fingerprint and max_length). Build it with :meth:`indexer`, load it with ``TokenStore(path)`` or
    ``pt.Artifact.load(path)``::

        enc = TokenEncoder()
        store = TokenStore("scifact.tokens")
        store.indexer(enc).index(dataset.get_corpus_iter())
        pipeline = retriever >> MaxSim(enc, store=store)
    """

    ARTIFACT_TYPE = "token_store"
    ARTIFACT_FORMAT = "fp16"

    def __init__(self, path: str | os.PathLike):
        super().__init__(path)
        self._meta: dict | None = None

    def __repr__(self) -> str:
        return f"TokenStore({str(self.path)!r})"

    def __getstate__(self) -> dict:
        """Pickled by path (the memory map is reopened on first use), so ``pt.parallel`` does not copy states."""
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"])

    def __eq__(self, other) -> bool:
        return isinstance(other, TokenStore) and Path(self.path).resolve() == Path(other.path).resolve()

    def __hash__(self) -> int:
        return hash(("TokenStore", str(Path(self.path).resolve())))

    def built(self) -> bool:
        return (Path(self.path) / META_FILE).exists()

    # ---- reading -------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._meta is not None:
            return
        path = Path(self.path)
        meta_path = path / META_FILE
        if not meta_path.exists():
            raise FileNotFoundError(f"no TokenStore at {path} ({META_FILE} missing); build it with .indexer()")
        try:
            meta = json.loads(meta_path.read_text())
        except json.JSONDecodeError as e:
            raise CorruptStoreError(f"{meta_path} is not valid JSON: {e}") from e
        if meta.get("type") != self.ARTIFACT_TYPE:
            raise CorruptStoreError(f"{path} holds a {meta.get('type')!r} artifact, not a {self.ARTIFACT_TYPE}")
        num_docs, num_tokens, dim = meta["num_docs"], meta["num_tokens"], meta["encoder"]["dim"]
        for name in (STATES_FILE, OFFSETS_FILE, DOCNOS_FILE):
            if not (path / name).exists():
                raise CorruptStoreError(f"{path / name} is missing: rebuild the store")
        expected = num_tokens * dim * 2
        actual = (path / STATES_FILE).stat().st_size
        if actual != expected:
            raise CorruptStoreError(
                f"{path / STATES_FILE} has {actual} bytes, expected {expected} "
                f"({num_tokens} tokens x {dim} dims x fp16): the file is truncated or corrupt; rebuild the store"
            )
        try:
            offsets = np.load(path / OFFSETS_FILE, mmap_mode="r")
        except ValueError as e:
            raise CorruptStoreError(f"{path / OFFSETS_FILE} cannot be read: {e}") from e
        if offsets.shape != (num_docs + 1,) or int(offsets[-1]) != num_tokens:
            raise CorruptStoreError(f"{path / OFFSETS_FILE} does not match {num_docs} docs / {num_tokens} tokens")
        if not np.issubdtype(offsets.dtype, np.integer) or int(offsets[0]) != 0 or (np.diff(offsets) < 0).any():
            raise CorruptStoreError(
                f"{path / OFFSETS_FILE} must be integers starting at 0 and never decreasing: rebuild the store"
            )
        docnos = Lookup(path / DOCNOS_FILE)
        if len(docnos) != num_docs:
            raise CorruptStoreError(f"{path / DOCNOS_FILE} holds {len(docnos)} docnos, expected {num_docs}")
        if num_tokens:
            self._states = np.memmap(path / STATES_FILE, dtype=np.float16, mode="r", shape=(num_tokens, dim))
        else:
            self._states = np.zeros((0, dim), dtype=np.float16)
        self._offsets = np.asarray(offsets)
        self._docnos = docnos
        self._meta = meta

    @property
    def meta(self) -> dict:
        self._load()
        return self._meta

    @property
    def encoder_info(self) -> dict:
        """The encoder this store was built with: name, fingerprint, max_length, dim."""
        return self.meta["encoder"]

    @property
    def spec(self) -> EncoderSpec:
        """The :class:`EncoderSpec` of the encoder this store was built with."""
        return EncoderSpec.from_dict(self.encoder_info)

    def __len__(self) -> int:
        return self.meta["num_docs"]

    def check_encoder(self, encoder: TokenEncoder) -> None:
        """Raise an ``IncompatibleEncoderError`` (a ValueError) unless ``encoder`` has the weights and
        max_length the store was built with."""
        self.spec.check(encoder.spec, repr(self))

    def _ids(self, docnos: Sequence[str]) -> np.ndarray:
        self._load()
        docnos = np.asarray(docnos, dtype=object)
        ids = self._docnos.inv.lookup(docnos.astype(str)) if len(docnos) else np.zeros(0, dtype=np.int64)
        if (ids < 0).any():
            missing = list(docnos[ids < 0][:5])
            raise KeyError(f"{int((ids < 0).sum())} docno(s) not in {self}, e.g. {missing}")
        return ids

    def token_states(self, docnos: Sequence[str]) -> list[np.ndarray]:
        """fp16 arrays of shape (n_i, dim), one per docno (memory-mapped views). Unknown docnos raise KeyError."""
        ids = self._ids(docnos)
        starts, ends = self._offsets[ids], self._offsets[ids + 1]
        return [self._states[s:e] for s, e in zip(starts, ends)]

    def _rows(self, docnos: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Row numbers of all tokens of ``docnos`` (batch order) and the (B, L) mask of real tokens."""
        ids = self._ids(docnos)
        starts, lengths = self._offsets[ids], self._offsets[ids + 1] - self._offsets[ids]
        width = int(lengths.max()) if len(ids) else 0
        mask = np.arange(width)[None, :] < lengths[:, None]
        return (starts[:, None] + np.arange(width)[None, :])[mask], mask

    def padded_states(self, docnos: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, L, dim) float32 token states, zero-padded, and the (B, L) mask of real tokens; one gather from
        the memory map for the whole batch. Unknown docnos raise KeyError."""
        rows, mask = self._rows(docnos)
        padded = np.zeros((*mask.shape, self._states.shape[1]), dtype=np.float32)
        padded[mask] = self._states[rows]
        return torch.from_numpy(padded), torch.from_numpy(mask)

    def packed_states(self, docnos: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The real-token rows of ``docnos`` as stored, (T, dim) fp16 in batch order (one gather from the memory
        map, no padded copy), and the (B, L) mask of real tokens; ``scoring.score_packed`` reads them."""
        rows, mask = self._rows(docnos)
        return torch.from_numpy(np.ascontiguousarray(self._states[rows])), torch.from_numpy(mask)

    def docnos(self) -> list[str]:
        self._load()
        return list(self._docnos)

    # ---- building ------------------------------------------------------------------------------------------
    def indexer(
        self,
        encoder: TokenEncoder,
        *,
        flex_index=None,
        batch_size: int | None = None,
        verbose: bool = True,
        overwrite: bool = False,
    ) -> TokenStoreIndexer:
        """An indexer that encodes each document once, writing its token states here and, when ``flex_index``
        (a pyterrier-dr ``FlexIndex``) is given, its pooled vector there in the same pass."""
        return TokenStoreIndexer(
            self, encoder, flex_index=flex_index, batch_size=batch_size, verbose=verbose, overwrite=overwrite
        )

    @contextlib.contextmanager
    def _building(self, overwrite: bool) -> Iterator[Path]:
        """A temporary folder beside the store, renamed into place only when the build succeeds."""
        path = Path(self.path)
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} already exists; pass overwrite=True to rebuild it")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.building-", dir=path.parent))
        try:
            yield tmp
            if path.exists():
                shutil.rmtree(path)
            os.replace(tmp, path)
            self._meta = None
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)


class TokenStoreIndexer(pt.Indexer):
    """Builds a :class:`TokenStore` (and optionally a FlexIndex) from an iterable of ``{docno, text}`` dicts."""

    def __init__(self, store, encoder, *, flex_index=None, batch_size=None, verbose=True, overwrite=False):
        self.store = store
        self.encoder = encoder
        self.flex_index = flex_index
        self.batch_size = int(batch_size or encoder.batch_size)
        self.verbose = verbose
        self.overwrite = overwrite

    def __repr__(self) -> str:
        return f"TokenStoreIndexer({self.store}, {self.encoder}, flex_index={self.flex_index})"

    def index(self, inp: Iterable[dict]) -> TokenStore:
        text_field = self.encoder.text_field
        if hasattr(inp, "to_dict") and hasattr(inp, "columns"):  # a DataFrame
            inp = inp.to_dict(orient="records")
        with self.store._building(self.overwrite) as tmp:
            seen: set[str] = set()
            lengths: list[int] = []
            with open(tmp / STATES_FILE, "wb") as states_out, Lookup.builder(tmp / DOCNOS_FILE) as docno_out:

                def encoded_chunks():
                    docs = iter(inp)
                    bar = pt.tqdm(desc="token store", unit="doc", disable=not self.verbose)
                    while chunk := list(islice(docs, self.batch_size * 16)):
                        docnos, texts = [], []
                        for doc in chunk:
                            for col in ("docno", text_field):
                                if col not in doc:
                                    raise KeyError(f"document {doc.get('docno', '?')!r} has no {col!r} field")
                            docno = str(doc["docno"])
                            if docno in seen:
                                raise ValueError(f"duplicate docno {docno!r} in the corpus: docnos must be unique")
                            seen.add(docno)
                            docnos.append(docno)
                            texts.append(doc[text_field])
                        enc = self.encoder.encode(texts, verbose=False, what=f"{text_field!r} field")
                        for docno, states in zip(docnos, enc.token_states):
                            states_out.write(states.numpy().astype(np.float16).tobytes())
                            lengths.append(states.shape[0])
                            docno_out.add(docno)
                        bar.update(len(chunk))
                        yield docnos, enc.pooled.numpy()
                    bar.close()

                if self.flex_index is not None:
                    vectors = (
                        {"docno": d, "doc_vec": v} for docnos, vecs in encoded_chunks() for d, v in zip(docnos, vecs)
                    )
                    self.flex_index.indexer(mode="overwrite" if self.overwrite else "create").index(vectors)
                else:
                    for _ in encoded_chunks():
                        pass
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            np.save(tmp / OFFSETS_FILE, offsets)
            meta = {
                "type": TokenStore.ARTIFACT_TYPE,
                "format": TokenStore.ARTIFACT_FORMAT,
                "package_hint": "pyterrier-compverify",
                "encoder": self.encoder.describe(),
                "num_docs": len(lengths),
                "num_tokens": int(offsets[-1]),
            }
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        return self.store
