"""Every notebook under notebooks/ runs top to bottom on the offload kernel
(the README's quick start shows the tour; this keeps it from rotting).

The workshop notebooks (01-10) are lessons (conventions in notebooks/README.md):
an opening cell with objectives, prerequisites and minutes; markdown between code
cells; exercises whose answer key lies between BEGIN/END SOLUTION markers, each
followed by a check cell; and NumPy checks that assert the results, so that a
regression in offload fails the notebook here. They are stored without outputs.
02 is also run with two PoCL CPU devices, so that its ExecutionPlacementError
branch runs too, and every workshop runs on a device that pretends to lack
float64 and 64-bit atomics, as many GPUs do. 10 is also run with three devices
(two PoCL devices beside Intel's), so that its split has more parts than two.
tests/test_workshop.py checks the student copies and the rest of the kit, reusing
the runs of executed_key().

10 starts Dask workers: plain python3 processes that import the standalone offload
module from the directory the kernelspec names (OFFLOAD_MODULE_DIR), which the kernel
puts on the PYTHONPATH its children inherit -- nothing here sets it.
"""
from __future__ import annotations

import os
import re
import tempfile
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
    "06-offload-loops.ipynb",
    "07-capstone-kmeans.ipynb",
    "08-arrays-like-numpy.ipynb",
    "09-linear-algebra.ipynb",
    "10-multi-device.ipynb",
]
NOTEBOOK_TIMEOUT = 600  # seconds per test that runs a whole notebook (cells: 120 s each)


def run_notebook(path: Path, tmp_path: Path, **start_kernel_kwargs) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    # Raises CellExecutionError, naming the cell and its traceback, on any error.
    NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=120,
                   resources={"metadata": {"path": str(tmp_path)}}).execute(**start_kernel_kwargs)
    return nb


_executed: dict = {}


def executed_key(path: Path) -> nbformat.NotebookNode:
    """The notebook at path run once per test session (allow_errors: every cell runs, and
    errors are left in the outputs for the caller to report). test_notebooks.py and
    test_workshop.py share these runs, to keep the suite's time down."""
    path = Path(path)
    if path not in _executed:
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory(prefix="nb-run-") as cwd:
            NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=120, allow_errors=True,
                           resources={"metadata": {"path": cwd}}).execute()
        _executed[path] = nb
    return _executed[path]


def errors_in(nb) -> list[str]:
    """'cell N: Ename: evalue' and the traceback of every error output, for assertion messages."""
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    return [f"cell {i}: {o.ename}: {o.evalue}\n" + ansi.sub("", "\n".join(o.traceback))
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for o in cell.outputs if o.output_type == "error"]


def outputs_of(nb) -> list:
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]


def stdout_of(nb) -> str:
    return "".join(o.text for o in outputs_of(nb) if o.output_type == "stream" and o.name == "stdout")


@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path):
    nb = executed_key(path)
    assert outputs_of(nb), "the notebook ran but produced no output at all"
    errors = errors_in(nb)
    assert not errors, "\n\n".join(errors)


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


def tags(cell) -> list:
    return cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("name", WORKSHOPS)
def test_workshop_notebook_is_a_lesson(name):
    path = NOTEBOOK_DIR / name
    assert path.exists(), f"workshop notebook {name} is missing"
    nb = nbformat.read(path, as_version=4)
    cells = nb.cells
    kinds = [c.cell_type for c in cells]
    number = int(name[:2])
    assert kinds[0] == "markdown" and cells[0].source.startswith(f"# Workshop {number} — "), \
        f"a lesson starts with its title, '# Workshop {number} — Title'"
    opening = cells[0].source
    for label in (r"\*\*Objectives\*\*", r"\*\*Prerequisites\*\*", r"\*\*Time\*\*: \d+ minutes$"):
        assert re.search(rf"^{label}", opening, re.M), f"the opening cell needs {label}"
    assert kinds.count("markdown") >= 8 and kinds.count("code") >= 8, kinds
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    assert "import offload" in code
    assert len(re.findall(r"\bassert\b|np\.testing\.assert_", code)) >= 3, "results are checked, so regressions fail"

    headings = [i for i, c in enumerate(cells)
                if c.cell_type == "markdown" and re.match(r"### Exercise \d+ — ", c.source)]
    assert headings, "a workshop has exercises ('### Exercise N — title')"
    checks = [i for i, c in enumerate(cells) if "checks" in tags(c)]
    assert len(checks) == 1 and checks[0] < headings[0], "one cell tagged 'checks', before the first exercise"
    for i in headings:
        ex, chk = cells[i + 1], cells[i + 2] if i + 2 < len(cells) else None
        assert ex.cell_type == "code" and "exercise" in tags(ex), \
            f"cell {i + 1}: the exercise's code cell, tagged 'exercise'"
        assert re.search(r"^\s*# BEGIN SOLUTION\s*$.*^\s*# END SOLUTION\s*$", ex.source, re.M | re.S), \
            f"cell {i + 1}: the answer key lies between '# BEGIN SOLUTION' and '# END SOLUTION'"
        assert chk is not None and "check" in tags(chk) and re.search(r"\bcheck_\w+\(", chk.source), \
            f"cell {i + 2}: a cell tagged 'check' calls check_...() after each exercise"
    assert len([c for c in cells if "exercise" in tags(c)]) == len(headings), "one exercise cell per exercise"
    for c in cells:
        if c.cell_type == "markdown" and "**Solution.**" in c.source:
            assert "solution" in tags(c), "a '**Solution.**' cell is tagged 'solution' (student copies drop it)"


@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
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


@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
def test_multi_device_with_three_devices(tmp_path):
    """10 with two PoCL devices beside Intel's CPU runtime: every split has a part per device,
    each device prints its live line, placement errors are real, and the Dask cluster has a
    worker on each device."""
    env = dict(os.environ, POCL_DEVICES="pthread pthread")
    nb = run_notebook(NOTEBOOK_DIR / "10-multi-device.ipynb", tmp_path, env=env)
    out = stdout_of(nb)
    m = re.search(r"^the team: (\d+) device\(s\)$", out, re.M)
    assert m, out
    k = int(m.group(1))
    if k < 2:
        pytest.skip("POCL_DEVICES gave no second device (is the CPU device PoCL's?)")
    saxpy = re.findall(r"^  (\S+) +[\d,]+ elements +[\d.]+ ms +[\d.]+ GB/s", out, re.M)
    assert len(saxpy) == len(set(saxpy)) == k, out
    bands = re.findall(r"^  (\S+) +rows +\d+-\d+ ", out, re.M)
    assert len(bands) == 2 * k and len(set(bands)) == k, out
    assert "ExecutionPlacementError: " in out, out
    workers = re.findall(r"^worker (\d+) at \S+: default device (\S+)$", out, re.M)
    assert sorted(int(r) for r, _ in workers) == list(range(k)) and len({d for _, d in workers}) == k, out


@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.parametrize("name", WORKSHOPS)
def test_workshop_runs_without_fp64_and_atomic64(name, tmp_path):
    """Workshops are for any GPU, also ones without float64 or 64-bit atomics
    (many Intel GPUs): OFFLOAD_WITHOUT makes the CPU device pretend to be one."""
    assert (NOTEBOOK_DIR / name).exists(), f"workshop notebook {name} is missing"
    env = dict(os.environ, OFFLOAD_WITHOUT="fp64,atomic64")
    nb = run_notebook(NOTEBOOK_DIR / name, tmp_path, env=env)
    assert not [o for o in outputs_of(nb) if o.output_type == "error"]
