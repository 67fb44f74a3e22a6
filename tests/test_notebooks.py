"""Every notebook under notebooks/ runs top to bottom on the offload kernel
(the README's quick start shows the tour; this keeps it from rotting)."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from kernel_testlib import KERNEL_NAME

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    # Raises CellExecutionError, naming the cell and its traceback, on any error.
    NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert outputs, "the notebook ran but produced no output at all"
    assert not [o for o in outputs if o.output_type == "error"]


def test_there_is_a_tour():
    assert any(p.name == "00-tour.ipynb" for p in NOTEBOOKS)
