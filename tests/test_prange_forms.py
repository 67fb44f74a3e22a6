"""The shapes a prange loop's kernel takes (jit.h, jit_loop_form; docs/loops.md):
reductions on CPU devices walk contiguous runs in lanes, a row at a time for
nested loops; on GPUs grid-stride; maps one work-item per iteration. Every
reduction form (+=, *=, min, max, several at once) over 1-D to 3-D nests,
with unit and other steps, negative ones and starts past zero, sizes that are
no multiple of the lanes or the runs, against NumPy on fresh random data.

Indices that are a loop's own variable are checked against the array's shape
once, on the host, before the launch; an access that the host cannot prove
in range is still checked in the kernel, and Python's negative indices still
wrap. Runs on every device of the run (the default device set in turn)."""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import load_offload
from test_prange import on_each_device, rng  # noqa: F401  (an autouse fixture: every device)

ol = load_offload()
prange = ol.prange


@ol.jit
def four_at_once(x, lo, hi, step):
    s = 0
    p = 1.0
    mn = x[lo]
    mx = x[lo]
    for i in prange(lo, hi, step):
        s += x[i]
        p *= 1 + x[i] / 1000000
        mn = min(mn, x[i])
        mx = max(x[i], mx)
    return s, p, mn, mx


@ol.jit
def sum2(m):
    t = 0.0
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            t += m[i, j]
    return t


@ol.jit
def min_max3(c, a0, a1, a2):
    lo = c[0, 0, 0]
    hi = c[0, 0, 0]
    for i in prange(a0, c.shape[0]):
        for j in prange(a1, c.shape[1], 2):
            for k in prange(a2, c.shape[2]):
                lo = min(lo, c[i, j, k])
                hi = max(hi, c[i, j, k])
    return lo, hi


@ol.jit
def dot(x, y):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * y[i]
    return s


@ol.jit
def sum_from(x, start, stop):
    s = 0.0
    for i in prange(start, stop):
        s += x[i]
    return s


@ol.jit
def map2(m, out):
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            if m[i, j] < 0:
                continue
            out[i, j] = m[i, j] * 2 + j


@ol.jit
def count_and_sum_positive(m):
    n = 0
    s = 0.0
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            if m[i, j] <= 0:
                continue
            n += 1
            s += m[i, j]
    return n, s


@ol.jit
def shifted(x, out):
    for i in prange(x.shape[0]):
        out[i] = x[i + 1] - x[i]


def close(got, want, values, dtype):
    """A sum of values in dtype: its rounding grows with the sum of their magnitudes,
    not with the (possibly cancelling) result."""
    eps = 1e-6 if np.dtype(dtype) == np.float32 else 1e-13
    scale = float(np.abs(np.asarray(values, dtype=np.float64)).sum())
    assert abs(float(got) - float(want)) <= eps * max(scale, 1.0), (got, want, scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("n,lo,step", [(1, 0, 1), (15, 0, 1), (1001, 3, 1), (70001, 0, 1),
                                       (70001, 5, 3), (4099, 0, 16)])
def test_four_reductions_at_once_1d(dtype, n, lo, step):
    r = rng()
    x = (r.standard_normal(n) * 100).astype(dtype) if np.dtype(dtype).kind == "f" else \
        r.integers(-1000, 1000, n).astype(dtype)
    s, p, mn, mx = four_at_once(x, lo, n, step)
    part = x[lo:n:step]
    close(s, part.astype(np.float64).sum(), part, dtype)
    # a float32 product of n factors drifts by about n float32 roundings
    ptol = 1e-3 if np.dtype(dtype) == np.float32 else 1e-10
    np.testing.assert_allclose(p, np.prod(1 + part.astype(np.float64) / 1000000), rtol=ptol)
    assert mn == part.min() and mx == part.max()


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_four_reductions_over_more_tiles_than_groups(dtype):
    """A GPU's flat loop walks tiles of 16 x 256 iterations grid-stride over at most
    2048 work-items a compute unit: 2^23 iterations give a group two tiles or more.
    (Not float32: its product of 2^23 factors drifts past any tolerance that says
    something.)"""
    test_four_reductions_at_once_1d(dtype, (1 << 23) + 4097, 2, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_four_reductions_with_a_negative_step(dtype):
    x = rng().standard_normal(9001).astype(dtype)
    s, p, mn, mx = four_at_once(x, 9000, -1, -7)
    part = x[9000::-7]
    close(s, part.astype(np.float64).sum(), part, dtype)
    assert mn == part.min() and mx == part.max()


@pytest.mark.parametrize("shape", [(1, 1), (37, 1201), (300, 7), (4, 40000), (1000, 16)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nested_sum_is_the_flat_sum(shape, dtype):
    m = rng().standard_normal(shape).astype(dtype)
    close(sum2(m), m.astype(np.float64).sum(), m, dtype)


def test_nested_sum_of_a_device_view():
    m = rng().standard_normal((60, 90))
    d = ol.asarray(m)[5:50, 10:80:3]
    close(sum2(d), m[5:50, 10:80:3].sum(), m[5:50, 10:80:3], np.float64)


@pytest.mark.parametrize("shape,starts", [((5, 13, 211), (0, 0, 0)), ((7, 9, 33), (2, 1, 5)),
                                          ((3, 3, 1), (0, 0, 0))])
def test_min_max_over_three_dimensions(shape, starts):
    c = rng().standard_normal(shape)
    lo, hi = min_max3(c, *starts)
    part = c[starts[0]:, starts[1]::2, starts[2]:]
    assert lo == min(c[0, 0, 0], part.min()) and hi == max(c[0, 0, 0], part.max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_written_as_a_loop(dtype):
    r = rng()
    x, y = r.standard_normal(100003).astype(dtype), r.standard_normal(100003).astype(dtype)
    close(dot(x, y), x.astype(np.float64) @ y.astype(np.float64), x.astype(np.float64) * y, dtype)


@ol.jit
def min_max_from_first(x, scale):
    lo = x[0]
    hi = x[0]
    t = x[0]
    for i in prange(1, x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
        t += x[i] * scale
    return lo, hi, t


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_zero_d_arrays_stand_for_their_element(on_each_device, dtype):
    """x[0] of an offload array is a 0-D array (as CuPy's is); as a reduction's first
    value, or a value the body reads, it stands for its element, as NumPy's x[0] does."""
    h = (rng().standard_normal(5000) * 100).astype(dtype)
    x = ol.asarray(h, device=on_each_device)
    lo, hi, t = min_max_from_first(x, ol.asarray(np.array(2, dtype), device=on_each_device))
    assert lo == h.min() and hi == h.max()
    assert type(lo) is np.dtype(dtype).type, type(lo)
    close(t, h[0] + 2 * h[1:].astype(np.float64).sum(), 2 * h, dtype)
    lo, hi, t = min_max_from_first(h, np.array(3, dtype))  # NumPy's 0-D arrays too
    assert lo == h.min() and hi == h.max()
    close(t, h[0] + 3 * h[1:].astype(np.float64).sum(), 3 * h, dtype)


def test_negative_indices_still_wrap():
    x = rng().standard_normal(500)
    np.testing.assert_allclose(sum_from(x, -3, 500), x.sum() + x[-3:].sum(), rtol=1e-12)


def test_an_index_past_the_end_is_still_an_index_error(on_each_device):
    x = rng().standard_normal(500)
    if not ol.Device(on_each_device).device_type == "cpu":
        pytest.skip("index checks are on by default on CPU devices only")
    with pytest.raises(IndexError, match="index 500 is out of bounds for axis 0 with size 500"):
        sum_from(x, 0, 501)
    out = np.full(500, np.nan)
    with pytest.raises(IndexError, match="index 500 is out of bounds"):
        shifted(x, out)


@pytest.mark.parametrize("shape", [(3, 5), (129, 257)])
def test_a_nested_reduction_that_continues(shape):
    m = rng().standard_normal(shape)
    n, s = count_and_sum_positive(m)
    assert n == (m > 0).sum()
    close(s, m[m > 0].sum(), m, np.float64)


def test_a_reduction_run_again_and_from_threads():
    import threading
    xs = [rng().standard_normal(5000 + 7 * k) for k in range(8)]
    for x in xs[:3]:  # the same loop, other sizes: its kept partials are replaced
        close(sum_from(x, 0, x.shape[0]), x.sum(), x, np.float64)
    got = [None] * len(xs)

    def work(k):
        got[k] = sum_from(xs[k], 0, xs[k].shape[0])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, g in zip(xs, got):
        close(g, x.sum(), x, np.float64)


def test_a_map_that_continues():
    m = rng().standard_normal((33, 77))
    out = np.full(m.shape, np.nan)
    map2(m, out)
    want = np.where(m < 0, np.nan, m * 2 + np.arange(77))
    np.testing.assert_array_equal(out, want)
