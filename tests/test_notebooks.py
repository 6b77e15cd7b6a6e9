"""Every notebook in notebooks/ executes headless without error (jupytext .py -> nbclient).

The kernel is this interpreter (the project's .venv): a kernelspec pointing at sys.executable is
written into the test build folder (JUPYTER_DATA_DIR, set by conftest.py), so no globally installed
"python3" kernel can be picked up by mistake.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from fgrpo_sim.atomic_io import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
KERNEL_NAME = "fgrpo-sim-test"


def _install_kernelspec() -> None:
    spec_dir = Path(os.environ["JUPYTER_DATA_DIR"]) / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "fgrpo-sim (.venv)", "language": "python",
            "env": {"PYTHONWARNINGS": "ignore::DeprecationWarning"}}
    # atomic: pytest-xdist workers may write the same spec at the same moment
    write_text_atomic(spec_dir / "kernel.json", json.dumps(spec))


def test_there_are_five_notebooks():
    assert [p.stem for p in NOTEBOOKS] == ["01_tail_miss_non_monotonicity", "02_mass_redistribution",
                                           "03_focal_population", "04_group_size_dip", "05_table2_depth"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path):
    import jupytext
    from nbclient import NotebookClient

    _install_kernelspec()
    notebook = jupytext.read(path)
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert code_cells, f"{path.name} has no code"
    client = NotebookClient(notebook, timeout=120, kernel_name=KERNEL_NAME,
                            resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    outputs = [o for c in code_cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # every point of the story comes with a figure: at least one rendered image per notebook
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name} rendered no figure"
