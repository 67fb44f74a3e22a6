#!/usr/bin/env python3
"""Benchmark: several devices in one process (issue 24, items 1 and 5).

    PYTHONPATH=<build>/python python3 bench/bench_multi_gpu.py            # every GPU (>= 2)
    PYTHONPATH=<build>/python python3 bench/bench_multi_gpu.py --quick    # small sizes, smoke test
    PYTHONPATH=<build>/python python3 bench/bench_multi_gpu.py --devices opencl:cpu:0,opencl:cpu:1

A benchmark, not a test: it asserts nothing about speed. Every result is checked against
NumPy after timing; a failed check marks its row FAILED.

1. Peer copies: `x.to_device(gpu1)` of a float32 array on gpu0 (1 MiB to 1 GiB), against
   CuPy's `cupy.asarray(x)` under `cupy.cuda.Device(1)` (cudaMemcpyPeerAsync) in the same
   run, both directions. Each copy is waited for (offload's copies always are; CuPy's is
   followed by a synchronisation), median of --reps; GB/s counts the bytes once. The table
   says whether the pair has peer access (cuDeviceCanAccessPeer).
2. Scaling: one computation split into equal parts, one per device, all launched before any
   is waited for (launches are asynchronous), over the first 1, 2, 4, ... devices:
   - bandwidth-bound: y = a * x + y over 2^28 float32 (3 GiB; 12 bytes per element),
   - compute-bound: 2048 dependent multiply-adds per element of 2^24 float32.
   Median of --reps wall times of the whole split computation (launch to the last device's
   synchronisation), speed-up against one device.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import offload as ol


@ol.kernel
def axpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


@ol.kernel
def burn(item, x, steps):
    i = item.get_id(0)
    v = x[i]
    for _ in range(steps):
        v = ol.fma(v, np.float32(0.999), np.float32(0.001))
    x[i] = v


def ordinal(d):
    """The CUDA driver's number of a GPU (CuPy's), as DLPack reports it."""
    return ol.empty(1, device=d).__dlpack_device__()[1]


def median_time(fn, reps):
    fn()  # warm: compiles, pools, peer access
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peer_copies(devs, reps, quick, rows):
    try:
        import cupy as cp
    except ImportError:
        cp = None
    a, b = devs[0], devs[1]
    cuda = a.backend == b.backend == "cuda"
    access = "-"
    if cp is not None and cuda:
        access = "yes" if cp.cuda.runtime.deviceCanAccessPeer(ordinal(b), ordinal(a)) else "no"
    sizes = [1 << 20, 16 << 20] if quick else [1 << 20, 16 << 20, 256 << 20, 1 << 30]
    rng = np.random.default_rng(24)
    for nbytes in sizes:
        host = rng.standard_normal(nbytes // 4).astype(np.float32)
        for src, dst in ((a, b), (b, a)):
            x = ol.asarray(host, device=src)
            t_ol = median_time(lambda: x.to_device(dst), reps)
            ok = np.array_equal(ol.asnumpy(x.to_device(dst)[:: 1 << 12]), host[:: 1 << 12])
            t_cp = None
            if cp is not None and cuda:
                so, do = ordinal(src), ordinal(dst)
                with cp.cuda.Device(so):
                    xc = cp.asarray(host)
                    cp.cuda.Device(so).synchronize()

                def cp_copy():
                    with cp.cuda.Device(do):
                        y = cp.asarray(xc)
                        cp.cuda.Device(do).synchronize()
                    return y

                t_cp = median_time(cp_copy, reps)
                ok = ok and np.array_equal(cp.asnumpy(cp_copy()[:: 1 << 12]), host[:: 1 << 12])
            rows.append((f"{src.filter_string} -> {dst.filter_string}, {nbytes >> 20} MiB",
                         nbytes / t_ol / 1e9, nbytes / t_cp / 1e9 if t_cp else None,
                         t_cp / t_ol if t_cp else None, "ok" if ok else "FAILED"))
    return access


def split_run(devs, kernel, parts, args_of):
    for d, p in zip(devs, parts):
        ol.call_kernel(kernel, ol.Range(p[0].size), *args_of(p))
    for d in devs:
        ol.synchronize(d)


def scaling(devs, reps, quick, rows):
    rng = np.random.default_rng(5)
    cases = [
        ("bandwidth: y = a*x + y", 1 << (22 if quick else 28), axpy, 12,
         lambda p: (np.float32(2.0), p[0], p[1])),
        ("compute: 2048 fma per element", 1 << (18 if quick else 24), burn, None,
         lambda p: (p[0], 2048)),
    ]
    counts = [k for k in (1, 2, 4, 8) if k <= len(devs)]
    for name, n, kernel, bytes_per, args_of in cases:
        xh = rng.standard_normal(n).astype(np.float32)
        yh = rng.standard_normal(n).astype(np.float32)
        base = None
        for k in counts:
            use = devs[:k]
            bounds = np.linspace(0, n, k + 1).astype(int)
            parts = [(ol.asarray(xh[lo:hi], device=d), ol.asarray(yh[lo:hi], device=d))
                     for d, lo, hi in zip(use, bounds[:-1], bounds[1:])]
            t = median_time(lambda: split_run(use, kernel, parts, args_of), reps)
            base = base or t
            # check: one more run from fresh inputs, against NumPy
            parts = [(ol.asarray(xh[lo:hi], device=d), ol.asarray(yh[lo:hi], device=d))
                     for d, lo, hi in zip(use, bounds[:-1], bounds[1:])]
            split_run(use, kernel, parts, args_of)
            if kernel is axpy:
                got = np.concatenate([ol.asnumpy(p[1]) for p in parts])
                ok = np.allclose(got, np.float32(2.0) * xh + yh, rtol=1e-6, atol=1e-6)
            else:
                got = np.concatenate([ol.asnumpy(p[0]) for p in parts])
                want = xh.astype(np.float64)
                want = 1.0 + (want - 1.0) * 0.999 ** 2048  # v -> 0.999 v + 0.001, 2048 times
                ok = np.allclose(got, want, rtol=1e-3, atol=1e-3)
            rate = (n * bytes_per / t / 1e9) if bytes_per else (2.0 * 2048 * n / t / 1e12)
            rows.append((name, k, t * 1e3, rate, "GB/s" if bytes_per else "TFLOP/s", base / t,
                         "ok" if ok else "FAILED"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--devices", help="comma-separated filter strings (default: every GPU)")
    args = ap.parse_args()
    devs = ([ol.Device(f) for f in args.devices.split(",")] if args.devices
            else ol.get_devices(backend="cuda"))
    if len(devs) < 2:
        sys.exit(f"bench_multi_gpu: needs two devices or more; found {devs}")
    for d in devs:
        print(f"# {d.filter_string}: {d.name} ({d.pci_bus_id or 'no PCI address'})")

    rows = []
    access = peer_copies(devs, args.reps, args.quick, rows)
    print(f"\n## Peer copies ({devs[0].filter_string} <-> {devs[1].filter_string}; "
          f"peer access: {access})\n")
    print("| copy | offload GB/s | CuPy GB/s | ratio | check |")
    print("|---|---:|---:|---:|---|")
    for name, g_ol, g_cp, ratio, ok in rows:
        cp_cell = f"{g_cp:.1f}" if g_cp is not None else "-"
        ratio_cell = f"{ratio:.2f}" if ratio is not None else "-"
        print(f"| {name} | {g_ol:.1f} | {cp_cell} | {ratio_cell} | {ok} |")

    rows = []
    scaling(devs, args.reps, args.quick, rows)
    print("\n## Scaling: one computation split over k devices\n")
    print("| case | devices | ms | rate | unit | speed-up | check |")
    print("|---|---:|---:|---:|---|---:|---|")
    for name, k, ms, rate, unit, speedup, ok in rows:
        print(f"| {name} | {k} | {ms:.3f} | {rate:.1f} | {unit} | {speedup:.2f} | {ok} |")


if __name__ == "__main__":
    main()
