"""The device-kernel corpus: @ol.kernel functions that cover the kernel language
(DESIGN.md, "The Python surface" -> "Device kernels"), each with a recipe that
makes fresh random inputs and the expected results, computed with NumPy
(in float64 where it matters, then cast).

Used by test_jit_corpus.py (runs every case on opencl:cpu:0 and, where there
is one, on cuda:gpu:0) and by test_jit_ptxas.py (checks every case's PTX with
ptxas). Not a test module itself.

A case is (name, kernel, make); make(rng) returns a Launch: the Range and the
arguments. Array arguments are described by In / Out / InOut:
  In(base)               an input; it must come back unchanged
  Out(expect)            output only: the runner poisons it first (NaN for
                         floats, bits flipped for ints, negated for bools), so
                         an element the kernel does not write is caught
  InOut(base, expect)    read and written
each with view=f (f applied to the base on the device: a[::2], a.T, ...) and
host=True (passed as a NumPy array: copied to the device and back). `expect`
is what the argument (the view) must hold after the launch; the rest of the
base must be untouched. Float results are compared with rtol/atol (defaults
per dtype below), others exactly.

Seeds: OFFLOAD_TEST_SEED=<n> reruns with the seed a failure printed.
"""

from __future__ import annotations

import math
import os
import secrets
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

from offload_fixtures import DTYPES, load_offload, same_bits

ol = load_offload()

f32, f64 = np.float32, np.float64
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float32", "float64"]

# One seed per process unless OFFLOAD_TEST_SEED is set; each case derives its own from it.
SEED = int(os.environ.get("OFFLOAD_TEST_SEED") or secrets.randbits(32))

DEFAULT_TOL = {"float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}


# ============================================================================
# Arguments, launches, cases


def _identity(x):
    return x


class Arr:
    """An array argument (see the module docstring; use In/Out/InOut)."""

    def __init__(self, base, expect=None, *, out=False, view=None, host=False, rtol=None, atol=None, exact=False):
        self.base = np.asarray(base)
        self.expect = None if expect is None else np.asarray(expect)
        self.out = out
        self.view = view or _identity
        self.host = host
        self.rtol, self.atol, self.exact = rtol, atol, exact
        if self.expect is not None:
            shape = self.view(self.base).shape
            assert self.expect.shape == shape, f"expect has shape {self.expect.shape}, the argument {shape}"
            assert self.expect.dtype == self.base.dtype, f"expect is {self.expect.dtype}, the argument {self.base.dtype}"

    def host_value(self):
        """The argument as a NumPy array (for inspect_*: types only)."""
        return self.view(self.base)


def In(base, *, view=None, host=False):
    return Arr(base, view=view, host=host)


def Out(expect, *, base=None, view=None, host=False, rtol=None, atol=None, exact=False):
    """An output of `expect`'s dtype and shape (base: the whole array when view is given)."""
    expect = np.asarray(expect)
    if base is None:
        base = np.zeros(expect.shape, expect.dtype)
    elif isinstance(base, tuple):
        base = np.zeros(base, expect.dtype)
    return Arr(base, expect, out=True, view=view, host=host, rtol=rtol, atol=atol, exact=exact)


def InOut(base, expect, *, view=None, host=False, rtol=None, atol=None, exact=False):
    return Arr(base, expect, view=view, host=host, rtol=rtol, atol=atol, exact=exact)


@dataclass
class Launch:
    range: tuple  # the Range's sizes, 1 to 3
    args: list  # Arr or scalars (Python or NumPy)


@dataclass
class Case:
    name: str
    kernel: Any
    make: Callable[[np.random.Generator], Launch]
    family: str = field(default="")

    def __post_init__(self):
        self.family = self.family or self.name.split("[")[0]


CASES: list[Case] = []


def case(name, kernel, make):
    CASES.append(Case(name, kernel, make))


def rng_for(name: str, seed: int = None) -> np.random.Generator:
    return np.random.default_rng([SEED if seed is None else seed, zlib.crc32(name.encode())])


def host_args(launch: Launch) -> list:
    """The launch's arguments with arrays as NumPy arrays (for inspect_*)."""
    return [a.host_value() if isinstance(a, Arr) else a for a in launch.args]


def poison_like(expect: np.ndarray) -> np.ndarray:
    """Values that differ from `expect` everywhere (NaN for floats)."""
    if expect.dtype.kind == "f":
        return np.full_like(expect, np.nan)
    if expect.dtype.kind == "b":
        return ~expect
    return expect ^ expect.dtype.type(0x5A)


class Prepared:
    """A launch's arguments made for one device, and the checks to run after it."""

    def __init__(self, ol, launch: Launch, device):
        self.args, self._arrays = [], []
        for pos, a in enumerate(launch.args):
            if not isinstance(a, Arr):
                self.args.append(a)
                continue
            base = a.base.copy()
            if a.out:
                a.view(base)[...] = poison_like(a.expect)
            want = base.copy()
            if a.expect is not None:
                a.view(want)[...] = a.expect
            holder = base if a.host else ol.asarray(base, device=device)
            self.args.append(a.view(holder))
            self._arrays.append((pos, a, holder, want))

    def check(self, ol, what: str) -> None:
        for pos, a, holder, want in self._arrays:
            got = holder if a.host else ol.asnumpy(holder)
            where = f"{what}: argument {pos} ({'NumPy' if a.host else 'offload'} {want.dtype}{list(want.shape)})"
            assert isinstance(got, np.ndarray), where
            assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: got {got.dtype}{list(got.shape)}"
            if a.expect is None:
                assert same_bits(got, want), f"{where}: an input changed\n got {got!r}\nwant {want!r}"
            elif want.dtype.kind == "f" and not a.exact:
                rtol, atol = DEFAULT_TOL[want.dtype.name]
                rtol = rtol if a.rtol is None else a.rtol
                atol = atol if a.atol is None else a.atol
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
            elif want.dtype.kind == "f":
                np.testing.assert_array_equal(got, want, err_msg=where + " (exactly)")
            else:
                np.testing.assert_array_equal(got, want, err_msg=where)


def run_case(ol, c: Case, device, seed: int = None) -> None:
    """Runs one case on `device` (a Device) and checks every array argument."""
    seed = SEED if seed is None else seed
    launch = c.make(rng_for(c.name, seed))
    before = ol.default_device()
    ol.set_default_device(device.filter_string)  # NumPy-only launches run on the default device
    try:
        prep = Prepared(ol, launch, device)
        c.kernel[ol.Range(*launch.range)](*prep.args)
        prep.check(ol, f"{c.name} on {device.filter_string} (seed: OFFLOAD_TEST_SEED={seed})")
    finally:
        ol.set_default_device(before.filter_string)


# ---------------------------------------------------------------- input helpers


def uniform(rng, shape, lo=-1.0, hi=1.0, dtype=f32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def integers(rng, shape, lo, hi, dtype):
    """Integers in [lo, hi] (both clipped to the dtype's range)."""
    info = np.iinfo(dtype)
    return rng.integers(max(lo, info.min), min(hi, info.max), size=shape, dtype=dtype, endpoint=True)


def full_range(rng, shape, dtype):
    """Any value of an integer dtype (with its min and max), any bool."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    a.flat[0], a.flat[-1] = info.min, info.max
    return a


def any_values(rng, shape, dtype):
    """Full-range values, and for floats NaN, +-inf, -0.0 and the extremes too."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        return full_range(rng, shape, dt)
    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, size=n)).astype(dt)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, np.finfo(dt).tiny, np.finfo(dt).max, -1.0], dt)
    a[rng.choice(n, size=len(special), replace=False)] = special
    return a.reshape(shape)


def vec(fn, *arrays):
    """Applies a scalar Python function elementwise in float64 (reference only)."""
    return np.vectorize(fn, otypes=[np.float64])(*[np.asarray(a, np.float64) for a in arrays])


# ============================================================================
# Streams and BLAS-1: vadd, saxpy, triad


@ol.kernel
def vadd(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


def _vadd(n, dtype=f32, host=False):
    def make(rng):
        a, b = uniform(rng, n, dtype=dtype), uniform(rng, n, dtype=dtype)
        ref = (a.astype(f64) + b).astype(dtype)
        return Launch((n,), [In(a, host=host), In(b, host=host), Out(ref, host=host)])

    return make


case("vadd[f32,1000]", vadd, _vadd(1000))
case("vadd[f64,1]", vadd, _vadd(1, f64))
case("vadd[f64,numpy]", vadd, _vadd(1023, f64, host=True))


@ol.kernel
def saxpy(item, a, x, y):
    """y = a*x + y; a docstring is not a string "used as a value"."""
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def _saxpy(rng):
    n = 1025
    a = float(rng.uniform(-2, 2))  # a Python float: weak, the arithmetic stays float32
    x, y = uniform(rng, n), uniform(rng, n)
    return Launch((n,), [a, In(x), InOut(y, (a * x.astype(f64) + y).astype(f32))])


case("saxpy", saxpy, _saxpy)


@ol.kernel
def triad(item, a, b, c, s):
    i = item.get_id(0)
    a[i] = b[i] + s * c[i]


def _triad(rng):
    n = 1023
    b, c = uniform(rng, n, dtype=f64), uniform(rng, n, dtype=f64)
    s = 3.0
    return Launch((n,), [Out(b + s * c), In(b), In(c), s])


case("triad", triad, _triad)


# ============================================================================
# NEP 50: weak Python numbers, NumPy scalars, no hidden float64


@ol.kernel
def scale_literals(item, x, y1, y2):
    i = item.get_id(0)
    y1[i] = x[i] * 0.1
    y2[i] = x[i] * 2.5


def _scale_literals(dtype):
    def make(rng):
        n = 1000
        x = uniform(rng, n, -100, 100, dtype)
        want1, want2 = x * dtype(0.1), x * dtype(2.5)  # NumPy 2: stays `dtype`
        if dtype is f32:  # the check only means something if float64 arithmetic would differ
            assert (want1 != (x.astype(f64) * 0.1).astype(f32)).any(), "inputs do not discriminate"
        return Launch((n,), [In(x), Out(want1, exact=True), Out(want2, exact=True)])

    return make


case("scale_literals[f32]", scale_literals, _scale_literals(f32))
case("scale_literals[f64]", scale_literals, _scale_literals(f64))


@ol.kernel
def scale_by(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i]


def _scale_by(a):
    def make(rng):
        n = 1000
        x = uniform(rng, n, -100, 100)
        # NumPy computes exactly what the kernel must: a Python number is weak
        # (float32 arithmetic), np.float64 is not (float64, then cast on store).
        want = (np.asarray(a * x)).astype(f32)
        return Launch((n,), [a, In(x), Out(want, exact=True)])

    return make


case("scale_by[py-float]", scale_by, _scale_by(0.1))
case("scale_by[py-int]", scale_by, _scale_by(3))
case("scale_by[np.float32]", scale_by, _scale_by(np.float32(0.1)))
case("scale_by[np.float64]", scale_by, _scale_by(np.float64(0.1)))


@ol.kernel
def index_times(item, s, x, y):
    i = item.get_id(0)
    y[i] = (i * s) // x[i]


def _index_times(strong):
    # The work-item index is weak, as Python's int is (NEP 50): with a Python float s,
    # i * s is weak too and the floor division a float32 one; an np.float64 s makes
    # it a float64 one.
    def make(rng):
        n = 1000
        s = float(rng.uniform(1, 9) * rng.choice([-1, 1]))
        x = np.full(n, s, f32)
        wide = (np.arange(n) * s) // x
        narrow = (np.arange(n) * s).astype(f32) // x
        assert (wide != narrow).any(), "inputs do not discriminate"
        return Launch((n,), [f64(s) if strong else s, In(x), Out(wide if strong else narrow, exact=True)])

    return make


case("index_times[py-float]", index_times, _index_times(False))
case("index_times[np.float64]", index_times, _index_times(True))


@ol.kernel
def sub_recurrence(item, n, x, steps, before_out, after_out, sign_out):
    # A float stepped by a subtraction, read from before the step after the loop: Intel's
    # CPU compiler crashed vectorizing it, so the JIT makes the step an fma(-1, step, f)
    # (jit_backend.c), which must give the subtraction's number exactly, signed zeros too.
    i = item.get_id(0)
    before = x[i]
    f = x[i]
    for j in range(n):
        before = f
        f = f - steps[j]
    before_out[i] = before
    after_out[i] = f
    sign_out[i] = math.copysign(1.0, before) + math.copysign(2.0, f)


def _sub_recurrence(dtype, zeros):
    def make(rng):
        m, n = 777, int(rng.integers(1, 12))
        if zeros:  # signed zeros only: the sign of each difference is IEEE's rule
            x = rng.choice([-0.0, 0.0], m).astype(dtype)
            steps = rng.choice([-0.0, 0.0], n).astype(dtype)
        else:
            x = (rng.standard_normal(m) * 10).astype(dtype)
            x[:3] = [np.inf, -np.inf, np.nan]
            steps = (rng.standard_normal(n) * 3).astype(dtype)
        before, f = x.copy(), x.copy()
        for j in range(n):
            before, f = f, f - steps[j]
        sign = np.copysign(1.0, before) + np.copysign(2.0, f)
        return Launch((m,), [n, In(x), In(steps), Out(before, exact=True), Out(f, exact=True),
                             Out(sign.astype(dtype), exact=True)])

    return make


for _t in (f32, f64):
    for _zeros in (False, True):
        case(f"sub_recurrence[{np.dtype(_t).name}{'-zeros' if _zeros else ''}]", sub_recurrence,
             _sub_recurrence(_t, _zeros))


@ol.kernel
def f32_probe(item, x, out):
    # Each row is (v + 1e-9) - v for a value v that must be float32: exactly 0
    # in float32 (1e-9 is below half an ulp of v >= 1), about 1e-9 in float64.
    i = item.get_id(0)
    v = x[i]
    r = math.sqrt(v)
    out[0, i] = (r + 1e-9) - r
    w = v * 2.0
    out[1, i] = (w + 1e-9) - w
    s = 0
    s += v
    out[2, i] = (s + 1e-9) - s
    t = math.exp(v) + math.sin(v)
    out[3, i] = (t + 1e-9) - t
    m = max(v, 1.5)
    out[4, i] = (m + 1e-9) - m
    c = v if v > 2.0 else 1.25
    out[5, i] = (c + 1e-9) - c
    q = ol.float32(v) * 3
    out[6, i] = (q + 1e-9) - q


def _f32_probe(rng):
    n = 257
    x = uniform(rng, n, 1.0, 4.0)
    return Launch((n,), [In(x), Out(np.zeros((7, n)), exact=True)])


case("f32_probe", f32_probe, _f32_probe)


@ol.kernel
def promote(item, a8, b16, x, o1, o2, o3):
    i = item.get_id(0)
    o1[i] = (a8[i] + b16[i]) // 2  # int16 arithmetic: the sum wraps before the division
    o2[i] = a8[i] * x[i]  # int8 * float32 -> float32
    o3[i] = b16[i] / 2  # int / int -> float64


def _promote(rng):
    n = 1000
    a8, b16, x = full_range(rng, n, np.int8), full_range(rng, n, np.int16), uniform(rng, n)
    with np.errstate(over="ignore"):
        o1 = (a8.astype(np.int16) + b16) // np.int16(2)
    o2 = (a8.astype(f64) * x).astype(f32)
    return Launch((n,), [In(a8), In(b16), In(x), Out(o1), Out(o2), Out(b16 / 2)])


case("promote", promote, _promote)


# ============================================================================
# Every dtype: copy, 2-D strided copy, comparisons


@ol.kernel
def copy1d(item, a, b):
    i = item.get_id(0)
    b[i] = a[i]


@ol.kernel
def copy2d(item, a, b):
    i, j = item.get_id(0), item.get_id(1)
    b[i, j] = a[i, j]


@ol.kernel
def compare(item, a, b, lt, le, eq, ne, gt, ge):
    i = item.get_id(0)
    lt[i] = a[i] < b[i]
    le[i] = a[i] <= b[i]
    eq[i] = a[i] == b[i]
    ne[i] = a[i] != b[i]
    gt[i] = a[i] > b[i]
    ge[i] = a[i] >= b[i]


def _copy1d(dtype):
    def make(rng):
        a = any_values(rng, 1001, dtype)
        return Launch((1001,), [In(a), Out(a.copy(), exact=True)])

    return make


def _copy2d(dtype):
    def make(rng):
        a = any_values(rng, (29, 37), dtype)  # passed transposed: (37, 29)
        return Launch((37, 29), [In(a, view=lambda t: t.T), Out(a.T.copy(), base=(74, 29), view=lambda t: t[::2, ::-1], exact=True)])

    return make


def _compare(dtype):
    def make(rng):
        n = 999
        a, b = any_values(rng, n, dtype), any_values(rng, n, dtype)
        b[::3] = a[::3]
        with np.errstate(invalid="ignore"):
            outs = [a < b, a <= b, a == b, a != b, a > b, a >= b]
        return Launch((n,), [In(a), In(b)] + [Out(o) for o in outs])

    return make


for _dt in DTYPES:
    case(f"copy1d[{_dt}]", copy1d, _copy1d(_dt))
    case(f"compare[{_dt}]", compare, _compare(_dt))
for _dt in ["bool", "int8", "uint16", "int64", "float32", "float64"]:
    case(f"copy2d[{_dt}]", copy2d, _copy2d(_dt))


# ============================================================================
# Integer arithmetic: wrap-around, bitwise, floor division and modulo


@ol.kernel
def int_arith(item, a, b, c, d, e):
    i = item.get_id(0)
    c[i] = a[i] * 3 + b[i] - 7
    d[i] = -a[i] + b[i] * a[i]
    e[i] = (a[i] + b[i]) // 2  # the sum wraps in the dtype first (NumPy semantics)


def _int_arith(dtype):
    def make(rng):
        n = 1000
        a, b = full_range(rng, n, dtype), full_range(rng, n, dtype)
        with np.errstate(over="ignore"):
            c = a * 3 + b - 7
            d = -a + b * a
            e = (a + b) // 2
        return Launch((n,), [In(a), In(b), Out(c), Out(d), Out(e)])

    return make


@ol.kernel
def bitwise(item, a, b, bits, c, d, e, f):
    i = item.get_id(0)
    s = b[i] & bits
    c[i] = (a[i] & b[i]) | (a[i] ^ ~b[i])
    d[i] = a[i] << s
    e[i] = a[i] >> s
    f[i] = ~a[i]


def _bitwise(dtype):
    def make(rng):
        n = 1000
        dt = np.dtype(dtype)
        a, b = full_range(rng, n, dt), full_range(rng, n, dt)
        bits = dt.itemsize * 8 - 1  # a Python int: weak, `b[i] & bits` stays `dtype`
        s = b & dt.type(bits)
        return Launch((n,), [In(a), In(b), bits, Out((a & b) | (a ^ ~b)), Out(a << s), Out(a >> s), Out(~a)])

    return make


@ol.kernel
def int_divmod(item, a, b, q, r):
    i = item.get_id(0)
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


def _int_divmod(dtype):
    def make(rng):
        n = 2000
        dt = np.dtype(dtype)
        info = np.iinfo(dt)
        a = integers(rng, n, info.min + 1, info.max, dt)  # not MIN: MIN // -1 overflows
        a[: n // 2] = integers(rng, n // 2, -100, 100, dt)
        b = integers(rng, n, -7, 7, dt)
        b[::7] = integers(rng, b[::7].size, info.min + 1, info.max, dt)
        b[::5] = 0  # integer division by zero is 0 for both, as NumPy's
        with np.errstate(divide="ignore", over="ignore"):
            q, r = np.floor_divide(a, b), np.mod(a, b)
        return Launch((n,), [In(a), In(b), Out(q), Out(r)])

    return make


for _dt in INT_DTYPES:
    case(f"int_arith[{_dt}]", int_arith, _int_arith(_dt))
    case(f"bitwise[{_dt}]", bitwise, _bitwise(_dt))
    case(f"int_divmod[{_dt}]", int_divmod, _int_divmod(_dt))


@ol.kernel
def int_divmod_literals(item, a, out):
    i = item.get_id(0)
    v = a[i]
    out[0, i] = v // 4
    out[1, i] = v % 4
    out[2, i] = v // -3
    out[3, i] = v % -3
    out[4, i] = 1000 // (v | 1)
    out[5, i] = -1000 % (v | 1)


def _int_divmod_literals(dtype):
    def make(rng):
        n = 1000
        a = integers(rng, n, -1000, 1000, dtype)
        d = a | dtype(1)
        out = np.stack([a // 4, a % 4, a // -3, a % -3, dtype(1000) // d, dtype(-1000) % d]).astype(dtype)
        return Launch((n,), [In(a), Out(out)])

    return make


case("int_divmod_literals[int32]", int_divmod_literals, _int_divmod_literals(np.int32))
case("int_divmod_literals[int64]", int_divmod_literals, _int_divmod_literals(np.int64))


@ol.kernel
def digit_sum(item, a, out):
    i = item.get_id(0)
    v = abs(a[i])
    s = 0
    while v > 0:
        s += v % 10
        v //= 10
    out[i] = s


def _digit_sum(rng):
    n = 1000
    a = integers(rng, n, -(2**62), 2**62, np.int64)
    a[:3] = [0, -7, 10**18]
    want = np.array([sum(int(ch) for ch in str(abs(int(v)))) if v else 0 for v in a], np.int64)
    return Launch((n,), [In(a), Out(want)])


case("digit_sum", digit_sum, _digit_sum)


# ============================================================================
# Float arithmetic: floor division, modulo, true division, powers


@ol.kernel
def float_divmod(item, a, b, q, r):
    i = item.get_id(0)
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


def _float_divmod(dtype):
    def make(rng):
        n = 1000
        b = rng.choice([-7.0, -5.0, -3.0, -2.0, -1.5, 1.5, 2.0, 3.0, 5.0, 7.0], n)
        # a/b = k + frac with frac in [0.1, 0.9]: far from an integer, so the
        # floor cannot depend on the rounding of the division
        a = (rng.integers(-20, 20, n) + rng.uniform(0.1, 0.9, n)) * b
        a, b = a.astype(dtype), b.astype(dtype)
        a64, b64 = a.astype(f64), b.astype(f64)
        q = np.floor(a64 / b64).astype(dtype)
        r = np.mod(a64, b64).astype(dtype)  # sign of the divisor, as Python's
        return Launch((n,), [In(a), In(b), Out(q), Out(r)])

    return make


case("float_divmod[f32]", float_divmod, _float_divmod(f32))
case("float_divmod[f64]", float_divmod, _float_divmod(f64))


@ol.kernel
def true_div(item, a, b, q1, q2):
    i = item.get_id(0)
    q1[i] = a[i] / b[i]
    q2[i] = a[i] / 4


def _true_div(rng):
    n = 1000
    a = integers(rng, n, -(2**31) + 1, 2**31 - 1, np.int32)
    b = integers(rng, n, -1000, 1000, np.int32)
    b[b == 0] = 3
    return Launch((n,), [In(a), In(b), Out(a / b, rtol=1e-15, atol=0), Out(a / 4, exact=True)])


case("true_div", true_div, _true_div)


@ol.kernel
def power(item, x, y, k, o1, o2, o3, o4):
    i = item.get_id(0)
    o1[i] = x[i] ** 2
    o2[i] = x[i] ** 0.5
    o3[i] = x[i] ** y[i]
    o4[i] = k[i] ** 3


def _power(rng):
    n = 1000
    x, y = uniform(rng, n, 0.5, 2.0), uniform(rng, n, -2.0, 2.0)
    k = integers(rng, n, -50, 50, np.int64)
    x64 = x.astype(f64)
    outs = [(x64**2).astype(f32), np.sqrt(x64).astype(f32), (x64**y).astype(f32)]
    return Launch((n,), [In(x), In(y), In(k)] + [Out(o) for o in outs] + [Out(k**3)])


case("power", power, _power)


# ============================================================================
# Augmented assignment (locals and array elements), tuple assignment


@ol.kernel
def aug_local(item, a, b, out):
    i = item.get_id(0)
    s = a[i]
    s += 3
    s -= b[i]
    s *= 2
    s //= 3
    s %= 1000
    s **= 2
    s &= 0xFFFF
    s |= 1
    s ^= 0x55
    s <<= 2
    s >>= 1
    out[i] = s


def _aug_local(rng):
    n = 1000
    a, b = integers(rng, n, -(10**6), 10**6, np.int64), integers(rng, n, -(10**6), 10**6, np.int64)
    s = ((a + 3 - b) * 2) // 3 % 1000
    s = ((((s**2) & 0xFFFF) | 1) ^ 0x55) << 2 >> 1
    return Launch((n,), [In(a), In(b), Out(s)])


case("aug_local", aug_local, _aug_local)


@ol.kernel
def aug_float(item, x, y, out):
    i = item.get_id(0)
    t = x[i]
    t //= 0.75
    t %= 5.0
    t += 1.5
    t -= y[i]
    t *= 2.0
    t /= 3.0
    t **= 2
    out[i] = t


def _aug_float(rng):
    n = 1000
    x = rng.integers(-200, 200, n) * 0.25  # multiples of 1/4: x / 0.75 is exact or far from an integer
    y = uniform(rng, n, dtype=f64)
    t = np.mod(np.floor(x / 0.75), 5.0)
    t = ((t + 1.5 - y) * 2.0 / 3.0) ** 2
    return Launch((n,), [In(x), In(y), Out(t)])


case("aug_float", aug_float, _aug_float)


@ol.kernel
def aug_elem(item, a, x):
    i = item.get_id(0)
    a[i] += 1
    a[i] *= 3
    a[i] -= i
    a[i] //= 2
    a[i] %= 100
    a[i] <<= 1
    a[i] |= 1
    x[i] += 0.5
    x[i] *= 2.0
    x[i] /= 4.0
    x[i] -= a[i]


def _aug_elem(rng):
    n = 1000
    a = integers(rng, n, -(10**6), 10**6, np.int32)
    x = uniform(rng, n)
    i = np.arange(n, dtype=np.int32)
    a2 = ((((a + 1) * 3 - i) // 2) % 100 << 1) | 1
    x2 = ((x.astype(f64) + 0.5) * 2.0 / 4.0 - a2).astype(f32)
    return Launch((n,), [InOut(a, a2), InOut(x, x2)])


case("aug_elem", aug_elem, _aug_elem)


@ol.kernel
def increment(item, a):
    a[item.get_id(0)] += 1


def _increment(rng):
    a = integers(rng, 4097, -1000, 1000, np.int32)
    return Launch((4097,), [InOut(a, a + 1)])


case("increment", increment, _increment)


@ol.kernel
def tuple_assign(item, x, y, out):
    i, j = item.get_id(0), item.get_id(1)
    n, m = x.shape
    p, q = x[i, j], y[i, j]
    p, q = q, p - q
    out[i, j] = p * 10 + q + (n - m)


def _tuple_assign(rng):
    x, y = integers(rng, (11, 13), -1000, 1000, np.int32), integers(rng, (11, 13), -1000, 1000, np.int32)
    want = (y.astype(np.int64) * 10 + (x - y) + (11 - 13)).astype(np.int64)
    return Launch((11, 13), [In(x), In(y), Out(want)])


case("tuple_assign", tuple_assign, _tuple_assign)


# ============================================================================
# Reductions in loops, dpbench kernels


@ol.kernel
def row_sums(item, x, y):
    i = item.get_id(0)
    s = 0
    for k in range(x.shape[1]):
        s += x[i, k]
    y[i] = s


def _row_sums(rng):
    x = uniform(rng, (37, 29))
    return Launch((37,), [In(x), Out(x.astype(f64).sum(axis=1).astype(f32))])


case("row_sums", row_sums, _row_sums)


@ol.kernel
def matmul(item, a, b, c):
    i = item.get_id(0)
    j = item.get_id(1)
    acc = 0.0
    for k in range(a.shape[1]):
        acc += a[i, k] * b[k, j]
    c[i, j] = acc


def _matmul(rng):
    a, b = uniform(rng, (37, 13)), uniform(rng, (13, 29))
    return Launch((37, 29), [In(a), In(b), Out((a.astype(f64) @ b).astype(f32))])


case("matmul", matmul, _matmul)


@ol.kernel
def black_scholes(item, nopt, price, strike, t, rate, volatility, call, put):
    # dpbench's black_scholes kernel (numba-dpex version)
    mr = -rate
    sig_sig_two = volatility * volatility * 2

    i = item.get_id(0)

    P = price[i]
    S = strike[i]
    T = t[i]

    a = math.log(P / S)
    b = T * mr

    z = T * sig_sig_two
    c = 0.25 * z
    y = 1.0 / math.sqrt(z)

    w1 = (a - b + c) * y
    w2 = (a - b - c) * y

    d1 = 0.5 + 0.5 * math.erf(w1)
    d2 = 0.5 + 0.5 * math.erf(w2)

    Se = math.exp(b) * S

    r = P * d1 - Se * d2
    call[i] = r
    put[i] = r - P + Se


def _black_scholes(dtype):
    def make(rng):
        n = 1000
        price, strike = uniform(rng, n, 10.0, 50.0, dtype), uniform(rng, n, 10.0, 50.0, dtype)
        t = uniform(rng, n, 1.0, 2.0, dtype)
        rate, vol = 0.1, 0.2
        P, S, T = price.astype(f64), strike.astype(f64), t.astype(f64)
        a = np.log(P / S)
        b = T * -rate
        z = T * vol * vol * 2
        c = 0.25 * z
        y = 1.0 / np.sqrt(z)
        w1, w2 = (a - b + c) * y, (a - b - c) * y
        d1, d2 = 0.5 + 0.5 * vec(math.erf, w1), 0.5 + 0.5 * vec(math.erf, w2)
        Se = np.exp(b) * S
        r = P * d1 - Se * d2
        tol = dict(rtol=1e-4, atol=2e-3) if dtype is f32 else dict(rtol=1e-10, atol=1e-9)
        return Launch((n,), [n, In(price), In(strike), In(t), rate, vol,
                             Out(r.astype(dtype), **tol), Out((r - P + Se).astype(dtype), **tol)])

    return make


case("black_scholes[f32]", black_scholes, _black_scholes(f32))
case("black_scholes[f64]", black_scholes, _black_scholes(f64))


@ol.kernel
def l2_norm(item, a, d):
    # dpbench's l2_norm kernel: accumulates in the output element
    i = item.get_id(0)
    a_rows = a.shape[1]
    d[i] = 0.0
    for k in range(a_rows):
        d[i] += a[i, k] * a[i, k]
    d[i] = math.sqrt(d[i])


def _l2_norm(dtype):
    def make(rng):
        a = uniform(rng, (1000, 3), dtype=dtype)
        return Launch((1000,), [In(a), Out(np.sqrt((a.astype(f64) ** 2).sum(axis=1)).astype(dtype))])

    return make


case("l2_norm[f32]", l2_norm, _l2_norm(f32))
case("l2_norm[f64]", l2_norm, _l2_norm(f64))


@ol.kernel
def pairwise_distance(item, X1, X2, D):
    # dpbench's pairwise_distance kernel
    i = item.get_id(0)
    X1_cols = X1.shape[1]
    D_cols = D.shape[1]
    for j in range(D_cols):
        d = 0.0
        for k in range(X1_cols):
            tmp = X1[i, k] - X2[j, k]
            d += tmp * tmp
        D[i, j] = math.sqrt(d)


def _pairwise_distance(dtype):
    def make(rng):
        x1, x2 = uniform(rng, (37, 3), dtype=dtype), uniform(rng, (29, 3), dtype=dtype)
        diff = x1.astype(f64)[:, None, :] - x2.astype(f64)[None, :, :]
        return Launch((37,), [In(x1), In(x2), Out(np.sqrt((diff**2).sum(axis=2)).astype(dtype))])

    return make


case("pairwise_distance[f32]", pairwise_distance, _pairwise_distance(f32))
case("pairwise_distance[f64]", pairwise_distance, _pairwise_distance(f64))


@ol.kernel
def stencil(item, a, b):
    i, j = item.get_id(0), item.get_id(1)
    n, m = a.shape
    if 0 < i < n - 1 and 0 < j < m - 1:
        b[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) - a[i, j]
    else:
        b[i, j] = a[i, j]


def _stencil(rng):
    a = uniform(rng, (37, 29))
    a64 = a.astype(f64)
    want = a64.copy()
    want[1:-1, 1:-1] = 0.25 * (a64[:-2, 1:-1] + a64[2:, 1:-1] + a64[1:-1, :-2] + a64[1:-1, 2:]) - a64[1:-1, 1:-1]
    return Launch((37, 29), [In(a), Out(want.astype(f32))])


case("stencil", stencil, _stencil)


# ============================================================================
# Control flow: while/break/continue, loops with any step, conditions


@ol.kernel
def collatz(item, start, steps):
    i = item.get_id(0)
    v = start[i]
    count = 0
    while True:
        if v == 1:
            break
        count += 1
        if v % 2 == 0:
            v //= 2
            continue
        v = 3 * v + 1
    steps[i] = count


def _collatz_steps(v: int) -> int:
    n = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        n += 1
    return n


def _collatz(rng):
    n = 500
    start = integers(rng, n, 1, 10000, np.int64)
    start[:3] = [1, 2, 27]
    return Launch((n,), [In(start), Out(np.array([_collatz_steps(int(v)) for v in start], np.int32))])


case("collatz", collatz, _collatz)


@ol.kernel
def count_primes(item, limits, out):
    i = item.get_id(0)
    count = 0
    for v in range(2, limits[i]):
        if v > 2 and v % 2 == 0:
            continue
        d = 3
        prime = True
        while d * d <= v:
            if v % d == 0:
                prime = False
                break
            d += 2
        if prime:
            count += 1
    out[i] = count


def _count_primes(rng):
    n = 200
    limits = integers(rng, n, 0, 400, np.int32)
    limits[:4] = [0, 2, 3, 4]
    primes = [p for p in range(2, 401) if all(p % d for d in range(2, int(p**0.5) + 1))]
    want = np.array([sum(1 for p in primes if p < L) for L in limits], np.int32)
    return Launch((n,), [In(limits), Out(want)])


case("count_primes", count_primes, _count_primes)


@ol.kernel
def reverse_loops(item, x, out):
    i = item.get_id(0)
    m = x.shape[1]
    acc = 0
    for k in range(m - 1, -1, -1):
        acc = acc * 3 + x[i, k]
    alt = 0
    for k in range(m - 1, -1, -2):
        for t in range(k, k - 3, -1):
            if t >= 0:
                alt += x[i, t] * (k - t + 1)
    out[0, i] = acc
    out[1, i] = alt


def _reverse_loops(rng):
    x = integers(rng, (23, 11), 0, 2, np.int64)
    n, m = x.shape
    want = np.zeros((2, n), np.int64)
    for i in range(n):
        want[0, i] = sum(int(x[i, k]) * 3**k for k in range(m))
        want[1, i] = sum(int(x[i, t]) * (k - t + 1) for k in range(m - 1, -1, -2) for t in range(k, k - 3, -1) if t >= 0)
    return Launch((n,), [In(x), Out(want)])


case("reverse_loops", reverse_loops, _reverse_loops)


@ol.kernel
def range_args(item, x, start, stop, step, out):
    i = item.get_id(0)
    acc = 0
    for k in range(start, stop, step):
        acc += x[k] * (k + 1)
    out[i] = acc + i


def _range_args(start, stop, step):
    def make(rng):
        x = integers(rng, 64, -100, 100, np.int64)
        acc = sum(int(x[k]) * (k + 1) for k in range(start, stop, step))
        return Launch((10,), [In(x), start, stop, step, Out(acc + np.arange(10, dtype=np.int64))])

    return make


for _r in [(0, 64, 1), (3, 60, 5), (63, -1, -1), (60, 2, -7), (10, 10, 1), (10, 3, 2), (3, 10, -1), (0, 64, 100)]:
    case(f"range_args[{_r[0]}:{_r[1]}:{_r[2]}]", range_args, _range_args(*_r))


@ol.kernel
def chained(item, x, y, z, lo, hi, o1, o2, o3):
    i = item.get_id(0)
    o1[i] = lo < x[i] <= hi
    o2[i] = x[i] < y[i] < z[i]
    o3[i] = x[i] <= y[i] != z[i] > lo


def _chained(rng):
    n = 1000
    x, y, z = (integers(rng, n, -3, 3, np.int64).astype(f64) for _ in range(3))
    lo, hi = -1.0, 1.0
    return Launch((n,), [In(x), In(y), In(z), lo, hi,
                         Out((lo < x) & (x <= hi)), Out((x < y) & (y < z)), Out((x <= y) & (y != z) & (z > lo))])


case("chained", chained, _chained)


@ol.kernel
def short_circuit(item, a, out):
    i = item.get_id(0)
    n = a.shape[0]
    if i < n and a[i] > 0:
        out[i] = 1
    elif i >= n or a[i] < 0:
        out[i] = -1
    else:
        out[i] = 0


def _short_circuit(rng):
    n = 1000
    a = integers(rng, n, -2, 2, np.int32)
    want = np.full(n + 9, -1, np.int32)
    want[:n] = np.sign(a)
    return Launch((n + 9,), [In(a), Out(want)])


case("short_circuit", short_circuit, _short_circuit)


@ol.device_func
def mark(log, i, v):
    log[i] += v
    return True


@ol.kernel
def short_circuit_effects(item, a, log):
    # The right operand of `and`/`or` runs only when Python would run it:
    # mark() leaves a trace in log.
    i = item.get_id(0)
    if a[i] > 0 and mark(log, i, 1):
        log[i] += 10
    if a[i] > 0 or mark(log, i, 100):
        log[i] += 1000
    r = a[i] < 0 and mark(log, i, 10000)
    if not r:
        log[i] += 100000


def _short_circuit_effects(rng):
    n = 500
    a = integers(rng, n, -1, 1, np.int32)
    want = np.where(a > 0, 1 + 10 + 1000 + 100000, np.where(a < 0, 100 + 1000 + 10000, 100 + 1000 + 100000))
    return Launch((n,), [In(a), InOut(np.zeros(n, np.int64), want.astype(np.int64))])


case("short_circuit_effects", short_circuit_effects, _short_circuit_effects)


@ol.kernel
def classify(item, x, out):
    i = item.get_id(0)
    v = x[i]
    if v < -1.0:
        out[i] = 0
    elif v < 0.0:
        out[i] = 1
    elif v == 0.0:
        out[i] = 2
    elif v < 1.0:
        out[i] = 3
    else:
        out[i] = 4


def _classify(rng):
    n = 1000
    x = uniform(rng, n, -2.0, 2.0, f64)
    x[::10] = 0.0
    x[1::10] = 1.0
    x[2::10] = -1.0
    want = np.select([x < -1, x < 0, x == 0, x < 1], [0, 1, 2, 3], 4).astype(np.int8)
    return Launch((n,), [In(x), Out(want)])


case("classify", classify, _classify)


@ol.kernel
def cond_expr(item, x, a, b, y, z):
    i = item.get_id(0)
    y[i] = x[i] if x[i] > 0 else -0.5 * x[i]
    z[i] = 1 if a[i] else (2 if b[i] else 3)


def _cond_expr(rng):
    n = 1000
    x = uniform(rng, n)
    a, b = full_range(rng, n, bool), full_range(rng, n, bool)
    y = np.where(x > 0, x, (-0.5 * x.astype(f64)).astype(f32))
    z = np.where(a, 1, np.where(b, 2, 3)).astype(np.int16)
    return Launch((n,), [In(x), In(a), In(b), Out(y), Out(z)])


case("cond_expr", cond_expr, _cond_expr)


@ol.kernel
def early_return(item, a, out):
    i = item.get_id(0)
    if i >= a.shape[0]:
        return
    out[i] = a[i] * 2


def _early_return(rng):
    n = 1000
    a = integers(rng, n, -1000, 1000, np.int32)
    return Launch((n + 13,), [In(a), Out(a * 2)])


case("early_return", early_return, _early_return)


# ============================================================================
# Booleans


@ol.kernel
def bool_logic(item, a, b, c, o1, o2, o3, o4, o5):
    i = item.get_id(0)
    o1[i] = (a[i] and not b[i]) or c[i]
    o2[i] = a[i] ^ b[i]
    o3[i] = (a[i] & b[i]) | c[i]
    o4[i] = a[i] != b[i] or not c[i]
    o5[i] = not (a[i] or b[i])


def _bool_logic(rng):
    n = 1000
    a, b, c = (full_range(rng, n, bool) for _ in range(3))
    outs = [(a & ~b) | c, a ^ b, (a & b) | c, (a != b) | ~c, ~(a | b)]
    return Launch((n,), [In(a), In(b), In(c)] + [Out(o) for o in outs])


case("bool_logic", bool_logic, _bool_logic)


@ol.kernel
def unary_ops(item, a, x, neg, pos, lnot, inv, fneg):
    i = item.get_id(0)
    neg[i] = -a[i]
    pos[i] = +a[i]
    lnot[i] = not a[i]
    inv[i] = ~a[i]
    fneg[i] = -x[i]


def _unary_ops(rng):
    n = 1000
    a = integers(rng, n, -1000, 1000, np.int32)
    a[::4] = 0
    x = uniform(rng, n, dtype=f64)
    return Launch((n,), [In(a), In(x), Out(-a), Out(a.copy()), Out(a == 0), Out(~a), Out(-x, exact=True)])


case("unary_ops", unary_ops, _unary_ops)


# ============================================================================
# Builtins: round abs min max int float, casts


@ol.kernel
def round_builtin(item, x, out):
    i = item.get_id(0)
    out[i] = round(x[i])


def _round_builtin(dtype):
    def make(rng):
        n = 1000
        x = np.round(uniform(rng, n, -20.0, 20.0, f64), 1)
        x[: 42] = np.arange(-21, 21) + 0.5  # ties go to the even neighbour
        x = x.astype(dtype)
        return Launch((n,), [In(x), Out(np.round(x).astype(np.int64))])

    return make


case("round_builtin[f32]", round_builtin, _round_builtin(f32))
case("round_builtin[f64]", round_builtin, _round_builtin(f64))


@ol.kernel
def abs_min_max(item, a, b, c, out):
    i = item.get_id(0)
    out[0, i] = abs(a[i])
    out[1, i] = min(a[i], b[i])
    out[2, i] = max(a[i], b[i])
    out[3, i] = min(a[i], b[i], c[i])
    out[4, i] = max(a[i], 0)


def _abs_min_max(dtype):
    def make(rng):
        n = 1000
        if np.dtype(dtype).kind == "f":
            a, b, c = (uniform(rng, n, -10, 10, dtype) for _ in range(3))
        else:
            a, b, c = (integers(rng, n, -1000, 1000, dtype) for _ in range(3))
        b[::5] = a[::5]
        want = np.stack([np.abs(a), np.minimum(a, b), np.maximum(a, b), np.minimum(np.minimum(a, b), c), np.maximum(a, 0)])
        return Launch((n,), [In(a), In(b), In(c), Out(want.astype(dtype), exact=True)])

    return make


for _dt in ["int32", "int64", "float32", "float64"]:
    case(f"abs_min_max[{_dt}]", abs_min_max, _abs_min_max(np.dtype(_dt).type))


@ol.kernel
def casts(item, x, k, o_f32, o_i32, o_i64, o_u8, o_f64, o_i16):
    i = item.get_id(0)
    o_f32[i] = ol.float32(x[i]) + np.float32(k[i])
    o_i32[i] = np.int32(x[i])
    o_i64[i] = int(x[i]) + int(k[i] * 2)
    o_u8[i] = np.uint8(k[i] & 255)
    o_f64[i] = float(k[i]) / 3 + np.float64(x[i])
    o_i16[i] = np.int16(k[i]) - np.int16(7)


def _casts(rng):
    n = 1000
    x = uniform(rng, n, -1000.0, 1000.0, f64)
    k = integers(rng, n, -30000, 30000, np.int64)
    return Launch((n,), [In(x), In(k),
                         Out(x.astype(f32) + k.astype(f32), exact=True),
                         Out(np.trunc(x).astype(np.int32)),
                         Out(np.trunc(x).astype(np.int64) + k * 2),
                         Out((k & 255).astype(np.uint8)),
                         Out(k / 3 + x),
                         Out(k.astype(np.int16) - np.int16(7))])


case("casts", casts, _casts)


@ol.kernel
def scalar_args(item, x, k, u, f, n, flag, s32, s16, su64, of, oi, ou):
    i = item.get_id(0)
    v = x[i] * s32 + f
    if flag:
        v = -v
    of[i] = v
    oi[i] = k[i] * n + s16
    ou[i] = su64 - u[i]


def _scalar_args(flag):
    def make(rng):
        n = 1000
        x = uniform(rng, n)
        k = integers(rng, n, -100, 100, np.int16)
        u = integers(rng, n, 0, 2**62, np.uint64)
        f, m, s32, s16, su64 = 0.25, 7, np.float32(1.5), np.int16(-3), np.uint64(2**63 + 5)
        v = (x.astype(f64) * 1.5 + 0.25) * (-1 if flag else 1)
        return Launch((n,), [In(x), In(k), In(u), f, m, flag, s32, s16, su64,
                             Out(v.astype(f32)), Out((k * m + s16).astype(np.int16)), Out(su64 - u)])

    return make


case("scalar_args[True]", scalar_args, _scalar_args(True))
case("scalar_args[False]", scalar_args, _scalar_args(False))


# ============================================================================
# Items and ranges: ids, linear id, ranges with tails, 1 to 3 dimensions


@ol.kernel
def ids1(item, out):
    i = item.get_id(0)
    out[i] = i * 3 + item.get_range(0) * 1000000 + item.get_linear_id() * 7


@ol.kernel
def ids2(item, out, lin):
    i, j = item.get_id(0), item.get_id(1)
    out[i, j] = (i * item.get_range(1) + j) * 10 + item.get_range(0) * 100000000
    lin[item.get_linear_id()] = i * 10000 + j


@ol.kernel
def ids3(item, out, lin):
    i, j, k = item.get_id(0), item.get_id(1), item.get_id(2)
    r0, r1, r2 = item.get_range(0), item.get_range(1), item.get_range(2)
    out[i, j, k] = (r0 * 1000 + r1) * 1000 + r2
    lin[item.get_linear_id()] = (i * 1000 + j) * 1000 + k


def _ids(shape):
    def make(rng):
        idx = np.indices(shape).astype(np.int64)  # last dimension fastest, as SYCL
        if len(shape) == 1:
            (i,) = idx
            return Launch(shape, [Out(i * 3 + shape[0] * 1000000 + i * 7)])
        if len(shape) == 2:
            i, j = idx
            out = (i * shape[1] + j) * 10 + shape[0] * 100000000
            return Launch(shape, [Out(out), Out((i * 10000 + j).reshape(-1))])
        i, j, k = idx
        out = np.full(shape, (shape[0] * 1000 + shape[1]) * 1000 + shape[2], np.int64)
        return Launch(shape, [Out(out), Out(((i * 1000 + j) * 1000 + k).reshape(-1))])

    return make


for _shape in [(1,), (7,), (1000,), (1023,), (1025,), (65537,)]:
    case(f"ids1[{_shape[0]}]", ids1, _ids(_shape))
for _shape in [(1, 1), (37, 29), (1, 1025), (1025, 1), (3, 257)]:
    case(f"ids2[{_shape[0]}x{_shape[1]}]", ids2, _ids(_shape))
for _shape in [(1, 1, 1), (5, 7, 3), (3, 1, 65), (2, 33, 17)]:
    case(f"ids3[{_shape[0]}x{_shape[1]}x{_shape[2]}]", ids3, _ids(_shape))


@ol.kernel
def shape_attrs(item, a, b, out):
    n, m = a.shape
    out[0] = n
    out[1] = m
    out[2] = a.ndim
    out[3] = a.size
    out[4] = len(a)
    out[5] = b.shape[2] * 100 + b.shape[1] * 10 + b.shape[0]
    out[6] = b.ndim * 1000 + b.size
    out[7] = len(b)


def _shape_attrs(rng):
    a = uniform(rng, (9, 12))  # a[1:-1, 2:] is (7, 10)
    b = integers(rng, (4, 5, 6), 0, 9, np.int8)  # b.T is (6, 5, 4)
    want = np.array([7, 10, 2, 70, 7, 4 * 100 + 5 * 10 + 6, 3000 + 120, 6], np.int64)
    return Launch((1,), [In(a, view=lambda t: t[1:-1, 2:]), In(b, view=lambda t: t.T), Out(want)])


case("shape_attrs", shape_attrs, _shape_attrs)


# ============================================================================
# Strided views, negative indices, 3-D


@ol.kernel
def affine1d(item, a, b):
    i = item.get_id(0)
    b[i] = a[i] * 2.0 + 1.0


def _affine1d(host):
    def make(rng):
        base = uniform(rng, 3004, dtype=f64)
        a = base[5::3]  # 1000 elements
        want = a * 2.0 + 1.0
        return Launch((1000,), [In(base, view=lambda t: t[5::3], host=host),
                                Out(want, base=(1000,), view=lambda t: t[::-1], host=host)])

    return make


case("affine1d[views]", affine1d, _affine1d(False))
case("affine1d[numpy-views]", affine1d, _affine1d(True))


@ol.kernel
def add2d(item, a, c, b):
    i, j = item.get_id(0), item.get_id(1)
    b[i, j] = a[i, j] + 10.0 * c[i, j]


def _add2d(rng):
    a = uniform(rng, (29, 37))  # .T
    c = uniform(rng, (39, 31))  # [1:-1, 2:]
    want = (a.T.astype(f64) + 10.0 * c[1:-1, 2:]).astype(f32)
    return Launch((37, 29), [In(a, view=lambda t: t.T), In(c, view=lambda t: t[1:-1, 2:]),
                             Out(want, base=(74, 58), view=lambda t: t[::2, ::-2])])


case("add2d[views]", add2d, _add2d)


@ol.kernel
def combine3d(item, a, b, c):
    i, j, k = item.get_id(0), item.get_id(1), item.get_id(2)
    c[i, j, k] = a[i, j, k] * 2 - b[k, j, i]


def _combine3d(rng):
    a = integers(rng, (10, 7, 6), -10000, 10000, np.int16)  # [::-2, :, ::2] is (5, 7, 3)
    b = integers(rng, (5, 7, 3), -10000, 10000, np.int16)  # .T is (3, 7, 5)
    with np.errstate(over="ignore"):
        want = a[::-2, :, ::2] * np.int16(2) - b
    return Launch((5, 7, 3), [In(a, view=lambda t: t[::-2, :, ::2]), In(b, view=lambda t: t.T),
                              Out(want, base=(5, 14, 3), view=lambda t: t[:, 1::2, ::-1])])


case("combine3d[views]", combine3d, _combine3d)


@ol.kernel
def negative_index(item, a, m, out):
    i = item.get_id(0)
    n = len(a)
    out[0, i] = a[-1 - i]
    out[1, i] = a[i - n]
    out[2, i] = m[-1, i] + m[-2, -1 - i]
    out[3, i] = a[-1]


def _negative_index(rng):
    n = 100
    a, m = uniform(rng, n, dtype=f64), uniform(rng, (3, n), dtype=f64)
    want = np.stack([a[::-1], a, m[-1] + m[-2, ::-1], np.full(n, a[-1])])
    return Launch((n,), [In(a), In(m), Out(want, exact=True)])


case("negative_index", negative_index, _negative_index)


# ============================================================================
# math.*, float32 and float64


@ol.kernel
def math_trig(item, x, out):
    i = item.get_id(0)
    v = x[i]
    out[0, i] = math.sin(v)
    out[1, i] = math.cos(v)
    out[2, i] = math.tan(v)
    out[3, i] = math.asin(v)
    out[4, i] = math.acos(v)
    out[5, i] = math.atan(v)
    out[6, i] = math.sinh(v)
    out[7, i] = math.cosh(v)
    out[8, i] = math.tanh(v)
    out[9, i] = math.asinh(v)
    out[10, i] = math.acosh(2.0 - v)
    out[11, i] = math.atanh(v)


MATH_TRIG = [np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
             np.arcsinh, lambda v: np.arccosh(2.0 - v), np.arctanh]


@ol.kernel
def math_explog(item, x, out):
    i = item.get_id(0)
    v = x[i]
    out[0, i] = math.sqrt(v)
    out[1, i] = math.exp(v)
    out[2, i] = math.expm1(v)
    out[3, i] = math.exp2(v)
    out[4, i] = math.log(v)
    out[5, i] = math.log10(v)
    out[6, i] = math.log1p(v)
    out[7, i] = math.log2(v)
    out[8, i] = math.fabs(1.0 - v)


MATH_EXPLOG = [np.sqrt, np.exp, np.expm1, np.exp2, np.log, np.log10, np.log1p, np.log2, lambda v: np.abs(1.0 - v)]


@ol.kernel
def math_special(item, x, out):
    i = item.get_id(0)
    v = x[i]
    out[0, i] = math.erf(v - 1.0)
    out[1, i] = math.erfc(v - 1.0)
    out[2, i] = math.gamma(v)
    out[3, i] = math.lgamma(v)


MATH_SPECIAL = [lambda v: vec(math.erf, v - 1.0), lambda v: vec(math.erfc, v - 1.0), lambda v: vec(math.gamma, v),
                lambda v: vec(math.lgamma, v)]


def _math_unary(table, lo, hi, tol32, tol64):
    def make_for(dtype):
        def make(rng):
            n = 1000
            x = uniform(rng, n, lo, hi, dtype)
            x64 = x.astype(f64)
            want = np.stack([fn(x64) for fn in table]).astype(dtype)
            rtol, atol = tol32 if dtype is f32 else tol64
            return Launch((n,), [In(x), Out(want, rtol=rtol, atol=atol)])

        return make

    return make_for


for _dt, _name in [(f32, "f32"), (f64, "f64")]:
    case(f"math_trig[{_name}]", math_trig, _math_unary(MATH_TRIG, -0.9, 0.9, (1e-5, 1e-6), (1e-12, 1e-14))(_dt))
    case(f"math_explog[{_name}]", math_explog, _math_unary(MATH_EXPLOG, 0.05, 3.0, (1e-5, 1e-6), (1e-12, 1e-14))(_dt))
    # erf/erfc/gamma/lgamma: looser, and absolute near lgamma's zeros at 1 and 2
    case(f"math_special[{_name}]", math_special, _math_unary(MATH_SPECIAL, 0.1, 3.0, (1e-4, 1e-5), (1e-10, 1e-12))(_dt))


@ol.kernel
def math_binary(item, x, y, k, out):
    i = item.get_id(0)
    v, w = x[i], y[i]
    out[0, i] = math.atan2(w, v - 1.0)
    out[1, i] = math.copysign(v, w)
    out[2, i] = math.pow(v, w)
    out[3, i] = math.fmod(w, v)
    out[4, i] = math.hypot(v, w)
    out[5, i] = math.ldexp(v, k[i])
    out[6, i] = v ** w


def _math_binary(dtype):
    def make(rng):
        n = 1000
        x, y = uniform(rng, n, 0.1, 2.0, dtype), uniform(rng, n, -2.0, 2.0, dtype)
        k = integers(rng, n, -10, 10, np.int32)
        v, w = x.astype(f64), y.astype(f64)
        vm1 = (x - dtype(1.0)).astype(f64)  # v - 1.0 rounds in `dtype` in the kernel
        want = np.stack([np.arctan2(w, vm1), np.copysign(v, w), v**w, np.fmod(w, v), np.hypot(v, w),
                         np.ldexp(v, k), v**w]).astype(dtype)
        rtol, atol = (1e-5, 1e-6) if dtype is f32 else (1e-12, 1e-14)
        return Launch((n,), [In(x), In(y), In(k), Out(want, rtol=rtol, atol=atol)])

    return make


case("math_binary[f32]", math_binary, _math_binary(f32))
case("math_binary[f64]", math_binary, _math_binary(f64))


@ol.kernel
def math_to_int(item, x, y, table, out, flags):
    # floor/ceil/trunc give ints (index an array, take `&`); isnan/isinf give bools
    i = item.get_id(0)
    v = x[i]
    out[0, i] = table[math.floor(v) + 10]
    out[1, i] = table[math.ceil(v) + 10]
    out[2, i] = table[math.trunc(v) + 10]
    out[3, i] = math.floor(v) & 3
    w = y[i]
    flags[0, i] = math.isnan(w)
    flags[1, i] = math.isinf(w)
    flags[2, i] = not math.isnan(w) and not math.isinf(w) and w > 0


def _math_to_int(dtype):
    def make(rng):
        n = 1000
        x = uniform(rng, n, -9.9, 9.9, dtype)
        x[:19] = np.arange(-9, 10)  # integers: floor == ceil == trunc
        y = any_values(rng, n, dtype)
        table = np.arange(21, dtype=np.int64) * 3 + 1
        fl, ce, tr = np.floor(x).astype(np.int64), np.ceil(x).astype(np.int64), np.trunc(x).astype(np.int64)
        out = np.stack([table[fl + 10], table[ce + 10], table[tr + 10], fl & 3])
        with np.errstate(invalid="ignore"):
            flags = np.stack([np.isnan(y), np.isinf(y), np.isfinite(y) & (y > 0)])
        return Launch((n,), [In(x), In(y), In(table), Out(out), Out(flags)])

    return make


case("math_to_int[f32]", math_to_int, _math_to_int(f32))
case("math_to_int[f64]", math_to_int, _math_to_int(f64))


# ============================================================================
# Device functions, module globals, closures


@ol.device_func
def poly(v):
    return v * v * 0.5 + 1.0


@ol.device_func
def clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@ol.device_func
def clamped_poly(v):
    return clamp(poly(v), 1.0, 2.0)


@ol.device_func
def store(out, i, v):
    out[i] = v


@ol.kernel
def use_device_funcs(item, x, y1, y2):
    i = item.get_id(0)
    y1[i] = poly(x[i])
    store(y2, i, clamped_poly(x[i]))


def _use_device_funcs(dtype):
    def make(rng):
        n = 1000
        x = uniform(rng, n, -2.5, 2.5, dtype)
        p = x.astype(f64) ** 2 * 0.5 + 1.0
        return Launch((n,), [In(x), Out(p.astype(dtype)), Out(np.clip(p, 1.0, 2.0).astype(dtype))])

    return make


case("use_device_funcs[f32]", use_device_funcs, _use_device_funcs(f32))
case("use_device_funcs[f64]", use_device_funcs, _use_device_funcs(f64))


@ol.device_func
def row_dot(a, b, i):
    s = 0.0
    for k in range(a.shape[1]):
        s += a[i, k] * b[k]
    return s


@ol.kernel
def matvec(item, a, b, c):
    i = item.get_id(0)
    c[i] = row_dot(a, b, i)


def _matvec(rng):
    a, b = uniform(rng, (101, 31), dtype=f64), uniform(rng, 31, dtype=f64)
    return Launch((101,), [In(a), In(b), Out(a @ b)])


case("matvec", matvec, _matvec)

SCALE = 3
BIAS = 0.25


@ol.kernel
def use_globals(item, x, y):
    i = item.get_id(0)
    y[i] = x[i] * SCALE + BIAS


def _use_globals(rng):
    x = uniform(rng, 1000, dtype=f64)
    return Launch((1000,), [In(x), Out(x * SCALE + BIAS)])


case("use_globals", use_globals, _use_globals)


def make_affine(scale, offset):
    @ol.kernel
    def affine(item, x, y):
        i = item.get_id(0)
        y[i] = x[i] * scale + offset

    return affine


# Same source, different closure values: two kernels that must not share code.
affine_a = make_affine(3, -1)
affine_b = make_affine(0.5, 2.0)


def _affine(scale, offset):
    def make(rng):
        x = uniform(rng, 1000, dtype=f64)
        return Launch((1000,), [In(x), Out(x * scale + offset)])

    return make


case("closure[3,-1]", affine_a, _affine(3, -1))
case("closure[0.5,2.0]", affine_b, _affine(0.5, 2.0))


# ============================================================================


def kernel_names() -> set:
    """The distinct kernel functions of the corpus (closures count once)."""
    return {getattr(c.kernel, "__name__", None) or c.family for c in CASES}
