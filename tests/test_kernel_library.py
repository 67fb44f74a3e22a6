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


# ---- sort.py: the radix sort's keys and maps, searchsorted, the digit starts ----

SORT_DTYPES = ["float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint64", "bool"]


def sort_input(rng, dtype, n: int) -> np.ndarray:
    """Values with many ties; floats with NaNs, both zeros and infinities."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind == "f":
        a = rng.choice(np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -1.5], dt), n)
        some = rng.random(n) < 0.6
        a[some] = (rng.standard_normal(int(some.sum())) * 1e3).astype(dt)
        return a
    info = np.iinfo(dt)
    return np.concatenate([rng.integers(info.min, info.max, n - 8, dtype=dt, endpoint=True),
                           np.array([info.min, info.max, 0, 1, info.min, info.max, 0, 1], dt)])


def key_function(dtype) -> str:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return "key_bool"
    if dt.kind == "u":
        return "key_uint64" if dt.itemsize == 8 else "key_uint32"
    return f"key_{dt.name}"


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_sort_keys_order_as_numpy(device, rng, dtype):
    """keys: the first word's keys order as NumPy's stable sort (NaN last,
    -0.0 equal to +0.0), equal values get equal keys, and idx = the identity."""
    dt = np.dtype(dtype)
    if dt.itemsize == 8 and dt.kind == "f" and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    a = sort_input(rng, dtype, 3000)
    kt = np.dtype("uint64" if dt.itemsize == 8 else "uint32")
    x = ol.asarray(a, device=device)
    bits = ol.asarray(a.view(f"u{dt.itemsize}"), device=device) if dt.kind == "f" else x
    key = ol.asarray(poisoned(a.size, kt), device=device)
    idx = ol.asarray(poisoned(a.size, "int32"), device=device)
    ol._library("sort", "keys")[ol.Range(a.size)](
        x, bits, key, idx, a.size, ol._library("sort", key_function(dtype)), kt, np.dtype("int32"),
        np.uint32(0), True)
    k = ol.asnumpy(key)
    assert np.array_equal(ol.asnumpy(idx), np.arange(a.size))
    assert np.array_equal(np.argsort(k, kind="stable"), np.argsort(a, kind="stable"))
    assert np.unique(k).size == np.unique(a, equal_nan=True).size


@pytest.mark.parametrize("vt,key_of", [("uint32", "float32"), ("uint64", "float64"), ("uint32", "int"),
                                       ("uint64", "int")])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_keys_alone_maps(device, rng, vt, key_of, descending):
    """keys_alone: keys of value bits order as the values do (descending:
    reversed), res gets the ORs and the flags; keys_values: the map back
    gives every bit pattern (NaN payloads too) back."""
    vt = np.dtype(vt)
    wide = vt.itemsize == 8
    if key_of == "float64" and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    if key_of == "int":
        flip = rng.integers(0, np.iinfo(vt).max, dtype=vt, endpoint=True)
        u = rng.integers(0, np.iinfo(vt).max, 5000, dtype=vt, endpoint=True)
        order = np.argsort(u ^ flip, kind="stable")
    else:
        flip = vt.type(np.iinfo(vt).max if descending else 0)
        f = sort_input(rng, key_of, 5000)
        f = f[~np.isnan(f) & (f != 0)]  # distinct bits for equal values would tie apart
        u = f.view(vt)
        order = np.argsort(-f if descending else f, kind="stable")
    n = u.size
    key = ol.asarray(poisoned(n, vt), device=device)
    res = ol.zeros(5, dtype=vt, device=device)
    kof = ol._library("sort", f"{key_of}_key_of")
    ol._library("sort", "keys_alone")[ol.Range(4)](
        ol.asarray(u, device=device), key, res, n, (n + 3) // 4, 1, (n + 3) // 4, vt, kof, flip,
        key_of != "int")
    k = ol.asnumpy(key)
    assert np.array_equal(np.argsort(k, kind="stable"), order)
    r = ol.asnumpy(res)
    assert r[0] == np.bitwise_or.reduce(k) and r[1] == np.bitwise_or.reduce(~k)
    if key_of != "int":
        assert r[2] == 0  # no zero, no NaN
        # the flags: 1 -0.0, 2 +0.0, 4 NaN
        special = np.array([-0.0, 0.0, np.nan], key_of).view(vt)
        res2 = ol.zeros(5, dtype=vt, device=device)
        ol._library("sort", "keys_alone")[ol.Range(1)](
            ol.asarray(special, device=device), ol.asarray(poisoned(3, vt), device=device), res2, 3,
            3, 1, 3, vt, kof, flip, True)
        assert ol.asnumpy(res2)[2] == 7
    raw = rng.integers(0, np.iinfo(vt).max, 4000, dtype=vt, endpoint=True)
    out = ol.asarray(poisoned(raw.size, vt), device=device)
    ol._library("sort", "keys_values")[ol.Range(raw.size)](
        ol.asarray(raw, device=device), out, vt, True, kof, ol._library("sort", f"{key_of}_bits_of"),
        flip, vt)
    assert np.array_equal(ol.asnumpy(out), raw)


@pytest.mark.parametrize("dtype,less", [("int32", "less_int"), ("float32", "less_float"),
                                        ("float64", "less_float"), ("complex64", "less_complex")])
@pytest.mark.parametrize("right", [False, True])
def test_sort_searchsorted(device, rng, dtype, less, right):
    dt = np.dtype(dtype)
    if dt in (np.float64, np.complex128) and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    if dt.kind == "c":
        a = np.empty(800, dt)
        a.real = rng.choice([0.0, 1.0, np.nan, -2.0], 800)
        a.imag = rng.choice([-1.0, 2.0, np.nan], 800)
    elif dt.kind == "f":
        a = sort_input(rng, dtype, 800)
    else:
        a = rng.integers(-50, 50, 800).astype(dt)
    s = np.sort(a)
    v = np.concatenate([a[:300], s[:5], s[-5:]])
    out = ol.asarray(poisoned(v.size, "int64"), device=device)
    ol._library("sort", "searchsorted")[ol.Range(v.size)](
        out, ol.asarray(s, device=device), ol.asarray(v, device=device), s.size,
        ol._library("sort", less), right)
    assert np.array_equal(ol.asnumpy(out), np.searchsorted(s, v, side="right" if right else "left"))


@pytest.mark.parametrize("npos", [1, 4, 8])
def test_sort_tile_starts(device, rng, npos):
    """tile_starts: each position's 256 digit counts -> their exclusive scan."""
    counts = rng.integers(0, 1 << 40, 256 * npos)
    gh = ol.asarray(counts, device=device)
    ol._library("sort", "tile_starts")[ol.NdRange(256 * npos, 256)](gh)
    c = counts.reshape(npos, 256)
    want = np.cumsum(c, axis=1) - c
    assert np.array_equal(ol.asnumpy(gh), want.ravel())
