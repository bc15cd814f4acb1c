"""When the file system is not tidy: another run writes the same results meanwhile, a disk fills, a build is
killed, two processes cache the same texts (review 50-f, items 4, 5 and 8)."""

import errno
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from pyterrier_compverify.reporting import refuse_overwrite, write_table


def test_a_pair_is_not_written_over_a_file_another_run_wrote_meanwhile(tmp_path, monkeypatch):
    from pyterrier_compverify.artifacts import write_texts

    md, js = tmp_path / "r.md", tmp_path / "r.json"
    js.write_text("theirs")
    with pytest.raises(FileExistsError, match="r.json: written by another run meanwhile; pass overwrite=True"):
        write_texts({md: "mine", js: "mine"}, replace=False)
    assert js.read_text() == "theirs" and not md.exists()  # neither of the pair, theirs kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary file left
    write_texts({md: "mine", js: "mine"})  # replace (the default) writes over it
    assert js.read_text() == md.read_text() == "mine"
    js.unlink()
    md.unlink()

    def no_hard_links(src, dst):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_hard_links)  # a file system without them: checked, then renamed
    write_texts({md: "mine", js: "mine"}, replace=False)
    assert js.read_text() == "mine"
    with pytest.raises(FileExistsError, match="r.md"):
        write_texts({md: "again"}, replace=False)
    assert md.read_text() == "mine"


def test_a_failed_pair_removes_only_its_own_files_and_files_get_the_umasks_permissions(tmp_path, monkeypatch):
    from pyterrier_compverify.artifacts import frame_text, write_texts

    a, b = tmp_path / "a.md", tmp_path / "b.json"
    real = os.link

    def another_run_replaces_a_then_writes_b(src, dst):
        if Path(dst) == b:
            a.with_name("theirs").write_text("theirs")
            os.replace(a.with_name("theirs"), a)  # another run with --overwrite, between our two links
            raise FileExistsError(errno.EEXIST, "File exists")
        real(src, dst)

    monkeypatch.setattr(os, "link", another_run_replaces_a_then_writes_b)
    with pytest.raises(FileExistsError, match="b.json"):
        write_texts({a: "mine", b: "mine"}, replace=False)
    assert a.read_text() == "theirs"  # not deleted by our clean-up
    monkeypatch.undo()
    old = os.umask(0o022)
    try:
        write_texts({tmp_path / "c.csv": frame_text(pd.DataFrame({"x": ["a\nb"]}), tmp_path / "c.csv")})
    finally:
        os.umask(old)
    assert (tmp_path / "c.csv").stat().st_mode & 0o777 == 0o644  # mkstemp's files are 0o600
    assert b"\r" not in (tmp_path / "c.csv").read_bytes()  # \n on every system


def test_write_table_keeps_the_tables_of_a_run_that_finished_first(tmp_path):
    stem = tmp_path / "evaluate-x"
    refuse_overwrite(stem, False, FileExistsError)  # both runs pass the check at their start
    table = pd.DataFrame({"name": ["a"], "nDCG@10": [0.5]})
    write_table(table, stem, "first", None, 1.0, overwrite=False)
    with pytest.raises(FileExistsError, match="evaluate-x"):
        write_table(table.assign(**{"nDCG@10": 0.9}), stem, "second", None, 1.0, overwrite=False)
    assert json.loads((tmp_path / "evaluate-x.json").read_text())["title"] == "first"
    write_table(table, stem, "third", None, 1.0)  # --overwrite
    assert json.loads((tmp_path / "evaluate-x.json").read_text())["title"] == "third"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_rows_are_written_as_pandas_reads_them(tmp_path, suffix):
    from pyterrier_compverify.artifacts import frame_text, write_texts

    frame = pd.DataFrame({"text": ['a, "quoted" text', "é\nline"], "n": [1, 2]})
    path = tmp_path / f"rows{suffix}"
    write_texts({path: frame_text(frame, path)})
    read = pd.read_csv(path) if suffix == ".csv" else pd.read_json(path, lines=True)
    pd.testing.assert_frame_equal(read, frame)
    with pytest.raises(ValueError, match="not '.parquet'"):
        frame_text(frame, tmp_path / "rows.parquet")


def test_a_negatives_file_another_run_wrote_meanwhile_is_kept(tmp_path):
    from pyterrier_compverify.negatives import write_table as write_edits

    out = tmp_path / "edits.jsonl"
    out.write_text("theirs\n")
    with pytest.raises(FileExistsError, match="edits.jsonl"):
        write_edits(pd.DataFrame({"anchor": ["a"]}), out, replace=False)
    assert out.read_text() == "theirs\n"


def test_querygen_writes_its_two_files_whole_or_not_at_all(tmp_path, monkeypatch):
    from pyterrier_compverify.querygen import command

    passages = tmp_path / "p.jsonl"
    passages.write_text(
        "".join(json.dumps({"docno": f"d{i}", "text": f"a red dog runs on the beach {i}"}) + "\n" for i in range(20))
    )
    out = tmp_path / "q.jsonl"

    asked = []

    def full_disk(texts, replace=True):
        asked.append(replace)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("pyterrier_compverify.artifacts.write_texts", full_disk)
    with pytest.raises(OSError, match="No space left"):
        command.run_querygen(str(passages), str(out), seed=0)
    assert not out.exists() and not (tmp_path / "q.valid.jsonl").exists()  # a rerun is not refused
    assert asked == [False]  # never over files another run wrote meanwhile (no overwrite given)
    monkeypatch.undo()
    command.run_querygen(str(passages), str(out), seed=0)
    assert out.exists() and (tmp_path / "q.valid.jsonl").exists()


def test_an_error_of_the_file_system_is_one_line(monkeypatch, capsys):
    from pyterrier_compverify import demo
    from pyterrier_compverify.cli import main

    def full_disk(**kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(demo, "run_demo", full_disk)
    with pytest.raises(SystemExit) as stop:
        main(["demo"])
    assert stop.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "compverify demo: error: No space left on device (ENOSPC): free space there, or write elsewhere (an output "
        "option, COMPVERIFY_CACHE)"
    ]
    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: (_ for _ in ()).throw(OSError(errno.EIO, "I/O", "/x")))
    with pytest.raises(SystemExit):
        main(["demo"])
    assert capsys.readouterr().err.strip() == "compverify demo: error: I/O (EIO): /x"
    with pytest.raises(OSError):
        main(["demo", "--debug"])


def test_evaluate_prints_its_tables_when_they_cannot_be_written(
    tiny_encoder, tmp_path, monkeypatch, capsys, tiny_collection
):
    from pyterrier_compverify import evaluate, reporting

    asked = []

    def full_disk(*args, **kwargs):
        asked.append(kwargs.get("overwrite"))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(reporting, "write_table", full_disk)
    with pytest.raises(OSError, match="No space left"):
        evaluate.run_evaluation(
            "tiny", model=tiny_encoder.model_name, max_length=16, device="cpu", rerankers=["maxsim"],
            index_dir=tmp_path / "indices", out_dir=tmp_path / "out", verbose=False,
        )  # fmt: skip
    printed = capsys.readouterr().out
    assert "nDCG@10" in printed and ">> MaxSim" in printed
    assert asked == [False]  # the user's overwrite (none) reaches the write


def test_a_state_cache_build_removes_killed_saves_and_opens_one_finished_meanwhile(tmp_path, tiny_encoder, monkeypatch):
    from pyterrier_compverify.training import state_cache
    from pyterrier_compverify.training.state_cache import StateCache

    texts = ["a red cat", "the dog is not on the mat"]
    done = StateCache.build(tiny_encoder, texts, tmp_path / "done", verbose=False)
    (path,) = (tmp_path / "done").iterdir()
    killed = tmp_path / "cache" / f".{path.name}.building-0000dead"
    killed.mkdir(parents=True)
    (killed / "states.npy").write_bytes(b"half")
    StateCache.build(tiny_encoder, texts, tmp_path / "cache", verbose=False)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [path.name]  # the killed save is gone

    import shutil

    real = state_cache._states

    def another_process_finishes_first(encoder, batch, *args):
        target = tmp_path / "race" / path.name
        if not target.exists():  # while this one encodes, the other saves the same cache
            shutil.copytree(path, target)
            (target / "offsets.npy").write_bytes((path / "offsets.npy").read_bytes())
        return real(encoder, batch, *args)

    monkeypatch.setattr(state_cache, "_states", another_process_finishes_first)
    (tmp_path / "race").mkdir()
    got = StateCache.build(tiny_encoder, texts, tmp_path / "race", verbose=False)  # no "Directory not empty"
    assert hasattr(got.packed, "filename")  # the other's cache, opened from disk (a memory map)
    assert (got.offsets == done.offsets).all()
    assert sorted(p.name for p in (tmp_path / "race").iterdir()) == [path.name]


DOCS = [{"docno": f"d{i}", "text": t} for i, t in enumerate(["the cat is on the mat", "a man greeted a woman"] * 3)]
SHUFFLED = [DOCS[i] for i in (1, 0, 3, 2, 5, 4)]  # the same sizes, another order: a mix would pass every size check


def test_a_store_rebuilt_while_it_is_being_opened_is_opened_in_one_version(tmp_path, tiny_encoder, monkeypatch):
    import pyterrier_compverify as cv
    from pyterrier_compverify import store as store_module

    path = tmp_path / "s.tokens"
    cv.TokenStore(path).indexer(tiny_encoder, verbose=False).index(DOCS)
    real, rebuilt = store_module.read_meta, []

    def rebuilt_after_the_meta_is_read(*args, **kwargs):
        meta = real(*args, **kwargs)
        if not rebuilt:  # another process swaps its new build in between this reader's opens
            rebuilt.append(True)
            cv.TokenStore(path).indexer(tiny_encoder, verbose=False, mode="overwrite").index(SHUFFLED)
        return meta

    monkeypatch.setattr(store_module, "read_meta", rebuilt_after_the_meta_is_read)
    opened = cv.TokenStore(path)
    assert opened.docnos()[:2] == ["d1", "d0"]  # the new version, whole
    monkeypatch.undo()
    assert opened.meta == cv.TokenStore(path).meta


def test_recode_copies_nothing_from_a_store_rebuilt_since_it_was_opened(tmp_path, tiny_encoder):
    import pyterrier_compverify as cv
    from pyterrier_compverify.store import CorruptStoreError

    path = tmp_path / "s.tokens"
    opened = cv.TokenStore(path).indexer(tiny_encoder, verbose=False).index(DOCS)
    assert len(opened) == 6  # opened: its states are read from here
    cv.TokenStore(path).indexer(tiny_encoder, verbose=False, mode="overwrite").index(SHUFFLED)
    with pytest.raises(CorruptStoreError, match="docnos.npids changed since .* was opened"):
        opened.recode(tmp_path / "r.tokens", codec="bf16", verbose=False)
    assert not (tmp_path / "r.tokens").exists()


def test_overwriting_a_store_through_a_link_rebuilds_the_folder_it_names(tmp_path, tiny_encoder):
    import pyterrier_compverify as cv

    (tmp_path / "big").mkdir()
    (tmp_path / "work").mkdir()
    cv.TokenStore(tmp_path / "big" / "s.tokens").indexer(tiny_encoder, verbose=False).index(DOCS[:4])
    link = tmp_path / "work" / "s.tokens"
    link.symlink_to(tmp_path / "big" / "s.tokens")
    cv.TokenStore(link).indexer(tiny_encoder, verbose=False, mode="overwrite").index(DOCS)
    assert link.is_symlink() and len(cv.TokenStore(tmp_path / "big" / "s.tokens")) == 6
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["s.tokens"]
    assert sorted(p.name for p in (tmp_path / "big").iterdir()) == ["s.tokens"]
    dangling = tmp_path / "work" / "gone.tokens"
    dangling.symlink_to(tmp_path / "nowhere" / "s.tokens")
    with pytest.raises(FileNotFoundError, match="gone.tokens is a link to .*nowhere/s.tokens, whose folder does not"):
        cv.TokenStore(dangling).indexer(tiny_encoder, verbose=False).index(DOCS)
    loop = tmp_path / "work" / "loop.tokens"
    loop.symlink_to(loop)
    with pytest.raises(FileNotFoundError, match="loop.tokens is a link in a loop of links"):
        cv.TokenStore(loop).indexer(tiny_encoder, verbose=False).index(DOCS)


def test_two_first_imports_placing_the_same_data_link_do_not_crash(tmp_path, monkeypatch):
    from pyterrier_compverify.datasets.local import _place

    src, dest = tmp_path / "data" / "source.zip", tmp_path / "home" / "source.zip"
    src.parent.mkdir()
    src.write_bytes(b"zip")
    real = Path.symlink_to

    def the_other_process_first(self, target, *args):
        real(self, target, *args)  # the other import links it between this one's check and its link
        real(self, target, *args)

    monkeypatch.setattr(Path, "symlink_to", the_other_process_first)
    assert not _place(src, dest)
    assert dest.is_symlink() and dest.read_bytes() == b"zip"


def test_a_damaged_cached_index_is_built_again_and_an_intact_one_reused(tmp_path, tiny_encoder, monkeypatch):
    """A FlexIndex without its vectors was reused and failed with a bare "No such file"; a damaged store said
    "rebuild the store", which evaluate has no option for (review 50-f, item 8)."""
    from pyterrier_compverify import store as store_module
    from pyterrier_compverify.demo import DemoCollection
    from pyterrier_compverify.pipelines import build_indices

    collection = DemoCollection(tmp_path / "docs")
    indices = build_indices(collection, tiny_encoder, tmp_path / "idx", verbose=False)
    flex, tokens = Path(indices.flex.index_path), Path(indices.store.path)
    (flex / "vecs.f4").unlink()
    with pytest.warns(UserWarning, match="damaged index, built again: .*vecs.f4"):
        indices = build_indices(collection, tiny_encoder, tmp_path / "idx", verbose=False)
    assert len(indices.flex.retriever(num_results=3)(tiny_encoder.query_token_encoder()(collection.topics()))) > 0
    states = next(tokens.glob("states.*"))
    states.write_bytes(states.read_bytes()[:-8])
    with pytest.warns(UserWarning, match="damaged index, built again: .*states"):
        build_indices(collection, tiny_encoder, tmp_path / "idx", verbose=False)
    monkeypatch.setattr(store_module.TokenStore, "indexer", lambda *a, **k: pytest.fail("an intact index was rebuilt"))
    assert len(build_indices(collection, tiny_encoder, tmp_path / "idx", verbose=False).store) == len(indices.store)

    def too_many_open_files(self):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(store_module.TokenStore, "__len__", too_many_open_files)
    with pytest.raises(OSError, match="Too many open files"):  # the machine's error, not damage: nothing rebuilt
        build_indices(collection, tiny_encoder, tmp_path / "idx", verbose=False)


def test_without_locks_no_build_removes_another_builds_folder(tmp_path, tiny_encoder, monkeypatch):
    """Where builds cannot be locked (no fcntl), a folder like a killed build's may be another build in progress."""
    import shutil
    import sys

    import pyterrier_compverify as cv
    from pyterrier_compverify.training.state_cache import StateCache

    monkeypatch.setitem(sys.modules, "fcntl", None)  # import fcntl fails, as on Windows
    busy = tmp_path / ".s.tokens.building-0000beef"
    busy.mkdir()
    cv.TokenStore(tmp_path / "s.tokens").indexer(tiny_encoder, verbose=False).index(DOCS)
    StateCache.build(tiny_encoder, ["a red cat"], tmp_path / "cache", verbose=False)
    (cache,) = (tmp_path / "cache").iterdir()
    shutil.rmtree(cache)
    other = tmp_path / "cache" / f".{cache.name}.building-0000beef"
    other.mkdir()
    StateCache.build(tiny_encoder, ["a red cat"], tmp_path / "cache", verbose=False)  # the same cache again
    assert busy.is_dir() and other.is_dir() and (cache / "meta.json").exists()
