"""What the artifact folders (TokenStore, Verifier) share: one error for damaged files, reading pt_meta.json,
sha256 sums of payload files, and building a folder beside its target then swapping it into place."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from .spec import EncoderSpec

META_FILE = "pt_meta.json"
BUILDING = ".building-"  # infix of the temporary folders of a build: .NAME.building-XXXXXXXX


class CorruptArtifactError(ValueError):
    """A file of an artifact folder (TokenStore or Verifier) is damaged, missing or foreign; the message names
    the file and the cause."""


class BuildBusyError(FileExistsError):
    """Another process (or indexer) is building the same path right now."""


def read_meta(folder: Path, artifact_type: str, error: type[CorruptArtifactError], fix: str) -> dict:
    """``folder/pt_meta.json``, checked: a JSON object of ``artifact_type`` with a valid ``encoder`` entry.
    Damage raises ``error`` naming the file, the cause and ``fix``; a missing file raises FileNotFoundError."""
    path = Path(folder) / META_FILE
    try:
        meta = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise error(f"{path} is not valid JSON ({e}): {fix}") from e
    if not isinstance(meta, dict):
        raise error(f"{path} holds a JSON {type(meta).__name__}, not an object: {fix}")
    if meta.get("type") != artifact_type:
        raise error(f"{folder} holds a {meta.get('type')!r} artifact, not a {artifact_type}")
    try:
        EncoderSpec.from_dict(meta["encoder"])
    except (KeyError, TypeError, ValueError) as e:
        raise error(f"{path} has no valid 'encoder' entry ({type(e).__name__}: {e}): {fix}") from e
    return meta


def check_counts(meta: dict, names: tuple[str, ...], path: Path, error: type[CorruptArtifactError], fix: str):
    """The non-negative integers ``meta[name]`` for each name (``a.b`` reads ``meta[a][b]``); others raise."""
    values = []
    for name in names:
        value = meta
        for key in name.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise error(f"{path / META_FILE}: {name!r} is {value!r}, not a count: {fix}")
        values.append(value)
    return values


def docno_text(value) -> str:
    """A docno as a string; None / NaN (a missing value, which would be stored as 'None' / 'nan') is refused."""
    if not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value):
        raise ValueError(f"a document has docno {value!r}: every document needs a docno")
    return str(value)


def corpus_length(docs) -> int | None:
    """How many documents ``docs`` holds, for a progress bar's total: ``len(docs)`` where it has one (a list, a
    DataFrame, PyTerrier's corpus iterator of a dataset that knows its size), else None (a generator, or a corpus
    iterator whose size is not known yet).

    >>> corpus_length([{}, {}]), corpus_length(d for d in [])
    (2, None)
    """
    try:
        return int(len(docs))
    except TypeError:
        return None


class SizedIterator:
    """An iterator that also answers ``len()``: how many items it yields in all (a progress bar's total).

    >>> docs = SizedIterator(({"docno": str(i)} for i in range(3)), 3)
    >>> len(docs), next(docs), len(list(docs))
    (3, {'docno': '0'}, 2)
    """

    def __init__(self, items, length: int):
        self._items, self._length = iter(items), int(length)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._items)

    def __len__(self) -> int:
        return self._length


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify_sums(folder: Path, sums: dict | None, error: type[CorruptArtifactError], fix: str) -> None:
    """Re-hash the files named in ``sums`` (name -> sha256, as recorded at build time); a changed one raises."""
    if not sums:
        raise error(f"{Path(folder) / META_FILE} records no sha256 sums (built by an older version): {fix}")
    for name, expected in sums.items():
        if not (Path(folder) / name).is_file() or file_sha256(Path(folder) / name) != expected:
            raise error(f"{Path(folder) / name} does not match the sha256 recorded at build time: {fix}")


def write_json(path: Path, value) -> None:
    """Write ``value`` as JSON to ``path`` in one step (:func:`write_texts`)."""
    write_texts({path: json.dumps(value, indent=2)})


def write_texts(texts: dict, replace: bool = True) -> None:
    """Write each ``{path: text}`` in one step: every text to a hidden file of its own beside its path first, then
    each renamed over its path, so a reader never finds half a file and a write that fails (a full disk) leaves
    the old files or none, not an empty one, nor one file of a pair. Files get the umask's permissions, and the
    text as given (no line-end translation). ``replace=False``: a path that exists by then (another run wrote it
    meanwhile) is left as it is and FileExistsError names it; none of ``texts`` is written (each is linked into
    place, which fails on an existing path; where the file system has no hard links, checked just before)."""
    done, placed = {}, []
    mode = 0o666 & ~_umask()
    try:
        for path, text in texts.items():
            path = Path(path)
            handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            done[path] = Path(tmp)
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
                file.write(text)
            os.chmod(tmp, mode)  # mkstemp's files are private
        for path, tmp in done.items():
            if replace:
                os.replace(tmp, path)
                continue
            try:
                os.link(tmp, path)  # atomic, and never over an existing file
                taken = False
            except FileExistsError:
                taken = True
            except OSError:  # no hard links here: checked, then renamed
                taken = path.exists()
                if not taken:
                    os.replace(tmp, path)
            if taken:
                raise FileExistsError(f"{path}: written by another run meanwhile; pass overwrite=True (--overwrite) "
                                      "or choose another output")  # fmt: skip
            placed.append((path, tmp))
    except BaseException:
        for path, tmp in placed:  # a pair is written whole or not at all: ours only, not another run's since
            with contextlib.suppress(OSError):
                if not tmp.exists() or os.path.samefile(path, tmp):
                    path.unlink()
        raise
    finally:
        for tmp in done.values():
            tmp.unlink(missing_ok=True)


def _umask() -> int:
    """The process's umask (read by setting it, then setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def frame_text(frame, path: Path) -> str:
    r"""A DataFrame's rows as the text of a ``.csv`` or ``.jsonl`` file ``path`` (one JSON object per line), for
    :func:`write_texts`.

    >>> import pandas as pd
    >>> frame_text(pd.DataFrame({"a": [1], "b": ["é"]}), Path("x.jsonl"))
    '{"a":1,"b":"é"}\n'
    """
    suffix = Path(path).suffix
    if suffix == ".csv":
        return frame.to_csv(index=False, lineterminator="\n")  # the same file on every system
    if suffix == ".jsonl":
        text = frame.to_json(orient="records", lines=True, force_ascii=False)
        return text if not text or text.endswith("\n") else text + "\n"
    raise ValueError(f"rows are written to .csv or .jsonl, not {suffix!r} ({path})")


def remove_path(path: Path) -> None:
    """Delete a file or a folder, if it is there."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(path) if Path(path).is_dir() else Path(path).unlink()


def building_name(target: Path) -> Path:
    """A fresh temporary name beside ``target`` (same file system, so it can be renamed into place)."""
    return target.with_name(f".{target.name}{BUILDING}{secrets.token_hex(4)}")


def remove_leftovers(target: Path) -> None:
    """Delete the temporary folders of earlier builds of ``target`` that were killed (call under the lock)."""
    for left in glob.glob(str(target.with_name(f".{glob.escape(target.name)}{BUILDING}*"))):
        shutil.rmtree(left, ignore_errors=True)


def cache_dir() -> Path:
    """The package's cache folder (indices, stores, WordNet): ``$COMPVERIFY_CACHE`` with ``~`` expanded (empty:
    unset), else ``~/.cache/pyterrier_compverify``."""
    chosen = os.environ.get("COMPVERIFY_CACHE", "").strip()
    return Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "pyterrier_compverify"


@contextlib.contextmanager
def build_lock(target: Path, wait: bool = False) -> Iterator[bool]:
    """Hold ``.NAME.lock`` beside ``target`` during a build; a second build of the same path fails at once with
    :class:`BuildBusyError` (``wait``: it says so on stderr and waits for the first to end). An flock: the system
    releases it when the process dies (no stale locks); the file is removed when the build ends. Yields whether the
    build is locked: not where the system has no flock (not POSIX), where another build's temporary folders are not
    leftovers."""
    try:
        import fcntl
    except ImportError:  # not POSIX: builds are not locked
        yield False
        return
    target = Path(target).resolve()  # "." has no name to put beside
    lock = target.with_name(f".{target.name}.lock")
    while True:
        handle = open(lock, "a")  # noqa: SIM115 (closed below)
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise
                print(f"waiting for another process building {target} (it holds {lock})", file=sys.stderr)
                fcntl.flock(handle, fcntl.LOCK_EX)
        except BaseException as e:  # busy, or interrupted while waiting
            handle.close()
            if not isinstance(e, BlockingIOError):
                raise
            raise BuildBusyError(
                f"another process is building {target} (it holds {lock}): wait for it to finish, or build elsewhere"
            ) from e
        with contextlib.suppress(FileNotFoundError):
            if os.stat(lock).st_ino == os.fstat(handle.fileno()).st_ino:
                break
        handle.close()  # the lock file was removed by the build that held it: lock the new one
    try:
        yield True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)  # still holding the lock, so no one else holds this file
        handle.close()


def swap_into_place(built: Path, target: Path) -> None:
    """Move the folder ``built`` to ``target``. An existing ``target`` is exchanged with it in one step (Linux
    ``renameat2(RENAME_EXCHANGE)``), so readers never find the path empty, and then deleted; where that is not
    available, the old folder is moved aside just before (a moment without it)."""
    if not target.exists():
        os.replace(built, target)
        return
    if not _exchange(built, target):
        aside = building_name(target)
        os.replace(target, aside)
        os.replace(built, target)
        built = aside
    shutil.rmtree(built, ignore_errors=True)  # now the old folder


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically; False where the system or file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(b))
