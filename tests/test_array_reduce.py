"""Reductions of offload arrays (issue 7): offload.sum prod min max mean argmin
argmax and the ndarray methods of the same names, against NumPy.

Every function for every dtype it takes, over all axes, one axis (negative
too) or several, with and without keepdims, on 1-D to 5-D shapes whose sizes
are not multiples of the work-group size; non-contiguous inputs (the slice
table of offload_fixtures, transposes, negative strides); empty arrays; NaN
and infinities; arrays large enough that the first pass splits each output
over several work-groups and a second pass reduces their partials. Results
must be offload arrays on the input's device with NumPy 2's dtype and shape;
integer results and min/max/argmin/argmax are exact, floating sums are held
to a bound that grows with the number of elements (and float32 sums to
NumPy's own accuracy).

Runs on PoCL's CPU device and, where offload finds one, on the first CUDA
GPU. Imports only numpy, pytest and offload_fixtures (a GPU machine can run
`pytest tests/test_array_reduce.py --noconftest`). A failing test prints its
seed: OFFLOAD_TEST_SEED=<n> reruns it with the same inputs.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    SLICES,
    load_offload,
    device_filters,
    device_fixture,
    rng,
)

ol = load_offload()

DEVICES = device_filters(ol)

OPS = ["sum", "prod", "min", "max", "mean", "argmin", "argmax"]
ARG_OPS = ["argmin", "argmax"]
NO_IDENTITY = ["min", "max", "argmin", "argmax"]


device = device_fixture(ol)


# ----------------------------------------------------------------------------
# Data and comparison


def random_data(rng, op: str, dtype, shape) -> np.ndarray:
    """Inputs that exercise op: integers over their whole range for sum and
    prod (both wrap exactly as NumPy's), small ranges with many ties plus the
    type's extremes for min/max/argmin/argmax, floats near 1 for prod (no
    overflow), standard normal floats otherwise."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = rng.random(n) < (0.9 if op in ("prod", "min", "argmin") else 0.5)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        if op in ("sum", "prod", "mean"):
            a = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        else:
            lo = 0 if dt.kind == "u" else -5
            a = rng.integers(lo, lo + 10, size=n).astype(dt)
            extremes = rng.random(n) < 0.01
            a[extremes] = rng.choice(np.array([info.min, info.max], dt), size=int(extremes.sum()))
    elif op == "prod":
        a = (1 + rng.uniform(-0.01, 0.01, n)).astype(dt)
    else:
        a = rng.standard_normal(n).astype(dt)
    return a.reshape(shape)


def numpy_result(op: str, a: np.ndarray, **kw):
    """NumPy's answer, always as an ndarray (its full reductions give scalars)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of nothing, inf - inf
        return np.asarray(getattr(np, op)(a, **kw))


def exact_sum(a: np.ndarray, axis=None, keepdims=False) -> np.ndarray:
    """A float sum with error far below float64 rounding of the result (long double)."""
    return np.sum(a.astype(np.longdouble), axis=axis, keepdims=keepdims)


def float_bound(a: np.ndarray, axis, keepdims, rdtype, count) -> np.ndarray:
    """How far a computed sum of a may be from the exact one: an error that
    grows like the log of the number of elements (a pairwise or tree sum) on
    top of the sum of magnitudes, plus the rounding of the result."""
    eps = np.finfo(rdtype).eps
    mag = np.sum(np.abs(a.astype(np.float64)), axis=axis, keepdims=keepdims)
    return eps * mag * (4 + 2 * math.log2(max(count, 2))) + np.finfo(rdtype).tiny


def check(op: str, x, a: np.ndarray, device, what: str, **kw) -> None:
    """offload's op(x, **kw) against NumPy's op(a, **kw): type, device, dtype, shape, values."""
    want = numpy_result(op, a, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of nothing (test_empty checks it)
        got_arr = getattr(ol, op)(x, **kw)
    assert isinstance(got_arr, ol.ndarray), f"{what}: {op} returned {type(got_arr).__name__}, not offload.ndarray"
    assert got_arr.device.filter_string == device.filter_string, f"{what}: result on {got_arr.device}"
    got = got_arr.asnumpy()
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy's {want.shape}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    if op in ("min", "max"):
        np.testing.assert_array_equal(got, want, err_msg=what)  # exact, NaN where NumPy has NaN
        return
    with np.errstate(all="ignore"):  # infinities of both signs make NaN references
        check_float(op, got, want, a, what, kw.get("axis"), kw.get("keepdims", False))


def check_float(op, got, want, a, what, axis, keepdims):
    count = a.size if axis is None else int(np.prod([a.shape[d] for d in np.atleast_1d(axis)]))
    if op == "prod":
        exact = np.prod(a.astype(np.longdouble), axis=axis, keepdims=keepdims)
        tol = np.finfo(want.dtype).eps * np.abs(exact) * (2 + 2 * math.sqrt(max(count, 1)))
    else:
        exact = exact_sum(a, axis, keepdims)
        tol = float_bound(a, axis, keepdims, want.dtype, count)
        if op == "mean":
            exact, tol = exact / max(count, 1), tol / max(count, 1)
    err = np.abs(got.astype(np.longdouble) - exact)
    bad = ~(err <= tol) & (got != want) & ~(np.isnan(got) & np.isnan(want))  # equal infinities: err is NaN
    assert not bad.any(), f"{what}: {op} off by {err[bad][:4]} > {tol[bad][:4] if np.ndim(tol) else tol}"


# ----------------------------------------------------------------------------
# Every function, every dtype, every axis


SHAPES_AXES = [
    ((131075,), [None, 0, -1]),  # long enough to split over groups: a second pass, over partials
    ((7, 1000), [None, 0, 1, -1]),  # axis 0: one work-item per output; axis 1: a group per output
    ((5, 6, 70), [None, 0, 1, 2, -2]),
    ((1,), [None, 0]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_every_function_every_dtype(device, rng, op, dtype):
    for shape, axes in SHAPES_AXES:
        a = random_data(rng, op, dtype, shape)
        x = ol.asarray(a, device=device)
        for axis in axes:
            for keepdims in (False, True):
                check(op, x, a, device, f"{op}({dtype} {shape}, axis={axis}, keepdims={keepdims})", axis=axis,
                      keepdims=keepdims)


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_contiguous_runs(device, rng, dtype):
    """What CPU devices reduce in their own form (runs of at least 4096 contiguous elements
    per output, in blocks of 128, split over a few work-items): every operation and dtype,
    whole arrays and rows, lengths that leave ragged blocks and runs."""
    for op in OPS:
        for shape, axis in (((4096,), None), ((70001,), None), ((3, 9000), 1), ((2, 3, 5000), -1)):
            a = random_data(rng, op, dtype, shape)
            check(op, ol.asarray(a, device=device), a, device, f"{op}({dtype} {shape}, axis={axis})",
                  axis=axis)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_across_outputs(device, rng, dtype):
    """What CPU devices reduce across outputs (one reduced axis farther apart than the
    outputs: runs of rows added into rows of partials where outputs are one element apart,
    else tiles of neighbouring outputs walking it together): widths that do not divide the
    lanes or tiles, outputs strided or one element apart, runs split over k, NaN."""
    cases = [((3000, 37), 0), ((40, 1000), 0), ((513, 300), 0), ((20000, 16), 0),
             ((2, 7, 129), 1)]
    for op in OPS:
        for shape, axis in cases:
            a = random_data(rng, op, dtype, shape)
            check(op, ol.asarray(a, device=device), a, device, f"{op}({dtype} {shape}, axis={axis})",
                  axis=axis)
            v = a[:, ::3]  # outputs three elements apart
            check(op, ol.asarray(a, device=device)[:, ::3], v, device,
                  f"{op}({dtype} {shape}[:, ::3], axis={axis})", axis=axis)
    if dtype.startswith("float"):
        a = rng.standard_normal((500, 300)).astype(dtype)
        a[499, 0] = a[3, 299] = np.nan
        a[250, 150] = np.inf
        for op in ("min", "max", "sum", "argmin", "argmax"):
            check(op, ol.asarray(a, device=device), a, device, f"{op} across outputs with NaN", axis=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_and_inf_deep_in_long_runs(device, rng, dtype):
    """A NaN anywhere wins min and max (NumPy's rule), whichever block and run it is in; an
    infinity wins where there is no NaN; argmin and argmax give the first NaN's index (a
    second NaN follows in another lane of the same block, and in a later run)."""
    n = 50000
    for at in (0, 127, 128, 4095, 20000, n - 1):
        for value in (np.nan, np.inf, -np.inf):
            a = rng.standard_normal(n).astype(dtype)
            a[at] = value
            if at + 1 < n:
                a[at + 1 :: 9001] = value
            x = ol.asarray(a, device=device)
            for op in ("min", "max", "sum", "argmin", "argmax"):
                check(op, x, a, device, f"{op} with {value} at {at}")


@pytest.mark.parametrize("n", [1, 2, 7, 255, 256, 257, 1000, 4097, 8193, 65537])
def test_sizes_around_the_group_size(device, rng, n):
    for op in OPS:
        dtype = "int64" if op in ("sum", "prod") else "float64"
        a = random_data(rng, op, dtype, (n,))
        check(op, ol.asarray(a, device=device), a, device, f"{op} of {n} {dtype}")


# ----------------------------------------------------------------------------
# Layouts


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_non_contiguous_inputs(device, rng, op, dtype):
    for name, base, view in SLICES:
        a = random_data(rng, op, dtype, base.shape)
        va = view(a)
        vx = view(ol.asarray(a, device=device))
        if va.size == 0 and op in NO_IDENTITY:
            continue  # test_empty
        for axis in [None] + list(range(-va.ndim, va.ndim)):
            for keepdims in (False, True):
                if axis is not None and va.shape[axis] == 0 and op in NO_IDENTITY:
                    continue
                check(op, vx, va, device, f"{op} of {dtype} {name}, axis={axis}, keepdims={keepdims}", axis=axis,
                      keepdims=keepdims)


def test_transposed_and_reversed_large(device, rng):
    """Strided views big enough for the second pass, every axis."""
    for op in OPS:
        a = random_data(rng, op, "float32", (300, 257))
        x = ol.asarray(a, device=device)
        for name, va, vx in [("T", a.T, x.T), ("[::-1, ::-2]", a[::-1, ::-2], x[::-1, ::-2]),
                             ("T[::-3]", a.T[::-3], x.T[::-3])]:
            for axis in (None, 0, 1):
                check(op, vx, va, device, f"{op} of {name}, axis={axis}", axis=axis)


@pytest.mark.parametrize("op", OPS)
def test_more_dimensions(device, rng, op):
    """4-D and 5-D inputs, contiguous and not, over every axis."""
    a = random_data(rng, op, "int32", (3, 4, 5, 6))
    x = ol.asarray(a, device=device)
    cases = [("4d", a, x), ("4d[:, ::2, :, ::-1]", a[:, ::2, :, ::-1], x[:, ::2, :, ::-1]),
             ("5d", a.reshape(3, 2, 2, 5, 6), x.reshape(3, 2, 2, 5, 6))]
    for name, va, vx in cases:
        for axis in [None] + list(range(va.ndim)):
            check(op, vx, va, device, f"{op} of {name}, axis={axis}", axis=axis, keepdims=axis == 1)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "mean"])
def test_several_axes(device, rng, op):
    a = random_data(rng, op, "float64", (4, 5, 6))
    x = ol.asarray(a, device=device)
    for name, va, vx in [("", a, x), ("[::-1, :, 1::2]", a[::-1, :, 1::2], x[::-1, :, 1::2])]:
        for axis in [(0, 2), (2, 0), (0, 1), (1, 2), (-1, -3), (0, 1, 2), ()]:
            for keepdims in (False, True):
                check(op, vx, va, device, f"{op} of {name}, axis={axis}, keepdims={keepdims}", axis=axis,
                      keepdims=keepdims)
    b = random_data(rng, op, "int16", (2, 3, 2, 3, 2, 3, 2))  # axes that no walk of three merges
    y = ol.asarray(b, device=device)
    for axis in [(0, 2, 4, 6), (1, 3, 5), (0, 1, 2, 3, 4, 5)]:
        check(op, y, b, device, f"{op} of 7-D int16, axis={axis}", axis=axis)


# ----------------------------------------------------------------------------
# Large arrays: the two-pass tree


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8"])
def test_large_full_reductions(device, rng, dtype):
    n = (1 << 20) + 3
    for op in OPS:
        a = random_data(rng, op, dtype, (n,))
        if op in ARG_OPS and dtype.startswith("float"):  # one extreme, and a tie with it at the end
            a[rng.integers(n // 2)] = a.min() - 1 if op == "argmin" else a.max() + 1
            a[-1] = a.min() if op == "argmin" else a.max()
        check(op, ol.asarray(a, device=device), a, device, f"{op} of 2**20+3 {dtype}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["ties", "signed zeros", "one NaN", "infinities", "all -inf"])
def test_large_arg_reductions_first_of_equals(device, rng, dtype, case):
    """A CPU device's argmin/argmax keep each lane's best value and the first block that
    reached it, then look for it in that block: the first of equal values must win there,
    across lanes and runs, and a NaN must send the run back to the slow loop."""
    n = (1 << 20) + 77
    if case == "ties":
        a = rng.integers(0, 4, n).astype(dtype)
    elif case == "signed zeros":
        a = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(dtype)
    else:
        a = rng.random(n).astype(dtype)
    if case == "one NaN":
        a[rng.integers(n)] = np.nan
    elif case == "infinities":
        a[rng.integers(0, n, 3)] = np.inf
        a[rng.integers(0, n, 3)] = -np.inf
    elif case == "all -inf":
        a[:] = -np.inf
    x = ol.asarray(a, device=device)
    for op in ("argmax", "argmin"):
        got = int(ol.asnumpy(getattr(x, op)()))
        want = int(getattr(np, op)(a))
        assert got == want, f"{op} of {n} {dtype} ({case}) on {device}: {got}, NumPy {want}"


def test_float32_sum_is_as_accurate_as_numpy(device, rng):
    """Per-work-item partials and a tree: at least as close to the exact sum as NumPy's pairwise sum."""
    for n in [(1 << 20) + 5, 3 * (1 << 18)]:
        a = (rng.random(n) * 2 + 1).astype(np.float32)  # same signs: errors do not cancel
        exact = math.fsum(a.astype(np.float64).tolist())
        ours = float(ol.sum(ol.asarray(a, device=device)))
        theirs = float(np.sum(a))
        ulp = float(np.spacing(np.float32(exact)))
        assert abs(ours - exact) <= abs(theirs - exact) + ulp, (
            f"sum of {n} float32: {ours!r} is {abs(ours - exact)} from the exact {exact!r}; NumPy's {theirs!r} "
            f"is {abs(theirs - exact)}")
        mean = float(ol.mean(ol.asarray(a, device=device)))
        mean_ulp = float(np.spacing(np.float32(exact / n)))
        assert abs(mean - exact / n) <= abs(float(np.mean(a)) - exact / n) + mean_ulp


@pytest.mark.parametrize("shape, axis", [((3, 1 << 19), 1), ((1 << 19, 3), 0), ((64, 4099), 1), ((4099, 64), 0),
                                         ((2, 1 << 18, 2), 1)], ids=["wide-1", "tall-0", "rows-1", "cols-0", "mid"])
def test_large_axis_reductions(device, rng, shape, axis):
    for op in OPS:
        a = random_data(rng, op, "float32", shape)
        check(op, ol.asarray(a, device=device), a, device, f"{op} of {shape}, axis={axis}", axis=axis)


def test_queued_reductions_share_their_scratch_safely(device, rng):
    """Many two-pass reductions queued back to back (no wait between them)
    reuse one partials buffer: each must still see its own."""
    arrays = [rng.standard_normal((1 << 18) + 17 * i) for i in range(12)]
    xs = [ol.asarray(a, device=device) for a in arrays]
    sums = [ol.sum(x) for x in xs]
    argmaxes = [ol.argmax(x) for x in xs]
    mins = [x.min() for x in xs]
    for a, s, i, m in zip(arrays, sums, argmaxes, mins):
        assert abs(float(s) - float(exact_sum(a))) <= 1e-9 * np.abs(a).sum()
        assert int(i) == int(np.argmax(a))
        assert float(m) == a.min()


# ----------------------------------------------------------------------------
# Empty arrays, NaN, infinities


EMPTY = [((0,), None), ((0,), 0), ((0, 3), 0), ((0, 3), 1), ((3, 0), 1), ((3, 0), 0), ((0, 0), 1), ((2, 0, 3), None),
         ((2, 0, 3), 2), ((2, 0, 3), (0, 2)), ((0, 3), (0, 1))]


@pytest.mark.parametrize("op", OPS)
def test_empty(device, op):
    for shape, axis in EMPTY:
        if op in ARG_OPS and isinstance(axis, tuple):
            continue
        a = np.zeros(shape, np.float32)
        x = ol.asarray(a, device=device)
        what = f"{op} of {shape}, axis={axis}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = np.asarray(getattr(np, op)(a, axis=axis))
        except ValueError as e:
            with pytest.raises(ValueError) as info:
                getattr(ol, op)(x, axis=axis)
            assert str(info.value) == str(e), what
            continue
        empty_reduction = a.size == 0 and (axis is None or np.prod([shape[d] for d in np.atleast_1d(axis)]) == 0)
        if op == "mean" and empty_reduction:
            with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
                got = ol.mean(x, axis=axis)
        else:
            got = getattr(ol, op)(x, axis=axis)
        assert isinstance(got, ol.ndarray), what
        g = got.asnumpy()
        assert g.dtype == want.dtype and g.shape == want.shape, f"{what}: {g.dtype}{g.shape} vs {want.dtype}{want.shape}"
        np.testing.assert_array_equal(g, want, err_msg=what)


def test_empty_messages_are_numpys(device):
    x = ol.zeros((0,), dtype=np.int32, device=device)
    for op, msg in [("min", "zero-size array to reduction operation minimum which has no identity"),
                    ("max", "zero-size array to reduction operation maximum which has no identity"),
                    ("argmin", "attempt to get argmin of an empty sequence"),
                    ("argmax", "attempt to get argmax of an empty sequence")]:
        with pytest.raises(ValueError, match=re.escape(msg)):
            getattr(ol, op)(x)
    assert int(ol.sum(x)) == 0 and int(ol.prod(x)) == 1
    assert ol.sum(x).dtype == np.int64 and ol.prod(x).dtype == np.int64


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_and_infinities(device, rng, dtype):
    a = rng.standard_normal((6, 300)).astype(dtype)
    a[1, 17] = np.nan
    a[1, 200] = np.nan  # argmin/argmax: the first NaN
    a[2, 5] = np.inf
    a[3, :] = -np.inf  # all equal: index 0
    a[4, 100] = np.nan
    a[4, 3] = -np.inf
    a[5, 299] = np.nan  # the last element
    x = ol.asarray(a, device=device)
    for op in OPS:
        for axis in (None, 0, 1):
            check(op, x, a, device, f"{op} with NaN and inf, axis={axis}", axis=axis)
    for op in ("argmin", "argmax"):  # NaN found by the second pass, far from the start
        b = rng.standard_normal((1 << 20) + 1).astype(dtype)
        b[777_777] = np.nan
        b[900_000] = np.nan
        assert int(getattr(ol, op)(ol.asarray(b, device=device))) == 777_777


# ----------------------------------------------------------------------------
# dtype=, results, arguments


def test_dtype_argument(device, rng):
    i8 = rng.integers(-128, 128, 3000).astype(np.int8)
    f = rng.uniform(-1000, 1000, 3000)
    u = rng.integers(0, 1 << 32, 3000, dtype=np.uint32)
    cases = [
        ("sum", i8, np.int8),  # wraps in int8
        ("sum", i8, np.int16),
        ("sum", u, np.uint16),
        ("sum", f, np.int32),  # each element truncated first
        ("sum", i8, np.float32),
        ("sum", np.array([1, -1, 2, -2]), np.bool_),  # a sum of bools is a logical or
        ("sum", np.array([0, 0]), np.bool_),
        ("prod", np.array([3, -1, 0, 2]), np.bool_),
        ("prod", i8[:20], np.int8),
        ("prod", (1 + f[:50] / 1e4).astype(np.float32), np.float64),
        ("mean", i8, np.float32),
        ("mean", i8, np.int16),
        ("mean", f.astype(np.float32), np.float64),
        # long enough for a CPU device's own form: float64 asked for is float64 throughout
        ("sum", rng.uniform(-1000, 1000, 100_000).astype(np.float32), np.float64),
    ]
    for op, a, dt in cases:
        x = ol.asarray(a, device=device)
        for axis in (None, 0):
            check(op, x, a, device, f"{op}({a.dtype}, dtype={np.dtype(dt)}, axis={axis})", axis=axis, dtype=dt)
    x = ol.asarray(f, device=device)
    assert x.sum(dtype="float32").dtype == np.float32
    with pytest.raises(TypeError, match="float16"):
        ol.sum(x, dtype=np.float16)


def test_zero_d_results(device):
    x = ol.asarray(np.arange(10, dtype=np.float64), device=device)
    r = ol.sum(x)
    assert isinstance(r, ol.ndarray) and r.shape == () and r.ndim == 0 and r.dtype == np.float64
    assert float(r) == 45.0 and int(r) == 45
    h = r.asnumpy()
    assert isinstance(h, np.ndarray) and h.shape == () and h[()] == 45.0
    assert "45" in repr(r) and device.filter_string in repr(r)
    assert int(ol.argmax(x)) == 9 and ol.argmax(x).dtype == np.int64
    assert np.asarray(r) == 45.0
    # a 0-d input: every function, axis None or ()
    z = ol.asarray(np.float32(2.5), device=device)
    for op in OPS:
        want = numpy_result(op, np.float32(2.5))
        got = getattr(ol, op)(z).asnumpy()
        assert got.dtype == want.dtype and got.shape == () and got == want, op
    assert ol.sum(z, axis=()).asnumpy() == np.float32(2.5)
    # results are arrays that take part in further reductions
    assert float(ol.max(ol.sum(ol.asarray(np.ones((3, 4)), device=device), axis=0))) == 3.0


def test_methods(device, rng):
    a = rng.standard_normal((5, 7))
    x = ol.asarray(a, device=device)
    for op in OPS:
        f, m = getattr(ol, op), getattr(x, op)
        np.testing.assert_array_equal(m().asnumpy(), f(x).asnumpy(), err_msg=op)
        np.testing.assert_array_equal(m(1).asnumpy(), f(x, 1).asnumpy(), err_msg=op)
        np.testing.assert_array_equal(m(axis=-2, keepdims=True).asnumpy(), f(x, axis=-2, keepdims=True).asnumpy(),
                                      err_msg=op)
        assert m(axis=0).device.filter_string == device.filter_string
    assert x.sum(0, np.float32).dtype == np.float32  # NumPy's positional order: axis, dtype
    assert x.mean(None, np.float32, None, True).shape == (1, 1)
    assert x.max(0, None, True).shape == (1, 7)  # axis, out, keepdims
    with pytest.raises(TypeError):
        x.argmax(0, None, True)  # argmin/argmax: keepdims is keyword-only, as in NumPy
    assert x.argmax(0, keepdims=True).shape == (1, 7)


def test_bad_arguments(device):
    x = ol.asarray(np.ones((2, 3), np.float32), device=device)
    for op in OPS:
        f = getattr(ol, op)
        for axis in (2, -3, 5):
            with pytest.raises(np.exceptions.AxisError) as info:
                f(x, axis=axis)
            with pytest.raises(np.exceptions.AxisError) as want:
                getattr(np, op)(np.ones((2, 3)), axis=axis)
            assert str(info.value) == str(want.value), op
        with pytest.raises(TypeError, match="integer"):
            f(x, axis=1.0)
        with pytest.raises(TypeError, match="offload.asarray"):
            f(np.ones(3))
        with pytest.raises(TypeError, match="out="):
            f(x, out=ol.empty((), dtype=np.float32, device=device))
        with pytest.raises(TypeError):
            f(x, axis=0, bogus=1)
        if op in ARG_OPS:
            with pytest.raises(TypeError, match="tuple"):
                f(x, axis=(0,))
            with pytest.raises(TypeError):
                f(x, dtype=np.float32)
        else:
            with pytest.raises(ValueError, match="duplicate value in 'axis'"):
                f(x, axis=(0, -2))
            with pytest.raises(np.exceptions.AxisError):
                f(x, axis=(0, 2))
    with pytest.raises(np.exceptions.AxisError):
        ol.sum(ol.asarray(np.float64(1), device=device), axis=0)
