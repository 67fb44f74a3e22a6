#!/usr/bin/env python3
"""Benchmark: offload's NdRange kernels (work-groups, local memory, barriers, atomics) against
the same algorithms in numba-cuda, with cuBLAS and the device-to-device copy as ceilings.

    PYTHONPATH=<build>/python python3 bench/bench_ndrange.py --quick     # smoke test
    PYTHONPATH=<build>/python python3 bench/bench_ndrange.py --json /tmp/ndrange.json

This is a benchmark, not a test: it asserts nothing about speed. It checks every result
(after timing) and prints the check table; a failed check marks its row.

Method (issue 5, item 5). On offload's first CUDA device. Each case is one kernel written
twice with the same algorithm, the same launch geometry and the same data: offload
(@ol.kernel, launched with ol.NdRange(global, local)) and numba-cuda (@cuda.jit, launched
[grid, block]; SYCL's last dimension is CUDA's x). Inputs are NumPy arrays made from a fixed
seed; offload gets ol.asarray copies, numba gets cuda.to_device copies of the same arrays.

Timing, device time: 3 warm-up launches (the first compiles), a synchronise, then R (--reps,
25) launches queued back to back, each between two device events, one synchronise, the
median. offload: ol.call_kernel_async(k, ndrange, ...).elapsed (events the runtime records
around the launch). numba: cuda.event() record / launch / record on the default stream.
CuPy (the ceilings): cupy.cuda.Event likewise. The R launches are queued behind a "spin"
kernel (one work-item, a few ms; each framework its own, on its own queue) so that they
wait on the device: a kernel shorter than the host's launch cost (the histogram runs tens
of us) would otherwise show that host cost inside its span. The header shows each spin's ms.

(1) sgemm: C = A @ B, float32, N x N x N (N = 4096), A and B uniform in [-1, 1). Classic
    tiled algorithm: work-groups of TILE x TILE (--tile, 16), one C element per work-item;
    per K-step each work-item loads one element of A and one of B into two TILE x TILE
    local (shared) arrays, barrier, TILE multiply-adds from local memory, barrier.
    GFLOP/s = 2 N^3 / t. Ceiling: CuPy's float32 matmul (cuBLAS SGEMM) on the same data,
    timed the same way in the same run, with TF32 off (CUPY_TF32 removed and
    NVIDIA_TF32_OVERRIDE=0 set before CuPy is imported). Check: 64 whole rows and 64 whole
    columns of C against a float64 NumPy product; error of each element divided by
    (|A| @ |B|) of that element; tolerance 1e-5 (float32 rounding gives ~1e-7; TF32 or a
    lost tile gives >= 1e-5). The check reads C after the timed launches (each launch
    writes the same C).
(2) reduce: sum of N = 2^28 float32 (uniform [0, 1)). Work-groups of 256, G groups
    (--groups; default 8 x the device's compute units, at most N / 256). Each work-item
    sums a grid-stride loop (i = global id, step = global range) in a float32 register,
    then a tree reduction in a 256-element local array (halving strides, a barrier per
    level), then work-item 0 adds the group's partial to out[0] with one atomic fetch_add.
    GB/s = 4 N / t. Check: out is zeroed (a fresh array) after timing, one more launch,
    compared with np.sum in float64; relative tolerance 1e-4.
(3) histogram: 256 bins of N = 2^26 uint8 (uniform), read as N / 4 uint32 words. Work-
    groups of 256, G groups as in (2) (at most N / 4 / 256). Each group zeroes a 256-bin
    uint32 local histogram, barrier, each work-item walks a grid-stride loop over the
    words and adds the word's 4 bytes with 4 local atomic fetch_adds, barrier, then the
    group's non-zero bins are added to the global histogram with global atomic
    fetch_adds. GB/s = N / t. Check (as in (2): a fresh zeroed histogram, one launch):
    exactly equal to np.bincount(minlength=256).

Bandwidth ceiling for (2) and (3): the best device-to-device copy of the case's byte count
in the same run: CuPy `dst[...] = src` (its copy kernel, float32 arrays) and
`dst.data.copy_from_device_async(src.data, nbytes)` (cuMemcpyAsync D2D), and numba's
`dst.copy_to_device(src)` (cuMemcpyDtoD), events as above; GB/s = 2 x bytes / t (read and
write). ratio = numba time / offload time (> 1: offload faster); target >= 0.95.
Without numba-cuda its columns print n/a; without CuPy the FLOP ceiling prints n/a.

--quick: N = 512, 2^22, 2^22 and 5 reps -- a smoke test, not a measurement. --json PATH
writes every number, the environment and the tables.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_jit import TABLES, await_full_build, check_table, log, print_table, save_json  # noqa: E402  (one way to print and keep tables)

ol = None      # offload, once imported (the offload kernels below name it)
cuda = None    # numba.cuda, once imported (the numba kernels below name it)
nb_f32 = nb_u32 = None  # numba.float32 / numba.uint32

TILE = 16      # sgemm tile (--tile); read at compile time by both JITs
WG = 256       # work-group size of reduce and histogram
BINS = 256
TARGET = 0.95  # numba time / offload time


# ================================================================ kernels: offload

def ol_sgemm(item, A, B, C):
    row = item.get_global_id(0)
    col = item.get_global_id(1)
    ty = item.get_local_id(0)
    tx = item.get_local_id(1)
    g = item.get_group()
    As = ol.local_array((TILE, TILE), ol.float32)
    Bs = ol.local_array((TILE, TILE), ol.float32)
    acc = ol.float32(0)
    for t in range(A.shape[1] // TILE):
        As[ty, tx] = A[row, t * TILE + tx]
        Bs[ty, tx] = B[t * TILE + ty, col]
        ol.group_barrier(g)
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        ol.group_barrier(g)
    C[row, col] = acc


def ol_reduce(item, x, out):
    lid = item.get_local_id(0)
    g = item.get_group()
    sm = ol.local_array(WG, ol.float32)
    acc = ol.float32(0)
    for i in range(item.get_global_id(0), x.shape[0], item.get_global_range(0)):
        acc += x[i]
    sm[lid] = acc
    ol.group_barrier(g)
    s = WG // 2
    while s > 0:
        if lid < s:
            sm[lid] += sm[lid + s]
        ol.group_barrier(g)
        s //= 2
    if lid == 0:
        ol.AtomicRef(out, 0).fetch_add(sm[0])


def ol_histogram(item, words, hist):
    lid = item.get_local_id(0)
    g = item.get_group()
    h = ol.local_array(BINS, ol.uint32)
    for b in range(lid, BINS, WG):
        h[b] = 0
    ol.group_barrier(g)
    for i in range(item.get_global_id(0), words.shape[0], item.get_global_range(0)):
        w = words[i]
        ol.AtomicRef(h, w & 255).fetch_add(1)
        ol.AtomicRef(h, (w >> 8) & 255).fetch_add(1)
        ol.AtomicRef(h, (w >> 16) & 255).fetch_add(1)
        ol.AtomicRef(h, (w >> 24) & 255).fetch_add(1)
    ol.group_barrier(g)
    for b in range(lid, BINS, WG):
        v = h[b]
        if v != 0:
            ol.AtomicRef(hist, b).fetch_add(v)


# ================================================================ kernels: numba-cuda

def nb_sgemm(A, B, C):
    ty = cuda.threadIdx.y
    tx = cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    As = cuda.shared.array((TILE, TILE), nb_f32)
    Bs = cuda.shared.array((TILE, TILE), nb_f32)
    acc = nb_f32(0)
    for t in range(A.shape[1] // TILE):
        As[ty, tx] = A[row, t * TILE + tx]
        Bs[ty, tx] = B[t * TILE + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    C[row, col] = acc


def nb_reduce(x, out):
    lid = cuda.threadIdx.x
    sm = cuda.shared.array(WG, nb_f32)
    acc = nb_f32(0)
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        acc += x[i]
    sm[lid] = acc
    cuda.syncthreads()
    s = WG // 2
    while s > 0:
        if lid < s:
            sm[lid] += sm[lid + s]
        cuda.syncthreads()
        s //= 2
    if lid == 0:
        cuda.atomic.add(out, 0, sm[0])


def nb_histogram(words, hist):
    lid = cuda.threadIdx.x
    h = cuda.shared.array(BINS, nb_u32)
    for b in range(lid, BINS, WG):
        h[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), words.shape[0], cuda.gridsize(1)):
        w = words[i]
        cuda.atomic.add(h, w & 255, 1)
        cuda.atomic.add(h, (w >> 8) & 255, 1)
        cuda.atomic.add(h, (w >> 16) & 255, 1)
        cuda.atomic.add(h, (w >> 24) & 255, 1)
    cuda.syncthreads()
    for b in range(lid, BINS, WG):
        v = h[b]
        if v != 0:
            cuda.atomic.add(hist, b, v)


# ================================================================ data and references

def make_sgemm(n, seed=7):
    rng = np.random.default_rng(seed)
    A = rng.random((n, n), dtype=np.float32) * np.float32(2) - np.float32(1)
    B = rng.random((n, n), dtype=np.float32) * np.float32(2) - np.float32(1)
    k = min(64, n)
    rows = np.sort(rng.choice(n, k, replace=False))
    cols = np.sort(rng.choice(n, k, replace=False))
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = {"rows": rows, "cols": cols,
           "C_rows": A64[rows] @ B64, "S_rows": np.abs(A64[rows]) @ np.abs(B64),
           "C_cols": A64 @ B64[:, cols], "S_cols": np.abs(A64) @ np.abs(B64[:, cols])}
    return A, B, ref


def check_sgemm(C, ref, tol=1e-5):
    """(max of |C - ref| / (|A| @ |B|) over the sampled rows and columns, ok?)"""
    C = np.asarray(C, dtype=np.float64)
    e = max(float(np.max(np.abs(C[ref["rows"]] - ref["C_rows"]) / ref["S_rows"])),
            float(np.max(np.abs(C[:, ref["cols"]] - ref["C_cols"]) / ref["S_cols"])))
    return e, bool(e <= tol)  # NaN compares False


def make_reduce(n, seed=7):
    x = np.random.default_rng(seed).random(n, dtype=np.float32)
    return x, float(x.sum(dtype=np.float64))


def check_reduce(out, ref, tol=1e-4):
    e = abs(float(np.asarray(out).reshape(-1)[0]) - ref) / abs(ref)
    return e, bool(e <= tol)


def make_histogram(n, seed=7):
    x = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    return x, np.bincount(x, minlength=BINS).astype(np.int64)


def check_histogram(hist, ref):
    """(number of wrong bins, ok?): exact."""
    bad = int(np.count_nonzero(np.asarray(hist).astype(np.int64) != ref))
    return bad, bad == 0


# ================================================================ timing

# Each timed batch is queued behind a spin kernel (a dependent float32 chain of SPIN_ITERS
# steps on one work-item, a few ms) on the same queue; see "Timing" above.
SPIN_ITERS = 1 << 21
SPIN = {"offload": lambda: None, "numba": lambda: None, "cupy": lambda: None}
CP_SPIN = r'''extern "C" __global__ void spin(float *a, long long n) {
    float x = a[0];
    for (long long i = 0; i < n; ++i) x = x * 0.999999f + 1e-7f;
    a[0] = x;
}'''


def ol_spin(item, a, n):
    x = a[0]
    for i in range(n):
        x = x * 0.999999 + 1e-7
    a[0] = x


def nb_spin(a, n):
    x = a[0]
    for i in range(n):
        x = x * nb_f32(0.999999) + nb_f32(1e-7)
    a[0] = x


def make_spinners(dev, cp):
    """Fills SPIN; returns {framework: ms of one spin, or why there is none}."""
    out, one = {}, np.ones(1, np.float32)

    def offload():
        k, a, r = ol.kernel(ol_spin), ol.asarray(one, device=dev), ol.Range(1)
        return lambda: ol.call_kernel_async(k, r, a, SPIN_ITERS)

    def numba():
        kn, na = cuda.jit(nb_spin), cuda.to_device(one)
        return lambda: kn[1, 1](na, SPIN_ITERS)

    def cupy():
        kc, ca = cp.RawKernel(CP_SPIN, "spin"), cp.ones(1, cp.float32)
        return lambda: kc((1,), (1,), (ca, np.int64(SPIN_ITERS)))
    timers = {"offload": lambda f: (f(), f().elapsed)[1],  # the first launch compiles
              "numba": lambda f: med(time_nb(f, 1, spin=lambda: None)),
              "cupy": lambda f: med(time_cp(cp, f, 1, spin=lambda: None))}
    for name, make, have in (("offload", offload, True), ("numba", numba, cuda is not None),
                             ("cupy", cupy, cp is not None)):
        if have:
            try:
                f = make()
                out[name] = timers[name](f) * 1e3
                SPIN[name] = f
            except Exception as e:  # timed without a spin then
                why = (str(e).strip() or "?").splitlines()[0][:200]
                out[name] = f"none ({type(e).__name__}: {why})"
    return out


def time_ol(k, nd, args, reps, dev, warm=3):
    """Device seconds of each of reps offload launches queued back to back."""
    for _ in range(warm):
        k[nd](*args)
    ol.synchronize(dev)
    await_full_build()
    SPIN["offload"]()
    evs = [ol.call_kernel_async(k, nd, *args) for _ in range(reps)]
    ol.synchronize(dev)
    return [e.elapsed for e in evs]


def time_events(fn, event, elapsed, sync, spin, reps, warm=3):
    """Device seconds of fn() between two events, reps times back to back after spin();
    elapsed(e0, e1) is in ms."""
    for _ in range(warm):
        fn()
    sync()
    evs = [(event(), event()) for _ in range(reps)]
    spin()
    for e0, e1 in evs:
        e0.record()
        fn()
        e1.record()
    sync()
    return [elapsed(e0, e1) * 1e-3 for e0, e1 in evs]


def time_nb(fn, reps, spin=None):
    return time_events(fn, cuda.event, cuda.event_elapsed_time, cuda.synchronize,
                       spin or SPIN["numba"], reps)


def time_cp(cp, fn, reps, spin=None):
    return time_events(fn, cp.cuda.Event, cp.cuda.get_elapsed_time,
                       cp.cuda.Device().synchronize, spin or SPIN["cupy"], reps)


def med(ts):
    return statistics.median(ts) if ts else None


# ================================================================ the cases

def run_case(name, dev, reps, kernels, inputs, accumulates, check, checks):
    """Times then checks one case on each side. kernels: {side: (kernel function, launch
    config)}; inputs: NumPy arrays, the last one the output. Each side gets its own device
    copies. accumulates: the kernel adds into its output, so the check launches once more
    on a fresh zeroed output after timing; otherwise it reads the output the timed launches
    wrote. Returns {side: {times_s, err, ok} or {error}}."""
    res = {}
    for side, (fn, cfg) in kernels.items():
        if side == "numba" and cuda is None:
            continue
        log(f"{name}: {side}")
        try:
            if side == "offload":
                to_dev, to_host, k = (lambda v: ol.asarray(v, device=dev)), ol.asnumpy, \
                    ol.kernel(fn)
                a = [to_dev(v) for v in inputs]
                ts = time_ol(k, cfg, a, reps, dev)
            else:
                to_dev, to_host, k = cuda.to_device, (lambda d: d.copy_to_host()), \
                    cuda.jit(fn)
                a, kc = [to_dev(v) for v in inputs], k[cfg]
                ts = time_nb(lambda: kc(*a), reps)
            if accumulates:
                a[-1] = to_dev(inputs[-1])
                k[cfg](*a)
            err, ok = check(to_host(a[-1]))  # reading the result back waits for it
            res[side] = {"times_s": ts, "err": err, "ok": ok}
            checks.append((f"{side} {name}", err, ok))
        except Exception as ex:  # a CompileError, DeviceError, ... is reported, not fatal
            msg = f"{type(ex).__name__}: {str(ex).strip()}"
            print(f"  ! {side} {name}: {msg[:2000]}")
            res[side] = {"error": msg}
            checks.append((f"{side} {name}: {msg.splitlines()[0][:100]}", None, False))
    return res


def copy_ceiling(cp, nbytes, reps):
    """{method: GB/s} of device-to-device copies of nbytes (2 x nbytes moved), each checked."""
    out, n = {}, nbytes // 4
    src = np.random.default_rng(3).random(n, dtype=np.float32)
    if cp is not None:
        cs, cd = cp.asarray(src), cp.empty(n, np.float32)

        def assign():
            cd[...] = cs

        def memcpy():
            cd.data.copy_from_device_async(cs.data, cs.nbytes)
        for label, fn in (("CuPy dst[...]=src", assign), ("cuMemcpyAsync D2D (CuPy)", memcpy)):
            cd.fill(0)
            t = med(time_cp(cp, fn, reps))
            if np.array_equal(cp.asnumpy(cd), src):
                out[label] = 2 * nbytes / t / 1e9
            else:
                print(f"  ! {label}, {nbytes} bytes: WRONG RESULT, not used as a ceiling")
        del cs, cd
        cp.get_default_memory_pool().free_all_blocks()
    if cuda is not None:
        ds, dd = cuda.to_device(src), cuda.device_array(n, np.float32)
        t = med(time_nb(lambda: dd.copy_to_device(ds), reps))
        if np.array_equal(dd.copy_to_host(), src):
            out["cuMemcpyDtoD (numba)"] = 2 * nbytes / t / 1e9
    return out


def case_sgemm(dev, n, reps, cp, checks):
    log(f"sgemm {n}: data and the float64 reference")
    A, B, ref = make_sgemm(n)
    kernels = {"offload": (ol_sgemm, ol.NdRange((n, n), (TILE, TILE))),  # dim 1 = CUDA x
               "numba": (nb_sgemm, ((n // TILE, n // TILE), (TILE, TILE)))}
    res = run_case(f"sgemm {n}", dev, reps, kernels, (A, B, np.zeros((n, n), np.float32)),
                   False, lambda C: check_sgemm(C, ref), checks)
    ceil = {}
    if cp is not None:
        log("sgemm: CuPy matmul (cuBLAS)")
        ca, cb, cc = cp.asarray(A), cp.asarray(B), cp.empty((n, n), np.float32)
        t = med(time_cp(cp, lambda: cp.matmul(ca, cb, out=cc), reps))
        err, ok = check_sgemm(cp.asnumpy(cc), ref)
        checks.append(("CuPy matmul (cuBLAS, the FLOP ceiling)", err, ok))
        if ok:
            ceil["cuBLAS SGEMM (CuPy)"] = 2.0 * n ** 3 / t / 1e9
    r = row(f"sgemm {n}^3 f32, tile {TILE}x{TILE}", res, 2.0 * n ** 3, "GFLOP/s", ceil)
    return r, {"n": n, "tile": TILE, "results": res, "ceiling_gflops": ceil}


def case_reduce(dev, n, groups, reps, cp, checks):
    G = min(groups, max(1, n // WG))
    log(f"reduce {n}: data")
    x, ref = make_reduce(n)
    kernels = {"offload": (ol_reduce, ol.NdRange(G * WG, WG)), "numba": (nb_reduce, (G, WG))}
    res = run_case(f"reduce {n}", dev, reps, kernels, (x, np.zeros(1, np.float32)), True,
                   lambda out: check_reduce(out, ref), checks)
    log("reduce: copy ceiling")
    ceil = copy_ceiling(cp, 4 * n, reps)
    r = row(f"reduce sum {size_label(n)} f32, {G}x{WG}", res, 4.0 * n, "GB/s", ceil)
    return r, {"n": n, "groups": G, "wg": WG, "results": res, "ceiling_gbps": ceil}


def case_histogram(dev, n, groups, reps, cp, checks):
    G = min(groups, max(1, n // 4 // WG))
    log(f"histogram {n}: data")
    x, ref = make_histogram(n)
    kernels = {"offload": (ol_histogram, ol.NdRange(G * WG, WG)),
               "numba": (nb_histogram, (G, WG))}
    # the same bytes, 4 to a uint32 word, on both sides
    res = run_case(f"histogram {n}", dev, reps, kernels,
                   (x.view(np.uint32), np.zeros(BINS, np.uint32)), True,
                   lambda h: check_histogram(h, ref), checks)
    log("histogram: copy ceiling")
    ceil = copy_ceiling(cp, n, reps)
    r = row(f"histogram 256 bins {size_label(n)} u8, {G}x{WG}", res, float(n), "GB/s", ceil)
    return r, {"n": n, "groups": G, "wg": WG, "results": res, "ceiling_gbps": ceil}


def size_label(n):
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def row(case, res, work, unit, ceil):
    """One table row; work = FLOP or bytes per launch; ceil = {method: GFLOP/s or GB/s}."""
    o, nb = res.get("offload", {}), res.get("numba", {})
    to, tn = med(o.get("times_s")), med(nb.get("times_s"))
    rate = work / to / 1e9 if to else None
    best = max(ceil.values(), default=None)
    ratio = tn / to if to and tn else None
    failed = [who for who, r in res.items() if not r.get("ok")]
    return {"case": case, "offload ms": to * 1e3 if to else None,
            "numba ms": tn * 1e3 if tn else None, "ratio": ratio,
            "offload rate": rate, "unit": unit,
            "% of ceiling": 100 * rate / best if rate and best else None,
            "met?": "FAIL: " + ",".join(failed) if failed else
            (None if ratio is None else ratio >= TARGET),
            "numba rate": work / tn / 1e9 if tn else None, "ceiling rate": best,
            "ceiling": max(ceil, key=ceil.get) if ceil else None}


# ================================================================ output

def fmt(v, p=2):
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, (str, int)):
        return str(v)
    if v != 0 and (abs(v) >= 1e6 or abs(v) < 10 ** -p):
        return f"{v:.3g}"
    return f"{v:.{p}f}"


COLUMNS = [  # (header, cell of a row)
    ("case", lambda r: r["case"]),
    ("offload ms", lambda r: fmt(r["offload ms"], 3)),
    ("numba ms", lambda r: fmt(r["numba ms"], 3)),
    ("ratio", lambda r: fmt(r["ratio"], 3)),
    ("offload GFLOP/s|GB/s", lambda r: fmt(r["offload rate"], 1) + " " + r["unit"]),
    ("% of ceiling", lambda r: fmt(r["% of ceiling"], 1)),
    ("met?", lambda r: "-" if r["met?"] is None else fmt(r["met?"])),
    ("numba rate", lambda r: fmt(r["numba rate"], 1)),
    ("ceiling rate", lambda r: fmt(r["ceiling rate"], 1)),
    ("ceiling", lambda r: fmt(r["ceiling"])),
]


def table(title, rows, note=None):
    cells = [[f(r) for _, f in COLUMNS] for r in rows]
    print_table(title, [h for h, _ in COLUMNS], cells, note, left=(0,))
    TABLES.append({"title": title, "note": note, "rows": rows})


def import_peers():
    """Sets the globals cuda, nb_f32, nb_u32; returns (cupy or None, notes)."""
    global cuda, nb_f32, nb_u32
    notes = {}
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30.x with NumPy >= 2.5
        np.row_stack = np.vstack
    try:
        import numba
        from numba import cuda as nbc
        notes["numba"] = numba.__version__
        try:
            from importlib.metadata import version
            notes["numba_cuda"] = version("numba-cuda")
        except Exception:
            notes["numba_cuda"] = "?"
        if nbc.is_available():
            cuda, nb_f32, nb_u32 = nbc, numba.float32, numba.uint32
        else:
            notes["numba_why"] = "numba.cuda.is_available() is False"
    except Exception as e:
        notes["numba_why"] = f"{type(e).__name__}: {e}"
    # cuBLAS must not use TF32: CuPy uses it only with CUPY_TF32=1; the override turns it
    # off in cuBLAS itself. Both before CuPy (and so cuBLAS) is loaded.
    notes["CUPY_TF32 (removed)"] = os.environ.pop("CUPY_TF32", None)
    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
    cp = None
    try:
        import cupy
        cp = cupy
        notes["cupy"] = cupy.__version__
        notes["gpu_name"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as e:
        notes["cupy_why"] = f"{type(e).__name__}: {e}"
    return cp, notes


def environment():
    env = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
           "python": sys.version.split()[0], "numpy": np.__version__,
           "offload": getattr(ol, "__version__", "?"),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    smi = shutil.which("nvidia-smi")
    if smi:
        p = subprocess.run([smi, "--query-gpu=name,driver_version,clocks.max.sm",
                            "--format=csv,noheader"], capture_output=True, text=True)
        if p.returncode == 0:
            env["nvidia_smi"] = p.stdout.strip()
    return env


# ================================================================ main

def pow2(text):
    base, _, exp = text.partition("**")
    return int(base) ** int(exp) if exp else int(base)


def main():
    global ol, TILE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, 5 reps: a smoke test, not a measurement")
    ap.add_argument("--reps", type=int, help="timed launches per point (25; --quick 5)")
    ap.add_argument("--tile", type=int, choices=(8, 16, 32), default=16,
                    help="sgemm tile edge, the same on both sides (16)")
    ap.add_argument("--sgemm-n", type=pow2, help="sgemm size, a multiple of the tile (4096)")
    ap.add_argument("--reduce-n", type=pow2, help="reduce elements, e.g. 2**28 (2**28)")
    ap.add_argument("--hist-n", type=pow2, help="histogram bytes, a multiple of 4 (2**26)")
    ap.add_argument("--groups", type=int,
                    help="work-groups of reduce and histogram (8 x compute units)")
    ap.add_argument("--cases", default="sgemm,reduce,histogram",
                    help="which cases to run, comma-separated (all three)")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args()
    cases = args.cases.split(",")
    if not set(cases) <= {"sgemm", "reduce", "histogram"}:
        ap.error("--cases takes sgemm, reduce and histogram")
    q = args.quick
    TILE = args.tile
    args.reps = args.reps or (5 if q else 25)
    args.sgemm_n = args.sgemm_n or (512 if q else 4096)
    args.reduce_n = args.reduce_n or (1 << 22 if q else 1 << 28)
    args.hist_n = args.hist_n or (1 << 22 if q else 1 << 26)
    if args.sgemm_n % TILE or args.hist_n % 4 or min(args.reduce_n, args.hist_n) < WG:
        ap.error("--sgemm-n must be a multiple of --tile, --hist-n of 4; sizes >= 256")

    try:
        import offload
    except ImportError as e:
        sys.exit(f"bench_ndrange.py: cannot import offload ({e}); run with "
                 f"PYTHONPATH=<build>/python")
    ol = offload
    if not hasattr(ol, "NdRange"):
        sys.exit("bench_ndrange.py: this offload build has no NdRange (issue 5 not built)")
    cdevs = ol.get_devices(backend="cuda")
    if not cdevs:
        sys.exit("bench_ndrange.py: offload lists no CUDA device "
                 f"(devices: {[d.filter_string for d in ol.get_devices()]}); "
                 "this benchmark needs an NVIDIA GPU")
    dev = cdevs[0]
    cp, notes = import_peers()
    env = environment()
    env["device"] = f"{dev.filter_string}: {dev.name} (driver {dev.driver_version}; " \
                    f"{dev.version}; {dev.max_compute_units} compute units)"
    env["peers"] = notes
    print(f"bench_ndrange.py -- {env['date']} on {env['host']}")
    print(f"  command : {env['command']}")
    print(f"  python {env['python']}, numpy {env['numpy']}, offload {env['offload']}")
    print(f"  device  : {env['device']}")
    if env.get("nvidia_smi"):
        print(f"  nvidia-smi: {env['nvidia_smi']}")
    print(f"  numba {notes.get('numba', 'n/a')}, numba-cuda {notes.get('numba_cuda', 'n/a')},"
          f" cupy {notes.get('cupy', 'n/a')}; NVIDIA_TF32_OVERRIDE=0, CUPY_TF32 unset")
    if cuda is None:
        print(f"  numba-cuda missing or unusable ({notes.get('numba_why')}): its columns n/a")
    if cp is None:
        print(f"  CuPy missing or unusable ({notes.get('cupy_why')}): the FLOP ceiling is "
              f"n/a")
    env["spin_ms"] = spin = make_spinners(dev, cp)
    print("  spin    : " + ", ".join(f"{k} {fmt(v)}" + (" ms" if not isinstance(v, str) else "")
                                     for k, v in spin.items()))
    sys.stdout.flush()
    results = {"env": env, "args": vars(args)}
    groups = args.groups or 8 * dev.max_compute_units
    checks, rows = [], []
    try:
        for key, run in (
                ("sgemm", lambda: case_sgemm(dev, args.sgemm_n, args.reps, cp, checks)),
                ("reduce", lambda: case_reduce(dev, args.reduce_n, groups, args.reps, cp,
                                               checks)),
                ("histogram", lambda: case_histogram(dev, args.hist_n, groups, args.reps,
                                                     cp, checks))):
            if key not in cases:
                continue
            r, results[key] = run()
            rows.append(r)
            if cp is not None:
                cp.get_default_memory_pool().free_all_blocks()
        check_table("checks, after timing (sgemm: max |err| / (|A|@|B|), tol 1e-5; reduce: "
                    "relative error, tol 1e-4; histogram: wrong bins)", checks, err_head="error")
        table(f"NdRange kernels on {dev.name}: device time, median of {args.reps} launches "
              f"(ratio = numba ms / offload ms, > 1: offload faster; met? = ratio >= {TARGET})",
              rows,
              note="% of ceiling: sgemm of cuBLAS SGEMM via CuPy (TF32 off), reduce and "
                   "histogram of the best D2D copy of the same byte count (2 x bytes / t)"
                   + ("\n--quick: a smoke test, not a measurement" if q else ""))
    finally:
        save_json(results, args.json)


if __name__ == "__main__":
    main()
