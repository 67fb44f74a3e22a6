"""offload.fma(x, y, z) (issue 23 item 2): x * y + z rounded once, in kernels on every
device (the device's fused instruction: OpenCL's fma through SPIR-V and SPIR 1.2,
libdevice's on PTX) and as a host function (C's fma) -- the same bits both ways.
Python's x * y + z rounds twice and is never contracted behind the user's back."""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import device_fixture, load_offload, rng  # noqa: F401  (rng: a fixture)

ol = load_offload()

device = device_fixture(ol)

@ol.kernel
def fused(item, x, y, z, out):
    i = item.get_id(0)
    out[i] = ol.fma(x[i], y[i], z[i])

@ol.kernel
def unfused(item, x, y, z, out):
    i = item.get_id(0)
    out[i] = x[i] * y[i] + z[i]

def test_host_fma_rounds_once():
    e = 2.0 ** -30
    assert ol.fma(1 + e, 1 - e, -1.0) == -(e * e)  # exact: -2^-60
    assert (1 + e) * (1 - e) - 1.0 == 0.0  # two roundings lose it
    assert ol.fma(2, 3, 4) == 10.0
    with pytest.raises(TypeError):
        ol.fma(1.0, 2.0)
    with pytest.raises(TypeError):
        ol.fma("a", 1.0, 2.0)

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_in_kernels_matches_c(device, rng, dtype):
    n = 257
    x, y, z = (rng.uniform(-2, 2, n).astype(dtype) for _ in range(3))
    e = 2.0 ** (-13 if dtype == "float32" else -30)  # 1 - e*e rounds to 1
    x[:4], y[:4], z[:4] = 1 + e, 1 - e, -1.0  # where one rounding and two differ
    out = ol.asarray(np.full(n, np.nan, dtype), device=device)
    args = [ol.asarray(v, device=device) for v in (x, y, z)]
    fused[ol.Range(n)](*args, out)
    got = out.asnumpy()
    if dtype == "float64":
        want = np.array([ol.fma(float(a), float(b), float(c)) for a, b, c in zip(x, y, z)])
    else:  # the float64 product of two float32s is exact: one rounding, to float32
        want = (x.astype(np.float64) * y + z).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert (got[:4] == np.asarray(-(e * e), dtype)).all()
    unfused[ol.Range(n)](*args, out)
    assert (out.asnumpy()[:4] == 0).all()  # no contraction behind the user's back

def test_fma_takes_three_real_numbers(device):
    src = ("import offload as ol\n@ol.kernel\ndef k(item, x):\n"
           "    x[0] = ol.fma(x[0], x[1])\n")
    ns = {}
    exec(compile(src, "<fma2>", "exec"), ns)
    with pytest.raises((ol.CompileError, TypeError)):
        ns["k"][ol.Range(1)](ol.asarray(np.ones(2, np.float32), device=device))
