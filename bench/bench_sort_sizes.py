#!/usr/bin/env python3
"""Benchmark: sort and argsort by size -- offload against CuPy on a GPU, wall time per call.

    PYTHONPATH=<build>/python python3 bench/bench_sort_sizes.py [--reps 50]

Where bench/bench_array_api.py measures one large sort, this shows the fixed cost a call carries
(allocations, launches, the one read back a sort makes) at 2^12 and 2^20 elements beside 2^26.
float32 from a fixed seed; each case runs 5 times, then --reps times back to back with one
synchronisation. ratio = CuPy's time / offload's (> 1: offload faster). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import offload as ol


def per_call_us(fn, sync, reps):
    for _ in range(5):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t) / reps * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    import cupy as cp

    dev = ol.get_devices(backend="cuda")[0]
    ol.set_default_device(dev)
    csync = cp.cuda.Device().synchronize
    rng = np.random.default_rng(0)
    print(f"offload on {dev} against CuPy {cp.__version__}; float32, microseconds per call\n")
    print(f"{'n':>6} {'case':<17} {'offload':>10} {'CuPy':>10} {'ratio':>7}")
    for bits in (12, 20, 26):
        h = rng.random(1 << bits, dtype=np.float32)
        x, c = ol.asarray(h), cp.asarray(h)
        cases = (("sort", lambda: ol.sort(x), lambda: cp.sort(c)),
                 ("argsort (stable)", lambda: ol.argsort(x, stable=True), lambda: cp.argsort(c)))
        for name, ours, theirs in cases:
            a = per_call_us(ours, ol.synchronize, args.reps)
            b = per_call_us(theirs, csync, args.reps)
            print(f"  2^{bits} {name:<17} {a:10.1f} {b:10.1f} {b / a:7.2f}")


if __name__ == "__main__":
    main()
