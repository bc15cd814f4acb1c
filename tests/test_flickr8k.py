"""Flickr8k loader: a tiny fixture in the real file layout, its errors, and (integration) the real split sizes."""

import os
from pathlib import Path

import pytest

from pyterrier_compverify.datasets import local
from pyterrier_compverify.datasets.flickr8k import flickr8k_captions

TOKENS = [
    "1000_a.jpg#0\tA dog runs .",
    "1000_a.jpg#1\tA brown dog runs on grass .",
    "2000_b.jpg#0\tTwo children play .",
    "2000_b.jpg.1#1\tkids playing",  # the real file files one caption under "<name>.jpg.1"
    "3000_c.jpg#0\tA man in a red shirt .",
]


def write_fixture(root, tokens=TOKENS, train=("1000_a.jpg", "3000_c.jpg"), dev=("2000_b.jpg",), test=()):
    folder = root / "flickr8k"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Flickr8k.token.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    for split, images in (("train", train), ("dev", dev), ("test", test)):
        (folder / f"Flickr_8k.{split}Images.txt").write_text("".join(f"{i}\n" for i in images), encoding="utf-8")
    return root


def test_splits_from_data_dir(tmp_path):
    root = write_fixture(tmp_path)
    train = flickr8k_captions("train", data_dir=root)
    assert list(train.columns) == ["image", "caption_id", "caption"]
    assert train["caption_id"].tolist() == ["1000_a.jpg#0", "1000_a.jpg#1", "3000_c.jpg#0"]
    dev = flickr8k_captions("dev", data_dir=root)
    assert set(dev["image"]) == {"2000_b.jpg"} and dev["caption_id"].tolist() == ["2000_b.jpg#0", "2000_b.jpg#1"]
    assert flickr8k_captions("test", data_dir=root).empty
    assert len(flickr8k_captions("all", data_dir=root)) == 5


def test_data_folder_from_environment(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "_data_dir", None)
    monkeypatch.setenv(local.DATA_ENV, str(write_fixture(tmp_path)))
    assert len(flickr8k_captions("dev")) == 2


def test_missing_files_say_how_to_set_the_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(local, "_data_dir", None)
    monkeypatch.delenv(local.DATA_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=r"Flickr8k\.token\.txt.*COMPVERIFY_DATA"):
        flickr8k_captions("train")
    with pytest.raises(FileNotFoundError, match=r"flickr8k/Flickr8k\.token\.txt not found.*data_dir"):
        flickr8k_captions("train", data_dir=tmp_path)
    root = write_fixture(tmp_path)
    (root / "flickr8k" / "Flickr_8k.devImages.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"Flickr_8k\.devImages\.txt"):
        flickr8k_captions("dev", data_dir=root)
    with pytest.raises(ValueError, match="unknown Flickr8k split"):
        flickr8k_captions("validation", data_dir=root)


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("1000_a.jpg#2 no tab here", "no tab"),
        ("1000_a.jpg\tA caption without a number", "not <image>.jpg#<n>"),
        ("1000_a.jpg#3\t   ", "empty caption"),
        ("1000_a.jpg#0\tthe same id again", "repeats line 1"),
    ],
)
def test_malformed_token_line_names_file_and_line(tmp_path, bad_line, reason):
    root = write_fixture(tmp_path, tokens=[*TOKENS[:3], bad_line, *TOKENS[3:]])
    with pytest.raises(ValueError, match=rf"Flickr8k\.token\.txt, line 4: .*{reason}"):
        flickr8k_captions("train", data_dir=root)


def test_bad_split_files(tmp_path):
    root = write_fixture(tmp_path, train=("1000_a.jpg", "9999_z.jpg"))
    with pytest.raises(ValueError, match=r"trainImages\.txt, line 2: image 9999_z\.jpg has no caption"):
        flickr8k_captions("train", data_dir=root)
    root = write_fixture(tmp_path / "other", dev=("2000_b.jpg extra words",))
    with pytest.raises(ValueError, match=r"devImages\.txt, line 1: expected one image file name"):
        flickr8k_captions("dev", data_dir=root)


@pytest.mark.integration
def test_real_flickr8k_splits():
    data_dir = Path(os.environ.get(local.DATA_ENV, "/nonexistent"))
    if not (data_dir / "flickr8k" / "Flickr8k.token.txt").is_file():
        pytest.skip("set COMPVERIFY_DATA to a data folder with flickr8k/")
    sizes = {split: flickr8k_captions(split, data_dir=data_dir) for split in ("train", "dev", "test")}
    assert {s: (len(d), d["image"].nunique()) for s, d in sizes.items()} == {
        "train": (30000, 6000),
        "dev": (5000, 1000),
        "test": (5000, 1000),
    }
    assert not set(sizes["train"]["image"]) & set(sizes["dev"]["image"])
