"""The array API 2024.12 element-wise functions (issue 22) on offload arrays,
checked against NumPy 2 for the same inputs:

- every function of the standard's element-wise list under its array API
  name, and NumPy's names for the same operations (arccos ... arctanh, power,
  left_shift, invert, absolute, bitwise_not, conjugate, true_divide, mod) and
  NumPy's extras (fabs rint exp2 cbrt deg2rad rad2deg degrees radians fmax
  fmin fmod heaviside logaddexp2 float_power around), for every dtype offload
  arrays hold: NumPy's result dtype and values (exact for integers and bools,
  within a few ulps for transcendental functions), or the same exception
  class -- a TypeError where NumPy would compute in float16;
- the special values: NaN, +-inf, -0.0 (sign, signbit, copysign, nextafter,
  logaddexp, hypot, heaviside, fmax/fmin, round halves to even), integer
  edge values (minimum and maximum of each type);
- Python scalars (weak, NEP 50) and NumPy scalars as operands, broadcasting,
  0-d, empty and non-contiguous inputs;
- clip's array API form clip(x, /, min=None, max=None) and NumPy's a_min /
  a_max; round's decimals; real, imag, conj of real arrays;
- the errors: NumPy arrays mixed in (TypeError), arrays on two devices
  (ExecutionPlacementError), wrong argument counts;
- the same functions inside user kernels (math.* and numpy.* builtins).

Complex dtypes do not exist yet in offload, so no complex cases.
Runs on every device offload sees; inputs are fresh random data each run
(a failing test prints its seed: OFFLOAD_TEST_SEED=<n> reruns it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    TWO_CPUS_ENV,
    device_fixture,
    load_offload,
    poisoned,
    rng,
    run_python,
)

ol = load_offload()
device = device_fixture(ol)

HELD = {np.dtype(d) for d in DTYPES}
FLOATS = ["float32", "float64"]
N = 300  # one local-size class for every 1-D launch (see test_array_ops.py)

# The standard's element-wise functions (2024.12), by arity.
API_UNARY = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "conj",
    "cos", "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan", "log", "log1p",
    "log2", "log10", "logical_not", "negative", "positive", "real", "reciprocal", "round", "sign",
    "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
]
API_BINARY = [
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal",
    "hypot", "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract",
]
NUMPY_UNARY = [
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "absolute", "bitwise_not",
    "invert", "conjugate", "fabs", "rint", "exp2", "cbrt", "deg2rad", "rad2deg", "degrees",
    "radians", "around",
]
NUMPY_BINARY = [
    "arctan2", "left_shift", "right_shift", "power", "true_divide", "mod", "fmax", "fmin", "fmod",
    "heaviside", "logaddexp2", "float_power",
]
# only accurate to a few ulps (the others are exact IEEE operations)
INEXACT = {
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1", "log",
    "log1p", "log2", "log10", "sin", "sinh", "tan", "tanh", "atan2", "hypot", "logaddexp", "pow",
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "exp2", "cbrt", "deg2rad",
    "rad2deg", "degrees", "radians", "arctan2", "power", "logaddexp2", "float_power",
}
# what the operand of a function needs: small exponents and shift counts
EXPONENT = {"pow", "power", "float_power"}
SHIFT = {"bitwise_left_shift", "bitwise_right_shift", "left_shift", "right_shift"}


def ulps(dtype, n=4):
    return n * float(np.finfo(dtype).eps)


def make(rng, dtype, shape, role="any"):
    """Random values of dtype: integers over the whole range and small ones
    (min and max included), floats of several magnitudes with NaN, +-inf, +-0,
    +-1 and halves; role "exponent" / "shift" keeps integers small and >= 0."""
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        lo, hi = int(np.iinfo(dt).min), int(np.iinfo(dt).max)
        if role in ("exponent", "shift"):
            return rng.integers(0, min(8 * dt.itemsize + 2, hi), n, endpoint=True).astype(dt).reshape(shape)
        full = rng.integers(lo, hi, n, endpoint=True, dtype=dt)
        small = rng.integers(max(lo, -20), min(hi, 20), n, endpoint=True)
        a = np.where(rng.random(n) < 0.5, full, small).astype(dt)
        if n >= 2:
            a[0], a[1] = lo, hi
        return a.reshape(shape)
    if role == "exponent":
        a = rng.uniform(-3, 3, n)
    else:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        whole = rng.random(n) < 0.2
        a[whole] = rng.integers(-20, 21, int(whole.sum())) / 2  # halves: round's ties
    a = a.astype(dt)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5]
    k = min(n // 4, len(special))
    if k:
        a[rng.choice(n, k, replace=False)] = np.array(special[:k], dt)
    return a.reshape(shape)


# NumPy's maximum, minimum, fmax, fmin and clip pick either zero of a pair
# +0.0 / -0.0 (its SIMD loops differ from its scalar ones; the standard leaves it open)
ANY_ZERO = ("maximum", "minimum", "fmax", "fmin", "clip")


def check_result(got, want, device, what, tol=0):
    assert isinstance(got, ol.ndarray), f"{what}: offload returned {type(got).__name__}"
    assert got.device == device, f"{what}: the result lives on {got.device}, the operands on {device}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy's is {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy's is {want.shape}"
    g = got.asnumpy()
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(g), np.isnan(want), err_msg=f"{what}: NaN positions differ")
        # inexact: a few ulps of the result, or of 1 where a sum cancels (logaddexp near 0)
        rtol, atol = (ulps(want.dtype, 4), ulps(want.dtype, 8)) if tol else (ulps(want.dtype, 1), 0)
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
        zeros = (want == 0) & (g == 0) & (not what.startswith(ANY_ZERO))
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(want[zeros]), err_msg=f"{what}: signs of zeros")
    else:
        np.testing.assert_array_equal(g, want, err_msg=what, strict=True)


def agree(np_call, ol_call, device, what, tol=0):
    """NumPy's and offload's forms of one computation: the same exception
    class (TypeError where NumPy's result is float16), or the same result."""
    np_error = want = None
    with np.errstate(all="ignore"):
        try:
            want = np.asarray(np_call())
        except Exception as e:  # noqa: BLE001
            np_error = e
    if np_error is None and want.dtype not in HELD:
        np_error = TypeError(f"NumPy's result is {want.dtype}")
    try:
        got = ol_call()
    except Exception as e:  # noqa: BLE001
        if np_error is not None and isinstance(e, type(np_error)):
            return None
        pytest.fail(f"{what}: offload raised {type(e).__name__}: {e} (NumPy: {np_error!r})", pytrace=False)
    if np_error is not None:
        pytest.fail(f"{what}: NumPy raised {np_error!r}, offload returned {got!r}", pytrace=False)
    check_result(got, want, device, what, tol)
    return got


def on(device, a):
    return ol.asarray(a, device=device)


def npf(name):
    """NumPy's function of that name (NumPy 2 has the array API's names)."""
    return getattr(np, name)


# ============================================================================
# The namespace


def test_every_elementwise_function_is_in_the_namespace():
    for name in API_UNARY + API_BINARY + NUMPY_UNARY + NUMPY_BINARY + ["clip"]:
        f = getattr(ol, name, None)
        assert callable(f), f"offload.{name} is missing"
        signed = getattr(f, "__text_signature__", None) or (f.__doc__ or "").startswith(name + "(")
        assert f.__doc__ and signed, f"offload.{name} has no signature docstring"


# ============================================================================
# Every function, every dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_functions(device, rng, dtype):
    for name in API_UNARY + NUMPY_UNARY:
        a = make(rng, dtype, N)
        if name == "reciprocal" and np.dtype(dtype).kind in "iub":  # NumPy's 1/0 converts inf: undefined
            a = np.where(a == 0, np.ones_like(a), a)
        x = on(device, a)
        agree(lambda: npf(name)(a), lambda: getattr(ol, name)(x), device, f"{name}({dtype})", name in INEXACT)


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_functions(device, rng, dtype):
    for name in API_BINARY + NUMPY_BINARY:
        role = "exponent" if name in EXPONENT else "shift" if name in SHIFT else "any"
        a, b = make(rng, dtype, N), make(rng, dtype, N, role)
        x, y = on(device, a), on(device, b)
        agree(lambda: npf(name)(a, b), lambda: getattr(ol, name)(x, y), device, f"{name}({dtype})", name in INEXACT)


MIXED = [("int8", "uint8"), ("int16", "float32"), ("bool", "float64"), ("uint32", "int32"), ("int64", "uint64"),
         ("float32", "float64"), ("bool", "int8"), ("uint8", "float32")]


@pytest.mark.parametrize("dt1,dt2", MIXED)
def test_binary_functions_mixed_dtypes(device, rng, dt1, dt2):
    names = ["atan2", "copysign", "hypot", "logaddexp", "logical_and", "logical_or", "logical_xor", "nextafter",
             "fmax", "fmin", "fmod", "heaviside", "bitwise_left_shift"]
    for name in names:
        a = make(rng, dt1, N)
        b = make(rng, dt2, N, "shift" if name in SHIFT else "any")
        x, y = on(device, a), on(device, b)
        agree(lambda: npf(name)(a, b), lambda: getattr(ol, name)(x, y), device, f"{name}({dt1}, {dt2})",
              name in INEXACT)


# ============================================================================
# Special values and integer edges


SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5,
                    1e-300, -1e-300, 1e300, 5e-324, -5e-324, 0.49999999999999994])


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values(device, dtype):
    with np.errstate(all="ignore"):
        a = SPECIAL.astype(dtype)
    x = on(device, a)
    for name in ["sign", "signbit", "round", "trunc", "ceil", "floor", "abs", "negative", "positive", "square",
                 "reciprocal", "isinf", "isnan", "isfinite", "sqrt", "expm1", "log1p", "log2", "log10", "sinh",
                 "cosh", "tanh", "asinh", "atanh", "acosh", "logical_not", "rint", "cbrt", "exp2"]:
        agree(lambda: npf(name)(a), lambda: getattr(ol, name)(x), device, f"{name} of {a}", name in INEXACT)
    # every pair of special values
    aa, bb = np.meshgrid(a, a)
    aa, bb = aa.ravel(), bb.ravel()
    xx, yy = on(device, aa), on(device, bb)
    for name in ["copysign", "nextafter", "hypot", "logaddexp", "logaddexp2", "maximum", "minimum", "fmax", "fmin",
                 "heaviside", "atan2", "logical_and", "logical_or", "logical_xor", "equal", "less", "fmod",
                 "remainder", "floor_divide", "divide", "pow"]:
        agree(lambda: npf(name)(aa, bb), lambda: getattr(ol, name)(xx, yy), device, f"{name} of specials",
              name in INEXACT)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if np.dtype(d).kind in "iu"])
def test_integer_edges(device, dtype):
    info = np.iinfo(dtype)
    vals = sorted({int(info.min), int(info.min) + 1, -2, -1, 0, 1, 2, 3, int(info.max) - 1, int(info.max)}
                  - (set() if info.min < 0 else {-2, -1}))
    a = np.array(vals, dtype)
    x = on(device, a)
    for name in ["sign", "abs", "square", "negative", "bitwise_invert", "logical_not", "round", "trunc", "floor",
                 "ceil", "isinf", "isnan", "isfinite", "signbit", "conj", "positive"]:
        agree(lambda: npf(name)(a), lambda: getattr(ol, name)(x), device, f"{name} of {vals}")
    nz = a[a != 0]
    agree(lambda: np.reciprocal(nz), lambda: ol.reciprocal(on(device, nz)), device, f"reciprocal of {nz}")
    aa, bb = (m.ravel() for m in np.meshgrid(a, a))
    xx, yy = on(device, aa), on(device, bb)
    for name in ["fmod", "remainder", "floor_divide", "logical_and", "logical_xor", "fmax", "fmin", "maximum",
                 "bitwise_xor", "equal", "greater_equal"]:
        agree(lambda: npf(name)(aa, bb), lambda: getattr(ol, name)(xx, yy), device, f"{name} of integer edges")


# ============================================================================
# Scalars, shapes, layouts

SCALAR_CASES = [
    ("copysign(x, -1.0)", lambda m, x: m.copysign(x, -1.0)),
    ("copysign(2, x)", lambda m, x: m.copysign(2, x)),
    ("hypot(x, 3)", lambda m, x: m.hypot(x, 3)),
    ("logaddexp(x, 0.0)", lambda m, x: m.logaddexp(x, 0.0)),
    ("nextafter(x, inf)", lambda m, x: m.nextafter(x, np.inf)),
    ("nextafter(x, np.float64(0))", lambda m, x: m.nextafter(x, np.float64(0))),
    ("logical_and(x, True)", lambda m, x: m.logical_and(x, True)),
    ("logical_or(0, x)", lambda m, x: m.logical_or(0, x)),
    ("logical_xor(x, 1.5)", lambda m, x: m.logical_xor(x, 1.5)),
    ("fmax(x, 1)", lambda m, x: m.fmax(x, 1)),
    ("heaviside(x, 0.5)", lambda m, x: m.heaviside(x, 0.5)),
    ("atan2(1.0, x)", lambda m, x: m.atan2(1.0, x)),
    ("pow(x, 2)", lambda m, x: m.pow(x, 2)),
    ("bitwise_left_shift(x, 1)", lambda m, x: m.bitwise_left_shift(x, 1)),
]


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint16", "uint64", "float32", "float64"])
def test_scalar_operands(device, rng, dtype):
    a = make(rng, dtype, N)
    x = on(device, a)
    for what, f in SCALAR_CASES:
        agree(lambda: f(np, a), lambda: f(ol, x), device, f"{what} of {dtype}", True)


def test_shapes_and_layouts(device, rng):
    a = make(rng, "float32", (20, 16))
    b = make(rng, "float32", (16,))
    x, y = on(device, a), on(device, b)
    views = [("[::2]", lambda v: v[::2]), ("[::-1, ::-3]", lambda v: v[::-1, ::-3]), (".T", lambda v: v.T),
             ("[3]", lambda v: v[3]), ("[2:3, 5:6].reshape(()) (0-d)", lambda v: v[2:3, 5:6].reshape(())), ("[:0]", lambda v: v[:0])]
    for vname, v in views:
        for name in ["sinh", "sign", "round", "signbit", "logical_not", "trunc", "reciprocal", "imag"]:
            agree(lambda: npf(name)(v(a)), lambda: getattr(ol, name)(v(x)), device, f"{name}(x{vname})", True)
    # broadcasting: a row against the matrix, a column, a 0-d array
    for name in ["copysign", "hypot", "logaddexp", "nextafter", "logical_xor", "fmin"]:
        agree(lambda: npf(name)(a, b), lambda: getattr(ol, name)(x, y), device, f"{name}(matrix, row)", True)
        agree(lambda: npf(name)(a[:, :1], b), lambda: getattr(ol, name)(x[:, :1], y), device, f"{name}(col, row)",
              True)
        z, zx = a[1:2, 1:2].reshape(()), x[1:2, 1:2].reshape(())
        agree(lambda: npf(name)(z, a[::-1]), lambda: getattr(ol, name)(zx, x[::-1]), device,
              f"{name}(0-d, matrix[::-1])", True)
    empty = on(device, np.zeros((0, 3), "float64"))
    assert ol.atanh(empty).shape == (0, 3) and ol.atanh(empty).dtype == np.float64
    with pytest.raises(ValueError, match="broadcast"):
        ol.hypot(x, on(device, np.ones(5, "float32")))


# ============================================================================
# clip, round, real / imag / conj


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint32", "float32", "float64"])
def test_clip_array_api_form(device, rng, dtype):
    a = make(rng, dtype, (20, 16))
    lo, hi = make(rng, dtype, (16,)), make(rng, dtype, (20, 1))
    x, lx, hx = on(device, a), on(device, lo), on(device, hi)
    cases = [
        ("clip(x, min=2, max=9)", lambda m, x, lo, hi: m.clip(x, min=2, max=9)),
        ("clip(x, max=3)", lambda m, x, lo, hi: m.clip(x, max=3)),
        ("clip(x, min=1)", lambda m, x, lo, hi: m.clip(x, min=1)),
        ("clip(x, min=lo, max=hi)", lambda m, x, lo, hi: m.clip(x, min=lo, max=hi)),
        ("clip(x, lo, None)", lambda m, x, lo, hi: m.clip(x, lo, None)),
        ("clip(x, None, hi)", lambda m, x, lo, hi: m.clip(x, None, hi)),
        ("clip(x, a_min=lo, a_max=5)", lambda m, x, lo, hi: m.clip(x, a_min=lo, a_max=5)),
        ("clip(x, min=None, max=None)", lambda m, x, lo, hi: m.clip(x, min=None, max=None)),
        ("clip(x.T, min=lo[:, None] (broadcast), max=7)",
         lambda m, x, lo, hi: m.clip(x.T, min=lo[:, None], max=7)),
    ]
    for what, f in cases:
        agree(lambda: f(np, a, lo, hi), lambda: f(ol, x, lx, hx), device, f"{what} of {dtype}")
    with pytest.raises(TypeError):
        ol.clip(x, 1, min=2)
    with pytest.raises(TypeError):
        ol.clip(x, a_max=1, max=2)
    with pytest.raises(TypeError):
        ol.clip(x, low=1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "uint8", "int64"])
def test_round_decimals(device, rng, dtype):
    a = make(rng, dtype, N)
    if np.dtype(dtype).kind == "f":
        a = (a * 37.0).astype(dtype)
    if dtype == "int64":  # NumPy rounds through float64: a value that rounds past 2**63 has no
        a = a // 4        # int64, and what the conversion back gives is the platform's (x86 INT_MIN)
    x = on(device, a)
    for d in [0, 1, 2, -1, -2]:
        # NumPy scales by 10**d, rounds and scales back: a float's result is within an ulp of that
        agree(lambda: np.round(a, d), lambda: ol.round(x, d), device, f"round({dtype}, {d})", True)
        agree(lambda: np.round(a, decimals=d), lambda: ol.round(x, decimals=d), device, f"round({dtype}, {d})", True)
    agree(lambda: np.around(a), lambda: ol.around(x), device, f"around({dtype})")
    with pytest.raises(TypeError, match="float16"):
        ol.round(on(device, np.array([True, False])))


@pytest.mark.parametrize("dtype", DTYPES)
def test_real_imag_conj_of_real_arrays(device, rng, dtype):
    a = make(rng, dtype, (4, 16))
    x = on(device, a)
    assert ol.real(x) is x  # as numpy.real of a real array
    for name in ["imag", "conj", "conjugate"]:
        agree(lambda: npf(name)(a[:, ::-2]), lambda: getattr(ol, name)(x[:, ::-2]), device, f"{name}({dtype})")
    c = ol.conj(x)
    c[0, 0] = a[1, 1]  # a copy, not a view
    np.testing.assert_array_equal(x.asnumpy(), a)


def test_copy_into_takes_a_scalar_and_broadcasts(device, rng):
    """imag's zeros are a scalar stored by kernel; the store broadcasts as NumPy's."""
    z = ol.imag(on(device, poisoned((5, 16), "float32")))
    np.testing.assert_array_equal(z.asnumpy(), np.zeros((5, 16), "float32"))


# ============================================================================
# Errors


def test_bad_operands(device):
    x = on(device, np.arange(4, dtype="float32"))
    with pytest.raises(TypeError, match="asarray"):
        ol.hypot(x, np.ones(4, "float32"))
    with pytest.raises(TypeError, match="asarray"):
        ol.logaddexp([1.0, 2.0], x)
    with pytest.raises(TypeError):
        ol.sinh(x, x)
    with pytest.raises(TypeError):
        ol.copysign(x)
    with pytest.raises(TypeError):
        ol.real(np.ones(3))
    with pytest.raises(TypeError, match="float16"):
        ol.cbrt(on(device, np.arange(4, dtype="int8")))
    with pytest.raises(TypeError, match="float16"):
        ol.nextafter(on(device, np.arange(4, dtype="uint8")), 1)
    with pytest.raises(TypeError):
        ol.sign(on(device, np.array([True])))  # NumPy has no bool loop


def test_operands_on_two_devices_raise_placement_error():
    r = run_python(
        """
        import numpy as np, offload
        x = offload.asarray(np.arange(6.0), device='cpu:0')
        y = offload.asarray(np.arange(6.0), device='cpu:1')
        result['errors'] = {}
        for name in ['hypot', 'copysign', 'nextafter', 'logaddexp', 'logical_and', 'atan2', 'fmax', 'pow']:
            try:
                getattr(offload, name)(x, y)
                result['errors'][name] = None
            except Exception as e:
                result['errors'][name] = [type(e).__name__, isinstance(e, offload.ExecutionPlacementError)]
        try:
            offload.clip(x, min=y)
            result['errors']['clip'] = None
        except Exception as e:
            result['errors']['clip'] = [type(e).__name__, isinstance(e, offload.ExecutionPlacementError)]
        result['dev'] = offload.sinh(y).device.filter_string
        """,
        env=TWO_CPUS_ENV,
    )
    for name, err in r["errors"].items():
        assert err is not None and err[1], f"{name}: {err}"
    assert r["dev"] == "opencl:cpu:1"


# ============================================================================
# The same functions inside user kernels


@ol.kernel
def math_builtins(item, x, y, out, flags):
    i = item.get_id(0)
    v = x[i]
    w = y[i]
    out[0, i] = math.sinh(v)
    out[1, i] = math.cosh(v)
    out[2, i] = math.asinh(v)
    out[3, i] = math.atanh(v / 16)
    out[4, i] = math.acosh(abs(v) + 1)
    out[5, i] = math.hypot(v, w)
    out[6, i] = math.copysign(v, w)
    out[7, i] = math.expm1(v / 8)
    out[8, i] = math.log2(abs(v) + 1)
    out[9, i] = math.log10(abs(v) + 1)
    out[10, i] = math.trunc(v)
    out[11, i] = np.nextafter(v, w)
    out[12, i] = math.nextafter(v, w)
    out[13, i] = np.cbrt(v)
    out[14, i] = math.cbrt(w)
    out[15, i] = np.arcsinh(w)
    out[16, i] = np.asin(v / 16)
    out[17, i] = np.rint(v)
    flags[0, i] = np.signbit(v)
    flags[1, i] = math.isfinite(w)
    flags[2, i] = np.isinf(w)
    flags[3, i] = np.signbit(w)


@pytest.mark.parametrize("dtype", FLOATS)
def test_math_builtins_in_kernels(device, rng, dtype):
    n = 256
    a = rng.uniform(-12, 12, n).astype(dtype)
    a[:6] = [0.0, -0.0, 2.5, -2.5, 1e-3, 8.0]
    b = rng.uniform(-12, 12, n).astype(dtype)
    b[:6] = [np.inf, -np.inf, np.nan, -0.0, 0.0, -np.nan]
    out = on(device, poisoned((18, n), dtype))
    flags = on(device, np.zeros((4, n), bool))
    math_builtins[ol.Range(n)](on(device, a), on(device, b), out, flags)
    with np.errstate(all="ignore"):
        want = [np.sinh(a), np.cosh(a), np.arcsinh(a), np.arctanh(a / 16), np.arccosh(abs(a) + 1), np.hypot(a, b),
                np.copysign(a, b), np.expm1(a / 8), np.log2(abs(a) + 1), np.log10(abs(a) + 1), np.trunc(a),
                np.nextafter(a, b), np.nextafter(a, b), np.cbrt(a), np.cbrt(b), np.arcsinh(b), np.arcsin(a / 16),
                np.rint(a)]
    got = out.asnumpy()
    assert got.dtype == np.dtype(dtype), "math.* of a float32 stays float32"
    for k, w in enumerate(want):
        w = w.astype(dtype)
        np.testing.assert_allclose(got[k], w, rtol=ulps(dtype), atol=0, equal_nan=True, err_msg=f"row {k}")
    f = flags.asnumpy()
    np.testing.assert_array_equal(f[0], np.signbit(a))
    np.testing.assert_array_equal(f[1], np.isfinite(b))
    np.testing.assert_array_equal(f[2], np.isinf(b))
    np.testing.assert_array_equal(f[3], np.signbit(b))


@ol.kernel
def signbit_of_ints(item, x, flags):
    i = item.get_id(0)
    flags[i] = np.signbit(x[i])


def test_signbit_of_integers_in_kernels(device):
    a = np.array([-128, -1, 0, 1, 127] * 60, "int8")
    flags = on(device, np.ones(a.size, bool))
    signbit_of_ints[ol.Range(a.size)](on(device, a), flags)
    np.testing.assert_array_equal(flags.asnumpy(), np.signbit(a))
