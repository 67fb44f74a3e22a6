"""offload as an array API 2024.12 namespace (issue 22): the namespace itself
(__array_api_version__, __array_namespace_info__, x.__array_namespace__), the
data type functions (astype can_cast finfo iinfo isdtype result_type and the
dtype objects), the constants, the creation functions (zeros ones full empty
*_like eye linspace meshgrid tril triu asarray from_dlpack) and ndarray's
attributes (mT fill to_device __dlpack__ and the Python-number conversions),
checked against NumPy on every device offload sees.

Fills and assignments run as kernels now (x[::2] = 3, x.fill(v), zeros,
ones, full): outputs start poisoned so a missed element shows. Complex
dtypes do not exist yet and are left out. Inputs are fresh random data each
run; a failing test prints its seed (OFFLOAD_TEST_SEED=<n> reruns it).
"""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    device_fixture,
    load_offload,
    poisoned,
    rng,
)

ol = load_offload()

device = device_fixture(ol)

INTS = [d for d in DTYPES if np.dtype(d).kind in "iu"]
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric", ("bool", "real floating")]


def values(rng, dtype, shape):
    """Random values of dtype: whole-range integers, floats of mixed magnitudes with NaN."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, size=shape)).astype(dt)
    if a.size:
        a.flat[0] = np.nan
    return a


def put(a, device):
    return ol.asarray(a, device=device)


def check(got, expected):
    """got (an offload array on its device) holds NumPy's expected: dtype, shape, values."""
    assert isinstance(got, ol.ndarray)
    host = got.asnumpy()
    assert host.dtype == expected.dtype, (host.dtype, expected.dtype)
    assert host.shape == expected.shape, (host.shape, expected.shape)
    np.testing.assert_array_equal(host, expected)


# ============================================================================
# The namespace


def test_namespace_version_and_constants(device):
    assert ol.__array_api_version__ == "2024.12"
    x = ol.zeros(3, device=device)
    assert x.__array_namespace__() is ol
    for v in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        assert x.__array_namespace__(api_version=v) is ol
    for bad in ("2020.10", "2025.12", 2024.12):
        with pytest.raises(ValueError):
            x.__array_namespace__(api_version=bad)
    with pytest.raises(TypeError):
        x.__array_namespace__("2024.12")  # keyword-only
    assert ol.e == math.e and ol.pi == math.pi and ol.inf == math.inf and math.isnan(ol.nan)
    assert ol.newaxis is None


def test_namespace_info(device):
    info = ol.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True,
                                   "max dimensions": 32}
    devices = info.devices()
    assert isinstance(devices, list) and device in devices
    assert info.default_device() in devices
    assert info.default_device() == ol.default_device()
    d = info.default_dtypes(device=device)
    assert d["real floating"] == ("float64" if device.has_fp64 else "float32")
    assert d["complex floating"] == ("complex128" if device.has_fp64 else "complex64")
    assert d["integral"] == np.int64 and d["indexing"] == np.int64
    assert info.default_dtypes() == info.default_dtypes(device=info.default_device())
    held = [t for t in DTYPES + ["complex64", "complex128"]
            if t not in ("float64", "complex128") or device.has_fp64]
    everything = info.dtypes(device=device)
    assert list(everything) == held
    assert all(everything[n] == getattr(ol, n) for n in held)
    for kind in KINDS:
        got = info.dtypes(device=device, kind=kind)
        assert list(got) == [n for n in held if np.isdtype(np.dtype(n), kind)], kind
    with pytest.raises(ValueError):
        info.dtypes(kind="floating")
    with pytest.raises(TypeError):
        info.dtypes(device)  # keyword-only


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_objects_compare_both_ways(name, device):
    x = ol.zeros(2, dtype=getattr(ol, name), device=device)
    assert x.dtype == getattr(ol, name) and getattr(ol, name) == x.dtype
    assert x.dtype == name and x.dtype != (ol.int8 if name != "int8" else ol.uint8)


# ============================================================================
# Data type functions


def test_result_type_matches_numpy(device):
    arrays = {t: ol.zeros(1, dtype=t, device=device) for t in DTYPES}
    for a in DTYPES:
        for b in DTYPES:
            expected = np.result_type(np.dtype(a), np.dtype(b))
            if expected.kind not in "biuf":
                continue
            assert ol.result_type(getattr(ol, a), getattr(ol, b)) == expected
            assert ol.result_type(arrays[a], getattr(ol, b)) == expected
            assert ol.result_type(arrays[a], arrays[b]) == expected
        for scalar in (True, 1, 2.5):  # weak (NEP 50)
            try:
                expected = np.result_type(np.dtype(a), scalar)
            except TypeError:
                continue
            assert ol.result_type(arrays[a], scalar) == expected
    assert ol.result_type(ol.int8, ol.uint8, ol.int16, 1) == np.int16
    assert ol.result_type(ol.float32, 1j) == np.complex64  # a weak complex scalar
    with pytest.raises(TypeError):
        ol.result_type(ol.int8, np.float16)  # offload arrays hold no float16
    with pytest.raises(ValueError):
        ol.result_type()


def test_can_cast_isdtype_finfo_iinfo(device):
    for a in DTYPES:
        x = ol.zeros(1, dtype=a, device=device)
        for b in DTYPES:
            assert ol.can_cast(getattr(ol, a), getattr(ol, b)) == np.can_cast(a, b)
            assert ol.can_cast(x, b) == np.can_cast(a, b)
        for kind in KINDS + [ol.float32, (ol.int8, "real floating")]:
            assert ol.isdtype(x.dtype, kind) == np.isdtype(np.dtype(a), kind)
        if a in INTS:
            i = ol.iinfo(x)
            assert (i.bits, i.min, i.max, i.dtype) == (np.iinfo(a).bits, np.iinfo(a).min,
                                                      np.iinfo(a).max, np.dtype(a))
            assert ol.iinfo(getattr(ol, a)).max == np.iinfo(a).max
            with pytest.raises(ValueError):
                ol.finfo(x)
        elif a.startswith("float"):
            f = ol.finfo(getattr(ol, a))
            n = np.finfo(a)
            assert (f.bits, f.eps, f.max, f.min, f.smallest_normal, f.dtype) == (
                n.bits, n.eps, n.max, n.min, n.smallest_normal, np.dtype(a))
            assert ol.finfo(x).eps == n.eps
    with pytest.raises(TypeError):
        ol.can_cast(ol.int8, np.float16)
    with pytest.raises(TypeError):
        ol.finfo(np.float16)


@pytest.mark.parametrize("src", DTYPES)
def test_astype(src, device, rng):
    h = values(rng, src, (5, 7))[:, ::2]
    x = put(np.ascontiguousarray(h), device)[:, :]
    with np.errstate(all="ignore"):
        for dst in DTYPES:
            if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
                continue  # out of range float to int: undefined in C as in NumPy
            check(ol.astype(x, getattr(ol, dst)), h.astype(dst))
            check(x.astype(dst, copy=False), h.astype(dst))
    assert ol.astype(x, src, copy=False) is x
    assert x.astype(src, copy=False) is x
    y = ol.astype(x, src)
    assert y is not x
    check(y, h)
    other = [d for d in ol.get_devices() if d != device]
    if other:
        z = ol.astype(x, "int32" if src != "float64" else "float64", device=other[0], copy=False)
        assert z.device == other[0]
    with pytest.raises(TypeError):
        ol.astype(x, src, False)  # copy is keyword-only
    with pytest.raises(TypeError):
        ol.astype(h, src)  # a NumPy array


# ============================================================================
# Creation functions


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_ones_full(dtype, device, rng):
    for shape in [(), (0,), (3, 0), (300,), (4, 5, 17)]:
        check(ol.zeros(shape, dtype=dtype, device=device), np.zeros(shape, dtype))
        check(ol.ones(shape, dtype=dtype, device=device), np.ones(shape, dtype))
        v = values(rng, dtype, ()).item()
        if isinstance(v, float) and math.isnan(v):
            v = 1.25
        check(ol.full(shape, v, dtype=dtype, device=device), np.full(shape, v, dtype))
        assert ol.empty(shape, dtype=dtype, device=device).shape == shape
        x = put(values(rng, dtype, shape), device)
        for like, np_like in [(ol.zeros_like, np.zeros_like), (ol.ones_like, np.ones_like)]:
            check(like(x), np_like(x.asnumpy()))
        check(ol.full_like(x, 1), np.full_like(x.asnumpy(), 1))
        assert ol.empty_like(x, dtype="int16").dtype == np.int16
    if dtype in INTS:
        with pytest.raises(OverflowError):
            ol.full(3, 1 << 70, dtype=dtype, device=device)
    check(ol.full((2, 3), 3.75, dtype=dtype, device=device), np.full((2, 3), 3.75, dtype))


def test_creation_defaults(device):
    f = "float64" if device.has_fp64 else "float32"
    assert ol.zeros(2, device=device).dtype == f
    assert ol.full(2, 1.5, device=device).dtype == f
    assert ol.full(2, 7, device=device).dtype == np.int64
    assert ol.full(2, True, device=device).dtype == np.bool_
    assert ol.eye(2, device=device).dtype == f
    assert ol.linspace(0, 1, 3, device=device).dtype == f
    assert ol.zeros(2, device=device.filter_string).device == device
    with pytest.raises(ValueError):
        ol.zeros((2, -1), device=device)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "int64", "float32", "float64"])
def test_eye(dtype, device):
    for n, m, k in [(4, None, 0), (3, 5, 1), (5, 3, -2), (4, 4, 7), (4, 4, -9), (0, 3, 0),
                    (1, 1, 0), (6, 20, 3), (3, 3, 1 << 80), (3, 3, -(1 << 80))]:
        check(ol.eye(n, m, k=k, dtype=dtype, device=device), np.eye(n, m, k=k, dtype=dtype))
    check(ol.eye(3, 4, 1, dtype=dtype, device=device), np.eye(3, 4, 1, dtype=dtype))
    with pytest.raises(ValueError):
        ol.eye(-1, device=device)


LINSPACES = [
    (0, 1, 5), (2.0, 3.0, 7), (-1, 1e-300, 4), (0, 10, 1), (0, 1, 0), (1.5, -2.25, 300),
    (0.1, 0.7, 11), (-1e10, 3e9, 33), (5, 5, 4), (1, 1 + 1e-320, 3), (np.float32(0.1), np.float32(0.9), 9),
]


@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace(endpoint, device):
    for start, stop, num in LINSPACES:
        for dtype in [None, "float32", "float64", "int32", "int64", "uint8"]:
            if dtype in INTS and not (np.iinfo(dtype).min <= min(start, stop)
                                      and max(start, stop) <= np.iinfo(dtype).max):
                continue  # out of range float to int: undefined in C as in NumPy
            expected = np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
            got = ol.linspace(start, stop, num, endpoint=endpoint, dtype=dtype, device=device)
            if not device.has_fp64:
                np.testing.assert_allclose(got.asnumpy(), expected.astype(got.dtype), rtol=1e-6)
            else:
                check(got, expected)
    check(ol.linspace(0, 1, device=device), np.linspace(0, 1))
    check(ol.linspace(0, 1, num=4, device=device), np.linspace(0, 1, num=4))
    with pytest.raises(ValueError, match="must be non-negative"):
        ol.linspace(0, 1, -1, device=device)
    with pytest.raises(TypeError):
        ol.linspace(0, 1, 2.5, device=device)
    with pytest.raises(TypeError):
        ol.linspace(0, 1j, 3, device=device)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float32", "float64"])
def test_tril_triu(dtype, device, rng):
    base = values(rng, dtype, (3, 2, 6, 17))
    x = put(base, device)
    cases = [
        (x, base), (x[1], base[1]), (x[1, 0], base[1, 0]), (x.mT, np.swapaxes(base, -1, -2)),
        (x[::-1, :, 1::2, ::-3], base[::-1, :, 1::2, ::-3]), (x[:, 1, ::2], base[:, 1, ::2]),
        (x[0, 0, 2], base[0, 0, 2]),  # 1-D: NumPy makes it a square matrix
        (x[:, :, :0], base[:, :, :0]), (x[..., None], base[..., None]),
        (x.T, base.T),  # stack axes that cannot merge: copied first
    ]
    for k in (0, 1, -2, 20, -20):
        for a, h in cases:
            check(ol.tril(a, k=k), np.tril(h, k=k))
            check(ol.triu(a, k=k), np.triu(h, k=k))
    for k in (1 << 70, -(1 << 70)):  # NumPy overflows; beyond the matrix is beyond it
        check(ol.tril(x, k=k), np.tril(base, k=40 if k > 0 else -40))
        check(ol.triu(x, k=k), np.triu(base, k=40 if k > 0 else -40))
    check(ol.tril(x, 2), np.tril(base, 2))
    with pytest.raises(ValueError):
        ol.tril(x[0, 0, 0, 0, ...])
    with pytest.raises(TypeError):
        ol.triu(base)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(indexing, device, rng):
    hs = [values(rng, t, (n,)) for t, n in [("float32", 5), ("int64", 3), ("uint8", 4)]]
    xs = [put(h, device) for h in hs]
    for k in range(0, 4):
        got = ol.meshgrid(*xs[:k], indexing=indexing)
        expected = np.meshgrid(*hs[:k], indexing=indexing)
        assert isinstance(got, list) and len(got) == k
        for g, e in zip(got, expected):
            check(g, e)
    strided = put(values(rng, "float64" if device.has_fp64 else "float32", (9,)), device)[::-2]
    g = ol.meshgrid(strided, xs[1], indexing=indexing)
    for a, e in zip(g, np.meshgrid(strided.asnumpy(), hs[1], indexing=indexing)):
        check(a, e)
    g = ol.meshgrid(xs[0], xs[1], indexing=indexing)
    g[0][...] = 0  # copies, not views of the inputs
    check(xs[0], hs[0])
    with pytest.raises(ValueError, match="Valid values for `indexing`"):
        ol.meshgrid(xs[0], indexing="yx")
    with pytest.raises(TypeError):
        ol.meshgrid(hs[0])
    other = [d for d in ol.get_devices() if d != device]
    if other:
        with pytest.raises(ol.ExecutionPlacementError):
            ol.meshgrid(xs[0], ol.zeros(3, device=other[0]))


def test_asarray_and_from_dlpack(device, rng):
    h = values(rng, "int32", (4, 6))
    x = ol.asarray(h, device=device)
    check(x, h)
    assert ol.asarray(x) is x and ol.asarray(x, copy=False) is x
    assert ol.asarray(x, copy=True) is not x
    check(ol.asarray(x, dtype="float32"), h.astype("float32"))
    with pytest.raises(ValueError):
        ol.asarray(x, dtype="float32", copy=False)
    with pytest.raises(ValueError):
        ol.asarray(h, copy=False, device=device)
    assert ol.asarray(1, device=device).dtype == np.int64
    assert ol.asarray([True], device=device).dtype == np.bool_
    check(ol.from_dlpack(x[:, ::2]), h[:, ::2])
    check(ol.from_dlpack(h, device=device), h)
    assert ol.from_dlpack(h, device=device).device == device


# ============================================================================
# ndarray attributes


def test_mT_T_shape_size(device, rng):
    h = values(rng, "int16", (2, 3, 4, 5))
    x = put(h, device)
    check(x.mT, np.swapaxes(h, -1, -2))
    check(x[:, 1].mT, h[:, 1].mT)
    check(x.T, h.T)
    check(x[::-1, :, ::2].mT, h[::-1, :, ::2].mT)
    assert x.shape == (2, 3, 4, 5) and x.ndim == 4 and x.size == 120
    assert isinstance(x.shape, tuple)
    with pytest.raises(ValueError, match="matrix transpose with ndim < 2"):
        x[0, 0, 0].mT


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill_and_setitem(dtype, device, rng):
    h = poisoned((6, 40), dtype)
    x = put(h, device)
    v = values(rng, dtype, (3,))
    x[::2, 1::3] = v[1].item()
    h[::2, 1::3] = v[1].item()
    check(x, h)
    x[1] = put(v[:1], device)  # broadcast
    h[1] = v[:1]
    check(x, h)
    src = values(rng, dtype, (40,))
    x[3, ::-1] = put(src, device)[::-1]
    h[3, ::-1] = src[::-1]
    check(x, h)
    x[4:6, :] = src  # host data, broadcast
    h[4:6, :] = src
    check(x, h)
    other = values(rng, "int8" if dtype != "int8" else "uint8", (6, 1))
    with np.errstate(all="ignore"):
        x[:, 2:5] = put(other, device)  # cast as NumPy assigns
        h[:, 2:5] = other
    check(x, h)
    x[:, 1:] = x[:, :-1]  # overlapping
    h[:, 1:] = h[:, :-1]
    check(x, h)
    x[:, ::3].fill(v[2].item())
    h[:, ::3].fill(v[2].item())
    check(x, h)
    assert x.fill(v[0]) is None
    h.fill(v[0])
    check(x, h)
    x.fill(ol.asarray(v[1], device=device))
    h.fill(v[1])
    check(x, h)
    with pytest.raises(ValueError, match="could not broadcast"):
        x[1:3] = put(src[:7], device)
    with pytest.raises(ValueError):
        x.fill(put(src, device))
    with pytest.raises(ValueError):
        x.fill([1, 2])
    if dtype in INTS:
        with pytest.raises(OverflowError):
            x.fill(1 << 70)
        with pytest.raises(OverflowError):
            x[0, 0:2] = 1 << 70
    empty = put(np.zeros((0, 3), dtype), device)
    empty.fill(1)
    empty[...] = 2


def test_fill_truncates_as_numpy(device):
    x = put(poisoned(300, "int8"), device)
    x.fill(3.7)
    check(x, np.full(300, 3, "int8"))
    x[::7] = -2.9
    h = np.full(300, 3, "int8")
    h[::7] = -2
    check(x, h)


def _outcome(f, a):
    try:
        return f(a)
    except (TypeError, ValueError) as e:
        return type(e)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float32"])
def test_python_number_conversions(dtype, device, rng):
    for shape in [(), (1,), (1, 1), (0,), (3,)]:
        h = values(rng, dtype, shape)
        if h.size:
            h.flat[0] = 1 if dtype != "float32" else 2.5
        x = put(h, device)
        for f in (bool, int, float, complex, operator.index):
            assert _outcome(f, x) == _outcome(f, h), (f, shape)


def test_to_device_and_dlpack(device, rng):
    h = values(rng, "float32", (5, 8))
    x = put(h, device)
    assert x.to_device(device) is x
    assert x.to_device(device.filter_string) is x
    for d in ol.get_devices():
        y = x[:, ::3].to_device(d)
        assert y.device == d
        check(y, h[:, ::3])
    with pytest.raises(ValueError):
        x.to_device(device, stream=1)
    cap = x.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    assert "dltensor" in repr(x.__dlpack__())
    if device.backend != "cuda":  # OpenCL arrays export host copies (copy=None, True)
        np.testing.assert_array_equal(np.from_dlpack(x[1:, ::2]), h[1:, ::2])
        assert x.__dlpack_device__() == (1, 0)
        if device.device_type == "cpu":
            # copy=False: the device's own memory, mapped until the consumer lets go
            y = x.copy()
            y += 1  # queued work the export waits for
            v = np.from_dlpack(y[1:, ::2], copy=False)
            np.testing.assert_array_equal(v, (h + 1)[1:, ::2])
            v[...] = 0
            del v  # unmaps: the writes are the device's
            want = h + 1
            want[1:, ::2] = 0
            check(y, want)
            check(y * 2, want * 2)  # and kernels see them
        else:
            with pytest.raises(BufferError):
                x.__dlpack__(copy=False)
    else:
        assert x.__dlpack_device__()[0] == 2
