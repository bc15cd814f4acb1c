"""Writing experiment tables with their provenance (command, encoder, date, time, versions)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except (ImportError, AttributeError):
        return "?"


def write_table(
    table: pd.DataFrame, stem: Path, title: str, encoder, elapsed: float, markdown: str | None = None
) -> None:
    """``stem.md`` and ``stem.json``, each with the command that made them."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]])
    info = {
        "title": title,
        "command": command,
        "encoder": encoder.describe() if encoder is not None else None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(elapsed, 1),
        "cpu_cores": os.cpu_count(),
        "versions": {m: _version(m) for m in ("pyterrier", "pyterrier_dr", "pyterrier_pisa", "torch", "transformers")},
    }
    records = json.loads(table.to_json(orient="records"))
    stem.with_suffix(".json").write_text(json.dumps({**info, "results": records}, indent=2) + "\n")
    lines = [
        f"# {title}",
        "",
        f"Command: `{command}`  ",
        f"Encoder: {info['encoder']}  ",
        f"Date: {info['date']}, {info['seconds']} s on {info['cpu_cores']} CPU cores",
        "",
        markdown if markdown is not None else table.to_markdown(index=False),
        "",
    ]
    stem.with_suffix(".md").write_text("\n".join(lines))
