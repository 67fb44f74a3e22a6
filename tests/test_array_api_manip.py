"""The array API's manipulation functions (2024.12) on offload arrays, checked
against NumPy (issue 22): broadcast_arrays broadcast_to concat expand_dims
flip moveaxis permute_dims repeat reshape roll squeeze stack tile unstack,
and NumPy's names and conveniences (concatenate transpose swapaxes ravel
atleast_1d/2d/3d hstack vstack).

- results: NumPy's values, shape and dtype (concat and stack promote as
  numpy.result_type, NumPy 2) for every dtype offload arrays hold (complex
  dtypes do not exist yet), on the input's device;
- views where NumPy gives views (broadcast_*, expand_dims, flip, moveaxis,
  permute_dims, squeeze, unstack, reshape when the layout allows): a later
  change to the input shows through them and a write through them changes
  the input, exactly where NumPy's do; copies (concat, stack, repeat, roll,
  tile) do not;
- 0-d, empty and non-contiguous inputs (steps, negative strides, .T),
  negative axes;
- errors: NumPy's exception classes (AxisError for an axis out of range)
  and, where short, its wording; arrays on two devices raise
  ExecutionPlacementError naming both; NumPy arrays and lists raise a
  TypeError that says to call offload.asarray.

Runs on every device offload sees. Inputs are fresh random data each run;
a failing test prints its seed: OFFLOAD_TEST_SEED=<n> reruns it.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.exceptions import AxisError

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    TWO_CPUS_ENV,
    device_fixture,
    load_offload,
    rng,
    run_python,
)

ol = load_offload()

device = device_fixture(ol)


def make(rng, dtype, shape):
    """Random values over dtype's range (NaN, inf, -0.0 among floats)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        a = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    else:
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n)).astype(dt)
        special = np.array([np.nan, np.inf, -np.inf, -0.0], dt)
        k = min(n, len(special))
        a[:k] = special[:k]
        rng.shuffle(a)
    return a.reshape(shape)


def on(device, a):
    return ol.asarray(a, device=device)


def check(got, want, device, what):
    """got: an offload array on device with want's dtype, shape and values (bit for bit)."""
    assert isinstance(got, ol.ndarray), f"{what}: offload returned {type(got).__name__}"
    assert got.device == device, f"{what}: the result lives on {got.device}, not {device}"
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy's is {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy's is {want.shape}"
    g = got.asnumpy()
    if want.dtype.kind == "f":
        u = np.dtype(f"u{want.dtype.itemsize}")
        same = np.array_equal(np.ascontiguousarray(g).view(u), np.ascontiguousarray(want).view(u))
        assert same, f"{what}: values differ\n got {g!r}\nwant {want!r}"
    else:
        np.testing.assert_array_equal(g, want, err_msg=what, strict=True)


def check_tuple(got, want, device, what, kind=tuple):
    assert isinstance(got, kind), f"{what}: {type(got).__name__}, not a {kind.__name__}"
    assert len(got) == len(want), f"{what}: {len(got)} arrays, NumPy gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        check(g, w, device, f"{what}[{i}]")


# ============================================================================
# Views: NumPy's values, and NumPy's sharing of memory with the input

# (name, function on (namespace, array)) -- both NumPy's and offload's give a view
VIEWS = [
    ("broadcast_to", lambda m, x: m.broadcast_to(x[:, :1], (2, 3, 5))),
    ("broadcast_to new dims", lambda m, x: m.broadcast_to(x[0], (4, 3, 5))),
    ("expand_dims 0", lambda m, x: m.expand_dims(x, axis=0)),
    ("expand_dims -1", lambda m, x: m.expand_dims(x, axis=-1)),
    ("expand_dims (0, 3)", lambda m, x: m.expand_dims(x, axis=(0, 3))),
    ("flip", lambda m, x: m.flip(x)),
    ("flip 1", lambda m, x: m.flip(x, axis=1)),
    ("flip (0, -1)", lambda m, x: m.flip(x, axis=(0, -1))),
    ("moveaxis 0 -1", lambda m, x: m.moveaxis(x, 0, -1)),
    ("moveaxis (0, 1) (2, 0)", lambda m, x: m.moveaxis(x, (0, 1), (2, 0))),
    ("permute_dims", lambda m, x: m.permute_dims(x, (2, 0, 1))),
    ("permute_dims neg", lambda m, x: m.permute_dims(x, (-1, -3, -2))),
    ("transpose", lambda m, x: m.transpose(x)),
    ("transpose axes", lambda m, x: m.transpose(x, (1, 0, 2))),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 2)),
    ("squeeze", lambda m, x: m.squeeze(x[:, :1, :], axis=1)),
    ("squeeze (0, 2)", lambda m, x: m.squeeze(x[:1, :, 2:3], axis=(0, -1))),
    ("squeeze all", lambda m, x: m.squeeze(x[:1, 1:2])),
    ("reshape", lambda m, x: m.reshape(x, (6, 5))),
    ("reshape -1", lambda m, x: m.reshape(x, (-1,))),
    ("reshape split", lambda m, x: m.reshape(x, (2, 3, 5, 1))),
    ("reshape of a step view", lambda m, x: m.reshape(x[:, ::2], (2, 2, 1, 5))),
    ("reshape of a flipped view", lambda m, x: m.reshape(x[:, :, ::-1], (6, 5))),
    ("ravel", lambda m, x: m.ravel(x)),
    ("atleast_3d", lambda m, x: m.atleast_3d(x[0])),
    ("atleast_2d", lambda m, x: m.atleast_2d(x[0, 0])),
    ("atleast_1d", lambda m, x: m.atleast_1d(m.squeeze(x[:1, 1:2, 2:3]))),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_views(device, rng, dtype):
    a = make(rng, dtype, (2, 3, 5))
    x = on(device, a)
    views = {}
    for name, f in VIEWS:
        want = f(np, a)
        assert np.shares_memory(want, a), f"test table: NumPy's {name} is not a view"
        views[name] = f(ol, x)
        check(views[name], want, device, name)
    # a change to x shows through every view, as through NumPy's
    b = make(rng, dtype, (2, 3, 5))
    x[...] = on(device, b)
    for name, f in VIEWS:
        check(views[name], f(np, b), device, f"{name} after x changed")


# (name, function giving a view, the index written through it)
WRITES = [
    ("flip(x)[0]", lambda m, x: m.flip(x), (0,)),
    ("flip(x, axis=1)[1, 0]", lambda m, x: m.flip(x, axis=1), (1, 0)),
    ("permute_dims(x, (1, 0))[2, 0]", lambda m, x: m.permute_dims(x, (1, 0)), (2, 0)),
    ("moveaxis(x, 0, 1)[3, 1]", lambda m, x: m.moveaxis(x, 0, 1), (3, 1)),
    ("expand_dims(x, axis=1)[1, 0, 2]", lambda m, x: m.expand_dims(x, axis=1), (1, 0, 2)),
    ("squeeze(x[None], axis=0)[2, 3]", lambda m, x: m.squeeze(m.expand_dims(x, axis=0), axis=0), (2, 3)),
    ("unstack(x)[2][1]", lambda m, x: m.unstack(x)[2], (1,)),
    ("unstack(x, axis=1)[3][0]", lambda m, x: m.unstack(x, axis=1)[3], (0,)),
    ("reshape(x, (-1,))[7]", lambda m, x: m.reshape(x, (-1,)), (7,)),
    ("x.reshape(2, 2, 4)[1, 0, 3]", lambda m, x: x.reshape(2, 2, 4), (1, 0, 3)),
    ("broadcast_arrays(x, y)[0][1, 2]", lambda m, x: m.broadcast_arrays(x, x[:1])[0], (1, 2)),
]


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_writes_through_views(device, rng, dtype):
    for name, f, idx in WRITES:
        a = make(rng, dtype, (4, 4))
        x = on(device, a)
        f(ol, x)[idx] = 5
        want = a.copy()
        f(np, want)[idx] = 5
        check(x, want, device, f"x after {name} = 5")


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_unstack(device, rng, dtype):
    a = make(rng, dtype, (3, 4, 5))
    x = on(device, a)
    for axis in (0, 1, 2, -1, -3):
        check_tuple(ol.unstack(x, axis=axis), np.unstack(a, axis=axis), device, f"unstack axis={axis}")
    check_tuple(ol.unstack(x), np.unstack(a), device, "unstack")
    check_tuple(ol.unstack(x.T, axis=1), np.unstack(a.T, axis=1), device, "unstack(x.T, axis=1)")
    check_tuple(ol.unstack(x[:, :0]), np.unstack(a[:, :0]), device, "unstack of empty")
    assert ol.unstack(x[:0]) == ()
    check_tuple(ol.unstack(x[0, 0]), np.unstack(a[0, 0]), device, "unstack 1-D: 0-d views")


@pytest.mark.parametrize("dtype", ["bool", "int16", "float64"])
def test_broadcast_arrays(device, rng, dtype):
    a, b, c = make(rng, dtype, (4, 1, 5)), make(rng, dtype, (3, 1)), make(rng, dtype, ())
    x, y, z = on(device, a), on(device, b), on(device, c)
    check_tuple(ol.broadcast_arrays(x, y, z), np.broadcast_arrays(a, b, c), device, "broadcast_arrays", list)
    check_tuple(ol.broadcast_arrays(x), np.broadcast_arrays(a), device, "broadcast_arrays(x)", list)
    check_tuple(ol.broadcast_arrays(x[::-1], y.T[:, :1]), np.broadcast_arrays(a[::-1], b.T[:, :1]), device,
                "broadcast_arrays of strided views", list)
    check_tuple(ol.broadcast_arrays(x[:, :, :0], y), np.broadcast_arrays(a[:, :, :0], b), device,
                "broadcast_arrays with an empty one", list)
    assert ol.broadcast_arrays() == []  # a list: the array API 2024.12 (NumPy 2: a tuple)
    check(ol.broadcast_to(z, (2, 3)), np.broadcast_to(c, (2, 3)), device, "broadcast_to of 0-d")
    check(ol.broadcast_to(x, (2, 4, 0, 5)), np.broadcast_to(a, (2, 4, 0, 5)), device, "broadcast_to empty")
    check(ol.broadcast_to(z, ()), np.broadcast_to(c, ()), device, "broadcast_to ()")
    check(ol.broadcast_to(y, 3 * [3]), np.broadcast_to(b, 3 * [3]), device, "broadcast_to a list shape")


def test_views_of_0d_and_empty(device, rng):
    a = make(rng, "int64", ())
    x = on(device, a)
    for name, f in [("expand_dims", lambda m, t: m.expand_dims(t, axis=0)),
                    ("expand_dims -1", lambda m, t: m.expand_dims(t, axis=-1)),
                    ("permute_dims", lambda m, t: m.permute_dims(t, ())),
                    ("squeeze", lambda m, t: m.squeeze(t)),
                    ("reshape (1, 1)", lambda m, t: m.reshape(t, (1, 1))),
                    ("reshape ()", lambda m, t: m.reshape(t, ())),
                    ("atleast_2d", lambda m, t: m.atleast_2d(t)),
                    ("broadcast_to", lambda m, t: m.broadcast_to(t, (3,)))]:
        check(f(ol, x), f(np, a), device, f"{name} of 0-d")
    # NumPy's flip of a 0-d array gives a scalar; the array API's an array
    check(ol.flip(x), a, device, "flip of 0-d")
    e = make(rng, "float32", (0, 3))
    y = on(device, e)
    for name, f in [("flip", lambda m, t: m.flip(t)), ("permute_dims", lambda m, t: m.permute_dims(t, (1, 0))),
                    ("expand_dims", lambda m, t: m.expand_dims(t, axis=1)),
                    ("reshape", lambda m, t: m.reshape(t, (3, 1, -1))),
                    ("moveaxis", lambda m, t: m.moveaxis(t, 0, 1)),
                    ("ravel", lambda m, t: m.ravel(t))]:
        check(f(ol, y), f(np, e), device, f"{name} of empty")


# ============================================================================
# reshape: views where the layout allows, copy=


def test_reshape(device, rng):
    a = make(rng, "float32", (4, 6, 5))
    x = on(device, a)
    for shape in [(120,), (-1,), (24, 5), (4, 30), (2, 2, -1), (1, 120, 1), (5, 4, 6), 120, [8, 15]]:
        check(ol.reshape(x, shape), np.reshape(a, shape), device, f"reshape {shape}")
        check(x.reshape(shape), a.reshape(shape), device, f"x.reshape({shape})")
    check(x.reshape(24, 5), a.reshape(24, 5), device, "x.reshape(24, 5)")
    check(x.reshape(2, -1, 3), a.reshape(2, -1, 3), device, "x.reshape(2, -1, 3)")
    for name, view in [("x.T", lambda t: t.T), ("x[::2]", lambda t: t[::2]), ("x[:, ::-1]", lambda t: t[:, ::-1]),
                       ("x[1, :, ::2]", lambda t: t[1, :, ::2]), ("x[:, 1:3]", lambda t: t[:, 1:3])]:
        va, vx = view(a), view(x)
        for shape in [(-1,), (va.size, 1), (va.shape[0], -1)]:
            want = np.reshape(va, shape)
            got = ol.reshape(vx, shape)
            check(got, want, device, f"reshape({name}, {shape})")
            # a view exactly where NumPy's is one: copy=False succeeds exactly then
            if np.shares_memory(want, a):
                check(ol.reshape(vx, shape, copy=False), want, device, f"reshape({name}, {shape}, copy=False)")
            else:
                with pytest.raises(ValueError, match="copy"):
                    ol.reshape(vx, shape, copy=False)
                with pytest.raises(ValueError):
                    np.reshape(va, shape, copy=False)
    # copy=True always copies; copy=None a view of a contiguous x
    c = ol.reshape(x, (120,), copy=True)
    v = ol.reshape(x, (120,))
    v2 = x.reshape(120, copy=False)
    x[...] = on(device, np.zeros_like(a))
    check(c, a.reshape(120), device, "reshape copy=True after x changed")
    check(v, np.zeros(120, "float32"), device, "reshape view after x changed")
    check(v2, np.zeros(120, "float32"), device, "x.reshape view after x changed")
    for bad in [(7,), (5, -1, 7), (-1, -1), (-2, 60), (0, -1)]:
        if bad != (-2, 60):  # NumPy 2.4 takes that one; the array API has no meaning for it
            with pytest.raises(ValueError):
                np.reshape(a, bad)
        with pytest.raises(ValueError):
            ol.reshape(x, bad)
        with pytest.raises(ValueError):
            x.reshape(bad)
    with pytest.raises(ValueError, match="one unknown dimension"):
        ol.reshape(x, (-1, -1))
    for bad in [(7,), (5, -1, 7), (7, 8), (-1, 7)]:
        with pytest.raises(ValueError) as want:
            np.reshape(a, bad)
        with pytest.raises(ValueError) as got:
            ol.reshape(x, bad)
        assert str(got.value) == str(want.value)
    with pytest.raises(ValueError):
        ol.reshape(on(device, np.zeros((0, 3))), (0, -1))  # as NumPy: -1 is unknowable there


# ============================================================================
# Copies: concat, stack, repeat, roll, tile


@pytest.mark.parametrize("dtype", DTYPES)
def test_copies(device, rng, dtype):
    a, b = make(rng, dtype, (3, 4, 5)), make(rng, dtype, (3, 2, 5))
    x, y = on(device, a), on(device, b)
    cases = [
        ("concat axis=1", lambda m, s, t: m.concat([s, t], axis=1)),
        ("concat axis=-2", lambda m, s, t: m.concat((t, s, t), axis=-2)),
        ("concat axis=None", lambda m, s, t: m.concat([s, t], axis=None)),
        ("concat axis=0", lambda m, s, t: m.concat([s, s[:1]])),
        ("stack", lambda m, s, t: m.stack([s, s, s])),
        ("stack axis=-1", lambda m, s, t: m.stack((t, t), axis=-1)),
        ("stack axis=2", lambda m, s, t: m.stack((t, t), axis=2)),
        ("repeat 3 axis=1", lambda m, s, t: m.repeat(s, 3, axis=1)),
        ("repeat 2 axis=None", lambda m, s, t: m.repeat(s, 2)),
        ("repeat 2 axis=-1", lambda m, s, t: m.repeat(t, 2, axis=-1)),
        ("roll 2", lambda m, s, t: m.roll(s, 2)),
        ("roll -7", lambda m, s, t: m.roll(s, -7)),
        ("roll 1 axis=1", lambda m, s, t: m.roll(s, 1, axis=1)),
        ("roll (1, -2) axis=(0, 2)", lambda m, s, t: m.roll(s, (1, -2), axis=(0, 2))),
        ("roll 13 axis=(0, 1, 2)", lambda m, s, t: m.roll(s, 13, axis=(0, 1, 2))),
        ("tile (2,)", lambda m, s, t: m.tile(s, (2,))),
        ("tile (2, 1, 3)", lambda m, s, t: m.tile(t, (2, 1, 3))),
        ("tile (2, 1, 1, 2)", lambda m, s, t: m.tile(t, (2, 1, 1, 2))),
    ]
    for name, f in cases:
        got = f(ol, x, y)
        check(got, f(np, a, b), device, name)
    # non-contiguous inputs
    for name, f in cases:
        check(f(ol, x.T[::-1], y.T[:, ::2]), f(np, a.T[::-1], b.T[:, ::2]), device, f"{name} of strided views")
    check(ol.concat([x.T, y.T[::-1]], axis=1), np.concat([a.T, b.T[::-1]], axis=1), device, "concat of .T views")
    check(ol.concat([x[:, ::-2], y[::-1, ::3]], axis=1), np.concat([a[:, ::-2], b[::-1, ::3]], axis=1), device,
          "concat of step views")
    check(ol.concat([x[:, ::-2], y.T], axis=None), np.concat([a[:, ::-2], b.T], axis=None), device,
          "concat axis=None of views")
    # results are copies: x changing later does not show
    r = ol.concat([x, x])
    x[...] = on(device, np.zeros_like(a))
    check(r, np.concat([a, a]), device, "concat after x changed")


def test_promotion(device, rng):
    pairs = [("int8", "uint8"), ("int64", "uint64"), ("bool", "int16"), ("int32", "float32"), ("float32", "float64"),
             ("uint32", "int8"), ("bool", "bool")]
    for p, q in pairs:
        a, b = make(rng, p, (2, 3)), make(rng, q, (2, 3))
        x, y = on(device, a), on(device, b)
        check(ol.concat([x, y]), np.concat([a, b]), device, f"concat {p} {q}")
        check(ol.concat([x, y], axis=None), np.concat([a, b], axis=None), device, f"concat None {p} {q}")
        check(ol.stack([x, y], axis=1), np.stack([a, b], axis=1), device, f"stack {p} {q}")
        check(ol.concatenate((y, x), 1), np.concatenate((b, a), 1), device, f"concatenate {q} {p}")


def test_empty_and_0d_copies(device, rng):
    a, e = make(rng, "int32", ()), make(rng, "int32", (0, 3))
    x, y = on(device, a), on(device, e)
    f = make(rng, "int32", (2, 3))
    z = on(device, f)
    for name, g in [("concat of empties", lambda m: m.concat([y, y])),
                    ("concat empty with full", lambda m: m.concat([y, z, y])),
                    ("concat 0-d axis=None", lambda m: m.concat([x, x, z], axis=None)),
                    ("stack 0-d", lambda m: m.stack([x, x, x])),
                    ("stack empty", lambda m: m.stack([y, y], axis=1)),
                    ("repeat 0-d", lambda m: m.repeat(x, 3)),
                    ("repeat 0", lambda m: m.repeat(z, 0, axis=1)),
                    ("repeat empty", lambda m: m.repeat(y, 2, axis=1)),
                    ("roll 0-d", lambda m: m.roll(x, 3)),
                    ("roll empty", lambda m: m.roll(y, 1, axis=1)),
                    ("roll empty axis", lambda m: m.roll(y, 1, axis=0)),
                    ("tile 0-d", lambda m: m.tile(x, (2, 3))),
                    ("tile ()", lambda m: m.tile(z, ())),
                    ("tile 0", lambda m: m.tile(z, (0, 2)))]:
        check(g(ol), g(np), device, name)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32", "float64"])
def test_repeat_by_array(device, rng, dtype):
    a = make(rng, dtype, (3, 700))
    x = on(device, a)
    for rdt in ["int64", "int32", "uint8", "bool"]:
        r = rng.integers(0, 4, 700).astype(rdt)
        r[:50] = 0  # a run of zeros at the start
        got = ol.repeat(x, on(device, r), axis=1)
        check(got, np.repeat(a, r, axis=1), device, f"repeat by {rdt} counts along axis 1")
    r = rng.integers(0, 5, 3)
    check(ol.repeat(x, on(device, r), axis=0), np.repeat(a, r, axis=0), device, "repeat along axis 0")
    check(ol.repeat(x, on(device, r), axis=-2), np.repeat(a, r, axis=-2), device, "repeat along axis -2")
    r = rng.integers(0, 3, 2100)
    check(ol.repeat(x, on(device, r)), np.repeat(a, r), device, "repeat flattened (blocks of counts)")
    # strided x and strided counts
    r = rng.integers(0, 3, 700)
    check(ol.repeat(x.T[::-2], on(device, r)[::2], axis=0), np.repeat(a.T[::-2], r[::2], axis=0), device,
          "repeat of strided x by strided counts")
    b = make(rng, dtype, (2, 5, 4))
    r = rng.integers(0, 3, 5)
    check(ol.repeat(on(device, b), on(device, r), axis=1), np.repeat(b, r, axis=1), device, "repeat 3-D middle axis")
    # one count (1-element or 0-d) for every element, as NumPy broadcasts it
    check(ol.repeat(x, on(device, np.array([2])), axis=1), np.repeat(a, np.array([2]), axis=1), device,
          "repeat by a 1-element array")
    check(ol.repeat(x, on(device, np.array(3)), axis=0), np.repeat(a, np.array(3), axis=0), device,
          "repeat by a 0-d array")
    z = np.zeros(700, "int64")
    check(ol.repeat(x, on(device, z), axis=1), np.repeat(a, z, axis=1), device, "repeat by zeros")


def test_repeat_errors(device, rng):
    x = on(device, np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="negative"):
        ol.repeat(x, on(device, np.array([1, -1, 2])), axis=1)
    with pytest.raises(ValueError, match="negative"):
        ol.repeat(x, -1)
    with pytest.raises(ValueError, match="broadcast"):
        ol.repeat(x, on(device, np.array([1, 2])), axis=1)
    for dt in ["uint64", "float32"]:
        with pytest.raises(TypeError):
            ol.repeat(x, on(device, np.array([1, 1, 1], dt)), axis=1)
        with pytest.raises(TypeError):
            np.repeat(np.ones((2, 3)), np.array([1, 1, 1], dt), axis=1)
    with pytest.raises(TypeError, match="offload.asarray"):
        ol.repeat(x, [1, 2, 3], axis=1)
    with pytest.raises(TypeError, match="offload.asarray"):
        ol.repeat(x, np.array([1, 2, 3]), axis=1)
    with pytest.raises(AxisError):
        ol.repeat(x, 2, axis=2)


# ============================================================================
# Errors


def test_errors_match_numpy(device):
    a = np.arange(24, dtype="int32").reshape(2, 3, 4)
    x = on(device, a)
    cases = {
        "flip axis=3": lambda m, t: m.flip(t, axis=3),
        "flip axis=(0, 0)": lambda m, t: m.flip(t, axis=(0, 0)),
        "expand_dims axis=4": lambda m, t: m.expand_dims(t, axis=4),
        "expand_dims axis=-5": lambda m, t: m.expand_dims(t, axis=-5),
        "expand_dims axis=(0, 0)": lambda m, t: m.expand_dims(t, axis=(0, 0)),
        "squeeze non-1": lambda m, t: m.squeeze(t, axis=0),
        "squeeze axis=3": lambda m, t: m.squeeze(t, axis=3),
        "moveaxis out of range": lambda m, t: m.moveaxis(t, 3, 0),
        "moveaxis lengths": lambda m, t: m.moveaxis(t, (0, 1), (0,)),
        "moveaxis repeated": lambda m, t: m.moveaxis(t, (0, 0), (0, 1)),
        "permute_dims short": lambda m, t: m.permute_dims(t, (0, 1)),
        "permute_dims repeated": lambda m, t: m.permute_dims(t, (0, 1, 1)),
        "permute_dims out of range": lambda m, t: m.permute_dims(t, (0, 1, 3)),
        "swapaxes out of range": lambda m, t: m.swapaxes(t, 0, -4),
        "broadcast_to fewer dims": lambda m, t: m.broadcast_to(t, (3, 4)),
        "broadcast_to mismatch": lambda m, t: m.broadcast_to(t, (2, 2, 4)),
        "broadcast_to negative": lambda m, t: m.broadcast_to(t, (-1, 3, 4)),
        "broadcast_arrays mismatch": lambda m, t: m.broadcast_arrays(t, t[:, :2]),
        "concat axis=3": lambda m, t: m.concat([t, t], axis=3),
        "concat 0-d": lambda m, t: m.concat([m.squeeze(t[:1, :1, :1]), m.squeeze(t[:1, :1, :1])]),
        "concat ndim": lambda m, t: m.concat([t, t[0]]),
        "concat shape": lambda m, t: m.concat([t, t[:, :2]], axis=0),
        "concat none": lambda m, t: m.concat([]),
        "stack none": lambda m, t: m.stack([]),
        "stack shapes": lambda m, t: m.stack([t, t[:1]]),
        "stack axis=4": lambda m, t: m.stack([t, t], axis=4),
        "unstack 0-d": lambda m, t: m.unstack(m.squeeze(t[:1, :1, :1])),
        "unstack axis=3": lambda m, t: m.unstack(t, axis=3),
        "roll axis=3": lambda m, t: m.roll(t, 1, axis=3),
        "tile negative": lambda m, t: m.tile(t, (-1,)),
        "repeat axis=-4": lambda m, t: m.repeat(t, 1, axis=-4),
    }
    for name, f in cases.items():
        with pytest.raises(Exception) as want:
            f(np, a)
        with pytest.raises(Exception) as got:
            f(ol, x)
        assert isinstance(got.value, type(want.value)), \
            f"{name}: offload raised {type(got.value).__name__}: {got.value}; NumPy {type(want.value).__name__}"
        if isinstance(want.value, AxisError) or len(str(want.value)) < 160:
            assert str(got.value) == str(want.value), f"{name}: the message differs from NumPy's"
    # AxisError is both a ValueError and an IndexError, as NumPy's
    with pytest.raises(IndexError):
        ol.flip(x, axis=5)
    with pytest.raises(ValueError):
        ol.flip(x, axis=5)
    check(x, a, device, "x after the refused calls")


def test_host_data_is_refused(device):
    x = on(device, np.arange(6.0))
    n = np.arange(6.0)
    for name, f in {
        "concat([x, numpy])": lambda: ol.concat([x, n]),
        "concat([x, list])": lambda: ol.concat([x, [1.0, 2.0]]),
        "stack([numpy, x])": lambda: ol.stack([n, x]),
        "flip(numpy)": lambda: ol.flip(n),
        "reshape(list)": lambda: ol.reshape([1, 2], (2,)),
        "broadcast_arrays(x, numpy)": lambda: ol.broadcast_arrays(x, n),
        "broadcast_to(numpy)": lambda: ol.broadcast_to(n, (2, 6)),
        "roll(numpy)": lambda: ol.roll(n, 1),
        "tile(list)": lambda: ol.tile([1, 2], 2),
        "repeat(numpy)": lambda: ol.repeat(n, 2),
        "expand_dims(numpy)": lambda: ol.expand_dims(n),
        "unstack(numpy)": lambda: ol.unstack(n),
        "permute_dims(numpy)": lambda: ol.permute_dims(n, (0,)),
        "hstack([x, numpy])": lambda: ol.hstack([x, n]),
    }.items():
        with pytest.raises(TypeError, match="offload.asarray"):
            f()
    with pytest.raises(TypeError):
        ol.concat(x)  # an array is not a sequence of arrays here
    with pytest.raises(TypeError):
        ol.flip(x, axis=0.5)


def two_devices():
    devs = ol.get_devices()
    return (devs[0], devs[1]) if len(devs) >= 2 else None


PLACEMENT_CASES = """
import numpy as np, offload
x = offload.asarray(np.arange(6.0), device=D0)
y = offload.asarray(np.arange(6.0), device=D1)
r = offload.asarray(np.ones(6, 'int64'), device=D1)
cases = {
    'concat': lambda: offload.concat([x, y]),
    'concat axis=None': lambda: offload.concat([x, y], axis=None),
    'stack': lambda: offload.stack([x, x, y]),
    'repeat': lambda: offload.repeat(x, r),
    'broadcast_arrays': lambda: offload.broadcast_arrays(x, y),
    'hstack': lambda: offload.hstack([x, y]),
}
result['errors'] = {}
for name, f in cases.items():
    try:
        f()
        result['errors'][name] = None
    except Exception as e:
        result['errors'][name] = [type(e).__name__, str(e), isinstance(e, offload.ExecutionPlacementError)]
result['dev'] = offload.concat([y, y]).device.filter_string
"""


def check_placement(r, d0, d1):
    for name, err in r["errors"].items():
        assert err is not None, f"{name}: arrays on two devices were combined"
        ename, msg, is_epe = err
        assert is_epe, f"{name}: {ename}: {msg}"
        assert d0 in msg and d1 in msg, f"{name}: the message should name both devices: {msg}"
    assert r["dev"] == d1


def test_two_devices():
    pair = two_devices()
    if pair:  # in this process: its two devices
        d0, d1 = (d.filter_string for d in pair)
        ns = {"result": {}, "D0": d0, "D1": d1}
        exec(PLACEMENT_CASES, ns)
        check_placement(ns["result"], d0, d1)
        return
    r = run_python(f"D0, D1 = 'cpu:0', 'cpu:1'\n{PLACEMENT_CASES}", env=TWO_CPUS_ENV)
    check_placement(r, "opencl:cpu:0", "opencl:cpu:1")


# ============================================================================
# NumPy's conveniences


def test_stacking_conveniences(device, rng):
    a, b, c = make(rng, "int16", (3,)), make(rng, "int16", (2, 3)), make(rng, "int16", ())
    x, y, z = on(device, a), on(device, b), on(device, c)
    check(ol.hstack([x, x[::-1]]), np.hstack([a, a[::-1]]), device, "hstack 1-D")
    check(ol.hstack((y, y.T.T[:, :1])), np.hstack((b, b[:, :1])), device, "hstack 2-D")
    check(ol.hstack([z, x]), np.hstack([c, a]), device, "hstack 0-d and 1-D")
    check(ol.vstack([x, y, x]), np.vstack([a, b, a]), device, "vstack")
    check(ol.vstack([z, z]), np.vstack([c, c]), device, "vstack 0-d")
    check_tuple(ol.atleast_1d(x, z), np.atleast_1d(a, c), device, "atleast_1d(x, z)")
    check_tuple(ol.atleast_2d(x, y, z), np.atleast_2d(a, b, c), device, "atleast_2d")
    check_tuple(ol.atleast_3d(x, y, z), np.atleast_3d(a, b, c), device, "atleast_3d")
    assert ol.atleast_1d(y) is y or ol.atleast_1d(y).shape == (2, 3)
    check(ol.ravel(y.T), np.ravel(b.T), device, "ravel of .T (a copy)")
    check(ol.transpose(y), np.transpose(b), device, "transpose")


def test_docstrings():
    for name in ["broadcast_arrays", "broadcast_to", "concat", "concatenate", "expand_dims", "flip", "moveaxis",
                 "permute_dims", "transpose", "swapaxes", "repeat", "reshape", "ravel", "roll", "squeeze", "stack",
                 "tile", "unstack", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack"]:
        doc = getattr(ol, name).__doc__
        assert doc and doc.startswith(name + "("), f"offload.{name} needs a docstring with its signature"
    assert ol.ndarray.reshape.__doc__.startswith("reshape(")
