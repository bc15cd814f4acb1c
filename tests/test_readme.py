"""Every ```python block of README.md runs, in order, in one namespace, as a reader would paste them (issue 16).

Placeholders a reader replaces are replaced here (listed in PLACEHOLDERS); nothing else is changed. The blocks run
in a temporary working directory, so what they build (e.g. ``scifact.index``) goes there. Running them twice in
the same directory checks that a re-run reopens what the first run built instead of failing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def placeholders(data_dir: Path) -> dict[str, str]:
    """What a reader types in place of the README's placeholders."""
    return {'"/path/to/data"': repr(str(data_dir))}


def test_readme_has_python_blocks():
    blocks = readme_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        compile(block, "README.md", "exec")  # each block is valid Python on its own


@pytest.mark.integration
def test_readme_python_blocks_run_in_order_and_rerun(data_dir, tmp_path, monkeypatch):
    pytest.importorskip("spacy", reason="the querygen block needs the [negatives] extra")
    monkeypatch.chdir(tmp_path)
    replace = placeholders(data_dir)
    namespace: dict = {"__name__": "__readme__"}
    for run in range(2):  # the second pass reuses what the first built
        for number, block in enumerate(readme_blocks(), start=1):
            for placeholder, value in replace.items():
                block = block.replace(placeholder, value)
            try:
                exec(compile(block, f"README.md python block {number}", "exec"), namespace)
            except Exception as e:  # name the block, so a failing example is found at once
                raise AssertionError(f"README python block {number} (pass {run + 1}) failed: {e!r}") from e
    assert (tmp_path / "scifact.index" / "tokens").is_dir()
    assert os.listdir(tmp_path)  # the examples wrote into the temporary directory, not the repository
