"""The library's device code in the kernel language (module/kernels/*.py):
its kernels launched by name as the module launches them, on every device
this run sees (a GPU too, with --noconftest), against NumPy on fresh random
data into poisoned outputs.

reduce.combine_strided folds every S-th of n partials into one value with
one work-group; on a GPU it is the second kernel of every prange reduction,
which on a CPU device the tests of prange loops never reach.
"""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import device_fixture, load_offload, poisoned, rng  # noqa: F401

ol = load_offload()
device = device_fixture(ol)

OPS = {"add": np.sum, "multiply": np.prod, "minimum": np.min, "maximum": np.max}


def partials(rng, op: str, dtype, size: int) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if op == "multiply":  # near 1, so that a product of thousands stays finite
            return (1 + rng.standard_normal(size) / 64).astype(dt)
        return rng.standard_normal(size).astype(dt)
    if op == "multiply":  # integer products wrap, in any order alike
        return rng.choice(np.array([1, 1, 1, 3, 2], dt), size)
    return rng.integers(-1000, 1000, size).astype(dt)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
@pytest.mark.parametrize("n,S,G", [(1, 1, 32), (100, 3, 64), (1000, 1, 256), (37, 256, 32), (4096, 2, 1024)])
def test_combine_strided(device, rng, op, dtype, n, S, G):
    if G > device.max_work_group_size:
        pytest.skip(f"{device} takes work-groups of at most {device.max_work_group_size}")
    if dtype == "float64" and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    part = partials(rng, op, dtype, n * S)
    out = ol.asarray(poisoned(2, dtype), device=device)
    k = ol._library("reduce", "combine_strided")
    k[ol.NdRange(G, G)](ol.asarray(part, device=device), n, S, out, ol._library("reduce", op),
                        np.dtype(dtype), G)
    got = ol.asnumpy(out)
    want = OPS[op](part[::S][:n])
    if np.dtype(dtype).kind == "f" and op in ("add", "multiply"):
        # another order of the same operations: each of the n steps may round
        scale = float(np.abs(part[::S][:n]).sum()) if op == "add" else abs(float(want))
        assert abs(float(got[0]) - float(want)) <= (n + 1) * np.finfo(dtype).eps * scale, (got[0], want)
    else:
        assert got[0] == want.astype(dtype), (got[0], want)
    assert np.array_equal(got[1:], poisoned(1, dtype), equal_nan=np.dtype(dtype).kind == "f"), \
        "wrote past out[0]"


@pytest.mark.parametrize("op", ["minimum", "maximum"])
def test_min_and_max_keep_a_nan(device, rng, op):
    part = rng.standard_normal(500).astype(np.float32)
    part[rng.integers(0, 500)] = np.nan
    out = ol.asarray(poisoned(1, "float32"), device=device)
    ol._library("reduce", "combine_strided")[ol.NdRange(64, 64)](
        ol.asarray(part, device=device), 500, 1, out, ol._library("reduce", op), np.dtype("float32"), 64)
    assert np.isnan(ol.asnumpy(out)[0])


def test_library_kernels_are_trusted_and_named():
    k = ol._library("reduce", "combine_strided")
    assert k.boundscheck is False
    assert k.__name__ == "combine_strided"
    with pytest.raises(SystemError, match="no 'nothing'"):
        ol._library("reduce", "nothing")
    with pytest.raises(SystemError, match="no kernel file 'nothing'"):
        ol._library("nothing", "combine_strided")
