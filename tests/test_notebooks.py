"""Every notebook under notebooks/ runs top to bottom on the offload kernel
(the README's quick start shows the tour; this keeps it from rotting).

The workshop notebooks (01-05) are lessons: markdown between code cells, an
exercise followed by its worked solution, and NumPy checks that assert the
results, so that a regression in offload fails the notebook here. They are
stored without outputs. 02 is also run with two PoCL CPU devices, so that its
ExecutionPlacementError branch runs too, and every workshop runs on a device
that pretends to lack float64 and 64-bit atomics, as many GPUs do.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from kernel_testlib import KERNEL_NAME

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
WORKSHOPS = [
    "01-devices.ipynb",
    "02-compute-follows-data.ipynb",
    "03-range-kernels.ipynb",
    "04-nd-range-local-memory.ipynb",
    "05-timing-done-right.ipynb",
]


def run_notebook(path: Path, tmp_path: Path, **start_kernel_kwargs) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    # Raises CellExecutionError, naming the cell and its traceback, on any error.
    NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute(**start_kernel_kwargs)
    return nb


def outputs_of(nb) -> list:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def stdout_of(nb) -> str:
    return "".join(o.text for o in outputs_of(nb) if o.output_type == "stream" and o.name == "stdout")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path, tmp_path):
    nb = run_notebook(path, tmp_path)
    outputs = outputs_of(nb)
    assert outputs, "the notebook ran but produced no output at all"
    assert not [o for o in outputs if o.output_type == "error"]


def test_there_is_a_tour():
    assert any(p.name == "00-tour.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_clean(path):
    """No outputs or execution counts in the repository: diffs stay readable, and
    what readers see is what their own run produces."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "offload", "the notebook should ask for the offload kernel"
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not dirty, f"cells {dirty} were stored with outputs; clear them (Edit > Clear All Outputs)"


@pytest.mark.parametrize("name", WORKSHOPS)
def test_workshop_notebook_is_a_lesson(name):
    path = NOTEBOOK_DIR / name
    assert path.exists(), f"workshop notebook {name} is missing"
    nb = nbformat.read(path, as_version=4)
    kinds = [c.cell_type for c in nb.cells]
    assert kinds[0] == "markdown" and nb.cells[0].source.startswith("# "), "a lesson starts with its title"
    assert kinds.count("markdown") >= 8 and kinds.count("code") >= 8, kinds
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "import offload" in code
    assert len(re.findall(r"\bassert\b|np\.testing\.assert_", code)) >= 3, "results are checked, so regressions fail"
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    exercises = len(re.findall(r"^### Exercise", markdown, re.M))
    assert exercises >= 1, "a workshop has exercises"
    assert len(re.findall(r"\*\*Solution\.\*\*", markdown)) == exercises, "each exercise has a worked solution"


def test_compute_follows_data_with_two_devices(tmp_path):
    """With two devices 02 shows a real ExecutionPlacementError (PoCL gives two CPU
    devices with POCL_DEVICES); with one it explains instead."""
    env = dict(os.environ, POCL_DEVICES="pthread pthread")
    nb = run_notebook(NOTEBOOK_DIR / "02-compute-follows-data.ipynb", tmp_path, env=env)
    out = stdout_of(nb)
    m = re.search(r"^(\d+) device\(s\):", out, re.M)
    assert m, out
    if int(m.group(1)) < 2:
        pytest.skip("POCL_DEVICES gave no second device (is the CPU device PoCL's?)")
    assert "ExecutionPlacementError: " in out, out
    assert re.search(r"ok on Device\(\S+:1\)", out), "axpy_like ran on the second device too"


@pytest.mark.parametrize("name", WORKSHOPS)
def test_workshop_runs_without_fp64_and_atomic64(name, tmp_path):
    """Workshops are for any GPU, also ones without float64 or 64-bit atomics
    (many Intel GPUs): OFFLOAD_WITHOUT makes the CPU device pretend to be one."""
    env = dict(os.environ, OFFLOAD_WITHOUT="fp64,atomic64")
    nb = run_notebook(NOTEBOOK_DIR / name, tmp_path, env=env)
    assert not [o for o in outputs_of(nb) if o.output_type == "error"]
