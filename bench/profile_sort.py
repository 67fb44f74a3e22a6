#!/usr/bin/env python3
"""Where a radix sort's time goes: the cost of one pass, and of the rest.

    PYTHONPATH=<build>/python python3 bench/profile_sort.py [--n 26] [--reps 20] [--device F]

The sort skips every 8-bit digit that all keys share, so sorting 2^n uint32 whose
values vary in their low 8, 16, 24 or 32 bits takes 1, 2, 3 or 4 passes: the
differences are the cost of a pass; what is left at one pass is the fixed part
(keys, the varying-bits read back, histograms). float32 in [0, 1) (4 passes) and
argsort (indices travel with the keys) for comparison. Device time (offload's
DeviceTimer), median of --reps, each result checked against NumPy. Then, for the
float32 sort and argsort, where the wall time goes beside the device time: one
call between two synchronisations (latency), --reps calls back to back
(pipelined: what bench_array_api.py's wall column measures), and the host's time
until the call returns. A tool for the sort's author, not a benchmark against a
peer: bench/bench_array_api.py has that.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import offload as ol


def timed(fn, reps):
    for _ in range(3):
        r = fn()
    ol.synchronize()
    laps = []
    with ol.DeviceTimer() as timer:
        for _ in range(reps):
            fn()
            laps.append(timer.lap()[0])
    return statistics.median(laps), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=26)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    if args.device:
        ol.set_default_device(args.device)
    N = 1 << args.n
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, N, dtype=np.uint32)
    print(f"{ol.default_device()}, N = 2^{args.n}; device ms, median of {args.reps}")
    prev = None
    for nbytes in (1, 2, 3, 4):
        h = bits & np.uint32((1 << (8 * nbytes)) - 1)
        x = ol.asarray(h)
        t, r = timed(lambda: ol.sort(x), args.reps)
        ok = np.array_equal(ol.asnumpy(r), np.sort(h))
        step = "" if prev is None else f"   +{(t - prev) * 1e3:.3f} for the pass"
        print(f"  uint32, {nbytes} varying byte(s)  {t * 1e3:8.3f}{step}   {'ok' if ok else 'WRONG'}")
        prev = t
    h = rng.random(N, dtype=np.float32)
    x = ol.asarray(h)
    t, r = timed(lambda: ol.sort(x), args.reps)
    print(f"  float32 [0, 1) sort         {t * 1e3:8.3f}   "
          f"{'ok' if np.array_equal(ol.asnumpy(r), np.sort(h)) else 'WRONG'}")
    t, r = timed(lambda: ol.argsort(x, stable=True), args.reps)
    print(f"  float32 [0, 1) argsort      {t * 1e3:8.3f}   "
          f"{'ok' if np.array_equal(ol.asnumpy(r), np.argsort(h, kind='stable')) else 'WRONG'}")
    print("\nwall ms (medians of --reps): latency, pipelined, host until return; device")
    for name, fn in (("sort", lambda: ol.sort(x)), ("argsort", lambda: ol.argsort(x, stable=True))):
        lat, ret = [], []
        for _ in range(args.reps):
            ol.synchronize()
            t0 = time.perf_counter()
            fn()
            ret.append(time.perf_counter() - t0)
            ol.synchronize()
            lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(args.reps):
            fn()
        ol.synchronize()
        pipe = (time.perf_counter() - t0) / args.reps
        dev, _ = timed(fn, args.reps)
        print(f"  float32 [0, 1) {name:<8}  {statistics.median(lat) * 1e3:8.3f} {pipe * 1e3:8.3f} "
              f"{statistics.median(ret) * 1e3:8.3f}   {dev * 1e3:8.3f}")


if __name__ == "__main__":
    main()
