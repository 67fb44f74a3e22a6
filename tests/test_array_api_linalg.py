"""The array API's main-namespace linear algebra besides matmul (matrix_transpose,
tensordot, vecdot), and the array object's element access (issue 22): an integer
index gives a 0-d array that stays on the device, .item() the Python scalar,
finfo/iinfo Python numbers. Checked against NumPy on fresh random data on every
device."""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import load_offload, device_fixture, rng  # noqa: F401  (rng: a fixture)

ol = load_offload()
device = device_fixture(ol)


def host(x, device):
    assert isinstance(x, ol.ndarray) and x.device == ol.Device(device)
    return ol.asnumpy(x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_tensordot(device, rng, dtype):
    a = (rng.random((3, 4, 5)) * 10).astype(dtype)
    b = (rng.random((4, 5, 6)) * 10).astype(dtype)
    x, y = ol.asarray(a, device=device), ol.asarray(b, device=device)
    for axes in (2, 0, ([1, 2], [0, 1]), ([2, 1], [1, 0]), ([1], [0])):
        got = host(ol.tensordot(x, y, axes=axes), device)
        want = np.tensordot(a, b, axes=axes)
        assert got.shape == want.shape and got.dtype == want.dtype, axes
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=str(axes))
    got = host(ol.tensordot(x.mT, x.mT.mT, axes=([0, 2], [0, 1])), device)  # strided views
    np.testing.assert_allclose(got, np.tensordot(a.swapaxes(-1, -2), a, axes=([0, 2], [0, 1])),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="shape mismatch"):
        ol.tensordot(x, y, axes=([0], [0]))
    with pytest.raises(ValueError):
        ol.tensordot(x, y, axes=4)
    with pytest.raises(TypeError, match="offload.asarray"):
        ol.tensordot(x, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8"])
def test_vecdot(device, rng, dtype):
    a = (rng.random((4, 3, 7)) * 5).astype(dtype)
    b = (rng.random((3, 7)) * 5).astype(dtype)
    x, y = ol.asarray(a, device=device), ol.asarray(b, device=device)
    got = host(ol.vecdot(x, y), device)
    want = np.vecdot(a, b)
    assert got.dtype == want.dtype  # the promoted dtype: no widening of integers
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(host(ol.vecdot(x, y, axis=-2), device), np.vecdot(a, b, axis=-2),
                               rtol=1e-5)
    with pytest.raises(ValueError):
        ol.vecdot(x, y[:, :3])
    with pytest.raises(ValueError):
        ol.vecdot(x, y, axis=0)


def test_matrix_transpose(device, rng):
    a = rng.random((2, 3, 4)).astype(np.float32)
    x = ol.asarray(a, device=device)
    t = ol.matrix_transpose(x)
    assert np.array_equal(host(t, device), np.matrix_transpose(a))
    t[0, 0, 0] = 5  # a view, as x.mT
    assert float(x[0, 0, 0]) == 5.0
    with pytest.raises(ValueError):
        ol.matrix_transpose(ol.asarray(a[0, 0], device=device))


def test_element_access(device, rng):
    a = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    x = ol.asarray(a, device=device)
    e = x[1, 2]
    assert isinstance(e, ol.ndarray) and e.shape == () and e.dtype == np.int32
    assert e.device == ol.Device(device)
    assert int(e) == a[1, 2] and e.item() == a[1, 2] and type(e.item()) is int
    assert x[()].shape == (3, 4) and x[1].shape == (4,)
    z = ol.asarray(np.float32(2.5), device=device)
    assert z[()].shape == () and float(z[()]) == 2.5
    e[...] = 42  # a view of x's element
    assert x.item(1, 2) == 42 and x.item(6) == 42 and x.item((1, 2)) == 42
    assert [v.item() for v in x[0]] == ol.asnumpy(x[0]).tolist()
    with pytest.raises(ValueError):
        x.item()
    with pytest.raises(IndexError):
        x.item(12)


def test_finfo_iinfo_are_python_numbers():
    for t in (ol.float32, ol.float64, ol.complex64, ol.complex128):
        f, n = ol.finfo(t), np.finfo(t)
        for name in ("eps", "max", "min", "smallest_normal"):
            assert type(getattr(f, name)) is float and getattr(f, name) == float(getattr(n, name))
        assert f.bits == n.bits and f.dtype == n.dtype
    for t in (ol.int8, ol.uint64, ol.int64):
        i, n = ol.iinfo(t), np.iinfo(t)
        assert (i.bits, i.max, i.min, i.dtype) == (n.bits, n.max, n.min, n.dtype)
        assert type(i.max) is int
    with pytest.raises(ValueError):
        ol.finfo(ol.int32)
