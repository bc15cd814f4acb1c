"""BiEncoder: a trained or hub bi-encoder as a PyTerrier dense retriever whose index also holds token states.

``model.index(docs, path)`` encodes each document once into a folder holding a pyterrier-dr FlexIndex (``dense/``,
the pooled vectors) and a :class:`TokenStore` (``tokens/``, the token states); ``model.retriever(path)`` searches
the FlexIndex and tells the next stage where the token states are, so a token reranker needs no argument::

    dense = model.retriever(path)
    dense % 100 >> cv.MapVerifier()   # reads the candidates' token states from path/tokens
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pyterrier as pt
import pyterrier_alpha as pta

from .artifacts import (
    CorruptArtifactError,
    SizedIterator,
    build_lock,
    corpus_length,
    docno_text,
    remove_path,
    write_json,
    write_texts,
)
from .encoder import TokenEncoder, check_count
from .spec import EncoderSpec
from .store import TokenStore
from .store_codecs import resolve_codec

DENSE_DIR, TOKENS_DIR = "dense", "tokens"
BUILDING_KEY = "building"  # encoder.json while a build runs: {"building": spec}
ENCODER_FILE = "encoder.json"  # the spec of the encoder that built the index (its dense part has no other record)
MODES = ("create", "reuse", "overwrite")


class IncompleteIndexError(CorruptArtifactError):
    """An index whose build stopped before its end (its ``encoder.json`` still says it is building)."""


@dataclass(frozen=True)
class BiEncoderIndex:
    """The folder ``path`` of ``BiEncoder.index``: ``flex`` (pyterrier-dr FlexIndex of pooled vectors) and
    ``store`` (the :class:`TokenStore` of token states, None when built with ``token_states=False``)."""

    path: Path
    flex: object
    store: TokenStore | None


class BiEncoder(TokenEncoder):
    """A :class:`TokenEncoder` with index helpers: ``index(docs, path)`` builds a FlexIndex and a TokenStore in
    one encoder pass, ``retriever(path)`` searches it, and a token reranker after it finds the token states.
    ``query_encoder()``, ``doc_encoder()`` and ``text_scorer()`` come from pyterrier-dr.

    Example::

        model = cv.BiEncoder()                                # all-MiniLM-L6-v2, or a trained folder / hub name
        docs = ({"docno": d["docno"], "text": f"{d['title']} {d['text']}"} for d in dataset.get_corpus_iter())
        model.index(docs, "scifact.index", mode="reuse")
        dense = model.retriever("scifact.index")
        pipeline = dense % 100 >> cv.MapVerifier()            # or cv.MaxSim(model)
    """

    def flex_index(self, path: str | os.PathLike, *, verbose: bool | None = None):
        """The pyterrier-dr FlexIndex at ``path`` with this encoder's similarity; ``verbose``: the encoder's by
        default."""
        from pyterrier_dr import FlexIndex

        return FlexIndex(str(path), sim_fn=self.sim_fn, verbose=self.verbose if verbose is None else verbose)

    def index(
        self,
        docs,
        path: str | os.PathLike,
        *,
        mode: str | pta.ArtifactBuilderMode = "create",
        token_states: bool = True,
        codec: str | dict | None = None,
        verbose: bool = True,
        total: int | None = None,
    ) -> BiEncoderIndex:
        """Encode ``docs`` (dicts or a DataFrame with docno and text) once into the folder ``path``: pooled vectors
        in ``path/dense`` (FlexIndex) and, with ``token_states``, token states in ``path/tokens`` (TokenStore),
        kept by ``codec`` (``"fp16"`` by default; ``"bf16"``, ``"int8"``, ``"pq"``: see :mod:`.store_codecs`).

        ``mode``: ``"create"`` refuses an existing index, ``"reuse"`` opens a complete one built by this encoder (and
        builds it otherwise; one whose store has another codec than a given ``codec`` is refused), ``"overwrite"``
        rebuilds it. With ``token_states`` the parts are built beside their place and moved there only when complete;
        without, FlexIndex rewrites ``dense/`` in place. Until the build ends, ``encoder.json`` says it is building, so
        an index whose build stopped is refused (``"reuse"`` rebuilds it); a build that fails before any part moved
        leaves the index as it was. Duplicate or missing docnos are refused. ``verbose``: a progress bar over the
        documents, whatever the encoder's own ``verbose``; its total is ``total``, or ``len(docs)`` where ``docs`` has
        one (a generator has none)."""
        mode = getattr(mode, "value", mode)  # pyterrier-alpha's ArtifactBuilderMode too
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        path = Path(path)
        wanted = None if codec is None else resolve_codec(codec)  # an unknown codec fails before any work
        if wanted is not None:
            wanted.check_dim(self.dim)  # also fills in a default parameter (pq's m), so that describe() is complete
        if mode == "reuse":
            found = self._complete_index(path, token_states)
            if found is not None:
                held = found.store.codec if found.store is not None else None
                if wanted is not None and held is not None and held != wanted.describe():
                    raise ValueError(
                        f"the index at {path} keeps its token states as {held}, not {wanted.describe()}: pass "
                        f"mode='overwrite' to rebuild it, or recode its store (index.store.recode(new_path, codec))"
                    )
                return found
        store = TokenStore(path / TOKENS_DIR)
        # quiet: the document bar below counts the same documents; the index opened at the end has the encoder's
        flex = self.flex_index(path / DENSE_DIR, verbose=False)
        if mode == "create" and any((path / part).exists() for part in (DENSE_DIR, TOKENS_DIR)):
            raise FileExistsError(f"{path} already exists; pass mode='reuse' or mode='overwrite'")
        built = "create" if mode == "create" else "overwrite"
        path.mkdir(parents=True, exist_ok=True)
        record, parts = path / ENCODER_FILE, _parts_placed(path)
        held = record.read_text(encoding="utf-8") if record.is_file() else None
        write_json(record, {BUILDING_KEY: self.spec.to_dict()})  # until the last part is in place
        try:
            if token_states:
                indexer = store.indexer(self, flex_index=flex, verbose=verbose, mode=built, codec=wanted)
                indexer.index(_unique_docnos(docs, total))
            else:
                if (path / TOKENS_DIR).exists():  # first: the old documents' token states must never meet new vectors
                    with build_lock(path / TOKENS_DIR):
                        remove_path(path / TOKENS_DIR)
                (self.doc_encoder(verbose=verbose) >> flex.indexer(mode=built)).index(_unique_docnos(docs, total))
        except BaseException:
            if _parts_placed(path) == parts:  # stopped before any part moved: the index is as it was
                write_texts({record: held}) if held is not None else record.unlink(missing_ok=True)
            raise
        write_json(record, self.spec.to_dict())
        return self.open_index(path)

    def open_index(self, path: str | os.PathLike) -> BiEncoderIndex:
        """The index at ``path``; it must come from this encoder (its ``encoder.json``, and its token store when it
        has one; an index built before ``encoder.json`` was written is checked by its store only). ``path`` may be
        the :class:`BiEncoderIndex` that :meth:`index` returned."""
        path = Path(getattr(path, "path", path))
        if not (path / DENSE_DIR).is_dir():
            raise FileNotFoundError(
                f"{path} holds no index ({DENSE_DIR}/ missing): build it with model.index(docs, path)"
            )
        if (path / ENCODER_FILE).is_file():
            record = json.loads((path / ENCODER_FILE).read_text(encoding="utf-8"))
            if BUILDING_KEY in record:  # a build stopped before its end: its parts may come from two encoders
                raise IncompleteIndexError(
                    f"the index at {path} was being built when it stopped: rebuild it with mode='overwrite'"
                )
            EncoderSpec.from_dict(record).check(self.spec, f"the index at {path}")
        store = TokenStore(path / TOKENS_DIR) if (path / TOKENS_DIR).is_dir() else None
        if store is not None:
            store.check_encoder(self)
        return BiEncoderIndex(path, self.flex_index(path / DENSE_DIR), store)

    def _complete_index(self, path: Path, token_states: bool) -> BiEncoderIndex | None:
        """The index at ``path`` when it is complete (a finished FlexIndex and, if wanted, token store) and was
        built by this encoder; None when it needs building."""
        if not (path / DENSE_DIR / "pt_meta.json").is_file():
            return None
        if token_states and not TokenStore(path / TOKENS_DIR).built():
            return None
        try:
            return self.open_index(path)
        except IncompleteIndexError:
            return None

    def retriever(self, path: str | os.PathLike, *, num_results: int = 1000) -> pt.Transformer:
        """Query encoder >> exact (numpy) search of the index at ``path``. The query's token states
        (``query_toks``) travel with the results and name the index's token store, so a token reranker after it
        reads the candidates' states from there."""
        num_results = check_count(num_results, 1000, "num_results")
        index = self.open_index(path)
        from .query_tokens import QueryTokenEncoder

        return QueryTokenEncoder(self, store=index.store) >> index.flex.retriever(
            num_results=num_results, drop_query_vec=True
        )


def _parts_placed(path: Path) -> tuple:
    """What is in place of an index's parts: each part's metadata file (written last, when a part moves in) by
    identity and time, None where it is missing."""

    def placed(meta: Path):
        try:
            found = meta.stat()
        except FileNotFoundError:
            return None
        return found.st_ino, found.st_mtime_ns

    return tuple(placed(path / part / "pt_meta.json") for part in (DENSE_DIR, TOKENS_DIR))


def _unique_docnos(docs, total: int | None = None):
    """``docs`` (dicts or a DataFrame) with string docnos; a duplicate or missing docno raises a ValueError. The
    result has the length ``total`` or that of ``docs`` where it has one, so the indexing bar shows a total."""
    checked, total = _checked_docnos(docs), corpus_length(docs) if total is None else int(total)
    return checked if total is None else SizedIterator(checked, total)


def _checked_docnos(docs):
    if hasattr(docs, "to_dict") and hasattr(docs, "columns"):
        docs = docs.to_dict(orient="records")
    seen = set()
    for doc in docs:
        docno = docno_text(doc["docno"])
        if docno in seen:
            raise ValueError(f"duplicate docno {docno!r} in the corpus: docnos must be unique")
        seen.add(docno)
        yield {**doc, "docno": docno}
