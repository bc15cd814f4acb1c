"""The course notebook (examples/ir-course.ipynb) is committed clean and runs end to end on a small subset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "ir-course.ipynb"
SYSTEMS = ["dense", "dense >> MaxSim", "dense >> MapVerifier"]
# what the appended cell prints: the systems of both experiment tables, the near-miss scorers and categories
CHECK = """
import json
print("CHECK " + json.dumps({
    "scifact": scifact_table["name"].tolist(),
    "cranfield": cranfield_table["name"].tolist(),
    "ndcg": [float(x) for x in scifact_table["nDCG@10"]] + [float(x) for x in cranfield_table["nDCG@10"]],
    "scorers": sorted(nearmiss["scorer"].unique()),
    "categories": int(nearmiss["category"].nunique()),
    "columns": sorted(nearmiss.columns),
}))
"""


def test_notebook_is_committed_without_outputs_and_parses():
    nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the dev extra (nbformat)")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code, "the notebook has no code cells"
    for cell in code:
        assert not cell.outputs and cell.execution_count is None, "commit the notebook without outputs"
        compile(cell.source, "<notebook cell>", "exec")


@pytest.mark.integration
def test_notebook_runs_on_a_subset(data_dir, minilm, tmp_path, monkeypatch):
    """10 queries per collection, their judged documents plus 100 others, rerank depth 20, 3 near-miss triplets
    per category: every cell runs, both experiment tables hold the three systems, the near-miss table its
    controls, and the map is drawn."""
    nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the dev extra (nbformat)")
    nbclient = pytest.importorskip("nbclient", reason="the notebook test needs the dev extra (nbclient, ipykernel)")
    pytest.importorskip("ipykernel", reason="the notebook test needs the dev extra (ipykernel)")
    pytest.importorskip("matplotlib", reason="the notebook draws maps: needs the explain or dev extra")
    monkeypatch.setenv("COMPVERIFY_NOTEBOOK_QUERIES", "10")
    monkeypatch.setenv("COMPVERIFY_NOTEBOOK_OTHER_DOCS", "100")
    monkeypatch.setenv("COMPVERIFY_NOTEBOOK_DEPTH", "20")
    monkeypatch.setenv("COMPVERIFY_NOTEBOOK_NEARMISS", "3")
    monkeypatch.setenv("COMPVERIFY_DATA", str(data_dir))
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(CHECK))
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError naming the cell when any cell fails

    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    printed = "".join(o.get("text", "") for o in notebook.cells[-1].outputs if o.output_type == "stream")
    result = json.loads(printed.split("CHECK ", 1)[1])
    assert result["scifact"] == SYSTEMS and result["cranfield"] == SYSTEMS
    assert all(0.0 < x <= 1.0 for x in result["ndcg"])
    assert {"MaxSim", "MapVerifier", "1 - word Jaccard (no model)"} <= set(result["scorers"])
    assert result["categories"] == 9  # seven SugarCrepe and two CondaQA categories
    assert {"headline", "win_rate", "identity_win", "distractor_r1"} <= set(result["columns"])
    images = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, "the near-miss pair's map was not shown"
    assert (tmp_path / "nearmiss-map.png").stat().st_size > 0
    assert (tmp_path / "scifact-10q-100.index").is_dir()  # the notebook wrote into its own working directory
