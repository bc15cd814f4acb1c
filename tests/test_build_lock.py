"""artifacts.build_lock: a build that waits for another's lock says so."""

from __future__ import annotations

import sys


def test_a_build_that_waits_for_the_lock_says_so_and_goes_on_when_it_is_released(tmp_path, monkeypatch):
    import io
    import threading

    from pyterrier_compverify.artifacts import build_lock

    target, holding, release = tmp_path / "cache", threading.Event(), threading.Event()

    class Stderr(io.StringIO):  # lets the holder go once the waiting build has said it waits
        def write(self, text):
            release.set()
            return super().write(text)

    def hold():
        with build_lock(target):
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(30)
    monkeypatch.setattr(sys, "stderr", Stderr())
    with build_lock(target, wait=True) as locked:
        assert locked and release.is_set()  # it said it waited before it held the lock
    holder.join(30)
    assert f"waiting for another process building {target}" in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", Stderr())
    release.clear()
    with build_lock(target, wait=True):  # nothing to wait for: nothing said
        pass
    assert sys.stderr.getvalue() == "" and not release.is_set()
