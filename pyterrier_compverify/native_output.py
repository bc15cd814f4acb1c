"""Silencing native libraries (PISA) that write straight to the process's stdout and stderr."""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def quiet_native_output():
    """Silence stdout and stderr at the file-descriptor level (native libraries too) for the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
