"""BiEncoder: a trained or hub bi-encoder as a PyTerrier dense retriever on pyterrier-dr."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyterrier as pt

from .artifacts import build_lock, building_name, docno_text, remove_leftovers, swap_into_place
from .encoder import TokenEncoder


class BiEncoder(TokenEncoder):
    """A :class:`TokenEncoder` with dense-index helpers: ``index(docs, path)`` builds a pyterrier-dr FlexIndex
    and ``retriever(path)`` searches it, so ``bi_encoder.retriever(path) >> cv.MapVerifier()`` is one line.
    ``query_encoder()``, ``doc_encoder()`` and ``text_scorer()`` come from pyterrier-dr.

    Example::

        model = cv.BiEncoder("runs/model-b/final")          # or a hub name
        model.index(dataset.get_corpus_iter(), "scifact.flex")
        pipeline = model.retriever("scifact.flex", num_results=100) >> cv.MaxSim(model)
    """

    def flex_index(self, path: str | os.PathLike):
        from pyterrier_dr import FlexIndex

        return FlexIndex(str(path), sim_fn=self.sim_fn, verbose=self.verbose)

    def index(self, docs, path: str | os.PathLike, *, overwrite: bool = False):
        """Encode ``docs`` (dicts with docno and text) into a FlexIndex at ``path``; returns the index. Duplicate
        or missing docnos are refused; the index is built beside ``path`` and moved there only when complete."""
        path = Path(path)
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} already exists; pass overwrite=True to rebuild it")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = building_name(path)
        try:
            with build_lock(path):
                remove_leftovers(path)
                (self.doc_encoder() >> self.flex_index(tmp).indexer(mode="create")).index(_unique_docnos(docs))
                swap_into_place(tmp, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return self.flex_index(path)

    def retriever(self, path: str | os.PathLike, *, num_results: int = 1000) -> pt.Transformer:
        """Query encoder >> exact (numpy) search of the FlexIndex at ``path``."""
        return self.query_encoder() >> self.flex_index(path).retriever(num_results=num_results, drop_query_vec=True)


def _unique_docnos(docs):
    """``docs`` (dicts or a DataFrame) with string docnos; a duplicate or missing docno raises a ValueError."""
    if hasattr(docs, "to_dict") and hasattr(docs, "columns"):
        docs = docs.to_dict(orient="records")
    seen = set()
    for doc in docs:
        docno = docno_text(doc["docno"])
        if docno in seen:
            raise ValueError(f"duplicate docno {docno!r} in the corpus: docnos must be unique")
        seen.add(docno)
        yield {**doc, "docno": docno}
