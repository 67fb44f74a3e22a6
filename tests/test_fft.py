"""offload.fft, the array API's FFT extension (issue 23 items 5-6).

Every transform on every device offload sees (on CI both CPU platforms, where NumPy's
pocketfft runs on the host's copy), against NumPy computed in complex128 on fresh
random data: n/s padding and cutting, axis/axes (negative, several, out of order),
the three norms, float32/complex64 kept as such, float64/complex128. fftfreq, rfftfreq,
fftshift and ifftshift are device work, checked exactly or to a few ulps. Then the
errors: TypeError for host data and integer input, NumPy's error types for bad norm, n
and axes. A failing test prints its seed: OFFLOAD_TEST_SEED=<n> reruns it.
"""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import load_offload, device_fixture, la_path, rng  # noqa: F401  (fixtures)
from offload_fixtures import checked_host as host, random_floats as rand

ol = load_offload()
device = device_fixture(ol)

COMPLEX = {"float32": "complex64", "float64": "complex128", "complex64": "complex64",
           "complex128": "complex128"}
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
RTOL = {"complex64": 1e-4, "float32": 1e-4, "complex128": 1e-10, "float64": 1e-10}
NORMS = ["backward", "ortho", "forward"]
NAMES = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
         "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def wide(a):
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def check(got, want, dtype):
    scale = max(np.abs(want).max(initial=0), 1)
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


def test_the_submodule():
    import sys

    assert ol.fft.__name__ == "offload.fft" and sys.modules["offload.fft"] is ol.fft
    for name in NAMES:
        assert callable(getattr(ol.fft, name)), name


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32"])
@pytest.mark.parametrize("name", ["fft", "ifft"])
def test_fft_ifft(device, rng, dtype, name, la_path):
    a = rand(rng, (3, 8, 5), dtype)
    x = ol.asarray(a, device=device)
    f, ref = getattr(ol.fft, name), getattr(np.fft, name)
    out = COMPLEX[dtype]
    for kw in ({}, {"axis": 1}, {"axis": -3, "n": 5}, {"n": 11}, {"n": 2, "axis": 1}):
        for norm in NORMS:
            want = ref(wide(a), norm=norm, **kw)
            check(host(f(x, norm=norm, **kw), device, out, want.shape), want, out)
    check(host(f(x[:, ::2, ::-1]), device, out, (3, 4, 5)), ref(wide(a[:, ::2, ::-1])), out)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["fftn", "ifftn"])
def test_fftn_ifftn(device, rng, dtype, name, la_path):
    a = rand(rng, (2, 6, 5, 4), dtype)
    x = ol.asarray(a, device=device)
    f, ref = getattr(ol.fft, name), getattr(np.fft, name)
    for kw in ({}, {"axes": (1, 2)}, {"axes": (-1, 0), "s": (7, 2)}, {"axes": (2,), "s": (3,)},
               {"axes": (0, 1, 2, 3), "s": (3, 6, 6, 2)}):
        for norm in NORMS:
            want = ref(wide(a), norm=norm, **kw)
            check(host(f(x, norm=norm, **kw), device, dtype, want.shape), want, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rfft_rfftn_ihfft(device, rng, dtype, la_path):
    a = rand(rng, (4, 6, 7), dtype)
    x = ol.asarray(a, device=device)
    out = COMPLEX[dtype]
    for norm in NORMS:
        for kw in ({}, {"n": 9}, {"n": 4, "axis": 0}, {"axis": -2}):
            for name in ("rfft", "ihfft"):
                want = getattr(np.fft, name)(wide(a), norm=norm, **kw)
                got = getattr(ol.fft, name)(x, norm=norm, **kw)
                check(host(got, device, out, want.shape), want, out)
        for kw in ({}, {"axes": (0, 2)}, {"axes": (2, 0), "s": (5, 3)}, {"axes": (1,), "s": (8,)}):
            want = np.fft.rfftn(wide(a), norm=norm, **kw)
            check(host(ol.fft.rfftn(x, norm=norm, **kw), device, out, want.shape), want, out)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_irfft_irfftn_hfft(device, rng, dtype, la_path):
    a = rand(rng, (3, 5, 6), dtype)
    x = ol.asarray(a, device=device)
    out = REAL[dtype]
    for norm in NORMS:
        for kw in ({}, {"n": 7}, {"n": 10, "axis": 1}, {"axis": 0}):
            for name in ("irfft", "hfft"):
                want = getattr(np.fft, name)(wide(a), norm=norm, **kw)
                got = getattr(ol.fft, name)(x, norm=norm, **kw)
                check(host(got, device, out, want.shape), want, out)
        for kw in ({}, {"axes": (0, 2)}, {"axes": (2, 1), "s": (4, 9)}, {"axes": (1,), "s": (5,)}):
            want = np.fft.irfftn(wide(a), norm=norm, **kw)
            check(host(ol.fft.irfftn(x, norm=norm, **kw), device, out, want.shape), want, out)


def test_round_trips(device, rng, la_path):
    a = rand(rng, (4, 16), "complex128")
    x = ol.asarray(a, device=device)
    check(ol.asnumpy(ol.fft.ifft(ol.fft.fft(x))), a, "complex128")
    r = ol.asarray(a.real.copy(), device=device)
    check(ol.asnumpy(ol.fft.irfft(ol.fft.rfft(r), n=16)), a.real, "float64")
    check(ol.asnumpy(ol.fft.irfftn(ol.fft.rfftn(r), s=(4, 16), axes=(0, 1))), a.real, "float64")


@pytest.mark.parametrize("dtype", [None, "float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 7, 10])
def test_fftfreq_rfftfreq(device, dtype, n):
    want_dtype = dtype or ("float64" if device.has_fp64 else "float32")
    for d in (1.0, 0.25, 3.0):
        kw = {"d": d, "device": device} | ({"dtype": dtype} if dtype else {})
        got = host(ol.fft.fftfreq(n, **kw), device, want_dtype, (n,))
        np.testing.assert_allclose(got, np.fft.fftfreq(n, d), rtol=1e-6 if want_dtype == "float32" else 1e-15)
        got = host(ol.fft.rfftfreq(n, **kw), device, want_dtype, (n // 2 + 1,))
        np.testing.assert_allclose(got, np.fft.rfftfreq(n, d), rtol=1e-6 if want_dtype == "float32" else 1e-15)
    with pytest.raises(ValueError):
        ol.fft.fftfreq(n, dtype="int32", device=device)
    with pytest.raises(ValueError):
        ol.fft.rfftfreq(0, device=device)


@pytest.mark.parametrize("dtype", ["float32", "complex128", "int16"])
def test_fftshift_ifftshift(device, rng, dtype):
    a = (rng.integers(-50, 50, (5, 4, 7)) * (1 + 2j if dtype[0] == "c" else 1)).astype(dtype)
    x = ol.asarray(a, device=device)
    for axes in (None, 0, -1, (0, 2), [2, 1], ()):
        for name in ("fftshift", "ifftshift"):
            want = getattr(np.fft, name)(a, axes=axes)
            got = getattr(ol.fft, name)(x, axes=axes) if axes is not None else getattr(ol.fft, name)(x)
            assert np.array_equal(host(got, device, dtype, a.shape), want), (name, axes)
    assert np.array_equal(ol.asnumpy(ol.fft.ifftshift(ol.fft.fftshift(x))), a)
    with pytest.raises(np.exceptions.AxisError):
        ol.fft.fftshift(x, axes=3)


def test_errors(device, rng, la_path):
    a = rand(rng, (4, 6), "complex64")
    x = ol.asarray(a, device=device)
    r = ol.asarray(a.real.copy(), device=device)
    for name in NAMES:
        if name in ("fftfreq", "rfftfreq"):
            continue
        with pytest.raises(TypeError, match="offload.asarray"):
            getattr(ol.fft, name)(a)
    ints = ol.asarray(np.arange(8), device=device)
    for name in ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft"):
        with pytest.raises(TypeError, match="floating-point"):
            getattr(ol.fft, name)(ints)
        with pytest.raises(ValueError, match="norm"):
            getattr(ol.fft, name)(x if name[0] != "r" and name != "ihfft" else r, norm="bogus")
    for name in ("rfft", "rfftn", "ihfft"):
        with pytest.raises(TypeError, match="real"):
            getattr(ol.fft, name)(x)
    with pytest.raises(ValueError, match="FFT data points"):
        ol.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="FFT data points"):
        ol.fft.irfft(ol.asarray(a[:, :1].copy(), device=device))  # 2 * (1 - 1) points
    with pytest.raises(IndexError):  # NumPy's AxisError, a ValueError and an IndexError
        ol.fft.fft(x, axis=2)
    with pytest.raises(IndexError):
        ol.fft.fftn(x, axes=(0, -3))
    with pytest.raises(ValueError):
        ol.fft.fftn(x, s=(2, 3), axes=(0,))
    with pytest.raises(TypeError, match="unexpected keyword"):
        ol.fft.fft(x, axes=(0,))
    with pytest.raises(TypeError):
        ol.fft.fft(x, 4)  # n is keyword-only
    with pytest.raises(ValueError):
        ol.fft.fft(ol.asarray(np.complex64(1), device=device))
    # and the module still works
    check(ol.asnumpy(ol.fft.fft(x)), np.fft.fft(a.astype("complex128")), "complex64")


def test_numpy_dispatch(device, rng):
    a = rand(rng, (8,), "complex128")
    x = ol.asarray(a, device=device)
    got = np.fft.fft(x)  # NumPy's function sends the call to offload.fft.fft
    assert isinstance(got, ol.ndarray) and got.device == x.device
    check(ol.asnumpy(got), np.fft.fft(a), "complex128")


@pytest.mark.parametrize("name,dtype", [("fft", "complex64"), ("rfft", "float32"), ("irfft", "complex128"),
                                        ("hfft", "complex64"), ("ihfft", "float64"), ("rfftn", "float32"),
                                        ("irfftn", "complex64"), ("ifftn", "complex128")])
def test_empty_inputs(device, name, dtype, la_path):
    """Transforms of no elements: NumPy's shapes and dtypes (the vendor path never asks cuFFT)."""
    for shape in ((0, 4), (3, 0, 4)):
        a = np.ones(shape, dtype)
        kw = {"n": 6} if not name.endswith("n") else {"s": (5, 6), "axes": (0, -1)}
        want = getattr(np.fft, name)(a, **kw)
        got = host(getattr(ol.fft, name)(ol.asarray(a, device=device), **kw), device, want.dtype, want.shape)
        np.testing.assert_allclose(got, want, atol=1e-6)
