"""Python threads and the offload module: launches, compiles, allocations and
frees from any number of threads at once (issue 18 item 4).

Each test defines its kernels afresh, so the first launches of every thread
race to compile the same specialisation: it must be built once, the others
waiting for it, and every thread must get right results (checked against
NumPy). The exit-time case runs in a child process, so a crash at exit fails
the test instead of killing pytest. No assertion is about time.

CI also runs these under ThreadSanitizer (scripts/check-tsan: -k thread).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from offload_fixtures import CPU_FILTER, cpu, ol, run_python  # noqa: F401  (fixtures)

N_THREADS = 8


def run_threads(target, n: int = N_THREADS) -> list:
    """Runs target(i) on n threads started together; returns their results
    in order, re-raising the first exception a thread raised."""
    results: list = [None] * n
    errors: list = []
    start = threading.Barrier(n)

    def body(i):
        try:
            start.wait()
            results[i] = target(i)
        except BaseException as e:  # reported on the main thread below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def test_threads_launch_one_fresh_kernel(ol, cpu):
    @ol.kernel
    def axpy(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    n = 1000

    def work(t):
        x = np.arange(n, dtype=np.float32) * (t + 1)
        xd = ol.asarray(x, device=cpu)
        yd = ol.asarray(np.ones(n, dtype=np.float32), device=cpu)
        for _ in range(10):
            axpy[ol.Range(n)](np.float32(2), xd, yd)
        got = ol.asnumpy(yd)
        np.testing.assert_allclose(got, 1 + 10 * 2 * x, rtol=1e-6)
        return True

    assert all(run_threads(work))
    st = axpy.stats
    # built once, whoever got there first; every other first launch waited for it
    assert st["compiles"] + st["disk_hits"] == 1, st
    assert st["launches"] == 10 * N_THREADS, st
    assert len(axpy.signatures) == 1, axpy.signatures


def test_threads_compile_many_specialisations_of_one_kernel(ol, cpu):
    @ol.kernel
    def scale(item, x, y, c):
        i = item.get_id(0)
        y[i] = x[i] * c

    dtypes = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16, np.uint32, np.float32]
    if not cpu.has_fp64:
        dtypes = [d if d is not np.float64 else np.float32 for d in dtypes]

    def work(t):
        dt = dtypes[t % len(dtypes)]
        x = (np.arange(64) % 7).astype(dt)
        xd = ol.asarray(x, device=cpu)
        yd = ol.zeros(64, dtype=dt, device=cpu)
        for _ in range(5):
            scale[ol.Range(64)](xd, yd, dt(3))
        np.testing.assert_array_equal(ol.asnumpy(yd), x * dt(3))
        return dt

    run_threads(work)
    want = len({np.dtype(d) for d in dtypes})
    assert len(scale.signatures) == want, scale.signatures
    st = scale.stats
    assert st["compiles"] + st["disk_hits"] == want, st


def test_threads_compile_different_fresh_kernels(ol, cpu):
    """Each thread its own kernel: their compiles run side by side."""

    def make(c):
        @ol.kernel
        def plus(item, x, y):
            i = item.get_id(0)
            y[i] = x[i] + c

        return plus

    kernels = [make(t) for t in range(N_THREADS)]

    def work(t):
        x = np.arange(100, dtype=np.int64)
        y = np.zeros_like(x)
        xd, yd = ol.asarray(x, device=cpu), ol.asarray(y, device=cpu)
        kernels[t][ol.Range(100)](xd, yd)
        np.testing.assert_array_equal(ol.asnumpy(yd), x + t)
        return True

    assert all(run_threads(work))


def test_threads_allocate_copy_and_free(ol, cpu):
    def work(t):
        rng = np.random.default_rng(t)
        for k in range(40):
            n = int(rng.integers(1, 5000))
            host = rng.standard_normal(n).astype(np.float32)
            a = ol.asarray(host, device=cpu)
            b = a * 2 + 1
            c = ol.empty(n, dtype=np.float32, device=cpu)
            del c
            np.testing.assert_allclose(ol.asnumpy(b), host * 2 + 1, rtol=1e-6)
            del a, b
        return True

    assert all(run_threads(work))


def test_threads_launch_while_others_read_tables(ol, cpu):
    @ol.kernel
    def fill(item, y, v):
        y[item.get_id(0)] = v

    def work(t):
        y = ol.zeros(32, dtype=np.int32, device=cpu)
        for k in range(20):
            if t % 2:
                fill[ol.Range(32)](y, k)
            else:
                ol.kernel_table()
                repr(fill), fill.signatures, fill.stats
        if t % 2:
            np.testing.assert_array_equal(ol.asnumpy(y), np.full(32, 19, dtype=np.int32))
        return True

    assert all(run_threads(work))


def test_threads_compile_errors_reach_every_thread(ol, cpu):
    @ol.kernel
    def bad(item, x):
        x[item.get_id(0)] = undefined_name  # noqa: F821

    def work(t):
        x = ol.zeros(4, dtype=np.float32, device=cpu)
        with pytest.raises(ol.CompileError):
            bad[ol.Range(4)](x)
        return True

    assert all(run_threads(work))
    assert bad.signatures == []


EXIT_GC = """
import threading
import numpy as np
import offload as ol
import sys, types

# kernels in a module's globals: kernel -> function -> __globals__ -> kernel,
# a cycle only the collector frees, at exit
src = '''
import offload as ol
@ol.kernel
def add(item, x, y, out):
    i = item.get_id(0)
    out[i] = x[i] + y[i]
'''
import tempfile, os, importlib
d = tempfile.mkdtemp()
with open(os.path.join(d, "kexit.py"), "w") as f:
    f.write(src)
sys.path.insert(0, d)
import kexit

errors = []
def work(t):
    try:
        n = 256
        x = ol.asarray(np.arange(n, dtype=np.float32), device={dev!r})
        y = ol.asarray(np.full(n, t, dtype=np.float32), device={dev!r})
        for _ in range(20):
            out = ol.empty(n, dtype=np.float32, device={dev!r})
            kexit.add[ol.Range(n)](x, y, out)
            assert (ol.asnumpy(out) == np.arange(n) + t).all()
    except BaseException as e:
        errors.append(repr(e))

ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
for t in ts: t.start()
for t in ts: t.join()
result["errors"] = errors
result["launches"] = kexit.add.stats["launches"]
# leave the kernel, arrays and a cycle or two for the exit-time collection
cycle = [kexit.add]
cycle.append(cycle)
"""


def test_threads_then_exit_time_gc_in_a_child(ol, cpu):
    r = run_python(EXIT_GC.format(dev=CPU_FILTER), timeout=300)
    assert r["errors"] == []
    assert r["launches"] == 80
