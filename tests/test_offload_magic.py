"""%%offload cells through jupyter_client, as a notebook runs them: the cell's
prange loops run on PoCL's CPU device against NumPy on fresh random data with
poisoned outputs; the live report (device, copies, compiles, launches, then a
summary table) as one display that is shown and then updated in place, with
nothing printed beside it; --device, --quiet,
--show, --records; errors (CompileError at the cell's line, unknown options, a wrong
device filter, arrays on two devices) leave the kernel alive."""

from __future__ import annotations

import re

import pytest

from kernel_testlib import Kernel, of_type, result_text, stream_text
from kernel_testlib import cell_error as error
from kernel_testlib import cell_ok as ok
from offload_fixtures import CPU_FILTER, two_cpu_kernel  # noqa: F401  (fixtures)

SETUP = "import numpy as np, math, offload as ol\nfrom offload import prange\nrng = np.random.default_rng()\n"


@pytest.fixture
def kcs(kc):
    ok(kc, SETUP)
    return kc


def report(msgs) -> str:
    """The cell's report: one display_data, then update_display_data under its display_id, each
    with the step lines and the table as text and as HTML; its last text."""
    shown = of_type(msgs, "display_data")
    updates = of_type(msgs, "update_display_data")
    assert len(shown) == 1, f"the report is not one display: {len(shown)} display_data"
    did = shown[0]["content"]["transient"]["display_id"]
    assert all(u["content"]["transient"]["display_id"] == did for u in updates), "updates of another display"
    for m in shown + updates:
        assert {"text/plain", "text/html"} <= set(m["content"]["data"]), sorted(m["content"]["data"])
    return (updates or shown)[-1]["content"]["data"]["text/plain"]


def test_cell_runs_loops_on_the_device_and_reports(kcs):
    # strided NumPy arrays: copied even to a CPU device (contiguous ones are used in place there)
    msgs = ok(kcs, "%%offload\n"
                   "a = rng.random(2000)[::2]\n"
                   "b = np.full(2000, np.nan)[::2]\n"
                   "for i in prange(a.shape[0]):\n"
                   "    b[i] = math.sin(a[i]) * 2\n"
                   "print('after the loop')\n")
    assert ok(kcs, "assert np.allclose(b, np.sin(a) * 2), b") is not None
    # the report goes to its display, never to stdout: only the cell's own print is there
    assert stream_text(msgs) == "after the loop\n", stream_text(msgs)
    out = report(msgs)
    assert f"offload: device {CPU_FILTER}" in out
    assert "copied 'a' to" in out and "copied 'b' to" in out
    assert "ran the loop at line 4 over prange(1000):" in out
    assert "copied 'b' back" in out and "copied 'a' back" not in out  # a is only read
    # the lines come before the table, in one block
    assert out.index("copied 'b' back") < out.index("step ") < out.index("copy out") < out.index("total:")
    last = of_type(msgs, "update_display_data")[-1]["content"]["data"]["text/html"]
    assert "ran the loop at line 4 over prange(1000):" in last and "<table>" in last
    assert last.index("copied 'b' back") < last.index("<table>")
    # updated as it happened: the loop ran before the cell's own print, the copy back after it
    order = [("print" if m["msg_type"] == "stream" else m["content"]["data"]["text/plain"])
             for m in msgs if m["msg_type"] in ("stream", "display_data", "update_display_data")]
    printed = order.index("print")
    assert "ran the loop" in order[printed - 1] and "copied 'b' back" not in order[printed - 1]
    assert "copied 'b' back" in order[-1]


def test_cpu_device_uses_numpy_arrays_in_place(kcs):
    """On a CPU device a contiguous NumPy array is the device's memory: no copy either way."""
    msgs = ok(kcs, "%%offload\n"
                   "a = rng.random(1000)\n"
                   "b = np.full(1000, np.nan)\n"
                   "for i in prange(a.shape[0]):\n"
                   "    b[i] = math.sin(a[i]) * 2\n")
    assert ok(kcs, "assert np.allclose(b, np.sin(a) * 2), b") is not None
    out = report(msgs)
    assert f"offload: device {CPU_FILTER}" in out
    assert "'a' used in place by" in out and "'b' used in place by" in out, out
    assert "copied" not in out, out


def test_report_names_the_loops_ranges(kcs):
    """The user's prange(...), not the launch's grid (a reduction's is a grid-stride Range)."""
    msgs = ok(kcs, "%%offload\n"
                   "n = 5000\n"
                   "u = rng.random(n)\n"
                   "s = 0.0\n"
                   "for i in prange(n):\n"
                   "    s += u[i]\n"
                   "grid = np.zeros((30, 60))\n"
                   "for i in prange(30):\n"
                   "    for j in prange(10, 60):\n"
                   "        grid[i, j] = i + j\n")
    out = report(msgs)
    assert "ran the loop at line 5 over prange(5000):" in out, out
    assert "loop at line 5 over prange(5000)" in out.split("step ")[1], out  # the table's row too
    assert "ran the loop at line 8 over prange(30) x prange(10, 60):" in out, out
    assert "Range(" not in out, out
    ok(kcs, "assert np.isclose(s, u.sum()) and (grid[:, 10:] == np.add.outer(np.arange(30), np.arange(10, 60))).all()")


def test_reductions_and_nested_loops(kcs):
    ok(kcs, "%%offload --quiet\n"
            "x = rng.standard_normal((40, 50)).astype(np.float32)\n"
            "out = np.full((40, 50), np.nan, np.float32)\n"
            "total = 0.0\n"
            "lo = 1e9\n"
            "for i in prange(40):\n"
            "    for j in prange(50):\n"
            "        out[i, j] = x[i, j] * i - j\n"
            "for i in prange(40):\n"
            "    for j in prange(50):\n"
            "        total += x[i, j]\n"
            "        lo = min(lo, x[i, j])\n")
    ok(kcs, "i, j = np.indices(x.shape)\n"
            "assert np.allclose(out, x * i - j, atol=1e-4)\n"
            "assert np.isclose(total, x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3), total\n"
            "assert lo == x.min()\n")


def test_a_cell_run_again_reuses_its_kernels(kcs):
    cell = ("%%offload\n"
            "g = rng.random(300)\n"
            "h = np.full(300, np.nan)\n"
            "acc = 0.0\n"
            "for i in prange(300):\n"
            "    h[i] = g[i] * 3\n"
            "    acc += g[i]\n")
    first = report(ok(kcs, cell))
    ok(kcs, "assert np.allclose(h, g * 3) and np.isclose(acc, g.sum())")
    again = report(ok(kcs, cell))  # fresh data, the same loop at the same place
    ok(kcs, "assert np.allclose(h, g * 3) and np.isclose(acc, g.sum())")
    assert "compiled the loop at line 5" in first and "compiled" not in again and "compile " not in again
    assert "ran the loop at line 5" in again


def test_quiet_prints_nothing(kcs):
    msgs = ok(kcs, "%%offload --quiet\nv = np.zeros(8)\nfor i in prange(8):\n    v[i] = i\n")
    assert stream_text(msgs) == "" and not of_type(msgs, "display_data")
    ok(kcs, "assert (v == np.arange(8)).all()")


def test_device_arrays_stay_and_compute_follows_data(kcs):
    msgs = ok(kcs, "%%offload\n"
                   "d = ol.asarray(rng.random(64))\n"
                   "e = ol.full(64, np.nan)\n"
                   "for i in prange(64):\n"
                   "    e[i] = d[i] + 1\n")
    out = report(msgs)
    assert "copied" not in out and f"device {CPU_FILTER}" in out
    ok(kcs, "assert np.allclose(ol.asnumpy(e), ol.asnumpy(d) + 1)")


def test_explicit_device_and_show(kcs):
    msgs = ok(kcs, f"%%offload --device {CPU_FILTER} --show llvm\n"
                   "w = np.full(16, -1.0)\n"
                   "for i in prange(16):\n"
                   "    w[i] = i * 0.5\n")
    out = stream_text(msgs)
    assert "llvm of the loop at line 3" in out and "define" in out
    ok(kcs, "assert (w == np.arange(16) * 0.5).all()")


def test_compile_error_points_at_the_cell_line(kernel: Kernel, kcs):
    ename, evalue, _ = error(kcs, "%%offload\n"
                                  "q = np.zeros(4)\n"
                                  "for i in prange(4):\n"
                                  "    q[i] = [i]\n")
    assert ename == "CompileError"
    assert re.search(r"<cell \d+>:4:12: a list is not supported", evalue), evalue
    assert "q[i] = [i]" in evalue and "^" in evalue
    ename, evalue, _ = error(kcs, "%%offload\nfor i in prange(4):\n    break\n")
    assert ename == "CompileError" and ":3:5:" in evalue and "break" in evalue
    kernel.assert_alive("CompileErrors in %%offload cells")


def test_bad_options_and_device_filter(kernel: Kernel, kcs):
    ename, evalue, _ = error(kcs, "%%offload --frobnicate\npass\n")
    assert "unknown option '--frobnicate'" in evalue
    ename, evalue, _ = error(kcs, "%%offload --show asm\npass\n")
    assert "--show takes llvm, spirv or ptx" in evalue
    ename, evalue, _ = error(kcs, "%%offload --records 2x\npass\n")
    assert "--records needs a variable name, not '2x'" in evalue
    ename, evalue, _ = error(kcs, "%%offload --device cuda:gpu:7\npass\n")
    assert ename in ("DeviceNotFoundError", "ValueError") and "cuda:gpu:7" in evalue
    kernel.assert_alive("bad %%offload options")


def test_a_python_error_in_the_cell_still_copies_back(kcs):
    ename, evalue, _ = error(kcs, "%%offload --quiet\n"
                                  "z = np.zeros(5)\n"
                                  "for i in prange(5):\n"
                                  "    z[i] = 7\n"
                                  "raise KeyError('later')\n")
    assert ename == "KeyError"
    ok(kcs, "assert (z == 7).all(), z")


def test_records_are_left_in_a_variable(kcs):
    """--records NAME leaves the steps' records for a chart, also when the cell fails
    (the steps that ran say where it stopped), and also with --quiet."""
    msgs = ok(kcs, "%%offload --quiet --records steps\n"
                   "v = np.full(4096, np.nan)\n"
                   "for i in prange(4096):\n"
                   "    v[i] = 2 * i\n")
    assert not of_type(msgs, "display_data") and stream_text(msgs) == "", "--quiet showed something"
    ok(kcs, "assert (v == 2 * np.arange(4096)).all()\n"
            "kinds = [r['kind'] for r in steps]\n"
            "assert 'launch' in kinds, kinds\n"
            "assert all(r['ms'] >= 0 for r in steps if r['kind'] == 'launch'), steps\n")
    ename, _, _ = error(kcs, "%%offload --records=failed\n"
                             "w = np.zeros(8)\n"
                             "for i in prange(8):\n"
                             "    w[i] = 1\n"
                             "raise KeyError('later')\n")
    assert ename == "KeyError"
    ok(kcs, "assert any(r['kind'] == 'launch' for r in failed), failed")


def test_jit_function_in_the_kernel(kcs):
    ok(kcs, "@ol.jit\n"
            "def norm2(a):\n"
            "    s = 0.0\n"
            "    for i in prange(a.shape[0]):\n"
            "        s += a[i] * a[i]\n"
            "    return math.sqrt(s)\n")
    ok(kcs, "a = rng.random(999)\nassert np.isclose(norm2(a), np.linalg.norm(a))")


def test_lsmagic_lists_offload(kcs):
    msgs = ok(kcs, "%lsmagic")
    assert "%%offload" in (stream_text(msgs) or result_text(msgs))  # the kernel's list, or IPython's


def test_arrays_on_two_devices(two_cpu_kernel):  # noqa: F811
    kc = two_cpu_kernel.kc
    ok(kc, SETUP)
    ename, evalue, _ = error(kc, "%%offload\n"
                                 "p = ol.zeros(4, device='opencl:cpu:0')\n"
                                 "r = ol.zeros(4, device='opencl:cpu:1')\n"
                                 "for i in prange(4):\n"
                                 "    r[i] = p[i]\n")
    assert ename == "ExecutionPlacementError"
    assert "'p' on opencl:cpu:0" in evalue and "'r' on opencl:cpu:1" in evalue and "line 4" in evalue
    ename, evalue, _ = error(kc, "%%offload --device opencl:cpu:1\n"
                                 "p = ol.zeros(4, device='opencl:cpu:0')\n"
                                 "for i in prange(4):\n"
                                 "    p[i] = 1\n")
    assert ename == "ExecutionPlacementError" and "--device" in evalue
    two_cpu_kernel.assert_alive("placement errors")
