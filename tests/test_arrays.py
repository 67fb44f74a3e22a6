"""offload arrays: creation, round trips of every dtype, attributes, basic
slicing views, setitem, copies, DLPack with NumPy, memory, placement errors
(DESIGN.md, "The Python surface": Arrays). No JIT is involved.

Runs the standalone extension (<builddir>/python/offload*.so) in the pytest
process, on PoCL's CPU device (opencl:cpu:0); cases that need two devices run
in a child python that asks PoCL for two CPU devices.
"""

from __future__ import annotations

import gc
import re
import zlib

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (fixtures)
    A1,
    A2,
    CPU_FILTER,
    DTYPES,
    SLICES,
    TWO_CPUS_ENV,
    check_equal,
    cpu,
    ol,
    random_array,
    rss_bytes,
    run_python,
)

# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1001,), (37, 29), (3, 4, 5)], ids=["1d", "2d", "3d"])
def test_round_trip_every_dtype(ol, cpu, dtype, shape):
    a = random_array(dtype, shape, seed=zlib.crc32(f"{dtype}{shape}".encode()))
    x = ol.asarray(a)
    assert isinstance(x, ol.ndarray)
    assert x.device == cpu
    assert x.dtype == np.dtype(dtype)
    assert x.shape == shape
    back = ol.asnumpy(x)
    assert isinstance(back, np.ndarray)
    check_equal(back, a, "asnumpy")
    check_equal(x.asnumpy(), a, "x.asnumpy()")
    check_equal(np.asarray(x), a, "np.asarray(x)")
    # The host array is a copy: changing it after the transfer changes nothing on the device.
    a0 = a.copy()
    a[...] = a.flat[-1]
    check_equal(ol.asnumpy(x), a0, "after changing the source")
    # Nor does changing the result of asnumpy.
    back[...] = back.flat[0]
    check_equal(ol.asnumpy(x), a0, "after changing asnumpy's result")


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_with_explicit_dtype_and_device(ol, cpu, dtype):
    a = random_array(dtype, (64,), seed=7)
    for dev in (cpu, CPU_FILTER, "cpu"):
        x = ol.asarray(a, dtype=dtype, device=dev)
        assert x.device == cpu
        check_equal(x, a, f"device={dev!r}")
    # offload's dtype aliases and NumPy scalar types are accepted too
    alias = getattr(ol, dtype if dtype != "bool" else "bool_", None) or getattr(ol, dtype, None)
    assert alias is not None, f"offload.{dtype} alias is missing"
    check_equal(ol.asarray(a, dtype=alias), a, f"dtype=ol.{dtype}")
    check_equal(ol.asarray(a, dtype=np.dtype(dtype).type), a, f"dtype=np.{dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_of_strided_numpy_input(ol, dtype):
    a = random_array(dtype, (12, 10), seed=3)
    for src in (a[::2, ::-3], a.T, a[:, 4], np.asfortranarray(a)):
        check_equal(ol.asarray(src), np.ascontiguousarray(src), "strided numpy source")


@pytest.mark.parametrize(
    "src,dtype",
    [
        (np.arange(10, dtype="int32"), "float32"),
        (np.arange(10, dtype="int64"), "float64"),
        (np.linspace(-3, 3, 13), "int32"),
        (np.linspace(-3, 3, 13).astype("float32"), "float64"),
        (np.array([0, 1, 2, 0]), "bool"),
        (np.arange(300), "uint8"),
        (np.array([True, False]), "int16"),
        ([1, 2, 3], "float32"),
        ([[1.5, 2.5], [3.5, 4.5]], "int64"),
    ],
)
def test_asarray_converts_dtype(ol, src, dtype):
    want = np.asarray(src).astype(dtype)
    x = ol.asarray(src, dtype=dtype)
    assert x.dtype == np.dtype(dtype)
    check_equal(x, want, f"asarray(dtype={dtype})")


@pytest.mark.parametrize(
    "obj",
    [[1, 2, 3], [1.0, 2.5], [[1, 2], [3, 4]], [True, False], 5, 2.5, True, np.float32(1.5), np.int16(-3), []],
    ids=repr,
)
def test_asarray_from_python_objects(ol, obj):
    want = np.asarray(obj)
    x = ol.asarray(obj)
    check_equal(x, want, f"asarray({obj!r})")


def test_asarray_of_offload_array(ol, cpu):
    a = random_array("float32", (20,))
    x = ol.asarray(a)
    y = ol.asarray(x)
    check_equal(y, a)
    z = ol.asarray(x, copy=True)
    check_equal(z, a)
    x[...] = 0
    check_equal(z, a, "asarray(copy=True) is a copy")
    w = ol.asarray(x, dtype="float64")
    check_equal(w, np.zeros(20, "float64"))


@pytest.mark.parametrize(
    "bad",
    [
        np.array([1, 2], dtype="float16"),
        np.array([1, 2], dtype=np.clongdouble),
        np.array(["a", "b"]),
        np.array([object(), object()], dtype=object),
        np.array([b"x"]),
        np.zeros(2, dtype=[("a", "i4"), ("b", "f4")]),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
    ],
    ids=["float16", "clongdouble", "str", "object", "bytes", "struct", "datetime"],
)
def test_unsupported_dtypes_raise_type_error(ol, bad):
    with pytest.raises(TypeError) as ei:
        ol.asarray(bad)
    assert "float32" in str(ei.value) or "dtype" in str(ei.value).lower(), str(ei.value)


@pytest.mark.parametrize("dt", ["float16", np.clongdouble, "U3", object, "float128" if hasattr(np, "float128") else "e"])
def test_unsupported_dtype_argument_raises_type_error(ol, dt):
    with pytest.raises(TypeError):
        ol.zeros(3, dtype=dt)
    with pytest.raises(TypeError):
        ol.asarray([1, 2], dtype=dt)


def test_bad_dtype_spec(ol):
    with pytest.raises(TypeError):
        ol.zeros(3, dtype="nonsense")


def test_non_native_byte_order_input(ol):
    a = np.arange(10, dtype=">i4")
    x = ol.asarray(a)
    assert x.dtype == np.dtype("int32")
    check_equal(x, a.astype("int32"))


# ---------------------------------------------------------------- shapes and attributes


@pytest.mark.parametrize(
    "shape", [(), (1,), (7,), (3, 4), (2, 3, 4), (2, 1, 3, 1), (0,), (3, 0), (0, 5, 2)], ids=str
)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "float64"])
def test_attributes(ol, cpu, shape, dtype):
    a = random_array(dtype, shape, seed=1)
    x = ol.asarray(a)
    assert x.shape == shape and isinstance(x.shape, tuple)
    assert all(type(s) is int for s in x.shape)
    assert x.dtype == np.dtype(dtype)
    assert isinstance(x.dtype, np.dtype)
    assert x.ndim == len(shape)
    assert x.size == a.size
    assert x.itemsize == np.dtype(dtype).itemsize
    assert x.nbytes == a.nbytes
    if x.size:  # (NumPy 2.x gives zero-size arrays all-zero strides; any strides do there)
        assert x.strides == a.strides, "strides are in bytes, as NumPy's, for a fresh C-contiguous array"
    assert x.device == cpu
    assert x.usm_type in ("device", "shared", "host")
    check_equal(x, a)
    if len(shape) >= 1:
        assert len(x) == shape[0]


def test_len_of_0d_raises(ol):
    with pytest.raises(TypeError):
        len(ol.asarray(3.0))


def test_scalar_conversions_of_0d(ol):
    x = ol.asarray(np.float64(2.5))
    assert x.shape == () and x.ndim == 0 and x.size == 1
    assert float(x) == 2.5
    assert int(ol.asarray(7)) == 7
    assert bool(ol.asarray(True)) is True
    assert np.asarray(x).shape == ()


def test_shapes_zero_size(ol):
    for shape in [(0,), (3, 0), (0, 0, 4)]:
        for make in (ol.zeros, ol.ones, ol.empty):
            x = make(shape, dtype="float32")
            assert x.shape == shape and x.size == 0 and x.nbytes == 0
            check_equal(x, np.zeros(shape, "float32"), f"{make.__name__}{shape}")
        check_equal(ol.asarray(np.zeros(shape, "int8")).copy(), np.zeros(shape, "int8"))


# ---------------------------------------------------------------- creation functions


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_ones_full(ol, cpu, dtype):
    shape = (5, 3)
    check_equal(ol.zeros(shape, dtype=dtype), np.zeros(shape, dtype), "zeros")
    check_equal(ol.ones(shape, dtype=dtype), np.ones(shape, dtype), "ones")
    fill = {"b": True, "i": -7, "u": 200, "f": -1.25}[np.dtype(dtype).kind]
    check_equal(ol.full(shape, fill, dtype=dtype), np.full(shape, fill, dtype), "full")
    assert ol.zeros(shape, dtype=dtype).device == cpu


def test_creation_defaults_follow_numpy(ol):
    check_equal(ol.zeros(4), np.zeros(4), "zeros default dtype (float64 on a device with fp64)")
    check_equal(ol.ones((2, 3)), np.ones((2, 3)), "ones")
    check_equal(ol.zeros(0), np.zeros(0), "zeros(0)")
    check_equal(ol.zeros(()), np.zeros(()), "zeros(())")
    check_equal(ol.full((2, 2), 7), np.full((2, 2), 7), "full int")
    check_equal(ol.full(3, 1.5), np.full(3, 1.5), "full float")
    check_equal(ol.full(3, True), np.full(3, True), "full bool")
    assert ol.empty((4, 5)).shape == (4, 5)
    assert ol.empty((4, 5)).dtype == np.dtype("float64")
    assert ol.empty(6, dtype="u1").shape == (6,)


def test_full_extreme_values(ol):
    check_equal(ol.full(4, 2**64 - 1, dtype="uint64"), np.full(4, 2**64 - 1, "uint64"))
    check_equal(ol.full(4, -(2**63), dtype="int64"), np.full(4, -(2**63), "int64"))
    check_equal(ol.full(3, np.nan, dtype="float32"), np.full(3, np.nan, "float32"))
    check_equal(ol.full((2, 2), -0.0), np.full((2, 2), -0.0))


@pytest.mark.parametrize(
    "args,kw",
    [
        ((10,), {}),
        ((2, 11), {}),
        ((10, 0, -3), {}),
        ((0, 1, 0.25), {}),
        ((5,), {"dtype": "float32"}),
        ((-4, 4), {"dtype": "int8"}),
        ((0,), {}),
        ((5, 1), {}),
        ((1.5,), {}),
        ((0, 1000000), {"dtype": "int32"}),
    ],
    ids=str,
)
def test_arange(ol, args, kw):
    check_equal(ol.arange(*args, **kw), np.arange(*args, **kw), f"arange{args}{kw}")


def test_arange_step_zero(ol):
    with pytest.raises((ValueError, ZeroDivisionError)):
        ol.arange(0, 10, 0)


def test_like_functions(ol, cpu):
    x = ol.asarray(random_array("int16", (4, 6)))
    e = ol.empty_like(x)
    assert e.shape == (4, 6) and e.dtype == np.dtype("int16") and e.device == cpu
    z = ol.zeros_like(x)
    check_equal(z, np.zeros((4, 6), "int16"), "zeros_like")
    assert z.device == cpu
    zf = ol.zeros_like(x, dtype="float32")
    check_equal(zf, np.zeros((4, 6), "float32"), "zeros_like(dtype=)")
    # of a strided view: the view's shape, and a fresh contiguous array
    v = x[::2, ::-3]
    z = ol.zeros_like(v)
    check_equal(z, np.zeros((2, 2), "int16"), "zeros_like(view)")
    assert z.strides == np.zeros((2, 2), "int16").strides
    assert ol.empty_like(v).shape == (2, 2)


@pytest.mark.parametrize("shape", [-1, (2, -3), (-1,)], ids=str)
def test_negative_shape(ol, shape):
    with pytest.raises(ValueError):
        ol.zeros(shape)
    with pytest.raises(ValueError):
        ol.empty(shape)


def test_bad_shape_types(ol):
    with pytest.raises(TypeError):
        ol.zeros("abc")
    with pytest.raises(TypeError):
        ol.zeros((2.5, 3))


def test_creation_on_named_device(ol, cpu):
    for dev in (cpu, "cpu", CPU_FILTER, None):
        for x in (ol.zeros(3, device=dev), ol.ones(3, device=dev), ol.full(3, 2, device=dev),
                  ol.arange(3, device=dev), ol.empty(3, device=dev), ol.asarray([1], device=dev)):
            assert x.device == cpu


# ---------------------------------------------------------------- slicing views

@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "int64", "bool", "float64"])
@pytest.mark.parametrize("case", SLICES, ids=[c[0] for c in SLICES])
def test_slices_match_numpy(ol, case, dtype):
    name, base, f = case
    a = base.astype(dtype)
    x = ol.asarray(a)
    want = f(a)
    v = f(x)
    assert isinstance(v, ol.ndarray), f"{name}: {type(v)}"
    assert v.shape == want.shape, f"{name}: shape {v.shape} != {want.shape}"
    assert v.dtype == want.dtype
    assert v.ndim == want.ndim and v.size == want.size
    if want.size:
        assert v.strides == want.strides, f"{name}: strides {v.strides} != NumPy's {want.strides}"
    check_equal(ol.asnumpy(v), want.copy(), name)
    check_equal(np.asarray(v), want.copy(), f"np.asarray({name})")
    check_equal(v.copy(), want.copy(), f"{name}.copy()")


def test_integer_index_gives_element(ol):
    x = ol.asarray(A1)
    for i in (0, 3, -1, 16, -17):
        assert np.asarray(x[i]) == A1[i]
        assert np.asarray(x[i]).shape == ()
    x2 = ol.asarray(A2.astype("float32"))
    assert np.asarray(x2[3, 4]) == A2[3, 4]
    assert np.asarray(x2[-1, -1]) == A2[-1, -1]


def test_newaxis_index(ol):
    x = ol.asarray(A2)
    for f in (lambda a: a[None], lambda a: a[:, None], lambda a: a[..., None], lambda a: a[None, 1, ::2]):
        check_equal(f(x), f(A2).copy())


@pytest.mark.parametrize(
    "index,exc",
    [
        (17, IndexError),
        (-18, IndexError),
        ((0, 0), IndexError),
        (slice(None, None, 0), ValueError),
        ((Ellipsis, Ellipsis), IndexError),
        ("a", IndexError),
        (1.0, IndexError),
    ],
    ids=str,
)
def test_bad_indices(ol, index, exc):
    x = ol.asarray(A1)
    with pytest.raises((exc, TypeError) if exc is IndexError else exc):
        x[index]


def test_views_share_memory(ol):
    a = np.arange(20, dtype="float32")
    x = ol.asarray(a)
    v = x[1::3]
    v[...] = -1
    a[1::3] = -1
    check_equal(x, a, "writing through a view changes the base")
    w = v[::-2]
    w[...] = 9
    a[1::3][::-2] = 9
    check_equal(x, a, "writing through a view of a view")
    x[:] = 0
    check_equal(v, np.zeros(7, "float32"), "the view sees writes to the base")


def test_view_keeps_memory_alive(ol):
    a = random_array("float64", (100, 50), seed=11)
    x = ol.asarray(a)
    v = x[3:90:7, ::-4].T
    del x
    gc.collect()
    ol.zeros(100 * 50)  # reuse of freed memory would show here
    check_equal(v, a[3:90:7, ::-4].T.copy(), "view after its base was dropped")


# ---------------------------------------------------------------- setitem


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32", "float64", "bool"])
def test_setitem_scalars(ol, dtype):
    a = np.zeros((6, 7), dtype)
    x = ol.asarray(a)
    for index, value in [
        ((slice(2, 5),), 1),
        ((slice(None), 1), 1),
        ((slice(None, None, -2), slice(1, None, 3)), 1),
        ((3, 4), 0),
        ((Ellipsis,), 1),
        ((-1,), 0),
        ((slice(None, None, 2), 0), 1),
    ]:
        x[index] = value
        a[index] = value
        check_equal(x, a, f"x[{index}] = {value}")
    x[...] = 0
    a[...] = 0
    check_equal(x, a)


def test_setitem_values_converted_like_numpy(ol):
    a = np.zeros(5, "float32")
    x = ol.asarray(a)
    x[1] = 2.75
    a[1] = 2.75
    x[2] = True
    a[2] = True
    x[3:] = -1
    a[3:] = -1
    check_equal(x, a)
    i = ol.zeros(4, dtype="int32")
    i[0] = 7
    i[1:3] = np.int16(-3)
    check_equal(i, np.array([7, -3, -3, 0], "int32"))


@pytest.mark.parametrize("src_kind", ["numpy", "offload", "list"])
def test_setitem_arrays(ol, src_kind):
    a = random_array("float64", (8, 9), seed=5)
    x = ol.asarray(a)

    def src(v):
        if src_kind == "numpy":
            return v
        if src_kind == "list":
            return v.tolist()
        return ol.asarray(v)

    cases = [
        (np.s_[1:4], random_array("float64", (3, 9), seed=6)),
        (np.s_[::2, ::-3], random_array("float64", (4, 3), seed=7)),
        (np.s_[:, 2], random_array("float64", (8,), seed=8)),
        (np.s_[5], random_array("float64", (9,), seed=9)),
        (np.s_[...], random_array("float64", (8, 9), seed=10)),
    ]
    for index, value in cases:
        x[index] = src(value)
        a[index] = value
        check_equal(x, a, f"x[{index}] = {src_kind} array")


@pytest.mark.parametrize("layout", ["same", "big-endian", "fortran", "other-dtype", "read-only", "noncontig"])
def test_setitem_numpy_layouts(ol, layout):
    # A C-contiguous source of the view's dtype and shape is written from its own
    # buffer; every other layout must still arrive converted like NumPy does.
    a = random_array("float32", (6, 5), seed=21)
    x = ol.asarray(a)
    v = random_array("float32", (3, 5), seed=22)
    src = {
        "same": v,
        "big-endian": v.astype(">f4"),
        "fortran": np.asfortranarray(v),
        "other-dtype": v.astype(np.float64),
        "read-only": np.frombuffer(v.tobytes(), np.float32).reshape(3, 5),
        "noncontig": np.repeat(v, 2, axis=1)[:, ::2],
    }[layout]
    x[2:5] = src
    a[2:5] = src
    check_equal(x, a, f"x[2:5] = {layout} source")


def test_setitem_from_strided_offload_view(ol):
    a = random_array("int32", (10, 10), seed=2)
    b = random_array("int32", (10, 10), seed=3)
    x, y = ol.asarray(a), ol.asarray(b)
    x[::3, 1:5] = y[2:6, ::-3].T
    a[::3, 1:5] = b[2:6, ::-3].T
    check_equal(x, a)


def test_setitem_overlapping_self(ol):
    a = np.arange(10, dtype="int32")
    x = ol.asarray(a)
    x[1:] = x[:-1]
    a[1:] = a[:-1].copy()
    check_equal(x, a, "overlapping assignment behaves as if the source were copied first")


def test_setitem_converts_dtype(ol):
    a = np.zeros(6, "int16")
    x = ol.asarray(a)
    x[:3] = np.array([1.7, -2.2, 3.9])
    a[:3] = np.array([1.7, -2.2, 3.9])
    x[3:] = ol.asarray(np.array([True, False, True]))
    a[3:] = np.array([True, False, True])
    check_equal(x, a)


def test_setitem_shape_mismatch(ol):
    x = ol.zeros((4, 5), dtype="float32")
    with pytest.raises(ValueError):
        x[1:3] = np.ones((3, 5), "float32")
    with pytest.raises(ValueError):
        x[:, 0] = ol.ones(5, dtype="float32")
    check_equal(x, np.zeros((4, 5), "float32"), "a failed assignment changes nothing")


def test_setitem_broadcasts(ol):
    a = np.zeros((4, 5), "float32")
    x = ol.asarray(a)
    x[1:3] = np.arange(5, dtype="float32")
    a[1:3] = np.arange(5, dtype="float32")
    check_equal(x, a)


def test_setitem_unsupported_value(ol):
    x = ol.zeros(3)
    with pytest.raises((TypeError, ValueError)):
        x[0] = "abc"
    with pytest.raises(TypeError):
        x[0] = 1 + 2j


# ---------------------------------------------------------------- copies


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float64", "bool"])
def test_copy_is_independent(ol, cpu, dtype):
    a = random_array(dtype, (30, 7), seed=4)
    x = ol.asarray(a)
    y = x.copy()
    assert y.device == cpu and y.shape == x.shape and y.dtype == x.dtype
    poison = {"b": False, "i": -1, "u": 0xAB, "f": np.nan}[np.dtype(dtype).kind]
    x[...] = poison
    check_equal(y, a, "the copy after poisoning the original")
    y[0, 0] = a[1, 1]
    check_equal(x, np.full(a.shape, poison, dtype), "the original after writing to the copy")


def test_copy_of_view_is_contiguous(ol):
    a = random_array("float32", (9, 8), seed=8)
    x = ol.asarray(a)
    y = x[::-2, 1::3].copy()
    want = a[::-2, 1::3].copy()
    assert y.strides == want.strides
    check_equal(y, want)
    x[...] = 0
    check_equal(y, want, "the copy of a view is independent of its base")


@pytest.mark.parametrize("how", ["device", "filter", "short"])
def test_to_device_same_device(ol, cpu, how):
    a = random_array("int64", (5, 6), seed=9)
    x = ol.asarray(a)
    target = {"device": cpu, "filter": CPU_FILTER, "short": "cpu"}[how]
    y = x.to_device(target)
    assert isinstance(y, ol.ndarray)
    assert y.device == cpu
    check_equal(y, a)
    v = x[::2, ::-1].to_device(target)
    check_equal(v, a[::2, ::-1].copy())


def test_to_device_bad_target(ol):
    x = ol.zeros(3)
    with pytest.raises(ValueError):
        x.to_device("cpu::")
    with pytest.raises(TypeError):
        x.to_device(1.5)


def test_array_protocol(ol):
    a = random_array("float32", (4, 4), seed=12)
    x = ol.asarray(a)
    check_equal(np.asarray(x), a)
    check_equal(np.asarray(x, dtype="float64"), a.astype("float64"), "np.asarray(x, dtype=)")
    check_equal(np.array(x[::-1]), a[::-1].copy(), "np.array(view)")
    assert np.asarray(x).flags.writeable


# ---------------------------------------------------------------- repr


def test_repr_names_values_and_device(ol):
    x = ol.asarray(np.array([1, 2, 3], "int32"))
    r = repr(x)
    assert CPU_FILTER in r, r
    assert re.search(r"1\D+2\D+3", r), r
    f = ol.asarray(np.array([[0.5, -1.25], [3.0, 4.0]]))
    r = repr(f)
    assert "0.5" in r and "-1.25" in r and CPU_FILTER in r, r
    assert str(x)
    assert "1" in repr(ol.asarray(np.float32(1.0))), repr(ol.asarray(np.float32(1.0)))


def test_repr_of_empty_and_views(ol):
    assert CPU_FILTER in repr(ol.zeros((3, 0)))
    x = ol.asarray(np.arange(10))
    r = repr(x[::-3])
    assert re.search(r"9\D+6\D+3\D+0", r), r


def test_repr_of_big_array_is_summarised(ol):
    r = repr(ol.zeros(10**6, dtype="float32"))
    assert len(r) < 5000, f"repr of a million elements is {len(r)} characters"
    assert "..." in r


# ---------------------------------------------------------------- DLPack with NumPy


def test_dlpack_device(ol):
    x = ol.zeros(3)
    dev = x.__dlpack_device__()
    assert isinstance(dev, tuple) and len(dev) == 2
    assert all(isinstance(v, int) for v in dev)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_from_dlpack(ol, dtype):
    a = random_array(dtype, (6, 5), seed=13)
    x = ol.asarray(a)
    n = np.from_dlpack(x)
    check_equal(np.asarray(n), a, "np.from_dlpack(x)")


def test_numpy_from_dlpack_of_views(ol):
    a = random_array("float32", (6, 8), seed=14)
    x = ol.asarray(a)
    for f in (lambda t: t[::2], lambda t: t[:, ::-1], lambda t: t.T, lambda t: t[3]):
        check_equal(np.ascontiguousarray(np.from_dlpack(f(x))), f(a).copy(), "np.from_dlpack(view)")


@pytest.mark.parametrize("dtype", DTYPES)
def test_offload_from_dlpack_numpy(ol, cpu, dtype):
    a = random_array(dtype, (7, 3), seed=15)
    x = ol.from_dlpack(a)
    assert isinstance(x, ol.ndarray)
    assert x.device == cpu
    check_equal(x, a, "offload.from_dlpack(numpy)")
    check_equal(ol.from_dlpack(a[::2, ::-1]), a[::2, ::-1].copy(), "offload.from_dlpack(strided numpy)")


def test_offload_from_dlpack_offload(ol):
    a = random_array("int32", (10,), seed=16)
    x = ol.asarray(a)
    y = ol.from_dlpack(x)
    assert isinstance(y, ol.ndarray)
    check_equal(y, a)


def test_from_dlpack_rejects_non_dlpack(ol):
    with pytest.raises((TypeError, AttributeError)):
        ol.from_dlpack([1, 2, 3])


# ---------------------------------------------------------------- memory


def test_memory_is_freed(ol):
    """200 x 8 MB allocated and dropped; the process does not keep them."""
    gc.collect()
    host = np.ones(1 << 20, dtype="float64")  # 8 MB
    for _ in range(3):  # warm up pools and caches
        ol.zeros(1 << 20, dtype="float64")
        ol.asarray(host)
    gc.collect()
    before = rss_bytes()
    for i in range(200):
        if i % 2:
            x = ol.zeros(1 << 20, dtype="float64")
        else:
            x = ol.asarray(host)
        y = x[::2]
        del x, y
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 100 << 20, f"RSS grew by {grown >> 20} MB after allocating and dropping 1.6 GB"


def test_oversize_allocation_is_memory_error(ol, cpu):
    size = 1 << 50
    for make in (lambda: ol.empty(size, dtype="u1"), lambda: ol.zeros(size, dtype="u1"),
                 lambda: ol.empty((1 << 25, 1 << 25), dtype="u1")):
        with pytest.raises(MemoryError) as ei:
            make()
        msg = str(ei.value)
        assert CPU_FILTER in msg or cpu.name in msg, f"the MemoryError does not name the device: {msg!r}"
        assert re.search(r"1125899906842624|1(\.0+)?\s*PiB|1024(\.0+)?\s*TiB|1\.13\s*PB|1125\.9\d*\s*TB", msg), (
            f"the MemoryError does not give the size: {msg!r}"
        )
    # and the device still works
    check_equal(ol.arange(5), np.arange(5))


def test_allocation_overflowing_size_t(ol):
    with pytest.raises((MemoryError, ValueError, OverflowError)):
        ol.empty((1 << 40, 1 << 40), dtype="float64")
    with pytest.raises((MemoryError, ValueError, OverflowError)):
        ol.zeros(1 << 62, dtype="float64")


# ---------------------------------------------------------------- placement


def test_same_device_check_passes(ol, cpu):
    x, y = ol.zeros(3), ol.ones(3)
    check = getattr(ol, "_check_same_device", None)
    if check is not None:
        r = check(x, y)
        assert r is None or r == cpu
        check(x, x[::2], ol.asarray([1]))
    # mixing arrays of one device in a setitem is fine
    x[:] = y
    check_equal(x, np.ones(3))


def test_execution_placement_error_names_both_devices():
    r = run_python(
        """
        import numpy as np, offload
        x = offload.zeros(4, device='cpu:0')
        y = offload.ones(4, device='cpu:1')
        result['devs'] = [x.device.filter_string, y.device.filter_string]
        try:
            offload._check_same_device(x, y)
            result['err'] = None
        except Exception as e:
            result['err'] = [type(e).__name__, str(e), isinstance(e, offload.ExecutionPlacementError)]
        """,
        env=TWO_CPUS_ENV,
    )
    assert r["devs"] == ["opencl:cpu:0", "opencl:cpu:1"]
    assert r["err"] is not None, "arrays of two devices passed the same-device check"
    ename, msg, is_epe = r["err"]
    assert is_epe, f"{ename}: {msg}"
    assert "opencl:cpu:0" in msg and "opencl:cpu:1" in msg, msg


def test_cross_device_copies():
    r = run_python(
        """
        import numpy as np, offload
        a = np.arange(24, dtype='float32').reshape(4, 6)
        x = offload.asarray(a, device='cpu:0')
        y = x.to_device('cpu:1')
        result['ydev'] = y.device.filter_string
        result['y_ok'] = bool(np.array_equal(offload.asnumpy(y), a))
        v = x[::-1, ::2].to_device(offload.Device('cpu:1'))
        result['v_ok'] = bool(np.array_equal(offload.asnumpy(v), a[::-1, ::2]))
        y[...] = 0
        result['x_intact'] = bool(np.array_equal(offload.asnumpy(x), a))
        z = offload.asarray(x, device='cpu:1')
        result['zdev'] = z.device.filter_string
        result['z_ok'] = bool(np.array_equal(offload.asnumpy(z), a))
        """,
        env=TWO_CPUS_ENV,
    )
    assert r["ydev"] == "opencl:cpu:1" and r["zdev"] == "opencl:cpu:1"
    assert r["y_ok"] and r["v_ok"] and r["x_intact"] and r["z_ok"], r


def test_cross_device_setitem():
    """x[...] = y with y on another device: either copied (through the host) or
    an ExecutionPlacementError naming both devices; never wrong data."""
    r = run_python(
        """
        import numpy as np, offload
        x = offload.zeros(4, device='cpu:0')
        y = offload.asarray(np.arange(4.0), device='cpu:1')
        try:
            x[...] = y
            result['outcome'] = 'copied'
            result['ok'] = bool(np.array_equal(offload.asnumpy(x), np.arange(4.0)))
        except offload.ExecutionPlacementError as e:
            result['outcome'] = 'error'
            result['msg'] = str(e)
        """,
        env=TWO_CPUS_ENV,
    )
    if r["outcome"] == "copied":
        assert r["ok"]
    else:
        assert "opencl:cpu:0" in r["msg"] and "opencl:cpu:1" in r["msg"], r["msg"]
