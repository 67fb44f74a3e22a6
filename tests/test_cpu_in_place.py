"""NumPy arrays on CPU devices are used where they lie (issue 20, item 4): a
kernel or a prange loop given a writable C-contiguous NumPy array on an
OpenCL CPU device computes in its memory, with no copy there or back (and so
no note about one); read-only and strided arrays are still copied; results
are right on every CPU device, checked against NumPy on fresh data with the
outputs poisoned first."""
from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import load_offload, poisoned, rng  # noqa: F401  (rng: a fixture)

ol = load_offload()
CPUS = [d.filter_string for d in ol.get_devices(device_type="cpu") if d.backend == "opencl"]


@ol.kernel
def axpb(item, x, y):
    i = item.get_id(0)
    y[i] = x[i] * 4 + 1


@ol.kernel
def scale_in_place(item, x):
    i = item.get_id(0)
    x[i] = x[i] * 2


@pytest.fixture(params=CPUS)
def cpu_default(request):
    before = ol.default_device()
    ol.set_default_device(request.param)
    yield request.param
    ol.set_default_device(before)


@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_numpy_arguments_used_in_place(cpu_default, rng, capsys, n):
    x = rng.random(n, dtype=np.float32)
    y = poisoned(n, np.float32)
    axpb[ol.Range(n)](x, y)
    np.testing.assert_array_equal(y, x * np.float32(4) + np.float32(1))
    assert "copied" not in capsys.readouterr().err


def test_a_kernel_writes_the_numpy_array_itself(cpu_default, rng, capsys):
    x = rng.random(4097, dtype=np.float64)
    want = x * 2
    scale_in_place[ol.Range(x.size)](x)
    np.testing.assert_array_equal(x, want)
    assert "copied" not in capsys.readouterr().err


def test_views_at_odd_offsets_are_used_in_place(cpu_default, rng, capsys):
    """An array starting mid-page (a slice) sits at an offset inside its page's buffer;
    only its own bytes come back: the neighbours keep what they held."""
    base = rng.random(10000, dtype=np.float32)
    guard = base.copy()
    x = base[3:5003]  # C-contiguous, 12 bytes into the allocation
    scale_in_place[ol.Range(x.size)](x)
    np.testing.assert_array_equal(base[3:5003], guard[3:5003] * 2)
    np.testing.assert_array_equal(base[:3], guard[:3])
    np.testing.assert_array_equal(base[5003:], guard[5003:])
    assert "copied" not in capsys.readouterr().err


def test_read_only_and_strided_arrays_are_copied(cpu_default, rng, capsys):
    x = rng.random(3000, dtype=np.float32)
    ro = x.copy()
    ro.flags.writeable = False
    y = poisoned(3000, np.float32)
    axpb[ol.Range(3000)](ro, y)
    np.testing.assert_array_equal(y, x * np.float32(4) + np.float32(1))
    assert "1 NumPy argument of axpb copied" in capsys.readouterr().err
    strided = rng.random(6000, dtype=np.float32)[::2]
    y = poisoned(3000, np.float32)
    axpb[ol.Range(3000)](strided, y)
    np.testing.assert_array_equal(y, strided * np.float32(4) + np.float32(1))
    assert "1 NumPy argument of axpb copied" in capsys.readouterr().err


def test_prange_loop_uses_numpy_arrays_in_place(cpu_default, rng):
    """What a %%offload cell runs: its prange loops inside one LoopContext."""
    seen = {}
    code = ol._compile_cell("for i in ol.prange(x.shape[0]):\n    y[i] = x[i] * 4 + 1\n", "<cell>")
    ns = {"ol": ol, "x": rng.random(50000, dtype=np.float32), "y": poisoned(50000, np.float32)}
    with ol.LoopContext(verbose=True, on_record=lambda records: seen.update(log=list(records))):
        exec(code, ns)
    np.testing.assert_array_equal(ns["y"], ns["x"] * np.float32(4) + np.float32(1))
    kinds = [r.get("kind") for r in seen.get("log", [])]
    assert kinds.count("in place") == 2 and "copy in" not in kinds and "copy out" not in kinds, seen


def test_jit_function_on_numpy_arrays(cpu_default, rng, capsys):
    @ol.jit
    def loop(x, y):
        for i in ol.prange(x.shape[0]):
            y[i] = x[i] * 4 + 1

    x = rng.random(50000, dtype=np.float32)
    y = poisoned(50000, np.float32)
    loop(x, y)
    np.testing.assert_array_equal(y, x * np.float32(4) + np.float32(1))


def test_gpu_style_copy_still_serves_offload_arrays(cpu_default, rng):
    """Device arrays are untouched by the change: the same kernel on ol arrays."""
    x = rng.random(777, dtype=np.float32)
    dx = ol.asarray(x)
    dy = ol.asarray(poisoned(777, np.float32))
    axpb[ol.Range(777)](dx, dy)
    np.testing.assert_array_equal(ol.asnumpy(dy), x * np.float32(4) + np.float32(1))
