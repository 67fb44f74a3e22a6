"""complex64 and complex128 at the array level (issue 22 item 2), checked against NumPy:

- every element-wise function the array API defines on complex (abs acos acosh
  asin asinh atan atanh conj cos cosh exp expm1 imag isfinite isinf isnan log
  log10 log2 negative positive real reciprocal round sign sin sinh sqrt square
  tan tanh) on fresh random data, within a few ulps of NumPy; special values
  (infinite and NaN parts, signed zeros) exactly as NumPy (C99 Annex G, glibc);
- the operators with arrays and NumPy 2's weak Python complex scalars
  (x * 1j, x -= 1j, float32 array + 1j is complex64), NumPy's refusals;
- sum prod mean max min argmax argmin, cumulative_sum/prod, var/std (real),
  matmul, sum(conj(x) * y) as a vecdot;
- asarray of Python complex, full, fill, astype both ways (ComplexWarning),
  real/imag as views, DLPack both ways, the namespace's complex dtypes;
- kernels calling the complex functions directly.

Inputs are fresh random data each run; a failing test prints its seed:
OFFLOAD_TEST_SEED=<n> reruns it with the same inputs.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    device_fixture,
    load_offload,
    poisoned,
    rng,
)

ol = load_offload()

device = device_fixture(ol)

# NumPy's own divide-by-zero and invalid-value warnings on the reference side
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CDTYPES = ["complex64", "complex128"]


def cvalues(rng, dtype, shape, scale=3.0):
    """Random complex values, parts of mixed magnitudes up to about scale."""
    mag = lambda: 10.0 ** rng.uniform(-3, np.log10(scale), size=shape)  # noqa: E731
    re = rng.choice([-1.0, 1.0], size=shape) * mag()
    im = rng.choice([-1.0, 1.0], size=shape) * mag()
    return (re + 1j * im).astype(dtype)


def close(got, expected, ulps=8, magnitude=None):
    """got (an offload array) is NumPy's expected: dtype, shape, each part within
    ulps of magnitude (the result's own by default), NaN where NumPy has NaN.

    A product's or quotient's parts can cancel far below the result's size, and
    a device that contracts a*b - c*d into a fused multiply-add rounds that
    difference once, not twice: for those, pass the operands' magnitude."""
    assert isinstance(got, ol.ndarray)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    g = np.asarray(got.asnumpy())
    assert g.shape == expected.shape
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(g, expected)
        return
    part = np.float32 if expected.dtype in (np.complex64, np.float32) else np.float64
    size = np.abs(expected) if magnitude is None else np.broadcast_to(magnitude, expected.shape)
    scale = np.spacing(size.astype(part)) * ulps
    for a, b in ((g.real, expected.real), (g.imag, expected.imag)):
        both_nan = np.isnan(a) & np.isnan(b)
        ok = both_nan | (a == b) | (np.abs(a - b) <= scale)
        assert ok.all(), (a[~ok][:5], b[~ok][:5])


def same_special(got, expected, zero_signs=True):
    """Equal, part by part, NaN for NaN, zeros' signs included (unless zero_signs is False)."""
    g = np.asarray(got.asnumpy())
    assert g.dtype == expected.dtype
    for a, b in ((g.real, expected.real), (g.imag, expected.imag)):
        ok = (np.isnan(a) & np.isnan(b)) | ((a == b) & ((np.signbit(a) == np.signbit(b)) | (not zero_signs))) | (
            np.isfinite(b) & (b != 0) & (np.abs(a - b) <= 1e-5 * np.abs(b)))
        assert ok.all(), list(zip(g[~ok.ravel().reshape(ok.shape)][:4], expected[~ok][:4]))


def put(a, device):
    return ol.asarray(a, device=device)


# every function's NumPy name; "big" ones grow like exp and take smaller inputs
UNARY = ["absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "conjugate",
         "cos", "cosh", "exp", "expm1", "log", "log10", "log2", "negative", "positive",
         "reciprocal", "rint", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh"]
BIG = {"cos", "cosh", "exp", "expm1", "sin", "sinh", "tan", "tanh"}
ALIASES = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
           "atan": "arctan", "atanh": "arctanh", "conj": "conjugate", "abs": "absolute"}


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("fn", UNARY)
def test_unary_functions(device, rng, fn, dtype):
    a = cvalues(rng, dtype, (6, 9), scale=8.0 if fn in BIG else 100.0)
    a[0, 0] = 0
    x = put(a, device)
    close(getattr(ol, fn)(x), getattr(np, fn)(a))
    # non-contiguous: a step, a negative stride, a transpose
    close(getattr(ol, fn)(x[::2, ::-3]), getattr(np, fn)(a[::2, ::-3]))
    close(getattr(ol, fn)(x.T), getattr(np, fn)(a.T))


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_array_api_names(device, rng, name):
    a = cvalues(rng, "complex128", (5,))
    close(getattr(ol, name)(put(a, device)), getattr(np, ALIASES[name])(a))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_predicates_parts_round(device, rng, dtype):
    a = cvalues(rng, dtype, (4, 5), scale=50.0)
    a[0, :4] = [complex(np.nan, 1), complex(1, np.inf), complex(-np.inf, np.nan), complex(0, -0.0)]
    x = put(a, device)
    for fn in ("isfinite", "isinf", "isnan"):
        close(getattr(ol, fn)(x), getattr(np, fn)(a))
    for fn in ("real", "imag"):
        got = getattr(ol, fn)(x)
        assert got.dtype == getattr(np, fn)(a).dtype
        np.testing.assert_array_equal(got.asnumpy(), getattr(np, fn)(a))
    close(ol.round(x), np.round(a))
    close(ol.round(x, decimals=2), np.round(a, decimals=2))
    close(ol.round(x, decimals=-1), np.round(a, decimals=-1))
    close(abs(x), np.abs(a))
    assert ol.abs(x).dtype == (np.float32 if dtype == "complex64" else np.float64)


VALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e300, -1e-300]
SPECIAL = ["arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "cos", "cosh", "exp",
           "log", "log2", "log10", "sin", "sinh", "sqrt", "tan", "tanh", "sign", "reciprocal",
           "rint", "conjugate", "absolute", "isnan", "isinf", "isfinite"]


@pytest.mark.parametrize("fn", SPECIAL)
def test_special_values(device, fn):
    z = np.array([complex(a, b) for a, b in itertools.product(VALS, VALS)])
    with np.errstate(all="ignore"):
        expected = getattr(np, fn)(z)
    got = getattr(ol, fn)(put(z, device))
    if expected.dtype.kind == "b":
        np.testing.assert_array_equal(got.asnumpy(), expected)
    elif expected.dtype.kind == "f":  # abs: hypot, within an ulp
        np.testing.assert_allclose(got.asnumpy(), expected, rtol=4e-16)
    else:
        # on CUDA, arctan(+-inf + 0j) comes out as +-pi/2 - 0j (NumPy: + 0j): a known difference
        same_special(got, expected, zero_signs=not (fn == "arctan" and device.backend == "cuda"))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_binary_operators(device, rng, dtype):
    a, b = cvalues(rng, dtype, (3, 4)), cvalues(rng, dtype, (4,))
    b[1] = a[0, 1]  # an equal pair
    x, y = put(a, device), put(b, device)
    operands = {"multiply": np.abs(a) * np.abs(b), "divide": np.abs(a) / np.abs(b)}
    for name in ("add", "subtract", "multiply", "divide", "equal", "not_equal", "less",
                 "greater_equal", "maximum", "minimum", "fmax", "fmin"):
        close(getattr(ol, name)(x, y), getattr(np, name)(a, b), magnitude=operands.get(name))
    close(x + y, a + b)
    close(x - y, a - b)
    close(x * y, a * b, magnitude=operands["multiply"])
    close(x / y, a / b, magnitude=operands["divide"])
    close(x == y, a == b)
    close(x != y, a != b)
    close(x < y, a < b)
    close(x ** y, a ** b, ulps=64)
    # a runtime integer exponent below 100 by squaring, as NumPy: not exp(n log x)
    for n in (2, 3, -2, 7, 99):
        close(ol.pow(x, n), np.power(a, n), ulps=4 * abs(n), magnitude=np.abs(a) ** n)
    # mixed with real arrays: NumPy's promotion
    for other in ("float32", "float64", "int8", "int64", "bool"):
        r = rng.integers(-3, 4, size=(4,)).astype(other)
        close(x * put(r, device), a * r)
        close(put(r, device) - x, r - a)
    # NumPy's refusals: no floor division, remainder or bitwise operators
    for op in (lambda p, q: p // q, lambda p, q: p % q, lambda p, q: p & q):
        with pytest.raises(TypeError):
            op(x, y)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "float64", "int16", "bool"])
def test_weak_python_complex(device, rng, dtype):
    a = (rng.standard_normal((5,)) * 4).astype(dtype) if dtype != "bool" else rng.integers(
        0, 2, 5).astype(bool)
    if np.dtype(dtype).kind == "c":
        a = cvalues(rng, dtype, (5,))
    x = put(a, device)
    for s in (1j, 2 - 0.5j, complex(0, -0.0)):
        size = np.abs(a).astype(np.float64)
        close(x * s, a * s, magnitude=size * abs(s))
        close(s * x, s * a, magnitude=size * abs(s))
        close(x + s, a + s)
        close(s - x, s - a)
        close(x / s, a / s, magnitude=size / abs(s) if s else None)
        close(x == s, a == s)
    if np.dtype(dtype).kind == "c":
        y = put(a, device)
        y -= 1j
        close(y, a - 1j)
        y *= 2j
        close(y, (a - 1j) * 2j)
        z = put(a, device)
        z += np.complex64(1 + 1j)  # strong, but complex64 into complex: same_kind
        close(z, a + np.complex64(1 + 1j))
    else:
        y = put(a, device)
        with pytest.raises(TypeError):
            y -= 1j  # NumPy: complex cannot go into a real array in place
        b = a.copy()
        with pytest.raises(TypeError):
            b -= 1j


@pytest.mark.parametrize("dtype", CDTYPES)
def test_reductions(device, rng, dtype):
    a = cvalues(rng, dtype, (5, 6), scale=2.0)
    a[1, 2] = a[3, 3]  # equal elements for argmax/argmin ties
    x = put(a, device)
    for axis in (None, 0, -1, (0, 1)):
        for fn in ("sum", "prod", "mean", "max", "min"):
            close(getattr(ol, fn)(x, axis=axis), np.asarray(getattr(np, fn)(a, axis=axis)),
                  ulps=64)
        for fn in ("var", "std"):
            got = getattr(ol, fn)(x, axis=axis)
            assert got.dtype == (np.float32 if dtype == "complex64" else np.float64)
            close(got, np.asarray(getattr(np, fn)(a, axis=axis)), ulps=64)
    close(ol.sum(x, axis=1, keepdims=True), np.sum(a, axis=1, keepdims=True), ulps=64)
    close(ol.var(x, axis=0, correction=1), np.var(a, axis=0, ddof=1), ulps=64)
    close(x.sum(), np.asarray(a.sum()), ulps=64)
    for fn in ("argmax", "argmin"):
        for axis in (None, 0, 1):
            close(getattr(ol, fn)(x, axis=axis), np.asarray(getattr(np, fn)(a, axis=axis)))
    # a NaN propagates through max/min as NumPy's
    b = a.copy()
    b[2, 2] = complex(np.nan, 0)
    close(ol.max(put(b, device), axis=0), np.max(b, axis=0))
    close(ol.min(put(b, device)), np.asarray(np.min(b)))
    # a long one: the partials of the tree or CPU forms in complex too
    c = cvalues(rng, dtype, (20000,), scale=1.0)
    close(ol.sum(put(c, device)), np.asarray(np.sum(c.astype(np.complex128)).astype(dtype)),
          ulps=4096)
    close(ol.mean(put(c, device)), np.asarray(np.mean(c.astype(np.complex128)).astype(dtype)),
          ulps=4096)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_cumulative(device, rng, dtype):
    a = cvalues(rng, dtype, (4, 7), scale=1.5)
    x = put(a, device)
    for axis in (0, 1, -1):
        close(ol.cumulative_sum(x, axis=axis), np.cumulative_sum(a, axis=axis), ulps=64)
        close(ol.cumulative_prod(x, axis=axis), np.cumulative_prod(a, axis=axis), ulps=256)
    close(ol.cumulative_sum(x[1], include_initial=True), np.cumulative_sum(a[1], include_initial=True),
          ulps=64)
    close(ol.cumsum(x), np.cumsum(a), ulps=256)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_matmul_vecdot(device, rng, dtype):
    for m, k, n in ((3, 4, 5), (17, 33, 9), (1, 64, 1)):
        a, b = cvalues(rng, dtype, (m, k), 1.0), cvalues(rng, dtype, (k, n), 1.0)
        expected = a @ b
        got = put(a, device) @ put(b, device)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got.asnumpy(), expected,
                                   rtol=1e-4 if dtype == "complex64" else 1e-12,
                                   atol=1e-5 if dtype == "complex64" else 1e-13)
    close(ol.matmul(put(a, device), put(b, device)), a @ b, ulps=1 << 12)
    # mixed with a real array
    r = rng.standard_normal((k, n)).astype("float32")
    np.testing.assert_allclose((put(a, device) @ put(r, device)).asnumpy(), a @ r, rtol=1e-4)
    # vecdot as the array API defines it for complex: sum(conj(x1) * x2)
    x1, x2 = cvalues(rng, dtype, (4, 6)), cvalues(rng, dtype, (4, 6))
    got = ol.sum(ol.conj(put(x1, device)) * put(x2, device), axis=-1)
    np.testing.assert_allclose(got.asnumpy(), np.vecdot(x1, x2),
                               rtol=1e-5 if dtype == "complex64" else 1e-12)


def test_creation_fill_astype(device, rng):
    got = ol.asarray([1 + 2j, 3, -1j], device=device)
    expected = np.asarray([1 + 2j, 3, -1j])
    if not device.has_fp64:
        expected = expected.astype(np.complex64)
    np.testing.assert_array_equal(got.asnumpy(), expected)
    assert got.dtype == expected.dtype
    for dtype in CDTYPES:
        f = ol.full((2, 3), 1 + 2j, dtype=dtype, device=device)
        np.testing.assert_array_equal(f.asnumpy(), np.full((2, 3), 1 + 2j, dtype=dtype))
        f.fill(-1j)
        np.testing.assert_array_equal(f.asnumpy(), np.full((2, 3), -1j, dtype=dtype))
        z = ol.zeros(4, dtype=dtype, device=device)
        z[1:3] = 2 - 3j
        e = np.zeros(4, dtype=dtype)
        e[1:3] = 2 - 3j
        np.testing.assert_array_equal(z.asnumpy(), e)
        a = cvalues(rng, dtype, (3, 4))
        x = put(a, device)
        # complex -> real: NumPy drops the imaginary part with a ComplexWarning
        for to in ("float32", "float64", "int32"):
            with pytest.warns(np.exceptions.ComplexWarning):
                r = ol.astype(x, to)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np.testing.assert_array_equal(r.asnumpy(), a.astype(to))
        close(ol.astype(x, "bool"), a.astype(bool))
        other = "complex128" if dtype == "complex64" else "complex64"
        close(ol.astype(x, other), a.astype(other))
        for frm in ("float32", "int64", "bool", "uint8"):
            r = rng.integers(0, 5, (3,)).astype(frm)
            close(ol.astype(put(r, device), dtype), r.astype(dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(np.exceptions.ComplexWarning):
                ol.astype(x, "float64")


@pytest.mark.parametrize("dtype", CDTYPES)
def test_real_imag_views(device, rng, dtype):
    a = cvalues(rng, dtype, (4, 6))
    x = put(a, device)
    v = x[1:, ::-2]
    for part in ("real", "imag"):
        got, expected = getattr(v, part), getattr(a[1:, ::-2], part)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.strides == expected.strides
        np.testing.assert_array_equal(got.asnumpy(), expected)
        # a view: the parts computed on, and written through
        close(got * 2, expected * 2)
    x.real[0] = 7.0
    x.imag = 0.5
    a.real[0] = 7.0
    a.imag = 0.5
    np.testing.assert_array_equal(x.asnumpy(), a)
    x.real = ol.zeros(6, dtype=x.real.dtype, device=device)
    a.real = 0
    np.testing.assert_array_equal(x.asnumpy(), a)
    np.testing.assert_array_equal(x.conj().asnumpy(), a.conj())
    np.testing.assert_array_equal(x.conjugate().asnumpy(), a.conjugate())
    # real arrays: real is itself, imag zeros (and not settable)
    f = put(np.arange(3.0), device)
    assert f.real is f
    np.testing.assert_array_equal(f.imag.asnumpy(), np.zeros(3))
    with pytest.raises(TypeError):
        f.imag = 1.0


@pytest.mark.parametrize("dtype", CDTYPES)
def test_dlpack(device, rng, dtype):
    a = cvalues(rng, dtype, (3, 5))
    x = put(a, device)
    # NumPy imports host memory only: a CUDA array comes as the host copy __dlpack__ makes
    h = np.from_dlpack(x) if device.backend != "cuda" else np.from_dlpack(x, device="cpu", copy=True)
    np.testing.assert_array_equal(h, a)
    assert ol.asnumpy(ol.from_dlpack(x)).tolist() == a.tolist()  # device to device
    y = ol.from_dlpack(a)
    assert y.dtype == a.dtype
    np.testing.assert_array_equal(y.asnumpy(), a)


def test_namespace_dtypes(device):
    info = ol.__array_namespace_info__()
    d = info.default_dtypes(device=device)
    assert d["complex floating"] == ("complex128" if device.has_fp64 else "complex64")
    got = info.dtypes(device=device, kind="complex floating")
    assert list(got) == (["complex64", "complex128"] if device.has_fp64 else ["complex64"])
    assert ol.finfo(ol.complex64).dtype == np.float32
    assert ol.finfo(ol.complex128).eps == np.finfo(np.float64).eps
    assert ol.isdtype(ol.complex64, "complex floating")
    assert ol.result_type(ol.float32, 1j) == np.complex64
    assert ol.result_type(ol.int8, 1j) == np.complex128


def test_errors(device, rng):
    a = cvalues(rng, "complex128", (3,))
    x = put(a, device)
    with pytest.raises(TypeError):
        x + a  # a NumPy array mixed in
    with pytest.raises(TypeError):
        ol.signbit(x)  # no complex loop in NumPy
    with pytest.raises(TypeError):
        ol.floor(x)
    others = [d for d in ol.get_devices() if d != device]
    if others:
        with pytest.raises(ol.ExecutionPlacementError):
            x * put(a, others[0])


def test_kernel_complex_functions(device, rng):
    @ol.kernel
    def k(item, z, out):
        i = item.get_id(0)
        out[i] = np.arccos(z[i]) + np.arcsinh(z[i]) * np.tan(z[i]) - np.log10(z[i]) + np.cosh(
            z[i]) * np.arctanh(z[i]) + np.rint(z[i])

    a = cvalues(rng, "complex128", (32,), scale=4.0)
    z = put(a, device)
    out = put(poisoned(32, "float64").astype("complex128"), device)
    ol.call_kernel(k, ol.Range(32), z, out)
    expected = np.arccos(a) + np.arcsinh(a) * np.tan(a) - np.log10(a) + np.cosh(a) * np.arctanh(
        a) + np.rint(a)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-11, atol=1e-12)
