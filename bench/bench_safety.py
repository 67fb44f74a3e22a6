#!/usr/bin/env python3
"""Benchmark: what run-time safety costs on a CPU device (issue 18 items 2 and 8) -- in one run.

    PYTHONPATH=python python3 bench/bench_safety.py [--device opencl:cpu:0] [--reps 15] [--json F]

Kernels (float32, from bench/bench_jit.py): vadd and saxpy (2^22 elements), black_scholes
(2^20), l2_norm (4096 x 256: a loop of 256 per work-item) and pairwise_distance
(1024 x 1024, 3 columns: a loop per work-item). Three configurations, each in a child
process of its own (the JIT reads OFFLOAD_CANCEL once):

  plain       OFFLOAD_CANCEL=0, @offload.kernel(boundscheck=False): neither check
  cancel      @offload.kernel(boundscheck=False): the cancellation check on loop
              back-edges (every 1024th trip reads the host's flag) -- the default on GPUs
  cancel+bc   @offload.kernel(boundscheck=True): plus index checks, the default on CPU
              devices since issue 18 (the launch then waits for the kernel and reads
              the bounds record)

Per kernel and configuration: 3 warm-up launches, then --reps launches, each timed twice:
device time (the launch's event, ol.call_kernel_async(...).elapsed) and host wall time of
launch + ol.synchronize() (what a cell sees). Medians. Results are checked against NumPy
before timing. This is a benchmark, not a test: it asserts nothing about speed."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_jit import (  # noqa: E402  (plain functions, compiled here with ol.kernel)
    ol_black_scholes,
    ol_l2_norm,
    ol_pairwise_distance,
    ol_saxpy,
    ol_vadd,
    ref_black_scholes,
)

CONFIGS = {
    "plain": ({"OFFLOAD_CANCEL": "0"}, False),
    "cancel": ({}, False),
    "cancel+bc": ({}, True),
}


def cases(rng, dev, ol):
    f32 = np.float32
    n = 1 << 22
    a, b = rng.random(n, dtype=f32), rng.random(n, dtype=f32)
    da, db, dc = ol.asarray(a, device=dev), ol.asarray(b, device=dev), ol.empty(n, dtype=f32, device=dev)
    yield "vadd", ol_vadd, (n,), (da, db, dc), lambda: np.allclose(ol.asnumpy(dc), a + b)
    dy = ol.asarray(b, device=dev)
    # saxpy accumulates over launches: checked after the first launch only
    yield "saxpy", ol_saxpy, (n,), (f32(2.0), da, dy), None
    m = 1 << 20
    price, strike = rng.uniform(10, 50, m).astype(f32), rng.uniform(10, 50, m).astype(f32)
    t = rng.uniform(1, 2, m).astype(f32)
    dp, ds, dt = (ol.asarray(v, device=dev) for v in (price, strike, t))
    call, put = ol.empty(m, dtype=f32, device=dev), ol.empty(m, dtype=f32, device=dev)
    rc = ref_black_scholes(price, strike, t, 0.1, 0.2)["call"]
    yield ("black_scholes", ol_black_scholes, (m,), (m, dp, ds, dt, f32(0.1), f32(0.2), call, put),
           lambda: np.allclose(ol.asnumpy(call), rc, rtol=1e-3, atol=1e-3))
    rows, cols = 4096, 256
    x = rng.random((rows, cols), dtype=f32)
    dx, dd = ol.asarray(x, device=dev), ol.empty(rows, dtype=f32, device=dev)
    yield "l2_norm", ol_l2_norm, (rows,), (dx, dd), lambda: np.allclose(ol.asnumpy(dd), np.sqrt((x * x).sum(1)), rtol=1e-4)
    p = 1024
    x1, x2 = rng.random((p, 3), dtype=f32), rng.random((p, 3), dtype=f32)
    d1, d2, dD = ol.asarray(x1, device=dev), ol.asarray(x2, device=dev), ol.empty((p, p), dtype=f32, device=dev)
    ref = np.sqrt(((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1))
    yield "pairwise", ol_pairwise_distance, (p, p), (d1, d2, dD), lambda: np.allclose(ol.asnumpy(dD), ref, rtol=1e-4, atol=1e-5)


def child(dev: str, reps: int, bounds: bool) -> dict:
    import offload as ol

    rng = np.random.default_rng(7)
    out = {}
    for name, fn, shape, args, check in cases(rng, dev, ol):
        k = ol.kernel(fn, boundscheck=bounds)
        r = ol.Range(*shape)
        k[r](*args)
        ol.synchronize()
        if check is not None and not check():
            raise SystemExit(f"{name}: wrong result")
        for _ in range(3):
            k[r](*args)
        ol.synchronize()
        dev_s, host_s = [], []
        for _ in range(reps):
            e = ol.call_kernel_async(k, r, *args)
            e.wait()
            dev_s.append(e.elapsed)
            t0 = time.perf_counter()
            k[r](*args)
            ol.synchronize()
            host_s.append(time.perf_counter() - t0)
        out[name] = {"device_ms": statistics.median(dev_s) * 1e3, "host_ms": statistics.median(host_s) * 1e3,
                     "signature": k.signatures[-1]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="opencl:cpu:0")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json")
    ap.add_argument("--child", choices=list(CONFIGS))
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.device, a.reps, CONFIGS[a.child][1])))
        return
    res = {}
    for cfg, (env, _) in CONFIGS.items():
        e = dict(os.environ, **env)
        p = subprocess.run([sys.executable, __file__, "--child", cfg, "--device", a.device, "--reps", str(a.reps)],
                           env=e, capture_output=True, text=True, check=False)
        if p.returncode:
            sys.exit(f"{cfg}: child failed:\n{p.stderr}")
        res[cfg] = json.loads(p.stdout.strip().splitlines()[-1])
    names = list(res["plain"])
    print(f"device {a.device}, median of {a.reps} launches; ms (relative to plain)")
    print(f"{'kernel':<15}{'':>2}" + "".join(f"{c + ' dev':>22}{c + ' host':>22}" for c in CONFIGS))
    for nme in names:
        base = res["plain"][nme]
        row = f"{nme:<15}{'':>2}"
        for c in CONFIGS:
            r = res[c][nme]
            row += f"{r['device_ms']:>12.3f} ({r['device_ms'] / base['device_ms']:.2f}x)"
            row += f"{r['host_ms']:>12.3f} ({r['host_ms'] / base['host_ms']:.2f}x)"
        print(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
