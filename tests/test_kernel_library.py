"""The library's device code in the kernel language (module/kernels/*.py):
its kernels launched by name as the module launches them, on every device
this run sees (a GPU too, with --noconftest), against NumPy on fresh random
data into poisoned outputs.

reduce.combine_strided folds every S-th of n partials into one value with
one work-group; on a GPU it is the second kernel of every prange reduction,
which on a CPU device the tests of prange loops never reach. index.py's
kernels are launched with plans written out here (meta, offsets), including
the cases indexing from Python reaches rarely: a scan of more counts than
a work-group has work-items, checks as a gather reads.
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


# ---- index.py: masks, nonzero, x[key] ----------------------------------------

GROUP = 256  # mod_index.c's work-group size


def index_kernel(name):
    return ol._library("index", name)


def tally(device, m, per):
    """nz_count then nz_scan over the 1-D bool device array m: counts, offs, total."""
    n = m.shape[0]
    G = -(-n // (GROUP * per))
    counts = ol.asarray(poisoned(G, "int64"), device=device)
    offs = ol.asarray(poisoned(G, "int64"), device=device)
    total = ol.asarray(poisoned(1, "int64"), device=device)
    index_kernel("nz_count")[ol.NdRange(G * GROUP, GROUP)](m, counts, n, GROUP, per)
    index_kernel("nz_scan")[ol.NdRange(GROUP, GROUP)](counts, offs, total, G, GROUP)
    return G, ol.asnumpy(counts), offs, ol.asnumpy(total)[0]


@pytest.mark.parametrize("n,per", [(1, 4), (1000, 4), (5000, 16), (70001, 8), (300000, 4)])
def test_nz_count_and_scan(device, rng, n, per):
    host = rng.random(n) < 0.3
    G, counts, offs, total = tally(device, ol.asarray(host, device=device), per)
    want = np.add.reduceat(host.astype(np.int64), np.arange(0, n, GROUP * per))
    assert np.array_equal(counts, want)
    assert np.array_equal(ol.asnumpy(offs), np.concatenate([[0], np.cumsum(want)[:-1]]))
    assert total == host.sum()


@pytest.mark.parametrize("shape", [(1,), (999,), (37, 41), (5, 6, 300)])
def test_nz_scatter_writes_coordinates(device, rng, shape):
    host = rng.random(shape) < 0.4
    n = host.size
    m = ol.asarray(host.reshape(-1), device=device)
    G, _, offs, total = tally(device, m, 4)
    k = len(shape)
    out = ol.asarray(poisoned(k * total + 3, "int64"), device=device)
    shp = ol.asarray(np.array(shape, np.int64), device=device)
    index_kernel("nz_scatter")[ol.NdRange(G * GROUP, GROUP)](m, offs, out, shp, k, n, int(total),
                                                             GROUP, 4)
    got = ol.asnumpy(out)
    assert np.array_equal(got[:k * total].reshape(k, total), np.array(np.nonzero(host)))
    assert np.array_equal(got[k * total:], poisoned(3, "int64")), "wrote past the coordinates"


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float32", "float64", "complex128"])
@pytest.mark.parametrize("n", [1, 3000, 50000])
def test_mask_take(device, rng, dtype, n):
    if dtype in ("float64", "complex128") and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    host = rng.random(n) < 0.5
    x = rng.standard_normal(n) * 100
    x = (x + 1j * x[::-1] if dtype == "complex128" else x).astype(dtype)
    per = 8 if x.itemsize > 8 else 16  # as mod_index.c picks
    m = ol.asarray(host, device=device)
    G, _, offs, total = tally(device, m, per)
    out = ol.asarray(poisoned(int(total) + 2, dtype), device=device)
    index_kernel("mask_take")[ol.NdRange(G * GROUP, GROUP)](m, ol.asarray(x, device=device), offs,
                                                           out, n, GROUP, per, np.dtype(dtype))
    got = ol.asnumpy(out)
    assert np.array_equal(got[:total], x[host])
    assert np.array_equal(got[total:], poisoned(2, dtype), equal_nan=x.dtype.kind in "fc")


@pytest.mark.parametrize("flag", ["int32", "int64"])
def test_check_keeps_the_first_bad_position(device, rng, flag):
    n = 5000
    idx = rng.integers(-10, 10, n)
    bad = np.sort(rng.choice(n, 3, replace=False))
    idx[bad] = [10, -11, 99]
    flags = ol.asarray(np.array([7, np.iinfo(flag).max], flag), device=device)
    index_kernel("check")[ol.Range(n)](ol.asarray(idx, device=device), 10, flags, 1,
                                       np.dtype(flag))
    assert ol.asnumpy(flags).tolist() == [7, bad[0]]


def access_meta(dims, tails):
    """access's meta: a row per result dimension, then (x stride, axis length) per index array."""
    return np.array([v for row in dims for v in row] + [v for t in tails for v in t], np.int64)


def test_access_gathers_with_two_index_arrays(device, rng):
    # x[i0, i1] over a (30, 7) x, i0 of shape (a, 1) and i1 of shape (1, b): an (a, b) result
    x = rng.standard_normal((30, 7))
    a, b = 11, 5
    i0 = rng.integers(-30, 30, (a, 1))
    i1 = rng.integers(-7, 7, (1, b))
    meta = access_meta([(a, 0, 1, 0), (b, 0, 0, 1)], [(7, 30), (1, 7)])
    out = ol.asarray(poisoned(a * b, "float64"), device=device)
    I = (ol.asarray(i0.reshape(-1), device=device), ol.asarray(i1.reshape(-1), device=device))
    md = ol.asarray(meta, device=device)
    index_kernel("access")[ol.Range(a * b)](out, ol.asarray(x.reshape(-1), device=device), I, md,
                                            2, 0, 0, md, 0, False, (-1, -1), np.dtype("int64"))
    assert np.array_equal(ol.asnumpy(out).reshape(a, b), x[i0, i1])


def test_access_checks_as_it_gathers(device, rng):
    # a flat take: x[idx] of a 1-D x, idx checked (flag 0), the bad element left unread
    x = rng.standard_normal(50).astype(np.float32)
    idx = rng.integers(-50, 50, 400)
    idx[[123, 321]] = [50, -51]
    meta = access_meta([(400, 0, 1)], [(1, 50)])
    out = ol.asarray(poisoned(400, "float32"), device=device)
    flags = ol.asarray(np.array([np.iinfo(np.int32).max], np.int32), device=device)
    md = ol.asarray(meta, device=device)
    index_kernel("access")[ol.Range(400)](out, ol.asarray(x, device=device),
                                          (ol.asarray(idx, device=device),), md, 1, 0, 0, flags,
                                          0, True, (0,), np.dtype("int32"))
    assert ol.asnumpy(flags)[0] == 123
    got, ok = ol.asnumpy(out), np.ones(400, bool)
    ok[[123, 321]] = False
    assert np.array_equal(got[ok], x[idx[ok]])
    assert np.isnan(got[~ok]).all(), "read for an index out of range"


@pytest.mark.parametrize("scalar", [False, True])
def test_access_scatters(device, rng, scalar):
    # x[i0, :, i1] = v over a (6, 4, 9) x: the (k, 4) result's rows step x by its middle axis
    x = rng.standard_normal((6, 4, 9))
    k = 5
    i0 = rng.choice(6, k, replace=False)  # distinct pairs: the stores do not race
    i1 = rng.integers(-9, 9, k)
    v = rng.standard_normal((k, 4))
    vcol = () if scalar else (4,)
    meta = access_meta([(k, 0, *vcol, 1, 1), (4, 9, *((1,) if not scalar else ()), 0, 0)],
                       [(36, 6), (1, 9)])
    xd = ol.asarray(x.reshape(-1), device=device)
    md = ol.asarray(meta, device=device)
    I = (ol.asarray(i0, device=device), ol.asarray(i1, device=device))
    src = np.float64(2.5) if scalar else ol.asarray(v.reshape(-1), device=device)
    index_kernel("access")[ol.Range(k * 4)](xd, src, I, md, 2, 0, 0, md, 2 if scalar else 1,
                                            False, (-1, -1), np.dtype("int64"))
    want = x.copy()
    want[i0, :, i1] = 2.5 if scalar else v
    assert np.array_equal(ol.asnumpy(xd).reshape(6, 4, 9), want)


# ---- matmul.py: the tiled kernel (the matmul fallback on GPUs and PoCL) ----
# Launched as mod_matmul.c launches it, with tilings it may choose (PoCL's and CUDA's, and
# OFFLOAD_MATMUL_TILES-style odd ones: 2-wide blocks, runs of 4 columns TX*4 apart, no read
# ahead), into a view of a poisoned array: every element of the view written, none around it.

# (TY, TX, TM, TN, BK, AHEAD); each work-item copies a whole number of each slab's elements
MATMUL_TILINGS = [(16, 16, 4, 4, 8, True), (16, 16, 4, 4, 16, True), (8, 4, 2, 8, 4, False),
                  (4, 8, 4, 2, 8, True), (32, 8, 4, 8, 8, True)]
MATMUL_TYPES = [  # (a, b, c, accumulator)
    ("float32", "float32", "float32", "float32"),
    ("float32", "float64", "float64", "float64"),
    ("int8", "int8", "int8", "int32"),  # 8-bit products and sums wrap, in 32 bits alike
    ("uint16", "uint16", "uint16", "uint32"),
]


def matmul_operand(rng, shape, dtype, by_col: bool, device):
    """A random matrix of shape on device; by_col: a transposed view (dimension 0 the faster)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.uniform(-1, 1, shape).astype(dt)
    else:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if by_col:
        return x, ol.asarray(np.ascontiguousarray(x.T), device=device).T
    return x, ol.asarray(x, device=device)


@pytest.mark.parametrize("tiles", MATMUL_TILINGS,
                         ids=lambda t: "x".join(map(str, t[:5])) + ("" if t[5] else "-now"))
@pytest.mark.parametrize("types", MATMUL_TYPES, ids=lambda t: "-".join(t[:2]))
@pytest.mark.parametrize("a_by_col,b_by_col", [(False, False), (True, True)])
def test_matmul_tiled(device, rng, tiles, types, a_by_col, b_by_col):
    ty, tx, tm, tn, bk, ahead = tiles
    at, bt, ct, acc = types
    if tm * tn > 16 and device.backend != "cuda":
        pytest.skip("a register block of more than 16 is a vector the SPIR-V translator refuses")
    if "float64" in types and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    m, k, n = 278, 29, 37  # none a multiple of a tile; more row blocks than two row groups
    A, a = matmul_operand(rng, (m, k), at, a_by_col, device)
    B, b = matmul_operand(rng, (k, n), bt, b_by_col, device)
    whole = ol.asarray(poisoned((m + 3, n + 2), ct), device=device)
    c = whole[2:m + 2, 1:n + 1]
    bm, bn = ty * tm, tx * tn
    groups = (2, -(-n // bn))  # fewer row groups than row blocks: the kernel loops over the rest
    assert -(-m // bm) > groups[0]
    ol._library("matmul", "matmul_tiled")[ol.NdRange((groups[0] * ty, groups[1] * tx), (ty, tx))](
        a, b, c, np.dtype(acc), np.dtype(at), np.dtype(bt), ty, tx, tm, tn, bk, a_by_col, b_by_col,
        ahead)
    got = ol.asnumpy(whole)
    want = np.matmul(A, B)
    assert want.dtype == np.dtype(ct)
    if want.dtype.kind == "f":  # any order of the k additions is within this of the exact sum
        A64, B64 = A.astype(np.float64), B.astype(np.float64)
        tol = (k + 2) * np.finfo(ct).eps * np.matmul(np.abs(A64), np.abs(B64))
        err = np.abs(got[2:m + 2, 1:n + 1].astype(np.float64) - np.matmul(A64, B64))
        assert (err <= tol).all(), f"{int((~(err <= tol)).sum())} of {m * n} off"
    else:
        assert np.array_equal(got[2:m + 2, 1:n + 1], want)
    around = np.ones(whole.shape, bool)
    around[2:m + 2, 1:n + 1] = False
    assert np.array_equal(got[around], poisoned(whole.shape, ct)[around], equal_nan=True), \
        "wrote outside c"


# ---- manip.py: repeat by an array of counts ----------------------------------

REPEAT_BLOCK = 256  # mod_manip.c's counts a work-item


def manip_kernel(name):
    return ol._library("manip", name)


def running_sums(device, r):
    """repeat_sums, repeat_starts, repeat_cumsum over the 1-D device array r:
    the blocks' starts, the total and the running sums, as NumPy arrays."""
    n = r.shape[0]
    nb = -(-n // REPEAT_BLOCK)
    part = ol.asarray(poisoned(nb, "int64"), device=device)
    total = ol.asarray(poisoned(1, "int64"), device=device)
    cum = ol.asarray(poisoned(n, "int64"), device=device)
    manip_kernel("repeat_sums")[ol.Range(nb)](part, r, n, REPEAT_BLOCK)
    manip_kernel("repeat_starts")[ol.Range(1)](part, nb, total)
    manip_kernel("repeat_cumsum")[ol.Range(nb)](cum, part, r, n, REPEAT_BLOCK)
    return ol.asnumpy(part), ol.asnumpy(total)[0], ol.asnumpy(cum)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("n", [1, 255, 256, 1000, 70001])
def test_repeat_running_sums(device, rng, dtype, n):
    r = rng.integers(0, 6, n).astype(dtype)
    starts, total, cum = running_sums(device, ol.asarray(r, device=device))
    sums = np.add.reduceat(r.astype(np.int64), np.arange(0, n, REPEAT_BLOCK))
    assert np.array_equal(starts, np.cumsum(sums) - sums)
    assert total == r.sum(dtype=np.int64)
    assert np.array_equal(cum, np.cumsum(r, dtype=np.int64))


def test_repeat_running_sums_flag_a_negative_count(device, rng):
    n = 3 * REPEAT_BLOCK + 17
    r = rng.integers(0, 6, n)
    bad = rng.integers(REPEAT_BLOCK, 2 * REPEAT_BLOCK)  # in block 1 of 4
    r[bad] = -1
    rd = ol.asarray(r, device=device)
    part = ol.asarray(poisoned(4, "int64"), device=device)
    manip_kernel("repeat_sums")[ol.Range(4)](part, rd, n, REPEAT_BLOCK)
    sums = np.add.reduceat(r, np.arange(0, n, REPEAT_BLOCK))
    sums[1] = -1
    assert np.array_equal(ol.asnumpy(part), sums)
    assert running_sums(device, rd)[1] == -1


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "complex128"])
@pytest.mark.parametrize("shape,axis", [((1,), 0), ((700,), 0), ((6, 90), 1), ((90, 6), 0),
                                        ((3, 40, 5), 1)])
def test_repeat_gather(device, rng, dtype, shape, axis):
    """repeat_gather over x seen as (pre, n) (ND 2) or (pre, n, post) (ND 3)."""
    if dtype == "complex128" and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    x = rng.standard_normal(shape) * 50
    x = (x + 1j * x[::-1] if dtype == "complex128" else x).astype(dtype)
    n = shape[axis]
    r = rng.integers(0, 4, n)
    r[rng.integers(0, n)] = 5  # a total of at least one
    total = int(r.sum())
    pre, post = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1:]))
    nd = 2 if post == 1 else 3
    xs, os = ((pre, n), (pre, total)) if nd == 2 else ((pre, n, post), (pre, total, post))
    out = ol.asarray(poisoned(os, dtype), device=device)
    cum = ol.asarray(np.cumsum(r), device=device)
    manip_kernel("repeat_gather")[ol.Range(*os)](out, ol.asarray(x.reshape(xs), device=device),
                                                 cum, n, nd)
    want = np.repeat(x, r, axis=axis).reshape(os)
    assert np.array_equal(ol.asnumpy(out), want)


# ---- creation.py: fills, eye, tril and triu, linspace ------------------------


def creation_kernel(name):
    return ol._library("creation", name)


FILL_DTYPES = ["bool", "int8", "uint16", "int64", "float32", "float64", "complex64"]


@pytest.mark.parametrize("dtype", FILL_DTYPES)
@pytest.mark.parametrize("n", [1, 1000, 100003])
def test_fill(device, rng, dtype, n):
    if dtype == "float64" and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    dt = np.dtype(dtype)
    v = (dt.type(rng.integers(0, 2)) if dt.kind == "b" else
         dt.type(rng.integers(0, 100)) if dt.kind in "iu" else
         dt.type(complex(*rng.standard_normal(2))) if dt.kind == "c" else
         dt.type(rng.standard_normal() * 100))
    out = ol.asarray(poisoned(n + 3, dtype), device=device)
    creation_kernel("fill")[ol.Range(n)](out, v)
    got = ol.asnumpy(out)
    assert np.array_equal(got[:n], np.full(n, v, dt))
    assert np.array_equal(got[n:], poisoned(3, dtype), equal_nan=dt.kind == "f"), "wrote past n"


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32", "float64", "complex64"])
@pytest.mark.parametrize("n,m", [(1, 1), (7, 7), (5, 13), (40, 3)])
def test_eye(device, rng, dtype, n, m):
    if dtype == "float64" and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    for k in (0, int(rng.integers(1, m + 1)), -int(rng.integers(1, n + 1))):
        out = ol.asarray(poisoned((n, m), dtype), device=device)
        creation_kernel("eye")[ol.Range(n, m)](out, k, np.dtype(dtype))
        assert np.array_equal(ol.asnumpy(out), np.eye(n, m, k, dtype=dtype)), k


@pytest.mark.parametrize("dtype", ["bool", "uint16", "int64", "float32", "complex128"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 9, 4), (5, 6, 17), (3, 30, 2)])
def test_triangle(device, rng, dtype, lower, shape):
    if dtype == "complex128" and not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    x = rng.standard_normal(shape) * 50
    x = (x + 1j * x[..., ::-1] if dtype == "complex128" else x).astype(dtype)
    xd = ol.asarray(x, device=device)
    for k in (0, int(rng.integers(1, shape[2] + 1)), -int(rng.integers(1, shape[1] + 1))):
        out = ol.asarray(poisoned(shape, dtype), device=device)
        creation_kernel("triangle")[ol.Range(*shape)](out, xd, k, lower, np.dtype(dtype))
        want = np.tril(x, k) if lower else np.triu(x, k)
        assert np.array_equal(ol.asnumpy(out), want), k


def linspace_launch(device, start, stop, num, endpoint, ct, ot):
    """creation.linspace as mod_namespace.c plans it: the CT scalars, the
    form (0: at most one interval, 1: step 0, 2: the usual) and the last
    element; the result as a NumPy array."""
    ct = np.dtype(ct).type
    d = num - 1 if endpoint else num
    start, stop, div = ct(start), ct(stop), ct(max(d, 1))
    delta = np.subtract(stop, start, dtype=ct)
    step = np.divide(delta, div, dtype=ct)
    form = 0 if d <= 0 else 1 if step == 0 else 2
    out = ol.asarray(poisoned(num, ot), device=device)
    creation_kernel("linspace")[ol.Range(num)](out, start, stop, step, delta, div,
                                               num - 1 if endpoint and num > 1 else -1, form,
                                               np.dtype(ct), np.dtype(ot))
    return ol.asnumpy(out)


@pytest.mark.parametrize("ot", ["float64", "float32", "int32", "uint8", "bool"])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace(device, rng, ot, endpoint):
    if not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    hi = 250 if ot == "uint8" else 1000
    lo = 0 if ot == "uint8" else -hi
    cases = [(float(rng.uniform(lo, hi)), float(rng.uniform(lo, hi)), int(rng.integers(2, 2000))),
             (1.0, 1 + 1e-320, 6),  # step 0: the form that divides first
             (float(rng.uniform(lo, hi)), float(rng.uniform(lo, hi)), 1)]
    for start, stop, num in cases:
        want = np.linspace(start, stop, num, endpoint=endpoint, dtype=ot)
        got = linspace_launch(device, start, stop, num, endpoint, "float64", ot)
        assert np.array_equal(got, want), (start, stop, num)
    # float32 computation, as on a device without float64
    start, stop = np.float32(rng.uniform(-10, 10)), np.float32(rng.uniform(-10, 10))
    want = np.linspace(start, stop, 77, endpoint=endpoint, dtype=ot)
    assert np.array_equal(linspace_launch(device, start, stop, 77, endpoint, "float32", ot), want)
