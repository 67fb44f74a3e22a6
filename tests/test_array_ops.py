"""Operators and element-wise functions on offload arrays (issue 7, items 1, 2
and 4; DESIGN.md, "The Python surface": Arrays), checked against NumPy:

- every operator (+ - * / // % ** & | ^ << >>, reflected and in-place forms,
  unary - + ~ abs, comparisons) and every element-wise function (offload.add
  ... offload.sqrt ... where clip astype reshape copy) for every dtype it
  accepts: where NumPy raises, offload raises the same exception class (a
  TypeError where NumPy's result would be float16); otherwise the
  result is an offload.ndarray on the operands' device with NumPy's dtype and
  shape and NumPy's values (exact for integers, bools and comparisons; within
  a few ulps for floats, NaN where NumPy has NaN);
- mixed dtypes, Python int/float/bool scalars (weak, NEP 50) and NumPy
  scalars (strong) on either side;
- broadcasting (scalar, row, column, 3-D and 5-D), non-contiguous inputs
  (steps, negative strides, .T), empty arrays, integer // and % by zero
  (0, as NumPy), float division by zero (inf, nan);
- in-place forms, NumPy's same_kind rule, overlapping operands;
- the errors: operands on two devices (ExecutionPlacementError), NumPy
  arrays or lists mixed in (a TypeError that says to call offload.asarray).

Runs on PoCL's CPU device and, where offload finds one, on the first CUDA GPU.
Inputs are fresh random data each run; a failing test prints its seed:
OFFLOAD_TEST_SEED=<n> reruns it with the same inputs. Imports only numpy,
pytest and offload_fixtures.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    SLICES,
    TWO_CPUS_ENV,
    load_offload,
    run_python,
    device_filters,
    device_fixture,
    rng,
)

ol = load_offload()  # a missing extension is a failure, not a skip

DEVICES = device_filters(ol)

INTS = [d for d in DTYPES if np.dtype(d).kind in "iu"]
FLOATS = ["float32", "float64"]

# Sizes. PoCL builds a kernel's work-group function once per local size, and
# offload picks the local size from the launch's shape (below 256 items, the
# next power of two), so each new small size class costs a build of every
# kernel it meets. The tests keep to shapes whose launches use the same few
# local sizes: N (>= 256) elements in 1-D, rows of >= 16 in 2-D,
# (>= 4, >= 4, >= 16) in 3-D.
N = 300
# the dtypes offload arrays hold (complex: tests/test_array_api_complex.py)
HELD = {np.dtype(d) for d in DTYPES + ["complex64", "complex128"]}

# Mixed-dtype pairs: NumPy promotes each to something else than either side (or
# to the wider side), float64 for int64 with uint64 (no bitwise loops there).
MIXED = [
    ("int8", "uint8"), ("uint16", "int8"), ("uint32", "int32"), ("int64", "uint64"), ("uint8", "int64"),
    ("bool", "int16"), ("bool", "float32"), ("int16", "float32"), ("int32", "float32"),
    ("float32", "float64"), ("uint64", "float64"),
]


device = device_fixture(ol)


# ============================================================================
# Inputs


def make(rng, dtype, shape, role="any") -> np.ndarray:
    """Random values of dtype for an operand's role:
    any       integers over the whole range and small ones (min and max included),
              floats of magnitudes 1e-6..1e6 and small integers, NaN, +-inf, +-0;
    divisor   as any, a fifth zeros (and -1s for signed integers);
    exponent  integers 0..2*bits (no negative integer powers: NumPy raises),
              floats in [-3, 3], half of them whole, and the special values;
    shift     shift counts -2..bits+3 (NumPy defines over-long and negative shifts);
    math      moderate values for transcendental functions: integers in [-300, 300],
              floats in [-10, 10], a few near zero and -1, and the special values.
    """
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    bits = 8 * dt.itemsize
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        lo, hi = int(np.iinfo(dt).min), int(np.iinfo(dt).max)
        if role == "shift":
            a = rng.integers(-2 if lo < 0 else 0, bits + 3, n, endpoint=True)
        elif role == "exponent":
            a = rng.integers(0, min(2 * bits, hi), n, endpoint=True)
        elif role == "math":
            a = rng.integers(max(lo, -300), min(hi, 300), n, endpoint=True)
        else:
            full = rng.integers(lo, hi, n, endpoint=True, dtype=dt)
            small = rng.integers(max(lo, -20), min(hi, 20), n, endpoint=True)
            a = np.where(rng.random(n) < 0.5, full, small).astype(dt)
            if n >= 2:
                a[0], a[1] = lo, hi
            if role == "divisor":
                a[rng.random(n) < 0.2] = 0
                if lo < 0:
                    a[rng.random(n) < 0.1] = -1
        a = a.astype(dt)
    else:
        if role == "exponent":
            a = rng.uniform(-3, 3, n)
            whole = rng.random(n) < 0.5
            a[whole] = np.round(a[whole])
            special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
        elif role == "math":
            a = rng.uniform(-10, 10, n)
            near = rng.random(n) < 0.2
            a[near] = rng.uniform(-1.5, 1.5, int(near.sum()))
            special = [np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0]
        else:
            a = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n)
            whole = rng.random(n) < 0.3
            a[whole] = rng.integers(-20, 21, int(whole.sum()))
            special = [np.nan, np.inf, -np.inf, 0.0, -0.0]
            if role == "divisor":
                zero = rng.random(n) < 0.2
                a[zero] = np.where(rng.random(int(zero.sum())) < 0.5, 0.0, -0.0)
        a = a.astype(dt)
        k = min(n // 4, len(special))
        if k:  # the special values at random places (not all of a tiny array)
            a[rng.choice(n, k, replace=False)] = np.array(special[:k], dt)
    return a.reshape(shape)


# ============================================================================
# Comparison with NumPy

# (rtol, atol) per dtype: exact IEEE operations, and functions that are only
# accurate to a few ulps (transcendental functions, pow, arctan2).
TOL = {
    "exact": {np.dtype("float32"): (1e-6, 0.0), np.dtype("float64"): (1e-12, 0.0)},
    "math": {np.dtype("float32"): (1e-5, 1e-6), np.dtype("float64"): (1e-12, 1e-15)},
}


def check_result(got, want, device, what, tol="exact"):
    """got is an offload array on device with want's dtype, shape and values."""
    assert isinstance(got, ol.ndarray), f"{what}: offload returned {type(got).__name__}, not offload.ndarray"
    assert got.device == device, f"{what}: the result lives on {got.device}, the operands on {device}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy's is {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy's is {want.shape}"
    g = got.asnumpy()
    if want.dtype.kind == "f":
        rtol, atol = TOL[tol][want.dtype]
        np.testing.assert_array_equal(np.isnan(g), np.isnan(want), err_msg=f"{what}: NaN positions differ")
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, want, err_msg=what, strict=True)


def agree(np_call, ol_call, device, what, tol="exact"):
    """Runs NumPy's and offload's forms of one computation: both raise the
    same exception class, or offload raises TypeError where NumPy's result is
    of a dtype offload arrays do not hold (float16), or both give the
    same result. Returns offload's result (None when it raised)."""
    np_error = want = None
    with np.errstate(all="ignore"):
        try:
            want = np.asarray(np_call())
        except Exception as e:  # noqa: BLE001 -- any exception, offload must match its class
            np_error = e
    if np_error is None and want.dtype not in HELD:
        np_error = TypeError(f"NumPy's result is {want.dtype}")
    try:
        got = ol_call()
    except Exception as e:  # noqa: BLE001
        if np_error is not None and isinstance(e, type(np_error)):
            return None
        np_said = f"raised {type(np_error).__name__}: {np_error}" if np_error is not None else f"gave {want.dtype}"
        pytest.fail(f"{what}: offload raised {type(e).__name__}: {e}\n(NumPy {np_said})", pytrace=False)
    if np_error is not None:
        pytest.fail(f"{what}: NumPy raised {type(np_error).__name__}: {np_error}, offload returned {got!r}",
                    pytrace=False)
    check_result(got, want, device, what, tol)
    return got


def on(device, a):
    return ol.asarray(a, device=device)


# ============================================================================
# Binary operators and two-argument functions, every dtype

# (ufunc name, operator or None, role of the right operand, tolerance)
BINARY = [
    ("add", operator.add, "any", "exact"),
    ("subtract", operator.sub, "any", "exact"),
    ("multiply", operator.mul, "any", "exact"),
    ("divide", operator.truediv, "divisor", "exact"),
    ("floor_divide", operator.floordiv, "divisor", "exact"),
    ("remainder", operator.mod, "divisor", "exact"),
    ("power", operator.pow, "exponent", "math"),
    ("bitwise_and", operator.and_, "any", "exact"),
    ("bitwise_or", operator.or_, "any", "exact"),
    ("bitwise_xor", operator.xor, "any", "exact"),
    ("left_shift", operator.lshift, "shift", "exact"),
    ("right_shift", operator.rshift, "shift", "exact"),
    ("equal", operator.eq, "any", "exact"),
    ("not_equal", operator.ne, "any", "exact"),
    ("less", operator.lt, "any", "exact"),
    ("less_equal", operator.le, "any", "exact"),
    ("greater", operator.gt, "any", "exact"),
    ("greater_equal", operator.ge, "any", "exact"),
    ("arctan2", None, "math", "math"),
    ("minimum", None, "any", "exact"),
    ("maximum", None, "any", "exact"),
]


def binary_checks(device, rng, dt1, dt2, n=N):
    for name, op, role, tol in BINARY:
        a = make(rng, dt1, n, "math" if role == "math" else "any")
        b = make(rng, dt2, n, role)
        x, y = on(device, a), on(device, b)
        ufunc = getattr(np, name)
        what = f"{name}({dt1}, {dt2})"
        agree(lambda: ufunc(a, b), lambda: getattr(ol, name)(x, y), device, f"offload.{what}", tol)
        if op is not None:
            agree(lambda: op(a, b), lambda: op(x, y), device, f"operator {what}", tol)
    # the two mixed operands the other way round (the reflected promotion)
    if dt1 != dt2:
        a, b = make(rng, dt2, n), make(rng, dt1, n)
        x, y = on(device, a), on(device, b)
        for op in (operator.add, operator.mul, operator.lt):
            agree(lambda: op(a, b), lambda: op(x, y), device, f"{op.__name__}({dt2}, {dt1})")


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_same_dtype(device, rng, dtype):
    binary_checks(device, rng, dtype, dtype)


@pytest.mark.parametrize("dt1, dt2", MIXED, ids=[f"{a}-{b}" for a, b in MIXED])
def test_binary_mixed_dtypes(device, rng, dt1, dt2):
    binary_checks(device, rng, dt1, dt2)


# ============================================================================
# Unary operators and one-argument functions, every dtype

# (name, the NumPy/offload callable taking the module, role, tolerance)
UNARY = [
    ("-x", lambda m, x: -x, "any", "exact"),
    ("+x", lambda m, x: +x, "any", "exact"),
    ("~x", lambda m, x: ~x, "any", "exact"),
    ("abs(x)", lambda m, x: abs(x), "any", "exact"),
    ("negative", lambda m, x: m.negative(x), "any", "exact"),
    ("positive", lambda m, x: m.positive(x), "any", "exact"),
    ("invert", lambda m, x: m.invert(x), "any", "exact"),
    ("absolute", lambda m, x: m.absolute(x), "any", "exact"),
    ("abs", lambda m, x: m.abs(x), "any", "exact"),
    ("sqrt", lambda m, x: m.sqrt(x), "any", "math"),
    ("exp", lambda m, x: m.exp(x), "math", "math"),
    ("log", lambda m, x: m.log(x), "any", "math"),
    ("log1p", lambda m, x: m.log1p(x), "math", "math"),
    ("sin", lambda m, x: m.sin(x), "math", "math"),
    ("cos", lambda m, x: m.cos(x), "math", "math"),
    ("tan", lambda m, x: m.tan(x), "math", "math"),
    ("tanh", lambda m, x: m.tanh(x), "math", "math"),
    ("floor", lambda m, x: m.floor(x), "any", "exact"),
    ("ceil", lambda m, x: m.ceil(x), "any", "exact"),
    ("isnan", lambda m, x: m.isnan(x), "any", "exact"),
    ("isfinite", lambda m, x: m.isfinite(x), "any", "exact"),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(device, rng, dtype):
    for name, f, role, tol in UNARY:
        a = make(rng, dtype, N, role)
        x = on(device, a)
        agree(lambda: f(np, a), lambda: f(ol, x), device, f"{name} of {dtype}", tol)
    # the float16 refusal says what NumPy chose and what to do
    if dtype in ("bool", "int8", "uint8"):
        with pytest.raises(TypeError, match="float16"):
            ol.sqrt(on(device, make(rng, dtype, 5)))


# ============================================================================
# Python and NumPy scalars on either side

# f(x) with a scalar; the operand's role when it is not "any"
SCALAR_CASES = [
    ("x + 3", lambda x: x + 3), ("3 + x", lambda x: 3 + x), ("x - 2", lambda x: x - 2),
    ("7 - x", lambda x: 7 - x), ("x * 3", lambda x: x * 3), ("x / 2", lambda x: x / 2),
    ("5 / x", lambda x: 5 / x), ("x // 3", lambda x: x // 3), ("100 // x", lambda x: 100 // x),
    ("x % 7", lambda x: x % 7), ("-7 % x", lambda x: -7 % x), ("x // 0", lambda x: x // 0),
    ("x % 0", lambda x: x % 0), ("x ** 2", lambda x: x ** 2), ("x ** 0.5", lambda x: x ** 0.5),
    ("x & 5", lambda x: x & 5), ("6 | x", lambda x: 6 | x), ("x ^ 3", lambda x: x ^ 3),
    ("x << 2", lambda x: x << 2), ("x >> 1", lambda x: x >> 1),
    ("x < 3", lambda x: x < 3), ("3 < x", lambda x: 3 < x), ("x == 0", lambda x: x == 0),
    ("x != 1.5", lambda x: x != 1.5), ("x >= -1", lambda x: x >= -1), ("x <= 2**70", lambda x: x <= 2**70),
    ("x > -2**65", lambda x: x > -(2**65)), ("x == 1000", lambda x: x == 1000), ("x < 2**1100", lambda x: x < 2**1100),
    ("x + 1.5", lambda x: x + 1.5), ("x * 0.5", lambda x: x * 0.5), ("2.5 - x", lambda x: 2.5 - x),
    ("x // 0.5", lambda x: x // 0.5),
    ("x + True", lambda x: x + True), ("x & True", lambda x: x & True), ("False * x", lambda x: False * x),
    ("True - x", lambda x: True - x), ("x | False", lambda x: x | False),
    ("x + 300", lambda x: x + 300), ("x + -1", lambda x: x + -1), ("x - 2**64", lambda x: x - 2**64),
    ("x + np.int16(3)", lambda x: x + np.int16(3)), ("np.float32(2.5) * x", lambda x: np.float32(2.5) * x),
    ("x - np.float64(1)", lambda x: x - np.float64(1)), ("np.uint8(3) + x", lambda x: np.uint8(3) + x),
    ("x == np.int64(5)", lambda x: x == np.int64(5)), ("x + np.bool_(True)", lambda x: x + np.bool_(True)),
    ("np.uint64(7) // x", lambda x: np.uint64(7) // x), ("x + np.float16(1)", lambda x: x + np.float16(1)),
    ("x + 1j", lambda x: x + 1j),
]
# NumPy takes fast paths for some scalar exponents: ndarray.__pow__ calls
# numpy.square for 2 (whose loop for bool is int8 where numpy.power's is int64),
# and numpy.power's loop computes x ** 0.5 as sqrt(x) for a scalar 0.5 (NaN for
# -inf, where pow(-inf, 0.5) and numpy.power with an array of 0.5 give inf).
# offload's ** is numpy.power with an array exponent.
# NumPy's `**` operator, fast paths included (x ** 0.5 is sqrt for floats, a bool ** 2 is int8),
# is what offload's follows: no other form to compare with.
NUMPY_FORM: dict = {}
# functions with a scalar argument: f(m, x)
SCALAR_FUNCS = [
    ("maximum(x, 0)", lambda m, x: m.maximum(x, 0)), ("minimum(3, x)", lambda m, x: m.minimum(3, x)),
    ("arctan2(x, 2.0)", lambda m, x: m.arctan2(x, 2.0)), ("power(x, 3)", lambda m, x: m.power(x, 3)),
    ("add(np.int32(1), x)", lambda m, x: m.add(np.int32(1), x)),
    ("less(x, np.float64(0.5))", lambda m, x: m.less(x, np.float64(0.5))),
]
# with the array's role: exponents and shift counts
SCALAR_ROLE_CASES = [
    ("2 ** x", lambda x: 2 ** x, "exponent"), ("1.5 ** x", lambda x: 1.5 ** x, "exponent"),
    ("1 << x", lambda x: 1 << x, "shift"), ("-100 >> x", lambda x: -100 >> x, "shift"),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_scalar_operands(device, rng, dtype):
    a = make(rng, dtype, N)
    x = on(device, a)
    for name, f in SCALAR_CASES:
        tol = "math" if "**" in name else "exact"
        np_f = NUMPY_FORM.get(name, f)
        agree(lambda: np_f(a), lambda: f(x), device, f"{name} with x of {dtype}", tol)
    for name, f in SCALAR_FUNCS:
        agree(lambda: f(np, a), lambda: f(ol, x), device, f"{name} with x of {dtype}", "math")
    for name, f, role in SCALAR_ROLE_CASES:
        b = make(rng, dtype, N, role)
        y = on(device, b)
        agree(lambda: f(b), lambda: f(y), device, f"{name} with x of {dtype}", "math")


def test_scalar_promotion_is_nep50(device):
    """Python scalars are weak, NumPy scalars strong, as in NumPy 2."""
    x32 = on(device, np.arange(4, dtype="float32"))
    i8 = on(device, np.arange(4, dtype="int8"))
    assert (x32 * 2.5).dtype == np.float32
    assert (x32 + 2**70).dtype == np.float32
    assert (x32 + np.float64(1)).dtype == np.float64  # np.float64 subclasses float, but is strong
    assert (np.float64(1) + x32).dtype == np.float64
    assert (i8 + 1).dtype == np.int8 and (i8 + np.int64(1)).dtype == np.int64
    assert (i8 + 1.0).dtype == np.float64
    assert (i8 + True).dtype == np.int8
    with pytest.raises(OverflowError):
        i8 + 300


def test_negative_integer_powers_do_not_crash(device, rng):
    """NumPy raises ValueError for integers to negative integer powers; offload
    computes something in the kernel (0 in C's manner). Either is accepted:
    only a crash or a wrong dtype is not."""
    for dtype in ("int8", "int32", "int64"):
        a = make(rng, dtype, N)
        x = on(device, a)
        e = on(device, -make(rng, dtype, N, "exponent") - 1)
        for f in (lambda: x ** e, lambda: x ** -1, lambda: 2 ** e, lambda: ol.power(x, e)):
            try:
                r = f()
            except ValueError:
                continue
            assert isinstance(r, ol.ndarray) and r.dtype == np.dtype(dtype) and r.shape == (N,)
            r.asnumpy()


# ============================================================================
# Division and modulo by zero


@pytest.mark.parametrize("dtype", INTS + FLOATS + ["bool"])
def test_division_by_zero_follows_numpy(device, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        a = np.array([1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 5.5], dt)
    elif dt.kind == "b":
        a = np.array([True, False])
    else:
        info = np.iinfo(dt)
        a = np.array([info.min, info.max, 0, 1, 7, info.min + 1], dt)
    a = np.resize(a, N)  # the values repeated, to N elements
    z = np.zeros_like(a)
    x, zx = on(device, a), on(device, z)
    for name, op in [("/", operator.truediv), ("//", operator.floordiv), ("%", operator.mod)]:
        agree(lambda: op(a, z), lambda: op(x, zx), device, f"{dtype} {name} zeros")
        agree(lambda: op(a, 0), lambda: op(x, 0), device, f"{dtype} {name} 0")
        agree(lambda: op(a, False), lambda: op(x, False), device, f"{dtype} {name} False")
        agree(lambda: op(a, 0.0), lambda: op(x, 0.0), device, f"{dtype} {name} 0.0")
        agree(lambda: op(a, -0.0), lambda: op(x, -0.0), device, f"{dtype} {name} -0.0")
        agree(lambda: op(0, a), lambda: op(0, x), device, f"0 {name} {dtype}")
    if dt.kind == "i":  # MIN // -1 overflows: NumPy gives MIN (and MIN % -1 is 0)
        m1 = np.full_like(a, -1)
        agree(lambda: a // m1, lambda: x // on(device, m1), device, f"{dtype} // -1")
        agree(lambda: a % m1, lambda: x % on(device, m1), device, f"{dtype} % -1")
    if dt.kind in "iu":
        got = (x // 0).asnumpy(), (x % 0).asnumpy()
        assert not got[0].any() and not got[1].any(), f"{dtype}: x // 0 and x % 0 should be all 0: {got}"


# ============================================================================
# Broadcasting

BROADCASTS = [
    ((), (16, 20)),
    ((20,), (16, 20)),
    ((16, 1), (1, 20)),
    ((16, 1), (20,)),
    ((4, 16, 20), (16, 1)),
    ((4, 1, 20), (16, 1)),
    ((1, 16, 1), (4, 1, 20)),
    ((2, 3, 1, 4, 20), (3, 5, 4, 1)),  # 5-D: launches beyond the kernel's 3 dimensions
    ((2, 1, 4, 1, 20), (1, 5, 1, 6, 1)),
    ((1,), (2, 2, 2, 4, 20)),
]


@pytest.mark.parametrize("s1, s2", BROADCASTS, ids=[f"{a}-{b}" for a, b in BROADCASTS])
def test_broadcasting(device, rng, s1, s2):
    for dtype in ("float32", "int16"):
        a, b = make(rng, dtype, s1), make(rng, dtype, s2)
        x, y = on(device, a), on(device, b)
        for op in (operator.add, operator.mul, operator.lt):
            agree(lambda: op(a, b), lambda: op(x, y), device, f"{op.__name__}{s1}{s2} {dtype}")
            agree(lambda: op(b, a), lambda: op(y, x), device, f"{op.__name__}{s2}{s1} {dtype}")
    c = make(rng, "bool", s1)
    a, b = make(rng, "float64", s2), make(rng, "int32", s1)
    cx, x, y = on(device, c), on(device, a), on(device, b)
    agree(lambda: np.where(c, a, b), lambda: ol.where(cx, x, y), device, f"where{s1}{s2}{s1}")
    agree(lambda: np.where(c, a, 0), lambda: ol.where(cx, x, 0), device, f"where{s1}{s2}, 0")
    agree(lambda: np.arctan2(a, b), lambda: ol.arctan2(x, y), device, f"arctan2{s2}{s1}", "math")


@pytest.mark.parametrize("s1, s2", [((3,), (4,)), ((2, 3), (3, 2)), ((4, 2, 3), (3, 2)), ((0,), (2,))])
def test_broadcasting_mismatch_is_value_error(device, s1, s2):
    x, y = on(device, np.ones(s1, "float32")), on(device, np.ones(s2, "float32"))
    for f in (lambda: x + y, lambda: y * x, lambda: ol.maximum(x, y), lambda: ol.where(x > 0, x, y)):
        with pytest.raises(ValueError):
            f()


# ============================================================================
# Non-contiguous inputs

VIEWS = [
    ("[::2]", lambda a: a[::2]),
    ("[::-1]", lambda a: a[::-1]),
    (".T", lambda a: a.T),
    ("[1:,::-2]", lambda a: a[1:, ::-2]),
    ("[:,1]", lambda a: a[:, 1]),
    ("[::-1,:,::2]", lambda a: a[::-1, :, ::2] if a.ndim == 3 else a[::-1, ::2]),
    (".T[::2]", lambda a: a.T[::2]),
]


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"])
def test_non_contiguous_inputs(device, rng, dtype):
    for shape in ((300, 36), (16, 8, 40)):
        a, b = make(rng, dtype, shape), make(rng, dtype, shape)
        x, y = on(device, a), on(device, b)
        for vname, v in VIEWS:
            va, vb, vx, vy = v(a), v(b), v(x), v(y)
            assert vx.shape == va.shape
            what = f"{dtype}{shape}{vname}"
            agree(lambda: va + vb, lambda: vx + vy, device, f"view + view {what}")
            agree(lambda: va * np.ascontiguousarray(vb), lambda: vx * on(device, np.ascontiguousarray(vb)),
                  device, f"view * contiguous {what}")
            agree(lambda: va == vb[::-1], lambda: vx == vy[::-1], device, f"view == reversed view {what}")
            agree(lambda: -va, lambda: -vx, device, f"-view {what}")
            agree(lambda: np.sqrt(va), lambda: ol.sqrt(vx), device, f"sqrt(view) {what}", "math")
            agree(lambda: va.T - 1, lambda: vx.T - 1, device, f"view.T - 1 {what}")
            agree(lambda: np.where(va > vb, va, vb), lambda: ol.where(vx > vy, vx, vy), device, f"where {what}")
    # the views leave their bases as they were
    check_result(x, np.asarray(a), device, "base after the operations")


# ============================================================================
# Empty arrays


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_empty_arrays(device, dtype):
    for s1, s2 in [((0,), (0,)), ((0,), ()), ((3, 0), (3, 0)), ((3, 0), (3, 1)), ((3, 0), (0,)),
                   ((2, 0, 4), (4,))]:
        a, b = np.zeros(s1, dtype), np.ones(s2, dtype)
        x, y = on(device, a), on(device, b)
        for op in (operator.add, operator.floordiv, operator.lt, operator.and_):
            agree(lambda: op(a, b), lambda: op(x, y), device, f"{op.__name__}{s1}{s2} {dtype}")
        agree(lambda: a + 1, lambda: x + 1, device, f"{s1} + 1")
        for name in ("negative", "sqrt", "isnan", "floor"):
            agree(lambda: getattr(np, name)(a), lambda: getattr(ol, name)(x), device, f"{name}{s1}")
        agree(lambda: np.where(a, a, b), lambda: ol.where(x, x, y), device, f"where{s1}{s2}")
        agree(lambda: np.clip(a, 0, 1), lambda: ol.clip(x, 0, 1), device, f"clip{s1}")
        check_result(x.astype("float32"), a.astype("float32"), device, f"astype{s1}")
        check_result(x.copy(), a.copy(), device, f"copy{s1}")
        inplace_agree(device, a, b, operator.iadd, f"x{s1} += y{s2}")
        inplace_agree(device, a, 1, operator.iadd, f"x{s1} += 1", b_is_array=False)


# ============================================================================
# In-place forms

INPLACE = [
    ("+=", operator.iadd, "any"), ("-=", operator.isub, "any"), ("*=", operator.imul, "any"),
    ("/=", operator.itruediv, "divisor"), ("//=", operator.ifloordiv, "divisor"), ("%=", operator.imod, "divisor"),
    ("**=", operator.ipow, "exponent"), ("&=", operator.iand, "any"), ("|=", operator.ior, "any"),
    ("^=", operator.ixor, "any"), ("<<=", operator.ilshift, "shift"), (">>=", operator.irshift, "shift"),
]


def inplace_agree(device, a, b, op, what, tol="exact", b_is_array=True):
    """x op= y on an offload array and on a NumPy copy: the same exception
    class (x unchanged), or x is the same object with NumPy's new values."""
    want = np.array(a)
    np_error = None
    with np.errstate(all="ignore"):
        try:
            op(want, b)
        except Exception as e:  # noqa: BLE001
            np_error = e
    x = on(device, a)
    y = on(device, b) if b_is_array else b
    before = x
    try:
        r = op(x, y)
    except Exception as e:  # noqa: BLE001
        if np_error is None or not isinstance(e, type(np_error)):
            pytest.fail(f"{what}: offload raised {type(e).__name__}: {e}; NumPy "
                        + (f"raised {type(np_error).__name__}: {np_error}" if np_error else "did not"), pytrace=False)
        check_result(x, np.asarray(a), device, f"{what}: the array after the refused operation")
        return
    if np_error is not None:
        pytest.fail(f"{what}: NumPy raised {type(np_error).__name__}: {np_error}; offload did not", pytrace=False)
    assert r is before, f"{what}: an in-place operator returned another object"
    check_result(r, want, device, what, tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace_same_dtype(device, rng, dtype):
    for name, op, role in INPLACE:
        a, b = make(rng, dtype, (16, 20)), make(rng, dtype, (16, 20), role)
        tol = "math" if name == "**=" else "exact"
        inplace_agree(device, a, b, op, f"x {name} y ({dtype})", tol)
        inplace_agree(device, a, b[0], op, f"x {name} row ({dtype})", tol)
    for name, op, scalar in [("+=", operator.iadd, 3), ("*=", operator.imul, 2), ("+=", operator.iadd, 1.5),
                             ("-=", operator.isub, True), ("//=", operator.ifloordiv, 0),
                             ("%=", operator.imod, 0), ("**=", operator.ipow, 2), ("<<=", operator.ilshift, 1),
                             ("|=", operator.ior, 6), ("+=", operator.iadd, 300), ("/=", operator.itruediv, 2),
                             ("+=", operator.iadd, np.float64(1))]:
        a = make(rng, dtype, N)
        inplace_agree(device, a, scalar, op, f"x {name} {scalar!r} ({dtype})", b_is_array=False)


MIXED_INPLACE = [
    ("int8", "int16"), ("int16", "int8"), ("uint8", "int8"), ("int32", "uint32"), ("float32", "float64"),
    ("float64", "int32"), ("int32", "float32"), ("bool", "int8"), ("int8", "bool"), ("uint64", "int64"),
    ("float32", "uint8"),
]


@pytest.mark.parametrize("xdt, ydt", MIXED_INPLACE, ids=[f"{a}-{b}" for a, b in MIXED_INPLACE])
def test_inplace_mixed_dtypes_follow_same_kind(device, rng, xdt, ydt):
    for name, op, role in INPLACE:
        a, b = make(rng, xdt, N), make(rng, ydt, N, role)
        inplace_agree(device, a, b, op, f"{xdt} {name} {ydt}", "math" if name == "**=" else "exact")


def test_inplace_same_kind_error_is_numpys(device):
    x = on(device, np.arange(5, dtype="int32"))
    with pytest.raises(np._core._exceptions.UFuncTypeError) as info:
        x += 1.5
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError):
        x /= 2
    with pytest.raises(TypeError):
        x += on(device, np.ones(5, "float32"))
    check_result(x, np.arange(5, dtype="int32"), device, "x after the refused operations")


@np.errstate(all="ignore")
def test_inplace_broadcasting_and_views(device, rng):
    a = make(rng, "float32", (16, 20))
    x = on(device, a)
    want = a.copy()
    x += on(device, a[0])  # row into the whole array
    want += a[0]
    check_result(x, want, device, "x += row")
    x *= on(device, a[:, :1])
    want *= a[:, :1]
    check_result(x, want, device, "x *= column")
    with pytest.raises(ValueError):
        row = on(device, a[0])
        row += x  # the result would not fit the output
    # in place on views writes through to the base
    v = x[::2, ::-3]
    v += 100
    want[::2, ::-3] += 100
    check_result(x, want, device, "base after view += 100")
    b = make(rng, "float32", (20, 16))
    t = x.T
    t -= on(device, b)
    want.T[...] -= b
    check_result(x, want, device, "base after x.T -= y")


@pytest.mark.parametrize("dtype", ["int32", "float64", "uint8"])
def test_inplace_overlapping_operands(device, rng, dtype):
    """x[1:] += x[:-1] reads x before writing it, as NumPy does."""
    cases = [
        ("x[1:] += x[:-1]", lambda x: x[1:].__iadd__(x[:-1])),
        ("x[:-1] += x[1:]", lambda x: x[:-1].__iadd__(x[1:])),
        ("x[::-1] *= x", lambda x: x[::-1].__imul__(x)),
        ("x += x", lambda x: x.__iadd__(x)),
        ("x[::2] -= x[1::2]", lambda x: x[::2].__isub__(x[1::2])),
        ("x[2:] ^= x[:-2]", lambda x: x[2:].__ixor__(x[:-2]) if np.dtype(dtype).kind != "f" else None),
        ("x[1:] += x[:-1] * 2", lambda x: x[1:].__iadd__(x[:-1] * 2)),
    ]
    for name, f in cases:
        a = make(rng, dtype, 2 * N, "math")
        want = a.copy()
        with np.errstate(all="ignore"):
            f(want)
        x = on(device, a)
        f(x)
        check_result(x, want, device, name)
    a = make(rng, dtype, (16, 16), "math")  # transposed overlap in 2-D
    want = a.copy()
    want += want.T
    x = on(device, a)
    x += x.T
    check_result(x, want, device, "x += x.T")


# ============================================================================
# where, clip


def test_where(device, rng):
    n = N
    for cdt in ("bool", "int8", "float32"):  # the condition is truth-tested (NaN is true)
        c = make(rng, cdt, n)
        cx = on(device, c)
        for xdt, ydt in [("float32", "float32"), ("int8", "uint8"), ("int64", "uint64"), ("bool", "int16"),
                         ("float32", "float64"), ("bool", "bool")]:
            a, b = make(rng, xdt, n), make(rng, ydt, n)
            x, y = on(device, a), on(device, b)
            agree(lambda: np.where(c, a, b), lambda: ol.where(cx, x, y), device, f"where({cdt}, {xdt}, {ydt})")
    c = make(rng, "bool", n)
    cx = on(device, c)
    for dtype in DTYPES:
        a, b = make(rng, dtype, n), make(rng, dtype, n)
        x, y = on(device, a), on(device, b)
        agree(lambda: np.where(c, a, b), lambda: ol.where(cx, x, y), device, f"where(bool, {dtype}, {dtype})")
        agree(lambda: np.where(c, 1, a), lambda: ol.where(cx, 1, x), device, f"where(bool, 1, {dtype})")
    a = make(rng, "float32", n)
    x = on(device, a)
    i = make(rng, "int16", n)
    ix = on(device, i)
    scalar_cases = [
        ("where(c, x, 0)", lambda m, c, x, i: m.where(c, x, 0)),
        ("where(c, 1.5, x)", lambda m, c, x, i: m.where(c, 1.5, x)),
        ("where(c, i, 2.5)", lambda m, c, x, i: m.where(c, i, 2.5)),
        ("where(c, i, -3)", lambda m, c, x, i: m.where(c, i, -3)),
        ("where(c, 1, 2.5)", lambda m, c, x, i: m.where(c, 1, 2.5)),
        ("where(c, 1, 2)", lambda m, c, x, i: m.where(c, 1, 2)),
        ("where(c, True, False)", lambda m, c, x, i: m.where(c, True, False)),
        ("where(c, np.float64(1), x)", lambda m, c, x, i: m.where(c, np.float64(1), x)),
        ("where(c, i, np.int8(3))", lambda m, c, x, i: m.where(c, i, np.int8(3))),
        ("where(True, x, i)", lambda m, c, x, i: m.where(True, x, i)),
        ("where(False, x, 7)", lambda m, c, x, i: m.where(False, x, 7)),
        ("where(x > 0, x, -x)", lambda m, c, x, i: m.where(x > 0, x, -x)),
        ("where(c, x, i)", lambda m, c, x, i: m.where(c, x, i)),
    ]
    for name, f in scalar_cases:
        agree(lambda: f(np, c, a, i), lambda: f(ol, cx, x, ix), device, name)
    with pytest.raises(TypeError):
        ol.where(cx)
    with pytest.raises(TypeError):
        ol.where(True, 1, 2)  # no offload array


@pytest.mark.parametrize("dtype", DTYPES)
def test_clip(device, rng, dtype):
    a = make(rng, dtype, N)
    x = on(device, a)
    lo, hi = make(rng, dtype, N), make(rng, dtype, N)
    lx, hx = on(device, lo), on(device, hi)
    cases = [
        ("clip(x, 2, 9)", lambda m, x, lo, hi: m.clip(x, 2, 9)),
        ("clip(x, -5, 5)", lambda m, x, lo, hi: m.clip(x, -5, 5)),
        ("clip(x, None, 3)", lambda m, x, lo, hi: m.clip(x, None, 3)),
        ("clip(x, 1, None)", lambda m, x, lo, hi: m.clip(x, 1, None)),
        ("clip(x, None, None)", lambda m, x, lo, hi: m.clip(x, None, None)),
        ("clip(x, lo, hi)", lambda m, x, lo, hi: m.clip(x, lo, hi)),
        ("clip(x, lo, None)", lambda m, x, lo, hi: m.clip(x, lo, None)),
        ("clip(x, None, hi[:1])", lambda m, x, lo, hi: m.clip(x, None, hi[:1])),
        ("clip(x, 0.5, 2.5)", lambda m, x, lo, hi: m.clip(x, 0.5, 2.5)),
        ("clip(x, -1000, 1000)", lambda m, x, lo, hi: m.clip(x, -1000, 1000)),
        ("clip(x, -2**70, 2**70)", lambda m, x, lo, hi: m.clip(x, -(2**70), 2**70)),
        ("clip(x, 1000, 2000)", lambda m, x, lo, hi: m.clip(x, 1000, 2000)),
        ("clip(x, np.int8(1), np.float32(3))", lambda m, x, lo, hi: m.clip(x, np.int8(1), np.float32(3))),
        ("clip(x, False, True)", lambda m, x, lo, hi: m.clip(x, False, True)),
        ("clip(x, a_min=3, a_max=None)", lambda m, x, lo, hi: m.clip(x, a_min=3, a_max=None)),
    ]
    if np.dtype(dtype).kind == "f":
        cases.append(("clip(x, nan, 1)", lambda m, x, lo, hi: m.clip(x, np.nan, 1.0)))
    for name, f in cases:
        agree(lambda: f(np, a, lo, hi), lambda: f(ol, x, lx, hx), device, f"{name} of {dtype}")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_clip_complex(device, rng, dtype):
    """Complex values clip in NumPy's lexicographic order (real parts first), both bounds
    applied: the maximum with lo, then the minimum with hi."""
    def cplx():
        return (rng.integers(-3, 4, N) + 1j * rng.integers(-3, 4, N)).astype(dtype)
    a, lo, hi = cplx(), cplx(), cplx()
    x, lx, hx = on(device, a), on(device, lo), on(device, hi)
    for name, f in [("clip(z, lo, hi)", lambda m, x, lo, hi: m.clip(x, lo, hi)),
                    ("clip(z, -1+1j, 2-1j)", lambda m, x, lo, hi: m.clip(x, -1 + 1j, 2 - 1j)),
                    ("clip(z, lo, None)", lambda m, x, lo, hi: m.clip(x, lo, None)),
                    ("clip(z, None, hi)", lambda m, x, lo, hi: m.clip(x, None, hi))]:
        agree(lambda: f(np, a, lo, hi), lambda: f(ol, x, lx, hx), device, f"{name} of {dtype}")


# ============================================================================
# astype, reshape, copy


def astype_source(rng, src, dst, n):
    """Values whose conversion NumPy defines: no NaN, inf or out-of-range
    floats into integers (C leaves those undefined)."""
    s, d = np.dtype(src), np.dtype(dst)
    if s.kind == "f" and d.kind in "iu":
        lo = 0.0 if d.kind == "u" else -100.0
        return rng.uniform(lo, 100.0, n).astype(s)
    return make(rng, src, n)


@pytest.mark.parametrize("src", DTYPES)
def test_astype_every_dtype(device, rng, src):
    for dst in DTYPES:
        a = astype_source(rng, src, dst, 2 * N)
        x = on(device, a)
        with np.errstate(all="ignore"):
            want = a.astype(dst)
            want_strided = a[::-2].astype(dst)
        check_result(x.astype(dst), want, device, f"{src}.astype({dst})")
        check_result(ol.astype(x, np.dtype(dst).type), want, device, f"offload.astype({src}, np.{dst})")
        check_result(x[::-2].astype(dst), want_strided, device, f"{src}[::-2].astype({dst})")
    r = x.astype(src)
    assert r is not x, "astype copies by default"
    check_result(r, a, device, f"{src}.astype({src})")
    assert x.astype(src, copy=False) is x
    with pytest.raises(TypeError):
        x.astype("float16")


def test_reshape(device, rng):
    a = make(rng, "float64", (4, 16, 20))
    x = on(device, a)
    for shape in [(1280,), (-1,), (64, 20), (5, -1, 2), (1, 1280, 1), (4, 320), (2, 2, 2, 2, 80)]:
        check_result(x.reshape(shape), a.reshape(shape), device, f"reshape{shape}")
        check_result(ol.reshape(x, shape), a.reshape(shape), device, f"offload.reshape(x, {shape})")
    check_result(x.reshape(16, 80), a.reshape(16, 80), device, "reshape(16, 80)")
    # a contiguous reshape is a view: it sees later changes to x
    v = x.reshape(1280)
    x += 1
    check_result(v, (a + 1).reshape(1280), device, "reshape view after x += 1")
    a = a + 1
    for name, view in [("x.T", lambda t: t.T), ("x[::2]", lambda t: t[::2]), ("x[:, ::-1]", lambda t: t[:, ::-1]),
                       ("x[1, :, ::2]", lambda t: t[1, :, ::2])]:
        va, vx = view(a), view(x)
        check_result(vx.reshape(-1), va.reshape(-1), device, f"{name}.reshape(-1)")
        check_result(ol.reshape(vx, (va.size, 1)), va.reshape(va.size, 1), device, f"offload.reshape({name})")
    for bad in [(7,), (5, -1, 7), (-1, -1)]:
        with pytest.raises(ValueError):
            x.reshape(bad)
        with pytest.raises(ValueError):
            a.reshape(bad)


def c_strides(shape, itemsize):
    strides, s = [], itemsize
    for n in reversed(shape):
        strides.append(s)
        s *= max(n, 1)
    return tuple(reversed(strides))


@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_copy_of_strided_views(device, rng, dtype):
    for sid, base, view in SLICES:
        a = make(rng, dtype, base.shape)
        x = on(device, a)
        va, vx = view(a), view(x)
        for how, c in [("x.copy()", vx.copy()), ("offload.copy(x)", ol.copy(vx))]:
            check_result(c, np.ascontiguousarray(va), device, f"{sid} {how}")
            if c.ndim and c.size:
                assert c.strides == c_strides(c.shape, c.itemsize), f"{sid} {how}: strides {c.strides}"
    x = on(device, make(rng, dtype, (6, 7)))
    c = x[::-2].copy()
    want = c.asnumpy().copy()
    x[...] = 1  # the copy is independent of x
    check_result(c, want, device, "copy after changing its source")


# ============================================================================
# Errors: two devices, NumPy arrays and other operands


def test_operands_on_two_devices_raise_placement_error():
    r = run_python(
        """
        import numpy as np, offload
        x = offload.asarray(np.arange(6.0), device='cpu:0')
        y = offload.asarray(np.arange(6.0), device='cpu:1')
        c = offload.asarray(np.arange(6) % 2 == 0, device='cpu:1')
        cases = {
            'x + y': lambda: x + y, 'y - x': lambda: y - x, 'x < y': lambda: x < y,
            'x ** y': lambda: x ** y, 'offload.add(x, y)': lambda: offload.add(x, y),
            'offload.arctan2(y, x)': lambda: offload.arctan2(y, x),
            'offload.where(c, x, 0)': lambda: offload.where(c, x, 0),
            'offload.where(c, y, x)': lambda: offload.where(c, y, x),
            'offload.clip(x, y, 3)': lambda: offload.clip(x, y, 3),
            'offload.maximum(x, y[:1])': lambda: offload.maximum(x, y[:1]),
        }
        def iadd():
            global x
            x += y
        cases['x += y'] = iadd
        result['errors'] = {}
        for name, f in cases.items():
            try:
                f()
                result['errors'][name] = None
            except Exception as e:
                result['errors'][name] = [type(e).__name__, str(e), isinstance(e, offload.ExecutionPlacementError)]
        result['x'] = offload.asnumpy(x).tolist()
        z = y * 2 + 1  # one device is fine, and the result lives there
        result['zdev'] = z.device.filter_string
        result['z'] = offload.asnumpy(z).tolist()
        result['sdev'] = offload.sqrt(y).device.filter_string
        """,
        env=TWO_CPUS_ENV,
    )
    for name, err in r["errors"].items():
        assert err is not None, f"{name}: operands on two devices were combined"
        ename, msg, is_epe = err
        assert is_epe, f"{name}: {ename}: {msg}"
        assert "opencl:cpu:0" in msg and "opencl:cpu:1" in msg, f"{name}: the message should name both: {msg}"
    assert r["x"] == list(range(6)), "x changed by a refused x += y"
    assert r["zdev"] == "opencl:cpu:1" and r["sdev"] == "opencl:cpu:1"
    assert r["z"] == [2.0 * i + 1 for i in range(6)]


def test_numpy_arrays_are_refused_with_a_hint(device):
    x = on(device, np.arange(4, dtype="float32"))
    n = np.ones(4, "float32")

    def iadd():
        y = x
        y += n

    cases = {
        "x + np_arr": lambda: x + n,
        "np_arr + x": lambda: n + x,
        "x * np_arr": lambda: x * n,
        "np_arr < x": lambda: n < x,
        "x == np_arr": lambda: x == n,
        "x += np_arr": iadd,
        "offload.add(x, np_arr)": lambda: ol.add(x, n),
        "offload.add(np_arr, x)": lambda: ol.add(n, x),
        "offload.where(x > 0, x, np_arr)": lambda: ol.where(x > 0, x, n),
        "offload.clip(x, np_arr, 3)": lambda: ol.clip(x, n, 3),
        "offload.sqrt(np_arr)": lambda: ol.sqrt(n),
        "offload.maximum(x, np_arr[0:1])": lambda: ol.maximum(x, n[0:1]),
    }
    for name, f in cases.items():
        with pytest.raises(TypeError) as info:
            f()
        assert "offload.asarray" in str(info.value), f"{name}: the message should say to call offload.asarray: {info.value}"
    check_result(x, np.arange(4, dtype="float32"), device, "x after the refused operations")
    # NumPy's own ufuncs refuse a NumPy array beside an offload one (no silent copy)
    for name, f in {"np.add(np_arr, x)": lambda: np.add(n, x),
                    "np_arr += x": lambda: n.__iadd__(x)}.items():
        with pytest.raises(TypeError):
            f()
    assert np.array_equal(n, np.ones(4, "float32"))


def test_other_operands_are_type_errors(device):
    x = on(device, np.arange(3, dtype="int32"))
    for name, f in {
        "x + [1, 2, 3]": lambda: x + [1, 2, 3],
        "[1, 2, 3] + x": lambda: [1, 2, 3] + x,
        "x * (1, 2, 3)": lambda: x * (1, 2, 3),
        "x == [0, 1, 2]": lambda: x == [0, 1, 2],
        "offload.add(x, [1])": lambda: ol.add(x, [1]),
        "x + 'a'": lambda: x + "a",
        "x + None": lambda: x + None,
        "x ** object()": lambda: x ** object(),
        "pow(x, 2, 5)": lambda: pow(x, 2, 5),
        "offload.add(1, 2)": lambda: ol.add(1, 2),
        "offload.add(x)": lambda: ol.add(x),
        "offload.sqrt(x, x)": lambda: ol.sqrt(x, x),
        "offload.copy(np_arr)": lambda: ol.copy(np.ones(3)),
        "offload.reshape([1, 2], 2)": lambda: ol.reshape([1, 2], 2),
    }.items():
        with pytest.raises(TypeError):
            f()
    with pytest.raises(TypeError) as info:
        x + [1, 2, 3]
    assert "offload.asarray" in str(info.value)


# ============================================================================
# The element-wise kernels are kernels like any other


def test_elementwise_kernels_in_kernel_table(device, rng):
    a = make(rng, "int16", N)
    x = on(device, a)
    check_result(x * x + 1, a * a + np.int16(1), device, "x * x + 1")
    check_result(ol.tanh(x), np.tanh(a), device, "tanh(x)", "math")
    # elementwise.py's kernel, one row per loop: its device function and the operands' loop
    # dtypes (None: a scalar)
    rows = [k for k in ol.kernel_table() if k["device"] == device.filter_string and k["name"] == "elementwise"]
    sigs = {k["signature"] for k in rows}
    for loop in ("F=multiply, T=(int16, int16)", "F=add, T=(int16, None)", "F=tanh, T=(float32,)"):
        assert any(loop in s for s in sigs), f"no elementwise [{loop}] in offload.kernel_table(): {sorted(sigs)}"
    mul = [k for k in rows if "F=multiply, T=(int16, int16)" in k["signature"]]
    assert sum(k["launches"] for k in mul) >= 1
