"""TokenStore: a PyTerrier artifact of packed fp16 token states, memory-mapped, with a docno lookup."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from pathlib import Path

import numpy as np
import pyterrier as pt
import pyterrier_alpha as pta
import torch
from npids import Lookup
from npids.codecs.fwd_fixedbytes import FwdFixedBytes

from .artifacts import (
    CorruptArtifactError,
    build_lock,
    building_name,
    check_counts,
    corpus_length,
    docno_text,
    file_sha256,
    read_meta,
    remove_leftovers,
    swap_into_place,
    verify_sums,
)
from .encoder import TokenEncoder, check_count
from .scoring.int8_rows import Int8Rows
from .spec import EncoderSpec
from .store_codecs import StateCodec, gather_rows, open_states, readonly_tensor, resolve_codec, write_states

STATES_FILE = "states.f16"
OFFSETS_FILE = "offsets.npy"
DOCNOS_FILE = "docnos.npids"
META_FILE = "pt_meta.json"


REBUILD = "rebuild the store"


class CorruptStoreError(CorruptArtifactError):
    """A TokenStore folder whose files do not match its pt_meta.json (truncated, missing, damaged or foreign)."""


class StoredFormat:
    """``TokenStore.ARTIFACT_FORMAT``: ``"fp16"`` on the class (a new store's default codec) and the codec a built
    store records on an instance, so that ``pt.inspect.artifact_type_format`` names an int8 or pq store's format."""

    def __get__(self, store, owner=None) -> str:
        if store is None:
            return "fp16"
        meta = store._meta
        if meta is None:
            try:
                meta = json.loads((Path(store.path) / META_FILE).read_text())
            except (OSError, ValueError):  # not built, or damaged: opening the store says which
                return "fp16"
        format_name = meta.get("format") if isinstance(meta, dict) else None
        return format_name if isinstance(format_name, str) else "fp16"


class TokenStore(pt.Artifact):
    """Token states of a document collection, for rerankers that must not re-encode documents.

    Layout of the folder: the token states, row-packed (num_tokens, dim), as its codec keeps them (``states.f16``
    by default; ``states.bf16``; ``states.i8`` + ``scales.f32``; ``codes.pq`` + ``pq_centroids.npy``; see
    :mod:`.store_codecs`), ``offsets.npy`` (int64, num_docs + 1), ``docnos.npids`` and ``pt_meta.json`` (the
    encoder's name, weight fingerprint, max_length and dtype, the codec, the files' sha256 sums). Build it with
    :meth:`indexer`, load it with ``TokenStore(path)`` or ``pt.Artifact.load(path)``::

        enc = TokenEncoder()
        store = TokenStore("scifact.tokens")
        store.indexer(enc).index(dataset.get_corpus_iter())
        pipeline = retriever >> MaxSim(enc, store=store)
    """

    ARTIFACT_TYPE = "token_store"
    ARTIFACT_FORMAT = StoredFormat()

    def __init__(self, path: str | os.PathLike):
        super().__init__(Path(path).expanduser())  # "~/x.tokens" as the shell would read it
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
        """Open the store's files. A store overwritten while they were opened (another process's build swaps a
        new folder in) is opened again, so that its meta, states, offsets and docnos are all of one version."""
        if self._meta is not None:
            return
        path = Path(self.path)
        for _ in range(3):
            before = _folder_identity(path)
            try:
                opened = self._open(path)
            except (CorruptStoreError, OSError, ValueError):
                if _folder_identity(path) != before:
                    continue  # a half-opened pair of versions: open the new one
                raise
            if _folder_identity(path) == before:
                self._states, self._offsets, self._docnos, self._meta = opened
                self._view = readonly_tensor(self._states) if isinstance(self._states, np.ndarray) else None
                return
        raise CorruptStoreError(f"{path} was rebuilt three times while it was being opened: open it again later")

    def _open(self, path: Path) -> tuple:
        """(states, offsets, docnos, meta) of the store folder ``path``, each checked."""
        meta_path = path / META_FILE
        if not meta_path.exists():
            raise FileNotFoundError(f"no TokenStore at {path} ({META_FILE} missing); build it with .indexer()")
        meta = read_meta(path, self.ARTIFACT_TYPE, CorruptStoreError, REBUILD)
        num_docs, num_tokens, dim = check_counts(
            meta, ("num_docs", "num_tokens", "encoder.dim"), path, CorruptStoreError, REBUILD
        )
        for name in (OFFSETS_FILE, DOCNOS_FILE):
            if not (path / name).exists():
                raise CorruptStoreError(f"{path / name} is missing: rebuild the store")
        states = open_states(path, meta, num_tokens, dim, CorruptStoreError)  # fp16 memmap, or decoded on read
        try:
            offsets = np.load(path / OFFSETS_FILE, mmap_mode="r")
        except (ValueError, EOFError, OSError) as e:  # not .npy, empty, truncated header, pickled
            raise CorruptStoreError(f"{path / OFFSETS_FILE} cannot be read ({e}): {REBUILD}") from e
        if offsets.shape != (num_docs + 1,) or int(offsets[-1]) != num_tokens:
            raise CorruptStoreError(f"{path / OFFSETS_FILE} does not match {num_docs} docs / {num_tokens} tokens")
        if not np.issubdtype(offsets.dtype, np.integer) or int(offsets[0]) != 0 or (np.diff(offsets) < 0).any():
            raise CorruptStoreError(
                f"{path / OFFSETS_FILE} must be integers starting at 0 and never decreasing: rebuild the store"
            )
        recorded = (meta.get("sha256") or {}).get(DOCNOS_FILE)  # stores built before sums had none
        if recorded is not None and file_sha256(path / DOCNOS_FILE) != recorded:  # small; npids can loop on damage
            raise CorruptStoreError(
                f"{path / DOCNOS_FILE} cannot be read (it does not match the sha256 recorded at build time): {REBUILD}"
            )
        try:
            docnos = Lookup(path / DOCNOS_FILE)
        except Exception as e:  # npids reports damage as struct, JSON, Unicode or index errors
            raise CorruptStoreError(f"{path / DOCNOS_FILE} cannot be read ({type(e).__name__}: {e}): {REBUILD}") from e
        if len(docnos) != num_docs:
            raise CorruptStoreError(f"{path / DOCNOS_FILE} holds {len(docnos)} docnos, expected {num_docs}")
        return states, np.asarray(offsets), docnos, meta

    @property
    def meta(self) -> dict:
        self._load()
        return self._meta

    def verify(self) -> None:
        """Re-read every byte and compare with the sha256 sums recorded at build time; a changed file (e.g. flipped
        values of the same size, which opening does not notice) raises :class:`CorruptStoreError` naming it."""
        verify_sums(Path(self.path), self.meta.get("sha256"), CorruptStoreError, REBUILD)

    @property
    def codec(self) -> dict:
        """How the states are stored: ``{"name": "fp16"}``, ``{"name": "int8"}``, ``{"name": "pq", "m": ...}``
        (see :mod:`.store_codecs`)."""
        return self.meta.get("codec", {"name": "fp16"})

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
        keys = docnos.astype(str)
        ids = self._lookup(keys) if len(keys) else np.zeros(0, dtype=np.int64)
        if (ids < 0).any():
            missing = list(docnos[ids < 0][:5])
            raise KeyError(f"{int((ids < 0).sum())} docno(s) not in {self}, e.g. {missing}")
        return ids

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        """Row ids of ``keys`` (str array), -1 for a key the store does not hold. npids reads ``prefix + integer``
        docnos as integers (its integer codecs: ``"d01"`` found ``d1``, ``"04983"`` found ``4983``), so a found id
        counts only when its docno is the key; the hashed codec of other docnos compares the keys itself."""
        try:
            ids = np.asarray(self._docnos.inv.lookup(keys), dtype=np.int64)
        except ValueError:  # npids' integer codec fails on a key shorter than its prefix: one key at a time
            ids = np.array([self._lookup_one(k) for k in keys], dtype=np.int64)
        found = ids >= 0
        if found.any() and type(getattr(self._docnos.inv, "codec", None)).__name__ != "InvHash":
            back = np.asarray(self._docnos.fwd[ids[found]]).astype(str)
            ids[np.flatnonzero(found)[back != keys[found]]] = -1
        return ids

    def _lookup_one(self, key: str) -> int:
        try:
            return int(self._docnos.inv.lookup(np.array([key]))[0])
        except ValueError:
            return -1

    def token_states(self, docnos: Sequence[str]) -> list[np.ndarray]:
        """Arrays of shape (n_i, dim), one per docno: fp16 memory-mapped views of an fp16 store, float32 decoded
        rows of a coded one. Unknown docnos raise KeyError."""
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
        """The real-token rows of ``docnos``, (T, dim) in batch order (one gather from the memory map, no padded
        copy; fp16 as stored, or float32 decoded from a coded store), and the (B, L) mask of real tokens;
        ``scoring.score_packed`` reads them."""
        starts, ends = self.row_ranges(docnos)
        packed = self.gather(starts, ends)
        lengths = ends - starts
        mask = np.arange(int(lengths.max()) if len(lengths) else 0)[None, :] < lengths[:, None]
        return packed, torch.from_numpy(mask)

    def row_ranges(self, docnos: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(B,) int64 first and one-past-last token rows of each docno (one lookup; a reranker looks up its
        whole frame once and gathers pass by pass with :meth:`gather`). Unknown docnos raise KeyError."""
        ids = self._ids(docnos)
        return self._offsets[ids], self._offsets[ids + 1]

    def gather(self, starts: np.ndarray, ends: np.ndarray) -> torch.Tensor:
        """The rows ``starts[i]:ends[i]`` of every document, concatenated: (T, dim), fp16 or bf16 as stored (one
        parallel ``index_select`` from the memory map) or float32 decoded from an int8 / pq store."""
        self._load()
        if self._view is not None:  # fp16: the memory map itself
            return gather_rows(self._view, starts, ends)
        return self._states.gather(starts, ends)

    def stored_form(self, rows: torch.Tensor) -> torch.Tensor:
        """(T, dim) float rows as this store would hold and serve them (as :meth:`gather` does): fp16 or bf16
        rounded, or decoded from int8 / pq codes. A reranker makes the query's own map so, to measure candidates
        against it (``scoring.pairs.self_map``): the query's own text, read from the store, then scores as it."""
        self._load()
        if self._view is not None:
            return rows.half()
        codec = self._states.codec
        if hasattr(codec, "gather"):  # bf16: served as stored
            return rows.to(torch.bfloat16)
        coded = codec.encode_block(rows.detach().float().cpu().numpy())
        return torch.from_numpy(np.ascontiguousarray(codec.decode_rows(coded))).to(rows.device)

    def gather_int8(self, starts: np.ndarray, ends: np.ndarray) -> Int8Rows:
        """As :meth:`gather`, the rows of an int8-coded store as stored: int8 codes (T, dim) with their per-token
        scales (T,), not decoded (a reranker with ``dtype="int8"`` multiplies them in integer arithmetic)."""
        self._load()
        self.check_int8()
        return self._states.codec.gather_int8(self._states.views, starts, ends)

    def check_int8(self) -> None:
        """A one-line ValueError naming the fix unless this store is int8-coded (what int8 products read)."""
        if self.codec.get("name") != "int8":
            raise ValueError(
                f"{self} is coded {self.codec.get('name')!r}, not int8: recode it for int8 products with "
                f"store.recode(new_path, codec='int8'), or rerank with dtype='float32'"
            )

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
        mode: str | pta.ArtifactBuilderMode = "create",
        codec: str | dict | StateCodec | None = None,
        overwrite: bool | None = None,
    ) -> TokenStoreIndexer:
        """An indexer that encodes each document once, writing its token states here and, when ``flex_index``
        (a pyterrier-dr ``FlexIndex``) is given, its pooled vector there in the same pass. ``codec``: how the
        states are stored, ``"fp16"`` (default), ``"bf16"``, ``"int8"`` or ``"pq"`` (see :mod:`.store_codecs`).
        ``batch_size``: texts per encoder batch (the encoder's by default). ``mode``:
        ``"create"`` refuses an existing store, ``"overwrite"`` replaces it once the new one is complete, as
        pyterrier-dr's ``FlexIndex.indexer(mode=...)`` (``overwrite=True`` is the old spelling)."""
        return TokenStoreIndexer(
            self,
            encoder,
            flex_index=flex_index,
            batch_size=batch_size,
            verbose=verbose,
            mode=builder_mode(mode, overwrite),
            codec=codec,
        )

    def recode(
        self,
        path: str | os.PathLike,
        codec: str | dict | StateCodec,
        *,
        mode: str | pta.ArtifactBuilderMode = "create",
        verbose: bool = True,
        overwrite: bool | None = None,
    ) -> TokenStore:
        """A copy of this store at ``path`` with its states stored by ``codec`` (no re-encoding: the states are
        read from here, a trained codec is trained on a sample of them), e.g.
        ``TokenStore("scifact.tokens").recode("scifact.pq.tokens", codec="pq")``. ``mode``: as :meth:`indexer`."""
        mode = builder_mode(mode, overwrite)
        codec = resolve_codec(codec)
        self._load()
        target = TokenStore(path)
        if Path(target.path).resolve() == Path(self.path).resolve():  # "~" expanded by TokenStore
            raise ValueError(f"recode {self} to another path: a store cannot be recoded in place")
        with target._building(mode) as (tmp, _):
            np.save(tmp / OFFSETS_FILE, self._offsets)  # the ones opened with the states, not the path's now
            shutil.copyfile(Path(self.path) / DOCNOS_FILE, tmp / DOCNOS_FILE)
            recorded = (self.meta.get("sha256") or {}).get(DOCNOS_FILE)
            if recorded is not None and file_sha256(tmp / DOCNOS_FILE) != recorded:
                raise CorruptStoreError(f"{Path(self.path) / DOCNOS_FILE} changed since {self} was opened (rebuilt?):"
                                        " open the store again and recode it")  # fmt: skip
            bar = pt.tqdm(total=len(self._states), desc=f"recode {codec.name}", unit="token", disable=not verbose)
            codec_meta, sums = write_states(self._states, tmp, codec, progress=bar.update)
            bar.close()
            meta = {**self.meta, "format": codec.name, "codec": codec_meta}
            meta["sha256"] = {
                **sums,
                OFFSETS_FILE: file_sha256(tmp / OFFSETS_FILE),
                DOCNOS_FILE: file_sha256(tmp / DOCNOS_FILE),
            }
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        return target

    @contextlib.contextmanager
    def _building(
        self, mode: pta.ArtifactBuilderMode, flex_path: Path | None = None
    ) -> Iterator[tuple[Path, Path | None]]:
        """Temporary names beside the store (a folder, made) and the FlexIndex (not made), swapped into place
        only when the build succeeds. A lock keeps a second build of this path out; the temporary folders of
        killed builds are deleted (where builds can be locked: POSIX); the folders get the umask's permissions."""
        path = _link_target(Path(self.path))
        targets = [path] if flex_path is None else [path, _link_target(Path(flex_path))]
        _check_targets(targets, mode)
        path.parent.mkdir(parents=True, exist_ok=True)
        with build_lock(path) as locked:
            _check_targets(targets, mode)  # a build that held the lock may have just finished
            for target in targets if locked else ():  # unlocked, another build's folder may be in use
                remove_leftovers(target)
            tmps = [building_name(target) for target in targets]
            tmps[0].mkdir()
            try:
                yield tmps[0], tmps[1] if flex_path is not None else None
                for tmp, target in reversed(list(zip(tmps, targets))):  # the store last: its meta says "built"
                    swap_into_place(tmp, target)
                self._meta = None
            finally:
                for tmp in tmps:
                    shutil.rmtree(tmp, ignore_errors=True)


def builder_mode(mode: str | pta.ArtifactBuilderMode, overwrite: bool | None = None) -> pta.ArtifactBuilderMode:
    """``mode`` checked: ``"create"`` or ``"overwrite"`` (a store cannot be appended to). ``overwrite``, the old
    boolean spelling, still works with a DeprecationWarning."""
    if overwrite is not None:
        if mode not in ("create", pta.ArtifactBuilderMode.create):
            raise ValueError(f"pass mode={mode!r} or overwrite={overwrite!r}, not both (overwrite= is deprecated)")
        warnings.warn("overwrite= is deprecated: pass mode='overwrite' or mode='create'", DeprecationWarning, 3)
        mode = "overwrite" if overwrite else "create"
    try:
        checked = pta.ArtifactBuilderMode(mode)  # the enum, or its value
    except ValueError:
        checked = None
    if checked not in (pta.ArtifactBuilderMode.create, pta.ArtifactBuilderMode.overwrite):
        raise ValueError(f"mode must be 'create' or 'overwrite', got {getattr(mode, 'value', mode)!r}")
    return checked


def _folder_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder at ``path`` (None: none there); an overwrite swaps in another folder."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _link_target(path: Path) -> Path:
    """``path``, or the folder it links to when it is a symbolic link (a store kept on another disk), so that a
    build replaces that folder and the link keeps naming it."""
    if not path.is_symlink():
        return path
    try:
        real = path.resolve()
    except (RuntimeError, OSError):  # a loop of links (RuntimeError before Python 3.13, ELOOP since)
        raise FileNotFoundError(f"{path} is a link in a loop of links: remove it or point it at a folder") from None
    if not real.parent.is_dir():
        raise FileNotFoundError(f"{path} is a link to {real}, whose folder does not exist: make it or remove the link")
    return real


def _check_targets(targets: list[Path], mode: pta.ArtifactBuilderMode) -> None:
    """Refuse, before any work, an existing target in mode create, or a file where a folder goes."""
    for target in targets:
        if target.exists() and not target.is_dir():
            raise FileExistsError(f"{target} is a file, not an index folder: remove it or choose another path")
        if target.exists() and mode != pta.ArtifactBuilderMode.overwrite:
            raise FileExistsError(f"{target} already exists; pass mode='overwrite' to rebuild it")


class _FixedBytes(FwdFixedBytes):
    """npids' fixed-bytes docno format kept at least one byte wide: npids 0.1.3 writes a block of one docno as a
    0-byte format (the whole docno as prefix) that it then cannot read, so a one-document store failed."""

    def seed(self, id):
        accepted = super().seed(id)
        self.length = max(self.length, 1)
        self.prefix = self.prefix[: self.length - 1] if len(self.prefix) >= self.length else self.prefix
        return accepted


class TokenStoreIndexer(pt.Indexer):
    """Builds a :class:`TokenStore` (and optionally a FlexIndex) from an iterable of ``{docno, text}`` dicts."""

    def __init__(self, store, encoder, *, flex_index=None, batch_size=None, verbose=True, mode="create", codec=None):
        self.codec = resolve_codec(codec)  # an unknown name fails here, before any encoding
        self.codec.check_dim(encoder.dim)
        self.store = store
        self.encoder = encoder
        self.flex_index = flex_index
        self.batch_size = check_count(batch_size, encoder.batch_size)
        self.verbose = verbose
        self.mode = builder_mode(mode)

    def __repr__(self) -> str:
        return f"TokenStoreIndexer({self.store}, {self.encoder}, flex_index={self.flex_index})"

    def index(self, inp: Iterable[dict]) -> TokenStore:
        total = corpus_length(inp)  # the bar's total; a count without one
        if hasattr(inp, "to_dict") and hasattr(inp, "columns"):  # a DataFrame
            inp = inp.to_dict(orient="records")
        docs = iter(inp)
        first = next(docs, None)
        if first is None:
            raise ValueError(f"no documents to index into {self.store}: the corpus is empty")
        docs = chain([first], docs)
        flex_path = None if self.flex_index is None else Path(self.flex_index.index_path)
        with self.store._building(self.mode, flex_path) as (tmp, flex_tmp):
            # a codec without a model (fp16, bf16, int8) codes each document's float32 states as they come; one
            # that is trained on a sample (pq) codes the fp16 states written first, once they are all there
            direct = not self.codec.trained
            with _StateWriter(tmp, self.codec if direct else resolve_codec("fp16")) as writer:
                chunks = self._encoded_chunks(docs, total, writer)
                if self.flex_index is not None:  # built under flex_tmp, moved into place with the store
                    from pyterrier_dr import FlexIndex

                    vectors = ({"docno": d, "doc_vec": v} for docnos, vecs in chunks for d, v in zip(docnos, vecs))
                    # no bar of its own: the token store's bar counts the same documents
                    flex = FlexIndex(str(flex_tmp), sim_fn=self.flex_index.sim_fn, verbose=False)
                    flex.indexer(mode="create").index(vectors)
                else:
                    for _ in chunks:
                        pass
            offsets = np.zeros(len(writer.lengths) + 1, dtype=np.int64)
            np.cumsum(writer.lengths, out=offsets[1:])
            np.save(tmp / OFFSETS_FILE, offsets)
            codec_meta, sums = self.codec.describe(), writer.sha256()
            if not direct:  # the fp16 states written above are coded, then dropped
                shape = (int(offsets[-1]), self.encoder.dim)
                fp16 = np.memmap(tmp / STATES_FILE, np.float16, "r", shape=shape) if shape[0] else np.zeros(shape)
                codec_meta, sums = write_states(fp16, tmp, self.codec)
                del fp16
                (tmp / STATES_FILE).unlink()
            meta = {
                "type": TokenStore.ARTIFACT_TYPE,
                "format": self.codec.name,
                "package_hint": "pyterrier-compverify",
                "encoder": self.encoder.describe(),
                "num_docs": len(writer.lengths),
                "num_tokens": int(offsets[-1]),
                "codec": codec_meta,
                "sha256": {
                    **sums,
                    OFFSETS_FILE: file_sha256(tmp / OFFSETS_FILE),
                    DOCNOS_FILE: file_sha256(tmp / DOCNOS_FILE),
                },
            }
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        return self.store

    def _encoded_chunks(
        self, docs: Iterator[dict], total: int | None, writer: _StateWriter
    ) -> Iterator[tuple[list[str], np.ndarray]]:
        """Encodes ``docs`` in chunks, writes each document's token states, and yields each chunk's docnos with
        its pooled vectors, shape (chunk, dim). Missing fields and repeated docnos are refused."""
        text_field = self.encoder.text_field
        seen: set[str] = set()
        with pt.tqdm(total=total, desc="token store", unit="doc", disable=not self.verbose) as bar:
            while chunk := list(islice(docs, self.batch_size * 16)):
                docnos, texts = [], []
                for doc in chunk:
                    for col in ("docno", text_field):
                        if col not in doc:
                            raise KeyError(f"document {doc.get('docno', '?')!r} has no {col!r} field")
                    docno = docno_text(doc["docno"])
                    if docno in seen:
                        raise ValueError(f"duplicate docno {docno!r} in the corpus: docnos must be unique")
                    seen.add(docno)
                    docnos.append(docno)
                    texts.append(doc[text_field])
                enc = self.encoder.encode(
                    texts, batch_size=self.batch_size, verbose=False, what=f"{text_field!r} field"
                )
                for docno, states in zip(docnos, enc.token_states):
                    writer.add(docno, states.numpy())
                bar.update(len(chunk))
                yield docnos, enc.pooled.numpy()


class _StateWriter:
    """The files of a store being built: each document's token states coded by ``codec`` and appended to the
    payload files (hashed as they are written), its docno to the lookup, its length to ``lengths``."""

    def __init__(self, folder: Path, codec: StateCodec):
        self.folder, self.codec = folder, codec
        self.lengths: list[int] = []
        self._digests = {name: hashlib.sha256() for name in codec.payload}

    def __enter__(self) -> _StateWriter:
        with contextlib.ExitStack() as files:  # closed here if an open fails, else in __exit__
            self._outs = {name: files.enter_context(open(self.folder / name, "wb")) for name in self.codec.payload}
            self._docnos = files.enter_context(Lookup.builder(self.folder / DOCNOS_FILE))
            self._docnos.formats["fixedbytes"] = _FixedBytes()
            self._docnos.seeded_formats = self._docnos.formats.copy()
            self._files = files.pop_all()
        return self

    def __exit__(self, *exc) -> bool | None:
        return self._files.__exit__(*exc)

    def add(self, docno: str, states: np.ndarray) -> None:
        """Appends one document: ``states`` float32, shape (tokens, dim)."""
        for name, values in self.codec.encode_block(states).items():
            data = np.ascontiguousarray(values)  # written and hashed as it is, no copy
            self._outs[name].write(data)
            self._digests[name].update(data)
        self.lengths.append(states.shape[0])
        self._docnos.add(docno)

    def sha256(self) -> dict[str, str]:
        """The hex sha256 of each payload file written."""
        return {name: digest.hexdigest() for name, digest in self._digests.items()}
