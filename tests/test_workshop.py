"""The workshop kit (notebooks/README.md): scripts/workshop, the student copies and the syllabus.

The notebooks under notebooks/ are the answer key. scripts/workshop writes student copies
(solutions between '# BEGIN SOLUTION' and '# END SOLUTION' replaced by a placeholder, cells
tagged 'solution' dropped), executed previews and slides, and checks the conventions. Here:
the conventions hold; student copies hold no solution and their every check cell fails with
'Not yet: ... Hint: ...' while the kernel lives on; the answer key passes every check ('✓ ');
the committed previews match the key; a notebook converts to slides; the syllabus's minutes
match the notebooks. The answer key's runs are shared with test_notebooks.py
(executed_key), and the notebooks talk to the kernel through nbclient, as Jupyter does.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
from importlib.machinery import SourceFileLoader
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from kernel_testlib import KERNEL_NAME
from test_notebooks import NOTEBOOK_DIR, NOTEBOOK_TIMEOUT, errors_in, executed_key, tags

ROOT = NOTEBOOK_DIR.parent
SCRIPT = ROOT / "scripts" / "workshop"
KEYS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]-*.ipynb"))
ALIVE = "kernel still alive after the checks"


def workshop(*args, notebooks: Path | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    extra = ["--notebooks", str(notebooks)] if notebooks else []
    return subprocess.run([sys.executable, str(SCRIPT), *extra, *args], capture_output=True,
                          text=True, timeout=timeout)


def with_checks(paths) -> list[Path]:
    return [p for p in paths if any("check" in tags(c) for c in nbformat.read(p, as_version=4).cells)]


def solution_lines(source: str) -> tuple[set, set]:
    """(lines inside BEGIN..END blocks, lines outside them) of a cell, stripped, non-blank."""
    inside, outside, depth = set(), set(), 0
    for line in source.splitlines():
        s = line.strip()
        if s == "# BEGIN SOLUTION":
            depth += 1
        elif s == "# END SOLUTION":
            depth -= 1
        elif s:
            (inside if depth else outside).add(s)
    return inside, outside


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    r = workshop("student", "--out", str(out))
    assert r.returncode == 0, f"scripts/workshop student failed:\n{r.stdout}{r.stderr}"
    return out


# ---------------------------------------------------------------- (a) conventions

def test_workshop_check_passes():
    r = workshop("check")
    assert r.returncode == 0, f"scripts/workshop check found problems:\n{r.stdout}{r.stderr}"


# ---------------------------------------------------------------- (b) student copies hold no solution

@pytest.mark.parametrize("key", KEYS, ids=[p.name for p in KEYS])
def test_student_copy_has_no_solution(key, student_dir):
    path = student_dir / key.name
    assert path.exists(), f"no student copy of {key.name}"
    student = nbformat.read(path, as_version=4)
    nbformat.validate(student)
    assert student.metadata.get("kernelspec", {}).get("name") == "offload"
    answer = nbformat.read(key, as_version=4)
    hidden = set()
    for cell in answer.cells:
        hidden |= solution_lines(cell.source)[0]
    key_cells = {c.id: c for c in answer.cells}
    for i, cell in enumerate(student.cells):
        assert "# BEGIN SOLUTION" not in cell.source and "# END SOLUTION" not in cell.source, f"cell {i}"
        assert "solution" not in tags(cell), f"cell {i} is tagged 'solution'"
        assert not (cell.cell_type == "markdown" and "**Solution.**" in cell.source), f"cell {i} is a solution"
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"cell {i} has outputs"
        # A line of a solution block may appear only where the key has it outside the blocks.
        allowed = solution_lines(key_cells[cell.id].source)[1] if cell.id in key_cells else set()
        leaked = {s.strip() for s in cell.source.splitlines()} & hidden - allowed
        assert not leaked, f"cell {i} shows solution lines: {sorted(leaked)}"
        if "exercise" in tags(cell):
            assert "pass  # your code here" in cell.source, f"cell {i}: no placeholder"
    assert len(student.cells) == len([c for c in answer.cells if "solution" not in tags(c)])


def test_student_copies_include_the_syllabus(student_dir):
    assert (student_dir / "README.md").read_text() == (NOTEBOOK_DIR / "README.md").read_text()


# ---------------------------------------------------------------- (c) every check says "Not yet" to the stubs

@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.parametrize("key", with_checks(KEYS), ids=[p.name for p in with_checks(KEYS)])
def test_student_copy_checks_fail_with_hints(key, student_dir):
    nb = nbformat.read(student_dir / key.name, as_version=4)
    nb.cells.append(new_code_cell(f"print({ALIVE!r})"))
    with tempfile.TemporaryDirectory(prefix="student-run-") as cwd:
        NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=120, allow_errors=True,
                       resources={"metadata": {"path": cwd}}).execute()
    checks = [(i, c) for i, c in enumerate(nb.cells) if "check" in tags(c)]
    assert checks
    for i, cell in checks:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"cell {i} ({cell.source.strip()!r}) passed with the exercise left empty"
        e = errors[0]
        assert e.ename == "AssertionError" and "Not yet:" in e.evalue and "Hint:" in e.evalue, \
            f"cell {i} ({cell.source.strip()!r}) should fail with AssertionError('Not yet: ... Hint: ...'), " \
            f"not {e.ename}: {e.evalue}"
    last = nb.cells[-1].outputs
    assert any(o.output_type == "stream" and ALIVE in o.text for o in last), \
        f"the kernel did not run the cell after the checks: {last}"


# ---------------------------------------------------------------- (d) the answer key passes its checks

@pytest.mark.timeout(NOTEBOOK_TIMEOUT)
@pytest.mark.parametrize("key", with_checks(KEYS), ids=[p.name for p in with_checks(KEYS)])
def test_answer_key_passes_its_checks(key):
    nb = executed_key(key)
    errors = errors_in(nb)
    assert not errors, "\n\n".join(errors)
    for i, cell in enumerate(nb.cells):
        if "check" in tags(cell):
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            assert re.search(r"^✓ ", text, re.M), f"cell {i} ({cell.source.strip()!r}) printed no '✓ ' line: {text!r}"


# ---------------------------------------------------------------- (e) previews are not stale

EXECUTED = sorted((NOTEBOOK_DIR / "executed").glob("*.ipynb"))


@pytest.mark.skipif(not EXECUTED, reason="no notebooks/executed/ (scripts/workshop executed writes it)")
@pytest.mark.parametrize("path", EXECUTED, ids=[p.name for p in EXECUTED])
def test_executed_preview_matches_the_key(path):
    key = NOTEBOOK_DIR / path.name
    assert key.exists(), f"notebooks/executed/{path.name} has no answer key; delete it"
    preview, answer = (nbformat.read(p, as_version=4) for p in (path, key))
    assert [(c.cell_type, c.source) for c in preview.cells] == [(c.cell_type, c.source) for c in answer.cells], \
        f"notebooks/executed/{path.name} is stale: run scripts/workshop executed"
    assert any(c.get("outputs") for c in preview.cells), f"notebooks/executed/{path.name} has no outputs"
    errors = errors_in(preview)
    assert not errors, f"notebooks/executed/{path.name} shows errors:\n" + "\n".join(errors)


def test_every_key_has_a_preview_if_any():
    if EXECUTED:
        missing = sorted({p.name for p in KEYS} - {p.name for p in EXECUTED})
        assert not missing, f"no preview for {missing}: run scripts/workshop executed"


# ---------------------------------------------------------------- (f) slides

def test_slides_without_execution(tmp_path):
    """A deck from the stored notebook: reveal.js, the title, and the checks cell skipped."""
    has_checks = [p for p in KEYS if any("checks" in tags(c) for c in nbformat.read(p, as_version=4).cells)]
    name = (has_checks or KEYS)[0]
    r = workshop("slides", "--no-execute", "--out", str(tmp_path), name.name)
    assert r.returncode == 0, r.stdout + r.stderr
    html = (tmp_path / f"{name.stem}.slides.html").read_text()
    assert "reveal" in html
    title = nbformat.read(name, as_version=4).cells[0].source.splitlines()[0].lstrip("# ").strip()
    assert title.split(" — ")[0].replace("&", "&amp;") in html
    assert "Checks for the exercises" not in html, "the checks cell (slide_type 'skip') is on a slide"


# ---------------------------------------------------------------- (g) syllabus

def minutes_of(path: Path) -> int | None:
    m = re.search(r"^\*\*Time\*\*: (\d+) minutes\s*$", nbformat.read(path, as_version=4).cells[0].source, re.M)
    return int(m.group(1)) if m else None


def readme_sections() -> dict[str, str]:
    text = (NOTEBOOK_DIR / "README.md").read_text()
    return {m.group(1).strip(): m.group(2) for m in re.finditer(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", text, re.M | re.S)}


def rows(section: str) -> list[tuple[str, int]]:
    """(row, minutes) of the table rows whose last column is a number."""
    return [(m.group(1), int(m.group(2))) for m in re.finditer(r"^(\|.*)\|\s*(\d+)\s*\|\s*$", section, re.M)]


@pytest.mark.parametrize("key", KEYS, ids=[p.name for p in KEYS])
def test_syllabus_lists_the_notebook_with_its_minutes(key):
    minutes = minutes_of(key)
    assert minutes is not None, f"{key.name}: no '**Time**: N minutes' line in its opening cell"
    table = [m for row, m in rows(readme_sections()["The notebooks"]) if f"[{key.name}]" in row]
    assert table == [minutes], f"notebooks/README.md lists {key.name} with {table} minutes, the notebook says {minutes}"


@pytest.mark.parametrize("plan,low,high", [("Half-day plan", 180, 240), ("Full-day plan", 360, 480)])
def test_syllabus_plans_add_up(plan, low, high):
    sections = readme_sections()
    section = next((body for title, body in sections.items() if title.startswith(plan)), None)
    assert section is not None, f"notebooks/README.md has no '## {plan}'"
    total = re.search(r"\*\*Total: (\d+) minutes\*\*", section)
    assert total, f"{plan}: the total is not stated ('**Total: N minutes**')"
    table = rows(section)
    assert sum(m for _, m in table) == int(total.group(1)), f"{plan}: the rows do not add up to the total"
    assert low <= int(total.group(1)) <= high
    for row, m in table:
        for name in re.findall(r"\[(\d\d-[\w-]+\.ipynb)\]", row)[:1]:
            assert (NOTEBOOK_DIR / name).exists(), f"{plan} names {name}, which does not exist"
            assert minutes_of(NOTEBOOK_DIR / name) == m, f"{plan}: {name} has {m} minutes, the notebook says otherwise"


def test_syllabus_names_no_missing_notebook():
    named = set(re.findall(r"\b(\d\d-[\w-]+\.ipynb)\b", (NOTEBOOK_DIR / "README.md").read_text()))
    missing = named - {p.name for p in KEYS}
    assert not missing, f"notebooks/README.md names notebooks that do not exist: {sorted(missing)}"


# ---------------------------------------------------------------- the script itself, on small notebooks

def lesson(*cells) -> nbformat.NotebookNode:
    """A one-exercise workshop that follows the conventions, with cells replaced as given."""
    def slide(c, kind="-", t=()):
        c.metadata["slideshow"] = {"slide_type": kind}
        if t:
            c.metadata["tags"] = list(t)
        return c
    base = [
        slide(new_markdown_cell("# Workshop 1 — Demo\n\n**Objectives**\n\n- one\n- two\n- three\n\n"
                                "**Prerequisites**\n\n- Python\n\n**Time**: 10 minutes"), "slide"),
        slide(new_code_cell("import numpy as np")),
        slide(new_code_cell("# Checks for the exercises: run this cell, then call check_...(your_function) "
                            "after each exercise.\ndef check_f(f):\n    assert f(2) == 4, 'Not yet: Hint: square'\n"
                            "    print('✓ f')"), "skip", ["checks"]),
        slide(new_markdown_cell("### Exercise 1 — square\n\nWrite f."), "subslide"),
        slide(new_code_cell("def f(x):\n    # BEGIN SOLUTION\n    return x * x\n    # END SOLUTION\n"), t=["exercise"]),
        slide(new_code_cell("check_f(f)"), t=["check"]),
        slide(new_markdown_cell("**Solution.** x * x."), t=["solution"]),
    ]
    for i, c in cells:
        if c is None:
            del base[i]
        else:
            base[i] = slide(c, "-", tags(c)) if "slideshow" not in c.metadata else c
    nb = new_notebook(cells=base, metadata={"kernelspec": {"name": "offload", "display_name": "Python 3 (offload)",
                                                            "language": "python"}})
    return nb


def write_lesson(directory: Path, nb) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, directory / "01-demo.ipynb")
    (directory / "README.md").write_text(
        "## The notebooks\n\n| [01-demo.ipynb](01-demo.ipynb) | demo | 10 |\n\n"
        "## Half-day plan\n\n| 0:00 | [01-demo.ipynb](01-demo.ipynb) | 10 |\n\n**Total: 10 minutes**\n\n"
        "## Full-day plan\n\n| 0:00 | [01-demo.ipynb](01-demo.ipynb) | 10 |\n| 0:10 | Break | 5 |\n\n"
        "**Total: 15 minutes**\n")


def test_script_on_a_good_lesson(tmp_path):
    write_lesson(tmp_path / "nb", lesson())
    r = workshop("check", notebooks=tmp_path / "nb")
    assert r.returncode == 0, r.stdout + r.stderr
    r = workshop("student", "--out", str(tmp_path / "out"), notebooks=tmp_path / "nb")
    assert r.returncode == 0, r.stdout + r.stderr
    nb = nbformat.read(tmp_path / "out" / "01-demo.ipynb", as_version=4)
    assert [c.source for c in nb.cells if "exercise" in tags(c)] == ["def f(x):\n    pass  # your code here\n"]
    assert not [c for c in nb.cells if "solution" in tags(c)]


def exercise(source, tag="exercise"):
    c = new_code_cell(source)
    c.metadata["tags"] = [tag]
    return c


@pytest.mark.parametrize("change,message", [
    ((4, exercise("def f(x):\n    return x * x\n")), "without '# BEGIN SOLUTION'"),
    ((4, exercise("def f(x):\n    # BEGIN SOLUTION\n    return x * x\n")), "without a '# END SOLUTION'"),
    ((4, exercise("def f(x):\n    # BEGIN SOLUTION\n    return x * x\n# END SOLUTION\n")), "indentation"),
    ((5, None), "followed by a code cell tagged 'check'"),
    ((6, new_markdown_cell("**Solution.** x * x.")), "must be tagged 'solution'"),
])
def test_student_copy_refuses_a_broken_lesson(tmp_path, change, message):
    write_lesson(tmp_path / "nb", lesson(change))
    r = workshop("student", "--out", str(tmp_path / "out"), notebooks=tmp_path / "nb")
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "01-demo.ipynb cell" in r.stderr, r.stderr
    r = workshop("check", notebooks=tmp_path / "nb")
    assert r.returncode == 1 and message in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("change,message", [
    ((0, new_markdown_cell("# Workshop 1 — Demo\n\nNo labels.")), "**Objectives**"),
    ((2, None), "cells tagged 'checks'"),
    ((3, new_markdown_cell("### Exercise 2 — square")), "numbered [2]"),
    ((5, exercise("f(2)", tag="check")), "calls no check_"),
])
def test_check_finds_broken_conventions(tmp_path, change, message):
    nb = lesson(change)
    write_lesson(tmp_path / "nb", nb)
    r = workshop("check", notebooks=tmp_path / "nb")
    assert r.returncode == 1 and message in r.stdout, r.stdout + r.stderr


def test_check_finds_a_syllabus_out_of_step(tmp_path):
    write_lesson(tmp_path / "nb", lesson())
    readme = tmp_path / "nb" / "README.md"
    readme.write_text(readme.read_text().replace("**Total: 15 minutes**", "**Total: 20 minutes**"))
    r = workshop("check", notebooks=tmp_path / "nb")
    assert r.returncode == 1 and "Full-day plan: stated total 20 minutes, the rows add up to 15" in r.stdout, r.stdout


def test_strip_solutions_keeps_the_code_around_the_blocks():
    loader = SourceFileLoader("workshop", str(SCRIPT))
    w = importlib.util.module_from_spec(importlib.util.spec_from_loader("workshop", loader))
    loader.exec_module(w)
    src = "@k\ndef f(item, x):\n    i = 1\n    # BEGIN SOLUTION\n    x[i] = 2\n    # END SOLUTION\n    return\n" \
          "# BEGIN SOLUTION\ny = 3\n# END SOLUTION\n"
    assert w.strip_solutions(src) == "@k\ndef f(item, x):\n    i = 1\n    pass  # your code here\n    return\n" \
                                     "pass  # your code here\n"
