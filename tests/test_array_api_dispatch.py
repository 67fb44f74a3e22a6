"""NumPy's functions on offload arrays (issue 22, item 5): ndarray's
__array_ufunc__ and __array_function__ send np.sqrt(x), np.mean(x, axis=0),
np.add.reduce(x) ... to offload's functions of the same names, which run on
x's device and return offload arrays, as CuPy's do. A NumPy array beside an
offload array still raises TypeError (no hidden copies), a function offload
lacks raises NumPy's TypeError, and np.asarray(x) stays the explicit copy to
the host. Checked against NumPy on fresh random data on every device."""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import load_offload, device_fixture, rng  # noqa: F401  (rng: a fixture)

ol = load_offload()
device = device_fixture(ol)


def on_device(x, device):
    assert isinstance(x, ol.ndarray), f"{type(x).__name__}, not an offload array"
    assert x.device == ol.Device(device), f"on {x.device}, not {device}"
    return ol.asnumpy(x)


@pytest.mark.parametrize("ufunc", ["sqrt", "exp", "negative", "absolute", "floor"])
def test_unary_ufuncs(device, rng, ufunc):
    h = (rng.random((5, 64)) * 4 + 0.5).astype(np.float32)
    x = ol.asarray(h, device=device)
    got = on_device(getattr(np, ufunc)(x), device)
    np.testing.assert_allclose(got, getattr(np, ufunc)(h), rtol=2e-6)


def test_binary_ufuncs_and_scalars(device, rng):
    a = rng.integers(-50, 50, (4, 70)).astype(np.int32)
    b = rng.integers(1, 9, 70).astype(np.int32)
    x, y = ol.asarray(a, device=device), ol.asarray(b, device=device)
    for f in (np.add, np.subtract, np.multiply, np.floor_divide, np.maximum, np.less):
        assert np.array_equal(on_device(f(x, y), device), f(a, b)), f.__name__
    # Python scalars stay weak (NEP 50): int32 stays int32
    r = np.multiply(x, 3)
    assert r.dtype == np.int32 and np.array_equal(on_device(r, device), a * 3)


def test_out_is_an_offload_array(device, rng):
    h = rng.random(100).astype(np.float32)
    x = ol.asarray(h, device=device)
    out = ol.full(100, np.nan, dtype=np.float32, device=device)  # poisoned
    r = np.sqrt(x, out=out)
    assert r is out
    np.testing.assert_allclose(on_device(out, device), np.sqrt(h), rtol=2e-6)
    with pytest.raises(TypeError):  # a NumPy out would be a hidden copy
        np.sqrt(x, out=np.zeros(100, np.float32))
    with pytest.raises(TypeError):  # keywords offload does not take
        np.add(x, x, where=True)


def test_reduce_method(device, rng):
    h = rng.random((6, 40)).astype(np.float64)
    x = ol.asarray(h, device=device)
    np.testing.assert_allclose(on_device(np.add.reduce(x), device), np.add.reduce(h), rtol=1e-12)
    np.testing.assert_allclose(on_device(np.maximum.reduce(x, axis=1), device),
                               np.maximum.reduce(h, axis=1))
    with pytest.raises(TypeError):
        np.add.accumulate(x)


def test_array_functions(device, rng):
    h = rng.random((8, 50)).astype(np.float32)
    x = ol.asarray(h, device=device)
    np.testing.assert_allclose(on_device(np.mean(x, axis=0), device), np.mean(h, axis=0), rtol=1e-5)
    np.testing.assert_allclose(on_device(np.sum(x, axis=1), device), np.sum(h, axis=1), rtol=1e-5)
    assert float(on_device(np.max(x), device)) == h.max()
    assert np.array_equal(on_device(np.reshape(x, (50, 8)), device), np.reshape(h, (50, 8)))
    assert np.array_equal(on_device(np.where(x > 0.5, x, 0), device), np.where(h > 0.5, h, 0))
    assert np.array_equal(on_device(np.argmax(x, axis=1), device), np.argmax(h, axis=1))


def test_no_hidden_copies(device):
    x = ol.asarray(np.arange(4, dtype=np.float32), device=device)
    n = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="offload.asarray"):
        np.add(x, n)
    with pytest.raises(TypeError, match="offload.asarray"):
        n + x
    with pytest.raises(TypeError, match="offload.asarray"):
        np.where(x > 1, x, n)
    with pytest.raises(TypeError, match="no implementation found"):
        np.polyfit(x, x, 1)  # a function offload does not have
    h = np.asarray(x)  # the explicit copy to the host stays what it was
    assert type(h) is np.ndarray and np.array_equal(h, np.arange(4, dtype=np.float32))
