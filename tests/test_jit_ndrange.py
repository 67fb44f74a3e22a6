"""nd-range kernels (DESIGN.md, "The Python surface" -> "Device kernels"):
ol.NdRange(global, local) launches, the NdItem and Group API, work-group
barriers, ol.local_array / ol.private_array, ol.AtomicRef on global and local
arrays of every atomic dtype, device functions that take a local array and the
group, and the errors: bad NdRanges, local sizes over the device's limit,
nd-range features in a plain Range kernel, 64-bit atomics on a device without
them.

Every result is checked against NumPy on fresh random inputs; outputs start
poisoned (NaN, 0x5A5A...) so that an element nothing writes is caught. Runs on
PoCL's CPU device and, where offload finds one, on the first CUDA GPU.

Imports only numpy, pytest and offload_fixtures (the GPU machine runs
`pytest tests/test_jit_ndrange.py --noconftest`). A failing test prints its
seed: OFFLOAD_TEST_SEED=<n> reruns it with the same inputs.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    CPU_FILTER,
    load_offload,
    run_python,
    device_filters,
    device_fixture,
    rng,
    poisoned,
)

_ol = load_offload()  # a missing extension is a failure, not a skip
# The kernels below call ol.local_array, ol.group_barrier, ol.AtomicRef: the JIT
# resolves this module global (so there is no `ol` fixture to shadow it).
ol = _ol

DEVICES = device_filters(ol)
ATOMIC_DTYPES = ["int32", "uint32", "int64", "uint64", "float32", "float64"]
INT_ATOMIC_DTYPES = ["int32", "uint32", "int64", "uint64"]


# Compile-time constants the kernels read from module globals.
TILE = 16  # tiled matmul: TILE x TILE work-groups and local tiles
GROUP = 64  # work-group size of the reductions
SCAN = 128  # work-group size of the scan
NBINS = 40  # bins of the local-memory histogram (more than its work-group size)
PER_ITEM = 6  # elements each work-item counts in the local-memory histogram
NIDS3 = 24  # values ids_3d writes per work-item


device = device_fixture(ol)


def wrap(value: int, dtype) -> np.generic:
    """A Python int reduced modulo 2**bits into an integer dtype (two's complement)."""
    dt = np.dtype(dtype)
    bits = 8 * dt.itemsize
    return np.array(value % (1 << bits), np.dtype(f"u{dt.itemsize}")).view(dt)[()]


def full_range(rng, shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


# ============================================================================
# NdRange


def test_ndrange_object():
    r = ol.NdRange((64, 48), (16, 8))
    assert r.ndim == 2
    assert isinstance(r.global_range, ol.Range) and isinstance(r.local_range, ol.Range)
    assert r.global_range == ol.Range(64, 48) and r.local_range == ol.Range(16, 8)
    r1 = ol.NdRange(100, 10)
    assert r1.ndim == 1 and r1.global_range == ol.Range(100) and r1.local_range == ol.Range(10)
    r3 = ol.NdRange(ol.Range(4, 6, 8), ol.Range(2, 3, 4))
    assert r3.ndim == 3 and tuple(r3.global_range) == (4, 6, 8) and tuple(r3.local_range) == (2, 3, 4)
    assert ol.NdRange((12,), 4).global_range == ol.Range(12)


@pytest.mark.parametrize(
    "glob, loc, numbers",
    [((100,), (32,), ["100", "32"]), (100, 32, ["100", "32"]), ((64, 50), (8, 16), ["50", "16"]),
     (ol.Range(4, 4, 10), ol.Range(2, 2, 4), ["10", "4"])],
    ids=["1d-tuple", "1d-int", "2d", "3d-Range"])
def test_global_not_a_multiple_of_local(glob, loc, numbers):
    with pytest.raises(ValueError) as info:
        ol.NdRange(glob, loc)
    msg = str(info.value)
    for number in numbers:
        assert re.search(rf"\b{number}\b", msg), f"the message should name {number}: {msg!r}"


@pytest.mark.parametrize(
    "glob, loc",
    [((64, 64), (8,)), (64, (8, 8)), ((8, 8, 8), (2, 2)), (ol.Range(64), ol.Range(8, 8)),
     (64, 0), ((64,), (-8,)), ((64, 64), (8, 0))],
    ids=["2d-1d", "int-2d", "3d-2d", "Range-1d-2d", "local-0", "local-negative", "local-0-in-dim-1"])
def test_bad_ndrange_is_value_error(glob, loc):
    with pytest.raises(ValueError):
        ol.NdRange(glob, loc)


def test_ndrange_of_four_dims_is_refused():
    with pytest.raises((ValueError, TypeError)):
        ol.NdRange((2, 2, 2, 2), (1, 1, 1, 1))


# ============================================================================
# Tiled matrix multiply: local tiles and barriers


@ol.kernel
def tiled_matmul(item, a, b, c):
    i = item.get_global_id(0)
    j = item.get_global_id(1)
    li = item.get_local_id(0)
    lj = item.get_local_id(1)
    g = item.get_group()
    ta = ol.local_array((TILE, TILE), np.float32)
    tb = ol.local_array((TILE, TILE), np.float32)
    acc = 0.0
    for t in range(a.shape[1] // TILE):
        ta[li, lj] = a[i, t * TILE + lj]
        tb[li, lj] = b[t * TILE + li, j]
        ol.group_barrier(g)
        for k in range(TILE):
            acc += ta[li, k] * tb[k, lj]
        ol.group_barrier(g)
    c[i, j] = acc


def test_tiled_matmul(device, rng):
    a = rng.uniform(-1, 1, (64, 48)).astype(np.float32)
    b = rng.uniform(-1, 1, (48, 80)).astype(np.float32)
    c = ol.asarray(poisoned((64, 80), np.float32), device=device)
    tiled_matmul[ol.NdRange((64, 80), (TILE, TILE))](ol.asarray(a, device=device), ol.asarray(b, device=device), c)
    np.testing.assert_allclose(ol.asnumpy(c), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


# ============================================================================
# Work-group tree reduction (float32 and int32 side by side)


@ol.kernel
def group_sums(item, xf, xi, sums_f, sums_i):
    i = item.get_global_id(0)
    li = item.get_local_id(0)
    g = item.get_group()
    bf = ol.local_array(GROUP, np.float32)
    bi = ol.local_array((GROUP,), ol.int32)
    bf[li] = xf[i]
    bi[li] = xi[i]
    ol.group_barrier(g)
    step = GROUP // 2
    while step > 0:
        if li < step:
            bf[li] += bf[li + step]
            bi[li] += bi[li + step]
        ol.group_barrier(g)
        step //= 2
    if li == 0:
        gid = g.get_group_id(0)
        sums_f[gid] = bf[0]
        sums_i[gid] = bi[0]


def test_group_reduction(device, rng):
    groups = 997
    n = GROUP * groups
    xf = rng.uniform(-1, 1, n).astype(np.float32)
    xi = rng.integers(-(2**24), 2**24, n, dtype=np.int32, endpoint=True)  # a group's sum fits in int32
    sums_f = ol.asarray(poisoned(groups, np.float32), device=device)
    sums_i = ol.asarray(poisoned(groups, np.int32), device=device)
    ol.call_kernel(group_sums, ol.NdRange(n, GROUP), ol.asarray(xf, device=device), ol.asarray(xi, device=device),
                   sums_f, sums_i)
    got_f, got_i = ol.asnumpy(sums_f), ol.asnumpy(sums_i)
    np.testing.assert_allclose(got_f, xf.astype(np.float64).reshape(groups, GROUP).sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got_i, xi.reshape(groups, GROUP).sum(axis=1, dtype=np.int64).astype(np.int32))
    # the partial sums add up on the host
    np.testing.assert_allclose(got_f.astype(np.float64).sum(), xf.astype(np.float64).sum(), rtol=0, atol=1e-4 * groups)
    assert got_i.astype(np.int64).sum() == xi.astype(np.int64).sum()


# ============================================================================
# Histograms with atomics


@ol.kernel
def histogram_global(item, data, hist, olds):
    i = item.get_global_id(0)
    olds[i] = ol.AtomicRef(hist, data[i]).fetch_add(1)


def histogram_data(rng, n, nbins):
    """Bins in [0, nbins), with one hot bin for contention."""
    data = rng.integers(0, nbins, n, dtype=np.int32)
    data[rng.random(n) < 0.25] = rng.integers(0, nbins)
    return data


def assert_counts_before(data, olds, base, what):
    """fetch_add(1) returns the bin's value before it: per bin, the old values
    are base, base+1, ... base+count-1 in some order."""
    order = np.lexsort((olds, data))
    bins = data[order]
    counts = np.bincount(data, minlength=len(base))
    rank = np.arange(len(data)) - (np.cumsum(counts) - counts)[bins]
    want = (base.astype(np.int64)[bins] + rank).astype(olds.dtype)
    np.testing.assert_array_equal(olds[order], want, err_msg=f"{what}: the values fetch_add returned")


@pytest.mark.parametrize("dtype", ATOMIC_DTYPES)
def test_histogram_global_atomics(device, rng, dtype):
    nbins, n = 50, 64 * 313
    data = histogram_data(rng, n, nbins)
    base = rng.integers(0, 1000, nbins).astype(dtype)  # not zeros: fetch_add must add, not store
    hist = ol.asarray(base, device=device)
    olds = ol.asarray(poisoned(n, dtype), device=device)
    histogram_global[ol.NdRange(n, 64)](ol.asarray(data, device=device), hist, olds)
    want = (base.astype(np.int64) + np.bincount(data, minlength=nbins)).astype(dtype)
    np.testing.assert_array_equal(ol.asnumpy(hist), want, err_msg=f"{dtype} histogram")
    assert_counts_before(data, ol.asnumpy(olds), base, f"{dtype} histogram")


# A grid-stride loop of a runtime trip count: on PTX the JIT runs it four bodies
# per trip, then the rest one at a time, with the copies' global loads ahead of
# their local-memory atomics. These check every remainder and the order.
WORD_BINS = 256


@ol.kernel
def word_histogram(item, words, hist):
    lid = item.get_local_id(0)
    h = ol.local_array(WORD_BINS, ol.uint32)
    for b in range(lid, WORD_BINS, item.get_local_range(0)):
        h[b] = 0
    ol.group_barrier(item.get_group())
    for i in range(item.get_global_id(0), words.shape[0], item.get_global_range(0)):
        w = words[i]
        ol.AtomicRef(h, w & 255).fetch_add(1)
        ol.AtomicRef(h, (w >> 8) & 255).fetch_add(1)
        ol.AtomicRef(h, (w >> 16) & 255).fetch_add(1)
        ol.AtomicRef(h, (w >> 24) & 255).fetch_add(1)
    ol.group_barrier(item.get_group())
    for b in range(lid, WORD_BINS, item.get_local_range(0)):
        if h[b] != 0:
            ol.AtomicRef(hist, b).fetch_add(h[b])


@pytest.mark.parametrize("nwords", [1, 3 * 64 + 5, 4 * 4 * 64, 4 * 4 * 64 + 4 * 64 - 1, 9 * 4 * 64 + 77])
def test_grid_stride_histogram_every_remainder(device, rng, nwords):
    """Each work-item's trips run from 0 to 10, so every remainder of the four-body loop occurs."""
    data = rng.integers(0, 256, 4 * nwords, dtype=np.uint8)
    hist = ol.asarray(np.zeros(WORD_BINS, np.uint32), device=device)
    word_histogram[ol.NdRange(4 * 64, 64)](ol.asarray(data.view(np.uint32), device=device), hist)
    np.testing.assert_array_equal(ol.asnumpy(hist), np.bincount(data, minlength=WORD_BINS))


@ol.kernel
def strided_sums(item, x, out, start, stop, step):
    g = item.get_global_id(0)
    acc = 0
    for i in range(start + g, stop, step):
        acc += x[i] * (i + 1)
        i = -1  # rebinding the loop variable changes nothing, in every copy of the body
    out[g] = acc


@pytest.mark.parametrize("start, stop, step", [(0, 0, 1), (0, 37, 1), (3, 64, 3), (5, 200, 8), (90, -1, -1),
                                               (130, 2, -7), (0, 40, 100)])
def test_runtime_range_loops_every_trip_count(device, rng, start, stop, step):
    x = rng.integers(-1000, 1000, 256, dtype=np.int64)
    out = ol.asarray(poisoned(8, np.int64), device=device)
    strided_sums[ol.NdRange(8, 8)](ol.asarray(x, device=device), out, start, stop, step)
    want = [sum(int(x[i]) * (i + 1) for i in range(start + g, stop, step)) for g in range(8)]
    np.testing.assert_array_equal(ol.asnumpy(out), np.array(want, np.int64))


def test_ptx_grid_stride_loop_has_four_bodies_loads_first():
    """No GPU needed: the PTX of word_histogram has a block with four global loads, all
    before its first local-memory atomic."""
    words, hist = np.zeros(1 << 12, np.uint32), np.zeros(WORD_BINS, np.uint32)
    ptx = word_histogram.inspect_ptx(words, hist, range=ol.NdRange(256, 64))
    blocks = re.split(r"\n\$L__BB\d+_\d+:", ptx)
    best = []
    for blk in blocks:
        ops = re.findall(r"^\s+(ld\.global|atom\.shared)", blk, re.M)
        if "atom.shared" in ops:
            best.append(ops[:ops.index("atom.shared")].count("ld.global"))
    assert max(best, default=0) == 4, ptx


@ol.kernel
def count_the_group(item, out):
    g = item.get_group()
    n = ol.local_array(1, ol.uint32)
    if item.get_local_id(0) == 0:
        n[0] = 0
    ol.group_barrier(g)
    ol.AtomicRef(n, 0).fetch_add(1)
    ol.group_barrier(g)
    out[item.get_global_id(0)] = n[0]


def test_local_atomic_stays_before_the_barrier(device):
    """Every work-item sees the whole group's count after the barrier: on PTX the JIT moves a
    local-memory atomic down past global loads, never past a barrier."""
    out = ol.asarray(poisoned(4 * 64, np.uint32), device=device)
    count_the_group[ol.NdRange(4 * 64, 64)](out)
    np.testing.assert_array_equal(ol.asnumpy(out), np.full(4 * 64, 64, np.uint32))
    ptx = count_the_group.inspect_ptx(np.zeros(256, np.uint32), range=ol.NdRange(256, 64))
    ops = re.findall(r"^\s+(atom\.shared|bar\.sync)", ptx, re.M)
    assert ops == ["bar.sync", "atom.shared", "bar.sync"], ptx


@ol.kernel
def histogram_2d(item, rows, cols, hist):
    i = item.get_global_id(0)
    ol.AtomicRef(hist, (rows[i], cols[i])).fetch_add(1)


def test_histogram_2d_index_on_a_strided_view(device, rng):
    """AtomicRef(a, (i, j)) on a 2-D array honours its strides (a transposed view here)."""
    n, shape = 64 * 100, (7, 9)
    rows, cols = rng.integers(0, shape[0], n, dtype=np.int32), rng.integers(0, shape[1], n, dtype=np.int32)
    base = rng.integers(0, 1000, shape[::-1]).astype(np.int32)  # the array; the kernel sees base.T
    hist = ol.asarray(base, device=device)
    histogram_2d[ol.NdRange(n, 64)](ol.asarray(rows, device=device), ol.asarray(cols, device=device), hist.T)
    counts = np.bincount(rows * shape[1] + cols, minlength=shape[0] * shape[1]).reshape(shape)
    np.testing.assert_array_equal(ol.asnumpy(hist), base + counts.T.astype(np.int32))


@ol.kernel
def histogram_local(item, data, hist):
    li = item.get_local_id(0)
    nlocal = item.get_local_range(0)
    g = item.get_group()
    counts = ol.private_array((NBINS,), np.int32)
    for b in range(NBINS):
        counts[b] = 0
    start = item.get_global_id(0) * PER_ITEM
    for k in range(PER_ITEM):
        counts[data[start + k]] += 1
    local_hist = ol.local_array(NBINS, np.int32)
    for b in range(li, NBINS, nlocal):
        local_hist[b] = 0
    ol.group_barrier(g)
    for b in range(NBINS):
        if counts[b] != 0:
            ol.AtomicRef(local_hist, b).fetch_add(counts[b])
    ol.group_barrier(g)
    for b in range(li, NBINS, nlocal):
        ol.AtomicRef(hist, b).fetch_add(local_hist[b])


def test_local_histogram_from_private_counts(device, rng):
    local, items = 32, 32 * 64  # fewer work-items per group than bins: each clears and adds several
    data = histogram_data(rng, items * PER_ITEM, NBINS)
    base = rng.integers(0, 1000, NBINS).astype(np.int32)
    hist = ol.asarray(base, device=device)
    histogram_local[ol.NdRange((items,), (local,))](ol.asarray(data, device=device), hist)
    np.testing.assert_array_equal(ol.asnumpy(hist), base + np.bincount(data, minlength=NBINS).astype(np.int32))


# ============================================================================
# Inclusive scan within a work-group (Hillis-Steele, double buffer)


@ol.kernel
def group_scan(item, x, y):
    i = item.get_global_id(0)
    li = item.get_local_id(0)
    g = item.get_group()
    buf = ol.local_array((2, SCAN), ol.int32)
    buf[0, li] = x[i]
    ol.group_barrier(g)
    src = 0
    offset = 1
    while offset < SCAN:
        v = buf[src, li]
        if li >= offset:
            v += buf[src, li - offset]
        buf[1 - src, li] = v
        ol.group_barrier(g)
        src = 1 - src
        offset *= 2
    y[i] = buf[src, li]


def test_group_inclusive_scan(device, rng):
    n = SCAN * 300
    x = rng.integers(-1000, 1000, n, dtype=np.int32, endpoint=True)
    y = ol.asarray(poisoned(n, np.int32), device=device)
    ev = ol.call_kernel_async(group_scan, ol.NdRange(n, SCAN), ol.asarray(x, device=device), y)
    ev.wait()
    np.testing.assert_array_equal(ol.asnumpy(y), x.reshape(-1, SCAN).cumsum(axis=1).astype(np.int32).reshape(-1))


# ============================================================================
# compare_exchange


@ol.kernel
def cas_max(item, x, result):
    i = item.get_global_id(0)
    v = x[i]
    ref = ol.AtomicRef(result, 0)
    old = ref.load()
    while v > old:
        found = ref.compare_exchange(old, v)
        if found == old:
            break
        old = found


@ol.kernel
def cas_each(item, a, expected, desired, found):
    i = item.get_global_id(0)
    found[i] = ol.AtomicRef(a, i).compare_exchange(expected[i], desired[i])


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_compare_exchange(device, rng, dtype):
    n = 64 * 500
    if dtype == "int32":
        x, lowest = full_range(rng, n, np.int32), np.iinfo(np.int32).min
    else:
        x, lowest = (rng.standard_normal(n) * 1000).astype(np.float32), -np.inf
    # a compare_exchange loop computes the maximum
    result = ol.asarray(np.array([lowest], dtype), device=device)
    cas_max[ol.NdRange(ol.Range(n), ol.Range(64))](ol.asarray(x, device=device), result)
    np.testing.assert_array_equal(ol.asnumpy(result), [x.max()], err_msg=f"{dtype} maximum by compare_exchange")
    # one work-item per element: it stores `desired` iff the element equals `expected`,
    # and returns the element either way
    m = 64 * 20
    a, desired = x[:m].copy(), x[m:2 * m].copy()
    match = rng.random(m) < 0.5
    expected = np.where(match, a, a + np.array(1, dtype))
    assert (expected[~match] != a[~match]).all()
    dev_a, found = ol.asarray(a, device=device), ol.asarray(poisoned(m, dtype), device=device)
    cas_each[ol.NdRange(m, 64)](dev_a, ol.asarray(expected, device=device), ol.asarray(desired, device=device), found)
    np.testing.assert_array_equal(ol.asnumpy(found), a, err_msg=f"{dtype}: compare_exchange returns the value found")
    np.testing.assert_array_equal(ol.asnumpy(dev_a), np.where(match, desired, a),
                                  err_msg=f"{dtype}: compare_exchange stores desired iff found == expected")


# ============================================================================
# Every read-modify-write


@ol.kernel
def float_atomics(item, x, y, acc):
    i = item.get_global_id(0)
    ol.AtomicRef(acc, 0).fetch_add(x[i])
    ol.AtomicRef(acc, 1).fetch_add(y[i])
    ol.AtomicRef(acc, 2).fetch_max(y[i])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_atomic_add_and_max(device, rng, dtype):
    n = 64 * 256
    # multiples of 1/4 whose partial sums stay below 2**22: every order of the
    # additions gives the exact sum, so a lost update shows
    x = (rng.integers(-64, 64, n) / 4).astype(dtype)
    y = rng.uniform(-1, 1, n).astype(dtype)
    init = np.array([rng.integers(-100, 100) / 4, 0.0, -np.inf], dtype)
    acc = ol.asarray(init, device=device)
    float_atomics[ol.NdRange(n, 64)](ol.asarray(x, device=device), ol.asarray(y, device=device), acc)
    got = ol.asnumpy(acc)
    assert got[0] == init[0] + x.astype(np.float64).sum(), f"{dtype} fetch_add of exact values: {got[0]!r}"
    bound = n * np.finfo(dtype).eps * np.abs(y.astype(np.float64)).sum()  # any order of the additions
    assert abs(got[1] - y.astype(np.float64).sum()) <= bound, f"{dtype} fetch_add: {got[1]!r}"
    assert got[2] == y.max(), f"{dtype} fetch_max: {got[2]!r} != {y.max()!r}"


@ol.kernel
def int_atomics(item, vals, acc, olds, stored, loaded):
    i = item.get_global_id(0)
    v = vals[0, i]
    ol.AtomicRef(acc, 0).fetch_min(v)
    ol.AtomicRef(acc, 1).fetch_max(v)
    ol.AtomicRef(acc, 2).fetch_add(v)
    ol.AtomicRef(acc, 3).fetch_sub(v)
    ol.AtomicRef(acc, 4).fetch_xor(v)
    ol.AtomicRef(acc, 5).fetch_and(vals[1, i])
    ol.AtomicRef(acc, 6).fetch_or(vals[2, i])
    olds[0, i] = ol.AtomicRef(acc, 7).fetch_sub(1)
    olds[1, i] = ol.AtomicRef(acc, 8).exchange(v)
    ol.AtomicRef(stored, i).store(v)
    loaded[i] = ol.AtomicRef(vals, (0, i)).load()


def one_bit_values(rng, n, dtype, positions):
    """n values of `dtype`, each with one bit set, at one of `positions`."""
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    return (np.ones(n, u) << rng.choice(positions, n).astype(u)).view(dtype)


@pytest.mark.parametrize("dtype", INT_ATOMIC_DTYPES)
def test_int_atomics(device, rng, dtype):
    n, bits = 64 * 64, 8 * np.dtype(dtype).itemsize
    v = full_range(rng, n, dtype)
    and_bits, or_bits = (rng.choice(bits, bits // 4, replace=False) for _ in range(2))
    vals = np.stack([v, ~one_bit_values(rng, n, dtype, and_bits), one_bit_values(rng, n, dtype, or_bits)])
    init = full_range(rng, 9, dtype)
    acc = ol.asarray(init, device=device)
    olds = ol.asarray(poisoned((2, n), dtype), device=device)
    stored, loaded = ol.asarray(poisoned(n, dtype), device=device), ol.asarray(poisoned(n, dtype), device=device)
    int_atomics[ol.NdRange(n, 64)](ol.asarray(vals, device=device), acc, olds, stored, loaded)
    got, got_olds = ol.asnumpy(acc), ol.asnumpy(olds)

    total = sum(int(e) for e in v)
    want = {
        "fetch_min": min(init[0], v.min()),
        "fetch_max": max(init[1], v.max()),
        "fetch_add": wrap(int(init[2]) + total, dtype),
        "fetch_sub": wrap(int(init[3]) - total, dtype),
        "fetch_xor": np.bitwise_xor.reduce(np.append(init[4], v)),
        "fetch_and": np.bitwise_and.reduce(np.append(init[5], vals[1])),
        "fetch_or": np.bitwise_or.reduce(np.append(init[6], vals[2])),
        "fetch_sub(1)": wrap(int(init[7]) - n, dtype),
    }
    for slot, (op, value) in enumerate(want.items()):
        assert got[slot] == value, f"{dtype} {op}: got {got[slot]!r}, want {value!r}"
    # fetch_sub(1) returned init, init-1, ... init-(n-1) in some order
    np.testing.assert_array_equal(np.sort(got_olds[0]), np.sort([wrap(int(init[7]) - k, dtype) for k in range(n)]),
                                  err_msg=f"{dtype}: the values fetch_sub(1) returned")
    # each exchange returned the value before it: with the final value, the initial one and every v
    np.testing.assert_array_equal(np.sort(np.append(got_olds[1], got[8])), np.sort(np.append(init[8], v)),
                                  err_msg=f"{dtype}: the values exchange returned")
    np.testing.assert_array_equal(ol.asnumpy(stored), v, err_msg=f"{dtype}: store")
    np.testing.assert_array_equal(ol.asnumpy(loaded), v, err_msg=f"{dtype}: load")


# ============================================================================
# The NdItem and Group API, 2-D and 3-D


@ol.kernel
def ids_2d(item, out):
    i, j = item.get_global_id(0), item.get_global_id(1)
    g = item.get_group()
    out[i, j, 0] = item.get_global_id(0)
    out[i, j, 1] = item.get_global_id(1)
    out[i, j, 2] = item.get_local_id(0)
    out[i, j, 3] = item.get_local_id(1)
    out[i, j, 4] = g.get_group_id(0)
    out[i, j, 5] = g.get_group_id(1)
    out[i, j, 6] = item.get_global_range(0)
    out[i, j, 7] = item.get_global_range(1)
    out[i, j, 8] = item.get_local_range(0)
    out[i, j, 9] = item.get_local_range(1)
    out[i, j, 10] = g.get_group_range(0)
    out[i, j, 11] = g.get_group_range(1)
    out[i, j, 12] = g.get_local_range(0)
    out[i, j, 13] = g.get_local_range(1)
    out[i, j, 14] = item.get_global_linear_id()
    out[i, j, 15] = item.get_local_linear_id()
    out[i, j, 16] = g.get_group_linear_id()


@ol.kernel
def ids_3d(item, out):
    i, j, k = item.get_global_id(0), item.get_global_id(1), item.get_global_id(2)
    g = item.get_group()
    o = k * NIDS3  # out is (n0, n1, n2 * NIDS3): arrays have at most 3 dimensions
    out[i, j, o] = item.get_global_id(0)
    out[i, j, o + 1] = item.get_global_id(1)
    out[i, j, o + 2] = item.get_global_id(2)
    out[i, j, o + 3] = item.get_local_id(0)
    out[i, j, o + 4] = item.get_local_id(1)
    out[i, j, o + 5] = item.get_local_id(2)
    out[i, j, o + 6] = g.get_group_id(0)
    out[i, j, o + 7] = g.get_group_id(1)
    out[i, j, o + 8] = g.get_group_id(2)
    out[i, j, o + 9] = item.get_global_range(0)
    out[i, j, o + 10] = item.get_global_range(1)
    out[i, j, o + 11] = item.get_global_range(2)
    out[i, j, o + 12] = item.get_local_range(0)
    out[i, j, o + 13] = item.get_local_range(1)
    out[i, j, o + 14] = item.get_local_range(2)
    out[i, j, o + 15] = g.get_group_range(0)
    out[i, j, o + 16] = g.get_group_range(1)
    out[i, j, o + 17] = g.get_group_range(2)
    out[i, j, o + 18] = g.get_local_range(0)
    out[i, j, o + 19] = g.get_local_range(1)
    out[i, j, o + 20] = g.get_local_range(2)
    out[i, j, o + 21] = item.get_global_linear_id()
    out[i, j, o + 22] = item.get_local_linear_id()
    out[i, j, o + 23] = g.get_group_linear_id()


def expected_ids(glob, loc) -> np.ndarray:
    """What ids_2d / ids_3d write, from NumPy index arithmetic: per work-item the
    global, local and group ids, the global, local and group ranges, the
    group's local range (one field per dimension each), then the global, local
    and group linear ids (row-major: the last dimension varies fastest)."""
    glob, loc = np.array(glob), np.array(loc)
    groups = glob // loc
    idx = np.indices(tuple(glob))  # (ndim, *glob)
    per_dim = (len(glob),) + (1,) * len(glob)
    lid, gid = idx % loc.reshape(per_dim), idx // loc.reshape(per_dim)

    def const(v):
        return np.broadcast_to(v.reshape(per_dim), idx.shape)

    linear = [np.ravel_multi_index(tuple(idx), tuple(glob)), np.ravel_multi_index(tuple(lid), tuple(loc)),
              np.ravel_multi_index(tuple(gid), tuple(groups))]
    fields = [idx, lid, gid, const(glob), const(loc), const(groups), const(loc)] + [lin[None] for lin in linear]
    return np.moveaxis(np.concatenate(fields), 0, -1).astype(np.int64)


@pytest.mark.parametrize("glob, loc", [((12, 20), (4, 5)), ((6, 8, 10), (2, 4, 5))], ids=["2d", "3d"])
def test_item_and_group_ids(device, glob, loc):
    want = expected_ids(glob, loc)
    if len(glob) == 2:
        out = ol.asarray(poisoned(want.shape, np.int64), device=device)
        ids_2d[ol.NdRange(glob, loc)](out)
        got = ol.asnumpy(out)
    else:
        out = ol.asarray(poisoned((*glob[:2], glob[2] * NIDS3), np.int64), device=device)
        ol.call_kernel(ids_3d, ol.NdRange(ol.Range(*glob), ol.Range(*loc)), out)
        got = ol.asnumpy(out).reshape(want.shape)
    names = [f"{what}({d})" for what in ["global_id", "local_id", "group_id", "global_range", "local_range",
                                         "group_range", "group.local_range"] for d in range(len(glob))]
    names += ["global_linear_id", "local_linear_id", "group_linear_id"]
    for f, name in enumerate(names):
        np.testing.assert_array_equal(got[..., f], want[..., f], err_msg=f"{name} over NdRange({glob}, {loc})")


# ============================================================================
# Local sizes over the device's limit


@ol.kernel
def group_ids(item, out):
    i = item.get_global_id(0)
    out[i] = item.get_group().get_group_id(0)


def test_local_size_over_the_device_limit(device):
    limit = device.max_work_group_size
    assert isinstance(limit, int) and limit > 0
    out = ol.asarray(poisoned(2 * limit, np.int64), device=device)
    launches = {
        "k[NdRange]": lambda r: group_ids[r](out),
        "call_kernel": lambda r: ol.call_kernel(group_ids, r, out),
        "call_kernel_async": lambda r: ol.call_kernel_async(group_ids, r, out).wait(),
    }
    for local in [(2 * limit,), (2, limit)]:  # one work-group, too large
        for how, launch in launches.items():
            with pytest.raises(ValueError) as info:
                launch(ol.NdRange(local, local))
            msg = str(info.value)
            what = f"{how} over NdRange({local}, {local})"
            assert re.search(rf"\b{limit}\b", msg), f"{what}: the message should name the limit {limit}: {msg!r}"
            assert device.filter_string in msg, f"{what}: the message should name {device.filter_string}: {msg!r}"
    np.testing.assert_array_equal(ol.asnumpy(out), poisoned(2 * limit, np.int64), err_msg="a refused launch ran")
    # the kernel, the device and the process still work
    n = 4 * 64
    ids = ol.asarray(poisoned(n, np.int64), device=device)
    group_ids[ol.NdRange(n, 64)](ids)
    np.testing.assert_array_equal(ol.asnumpy(ids), np.arange(n) // 64)


# More local memory than any device here has (a compile-time constant, read at
# the kernel's first compile): over the limit PoCL would abort the process.
TOO_MUCH_LOCAL = max(d.local_mem_size for d in ol.get_devices()) // 8 + 1024


@ol.kernel
def huge_local(item, out):
    buf = ol.local_array(TOO_MUCH_LOCAL, np.float64)
    li = item.get_local_id(0)
    buf[li] = li
    ol.group_barrier(item.get_group())
    out[item.get_global_id(0)] = buf[0]


def test_local_arrays_over_the_device_local_memory(device):
    out = ol.asarray(poisoned(64, np.float64), device=device)
    with pytest.raises(ol.CompileError) as info:
        huge_local[ol.NdRange(64, 64)](out)
    msg = str(info.value)
    assert f"need {TOO_MUCH_LOCAL * 8} bytes" in msg and str(device.local_mem_size) in msg, msg
    assert "ol.local_array(TOO_MUCH_LOCAL" in msg, f"the caret should show the local_array line: {msg}"
    np.testing.assert_array_equal(ol.asnumpy(out), poisoned(64, np.float64), err_msg="a refused launch ran")
    ids = ol.asarray(poisoned(128, np.int64), device=device)  # the process and the device still work
    group_ids[ol.NdRange(128, 64)](ids)
    np.testing.assert_array_equal(ol.asnumpy(ids), np.arange(128) // 64)


# ============================================================================
# A device function that takes a local array and the group


@ol.device_func
def load_group(item, x, buf):
    """Copies the work-group's part of x into buf (takes the NdItem)."""
    g = item.get_group()
    buf[item.get_local_id(0)] = x[item.get_global_id(0)]
    ol.group_barrier(g)


@ol.device_func
def group_reduce(g, buf, li):
    """Tree-sums buf (one element per work-item) and returns the sum to every work-item."""
    step = g.get_local_range(0) // 2
    while step > 0:
        if li < step:
            buf[li] += buf[li + step]
        ol.group_barrier(g)
        step //= 2
    return buf[0]


@ol.kernel
def sums_by_device_func(item, x, sums, every):
    li = item.get_local_id(0)
    g = item.get_group()
    buf = ol.local_array(GROUP, np.float32)
    load_group(item, x, buf)
    s = group_reduce(g, buf, li)
    every[item.get_global_id(0)] = s
    if li == 0:
        sums[g.get_group_id(0)] = s


def test_device_func_group_reduction(device, rng):
    groups = 200
    n = GROUP * groups
    x = rng.uniform(-1, 1, n).astype(np.float32)
    sums = ol.asarray(poisoned(groups, np.float32), device=device)
    every = ol.asarray(poisoned(n, np.float32), device=device)
    sums_by_device_func[ol.NdRange(n, GROUP)](ol.asarray(x, device=device), sums, every)
    got = ol.asnumpy(sums)
    np.testing.assert_allclose(got, x.astype(np.float64).reshape(groups, GROUP).sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(ol.asnumpy(every), np.repeat(got, GROUP), err_msg="every work-item gets the sum")


# ============================================================================
# Compile errors (plain functions, decorated in the tests)


def k_barrier_over_range(item, a):
    i = item.get_id(0)
    g = item.get_group()
    ol.group_barrier(g)
    a[i] = 1.0


def k_local_array_over_range(item, a):
    i = item.get_id(0)
    buf = ol.local_array(16, np.float32)
    buf[0] = a[i]
    a[i] = buf[0]


def k_fetch_and_float(item, a):
    i = item.get_global_id(0)
    ol.AtomicRef(a, i).fetch_and(1)


def k_local_array_variable_shape(item, a, n):
    i = item.get_global_id(0)
    buf = ol.local_array(n, np.float32)
    buf[item.get_local_id(0)] = a[i]
    a[i] = buf[0]


def line_of(func, snippet: str) -> int:
    lines, start = inspect.getsourcelines(func)
    return next(start + k for k, line in enumerate(lines) if snippet in line)


COMPILE_ERRORS = [
    # (kernel, launch range, extra arguments, lines the error may point at, a regex the message matches)
    (k_barrier_over_range, lambda: ol.Range(16), [], ["item.get_group()", "ol.group_barrier(g)"],
     r"NdRange|group|barrier"),
    (k_local_array_over_range, lambda: ol.Range(16), [], ["ol.local_array("], r"NdRange|local_array"),
    (k_fetch_and_float, lambda: ol.NdRange(16, 16), [], ["fetch_and("], r"fetch_and|integer|float"),
    (k_local_array_variable_shape, lambda: ol.NdRange(16, 16), [16], ["ol.local_array("],
     r"constant|literal|shape"),
]


@pytest.mark.parametrize("func, launch_range, extra, snippets, words", COMPILE_ERRORS,
                         ids=["group_barrier over Range", "local_array over Range", "fetch_and on float32",
                              "local_array of a variable shape"])
def test_compile_error(func, launch_range, extra, snippets, words):
    a = ol.asarray(np.zeros(16, np.float32), device=CPU_FILTER)
    with pytest.raises(ol.CompileError) as info:
        ol.kernel(func)[launch_range()](a, *extra)
    e, msg = info.value, str(info.value)
    lines = [line_of(func, s) for s in snippets]
    assert e.lineno in lines, f"the error should point at line {' or '.join(map(str, lines))}, not {e.lineno}:\n{msg}"
    assert re.search(words, msg, re.I), f"the message should match /{words}/:\n{msg}"


ATOMIC64_CHILD = """
import numpy as np
import offload as ol

dev = ol.Device(@DEVICE@)
result = {"has_atomic64": dev.has_atomic64, "refused": {}, "ran": {}}


def count(item, data, hist):
    i = item.get_global_id(0)
    ol.AtomicRef(hist, data[i]).fetch_add(1)


k = ol.kernel(count)
data = np.random.default_rng().integers(0, 8, 256)  # int64: 64-bit arrays are fine, 64-bit atomics are not
result["want"] = np.bincount(data, minlength=8).tolist()
for dtype in ["int64", "uint64", "float64", "int32", "uint32", "float32"]:
    hist = ol.asarray(np.zeros(8, dtype), device=dev)
    try:
        k[ol.NdRange(256, 64)](ol.asarray(data, device=dev), hist)
        result["ran"][dtype] = ol.asnumpy(hist).tolist()
    except ol.CompileError as e:
        result["refused"][dtype] = str(e)
"""


def test_atomic64_refused_on_a_device_without_them(tmp_path):
    """OFFLOAD_WITHOUT=atomic64 makes every device report no 64-bit atomics: a
    64-bit AtomicRef is a CompileError there; 32-bit ones run."""
    child = tmp_path / "atomic64_child.py"  # a file: kernels are compiled from their source
    child.write_text(ATOMIC64_CHILD.replace("@DEVICE@", repr(CPU_FILTER)))
    r = run_python(f"import runpy\nresult.update(runpy.run_path({str(child)!r})['result'])",
                   env={"OFFLOAD_WITHOUT": "atomic64"}, timeout=120)
    assert r["has_atomic64"] is False
    assert sorted(r["refused"]) == ["float64", "int64", "uint64"], r
    for dtype, msg in r["refused"].items():
        assert "64-bit" in msg, f"{dtype}: {msg}"
    assert sorted(r["ran"]) == ["float32", "int32", "uint32"], r
    for dtype, got in r["ran"].items():
        assert got == r["want"], f"{dtype}: {got} != {r['want']}"
