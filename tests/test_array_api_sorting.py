"""Sorting, searching and the set functions of the array API 2024.12 (issue 22;
module/lib/order/mod_sort.c), checked against NumPy:

- offload.sort / argsort and ndarray.sort() (in place) / argsort(): every dtype,
  sizes 0, 1, 7 to 100k, many ties (argsort equals np.argsort(kind='stable')),
  NaN / inf / -0.0 (NaN last), every axis of 2-D and 3-D arrays (negative
  ones too), axis=None, non-contiguous inputs, descending=True as the array API
  and array-api-strict define it (the ascending order reversed for values, NaN
  first; equal elements keep their order), 0-d inputs as NumPy (sort: AxisError;
  argsort: [0]), NumPy's kind= and order= spellings;
- offload.searchsorted: both sides, sorter=, NaN, x2 of any shape, mixed dtypes
  (NumPy's common dtype), scalars;
- unique_values / unique_counts / unique_inverse / unique_all: NumPy 2's
  np.unique_all (each NaN distinct, inverse_indices of x's shape, indices the
  first occurrence);
- errors: NumPy arrays (TypeError), bad axes (AxisError), bad kind/side
  (ValueError), operands on two devices (ExecutionPlacementError).

- complex64 / complex128: sort, argsort, unique_*, searchsorted in NumPy 2's
  order (lexicographic on real, imag; then NaN imag by real, NaN real by imag,
  both NaN), with NaN, inf and signed zeros in either part;
- every path of the radix sort: sizes over many runs / tiles with tails, several
  rows, passes skipped because every key shares a digit (small ranges,
  constants), both forms of the pass (the CPU's runs and the GPU's tiles, the
  latter forced with OFFLOAD_SORT_FORM=tiles on PoCL: Intel's CPU compiler
  gets the tile kernel wrong, and tiles are for GPUs).

Inputs are fresh random data each run; a failing test prints its seed
(OFFLOAD_TEST_SEED=<n>).
"""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    SLICES,
    TWO_CPUS_ENV,
    check_equal,
    device_fixture,
    load_offload,
    random_array,
    rng,
    run_python,
)

ol = load_offload()
device = device_fixture(ol)

FLOATS = ["float32", "float64"]
COMPLEX = ["complex64", "complex128"]


def on(device, a):
    return ol.asarray(a, device=device)


def data(rng, dtype, shape, ties=False):
    """Random data of dtype: the whole range (with NaN, inf, -0.0 for floats),
    or (ties) a few distinct values, so that equal keys abound."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        parts = np.array([-1.5, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan])
        n = int(np.prod(shape))
        if ties:
            re, im = rng.choice(parts, n), rng.choice(parts, n)
        else:  # mostly distinct, a tenth of each part special
            re, im = rng.standard_normal(n), rng.standard_normal(n)
            for p in (re, im):
                special = rng.random(n) < 0.1
                p[special] = rng.choice(parts, special.sum())
        z = np.empty(n, dt)
        z.real, z.imag = re, im  # not re + 1j * im: 1j * inf has a NaN real part
        return z.reshape(shape)
    if not ties:
        a = random_array(dtype, shape, seed=int(rng.integers(2**31)))
        return np.ascontiguousarray(a)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind == "u":
        a = rng.integers(0, 4, n).astype(dt)
    elif dt.kind == "i":
        a = rng.integers(-2, 2, n).astype(dt)
    else:
        a = rng.choice(np.array([-1.5, -0.0, 0.0, 2.0, np.inf, np.nan], dt), n)
    return a.reshape(shape)


def desc_sort(a, axis=-1):
    """The array API's descending sort: array-api-strict's np.flip of the ascending
    sort, but stable (equal values, -0.0 and 0.0 too, keep their order, as the
    spec asks of stable=True), so that the bits compare."""
    return np.take_along_axis(a, desc_argsort(a, axis), axis=axis)


def desc_argsort(a, axis=-1):
    """array-api-strict's descending argsort: equal elements keep their order."""
    n = a.shape[axis]
    flipped = np.argsort(np.flip(a, axis=axis), axis=axis, kind="stable")
    return (n - 1 - np.flip(flipped, axis=axis)).astype(np.int64)


def bits_equal(got, want, what):
    """Sorted values compare bit for bit (NaN payloads, -0.0), complex too."""
    g, w = ol.asnumpy(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, g.shape, w.dtype, w.shape)
    u = f"u{w.dtype.itemsize // (2 if w.dtype.kind == 'c' else 1)}"
    assert np.array_equal(g.view(u), w.view(u)), f"{what}: {g} != {w}"


def check_sorts(x, a, axis=-1, descending=False):
    if descending:
        want_s, want_i = desc_sort(a, axis), desc_argsort(a, axis)
    else:
        want_s, want_i = np.sort(a, axis=axis, kind="stable"), np.argsort(a, axis=axis, kind="stable")
    bits_equal(ol.sort(x, axis=axis, descending=descending), want_s, f"sort axis={axis} desc={descending}")
    check_equal(ol.argsort(x, axis=axis, descending=descending), want_i.astype(np.int64),
                f"argsort axis={axis} desc={descending}")


# ============================================================================ sort, argsort


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 7, 300, 1000])
def test_sort_1d(device, rng, dtype, n):
    a = data(rng, dtype, (n,))
    x = on(device, a)
    check_sorts(x, a)
    check_sorts(x, a, descending=True)
    check_equal(x, a, "sort changed its input")


@pytest.mark.parametrize("dtype", DTYPES)
def test_argsort_is_stable_with_many_ties(device, rng, dtype):
    a = data(rng, dtype, (3000,), ties=True)
    x = on(device, a)
    check_sorts(x, a)
    check_sorts(x, a, descending=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_inf_and_signed_zeros(device, dtype):
    a = np.array([np.nan, 1.0, -0.0, -np.inf, 0.0, np.nan, np.inf, -0.0, -1.0, 0.0, -np.nan], dtype)
    x = on(device, a)
    check_sorts(x, a)
    check_sorts(x, a, descending=True)
    s = ol.sort(x).asnumpy()
    assert np.isnan(s[-3:]).all() and not np.isnan(s[:-3]).any()
    s = ol.sort(x, descending=True).asnumpy()
    assert np.isnan(s[:3]).all() and not np.isnan(s[3:]).any()


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_large(device, rng, dtype):
    a = data(rng, dtype, (100_000,))
    x = on(device, a)
    check_equal(ol.sort(x), np.sort(a, kind="stable"), "sort of 100k")
    check_equal(ol.argsort(x), np.argsort(a, kind="stable"), "argsort of 100k")


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint64", "bool"])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_2d_every_axis(device, rng, dtype, axis):
    a = data(rng, dtype, (37, 50), ties=True)
    x = on(device, a)
    check_sorts(x, a, axis=axis)
    check_sorts(x, a, axis=axis, descending=True)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_3d_every_axis(device, rng, axis):
    a = data(rng, "int64", (4, 5, 60), ties=True)
    x = on(device, a)
    check_sorts(x, a, axis=axis)
    check_sorts(x, a, axis=axis, descending=True)


def test_many_short_rows(device, rng):
    a = data(rng, "float64", (2000, 3), ties=True)  # row numbers past 2**8: three row passes
    check_sorts(on(device, a), a)
    check_sorts(on(device, a), a, axis=0)


def test_empty_and_zero_length_axes(device):
    for shape, axis in [((0,), -1), ((3, 0), -1), ((3, 0), 0), ((0, 4), 0), ((0, 4), 1)]:
        a = np.zeros(shape, "float32")
        check_sorts(on(device, a), a, axis=axis)


def test_axis_none_flattens(device, rng):
    a = data(rng, "int32", (6, 7), ties=True)
    x = on(device, a)
    check_equal(ol.sort(x, axis=None), np.sort(a, axis=None, kind="stable"))
    check_equal(ol.argsort(x, axis=None), np.argsort(a, axis=None, kind="stable"))


def test_0d(device):
    a = np.array(2.5)
    x = on(device, a)
    with pytest.raises(np.exceptions.AxisError):
        np.sort(a)
    with pytest.raises(np.exceptions.AxisError):
        ol.sort(x)
    with pytest.raises(np.exceptions.AxisError):
        x.sort()
    check_equal(ol.argsort(x), np.argsort(a).astype(np.int64), "argsort of 0-d")
    check_equal(ol.sort(x, axis=None), np.sort(a, axis=None), "sort of 0-d, axis=None")


@pytest.mark.parametrize("sid, base, view", [s for s in SLICES if s[0] not in ("3d[2,3]",)],
                         ids=[s[0] for s in SLICES if s[0] not in ("3d[2,3]",)])
def test_non_contiguous(device, rng, sid, base, view):
    a = rng.integers(-5, 5, base.shape).astype("int64")
    va = view(a)
    vx = view(on(device, a))
    if va.ndim == 0:
        with pytest.raises(np.exceptions.AxisError):
            ol.sort(vx)
        return
    check_sorts(vx, va)
    check_sorts(vx, va, axis=0, descending=True)


def test_methods(device, rng):
    a = data(rng, "float32", (9, 40))
    x = on(device, a)
    check_equal(x.argsort(), np.argsort(a, kind="stable"), "x.argsort()")
    check_equal(x.argsort(axis=0, descending=True), desc_argsort(a, 0), "x.argsort(axis=0, descending)")
    assert x.sort() is None
    a.sort()
    check_equal(x, a, "x.sort()")
    b = data(rng, "int16", (300,), ties=True)
    y = on(device, b)
    y[::3].sort(kind="stable")  # in place into a strided view: its base's elements
    b[::3].sort(kind="stable")
    check_equal(y, b, "y[::3].sort()")
    z = on(device, b.reshape(20, 15))
    z.sort(0)
    check_equal(z, np.sort(b.reshape(20, 15), 0), "z.sort(0)")


def test_kind_order_and_errors(device):
    a = np.array([3, 1, 2], "int32")
    x = on(device, a)
    for kind in ["quicksort", "mergesort", "heapsort", "stable", None]:
        check_equal(ol.sort(x, kind=kind), np.sort(a, kind=kind))
        check_equal(ol.argsort(x, kind=kind, stable=True), np.argsort(a, kind=kind))
    with pytest.raises(ValueError, match="sort kind"):
        ol.sort(x, kind="bogus")
    with pytest.raises(ValueError):
        ol.sort(x, order="f")
    for bad in (1, -2):
        with pytest.raises(np.exceptions.AxisError):
            ol.sort(x, axis=bad)
        with pytest.raises(np.exceptions.AxisError):
            ol.argsort(x, axis=bad)
    with pytest.raises(TypeError, match="asarray"):
        ol.sort(a)
    with pytest.raises(TypeError):
        ol.argsort([3, 1, 2])
    with pytest.raises(TypeError):
        ol.sort(x, axis=1.5)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("n, ties", [(1, False), (9, True), (500, True), (3000, False), (40_000, True)])
def test_complex_sort(device, rng, dtype, n, ties):
    a = data(rng, dtype, (n,), ties)
    x = on(device, a)
    check_equal(ol.argsort(x), np.argsort(a, kind="stable").astype(np.int64), "argsort")
    bits_equal(ol.sort(x), np.sort(a, kind="stable"), "sort")
    check_equal(ol.argsort(x, descending=True), desc_argsort(a), "argsort descending")
    bits_equal(ol.sort(x, descending=True), desc_sort(a), "sort descending")


def test_complex_nan_classes(device):
    """NumPy's order: lexicographic, then NaN imag (by real), NaN real (by imag), both NaN."""
    n = np.nan
    a = np.array([complex(n, 1), complex(1, n), complex(n, n), 2 + 0j, complex(-1, n), complex(n, -3),
                  complex(-0.0, 1), complex(0.0, -1), complex(0.0, 1), complex(np.inf, n), -np.inf + 0j,
                  complex(n, n), complex(1, np.inf), complex(1, -np.inf)], "complex128")
    for dtype in COMPLEX:
        b = a.astype(dtype)
        x = on(device, b)
        check_equal(ol.argsort(x), np.argsort(b, kind="stable").astype(np.int64), f"{dtype} argsort")
        bits_equal(ol.sort(x), np.sort(b, kind="stable"), f"{dtype} sort")
        check_unique(x, b)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("axis", [0, -1])
def test_complex_2d(device, rng, dtype, axis):
    a = data(rng, dtype, (30, 41), ties=True)
    check_sorts(on(device, a), a, axis=axis)
    check_sorts(on(device, a), a, axis=axis, descending=True)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_unique_and_searchsorted(device, rng, dtype):
    a = data(rng, dtype, (600,), ties=True)
    check_unique(on(device, a), a)
    s = np.sort(a)
    v = data(rng, dtype, (4, 30), ties=True)
    for side in ("left", "right"):
        check_equal(ol.searchsorted(on(device, s), on(device, v), side=side),
                    np.searchsorted(s, v, side=side), f"{dtype} {side}")
    check_equal(ol.searchsorted(on(device, s), 1 + 2j), np.asarray(np.searchsorted(s, 1 + 2j)), "a Python complex")
    r = np.sort(rng.standard_normal(50)).astype("float32")
    check_equal(ol.searchsorted(on(device, r), on(device, v)), np.searchsorted(r, v), "float32 in complex")


# ============================================================================ the radix sort's paths


@pytest.mark.parametrize("dtype, n, what", [
    ("float32", 300_001, "full"),     # many runs and tiles, a tail
    ("int64", 70_003, "small"),       # 64-bit keys, most digits shared: passes skipped
    ("uint8", 50_000, "full"),        # one 8-bit digit
    ("int32", 40_000, "constant"),    # every pass skipped
    ("float64", 65_536, "full"),      # whole tiles, no tail
    ("int16", 2_049, "full"),         # one element past a tile
])
def test_paths(device, rng, dtype, n, what):
    if what == "small":
        a = rng.integers(-300, 300, n).astype(dtype)
    elif what == "constant":
        a = np.full(n, -7, dtype)
    else:
        a = data(rng, dtype, (n,))
    x = on(device, a)
    check_equal(ol.argsort(x), np.argsort(a, kind="stable").astype(np.int64), f"argsort {what}")
    check_equal(ol.argsort(x, descending=True), desc_argsort(a), f"argsort descending {what}")
    bits_equal(ol.sort(x), np.sort(a, kind="stable"), f"sort {what}")


def test_rows_past_16_bits(device, rng):
    a = data(rng, "float32", (70_000, 3), ties=True)  # 70000 rows: row digits over 16 bits
    check_sorts(on(device, a), a)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("what", ["plain", "-0.0", "0.0 and -0.0", "one NaN", "NaNs of other bits"])
def test_value_sort_keys_alone(device, rng, dtype, what):
    """A value sort of one row sorts keys alone (no indices) where that is exact: not when
    -0.0 and +0.0 or NaNs of different bits both occur (then the index form, stable)."""
    n = 5000
    a = (rng.standard_normal(n) * 100).astype(dtype)
    u = f"u{a.dtype.itemsize}"
    if what != "plain":
        a[rng.random(n) < 0.05] = -0.0
    if what == "0.0 and -0.0":
        a[rng.random(n) < 0.05] = 0.0
    if what in ("one NaN", "NaNs of other bits"):
        a[rng.random(n) < 0.05] = np.nan
    if what == "NaNs of other bits":
        b = a.view(u).copy()
        nan = np.isnan(a)
        b[nan] ^= rng.integers(0, 2, n).astype(u)[nan]  # quiet NaNs of two payloads
        b[nan & (rng.random(n) < 0.5)] |= np.array(1, u) << np.array(8 * a.itemsize - 1, u)  # signs
        a = b.view(dtype)
    x = on(device, a)
    for shape in ((n,), (1, n)):
        check_sorts(on(device, a.reshape(shape)), a.reshape(shape))
        check_sorts(on(device, a.reshape(shape)), a.reshape(shape), descending=True)
    got = ol.unique_values(x).asnumpy()
    want = np.unique(a, equal_nan=False)  # sorted; each NaN its own value, as the array API
    assert got.size == want.size and np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint32", "int64", "uint64", "bool"])
def test_value_sort_keys_alone_ints(device, rng, dtype):
    a = data(rng, dtype, (3001,))
    x = on(device, a)
    bits_equal(ol.sort(x), np.sort(a, kind="stable"), "sort")
    bits_equal(ol.sort(x, descending=True), desc_sort(a), "sort descending")
    check_equal(ol.unique_values(x), np.unique(a), "unique_values")


TILES_CHILD = """
import os
os.environ["OFFLOAD_SORT_FORM"] = "tiles"
os.environ["OFFLOAD_SCAN_FORM"] = "blocks"  # the GPU's exclusive scans too
import numpy as np, offload
rng = np.random.default_rng(SEED)
pocl = [d for d in offload.get_devices() if "PoCL" in d.version]
bad = []
cases = [("float32", (1,)), ("float32", (7,)), ("float32", (2048,)), ("float32", (2049,)), ("int64", (9000,)),
         ("float64", (40000,)), ("uint8", (5000,)), ("int16", (300, 17)), ("complex64", (3000,)),
         ("bool", (4097,)), ("float32", (600_000,)), ("float32 no NaN", (70_001,)),
         ("float64 no NaN", (9000,)), ("int32", (4096,)), ("float32 const", (5000,)),
         ("int16 const", (40, 300))]
for dt, shape in cases:
    n = int(np.prod(shape))
    nonan = dt.endswith(" no NaN")  # keys alone (a value sort without indices)
    const = dt.endswith(" const")  # a word without a pass: its indices written as they are
    dt = dt.split()[0]
    if const:
        a = np.full(n, 3, dt)
    elif dt == "complex64":
        a = np.empty(n, dt)
        a.real, a.imag = rng.choice([0.0, 1.0, np.nan], n), rng.choice([-1.0, 2.0, np.nan], n)
    elif dt == "bool":
        a = rng.integers(0, 2, n).astype(bool)
    else:
        a = (rng.standard_normal(n) * 1000).astype(dt)
        if dt.startswith("float"):
            a[rng.random(n) < 0.05] = -0.0 if nonan else np.nan
    a = a.reshape(shape)
    x = offload.asarray(a, device=pocl[0])
    for axis in (-1, 0):
        got = offload.argsort(x, axis=axis).asnumpy()
        want = np.argsort(a, axis=axis, kind="stable")
        if not np.array_equal(got, want):
            bad.append([dt, shape, axis])
        u = f"u{a.dtype.itemsize // (2 if dt.startswith('complex') else 1)}"
        for desc in (False, True):
            got = offload.sort(x, axis=axis, descending=desc).asnumpy()
            order = want
            if desc:
                m = a.shape[axis]
                order = m - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
            if not np.array_equal(got.view(u), np.take_along_axis(a, order, axis).view(u)):
                bad.append([dt, shape, axis, "sort", desc])
    if dt != "complex64":
        u = offload.unique_values(x).asnumpy()
        nan = np.isnan(a) if dt.startswith("float") else np.zeros(a.shape, bool)
        uk = u[~np.isnan(u)] if dt.startswith("float") else u
        if not np.array_equal(uk, np.unique(a[~nan])) or u.size - uk.size != nan.sum():
            bad.append([dt, shape, "unique_values"])  # each NaN its own value
        if not np.array_equal(offload.unique_counts(x).counts.asnumpy()[: uk.size],
                              np.unique_counts(a[~nan]).counts):
            bad.append([dt, shape, "unique_counts"])
result["bad"] = bad if pocl else "no PoCL device"
"""


@pytest.mark.timeout(620)  # its child's own limit: on an empty cache PoCL builds every pass first
def test_tiles_form_on_pocl(rng):
    """The GPU's pass (tiles in local memory) and exclusive scans (blocks), forced on PoCL's CPU
    device."""
    r = run_python(TILES_CHILD.replace("SEED", str(int(rng.integers(2**31)))), timeout=600)
    assert r["bad"] == [], r["bad"]


# ============================================================================ searchsorted


@pytest.mark.parametrize("dtype", DTYPES)
def test_searchsorted(device, rng, dtype):
    a = np.sort(data(rng, dtype, (200,), ties=True))
    v = data(rng, dtype, (5, 8), ties=True)
    xa, xv = on(device, a), on(device, v)
    for side in ("left", "right"):
        check_equal(ol.searchsorted(xa, xv, side=side), np.searchsorted(a, v, side=side), side)
    perm = rng.permutation(len(a))
    p = a[perm]
    sorter = np.argsort(p, kind="stable")
    for side in ("left", "right"):
        check_equal(ol.searchsorted(on(device, p), xv, side=side, sorter=on(device, sorter)),
                    np.searchsorted(p, v, side=side, sorter=sorter), f"{side} with sorter")


def test_searchsorted_nan_inf(device):
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 2.0, 2.0, np.inf, np.nan, np.nan])
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0, 5.0, -7.0])
    for side in ("left", "right"):
        check_equal(ol.searchsorted(on(device, a), on(device, v), side=side), np.searchsorted(a, v, side=side))


def test_searchsorted_shapes_dtypes_scalars(device, rng):
    a = np.sort(rng.integers(-50, 50, 100)).astype("int32")
    xa = on(device, a)
    v = rng.standard_normal((3, 4, 5)) * 40
    check_equal(ol.searchsorted(xa, on(device, v)), np.searchsorted(a, v), "int32 in float64")
    u = rng.integers(0, 60, 9).astype("uint64")
    check_equal(ol.searchsorted(xa, on(device, u), side="right"), np.searchsorted(a, u, side="right"))
    check_equal(ol.searchsorted(xa, on(device, np.array(7, "int32"))), np.searchsorted(a, np.array(7, "int32")))
    check_equal(ol.searchsorted(xa, 7), np.asarray(np.searchsorted(a, 7)), "a Python int")
    check_equal(ol.searchsorted(xa, on(device, np.zeros((0, 3), "int32"))), np.zeros((0, 3), np.int64))
    empty = np.zeros(0, "float32")
    check_equal(ol.searchsorted(on(device, empty), on(device, v.astype("float32"))),
                np.searchsorted(empty, v.astype("float32")))
    with pytest.raises(ValueError):
        ol.searchsorted(on(device, a.reshape(10, 10)), xa)
    with pytest.raises(ValueError):
        ol.searchsorted(xa, xa, side="middle")
    with pytest.raises(TypeError):
        ol.searchsorted(a, xa)
    with pytest.raises(TypeError):
        ol.searchsorted(xa, a)
    with pytest.raises(ValueError):
        ol.searchsorted(xa, xa, sorter=on(device, np.arange(5)))


# ============================================================================ unique_*


def check_unique(x, a):
    want = np.unique_all(a)
    got = ol.unique_all(x)
    assert got._fields == ("values", "indices", "inverse_indices", "counts")
    for f in want._fields:
        w = getattr(want, f)
        (bits_equal if f == "values" else check_equal)(getattr(got, f), w if f == "values" else w.astype(np.int64),
                                                      f"unique_all.{f}")
    for fn, fields in [("unique_counts", ("values", "counts")), ("unique_inverse", ("values", "inverse_indices"))]:
        got = getattr(ol, fn)(x)
        assert got._fields == fields
        for f in fields:
            w = getattr(want, f)
            (bits_equal if f == "values" else check_equal)(getattr(got, f),
                                                          w if f == "values" else w.astype(np.int64), f"{fn}.{f}")
    v = ol.unique_values(x).asnumpy()
    assert v.dtype == a.dtype
    assert np.array_equal(v, np.sort(np.unique_values(a)), equal_nan=False) or np.array_equal(
        v, want.values, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(device, rng, dtype):
    a = data(rng, dtype, (300,), ties=True)
    check_unique(on(device, a), a)
    b = data(rng, dtype, (7,))
    check_unique(on(device, b), b)


def test_unique_nan_zeros_2d_and_large(device, rng):
    a = np.array([[3.0, np.nan, 1.0], [np.nan, 3.0, -0.0], [0.0, np.inf, -np.inf]], "float32")
    x = on(device, a)
    check_unique(x, a)
    got = ol.unique_all(x)
    assert got.inverse_indices.shape == (3, 3)
    assert np.isnan(got.values.asnumpy()).sum() == 2  # each NaN distinct
    big = rng.integers(0, 1000, 50_000).astype("int64")
    check_unique(on(device, big), big)
    for shape in [(0,), (3, 0)]:
        e = np.zeros(shape, "float64")
        check_unique(on(device, e), e)
    one = np.array(5, "int16")  # 0-d: the flattened array
    check_unique(on(device, one), one)
    nonc = big.reshape(250, 200)[::-3, 1::7]
    check_unique(on(device, big).reshape((250, 200))[::-3, 1::7], nonc)


def test_unique_refuses_numpy(device):
    with pytest.raises(TypeError):
        ol.unique_values(np.arange(3))


# ============================================================================ two devices


def test_two_devices_raise_placement_error():
    r = run_python(
        """
        import numpy as np, offload
        a = offload.asarray(np.arange(6.0), device='cpu:0')
        b = offload.asarray(np.arange(6.0), device='cpu:1')
        s = offload.asarray(np.arange(6), device='cpu:1')
        result['errors'] = {}
        for name, f in {'searchsorted(a, b)': lambda: offload.searchsorted(a, b),
                        'searchsorted(a, a, sorter=s)': lambda: offload.searchsorted(a, a, sorter=s)}.items():
            try:
                f()
                result['errors'][name] = None
            except Exception as e:
                result['errors'][name] = [type(e).__name__, str(e), isinstance(e, offload.ExecutionPlacementError)]
        result['sortdev'] = offload.sort(b).device.filter_string
        result['uniqdev'] = offload.unique_values(b).device.filter_string
        """,
        env=TWO_CPUS_ENV,
    )
    for name, err in r["errors"].items():
        assert err is not None, f"{name}: operands on two devices were combined"
        assert err[2], f"{name}: {err[0]}: {err[1]}"
        assert "opencl:cpu:0" in err[1] and "opencl:cpu:1" in err[1], err[1]
    assert r["sortdev"] == "opencl:cpu:1" and r["uniqdev"] == "opencl:cpu:1"
