"""Rerankers that score (query, candidate) pairs from token states through a scoring head.

One class does the work (:class:`TokenReranker`: queries, candidates' token states from a store or from text,
``scoring.pairs`` for the head); the named rerankers only fix which registered head it uses. Rerankers with
trained weights (``MapVerifier``, ``MapCNN``) are built from a ``Verifier`` artifact in ``verifier.py``.
"""

from __future__ import annotations

import inspect
import itertools
import os

import numpy as np
import pandas as pd
import pyterrier as pt
import pyterrier_alpha as pta
import torch
from torch import nn

from ._device import resolve_device
from .encoder import COMPUTE_DTYPES, TokenEncoder, check_count, check_dtype, check_texts, warn_if_emulated
from .query_tokens import QueryTokens
from .scoring import (
    FixedHead,
    build_head,
    check_head_length,
    head_spec,
    pad_token_states,
    score_candidates,
    score_packed,
)
from .scoring.pairs import DeferredVerdicts, is_gated
from .spec import IncompatibleEncoderError
from .store import TokenStore

_DTYPE_NAMES = {torch.bfloat16: "bfloat16", torch.float32: "float32"}
# a gated penalty read from a store verifies its open candidates once per frame, or when this many maps wait
DEFERRED_MAPS = 2048


class TokenReranker(pt.Transformer):
    """Rerank a result frame with a scoring head over token states.

    Input: a result frame with ``qid``, ``query``, ``docno`` and, unless a ``store`` is given, the text column.
    Output: the same rows and columns, with ``score`` and ``rank`` replaced by the head's scores. Every row is
    scored against its own ``query`` text (one qid with two texts is scored correctly). Each distinct query is
    encoded once (or its ``query_toks`` from the first stage are used, when a compatible encoder made them from
    the same text);
    document token states come from the store when one is given (no re-encoding), else from the index the first
    stage retrieved from (``cv.BiEncoder(...).retriever(index)``; a frame with docnos that index lacks, such as
    passages of ``pt.text.sliding``, is scored from its text, every row), otherwise each distinct text in the
    frame is encoded once.
    ``store=False`` always scores the text, and so does a ``text_field`` given explicitly, where the rows carry it.

    ``head`` is a registered head name (``"F1"``, ``"Pooled"``, ...; see ``scoring.HEADS``) or a module;
    ``device`` is where maps and the head run (default: the encoder's device). ``dtype`` ``"float32"`` (default)
    scores exactly; ``"bfloat16"`` multiplies the map of store rows in reduced precision and runs the head in bf16
    (several times faster on CPUs with bf16 units; ``scoring.pairs.score_packed``; from text, without a store, the
    map stays float32 and only the head runs in bf16; a conditional penalty's verifier, which sees
    only the few candidates whose gate is open, stays float32); a store built with ``codec="bf16"`` then
    serves its rows to the product as stored. ``"int8"`` reads the rows of a store built with ``codec="int8"`` as
    stored and multiplies them by the query quantised per token in integer arithmetic (``scoring.int8_rows``; the
    head in float32). About ``score_batch_size`` candidates are
    scored per pass, several queries' candidates together.

    Example::

        pipeline = dense % 100 >> TokenReranker(encoder, head="F1", store=store)  # = MaxSim(encoder, store=store)
    """

    HEAD: str | None = None  # the registered head of a named subclass
    FIXED_OPTIONS: tuple[str, ...] = ()  # options of this class that a subclass sets itself (pt.inspect)

    def __init__(
        self,
        encoder: TokenEncoder | None = None,
        *,
        head: str | nn.Module | None = None,
        store: TokenStore | str | os.PathLike | bool | None = None,
        text_field: str | None = None,
        batch_size: int | None = None,
        score_batch_size: int = 256,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype = torch.float32,
        verbose: bool = False,
    ):
        self.encoder = encoder if encoder is not None else TokenEncoder(device=device)
        self.int8 = dtype in ("int8", torch.int8)  # products of an int8 store's rows in integer arithmetic
        if self.int8:
            self._dtype, dtype = "int8", "fp32"  # pt.inspect reads _dtype; the head runs in float32
        try:
            dtype = check_dtype(dtype)
        except ValueError as e:
            raise ValueError(f"{e}; or 'int8' over a store built with codec='int8'") from None
        self.dtype = COMPUTE_DTYPES[dtype]
        # False: never a store (not the first stage's either); an explicit text_field: its text where rows carry it
        if store is True:
            raise ValueError("store=True: give the TokenStore (or its path), None to use the first stage's, or False")
        self.first_stage_store = store is not False and text_field is None
        self.store = TokenStore(store) if isinstance(store, (str, os.PathLike)) else None if store is False else store
        self._store = False if store is False else self.store  # pt.inspect: the options as given
        self._text_field = text_field
        if self.store is not None:
            self.store.check_encoder(self.encoder)
            if self.int8:
                self.store.check_int8()
        self.text_field = text_field or self.encoder.text_field
        self.batch_size = check_count(batch_size, self.encoder.batch_size)
        self.score_batch_size = check_count(score_batch_size, 256, "score_batch_size")
        self.device = resolve_device(device) if device is not None else self.encoder.device
        warn_if_emulated(dtype, self.device)
        self.verbose = verbose
        head = head if head is not None else self.HEAD
        if head is None:
            raise ValueError(f"{type(self).__name__} needs a head: a registered name or a module")
        if isinstance(head, str) and head != self.HEAD and head_spec(head).learned:
            import warnings

            warnings.warn(
                f"head {head!r} has trained weights, and by name it is built untrained (random weights): use "
                "cv.MapVerifier() (the packaged F4), cv.MapCNN() (F3), cv.WeightedMaxSim() (F1w) or "
                "cv.Verifier(path).reranker() for trained ones, or pass a module",
                stacklevel=2,
            )
        self.head = build_head(head, dim=self.encoder.dim) if isinstance(head, str) else head
        check_head_length(self.head, self.encoder.max_length)

    def __repr__(self) -> str:
        head = "" if self.HEAD is not None else f", head={getattr(self.head, 'head_name', self.head)!r}"
        return f"{type(self).__name__}({self.encoder!r}{head}{self._source_repr()}{self._dtype_repr()})"

    def _source_repr(self) -> str:
        """``, store=...`` and ``, text_field=...`` where given: where the documents' token states come from."""
        store = f", store={self._store!r}" if self._store is not None else ""
        return store + (f", text_field={self._text_field!r}" if self._text_field is not None else "")

    def _dtype_repr(self) -> str:
        """``, dtype='...'`` unless the reranker scores in float32 (the default)."""
        if self.int8:
            return ", dtype='int8'"
        return "" if self.dtype == torch.float32 else f", dtype={_DTYPE_NAMES[self.dtype]!r}"

    def _eq_key(self) -> tuple:
        """What makes two rerankers give the same scores (PyTerrier's pipeline tooling compares these)."""
        store = str(self.store.path) if self.store is not None else None
        return (
            type(self), self.encoder.spec, store, self.first_stage_store, self.text_field, self._head_key(), self.dtype,
            self.int8,
        )  # fmt: skip

    def _head_key(self):
        """The head's part of :meth:`_eq_key`: a weight-free head is its function, name and options (a
        ``FixedHead``) or its type and repr (no parameters or buffers); a head with weights is the module itself,
        compared by identity (a module's repr shows no weights: two F4 heads of other seeds look the same)."""
        head = self.head
        if isinstance(head, FixedHead):
            return (head.fn, head.name, repr(sorted(head.options.items())))
        if next(itertools.chain(head.parameters(), head.buffers()), None) is None:
            return (type(head), repr(head))
        return id(head)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._eq_key() == other._eq_key()

    def __hash__(self) -> int:
        return hash(self._eq_key())

    def attributes(self) -> list:
        """``pt.inspect``: every constructor option with its value, including those a subclass forwards through
        ``**kwargs``, so ``pt.inspect.transformer_apply_attributes(reranker, batch_size=8)`` rebuilds it."""
        from .inspection import constructor_attributes

        return constructor_attributes(self, fixed=self.FIXED_OPTIONS)

    def subtransformers(self) -> dict:
        """``pt.inspect``: none; the encoder is a model this reranker uses, not a stage it runs (as pyterrier-dr)."""
        return {}

    def explain(self, query: str, text: str):
        """Why ``text`` gets its score: an ``explain.Explanation`` with the (m, n) token-token map, each query
        token's best match and the score taken apart; ``.plot("map.png")`` draws it (``[explain]`` extra)."""
        from .explain import explain

        return explain(self, query, text)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pta.validate.result_frame(inp, extra_columns=["query"])
        if len(inp) == 0:
            out = inp.drop(columns=["score", "rank"], errors="ignore")
            return out.assign(score=pd.Series(dtype="float64"), rank=pd.Series(dtype="int64"))
        has_text = self.text_field in inp.columns
        store = self.store
        if store is None and self._store is not False and (self.first_stage_store or not has_text):
            store = self._first_stage_store(inp, text=has_text)
        if store is None and not has_text:
            raise ValueError(
                f"{type(self).__name__} needs the documents' token states or text: retrieve with "
                f"cv.BiEncoder(...).retriever(index) (its index holds token states), pass store=cv.TokenStore(path), "
                f"or add pt.text.get_text(dataset, {self.text_field!r}) before it"
            )
        query_ids, query_states = self._query_states(inp)
        try:
            candidates, deferred = self._candidates(inp, store)
        except KeyError as error:  # docnos the store lacks (e.g. passages of pt.text.sliding)
            if store is None or not has_text:
                raise
            if store is self.store:  # the store given: say how to score the text instead
                raise KeyError(f"{error.args[0]}; the rows carry text: store=False scores it") from None
            candidates, deferred = self._candidates(inp, None)  # the first stage's index: the rows' text
        scores = np.empty(len(inp), dtype=np.float64)
        groups = dict(enumerate(np.split(np.argsort(query_ids, kind="stable"), np.cumsum(np.bincount(query_ids))[:-1])))
        self._head_on_device()
        bar = pt.tqdm(total=len(groups), desc=type(self).__name__, unit="query", disable=not self.verbose)
        by_length = sorted(groups, key=lambda q: query_states[q].shape[0])  # a pass pads to its longest query
        for batch in self._passes({q: groups[q] for q in by_length}):
            queries = [query_states[q].to(self.device) for q, _ in batch]
            chunks = [rows for _, rows in batch]
            with torch.inference_mode():
                scores[np.concatenate(chunks)] = candidates(queries, chunks).float().cpu().numpy()
                if deferred is not None and len(deferred) >= DEFERRED_MAPS:
                    deferred.apply(scores)
            bar.update(sum(int(rows[-1] == groups[q][-1]) for q, rows in batch))  # queries finished
        if deferred is not None:
            with torch.inference_mode():
                deferred.apply(scores)
        bar.close()
        if not np.isfinite(scores).all():
            bad = int((~np.isfinite(scores)).sum())
            raise FloatingPointError(f"{self!r} gave {bad} non-finite score(s): check the head's weights and store")
        return scored(inp, scores)

    def _head_on_device(self) -> None:
        """The head in eval mode on the reranker's device, moved only when a weight is elsewhere (a ``to`` visits
        every submodule: about 1 ms per call for F4)."""

        def here(t: torch.Tensor) -> bool:  # "cuda" holds a tensor on "cuda:0"
            return t.device.type == self.device.type and self.device.index in (None, t.device.index)

        if not all(here(t) for t in itertools.chain(self.head.parameters(), self.head.buffers())):
            self.head.to(self.device)
        self.head.eval()

    def _passes(self, groups: dict):
        """Lists of (query number, row positions) of about ``score_batch_size`` rows each, in query order (a
        query with more rows is split over passes): the candidates scored in one pass."""
        batch, size = [], 0
        for q, rows in groups.items():
            for start in range(0, len(rows), self.score_batch_size):
                chunk = rows[start : start + self.score_batch_size]
                if batch and size + len(chunk) > self.score_batch_size:
                    yield batch
                    batch, size = [], 0
                batch.append((q, chunk))
                size += len(chunk)
        if batch:
            yield batch

    def _query_states(self, inp: pd.DataFrame) -> tuple[np.ndarray, list[torch.Tensor]]:
        """Row -> distinct query number, and each distinct query's (m, d) token states: from the ``query_toks`` of
        any of its rows made by a compatible encoder for this query text (one forward pass shared with the first
        stage; a union with another first stage leaves some rows without, a query rewrite between makes them
        stale), else encoded here."""
        codes, texts = pd.factorize(inp["query"], use_na_sentinel=False)  # each distinct value checked once
        texts = check_texts(texts, "query")
        states: list[torch.Tensor | None] = [None] * len(texts)
        if "query_toks" in inp.columns:
            spec = self.encoder.spec
            for code, toks in zip(codes, inp["query_toks"].to_numpy()):
                if (
                    states[code] is None
                    and isinstance(toks, QueryTokens)
                    and toks.text == texts[code]
                    and spec.compatible(toks.spec)
                ):
                    states[code] = toks.states
        missing = [q for q, state in enumerate(states) if state is None]
        if missing:
            encoded = self.encoder.encode(
                [texts[q] for q in missing], batch_size=self.batch_size, verbose=self.verbose, what="query"
            )
            for q, state in zip(missing, encoded.token_states):
                states[q] = state
        return codes, states

    def _first_stage_store(self, inp: pd.DataFrame, *, text: bool = False) -> TokenStore | None:
        """The token store of the index the first stage retrieved from, when its ``query_toks`` name one (see
        ``query_tokens``); one made by another encoder than this reranker's is passed over when the rows have
        their ``text`` (scored from it), else refused with the fix."""
        if "query_toks" not in inp.columns:
            return None
        first = next((t for t in inp["query_toks"] if isinstance(t, QueryTokens)), None)  # a union: some rows lack it
        store = getattr(first, "store", None)
        if store is None:
            return None
        mismatch = store.spec.mismatch(self.encoder.spec)
        if mismatch is not None and text:
            return None
        if mismatch is not None:
            raise IncompatibleEncoderError(
                f"the first stage's index {store!r} holds token states of encoder {store.spec.name!r}, not of "
                f"{type(self).__name__}'s encoder {self.encoder.spec.name!r} ({mismatch}): give the reranker the "
                f"index's encoder (e.g. cv.MaxSim(model)) or a verifier trained on it, or the text "
                f"(pt.text.get_text(dataset, {self.text_field!r}) before it)"
            )
        return store

    def _candidates(self, inp: pd.DataFrame, store: TokenStore | None):
        """A function (G queries' (m_g, d) states, G arrays of row positions) -> scores of those rows (in order),
        and, for a gated conditional penalty read from a store, the :class:`DeferredVerdicts` its passes fill
        (their scores are S until it is applied; else None)."""
        if store is not None:
            deferred = DeferredVerdicts(self.head) if is_gated(self.head) else None
            # one store lookup per distinct docno, for the whole frame; a missing docno (None, NaN) is looked up too,
            # so that the store refuses it (a code of -1 would read the last docno's states)
            codes, unique = pd.factorize(inp["docno"], use_na_sentinel=False)
            starts, ends = store.row_ranges(np.asarray(unique, dtype=object))
            starts, ends = starts[codes], ends[codes]

            gather = store.gather_int8 if self.int8 else store.gather

            def from_store(queries, chunks):
                rows = np.concatenate(chunks)
                packed = gather(starts[rows], ends[rows])
                lengths = ends[rows] - starts[rows]
                mask = torch.from_numpy(np.arange(int(lengths.max()))[None, :] < lengths[:, None])
                padded, query_mask = pad_token_states(queries)
                device = queries[0].device
                sizes = [len(rows) for rows in chunks]
                return score_packed(
                    self.head,
                    padded,
                    packed,
                    mask.to(device),
                    query_mask=query_mask.to(device),
                    sizes=sizes,
                    dtype=self.dtype,
                    deferred=deferred,
                    positions=rows,
                    stored_form=store.stored_form,
                )

            return from_store, deferred
        if self.int8:
            raise ValueError(
                f"{type(self).__name__}(dtype='int8') multiplies the rows of an int8 token store: pass "
                f"store=... built with codec='int8' (or store.recode(path, codec='int8')), or use dtype='float32'"
            )
        texts = check_texts(inp[self.text_field], f"{self.text_field!r} column")
        text_ids, unique_texts = pd.factorize(pd.Series(texts))
        states = self.encoder.encode(
            list(unique_texts), batch_size=self.batch_size, verbose=self.verbose, what="document"
        ).token_states

        def from_text(queries, chunks):
            scores = []
            for query, rows in zip(queries, chunks):
                cand, mask = pad_token_states([states[i] for i in text_ids[rows]], dtype=query.dtype)
                device = query.device
                scores.append(score_candidates(self.head, query, cand.to(device), mask.to(device), dtype=self.dtype))
            return torch.cat(scores)

        return from_text, None


def check_text_rows(inp: pd.DataFrame, text_field: str, who: str) -> None:
    """PyTerrier's validation of a result frame with ``query`` and the passage text ``text_field`` for a scorer
    that reads both (``who``); a missing text column names the stage that adds it. Before an empty frame returns,
    so that ``pt.inspect`` learns that the text is needed."""
    try:
        pta.validate.result_frame(inp, extra_columns=["query", text_field])
    except pt.validate.InputValidationError as error:
        if text_field in inp.columns or "query" not in inp.columns:
            raise
        raise type(error)(
            f"{who} reads the passages' text: add pt.text.get_text(dataset, {text_field!r}) before it (or give "
            "text_field=, the column that holds it);",
            error.modes,
        ) from None


def empty_scored(inp: pd.DataFrame) -> pd.DataFrame:
    """A reranker's output for an empty frame: its columns, ``score`` and ``rank`` last."""
    out = inp.drop(columns=["score", "rank"], errors="ignore")
    return out.assign(score=pd.Series(dtype="float64"), rank=pd.Series(dtype="int64"))


def scored(inp: pd.DataFrame, scores: np.ndarray) -> pd.DataFrame:
    """A reranker's output: a copy of ``inp`` with ``score`` and ``rank`` (:func:`ranks`) replaced and put last,
    the other columns kept in their order (any labels), sorted by query and rank where ``pt.model.STRICT_SORT``
    asks for it, as ``pt.model.add_ranks`` does."""
    out = inp.assign(score=scores, rank=ranks(inp["qid"], scores))
    if pt.model.STRICT_SORT:
        out = out.sort_values(["qid", "rank"], kind="stable")
    names = list(out.columns)
    if names[-2:] == ["score", "rank"]:
        return out
    others = [i for i, name in enumerate(names) if name not in ("score", "rank")]  # positions: any labels
    return out.iloc[:, others + [names.index("score"), names.index("rank")]]


def ranks(qids: pd.Series, scores: np.ndarray) -> np.ndarray:
    """Each row's rank within its qid by descending score, ties in row order: ``pt.model.add_ranks``'s ranks
    (its ``rank(method="first")``) from one stable sort instead of a pandas group-by. The rows keep their order
    (the reranker sorts them where ``pt.model.STRICT_SORT`` asks for it).

    >>> ranks(pd.Series(["a", "b", "a", "a"]), np.array([0.1, 0.5, 0.3, 0.1])).tolist()
    [1, 0, 0, 2]
    """
    codes = pd.factorize(qids)[0]
    order = np.lexsort((-scores, codes))  # stable: equal scores keep their row order
    firsts = np.searchsorted(codes[order], codes[order], side="left")
    out = np.empty(len(scores), dtype=np.int64)
    out[order] = np.arange(len(scores)) - firsts + pt.model.FIRST_RANK
    return out


class MaxSim(TokenReranker):
    """F1 MaxSim reranker: mean over query tokens of the best cosine with any candidate token.

    Example::

        enc = TokenEncoder()
        pipeline = dense_retriever % 100 >> MaxSim(enc, store=TokenStore("corpus.tokens"))
    """

    HEAD = "F1"


class BagOfSimilarities(TokenReranker):
    """F0: mean token-token cosine over all valid pairs."""

    HEAD = "F0"


class SoftAlign(TokenReranker):
    """F2 soft alignment with a distance penalty ``lam`` and temperature ``tau`` (the verifier paper: 0.1, 0.1)."""

    HEAD = "F2"
    FIXED_OPTIONS = ("head",)

    def __init__(self, encoder: TokenEncoder | None = None, *, lam: float = 0.1, tau: float = 0.1, **kwargs):
        self.lam, self.tau = lam, tau
        encoder = encoder if encoder is not None else TokenEncoder(device=kwargs.get("device"))
        super().__init__(encoder, head=build_head("F2", lam=lam, tau=tau), **kwargs)

    def __repr__(self) -> str:  # the options, where not the defaults: pt.Experiment names systems by repr
        defaults = inspect.signature(SoftAlign.__init__).parameters
        options = "".join(
            f", {k}={getattr(self, k)}" for k in ("lam", "tau") if getattr(self, k) != defaults[k].default
        )
        return super().__repr__()[:-1] + options + ")"


class PooledCosine(TokenReranker):
    """Pooled: cosine of the masked means of the (L2-normalised) token states (a states head)."""

    HEAD = "Pooled"
