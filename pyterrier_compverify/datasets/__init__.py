"""Dataset access: local data folders, CapRetrieval ids, and uniform collection loading."""

from . import capretrieval, nanobeir, nearmiss
from .collection import Collection, CorpusText, load_collection
from .local import DATA_ENV, data_dir, setup_from_environment, setup_local_data

capretrieval.register()
nearmiss.register()
setup_from_environment()

__all__ = [
    "DATA_ENV",
    "Collection",
    "CorpusText",
    "capretrieval",
    "nanobeir",
    "nearmiss",
    "data_dir",
    "load_collection",
    "setup_local_data",
]
