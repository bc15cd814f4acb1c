"""NanoBEIR: the 13 small BEIR collections (50 queries, up to ~10k documents each) of Zeta Alpha.

ir_datasets (>= 0.5.10) registers them as ``nano-beir/<name>`` (``arguana``, ``climate-fever``, ..., ``scifact``,
``webis-touche2020``), so ``pt.get_dataset("irds:nano-beir/scifact")`` and ``compverify evaluate
irds:nano-beir/scifact`` work as they are: online, ir_datasets downloads the three parquet files of the hub dataset
``zeta-alpha-ai/Nano<Name>`` (``corpus/``, ``queries/``, ``qrels/train-00000-of-00001.parquet``; documents are
``_id, text``, queries ``_id, text``, qrels ``query-id, corpus-id``, every pair relevant).

Offline, :func:`link_local_copies` takes a folder of hub snapshots in their own layout::

    <folder>/NanoSciFact/corpus/train-00000-of-00001.parquet
    <folder>/NanoSciFact/queries/train-00000-of-00001.parquet
    <folder>/NanoSciFact/qrels/train-00000-of-00001.parquet

(what ``huggingface-cli download zeta-alpha-ai/NanoSciFact --repo-type dataset --local-dir <folder>/NanoSciFact``
writes) and links the files where ir_datasets would have downloaded them. ``cv.setup_local_data(data)`` does this
for ``<data>/nanobeir``. Which hub file goes where is read from ir_datasets' own download table, not repeated here.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

NAMESPACE = "nano-beir"  # ir_datasets' id prefix
LOCAL_DIR = "nanobeir"  # the folder of hub snapshots inside a compverify data folder
_HUB_URL = re.compile(r"^https://huggingface\.co/datasets/(?P<org>[^/]+)/(?P<repo>[^/]+)/resolve/[^/]+/(?P<file>.+)$")


@dataclass(frozen=True)
class HubFile:
    """One NanoBEIR source file: where it is on the hub, and where ir_datasets keeps its download."""

    name: str  # the collection, as in the id: "scifact"
    repo: str  # the hub dataset: "zeta-alpha-ai/NanoSciFact"
    path_in_repo: str  # "corpus/train-00000-of-00001.parquet"
    cache_path: str  # under the ir_datasets home's nano-beir/: "scifact/corpus.parquet"

    def local_source(self, folder: Path) -> Path:
        """This file inside a folder of hub snapshots (``<folder>/NanoSciFact/corpus/...``)."""
        return folder / self.repo.split("/", 1)[1] / self.path_in_repo


def hub_files() -> list[HubFile]:
    """Every NanoBEIR source file ir_datasets knows, from its download table (``ir_datasets/etc/downloads.json``).

    >>> sorted({f.name for f in hub_files()})[:3]
    ['arguana', 'climate-fever', 'dbpedia-entity']
    >>> [f for f in hub_files() if f.name == "scifact" and f.cache_path.endswith("qrels.parquet")][0].path_in_repo
    'qrels/train-00000-of-00001.parquet'
    """
    table = json.loads((files("ir_datasets") / "etc" / "downloads.json").read_text(encoding="utf-8"))
    if NAMESPACE not in table:
        raise ImportError(f"this ir_datasets has no {NAMESPACE} datasets: pip install 'ir-datasets>=0.5.10'")
    found = []
    for key, entry in sorted(table[NAMESPACE].items()):
        match = _HUB_URL.match(entry["url"])
        if match is None:  # a source not on the hub: nothing to link from a snapshot folder
            continue
        repo = f"{match['org']}/{match['repo']}"
        found.append(HubFile(key.split("/", 1)[0], repo, match["file"], entry["cache_path"]))
    return found


def names() -> list[str]:
    """The NanoBEIR collections, as in ``irds:nano-beir/<name>``."""
    return sorted({f.name for f in hub_files()})


def link_local_copies(folder: str | os.PathLike) -> list[str]:
    """Link the hub snapshots in ``folder`` (layout in the module docstring) into the ir_datasets home, where
    ir_datasets looks before downloading; files already there are kept. Returns the collections now complete
    (all three files present), e.g. ``["scifact"]``; a collection with only some of its files raises a
    FileNotFoundError naming the missing ones, after every complete one is linked."""
    import ir_datasets

    from .local import _place

    folder = Path(folder)
    home = ir_datasets.util.home_path() / NAMESPACE
    by_name: dict[str, list[HubFile]] = {}
    for hub_file in hub_files():
        by_name.setdefault(hub_file.name, []).append(hub_file)
    complete, incomplete = [], []
    for name, parts in sorted(by_name.items()):
        present = [p for p in parts if p.local_source(folder).is_file()]
        if not present:
            continue
        if len(present) < len(parts):
            missing = [str(p.local_source(folder)) for p in parts if p not in present]
            incomplete.append(f"NanoBEIR {name} in {folder} is incomplete: missing {', '.join(missing)}")
            continue
        for part in parts:
            _place(part.local_source(folder), home / part.cache_path)
        complete.append(name)
    if incomplete:
        linked = f" (linked: {', '.join(complete)})" if complete else ""
        raise FileNotFoundError("; ".join(incomplete) + linked)
    return complete
