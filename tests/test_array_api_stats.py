"""The array API's statistical and utility functions (issue 22), against NumPy 2:
offload.var std any all count_nonzero cumulative_sum cumulative_prod cumsum cumprod
diff, the ndarray methods var std any all cumsum cumprod, and the spec's corners of
the older reductions (max min mean prod sum: keepdims, tuple axes, dtype=, empty and
0-d inputs).

Every function over the dtypes offload arrays hold (complex dtypes do not exist yet),
over all axes, one (negative too) or several, 0-d, empty and non-contiguous inputs;
both forms of the scan (runs, the CPU's and a GPU's with many rows; blocks, a GPU's
with few long rows, forced here with OFFLOAD_SCAN_FORM) with rows long enough to be
split. Results must be offload arrays on the input's device with NumPy's dtype and
shape; integer and boolean results are exact, float results within a bound that
grows with the number of terms. Runs on every device offload sees. A failing test
prints its seed: OFFLOAD_TEST_SEED=<n> reruns it with the same inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    SLICES,
    load_offload,
    device_fixture,
    rng,
)

ol = load_offload()
device = device_fixture(ol)

INTS = [d for d in DTYPES if np.dtype(d).kind in "iu"]
FLOATS = ["float32", "float64"]
AxisError = np.exceptions.AxisError


def data(rng, dtype, shape, small=False):
    """Random data of dtype: small integers (many zeros) when small, else each
    integer type's whole range; floats standard normal (half of them 0 when small)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = rng.integers(0, 2, size=n).astype(bool)
    elif dt.kind in "iu":
        if small:
            a = rng.integers(0, 4, size=n).astype(dt)
        else:
            info = np.iinfo(dt)
            a = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
    else:
        a = rng.standard_normal(n).astype(dt)
        if small:
            a[rng.integers(0, 2, size=n) == 0] = 0
    return a.reshape(shape)


def on(device, a):
    return ol.asarray(a, device=device)


def check(got, want, what="", rtol=None, atol=0.0):
    """got: an offload array; want: NumPy's result. Same dtype and shape; exact for
    bool and integers, within rtol (default: a few ulps of the dtype) for floats."""
    assert isinstance(got, ol.ndarray), f"{what}: {type(got)}"
    want = np.asarray(want)
    g = got.asnumpy()
    assert g.dtype == want.dtype, f"{what}: dtype {g.dtype} != {want.dtype}"
    assert g.shape == want.shape, f"{what}: shape {g.shape} != {want.shape}"
    if want.dtype.kind == "f":
        if rtol is None:
            rtol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        assert np.array_equal(g, want), f"{what}\n got {g!r}\nwant {want!r}"


# ----------------------------------------------------------------------------
# any, all, count_nonzero

AXES = [None, -1, (0, 2)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_any_all_count_nonzero(device, rng, dtype):
    a = data(rng, dtype, (4, 5, 37), small=True)
    if a.dtype.kind == "f":
        a.flat[7] = np.nan  # NaN counts as true
        a[1] = 0
    a[2, 3] = 1 if a.dtype.kind != "b" else True
    x = on(device, a)
    for axis in AXES:
        keepdims = axis == (0, 2)
        for f in ("any", "all", "count_nonzero"):
            got = getattr(ol, f)(x, axis=axis, keepdims=keepdims)
            check(got, getattr(np, f)(a, axis=axis, keepdims=keepdims), f"{f} {axis} {keepdims}")
    check(x.any(axis=1), a.any(axis=1), "x.any")
    check(x.all(0, keepdims=True), a.all(0, keepdims=True), "x.all")
    ones = on(device, np.ones((3, 4), dtype))
    check(ol.all(ones), np.bool_(True), "all of ones")
    check(ol.any(ones * 0), np.bool_(False), "any of zeros")


def test_any_all_nan_and_large(device, rng):
    a = np.zeros(50000, np.float32)
    a[-3] = np.nan
    x = on(device, a)
    check(ol.any(x), np.bool_(True), "a NaN is true")
    check(ol.all(x), np.bool_(False))
    check(ol.count_nonzero(x), np.int64(1))
    b = data(rng, "int16", (300, 257), small=True)  # CPU forms: along and across outputs
    y = on(device, b)
    for axis in (None, 0, 1):
        check(ol.count_nonzero(y, axis=axis), np.count_nonzero(b, axis=axis), f"count {axis}")
        check(ol.any(y == 3, axis=axis), np.any(b == 3, axis=axis), f"any {axis}")
        check(ol.all(y != 5, axis=axis), np.all(b != 5, axis=axis), f"all {axis}")
    many = on(device, data(rng, "uint8", (2, 3, 2, 3, 2, 3), small=True))  # > 3 reduced groups
    m = many.asnumpy()
    sl = (slice(None), slice(None), slice(None, None, 2))
    check(ol.count_nonzero(many[sl], axis=(0, 1, 3, 4, 5)), np.count_nonzero(m[sl], axis=(0, 1, 3, 4, 5)))


@pytest.mark.parametrize("f", ["any", "all", "count_nonzero"])
def test_any_all_count_shapes(device, f):
    for shape, axis in [((0,), None), ((3, 0), 1), ((3, 0), 0), ((), None), ((), ())]:
        a = np.arange(int(np.prod(shape)), dtype="float64").reshape(shape)
        check(getattr(ol, f)(on(device, a), axis=axis), getattr(np, f)(a, axis=axis), f"{shape} {axis}")
    for name, base, sl in SLICES:
        a = sl(base) % 3
        check(getattr(ol, f)(sl(on(device, base)) % 3), getattr(np, f)(a), name)
        if a.ndim:
            check(getattr(ol, f)(sl(on(device, base)) % 3, axis=-1), getattr(np, f)(a, axis=-1), name)
    with pytest.raises(AxisError):
        getattr(ol, f)(on(device, np.ones(3)), axis=1)
    with pytest.raises(TypeError):
        getattr(ol, f)(np.ones(3))


# ----------------------------------------------------------------------------
# var, std


@pytest.mark.parametrize("dtype", DTYPES)
def test_var_std(device, rng, dtype):
    a = data(rng, dtype, (6, 7, 5), small=dtype not in FLOATS)
    x = on(device, a)
    rtol = 1e-5 if dtype == "float32" else 1e-11
    for axis in AXES:
        for corr in (0, 2.5):
            for f in ("var", "std"):
                check(getattr(ol, f)(x, axis=axis, correction=corr), getattr(np, f)(a, axis=axis, ddof=corr),
                      f"{f} {axis} {corr}", rtol=rtol, atol=1e-12)
    check(ol.var(x, axis=1, ddof=1, keepdims=True), np.var(a, axis=1, ddof=1, keepdims=True), "ddof", rtol=rtol)
    check(x.var(0), a.var(0), "x.var", rtol=rtol)
    check(x.std(axis=(0, 1), keepdims=True), a.std(axis=(0, 1), keepdims=True), "x.std", rtol=rtol)


def test_var_corners(device, rng):
    a = np.array([1.0, 2.0, 4.0], np.float32)
    x = on(device, a)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(ol.var(x, correction=3), np.var(a, ddof=3), "N - correction = 0: inf")
        check(ol.var(x, correction=5), np.var(a, ddof=5), "N - correction < 0: inf")
        c = on(device, np.full(4, 2.0))
        check(ol.std(c, correction=4), np.std(np.full(4, 2.0), ddof=4), "0 / 0: nan")
        e = np.zeros((0, 3))
        check(ol.var(on(device, e)), np.var(e), "empty")
        check(ol.var(on(device, e), axis=0), np.var(e, axis=0), "empty over axis 0")
        check(ol.var(on(device, e), axis=1), np.var(e, axis=1), "empty result")
    z = np.float64(3.0)
    check(ol.var(on(device, np.asarray(z))), np.var(z), "0-d")
    check(ol.var(x, dtype=np.float64), np.var(a, dtype=np.float64), "dtype=")
    for name, base, sl in SLICES:
        b = sl(base)
        if b.size:
            check(ol.std(sl(on(device, base))), np.std(b), name, rtol=1e-12)
    with pytest.raises(ValueError, match="ddof and correction"):
        ol.var(x, ddof=1, correction=1)
    with pytest.raises(TypeError):
        ol.var(a)
    with pytest.raises(TypeError):
        ol.std(x, out=x)
    with pytest.raises(AxisError):
        ol.std(x, axis=2)


def test_var_float32_accuracy(device, rng):
    """Two passes: a float32 variance of 2**24 elements far from 0 is as close as
    NumPy's (E[x^2] - E[x]^2 would have lost every digit)."""
    a = (rng.standard_normal(1 << 24) * 3 + 1000).astype(np.float32)
    exact = np.var(a.astype(np.float64))
    got = float(ol.var(on(device, a)).asnumpy())
    assert abs(got - float(np.var(a))) <= 1e-6 * exact
    assert abs(got - exact) <= 1e-6 * exact


# ----------------------------------------------------------------------------
# cumulative_sum, cumulative_prod, cumsum, cumprod

SCAN_SHAPES = [((17,), 0), ((3, 300), 1), ((3, 300), 0), ((4, 5, 6), 1), ((4, 5, 6), -1), ((0,), 0),
               ((3, 0), 1), ((0, 4), 1)]


def scan_tol(a):
    """float rtol/atol: the scan regroups additions, NumPy's are sequential; so
    a partial sum near 0 is held to a bound from the sum of magnitudes."""
    if a.dtype.kind != "f":
        return None, 0.0
    eps = 4 * np.finfo(a.dtype).eps
    return 8 * eps, eps * float(np.sum(np.abs(a.astype(np.float64))))


@pytest.fixture(params=["auto", "runs", "blocks"])
def form(request, monkeypatch):
    if request.param != "auto":
        monkeypatch.setenv("OFFLOAD_SCAN_FORM", request.param)
    return request.param


def cumulative_cases(device, rng, dtype, shapes):
    for shape, axis in shapes:
        a = data(rng, dtype, shape)
        p = data(rng, dtype, shape, small=True)  # products: small factors (floats near 1)
        if p.dtype.kind == "f":
            p = (1 + p / 8).astype(dtype)
        x, y = on(device, a), on(device, p)
        rtol, atol = scan_tol(a)
        prtol = {"float32": 1e-4, "float64": 1e-12}.get(dtype)  # products: relative errors add
        for inc in (False, True):
            check(ol.cumulative_sum(x, axis=axis, include_initial=inc),
                  np.cumulative_sum(a, axis=axis, include_initial=inc), f"sum {shape} {axis} {inc}", rtol, atol)
            check(ol.cumulative_prod(y, axis=axis, include_initial=inc),
                  np.cumulative_prod(p, axis=axis, include_initial=inc), f"prod {shape} {axis} {inc}", prtol)
        check(ol.cumsum(x), np.cumsum(a), f"cumsum flat {shape}", rtol, atol)
        check(y.cumprod(axis), p.cumprod(axis), f"x.cumprod {shape}", prtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumulative(device, rng, dtype):
    cumulative_cases(device, rng, dtype, SCAN_SHAPES)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32"])
def test_cumulative_forms(device, rng, form, dtype):
    cumulative_cases(device, rng, dtype, [((3, 3000), 1), ((4, 5, 6), 1), ((3, 0), 1)])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float32", "float64"])
def test_cumulative_dtype(device, rng, dtype):
    a = data(rng, "int16", (5, 40), small=True) * 7 - 10
    x = on(device, a)
    for axis in (0, 1):
        check(ol.cumulative_sum(x, axis=axis, dtype=dtype), np.cumulative_sum(a, axis=axis, dtype=dtype),
              f"sum {axis}", 3e-5)
        check(ol.cumulative_prod(x, axis=axis, dtype=dtype, include_initial=True),
              np.cumulative_prod(a, axis=axis, dtype=dtype, include_initial=True), f"prod {axis}", 3e-5)
    f = (data(rng, "float64", (30,)) * 100)
    check(ol.cumsum(on(device, f), dtype=dtype), np.cumsum(f, dtype=dtype), "from float64", 3e-5)


def test_cumulative_long(device, rng, form):
    """Rows long enough to split into runs (runs form) and several levels of blocks."""
    for shape, axis in [((40000,), 0), ((2, 20000), 1), ((9000, 3), 0)]:
        a = rng.standard_normal(shape).astype(np.float32)
        i = rng.integers(-1000, 1000, size=shape, dtype=np.int32)
        b = rng.integers(0, 2, size=shape).astype(bool)
        x = on(device, a)
        e = np.cumsum(a, axis=axis)
        bound = 1e-5 * np.cumsum(np.abs(a), axis=axis) + 1e-5  # sequential float32 vs regrouped
        assert np.all(np.abs(ol.cumsum(x, axis=axis).asnumpy() - e) <= bound)
        check(ol.cumsum(on(device, i), axis=axis), np.cumsum(i, axis=axis), f"int32 {shape}")
        check(ol.cumulative_sum(on(device, b), axis=axis, include_initial=True),
              np.cumulative_sum(b, axis=axis, include_initial=True), f"bool {shape}")
        check(ol.cumsum(on(device, b), axis=axis, dtype=bool), np.cumsum(b, axis=axis, dtype=bool), "or")
        check(ol.cumprod(on(device, b), axis=axis, dtype=bool), np.cumprod(b, axis=axis, dtype=bool), "and")
        check(ol.cumprod(on(device, i | 1), axis=axis), np.cumprod(i | 1, axis=axis), "int products wrap")


def test_cumulative_layouts_and_errors(device, rng):
    for name, base, sl in SLICES:
        b = sl(base)
        x = sl(on(device, base))
        check(ol.cumsum(x), np.cumsum(b), name)
        if b.ndim:
            check(ol.cumulative_sum(x, axis=-1, include_initial=True),
                  np.cumulative_sum(b, axis=-1, include_initial=True), name)
            check(ol.cumulative_prod(x, axis=0), np.cumulative_prod(b, axis=0), name)
    z = np.asarray(np.float32(2.5))
    check(ol.cumulative_sum(on(device, z)), np.cumulative_sum(z), "0-d")
    check(ol.cumsum(on(device, z)), np.cumsum(z), "0-d cumsum")
    x = on(device, np.ones((2, 3)))
    with pytest.raises(ValueError, match="axis"):
        ol.cumulative_sum(x)
    with pytest.raises(AxisError):
        ol.cumulative_prod(x, axis=2)
    with pytest.raises(AxisError):
        ol.cumsum(x, axis=-3)
    with pytest.raises(TypeError):
        ol.cumulative_sum(np.ones(3))
    with pytest.raises(TypeError):
        ol.cumsum(x, out=x)


# ----------------------------------------------------------------------------
# diff


@pytest.mark.parametrize("dtype", DTYPES)
def test_diff(device, rng, dtype):
    a = data(rng, dtype, (5, 8))
    x = on(device, a)
    cases = [{}, {"n": 2}, {"axis": 0}, {"axis": -2, "n": 3}, {"n": 9}, {"n": 0}]
    for kw in cases:
        with np.errstate(over="ignore", invalid="ignore"):
            want = np.diff(a, **kw)
        check(ol.diff(x, **kw), want, str(kw))
    assert ol.diff(x, n=0) is x


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32"])
def test_diff_prepend_append(device, rng, dtype):
    a = data(rng, dtype, (4, 6), small=True)
    x = on(device, a)
    pre, app = a[:, :2], a[:1, :]
    for kw, nkw in [
        ({"prepend": 0}, {"prepend": 0}),
        ({"append": 1.5, "axis": 0}, {"append": 1.5, "axis": 0}),
        ({"prepend": np.int8(3)}, {"prepend": np.int8(3)}),
        ({"prepend": True, "append": False, "n": 2}, {"prepend": True, "append": False, "n": 2}),
        ({"prepend": on(device, pre), "append": on(device, pre[:, :1]), "n": 3},
         {"prepend": pre, "append": pre[:, :1], "n": 3}),
        ({"append": on(device, app), "axis": 0}, {"append": app, "axis": 0}),
        ({"prepend": on(device, np.asarray(a[0, 0]))}, {"prepend": np.asarray(a[0, 0])}),
    ]:
        check(ol.diff(x, **kw), np.diff(a, **nkw), str(nkw))


def test_diff_layouts_and_errors(device):
    for name, base, sl in SLICES:
        b = sl(base)
        if b.ndim:
            check(ol.diff(sl(on(device, base))), np.diff(b), name)
            check(ol.diff(sl(on(device, base)), axis=0, prepend=-1), np.diff(b, axis=0, prepend=-1), name)
    x = on(device, np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="at least one dimensional"):
        ol.diff(on(device, np.asarray(1.0)))
    with pytest.raises(ValueError, match="order must be non-negative but got -1"):
        ol.diff(x, n=-1)
    with pytest.raises(AxisError):
        ol.diff(x, axis=2)
    with pytest.raises(ValueError, match="concatenation axis must match exactly"):
        ol.diff(x, prepend=on(device, np.ones((3, 1))))
    with pytest.raises(ValueError, match="same number of dimensions"):
        ol.diff(x, append=on(device, np.ones(3)))
    with pytest.raises(TypeError):
        ol.diff(x, prepend=np.ones((2, 1)))
    with pytest.raises(TypeError):
        ol.diff(np.ones(3))


def test_two_devices():
    devs = ol.get_devices()
    if len(devs) < 2:
        pytest.skip("one device")
    x = ol.asarray(np.arange(6.0).reshape(2, 3), device=devs[0])
    y = ol.asarray(np.ones((2, 1)), device=devs[1])
    with pytest.raises(ol.ExecutionPlacementError):
        ol.diff(x, prepend=y)


# ----------------------------------------------------------------------------
# the older reductions against the spec


def test_reductions_spec_corners(device, rng):
    a = data(rng, "int32", (3, 4, 5), small=True)
    x = on(device, a)
    for f in ("sum", "prod", "max", "min", "mean"):
        for axis in (None, 1, (0, 2), (-1,), ()):
            for keepdims in (False, True):
                check(getattr(ol, f)(x, axis=axis, keepdims=keepdims),
                      getattr(np, f)(a, axis=axis, keepdims=keepdims), f"{f} {axis} {keepdims}")
        z = np.asarray(np.float32(1.5))
        check(getattr(ol, f)(on(device, z)), getattr(np, f)(z), f"{f} 0-d")
        check(getattr(ol, f)(on(device, z), axis=()), getattr(np, f)(z, axis=()), f"{f} 0-d axis=()")
        with pytest.raises(AxisError):
            getattr(ol, f)(on(device, z), axis=0)
        with pytest.raises(ValueError, match="duplicate"):
            getattr(ol, f)(x, axis=(0, -3))
    for dt in ("int8", "uint8", "float32", "float64", "bool"):
        check(ol.sum(x, axis=1, dtype=dt), np.sum(a, axis=1, dtype=dt), f"sum dtype={dt}")
        check(ol.prod(x, axis=(0, 1), dtype=dt), np.prod(a, axis=(0, 1), dtype=dt), f"prod dtype={dt}")
    e = np.zeros((0, 3), np.float32)
    check(ol.sum(on(device, e)), np.sum(e), "sum of nothing")
    check(ol.prod(on(device, e), axis=0), np.prod(e, axis=0), "prod of nothing")
    check(ol.sum(on(device, e.T), axis=1), np.sum(e.T, axis=1), "sums of nothing")
    for f in ("max", "min"):
        with pytest.raises(ValueError, match="zero-size array"):
            getattr(ol, f)(on(device, e))
        check(getattr(ol, f)(on(device, e), axis=1), getattr(np, f)(e, axis=1), f"{f} empty result")
    with pytest.raises(TypeError):
        ol.max(a)
