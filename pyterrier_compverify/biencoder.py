"""BiEncoder: a trained or hub bi-encoder as a PyTerrier dense retriever on pyterrier-dr."""

from __future__ import annotations

import os

import pyterrier as pt

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
        """Encode ``docs`` (dicts with docno and text) into a FlexIndex at ``path``; returns the index."""
        flex = self.flex_index(path)
        (self.doc_encoder() >> flex.indexer(mode="overwrite" if overwrite else "create")).index(docs)
        return flex

    def retriever(self, path: str | os.PathLike, *, num_results: int = 1000) -> pt.Transformer:
        """Query encoder >> exact (numpy) search of the FlexIndex at ``path``."""
        return self.query_encoder() >> self.flex_index(path).retriever(num_results=num_results, drop_query_vec=True)
