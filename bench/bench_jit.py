#!/usr/bin/env python3
"""Benchmark: offload's JIT-compiled device kernels against numba-cuda and CuPy (GPU) and
against the same kernels in OpenCL C built by the platform itself (CPU, PoCL) -- in one run.

    PYTHONPATH=python python3 bench/bench_jit.py --cpu --quick      # smoke test, PoCL
    PYTHONPATH=python python3 bench/bench_jit.py --gpu --json /tmp/jit.json
    PYTHONPATH=python python3 bench/bench_jit.py                    # both parts

This is a benchmark, not a test: it asserts nothing about speed. It does check every
kernel's result (offload's and each peer's) against a NumPy float64 reference before timing
it, and prints the check table; a failed check is reported, never timed silently.

Parts (issue item 8). --gpu runs (a)-(c) on offload's first CUDA device; --cpu runs (d) on
opencl:cpu:0; neither flag runs both. The GPU part skips with a message where offload lists
no CUDA device; without numba-cuda (or CuPy) its peer columns print n/a.

(a) Host overhead per launch of a 1-work-item kernel with 0, 1 and 3 float32 array
    arguments (of one element): W warm-up launches, synchronise, then the wall time of N
    launches (--launches, 20000) plus one final synchronise, divided by N; Python's GC off;
    the median of 5 such batches. offload: kernel[ol.Range(1)](...) (a new Range each time,
    as users write it) and ol.call_kernel(kernel, r, ...). numba-cuda: kernel[1, 1](...)
    with no arguments, with numba device arrays (cuda.to_device) and with CuPy arrays
    (numba converts them through __cuda_array_interface__ at every launch).
    NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0 so that numba pays no warning per launch.
    Target: <= 5 us and below numba-cuda (its fastest form is the peer).
    The CPU part measures the same against the C helper's clSetKernelArg +
    clEnqueueNDRangeKernel loop (bench/opencl_baseline.c).

(b) Cold compile, definition to first result: each measurement is a fresh child process
    (this Python) with empty cache directories: XDG_CACHE_HOME (offload's disk cache, and
    PoCL's), CUDA_CACHE_PATH (the driver's PTX JIT cache), POCL_CACHE_DIR, NUMBA_CACHE_DIR.
    Inside the child, after `import offload` (or numba.cuda) and after the arrays are made
    (so the device context exists), time.perf_counter spans: the decorated `def` of the
    kernel, its first launch, and asnumpy (copy_to_host) of every output. The result is
    checked after the clock stops. Kernels: vadd, saxpy, black_scholes, float32, 2^16
    elements (small, so compilation dominates). Rows:
      cold        offload @ol.kernel  vs  numba-cuda @cuda.jit first call
      disk hit    a second child with the same cache directories: offload's disk cache and
                  the driver's cache are warm  vs  numba @cuda.jit(cache=True), second child
      disk hit, driver cache cold   offload's cache warm, CUDA_CACHE_PATH empty (the PTX
                  still goes through the driver's JIT: cuModuleLoadData)
    Median of --cold-reps (3) fresh processes each. Targets: cold <= 50 ms and >= 5x faster
    than numba-cuda; disk hit <= 5 ms. The JIT's own share (kernel.stats['compile_ms']) is
    shown beside.

(c) Throughput, device time: events around each launch, R (--reps, 25) launches queued back
    to back after 3 warm-ups (so the host's launch cost never shows as a gap inside a timed
    span), one synchronise, the median. offload's kernel is timed once its full build took
    over (ofl_cuda_compiler.c). offload and numba take 5 turns of R/5 launches each, and go
    first in every other turn: the device's clocks drift over a run. offload:
    ol.call_kernel_async(...).elapsed (CUDA events recorded around the launch by the
    runtime). numba: cuda.event() record / launch / record on the default stream,
    cuda.event_elapsed_time. CuPy: cupy.cuda.Event likewise.
    Streaming kernels vadd (c = a + b), saxpy (y = a*x + y), triad (a = b + s*c), float32,
    2^26 and 2^28 elements, GB/s = bytes read + written / time (12 bytes per element), as
    a percentage of the best device-to-device copy measured in the same run on arrays of the
    same size: CuPy `dst[...] = src` (its copy kernel) and `dst.data.copy_from_device_async`
    (cuMemcpyAsync D2D), both with events (8 bytes per element). Also shown: offload's own
    copy kernel (events), offload's `dst[...] = src` (host clock around it, synchronised)
    and numba's GB/s for the same kernel. Target: >= 90% of the copy.
    dpbench kernels black_scholes (price, strike, t, rate, volatility -> call, put, with
    erf), l2_norm (per-row sqrt(sum of squares) of an N x 3 array, accumulating in d[i] as
    dpbench does) and pairwise_distance (X1 N x 3, X2 M x 3 -> D[i, j]), float32 and
    float64, written as in dpbench (numba_dpex_k for offload, numba_cuda for numba) with two
    changes on both sides: numba's kernels guard the tail (offload's runtime does), and in
    pairwise_distance the column index j is the fastest thread index on both sides (dpbench's
    numba_cuda version makes i the fastest, so its stores to D are not coalesced). Launch
    geometry the same on both sides: 256 threads (1-D), 32 x 8 (2-D), as offload's runtime
    picks. numba gets the same memory: numba views (cuda.as_cuda_array(sync=False)) of the
    CuPy arrays holding the same data offload's arrays hold (numba device arrays when CuPy
    is missing). ratio = numba time / offload time (> 1: offload faster); target >= 1.0.

(d) CPU device (opencl:cpu:0, PoCL): cold compile (as (b), POCL_CACHE_DIR and XDG_CACHE_HOME
    empty) and cached compile (second process, same directories), and device-time throughput
    (as (c): OpenCL profiling events of each launch, queued back to back), of vadd, saxpy,
    black_scholes, l2_norm, pairwise_distance in float32 and float64, against the same
    kernels in OpenCL C (bench/opencl_baseline.c: compiled with cc -lOpenCL into a temp
    dir; clCreateProgramWithSource + clBuildProgram in a fresh process; its "first result"
    spans program creation to the blocking read of the outputs; same inputs through files,
    same work-group sizes as offload's runtime picks; its outputs are checked here too).
    Item 8 sets no target for the CPU part: the target column says "-".

--quick: small sizes, 5 reps, 2000 launches, 1 cold process each -- a smoke test, not a
measurement. --json PATH writes every number, the environment and the tables.
"""
import argparse
import gc
import inspect
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
cuda = None  # numba.cuda, once imported (the numba kernels below name it)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ================================================================ kernels
# Plain functions: offload compiles them with ol.kernel(fn), numba with cuda.jit(fn); the
# child processes of (b) and (d) get their source text (inspect.getsource) under a decorator.

def ol_vadd(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


def ol_saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def ol_triad(item, a, b, c, s):
    i = item.get_id(0)
    a[i] = b[i] + s * c[i]


def ol_copy(item, src, dst):
    i = item.get_id(0)
    dst[i] = src[i]


def ol_black_scholes(item, nopt, price, strike, t, rate, volatility, call, put):
    mr = -rate
    sig_sig_two = volatility * volatility * 2
    i = item.get_id(0)
    P = price[i]
    S = strike[i]
    T = t[i]
    a = math.log(P / S)
    b = T * mr
    z = T * sig_sig_two
    c = 0.25 * z
    y = 1.0 / math.sqrt(z)
    w1 = (a - b + c) * y
    w2 = (a - b - c) * y
    d1 = 0.5 + 0.5 * math.erf(w1)
    d2 = 0.5 + 0.5 * math.erf(w2)
    Se = math.exp(b) * S
    r = P * d1 - Se * d2
    call[i] = r
    put[i] = r - P + Se


def ol_l2_norm(item, a, d):
    i = item.get_id(0)
    a_rows = a.shape[1]
    d[i] = 0.0
    for k in range(a_rows):
        d[i] += a[i, k] * a[i, k]
    d[i] = math.sqrt(d[i])


def ol_pairwise_distance(item, X1, X2, D):
    i = item.get_id(0)
    j = item.get_id(1)
    X1_cols = X1.shape[1]
    d = 0.0
    for k in range(X1_cols):
        tmp = X1[i, k] - X2[j, k]
        d += tmp * tmp
    D[i, j] = math.sqrt(d)


def ol_k0(item):
    pass


def ol_k1(item, a):
    i = item.get_id(0)
    a[i] = a[i] + 1.0


def ol_k3(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


def nb_vadd(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


def nb_saxpy(a, x, y):
    i = cuda.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]


def nb_triad(a, b, c, s):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = b[i] + s * c[i]


def nb_black_scholes(nopt, price, strike, t, rate, volatility, call, put):
    dtype = price.dtype
    mr = -rate
    sig_sig_two = volatility * volatility * dtype.type(2)
    i = cuda.grid(1)
    if i >= nopt:
        return
    P = price[i]
    S = strike[i]
    T = t[i]
    a = math.log(P / S)
    b = T * mr
    z = T * sig_sig_two
    c = dtype.type(0.25) * z
    y = dtype.type(1.0) / math.sqrt(z)
    w1 = (a - b + c) * y
    w2 = (a - b - c) * y
    d1 = dtype.type(0.5) + dtype.type(0.5) * math.erf(w1)
    d2 = dtype.type(0.5) + dtype.type(0.5) * math.erf(w2)
    Se = math.exp(b) * S
    r = P * d1 - Se * d2
    call[i] = r
    put[i] = r - P + Se


def nb_l2_norm(a, d):
    i = cuda.grid(1)
    if i >= d.shape[0]:
        return
    a_rows = a.shape[1]
    d[i] = 0.0
    for k in range(a_rows):
        d[i] += a[i, k] * a[i, k]
    d[i] = math.sqrt(d[i])


def nb_pairwise_distance(X1, X2, D):
    j, i = cuda.grid(2)
    if i >= D.shape[0] or j >= D.shape[1]:
        return
    X1_cols = X1.shape[1]
    d = X1.dtype.type(0.0)
    for k in range(X1_cols):
        tmp = X1[i, k] - X2[j, k]
        d += tmp * tmp
    D[i, j] = math.sqrt(d)


def nb_k0():
    pass


def nb_k1(a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = a[i] + 1.0


def nb_k3(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


# ================================================================ cases
# A case: host inputs (NumPy), the argument list, outputs, the float64 reference, the
# launch shape and the bytes a launch moves (each array element read or written once).

class Case:
    def __init__(self, name, dtype, arrays, args, outs, ref, shape, nbytes):
        self.name, self.dtype = name, np.dtype(dtype)
        self.arrays = arrays      # name -> NumPy array (inputs and initial outputs)
        self.args = args          # list of ("arr", name) or ("val", scalar)
        self.outs = outs          # names of the output arrays
        self.ref = ref            # name -> float64 reference of that output
        self.shape = shape        # global launch shape (SYCL order: last is fastest)
        self.nbytes = nbytes


def make_case(name, n, dtype, m=None, dims=3, seed=7):
    """Inputs as dpbench initialises them (uniform ranges), from a fixed seed."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    es = dt.itemsize
    f64 = np.float64

    def uniform(lo, hi, shape=None):  # in [lo, hi), made in dt directly (fast at 2^28)
        x = rng.random(shape or n, dtype=dt)
        if (lo, hi) != (0, 1):
            x *= dt.type(hi - lo)
            x += dt.type(lo)
        return x
    if name == "vadd":
        a, b = uniform(0, 1), uniform(0, 1)
        arrays = {"a": a, "b": b, "c": np.zeros(n, dt)}
        return Case(name, dt, arrays, [("arr", "a"), ("arr", "b"), ("arr", "c")], ["c"],
                    {"c": a.astype(f64) + b}, (n,), 3 * n * es)
    if name == "saxpy":
        x, y = uniform(0, 1), uniform(0, 1)
        al = dt.type(2.0)
        arrays = {"x": x, "y": y}
        return Case(name, dt, arrays, [("val", al), ("arr", "x"), ("arr", "y")], ["y"],
                    {"y": f64(al) * x.astype(f64) + y}, (n,), 3 * n * es)
    if name == "triad":
        b, c = uniform(0, 1), uniform(0, 1)
        s = dt.type(3.0)
        arrays = {"a": np.zeros(n, dt), "b": b, "c": c}
        return Case(name, dt, arrays, [("arr", "a"), ("arr", "b"), ("arr", "c"), ("val", s)],
                    ["a"], {"a": b.astype(f64) + f64(s) * c}, (n,), 3 * n * es)
    if name == "copy":
        src = uniform(0, 1)
        arrays = {"src": src, "dst": np.zeros(n, dt)}
        return Case(name, dt, arrays, [("arr", "src"), ("arr", "dst")], ["dst"],
                    {"dst": src.astype(f64)}, (n,), 2 * n * es)
    if name == "black_scholes":
        price = uniform(10.0, 50.0)
        strike = uniform(10.0, 50.0)
        t = uniform(1.0, 2.0)
        rate, vol = dt.type(0.1), dt.type(0.2)
        arrays = {"price": price, "strike": strike, "t": t, "call": np.zeros(n, dt),
                  "put": -np.ones(n, dt)}
        return Case(name, dt, arrays,
                    [("val", n), ("arr", "price"), ("arr", "strike"), ("arr", "t"),
                     ("val", rate), ("val", vol), ("arr", "call"), ("arr", "put")],
                    ["call", "put"], ref_black_scholes(price, strike, t, rate, vol), (n,),
                    5 * n * es)
    if name == "l2_norm":
        a = uniform(0, 1, (n, dims))
        arrays = {"a": a, "d": np.zeros(n, dt)}
        return Case(name, dt, arrays, [("arr", "a"), ("arr", "d")], ["d"],
                    {"d": np.sqrt((a.astype(f64) ** 2).sum(axis=1))}, (n,), (dims + 1) * n * es)
    if name == "pairwise_distance":
        m = m or n
        X1 = uniform(0, 1, (n, dims))
        X2 = uniform(0, 1, (m, dims))
        arrays = {"X1": X1, "X2": X2, "D": np.zeros((n, m), dt)}
        return Case(name, dt, arrays, [("arr", "X1"), ("arr", "X2"), ("arr", "D")], ["D"],
                    {"D": ref_pairwise(X1, X2)}, (n, m), ((n + m) * dims + n * m) * es)
    raise ValueError(name)


def erf64(x):
    """math.erf elementwise in float64 (SciPy's erf where SciPy is installed)."""
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:
        out = np.empty(x.shape)
        flat, of = x.reshape(-1), out.reshape(-1)
        step = 1 << 22
        for s in range(0, flat.size, step):
            part = flat[s:s + step].tolist()
            of[s:s + step] = np.fromiter(map(math.erf, part), np.float64, count=len(part))
        return out


def ref_black_scholes(price, strike, t, rate, vol):
    P, S, T = (v.astype(np.float64) for v in (price, strike, t))
    rate, vol = float(rate), float(vol)
    a = np.log(P / S)
    b = T * -rate
    z = T * vol * vol * 2.0
    c = 0.25 * z
    y = 1.0 / np.sqrt(z)
    d1 = 0.5 + 0.5 * erf64((a - b + c) * y)
    d2 = 0.5 + 0.5 * erf64((a - b - c) * y)
    Se = np.exp(b) * S
    r = P * d1 - Se * d2
    return {"call": r, "put": r - P + Se}


def ref_pairwise(X1, X2, block=2048):
    X1, X2 = X1.astype(np.float64), X2.astype(np.float64)
    out = np.empty((X1.shape[0], X2.shape[0]))
    for s in range(0, X1.shape[0], block):
        d = X1[s:s + block, None, :] - X2[None, :, :]
        out[s:s + block] = np.sqrt((d * d).sum(-1))
    return out


def check(outs, ref, dtype):
    """(worst error relative to the largest reference value, ok?)."""
    worst = 0.0
    for name, o in outs.items():
        r = ref[name]
        o = np.asarray(o, dtype=np.float64).reshape(r.shape)
        scale = max(float(np.abs(r).max()), 1e-30) if r.size else 1.0
        e = float(np.abs(o - r).max()) / scale if r.size else 0.0
        if not math.isfinite(e):
            e = math.inf
        worst = max(worst, e)
    tol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    return worst, worst <= tol


# numba launch geometry, the same as offload's runtime picks (offload/ofl_program.c)
def nb_config(shape):
    if len(shape) == 1:
        return (max(1, (shape[0] + 255) // 256), 256)
    n, m = shape  # SYCL order: m (the last) is the fastest -> CUDA x
    return (((m + 31) // 32, (n + 7) // 8), (32, 8))


def launch_args(case, arrs):
    return [arrs[v] if k == "arr" else v for k, v in case.args]


def stat_ms(xs):
    return statistics.median(xs) * 1e3 if xs else None


# ================================================================ timing helpers

def await_full_build():
    """A new kernel's first launches on a GPU run a quick build until the driver's full build
    takes over, some 50 ms later (offload/ofl_cuda_compiler.c): timings wait for that one."""
    time.sleep(0.2)


def time_ol(ol, k, shape, args, reps, dev, warm=3):
    """Device seconds of each of reps launches queued back to back."""
    r = ol.Range(*shape)
    for _ in range(warm):
        ol.call_kernel(k, r, *args)
    ol.synchronize(dev)
    evs = [ol.call_kernel_async(k, r, *args) for _ in range(reps)]
    ol.synchronize(dev)
    return [e.elapsed for e in evs]


def time_nb(kc, args, reps, warm=3):
    for _ in range(warm):
        kc(*args)
    cuda.synchronize()
    evs = [(cuda.event(), cuda.event()) for _ in range(reps)]
    for e0, e1 in evs:
        e0.record()
        kc(*args)
        e1.record()
    cuda.synchronize()
    return [cuda.event_elapsed_time(e0, e1) * 1e-3 for e0, e1 in evs]


def time_cp(cp, fn, reps, warm=3):
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for e0, e1 in evs:
        e0.record()
        fn()
        e1.record()
    cp.cuda.Device().synchronize()
    return [cp.cuda.get_elapsed_time(e0, e1) * 1e-3 for e0, e1 in evs]


def time_host(fn, sync, reps, warm=3):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return ts


def per_launch_us(loop, sync, n, warm, batches=5):
    """Median over batches of (wall time of loop(n) + one sync) / n, in microseconds."""
    loop(warm)
    sync()
    res = []
    for _ in range(batches):
        gc.disable()
        try:
            t0 = time.perf_counter()
            loop(n)
            sync()
            res.append((time.perf_counter() - t0) / n * 1e6)
        finally:
            gc.enable()
    return statistics.median(res)


# the launch loops, written out so that each form costs only itself
def ol_loop_getitem(ol, k, arrs):
    R = ol.Range
    if len(arrs) == 0:
        def loop(n):
            for _ in range(n):
                k[R(1)]()
    elif len(arrs) == 1:
        a, = arrs

        def loop(n):
            for _ in range(n):
                k[R(1)](a)
    else:
        a, b, c = arrs

        def loop(n):
            for _ in range(n):
                k[R(1)](a, b, c)
    return loop


def ol_loop_call(ol, k, arrs):
    r, call = ol.Range(1), ol.call_kernel
    if len(arrs) == 0:
        def loop(n):
            for _ in range(n):
                call(k, r)
    elif len(arrs) == 1:
        a, = arrs

        def loop(n):
            for _ in range(n):
                call(k, r, a)
    else:
        a, b, c = arrs

        def loop(n):
            for _ in range(n):
                call(k, r, a, b, c)
    return loop


def nb_loop(k, arrs):
    if len(arrs) == 0:
        def loop(n):
            for _ in range(n):
                k[1, 1]()
    elif len(arrs) == 1:
        a, = arrs

        def loop(n):
            for _ in range(n):
                k[1, 1](a)
    else:
        a, b, c = arrs

        def loop(n):
            for _ in range(n):
                k[1, 1](a, b, c)
    return loop


# ================================================================ child processes

OL_CHILD = r'''
import json, math, sys, time
sys.path.insert(0, {offload_dir!r})
sys.path.insert(0, {bench_dir!r})
import numpy as np
import offload as ol
import bench_jit as B
dev = ol.Device({device!r})
case = B.make_case({case!r}, {n!r}, {dtype!r})
arrs = {{k: ol.asarray(v, device=dev) for k, v in case.arrays.items()}}
args = B.launch_args(case, arrs)
ol.synchronize(dev)
t0 = time.perf_counter()
{source}
{name}[ol.Range(*case.shape)](*args)
outs = {{k: ol.asnumpy(arrs[k]) for k in case.outs}}
t1 = time.perf_counter()
err, ok = B.check(outs, case.ref, case.dtype)
print(json.dumps({{"ms": (t1 - t0) * 1e3, "stats": {name}.stats, "err": err, "ok": ok}}))
'''

NB_CHILD = r'''
import json, math, sys, time
sys.path.insert(0, {bench_dir!r})
import numpy as np
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack
from numba import cuda
import bench_jit as B
case = B.make_case({case!r}, {n!r}, {dtype!r})
arrs = {{k: cuda.to_device(v) for k, v in case.arrays.items()}}
args = B.launch_args(case, arrs)
grid, block = B.nb_config(case.shape)
cuda.synchronize()
t0 = time.perf_counter()
{source}
{name}[grid, block](*args)
outs = {{k: arrs[k].copy_to_host() for k in case.outs}}
t1 = time.perf_counter()
err, ok = B.check(outs, case.ref, case.dtype)
print(json.dumps({{"ms": (t1 - t0) * 1e3, "err": err, "ok": ok}}))
'''


DRV_CHILD = r'''
import ctypes, json, statistics, sys, time
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
ptx = open(sys.argv[1], "rb").read() + b"\0"
ts = []
for _ in range(9):
    mod = ctypes.c_void_p()
    t0 = time.perf_counter()
    assert cu.cuModuleLoadData(ctypes.byref(mod), ptx) == 0
    ts.append((time.perf_counter() - t0) * 1e3)
    cu.cuModuleUnload(mod)
print(json.dumps({"ms": statistics.median(ts[1:])}))
'''


def driver_jit_ms(ol, kname, n, tmp):
    """The driver's own PTX -> SASS time for offload's PTX of kernel kname: cuModuleLoadData
    with its cache off (CUDA_CACHE_DISABLE=1), median of 8 loads after one in a process of
    its own -- the share of the cold time that no change to offload's JIT can remove."""
    case = make_case(kname, n, np.float32)
    ptx = ol.kernel(globals()["ol_" + kname]).inspect_ptx(
        *launch_args(case, case.arrays), range=ol.Range(*case.shape))
    path = os.path.join(tmp, f"{kname}.ptx")
    with open(path, "w") as f:
        f.write(ptx)
    script = os.path.join(tmp, "drv_child.py")
    with open(script, "w") as f:
        f.write(DRV_CHILD)
    env = dict(os.environ, CUDA_CACHE_DISABLE="1")
    p = subprocess.run([sys.executable, script, path], capture_output=True, text=True, env=env,
                       timeout=300)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])["ms"]
    except (ValueError, IndexError):
        print(f"  ! driver JIT timing of {kname} failed: {p.stderr.strip()[-500:]}")
        return None


def child_env(root, driver_cache=None):
    env = os.environ.copy()
    env["XDG_CACHE_HOME"] = os.path.join(root, "xdg")
    env["POCL_CACHE_DIR"] = os.path.join(root, "pocl")
    env["CUDA_CACHE_PATH"] = driver_cache or os.path.join(root, "nv")
    env["NUMBA_CACHE_DIR"] = os.path.join(root, "numba")
    env["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("OFFLOAD_CACHE", None)
    for d in ("xdg", "pocl", "nv", "numba"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    if driver_cache:
        os.makedirs(driver_cache, exist_ok=True)
    return env


def run_child(script, env):
    p = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env,
                       timeout=600)
    lines = p.stdout.strip().splitlines()
    if p.returncode or not lines:
        return {"error": (p.stderr.strip() or p.stdout.strip())[-1500:]}
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"error": p.stdout.strip()[-1500:]}


def write_child(tmp, tag, template, fn, decorator, **kw):
    src = inspect.getsource(fn)
    path = os.path.join(tmp, f"child_{tag}.py")
    with open(path, "w") as f:
        f.write(template.format(source=decorator + "\n" + src, name=fn.__name__,
                                bench_dir=HERE, **kw))
    return path


def cold_compile(ol, device, kernels, n, reps, with_numba, tmp):
    """{kernel: {mode: [child results]}} for offload (and numba) in fresh processes."""
    out = {}
    odir = os.path.dirname(os.path.abspath(ol.__file__))
    for kname in kernels:
        n_k = 256 if kname == "pairwise_distance" else n
        r = out.setdefault(kname, {})
        ol_script = write_child(tmp, "ol_" + kname, OL_CHILD, globals()["ol_" + kname],
                                "@ol.kernel", offload_dir=odir, device=device, case=kname,
                                n=n_k, dtype="float32")
        if with_numba:
            nb_script = write_child(tmp, "nb_" + kname, NB_CHILD, globals()["nb_" + kname],
                                    "@cuda.jit", case=kname, n=n_k, dtype="float32")
            nbc_script = write_child(tmp, "nbc_" + kname, NB_CHILD,
                                     globals()["nb_" + kname], "@cuda.jit(cache=True)",
                                     case=kname, n=n_k, dtype="float32")
        for i in range(reps):
            log(f"cold compile: {kname} #{i + 1} ({device})")
            root = tempfile.mkdtemp(prefix="ol_", dir=tmp)
            r.setdefault("ol_cold", []).append(run_child(ol_script, child_env(root)))
            r.setdefault("ol_hit", []).append(run_child(ol_script, child_env(root)))
            if device.startswith("cuda"):
                fresh_nv = tempfile.mkdtemp(prefix="nv_", dir=tmp)
                r.setdefault("ol_hit_drv_cold", []).append(
                    run_child(ol_script, child_env(root, driver_cache=fresh_nv)))
            if with_numba:
                root = tempfile.mkdtemp(prefix="nb_", dir=tmp)
                r.setdefault("nb_cold", []).append(run_child(nb_script, child_env(root)))
                root = tempfile.mkdtemp(prefix="nbc_", dir=tmp)
                r.setdefault("nb_cache_cold", []).append(run_child(nbc_script,
                                                                   child_env(root)))
                r.setdefault("nb_cache_hit", []).append(run_child(nbc_script,
                                                                  child_env(root)))
    return out


def med_child(results, key="ms"):
    v = [x[key] for x in results or [] if key in x and "error" not in x]
    return statistics.median(v) if v else None


def child_errors(results):
    return [x["error"] for x in results or [] if "error" in x]


def child_bad(results):
    return [x for x in results or [] if "error" not in x and not x.get("ok", True)]


# ================================================================ table output

TABLES = []


def fmt(v, p=2):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 10 ** -p):
        return f"{v:.3g}"
    return f"{v:.{p}f}"


def print_table(title, heads, cells, note=None, left=(0,)):
    """Prints title, note, heads, a rule and the rows of cells (strings), each column as wide
    as its widest cell; the columns in left are aligned left, the others right. Shared by the
    bench scripts, which keep their rows in TABLES themselves."""
    w = [max([len(h)] + [len(x[i]) for x in cells]) for i, h in enumerate(heads)]

    def line(xs):
        return "  ".join(x.ljust(w[i]) if i in left else x.rjust(w[i]) for i, x in enumerate(xs))
    print(f"\n{title}")
    if note:
        print(note)
    print(line(heads))
    print(line(["-" * x for x in w]))
    for x in cells:
        print(line(x))
    sys.stdout.flush()


def table(title, rows, extra=(), note=None):
    """rows: dicts with case, offload, peer, ratio, target, met and the extra keys."""
    cols = ["case", "offload", "peer", "ratio", "target", "met?"] + [e for e in extra]
    keys = ["case", "offload", "peer", "ratio", "target", "met"] + [e for e in extra]
    cells = [[fmt(r.get(k)) if k != "met" else
              ("-" if r.get("met") is None else ("yes" if r["met"] else "NO"))
              for k in keys] for r in rows]
    print_table(title, cols, cells, note)
    TABLES.append({"title": title, "note": note, "columns": cols, "rows": rows})


def save_json(results, path):
    """Every table printed so far goes into results, and results into path (when given)."""
    results["tables"] = TABLES
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=1, default=lambda o: repr(o))
        log(f"wrote {path}")


def check_table(title, rows, err_head="max rel err"):
    """rows: (case, error or None, ok or None); printed and kept in TABLES."""
    print()
    print(title)
    w = max([len(r[0]) for r in rows] + [4])
    e = max(len(err_head), 10)
    print(f"{'case'.ljust(w)}  {err_head:>{e}}  ok?")
    print(f"{'-' * w}  {'-' * e}  ---")
    for name, err, ok in rows:
        print(f"{name.ljust(w)}  {fmt(err) if err is not None else 'n/a':>{e}}  "
              f"{'n/a' if ok is None else ('yes' if ok else 'FAIL')}")
    sys.stdout.flush()
    TABLES.append({"title": title, "checks": [{"case": r[0], "err": r[1], "ok": r[2]}
                                              for r in rows]})


# ================================================================ environment

def environment(ol):
    env = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "offload": getattr(ol, "__version__", "?"),
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "devices": [f"{d.filter_string}: {d.name} (driver {d.driver_version}; {d.version})"
                    for d in ol.get_devices()],
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        p = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            env["nvidia_smi"] = p.stdout.strip()
    return env


def print_header(env):
    print(f"bench_jit.py -- {env['date']} on {env['host']}")
    print(f"  command : {env['command']}")
    print(f"  python {env['python']}, numpy {env['numpy']}, offload {env['offload']}")
    print(f"  cpu     : {env['cpu']} ({env['cpus']} cpus)")
    for d in env["devices"]:
        print(f"  device  : {d}")
    if env.get("nvidia_smi"):
        print(f"  nvidia-smi: {env['nvidia_smi']}")
    sys.stdout.flush()


# ================================================================ GPU part

def import_peers():
    """(numba.cuda or None, cupy or None, notes dict)."""
    global cuda
    notes = {}
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    if not hasattr(np, "row_stack"):  # numba-cuda 0.30.4 with NumPy >= 2.5
        np.row_stack = np.vstack
    nbc = None
    try:
        import numba
        from numba import cuda as nbc
        notes["numba"] = numba.__version__
        try:
            from importlib.metadata import version
            notes["numba_cuda"] = version("numba-cuda")
        except Exception:
            notes["numba_cuda"] = "?"
        if not nbc.is_available():
            notes["numba_why"] = "numba.cuda.is_available() is False"
            nbc = None
    except Exception as e:  # ImportError and numba's own errors
        notes["numba_why"] = f"{type(e).__name__}: {e}"
        nbc = None
    cuda = nbc
    cp = None
    try:
        import cupy
        cp = cupy
        notes["cupy"] = cupy.__version__
        notes["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        notes["gpu_name"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as e:
        notes["cupy_why"] = f"{type(e).__name__}: {e}"
        cp = None
    return nbc, cp, notes


def gpu_part(ol, args, results):
    cdevs = ol.get_devices(backend="cuda")
    if not cdevs:
        print("\nGPU part skipped: offload lists no CUDA device.")
        results["gpu"] = {"skipped": "no CUDA device"}
        return
    dev = cdevs[0]
    devname = dev.filter_string
    nbc, cp, notes = import_peers()
    results["gpu"] = R = {"device": devname, "peers": notes}
    print(f"\n=== GPU: {devname}: {dev.name} (driver {dev.driver_version}) ===")
    print(f"  numba {notes.get('numba', 'n/a')}, numba-cuda {notes.get('numba_cuda', 'n/a')}, "
          f"cupy {notes.get('cupy', 'n/a')}, CUDA driver {notes.get('cuda_driver', 'n/a')}")
    if nbc is None:
        print(f"  numba-cuda missing or unusable ({notes.get('numba_why')}): its columns n/a")
    if cp is None:
        print(f"  CuPy missing or unusable ({notes.get('cupy_why')}): its columns n/a")
    q = args.quick
    reps = args.reps or (5 if q else 25)
    launches = args.launches or (2000 if q else 20000)

    def gsync():
        ol.synchronize(dev)

    # ---------------------------------------------------------------- (a)
    log("(a) launch overhead")
    rows = []
    R["launch"] = LR = {}
    h1 = np.ones(1, np.float32)
    for nargs, okern, nkern in ((0, ol_k0, nb_k0), (1, ol_k1, nb_k1), (3, ol_k3, nb_k3)):
        k = ol.kernel(okern)
        arrs = [ol.asarray(h1, device=dev) for _ in range(nargs)]
        ol.call_kernel(k, ol.Range(1), *arrs)
        gsync()
        x = {"offload_getitem": per_launch_us(ol_loop_getitem(ol, k, arrs), gsync, launches,
                                              1000),
             "offload_call_kernel": per_launch_us(ol_loop_call(ol, k, arrs), gsync,
                                                  launches, 1000)}
        if nbc is not None:
            kn = nbc.jit(nkern)
            darrs = [nbc.to_device(h1) for _ in range(nargs)]
            x["numba_device_arrays"] = per_launch_us(nb_loop(kn, darrs), nbc.synchronize,
                                                     launches, 1000)
            if cp is not None and nargs:
                carrs = [cp.asarray(h1) for _ in range(nargs)]
                x["numba_cupy_arrays"] = per_launch_us(nb_loop(kn, carrs), nbc.synchronize,
                                                       launches, 1000)
        LR[nargs] = x
        off = x["offload_getitem"]
        peer = x.get("numba_device_arrays")
        rows.append({"case": f"{nargs} array{'s' if nargs != 1 else ''}: k[Range(1)](...) us",
                     "offload": off, "peer": peer,
                     "ratio": peer / off if peer else None, "target": "<= 5 us, < numba",
                     "met": off <= 5.0 and (peer is None or off < peer),
                     "ol.call_kernel us": x["offload_call_kernel"],
                     "numba+CuPy us": x.get("numba_cupy_arrays")})
    table(f"(a) host overhead per launch, 1 work-item, {launches} launches + sync, median of "
          f"5 batches (us; ratio = numba / offload)", rows,
          extra=("ol.call_kernel us", "numba+CuPy us"),
          note="peer: numba-cuda k[1, 1](...) with no arguments (0 arrays) or numba device "
               "arrays; numba+CuPy: the same kernel given CuPy arrays")

    # ---------------------------------------------------------------- (b)
    log("(b) cold compile")
    tmp = tempfile.mkdtemp(prefix="bench_jit_gpu_")
    try:
        cc = cold_compile(ol, devname, ["vadd", "saxpy", "black_scholes"], 1 << 16,
                          args.cold_reps or (1 if q else 3), nbc is not None, tmp)
        drv = {k: driver_jit_ms(ol, k, 1 << 16, tmp) for k in cc}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    R["compile"] = cc
    rows, crow = [], []
    for kname, r in cc.items():
        for key, res in r.items():
            for e in child_errors(res):
                print(f"  ! {kname} {key}: child failed: {e}")
            for b in child_bad(res):
                print(f"  ! {kname} {key}: WRONG RESULT (max rel err {b['err']:.3g})")
            good = [x for x in res if "error" not in x]
            crow.append((f"{kname} {key}", max((x["err"] for x in good), default=None),
                         all(x["ok"] for x in good) if good else None))
        oc, nc = med_child(r.get("ol_cold")), med_child(r.get("nb_cold"))
        jit = statistics.median([x["stats"]["compile_ms"] for x in r.get("ol_cold", [])
                                 if "stats" in x] or [float("nan")])
        rows.append({"case": f"{kname}: cold, define -> first result (ms)", "offload": oc,
                     "peer": nc, "ratio": nc / oc if oc and nc else None,
                     "target": "<= 50 ms, >= 5x",
                     "met": None if oc is None else (oc <= 50 and (nc is None or nc / oc >= 5)),
                     "JIT ms": jit, "driver JIT ms": drv.get(kname)})
        oh, nh = med_child(r.get("ol_hit")), med_child(r.get("nb_cache_hit"))
        hits = [x.get("stats", {}).get("disk_hits") for x in r.get("ol_hit", [])]
        rows.append({"case": f"{kname}: disk hit, fresh process (ms)", "offload": oh,
                     "peer": nh, "ratio": nh / oh if oh and nh else None,
                     "target": "<= 5 ms", "met": None if oh is None else oh <= 5,
                     "JIT ms": statistics.median(
                         [x["stats"]["compile_ms"] for x in r.get("ol_hit", [])
                          if "stats" in x] or [float("nan")]),
                     "disk hits": "/".join(str(h) for h in hits)})
        od = med_child(r.get("ol_hit_drv_cold"))
        rows.append({"case": f"{kname}: disk hit, driver cache cold (ms)", "offload": od,
                     "peer": None, "target": "-", "met": None, "ratio": None})
    check_table("(b) checks of the first results in the child processes (float32)", crow)
    table("(b) cold compile, float32, 2^16 elements, median of fresh processes (ms; "
          "ratio = numba / offload)", rows, extra=("JIT ms", "driver JIT ms", "disk hits"),
          note="peer: numba-cuda @cuda.jit first call; disk-hit peer: @cuda.jit(cache=True) in "
               "a second process (its first, cold process is in --json as nb_cache_cold). "
               "JIT ms: offload's own compile (kernel.stats). driver JIT ms: the CUDA driver "
               "compiling that same PTX to SASS (cuModuleLoadData, its cache off, median of 8).")
    R["driver_jit_ms"] = drv

    # ---------------------------------------------------------------- (c)
    log("(c) throughput")
    sizes = args.sizes or ([1 << 20, 1 << 22] if q else [1 << 26, 1 << 28])
    R["stream"] = SR = []
    rows, crow = [], []
    for n in sizes:
        copy_res = {}
        ccase = make_case("copy", n, np.float32)
        oarr = {k: ol.asarray(v, device=dev) for k, v in ccase.arrays.items()}
        kc = ol.kernel(ol_copy)
        ol.call_kernel(kc, ol.Range(n), *launch_args(ccase, oarr))
        e, ok = check({"dst": ol.asnumpy(oarr["dst"])}, ccase.ref, np.float32)
        crow.append((f"offload copy kernel n=2^{n.bit_length() - 1}", e, ok))
        await_full_build()
        copy_res["offload_kernel"] = time_ol(ol, kc, (n,), launch_args(ccase, oarr), reps, dev)

        def ol_assign(src=oarr["src"], dst=oarr["dst"]):
            dst[...] = src
        oarr["dst"][...] = 0.0
        ol_assign()
        e, ok = check({"dst": ol.asnumpy(oarr["dst"])}, ccase.ref, np.float32)
        crow.append((f"offload dst[...] = src n=2^{n.bit_length() - 1}", e, ok))
        copy_res["offload_assign"] = time_host(ol_assign, gsync, reps)
        del ol_assign
        if cp is not None:
            cs, cd = cp.asarray(ccase.arrays["src"]), cp.empty(n, np.float32)

            def cp_assign(cs=cs, cd=cd):
                cd[...] = cs

            def cp_memcpy(cs=cs, cd=cd):
                cd.data.copy_from_device_async(cs.data, cs.nbytes)
            cp_assign()
            e, ok = check({"dst": cp.asnumpy(cd)}, ccase.ref, np.float32)
            crow.append((f"CuPy dst[...] = src n=2^{n.bit_length() - 1}", e, ok))
            copy_res["cupy_assign"] = time_cp(cp, cp_assign, reps)
            copy_res["cupy_memcpy"] = time_cp(cp, cp_memcpy, reps)
            del cs, cd, cp_assign, cp_memcpy
        del oarr
        cgb = {k: ccase.nbytes / statistics.median(v) / 1e9 for k, v in copy_res.items()}
        best_copy = max([cgb[k] for k in ("cupy_assign", "cupy_memcpy") if k in cgb],
                        default=None)
        for kname in ("vadd", "saxpy", "triad"):
            case = make_case(kname, n, np.float32)
            res = stream_one(ol, dev, case, reps, nbc, cp, crow)
            gb = {k: case.nbytes / statistics.median(v) / 1e9 if v else None
                  for k, v in res.items()}
            SR.append({"n": n, "kernel": kname, "gbps": gb, "copy_gbps": cgb,
                       "times_s": res})
            off = gb.get("offload")
            rows.append({"case": f"{kname} f32 n=2^{n.bit_length() - 1} (GB/s)",
                         "offload": off, "peer": best_copy,
                         "ratio": f"{100 * off / best_copy:.1f}%" if off and best_copy
                         else None,
                         "target": ">= 90%",
                         "met": None if not (off and best_copy) else off >= 0.9 * best_copy,
                         "numba GB/s": gb.get("numba"),
                         "CuPy [...]=": cgb.get("cupy_assign"),
                         "memcpy D2D": cgb.get("cupy_memcpy"),
                         "ol copy kernel": cgb.get("offload_kernel"),
                         "ol [...]= (host)": cgb.get("offload_assign")})
        if cp is not None:
            cp.get_default_memory_pool().free_all_blocks()
    check_table("(c) checks, streaming kernels (first launch, before timing)", crow)
    table(f"(c) streaming throughput, device time, median of {reps} (GB/s = bytes read + "
          f"written / s; ratio = % of the best copy)", rows,
          extra=("numba GB/s", "CuPy [...]=", "memcpy D2D", "ol copy kernel",
                 "ol [...]= (host)"),
          note="peer: the faster of CuPy dst[...] = src and cuMemcpyAsync D2D on arrays of "
               "the same size (8 bytes/element)")

    R["dpbench"] = DR = []
    rows, crow = [], []
    if q:
        dsz = {"black_scholes": (1 << 20,), "l2_norm": (1 << 20,), "pairwise_distance": (1024,)}
    else:
        dsz = {"black_scholes": (1 << 26,), "l2_norm": (1 << 26,),
               "pairwise_distance": (1 << 14,)}
    for kname in ("black_scholes", "l2_norm", "pairwise_distance"):
        for dt in (np.float32, np.float64):
            for n in dsz[kname]:
                case = make_case(kname, n, dt)
                res = stream_one(ol, dev, case, reps, nbc, cp, crow)
                to, tn = stat_ms(res.get("offload")), stat_ms(res.get("numba"))
                DR.append({"kernel": kname, "dtype": np.dtype(dt).name, "n": n,
                           "times_s": res})
                label = (f"{kname} {np.dtype(dt).name} "
                         f"{'x'.join(str(s) for s in case.shape)} (ms)")
                rows.append({"case": label, "offload": to, "peer": tn,
                             "ratio": tn / to if to and tn else None, "target": ">= 1.0",
                             "met": None if not (to and tn) else tn / to >= 1.0,
                             "offload GB/s": case.nbytes / to / 1e6 if to else None,
                             "numba GB/s": case.nbytes / tn / 1e6 if tn else None})
                del case
                if cp is not None:
                    cp.get_default_memory_pool().free_all_blocks()
    check_table("(c) checks, dpbench kernels (first launch, before timing)", crow)
    table(f"(c) dpbench kernels, device time, median of {reps} (ms; ratio = numba / "
          f"offload, > 1: offload faster)", rows, extra=("offload GB/s", "numba GB/s"),
          note="peer: the same kernel with numba.cuda.jit, same data, same launch geometry")


def stream_one(ol, dev, case, reps, nbc, cp, crow):
    """Check then time one case on offload and numba; {framework: [seconds]}."""
    res = {}
    tag = f"{case.name} {case.dtype.name} {'x'.join(str(s) for s in case.shape)}"
    oarr = {k: ol.asarray(v, device=dev) for k, v in case.arrays.items()}
    k = ol.kernel(globals()["ol_" + case.name])
    args = launch_args(case, oarr)
    ok = False
    try:
        ol.call_kernel(k, ol.Range(*case.shape), *args)
        e, ok = check({o: ol.asnumpy(oarr[o]) for o in case.outs}, case.ref, case.dtype)
        crow.append((f"offload {tag}", e, ok))
    except Exception as ex:
        crow.append((f"offload {tag}: {type(ex).__name__}: {str(ex)[:200]}", None, False))
    timers = {}
    if ok:
        await_full_build()
        timers["offload"] = lambda n, a=args: time_ol(ol, k, case.shape, a, n, dev)
    keep = narr = nargs = None
    if nbc is not None:
        if cp is not None:
            keep = {k2: cp.asarray(v) for k2, v in case.arrays.items()}
            narr = {k2: nbc.as_cuda_array(v, sync=False) for k2, v in keep.items()}
        else:
            narr = {k2: nbc.to_device(v) for k2, v in case.arrays.items()}
        kn = nbc.jit(globals()["nb_" + case.name])
        grid, block = nb_config(case.shape)
        kc = kn[grid, block]
        nargs = launch_args(case, narr)
        ok = False
        try:
            kc(*nargs)
            nbc.synchronize()
            e, ok = check({o: narr[o].copy_to_host() for o in case.outs}, case.ref,
                          case.dtype)
            crow.append((f"numba {tag}", e, ok))
        except Exception as ex:
            crow.append((f"numba {tag}: {type(ex).__name__}: {str(ex)[:200]}", None, False))
        if ok:
            timers["numba"] = lambda n, a=nargs: time_nb(kc, a, n)
    # in turns, each framework first in every other one: the device's clocks drift over a
    # run, and whichever went second would get the warmer (or cooler) device
    turns = 5
    for t in range(turns):
        for name in (list(timers) if t % 2 == 0 else list(timers)[::-1]):
            res.setdefault(name, []).extend(timers[name](-(-reps // turns)))
    del oarr, args, narr, nargs, keep
    return res


# ================================================================ CPU part

def build_helper(tmp):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler"
    exe = os.path.join(tmp, "opencl_baseline")
    p = subprocess.run([cc, "-O2", "-o", exe, os.path.join(HERE, "opencl_baseline.c"),
                        "-lOpenCL"], capture_output=True, text=True)
    if p.returncode:
        return None, "build failed: " + p.stderr.strip()[-800:]
    return exe, None


def run_helper(exe, argv, env=None):
    p = subprocess.run([exe] + [str(a) for a in argv], capture_output=True, text=True,
                       env=env, timeout=600)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        out = {"error": (p.stdout + p.stderr).strip()[-800:] or f"exit {p.returncode}"}
    return out


def helper_case(exe, case, tmp, reps, env=None, warm=3):
    """Run the OpenCL C helper on case's data; (json, {output: array} or None)."""
    d = tempfile.mkdtemp(prefix=case.name + "_", dir=tmp)
    for k, v in case.arrays.items():
        np.ascontiguousarray(v).tofile(os.path.join(d, k + ".bin"))
    n = case.shape[0]
    m = case.shape[1] if len(case.shape) > 1 else n
    dims = case.arrays.get("a", case.arrays.get("X1", np.zeros((1, 3)))).shape[-1] \
        if case.name in ("l2_norm", "pairwise_distance") else 3
    r = run_helper(exe, ["run", "--kernel", case.name, "--dtype",
                         "double" if case.dtype == np.float64 else "float", "--dir", d,
                         "--n", n, "--m", m, "--dims", dims, "--reps", reps,
                         "--warm", warm], env=env)
    outs = None
    if "error" not in r:
        outs = {}
        for o in case.outs:
            outs[o] = np.fromfile(os.path.join(d, o + ".out.bin"),
                                  dtype=case.dtype).reshape(case.arrays[o].shape)
    shutil.rmtree(d, ignore_errors=True)
    return r, outs


def cpu_part(ol, args, results):
    try:
        dev = ol.Device("opencl:cpu:0")
    except Exception as e:
        print(f"\nCPU part skipped: no opencl:cpu:0 device ({e}).")
        results["cpu"] = {"skipped": str(e)}
        return
    devname = dev.filter_string
    q = args.quick
    reps = args.reps or (5 if q else 20)
    launches = args.launches or (2000 if q else 20000)
    tmp = tempfile.mkdtemp(prefix="bench_jit_cpu_")
    results["cpu"] = R = {"device": devname}
    try:
        exe, why = build_helper(tmp)
        info = run_helper(exe, ["info"]) if exe else {"error": why}
        R["helper_info"] = info
        print(f"\n=== CPU: {devname}: {dev.name} (driver {dev.driver_version}) ===")
        if "error" in info:
            print(f"  OpenCL C helper unusable ({info['error']}): its columns n/a")
            exe = None
        else:
            print(f"  OpenCL C peer: bench/opencl_baseline.c on {info['platform']} "
                  f"({info['platform_version']}), device {info['device']}, "
                  f"{info['compute_units']} compute units")

        def csync():
            ol.synchronize(dev)

        # ------------------------------------------------------------ launch overhead
        log("(d) launch overhead")
        rows = []
        R["launch"] = LR = {}
        h1 = np.ones(1, np.float32)
        for nargs, okern in ((0, ol_k0), (1, ol_k1), (3, ol_k3)):
            k = ol.kernel(okern)
            arrs = [ol.asarray(h1, device=dev) for _ in range(nargs)]
            ol.call_kernel(k, ol.Range(1), *arrs)
            csync()
            off = per_launch_us(ol_loop_getitem(ol, k, arrs), csync, launches, 200)
            offc = per_launch_us(ol_loop_call(ol, k, arrs), csync, launches, 200)
            peer = None
            if exe:
                hs = [run_helper(exe, ["launch", "--nargs", nargs, "--launches", launches,
                                       "--warm", 200]) for _ in range(3)]
                v = [h["per_launch_us"] for h in hs if "per_launch_us" in h]
                peer = statistics.median(v) if v else None
                for h in hs:
                    if "error" in h:
                        print(f"  ! helper launch --nargs {nargs}: {h['error']}")
            LR[nargs] = {"offload_getitem": off, "offload_call_kernel": offc, "opencl_c": peer}
            rows.append({"case": f"{nargs} array{'s' if nargs != 1 else ''}: k[Range(1)](...) "
                                 f"us", "offload": off, "peer": peer,
                         "ratio": peer / off if peer else None, "target": "-", "met": None,
                         "ol.call_kernel us": offc})
        table(f"(d) CPU: host overhead per launch, 1 work-item, {launches} launches + sync "
              f"(us; ratio = OpenCL C / offload)", rows, extra=("ol.call_kernel us",),
              note="peer: clSetKernelArg per array + clEnqueueNDRangeKernel in C, then "
                   "clFinish (median of 3 processes)")

        # ------------------------------------------------------------ compile
        log("(d) cold compile")
        kernels = ["vadd", "saxpy", "black_scholes", "l2_norm", "pairwise_distance"]
        creps = args.cold_reps or (1 if q else 3)
        cc = cold_compile(ol, devname, kernels, 1 << 16, creps, False, tmp)
        helper_cc = {}
        if exe:
            for kname in kernels:
                n_k = 256 if kname == "pairwise_distance" else 1 << 16
                case = make_case(kname, n_k, np.float32)
                for i in range(creps):
                    log(f"cold compile: {kname} #{i + 1} (OpenCL C)")
                    root = tempfile.mkdtemp(prefix="cl_", dir=tmp)
                    env = child_env(root)
                    for mode in ("cold", "hit"):
                        r, outs = helper_case(exe, case, tmp, 0, env=env, warm=0)
                        if outs is not None:
                            r["err"], r["ok"] = check(outs, case.ref, case.dtype)
                        helper_cc.setdefault(kname, {}).setdefault(mode, []).append(r)
        R["compile"] = {"offload": cc, "opencl_c": helper_cc}
        rows, crow = [], []
        for kname in kernels:
            r, h = cc.get(kname, {}), helper_cc.get(kname, {})
            for who, rr in (("offload", r), ("OpenCL C", h)):
                for key, res in rr.items():
                    for e in child_errors(res):
                        print(f"  ! {who} {kname} {key}: failed: {e}")
                    good = [x for x in res if "error" not in x and "err" in x]
                    crow.append((f"{who} {kname} {key}",
                                 max((x["err"] for x in good), default=None),
                                 all(x["ok"] for x in good) if good else None))
            for mode, okey in (("cold", "ol_cold"), ("cached", "ol_hit")):
                o = med_child(r.get(okey))
                p = med_child(h.get("cold" if mode == "cold" else "hit"), "first_result_ms")
                jit = [x["stats"]["compile_ms"] for x in r.get(okey, []) if "stats" in x]
                hits = [str(x["stats"]["disk_hits"]) for x in r.get(okey, []) if "stats" in x]
                rows.append({"case": f"{kname}: {mode}, define -> first result (ms)",
                             "offload": o, "peer": p, "ratio": p / o if o and p else None,
                             "target": "-", "met": None,
                             "JIT ms": statistics.median(jit) if jit else None,
                             "disk hits": "/".join(hits) or None,
                             "peer build ms": med_child(
                                 h.get("cold" if mode == "cold" else "hit"), "build_ms")})
        check_table("(d) CPU: checks of the first results in the child processes (float32)",
                    crow)
        table("(d) CPU: compile, float32, 2^16 elements (pairwise 256 x 256), median of fresh "
              "processes (ms; ratio = OpenCL C / offload)", rows,
              extra=("JIT ms", "disk hits", "peer build ms"),
              note="cold: empty XDG_CACHE_HOME and POCL_CACHE_DIR; cached: a second process "
                   "with the same ones (offload's disk cache + PoCL's cache; PoCL's cache "
                   "alone for OpenCL C). JIT ms: offload's own compile (kernel.stats); peer "
                   "build ms: clBuildProgram alone.")

        # ------------------------------------------------------------ throughput
        log("(d) throughput")
        if q:
            sz = {"vadd": 1 << 20, "saxpy": 1 << 20, "black_scholes": 1 << 18,
                  "l2_norm": 1 << 18, "pairwise_distance": 512}
        else:
            sz = {"vadd": 1 << 24, "saxpy": 1 << 24, "black_scholes": 1 << 22,
                  "l2_norm": 1 << 22, "pairwise_distance": 2048}
        rows, crow = [], []
        R["throughput"] = TR = []
        for kname in kernels:
            for dt in (np.float32, np.float64):
                case = make_case(kname, sz[kname], dt)
                tag = f"{kname} {np.dtype(dt).name} {'x'.join(str(s) for s in case.shape)}"
                oarr = {k2: ol.asarray(v, device=dev) for k2, v in case.arrays.items()}
                k = ol.kernel(globals()["ol_" + kname])
                a = launch_args(case, oarr)
                t_ol, ok = None, False
                try:
                    ol.call_kernel(k, ol.Range(*case.shape), *a)
                    e, ok = check({o: ol.asnumpy(oarr[o]) for o in case.outs}, case.ref, dt)
                    crow.append((f"offload {tag}", e, ok))
                except Exception as ex:
                    crow.append((f"offload {tag}: {type(ex).__name__}: {str(ex)[:200]}",
                                 None, False))
                if ok:
                    t_ol = time_ol(ol, k, case.shape, a, reps, dev)
                del oarr, a
                t_cl = None
                if exe:
                    r, outs = helper_case(exe, case, tmp, reps)
                    if outs is None:
                        crow.append((f"OpenCL C {tag}: {r.get('error')}", None, False))
                    else:
                        e, okc = check(outs, case.ref, dt)
                        crow.append((f"OpenCL C {tag}", e, okc))
                        if okc:
                            t_cl = r["kernel_s"]
                to, tc = stat_ms(t_ol), stat_ms(t_cl)
                TR.append({"kernel": kname, "dtype": np.dtype(dt).name, "shape": case.shape,
                           "offload_s": t_ol, "opencl_c_s": t_cl})
                rows.append({"case": f"{tag} (ms)", "offload": to, "peer": tc,
                             "ratio": tc / to if to and tc else None, "target": "-",
                             "met": None,
                             "offload GB/s": case.nbytes / to / 1e6 if to else None,
                             "OpenCL C GB/s": case.nbytes / tc / 1e6 if tc else None})
        check_table("(d) CPU: checks (first launch, before timing)", crow)
        table(f"(d) CPU: device time, median of {reps} back-to-back launches (ms; ratio = "
              f"OpenCL C / offload, > 1: offload faster)", rows,
              extra=("offload GB/s", "OpenCL C GB/s"),
              note="peer: the same kernel in OpenCL C built by the platform, same data and "
                   "work-group sizes, timed by its own profiling events")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ================================================================ main

def parse_sizes(text):
    out = []
    for x in text.split(","):
        base, _, exp = x.strip().partition("**")
        out.append(int(base) ** int(exp) if exp else int(base))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", action="store_true", help="the GPU part (a)-(c) only")
    ap.add_argument("--cpu", action="store_true", help="the CPU part (d) only")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, few reps: a smoke test, not a measurement")
    ap.add_argument("--reps", type=int, help="timed launches per throughput point")
    ap.add_argument("--launches", type=int, help="launches per batch in (a)")
    ap.add_argument("--cold-reps", type=int, help="fresh processes per compile point")
    ap.add_argument("--sizes", type=parse_sizes,
                    help="streaming sizes for (c), e.g. '2**26,2**28' or '1000000'")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args()
    both = not (args.gpu or args.cpu)

    import offload as ol
    env = environment(ol)
    print_header(env)
    results = {"env": env, "args": vars(args)}
    try:
        if args.gpu or both:
            gpu_part(ol, args, results)
        if args.cpu or both:
            cpu_part(ol, args, results)
    finally:
        save_json(results, args.json)


if __name__ == "__main__":
    main()
