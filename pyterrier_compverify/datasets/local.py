"""Point ir_datasets and PyTerrier at a local folder laid out like the project's offline data folder."""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

DATA_ENV = "COMPVERIFY_DATA"

_data_dir: Path | None = None


def data_dir() -> Path | None:
    """The local data folder set by :func:`setup_local_data` or the ``COMPVERIFY_DATA`` variable, if any."""
    if _data_dir is not None:
        return _data_dir
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else None


def _place(src: Path, dest: Path) -> bool:
    """Make ``dest`` a link to ``src`` (a copy where links fail); never overwrite what is there, except a link
    whose target is gone (a data folder moved or deleted since it was linked)."""
    if dest.exists():
        return False
    if dest.is_symlink():  # dangling: copyfile would follow it and write into the old folder
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        dest.symlink_to(src.resolve())
    except FileExistsError:  # another process placed it meanwhile (two first imports at once)
        return False
    except OSError:
        shutil.copyfile(src, dest)
    return True


def setup_local_data(path: str | os.PathLike | None = None, *, verbose: bool = False) -> Path:
    """Make the usual dataset ids load from a local folder instead of the network.

    The folder is laid out like ``<data>/ir_datasets/beir/scifact/source.zip``, ``<data>/ir_datasets/cranfield/...``,
    ``<data>/vaswani/...``, ``<data>/capretrieval/{en,zh}/...`` and ``<data>/nanobeir/Nano<Name>/...`` (hub
    snapshots of NanoBEIR, see :mod:`.nanobeir`). Source files are linked into the (writable)
    ir_datasets home and PyTerrier corpora folder, where the libraries also write their caches; the data folder
    itself may be read-only. Afterwards ``pt.get_dataset('irds:beir/scifact/test')``, ``irds:cranfield``,
    ``vaswani`` (topics, qrels), ``irds:nano-beir/<name>`` and ``irds:compverify/capretrieval/en`` work
    offline.

    Args:
        path: the data folder; defaults to the ``COMPVERIFY_DATA`` environment variable.

    Example::

        import pyterrier_compverify as cv
        cv.setup_local_data("/data/compverify")   # or: export COMPVERIFY_DATA=/data/compverify
        dataset = pt.get_dataset("irds:beir/scifact/test")
    """
    global _data_dir
    from_environment = path is None and _data_dir is None
    path = Path(path).expanduser() if path is not None else data_dir()
    if path is None:
        raise ValueError(f"no data folder given: pass a path or set the {DATA_ENV} environment variable")
    if not path.is_dir():
        raise FileNotFoundError(f"data folder {path}{f' ({DATA_ENV})' if from_environment else ''} does not exist")
    _data_dir = path
    placed = []
    irds_src = path / "ir_datasets"
    if irds_src.is_dir():
        import ir_datasets

        home = ir_datasets.util.home_path()
        for src in irds_src.rglob("*"):
            if src.is_file() and _place(src, home / src.relative_to(irds_src)):
                placed.append(src)
    vaswani_src = path / "vaswani"
    if vaswani_src.is_dir():
        import pyterrier as pt

        corpus_home = Path(pt.get_dataset("vaswani").corpus_home)
        for src in vaswani_src.rglob("*"):
            if src.is_file() and _place(src, corpus_home / src.relative_to(vaswani_src)):
                placed.append(src)
    if (path / "nanobeir").is_dir():  # hub snapshots (NanoSciFact/corpus/..., see datasets.nanobeir)
        from .nanobeir import link_local_copies

        link_local_copies(path / "nanobeir")
    if verbose:
        print(f"compverify: using local data in {path} ({len(placed)} source files newly linked)")
    return path


def source_file(relative: str, url: str) -> Path:
    """A source file of a dataset this package registers: ``<data folder>/<relative>`` when the local data folder
    has it, else a copy in the ir_datasets home, downloaded once from ``url`` (atomically)."""
    local = data_dir()
    if local is not None and (local / relative).exists():
        return local / relative
    import ir_datasets

    cached = ir_datasets.util.home_path() / "compverify" / relative
    if not cached.exists():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(cached.name + ".tmp")
        try:
            urllib.request.urlretrieve(url, tmp)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            if network_error(e) is None:  # the disk, or a refusal: not a missing network
                raise
            raise offline_error(url, e, f" (DIR/{relative})") from e
        os.replace(tmp, cached)
    return cached


def network_error(error: BaseException) -> BaseException | None:
    """The error of a download that found no network, or None: a connection error or time-out (requests', urllib's
    URLError but not its HTTPError, the built-in ones), or ir_datasets' "All download sources failed" where every
    source but a local file failed so (then the first of those errors). A checksum mismatch, an HTTP error or a full
    disk is not a missing network."""
    if isinstance(error, RuntimeError) and error.args and error.args[0] == "All download sources failed":
        sources = error.args[1] if len(error.args) > 1 and isinstance(error.args[1], list) else []
        pairs = [p for p in sources if isinstance(p, tuple) and len(p) == 2]
        found = [network_error(e) for source, e in pairs if type(source).__name__ != "LocalDownload"]
        return found[0] if found and all(found) else None
    if isinstance(error, urllib.error.HTTPError):
        return None
    import requests

    network = (urllib.error.URLError, ConnectionError, TimeoutError)
    return (
        error
        if isinstance(error, (*network, requests.exceptions.ConnectionError, requests.exceptions.Timeout))
        else None
    )


def offline_error(what: str, error: BaseException, where: str = "") -> FileNotFoundError:
    """The one-line error for a download of ``what`` that found no network: it names the local-copy options
    (``where``: the layout the copy needs)."""
    cause = type(network_error(error) or error).__name__
    return FileNotFoundError(
        f"cannot download {what} ({cause}); without a network, point compverify at a local copy with --data-dir DIR, "
        f"cv.setup_local_data(DIR) or the {DATA_ENV} variable{where}"
    )


def setup_from_environment() -> None:
    """Called on import: when ``COMPVERIFY_DATA`` is set, set up that folder; one that does not exist is a
    warning, not an error (the import must work, and ``--data-dir`` / ``setup_local_data`` can still give one)."""
    if os.environ.get(DATA_ENV):
        try:
            setup_local_data()
        except FileNotFoundError as error:
            import warnings

            warnings.warn(f"{error}; datasets load from the network or the caches", stacklevel=2)
