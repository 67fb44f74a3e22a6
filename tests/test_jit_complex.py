"""complex64 and complex128 (issue 22): as dtypes of offload arrays and in the
kernel language, checked against NumPy 2:

- arrays hold, copy and transfer complex data: asarray/asnumpy round trips,
  zeros/empty with offload.complex64/complex128 (NumPy's scalar types),
  repr, slicing with steps and negative strides;
- kernels load and store complex elements, take complex scalars by value
  (Python complex: weak under NEP 50; NumPy complex scalars: strong), and
  compute + - * / ** (Smith's division, as NumPy), unary - +, == != and
  NumPy 2's lexicographic < <= > >=, abs, .real .imag .conjugate() np.conj,
  complex(a, b), np.complex64/np.complex128 casts, exp log sqrt sin cos tanh
  expm1 log1p (cmath semantics, within a few ulps of NumPy), isnan isinf
  isfinite, and += on complex elements -- on fresh random data, outputs
  poisoned first, on every device (Intel's runtime via SPIR-V and PoCL via
  SPIR 1.2);
- the promotion of every mix of real and complex dtypes and weak Python
  scalars, against np.result_type;
- special values (inf and NaN parts) against NumPy;
- errors: complex -> real casts and stores, // % on complex, unsupported math
  on complex: CompileErrors with file, line and caret.

Array-level operations on complex arrays (element-wise, reductions, matmul,
.real/.imag of arrays) come later and are not tested here. Inputs are fresh
random data each run; a failing test prints its seed: OFFLOAD_TEST_SEED=<n>
reruns it with the same inputs.
"""

from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

from offload_fixtures import device_fixture, load_offload, rng  # noqa: F401  (rng: a fixture)

ol = load_offload()  # a missing extension is a failure, not a skip

device = device_fixture(ol)

CDTYPES = ["complex64", "complex128"]
N = 37  # not a multiple of any vector width


def crandom(rng, n, dtype, scale=2.0):
    re = rng.uniform(-scale, scale, n)
    im = rng.uniform(-scale, scale, n)
    return (re + 1j * im).astype(dtype)


def poisoned(n, dtype):
    return np.full(n, complex(np.nan, np.nan) if np.dtype(dtype).kind == "c" else np.nan, dtype)


def close(got, want, dtype, ulps=8):
    """|got - want| within a few ulps of |want| (NaN where NumPy has NaN)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    eps = np.finfo(np.dtype(dtype)).eps if np.dtype(dtype).kind in "fc" else 0
    tol = ulps * eps * np.maximum(np.abs(want), np.finfo(np.float32).tiny)
    nan_g = np.isnan(got) if got.dtype.kind == "f" else np.isnan(got.real) | np.isnan(got.imag)
    nan_w = np.isnan(want) if want.dtype.kind == "f" else np.isnan(want.real) | np.isnan(want.imag)
    assert (nan_g == nan_w).all(), (got[nan_g != nan_w], want[nan_g != nan_w])
    ok = ~nan_w
    err = np.abs(got[ok].astype(np.complex128) - want[ok].astype(np.complex128))
    bad = err > tol[ok]
    assert not bad.any(), f"got {got[ok][bad]}, want {want[ok][bad]}"


def run(kernel, dev, out, *args):
    """Launch kernel over len(out) with out's device copy first; the result as NumPy."""
    o = ol.asarray(out, device=dev)
    dargs = [ol.asarray(a, device=dev) if isinstance(a, np.ndarray) else a for a in args]
    kernel[ol.Range(len(out))](o, *dargs)
    return ol.asnumpy(o)


# ---------------------------------------------------------------- arrays


@pytest.mark.parametrize("dtype", CDTYPES)
def test_arrays_hold_complex(device, rng, dtype):
    x = crandom(rng, N, dtype)
    a = ol.asarray(x, device=device)
    assert a.dtype == np.dtype(dtype)
    assert np.array_equal(ol.asnumpy(a), x)
    assert dtype in repr(a)
    assert np.array_equal(ol.asnumpy(a[::3]), x[::3])
    assert np.array_equal(ol.asnumpy(a[::-2]), x[::-2])
    z = ol.zeros((2, 3), dtype=getattr(ol, dtype), device=device)
    assert z.dtype == np.dtype(dtype) and np.array_equal(ol.asnumpy(z), np.zeros((2, 3), dtype))
    e = ol.empty(5, dtype=dtype, device=device)
    assert e.dtype == np.dtype(dtype) and e.shape == (5,)
    x2 = crandom(rng, (4, 5), dtype)
    a2 = ol.asarray(x2, device=device)
    assert np.array_equal(ol.asnumpy(a2.T), x2.T)
    assert np.array_equal(ol.asnumpy(a2[1:, ::-2]), x2[1:, ::-2])


def test_complex_aliases_are_numpy_types():
    assert ol.complex64 is np.complex64
    assert ol.complex128 is np.complex128


# ---------------------------------------------------------------- arithmetic


def k_arith(item, out, a, b, op):
    i = item.get_id(0)
    if op == 0:
        out[i] = a[i] + b[i]
    elif op == 1:
        out[i] = a[i] - b[i]
    elif op == 2:
        out[i] = a[i] * b[i]
    elif op == 3:
        out[i] = a[i] / b[i]
    elif op == 4:
        out[i] = -a[i]
    elif op == 5:
        out[i] = +a[i]
    elif op == 6:
        out[i] = a[i] ** 2
    elif op == 7:
        out[i] = a[i] ** -3


ARITH = {0: lambda a, b: a + b, 1: lambda a, b: a - b, 2: lambda a, b: a * b, 3: lambda a, b: a / b,
         4: lambda a, b: -a, 5: lambda a, b: +a, 6: lambda a, b: a ** 2, 7: lambda a, b: a ** -3}


@pytest.mark.parametrize("dtype", CDTYPES)
def test_arithmetic(device, rng, dtype):
    k = ol.kernel(k_arith)
    a, b = crandom(rng, N, dtype), crandom(rng, N, dtype)
    for op, f in ARITH.items():
        got = run(k, device, poisoned(N, dtype), a, b, op)
        with np.errstate(all="ignore"):
            close(got, f(a, b), dtype, ulps=16 if op == 7 else 8)


def k_div(item, out, a, b):
    i = item.get_id(0)
    out[i] = a[i] / b[i]


@pytest.mark.parametrize("dtype", CDTYPES)
def test_division_does_not_overflow(device, dtype):
    big = np.finfo(np.float32 if dtype == "complex64" else np.float64).max
    a = np.array([complex(big / 2, big / 4), 1 + 1j, 1 + 2j, 3 - 1j, 1j], dtype)
    b = np.array([complex(big / 4, big / 2), 0j, complex(0, 0), complex(1e-30, 1e-30), 2 + 0j], dtype)
    with np.errstate(all="ignore"):
        want = a / b
    got = run(ol.kernel(k_div), device, poisoned(len(a), dtype), a, b)
    assert np.isfinite(got[0]) and abs(got[0] - want[0]) <= 1e-5 * abs(want[0])
    np.testing.assert_array_equal(got.real, want.real)
    np.testing.assert_array_equal(got.imag, want.imag)


def k_mixed(item, out, a, x):
    i = item.get_id(0)
    out[i] = a[i] * x[i] + x[i] / a[i] - 1j * x[i] + 2.5


@pytest.mark.parametrize("cd,rd", [("complex64", "float32"), ("complex64", "int16"), ("complex64", "float64"),
                                   ("complex128", "float32"), ("complex64", "int64"), ("complex128", "bool")])
def test_mixed_with_real_arrays(device, rng, cd, rd):
    a = crandom(rng, N, cd)
    x = (rng.uniform(1, 5, N) if rd != "bool" else rng.integers(0, 2, N)).astype(rd)
    want = a * x + x / a - 1j * x + 2.5
    got = run(ol.kernel(k_mixed), device, poisoned(N, want.dtype), a, x)
    close(got, want, want.dtype, ulps=16)


def k_aug(item, out, a):
    i = item.get_id(0)
    out[i] += a[i]
    out[i] *= 1j
    out[i] -= 0.5
    out[i] /= a[i]


@pytest.mark.parametrize("dtype", CDTYPES)
def test_augmented_assignment_on_elements(device, rng, dtype):
    a, o = crandom(rng, N, dtype), crandom(rng, N, dtype)
    want = o.copy()
    want += a
    want *= 1j
    want -= 0.5
    want /= a
    got = run(ol.kernel(k_aug), device, o, a)
    close(got, want, dtype, ulps=16)


# ---------------------------------------------------------------- promotion (NEP 50)


def k_promote(item, out, a, s):
    i = item.get_id(0)
    out[i] = (a[i] + s) - a[i]  # keeps s's 1e-10 only when computed in complex128


PROMOTE = [
    ("complex64", 1e-10 + 0j), ("complex64", np.complex128(1e-10)), ("complex64", 1e-10),
    ("complex64", np.float64(1e-10)), ("complex64", np.float32(1e-10)), ("complex128", np.complex64(1e-10)),
    ("float32", 1e-10 + 0j), ("float32", np.complex64(1e-10)), ("float64", np.complex64(1e-10)),
    ("float64", 1e-10 + 0j), ("int8", 1e-10 + 0j), ("int16", np.complex64(1e-10)),
    ("int32", np.complex64(1e-10)), ("uint64", np.complex64(1e-10)), ("bool", 1e-10 + 0j),
    ("uint8", 1e-10 + 0j),
]


@pytest.mark.parametrize("adt,s", PROMOTE, ids=[f"{a}-{type(s).__name__}" for a, s in PROMOTE])
def test_promotion_matches_result_type(device, adt, s):
    a = np.ones(4, adt)
    want_dt = np.result_type(a, s)  # NumPy 2: Python scalars are weak
    got = run(ol.kernel(k_promote), device, np.full(4, np.nan, np.complex128), a, s)
    if want_dt.kind == "c":
        expect = 0.0 if want_dt == np.complex64 else 1e-10
    else:  # a real result
        expect = 0.0 if want_dt == np.float32 else 1e-10
    assert np.allclose(got.real, expect, rtol=1e-6, atol=0) and (got.imag == 0).all(), (got, want_dt)


def k_weak(item, out, a):
    i = item.get_id(0)
    x = a[i] * 1j  # stays a's dtype
    out[i] = x - a[i] * 1j + 1e-10 + a[i] - a[i]


@pytest.mark.parametrize("dtype", CDTYPES)
def test_weak_complex_literal_keeps_dtype(device, rng, dtype):
    a = np.ones(4, dtype)
    got = run(ol.kernel(k_weak), device, np.full(4, np.nan, np.complex128), a)
    expect = 0.0 if dtype == "complex64" else 1e-10
    assert np.allclose(got.real, expect, rtol=1e-6, atol=0), got


# ---------------------------------------------------------------- comparisons


def k_cmp(item, out, a, b):
    i = item.get_id(0)
    out[i, 0] = a[i] == b[i]
    out[i, 1] = a[i] != b[i]
    out[i, 2] = a[i] < b[i]
    out[i, 3] = a[i] <= b[i]
    out[i, 4] = a[i] > b[i]
    out[i, 5] = a[i] >= b[i]
    out[i, 6] = a[i] == 2.0


@pytest.mark.parametrize("dtype", CDTYPES)
def test_comparisons_are_numpy_s(device, rng, dtype):
    nan, inf = np.nan, np.inf
    a = np.array([1 + 2j, 1 + 2j, 1 + 3j, complex(1, nan), complex(nan, 1), 2 + 0j, complex(2, nan), 1 + 1j,
                  complex(inf, 0), complex(0, -inf)] + list(rng.integers(-2, 3, 6) + 1j * rng.integers(-2, 3, 6)),
                 dtype)
    b = np.array([1 + 2j, 1 + 3j, 1 + 2j, 0 + 1j, 1 + 1j, complex(1, nan), 1 + 0j, 2 + 1j, complex(inf, 1),
                  complex(0, 0)] + list(rng.integers(-2, 3, 6) + 1j * rng.integers(-2, 3, 6)), dtype)
    o = np.full((len(a), 7), 7, np.int8)
    oa = ol.asarray(o, device=device)
    ol.kernel(k_cmp)[ol.Range(len(a))](oa, ol.asarray(a, device=device), ol.asarray(b, device=device))
    with np.errstate(invalid="ignore"):
        want = np.stack([a == b, a != b, a < b, a <= b, a > b, a >= b, a == 2.0], axis=1).astype(np.int8)
    np.testing.assert_array_equal(ol.asnumpy(oa), want)


# ---------------------------------------------------------------- parts, abs, conj, constructors, casts


def k_parts(item, out, a, r):
    i = item.get_id(0)
    z = a[i]
    out[i, 0] = z.real
    out[i, 1] = z.imag
    out[i, 2] = abs(z)
    out[i, 3] = z.conjugate().imag
    out[i, 4] = np.conj(z).imag
    out[i, 5] = complex(r[i], z.real).imag + complex(r[i]).real
    out[i, 6] = np.complex64(r[i]).real + np.complex128(z).imag
    out[i, 7] = r[i].imag + r[i].real + r[i].conjugate()


@pytest.mark.parametrize("dtype", CDTYPES)
def test_parts_abs_conj_and_constructors(device, rng, dtype):
    a = crandom(rng, N, dtype)
    rdt = np.float32 if dtype == "complex64" else np.float64
    r = rng.uniform(-3, 3, N).astype(rdt)
    o = ol.asarray(np.full((N, 8), np.nan, rdt), device=device)
    ol.kernel(k_parts)[ol.Range(N)](o, ol.asarray(a, device=device), ol.asarray(r, device=device))
    want = np.stack([a.real, a.imag, np.abs(a), a.conjugate().imag, np.conj(a).imag,
                     (a.real.astype(np.float64) + r.astype(np.float64)).astype(rdt) - r + r,
                     np.complex64(r).real.astype(rdt) + a.imag, r + r], axis=1)
    want[:, 5] = a.real + r  # complex(r, z.real).imag + complex(r).real
    close(ol.asnumpy(o), want.astype(rdt), rdt, ulps=4)


def k_cast(item, out, a, c):
    i = item.get_id(0)
    out[i] = np.complex64(a[i]) + np.complex128(c[i]) * 0


@pytest.mark.parametrize("rd", ["int32", "float64", "bool", "uint8"])
def test_casts_to_complex(device, rng, rd):
    a = rng.integers(0, 50, N).astype(rd)
    c = crandom(rng, N, "complex128")
    want = a.astype(np.complex64) + c * 0
    got = run(ol.kernel(k_cast), device, poisoned(N, want.dtype), a, c)
    close(got, want, want.dtype)


def k_scalar_args(item, out, a, s, t):
    i = item.get_id(0)
    out[i] = a[i] * s + t


@pytest.mark.parametrize("dtype", CDTYPES)
def test_complex_scalar_arguments(device, rng, dtype):
    a = crandom(rng, N, dtype)
    for s, t in [(0.5 - 2j, np.complex64(1 + 1j)), (np.complex128(3j), -1j), (2 + 0j, 0.25)]:
        want = a * s + t
        got = run(ol.kernel(k_scalar_args), device, poisoned(N, want.dtype), a, s, t)
        close(got, want, want.dtype)


def k_truth(item, out, a):
    i = item.get_id(0)
    z = a[i]
    if z:
        out[i] = 1
    else:
        out[i] = 0
    if not z and bool(z) == False:  # noqa: E712
        out[i] += 10


def test_truth_of_complex(device):
    a = np.array([0j, 1j, 1 + 0j, complex(0, -0.0), complex(np.nan, 0)], np.complex64)
    got = run(ol.kernel(k_truth), device, np.full(len(a), -1, np.int32), a)
    np.testing.assert_array_equal(got, [10, 1, 1, 10, 1])


# ---------------------------------------------------------------- functions


FUNCS = ["exp", "log", "sqrt", "sin", "cos", "tanh", "expm1", "log1p"]


def k_exp(item, out, a):
    i = item.get_id(0)
    out[i] = np.exp(a[i])


def k_log(item, out, a):
    i = item.get_id(0)
    out[i] = np.log(a[i])


def k_sqrt(item, out, a):
    i = item.get_id(0)
    out[i] = np.sqrt(a[i])


def k_sin(item, out, a):
    i = item.get_id(0)
    out[i] = np.sin(a[i])


def k_cos(item, out, a):
    i = item.get_id(0)
    out[i] = np.cos(a[i])


def k_tanh(item, out, a):
    i = item.get_id(0)
    out[i] = np.tanh(a[i])


def k_expm1(item, out, a):
    i = item.get_id(0)
    out[i] = np.expm1(a[i])


def k_log1p(item, out, a):
    i = item.get_id(0)
    out[i] = np.log1p(a[i])


KFUNCS = {f: globals()[f"k_{f}"] for f in FUNCS}


@pytest.mark.parametrize("fn", FUNCS)
@pytest.mark.parametrize("dtype", CDTYPES)
def test_math_functions(device, rng, fn, dtype):
    a = crandom(rng, N, dtype, scale=3.0)
    a[:4] = np.array([0.5 + 0.5j, -2 + 1e-3j, 1e-3 - 3j, 1 + 1e-5j], dtype)  # near the branch cut, |z| ~ 1
    want = getattr(np, fn)(a)
    got = run(ol.kernel(KFUNCS[fn]), device, poisoned(N, dtype), a)
    # the device's real builtins are within a few ulps: some more for complex compositions
    close(got, want, dtype, ulps=64 if dtype == "complex64" else 32)


def k_sqrt_weak(item, out, a):
    i = item.get_id(0)
    out[i] = np.sqrt(a[i] * 1j) + np.exp(1j) + abs(3 + 4j)


def test_functions_of_weak_complex_stay_in_dtype(device, rng):
    a = crandom(rng, N, "complex64")
    want = np.sqrt(a * 1j) + np.exp(np.complex64(1j)) + np.float32(5)
    got = run(ol.kernel(k_sqrt_weak), device, poisoned(N, np.complex64), a)
    close(got, want.astype(np.complex64), np.complex64, ulps=64)


SPECIAL = [complex(x, y) for x in (0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, np.nan)
           for y in (0.0, -0.0, 2.0, -2.0, np.inf, -np.inf, np.nan)]


@pytest.mark.parametrize("fn", ["exp", "log", "sqrt", "sin", "cos", "tanh"])
def test_special_values_as_c99(device, fn):
    """Infinite and NaN parts as NumPy gives them (the C library's Annex G), signs of
    zeros aside. Where Annex G leaves the sign of an infinity or which of inf and NaN
    unspecified, NumPy's platform decides; the table here is what glibc gives."""
    a = np.array(SPECIAL, np.complex128)
    with np.errstate(all="ignore"):
        want = getattr(np, fn)(a)
    got = run(ol.kernel(KFUNCS[fn]), device, poisoned(len(a), np.complex128), a)
    for part in ("real", "imag"):
        g, w = getattr(got, part), getattr(want, part)
        with np.errstate(invalid="ignore"):
            same = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= 1e-15 * np.abs(w))
        assert same.all(), f"{fn}.{part}: at {a[~same]}, got {g[~same]}, want {w[~same]}"


def k_classify(item, out, a):
    i = item.get_id(0)
    out[i, 0] = np.isnan(a[i])
    out[i, 1] = np.isinf(a[i])
    out[i, 2] = np.isfinite(a[i])


@pytest.mark.parametrize("dtype", CDTYPES)
def test_isnan_isinf_isfinite(device, dtype):
    a = np.array(SPECIAL, dtype)
    o = ol.asarray(np.full((len(a), 3), 7, np.int8), device=device)
    ol.kernel(k_classify)[ol.Range(len(a))](o, ol.asarray(a, device=device))
    want = np.stack([np.isnan(a), np.isinf(a), np.isfinite(a)], axis=1).astype(np.int8)
    np.testing.assert_array_equal(ol.asnumpy(o), want)


def k_local_var(item, out, a, n):
    i = item.get_id(0)
    s = 0
    for k in range(n):
        s += a[i] ** k / (k + 1)
    out[i] = s


def test_accumulating_variable_becomes_complex(device, rng):
    a = crandom(rng, N, "complex128", scale=0.5)
    want = sum(a ** k / (k + 1) for k in range(6))
    got = run(ol.kernel(k_local_var), device, poisoned(N, np.complex128), a, 6)
    close(got, want, np.complex128, ulps=64)


@ol.device_func
def d_rotate(z, t):
    return z * np.exp(1j * t)


def k_devfunc(item, out, a, t):
    i = item.get_id(0)
    out[i] = d_rotate(a[i], t)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_device_functions_take_and_return_complex(device, rng, dtype):
    a = crandom(rng, N, dtype)
    want = a * np.exp(1j * np.asarray(0.75, np.real(a).dtype))
    got = run(ol.kernel(k_devfunc), device, poisoned(N, dtype), a, 0.75)
    close(got, want.astype(dtype), dtype, ulps=16)


# ---------------------------------------------------------------- errors


def k_e_float_cast(item, out, a):
    i = item.get_id(0)
    out[i] = np.float32(a[i])


def k_e_store_real(item, out, a):
    i = item.get_id(0)
    out[i] = a[i] * 2


def k_e_float_call(item, out, a):
    i = item.get_id(0)
    out[i] = float(a[i])


def k_e_floordiv(item, out, a):
    i = item.get_id(0)
    out[i] = (a[i] // 2).real


def k_e_mod(item, out, a):
    i = item.get_id(0)
    out[i] = (a[i] % 2).real


def k_e_aug_real(item, out, a):
    i = item.get_id(0)
    out[i] += a[i]


def k_e_atan2(item, out, a):
    i = item.get_id(0)
    out[i] = np.arctan2(a[i], a[i]).real


def k_e_print(item, out, a):
    i = item.get_id(0)
    print(a[i])


ERRORS = [
    (k_e_float_cast, "np.float32(a[i])", "a[i]", r"imaginary.*\n.*\.real"),
    (k_e_store_real, "out[i] = a[i] * 2", "a[i] * 2", r"imaginary.*\n.*\.real"),
    (k_e_float_call, "float(a[i])", None, r"float\(\).*complex"),
    (k_e_floordiv, "a[i] // 2", None, r"floor division.*complex"),
    (k_e_mod, "a[i] % 2", None, r"remainder.*complex"),
    (k_e_aug_real, "out[i] += a[i]", None, r"imaginary"),
    (k_e_atan2, "np.arctan2(a[i], a[i])", None, r"arctan2|atan2.*complex"),
    (k_e_print, "a[i])", None, r"print.*complex"),
]


@pytest.mark.parametrize("func,text,alt,words", ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_errors_point_at_the_source(func, text, alt, words):
    lines, first = inspect.getsourcelines(func)
    places = []
    for t in (text, alt):
        if t is None:
            continue
        for k, line in enumerate(lines):
            if t in line:
                places.append((first + k, line.index(t) + 1, line))
    assert places
    out = np.zeros(4, np.float32)
    a = np.ones(4, np.complex64)
    with pytest.raises(ol.CompileError) as info:
        ol.kernel(func)[ol.Range(4)](ol.asarray(out, device="opencl:cpu:0"), ol.asarray(a, device="opencl:cpu:0"))
    e = info.value
    msg = str(e)
    assert os.path.samefile(e.filename, inspect.getsourcefile(func))
    assert (e.lineno, e.colno) in [(ln, col) for ln, col, _ in places], (e.lineno, e.colno, places, msg)
    line = next(line for ln, col, line in places if (ln, col) == (e.lineno, e.colno))
    ls = msg.splitlines()
    assert ls[0].startswith(f"{e.filename}:{e.lineno}:{e.colno}: ")
    assert ls[1] == "    " + line.strip()
    indent = len(line) - len(line.lstrip())
    assert ls[2] == "    " + " " * (e.colno - 1 - indent) + "^"
    assert re.search(words, "\n".join([ls[0]] + ls[3:]), re.I), msg



def k_control(item, out, a):
    i = item.get_id(0)
    z = a[i]
    w = 1j if z.real < z.imag else z  # a branch between complex values: a vector select
    p = ol.private_array(2, np.complex128)
    p[0] = w
    p[1] = 0
    k = 0
    while abs(p[1]) < 4 and k < 5:
        p[1] = p[1] * p[1] + w * 0.5
        k += 1
    out[i] = p[1] + k


def test_branches_loops_and_private_arrays(device, rng):
    a = crandom(rng, N, "complex128")
    want = np.empty(N, np.complex128)
    for i, z in enumerate(a):
        w = 1j if z.real < z.imag else z
        s, k = 0j, 0
        while abs(s) < 4 and k < 5:
            s = s * s + w * 0.5
            k += 1
        want[i] = s + k
    got = run(ol.kernel(k_control), device, poisoned(N, np.complex128), a)
    close(got, want, np.complex128, ulps=64)


def k_out_of_range(item, out, a):
    i = item.get_id(0)
    out[i + 1] = a[i] * 2


def test_boundscheck_on_complex128_elements(device):
    a = np.ones(8, np.complex128)
    o = ol.asarray(np.zeros(8, np.complex128), device=device)
    with pytest.raises(IndexError):
        ol.kernel(boundscheck=True)(k_out_of_range)[ol.Range(8)](o, ol.asarray(a, device=device))
    got = ol.asnumpy(o)
    assert np.array_equal(got[1:], np.full(7, 2 + 0j)) and got[0] == 0
