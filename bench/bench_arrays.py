#!/usr/bin/env python3
"""Benchmark: offload's array operations (issue 7) against CuPy on a GPU, NumPy on the CPU device.

    PYTHONPATH=<build>/python python3 bench/bench_arrays.py --gpu         # offload on cuda:gpu:0 vs CuPy
    PYTHONPATH=<build>/python python3 bench/bench_arrays.py               # offload on the CPU device vs NumPy
    PYTHONPATH=<build>/python python3 bench/bench_arrays.py --quick       # smoke test (small sizes)

This is a benchmark, not a test: it asserts nothing about speed. Every result is checked
against NumPy after timing; a failed check marks its row.

Cases (float32, inputs uniform in [0, 1) from a fixed seed, made once per size):
  x + y      a new array per call, N = 2^26 and 2^28 (GPU), 2^22 and 2^24 (CPU)
  x * 4.0    the Python float is weak (NEP 50): the result is float32
  x.sum()    a 0-d array on the device (when offload has reductions)
  a @ b      4096 x 4096 (GPU), 1024 x 1024 (CPU) (when offload has matmul)

Timing. Each case runs W = 3 times (the first compiles or loads the kernel), then R times
(--reps, 20) back to back with one synchronisation at the end: the wall time of the R calls
divided by R -- what a user's loop costs, allocation of the result, launch and the device
work together. Both sides allocate a result per call (CuPy from its memory pool, offload
from the driver's stream-ordered pool). Device time: offload's DeviceTimer (the kernels'
own events) and CuPy's events around each call; medians of the R.

Ceilings. GPU: the device-to-device copy of the same bytes (cuMemcpyAsync via CuPy,
events), GB/s = 2 x bytes / t; an element-wise op's GB/s counts the bytes it reads and
writes (x + y: 12 N). FLOP ceiling for matmul: CuPy's SGEMM (cuBLAS, TF32 off).
ratio = peer time / offload time (> 1: offload faster). Targets (issue 7): x + y and x * 4.0
>= 0.95 x CuPy and >= 90 % of the copy bandwidth; sum >= 0.9 x CuPy; matmul reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

os.environ.pop("CUPY_TF32", None)
os.environ["NVIDIA_TF32_OVERRIDE"] = "0"

import offload as ol  # noqa: E402


def wall_per_call(fn, sync, reps):
    for _ in range(3):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        r = fn()
    sync()
    return (time.perf_counter() - t) / reps, r


def offload_device_time(fn, reps):
    times = []
    with ol.DeviceTimer() as timer:
        for _ in range(reps):
            fn()
            times.append(timer.lap()[0])
    return statistics.median(times)


def cupy_device_time(cp, fn, reps):
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
    return statistics.median(times)


def cupy_copy_time(cp, nbytes, reps):
    src = cp.zeros(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    return cupy_device_time(cp, lambda: dst.data.copy_from_device_async(src.data, nbytes), reps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", action="store_true", help="offload on cuda:gpu:0 against CuPy")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    reps = 3 if args.quick else args.reps
    dev = ol.get_devices(backend="cuda")[0] if args.gpu else ol.get_devices(backend="opencl")[0]
    cp = None
    if args.gpu:
        try:
            import cupy as cp
        except ImportError:
            print("CuPy is not importable: the peer columns print n/a")
    if args.quick:
        sizes, mm = [1 << 16], 128
    else:
        sizes, mm = ([1 << 26, 1 << 28], 4096) if args.gpu else ([1 << 22, 1 << 24], 1024)
    peer = "CuPy" if args.gpu else "NumPy"
    print(f"offload on {dev.filter_string} ({dev.name}); peer: {peer if (cp or not args.gpu) else 'n/a'}; reps {reps}")
    rng = np.random.default_rng(7)
    rows = []

    def row(case, n_bytes, flops, fo, fp, check, copy_t=None):
        t_o, r_o = wall_per_call(fo, sync_o, reps)
        d_o = offload_device_time(fo, reps)
        ok = check(r_o)
        if fp is not None:
            t_p, _ = wall_per_call(fp, sync_p, reps)
            d_p = cupy_device_time(cp, fp, reps) if cp else None
        else:
            t_p = d_p = None
        rows.append((case, t_o, d_o, t_p, d_p, n_bytes, flops, copy_t, ok))

    def sync_o():
        ol.DeviceTimer(record=False).sync()

    sync_p = (lambda: cp.cuda.Device().synchronize()) if cp else (lambda: None)
    for n in sizes:
        xh = rng.random(n, dtype=np.float32)
        yh = rng.random(n, dtype=np.float32)
        x, y = ol.asarray(xh, device=dev), ol.asarray(yh, device=dev)
        if args.gpu:
            xp, yp = (cp.asarray(xh), cp.asarray(yh)) if cp else (None, None)
        else:
            xp, yp = xh, yh
        have_peer = cp is not None or not args.gpu
        copy_t = cupy_copy_time(cp, 4 * n, reps) if cp else None
        k = n.bit_length() - 1
        row(f"x + y      2^{k}", 12 * n, 0, lambda: x + y, (lambda: xp + yp) if have_peer else None,
            lambda r: np.allclose(r.asnumpy(), xh + yh), copy_t and copy_t * 1.5)
        row(f"x * 4.0    2^{k}", 8 * n, 0, lambda: x * 4.0, (lambda: xp * 4.0) if have_peer else None,
            lambda r: r.dtype == np.float32 and np.allclose(r.asnumpy(), xh * 4.0), copy_t)
        if hasattr(x, "sum"):
            row(f"x.sum()    2^{k}", 4 * n, 0, lambda: x.sum(), (lambda: xp.sum()) if have_peer else None,
                lambda r: abs(float(r) - xh.sum(dtype=np.float64)) <= 1e-4 * n, copy_t and copy_t / 2)
        del x, y, xp, yp
    if hasattr(ol, "matmul"):
        ah = rng.random((mm, mm), dtype=np.float32) - 0.5
        bh = rng.random((mm, mm), dtype=np.float32) - 0.5
        a, b = ol.asarray(ah, device=dev), ol.asarray(bh, device=dev)
        ap_, bp = (cp.asarray(ah), cp.asarray(bh)) if cp else (ah, bh)
        have_peer = cp is not None or not args.gpu

        def check_mm(r):
            ref = ah[:64].astype(np.float64) @ bh.astype(np.float64)
            return np.allclose(r.asnumpy()[:64], ref, rtol=1e-3, atol=1e-3 * np.sqrt(mm))

        row(f"a @ b      {mm}^2", 12 * mm * mm, 2 * mm**3, lambda: a @ b, (lambda: ap_ @ bp) if have_peer else None,
            check_mm)

    print(f"\n{'case':<18}{'offload ms':>11}{'dev ms':>9}{peer + ' ms':>10}{'dev ms':>9}{'ratio':>7}"
          f"{'GB/s':>8}{'copy GB/s':>10}{'% copy':>8}{'GFLOP/s':>9}{'peer GF/s':>10}  check")
    for case, t_o, d_o, t_p, d_p, nb, fl, copy_t, ok in rows:
        ratio = f"{t_p / t_o:7.3f}" if t_p else "    n/a"
        gbs = nb / t_o / 1e9 if not fl else None
        copy_gbs = (nb / copy_t / 1e9) if copy_t and not fl else None
        print(f"{case:<18}{t_o * 1e3:11.3f}{d_o * 1e3:9.3f}"
              f"{(t_p * 1e3 if t_p else float('nan')):10.3f}{(d_p * 1e3 if d_p else float('nan')):9.3f}{ratio}"
              f"{(gbs or float('nan')):8.0f}{(copy_gbs or float('nan')):10.0f}"
              f"{(100 * gbs / copy_gbs if gbs and copy_gbs else float('nan')):8.1f}"
              f"{(fl / t_o / 1e9 if fl else float('nan')):9.0f}"
              f"{(fl / t_p / 1e9 if fl and t_p else float('nan')):10.0f}  {'ok' if ok else 'FAILED'}")
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
