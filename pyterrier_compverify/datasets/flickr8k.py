"""Flickr8k captions (8,091 images x 5 human captions) read from the local data folder, without the hub.

Two captions of the same image are independent human descriptions of one scene: a pool of paraphrase pairs and of
captions to edit into near-misses. Research use; please cite M. Hodosh, P. Young and J. Hockenmaier (2013), "Framing
Image Description as a Ranking Task: Data, Models and Evaluation Metrics", Journal of Artificial Intelligence
Research 47, 853-899.

Layout (as distributed by the authors)::

    <data>/flickr8k/Flickr8k.token.txt            <image>#<0-4> TAB <caption>, one caption a line
    <data>/flickr8k/Flickr_8k.trainImages.txt     one image file name a line (6,000)
    <data>/flickr8k/Flickr_8k.devImages.txt       (1,000)
    <data>/flickr8k/Flickr_8k.testImages.txt      (1,000)

``<data>`` is the ``data_dir`` argument, else the folder set by ``cv.setup_local_data(path)`` or the
``COMPVERIFY_DATA`` environment variable.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from . import local

FOLDER = "flickr8k"
TOKEN_FILE = "Flickr8k.token.txt"
SPLIT_FILES = {split: f"Flickr_8k.{split}Images.txt" for split in ("train", "dev", "test")}
SPLITS = (*SPLIT_FILES, "all")
COLUMNS = ["image", "caption_id", "caption"]
_CAPTION_ID = re.compile(r"(?P<image>\S+?\.jpg)(?:\.1)?#(?P<n>\d+)")  # one image is filed as "<name>.jpg.1#0"


def _path(name: str, data_dir: str | os.PathLike | None) -> Path:
    """``<data>/flickr8k/<name>``, or FileNotFoundError naming the file and how to set the data folder."""
    folder = Path(data_dir) if data_dir is not None else local.data_dir()
    how = (
        f"pass data_dir=..., call cv.setup_local_data(path) or set the {local.DATA_ENV} environment variable to a "
        f"data folder holding {FOLDER}/{name}"
    )
    if folder is None:
        raise FileNotFoundError(f"no data folder is set, so {FOLDER}/{name} cannot be found: {how}")
    path = folder / FOLDER / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: {how}")
    return path


def _lines(path: Path):
    """(line number, line without its line break) for the non-blank lines of a UTF-8 file."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if line.strip():
                yield number, line


def read_token_file(path: str | os.PathLike) -> pd.DataFrame:
    """All captions of a ``Flickr8k.token.txt`` file: ``image, caption_id, caption``.

    ``caption_id`` is ``<image>#<n>``. A malformed line (no tab, a bad id, an empty caption, a repeated id) raises
    ValueError naming the file and line number.
    """
    path = Path(path)
    rows, seen = [], {}
    for number, line in _lines(path):
        key, tab, caption = line.strip(" ").partition("\t")
        match = _CAPTION_ID.fullmatch(key.strip())
        caption_id = f"{match['image']}#{match['n']}" if match else None
        if not tab:
            problem = "no tab between caption id and caption"
        elif match is None:
            problem = f"caption id {key.strip()!r} is not <image>.jpg#<n>"
        elif not caption.strip():
            problem = "empty caption"
        elif caption_id in seen:
            problem = f"caption id {caption_id} repeats line {seen[caption_id]}"
        else:
            seen[caption_id] = number
            rows.append((match["image"], caption_id, caption.strip()))
            continue
        raise ValueError(f"{path}, line {number}: malformed Flickr8k caption line ({problem}): {line[:80]!r}")
    return pd.DataFrame(rows, columns=COLUMNS)


def _split_lines(path: Path) -> list[tuple[int, str]]:
    rows = []
    for number, line in _lines(path):
        line = line.strip()
        if not re.fullmatch(r"\S+\.jpg", line):
            raise ValueError(f"{path}, line {number}: expected one image file name (<name>.jpg), got {line[:80]!r}")
        rows.append((number, line))
    return rows


def read_split_file(path: str | os.PathLike) -> list[str]:
    """The image file names of a ``Flickr_8k.<split>Images.txt`` file (ValueError naming file and line if bad)."""
    return [image for _, image in _split_lines(Path(path))]


def flickr8k_captions(split: str = "train", data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """The captions of the images of one official split: ``image, caption_id, caption`` (5 rows per image).

    ``split`` is ``train`` (6,000 images), ``dev`` (1,000), ``test`` (1,000) or ``all`` (every captioned image,
    including the 92 in no split). Rows follow the token file's order. Train on ``train``, select on ``dev``.

    Raises FileNotFoundError naming a missing file, and ValueError naming file and line for a malformed line or a
    split image without captions.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown Flickr8k split {split!r}; choose from {SPLITS}")
    token_path = _path(TOKEN_FILE, data_dir)
    captions = read_token_file(token_path)
    if split == "all":
        return captions
    split_path = _path(SPLIT_FILES[split], data_dir)
    lines = _split_lines(split_path)
    known = set(captions["image"])
    missing = [(number, image) for number, image in lines if image not in known]
    if missing:
        number, image = missing[0]
        raise ValueError(
            f"{split_path}, line {number}: image {image} has no caption in {token_path} ({len(missing)} such images)"
        )
    return captions[captions["image"].isin({image for _, image in lines})].reset_index(drop=True)
