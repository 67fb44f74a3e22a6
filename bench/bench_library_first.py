#!/usr/bin/env python3
"""Benchmark: the first call of a library function in a warm process -- the call that
compiles its kernels from module/kernels/*.py (issue 38, item 6: under 50 ms on the
GPU) -- and the same first call in a new process whose disk cache a first process
filled. CuPy, in the same run where it is installed (--gpu), compiles its kernels with
NVRTC and keeps them on disk too.

Each row is one fresh process: it imports the library, makes its arrays on the device
and runs one unrelated operation first (so the device, its context and the module are
warm), then times each function's first call to the result on the device
(synchronised), then its second call. Cold: empty caches (XDG_CACHE_HOME,
POCL_CACHE_DIR, CUPY_CACHE_DIR); disk: a second process on the caches the first filled.

    PYTHONPATH=<build>/python python3 bench/bench_library_first.py            # CPU devices
    PYTHONPATH=<build>/python python3 bench/bench_library_first.py --gpu      # + CuPy
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CALLS = ["x.sum()", "x + y", "x.argmax()", "sort(x)", "cumulative_sum(x)", "x[x > 0]",
         "a @ b"]

OFFLOAD = r"""
import json, time
import numpy as np, offload as ol
dev = ol.Device(DEVICE)
rng = np.random.default_rng(0)
x = ol.asarray(rng.standard_normal(1 << 20).astype(np.float32), device=dev)
y = ol.asarray(rng.standard_normal(1 << 20).astype(np.float32), device=dev)
a = ol.asarray(rng.standard_normal((300, 200)).astype(np.float32), device=dev)
b = ol.asarray(rng.standard_normal((200, 100)).astype(np.float32), device=dev)
ol.asnumpy(x[:10] * 2)  # the device, its context and the module are warm
sort, cumulative_sum = ol.sort, ol.cumulative_sum
"""

CUPY = r"""
import json, time
import numpy as np, cupy as cp
rng = np.random.default_rng(0)
x = cp.asarray(rng.standard_normal(1 << 20).astype(np.float32))
y = cp.asarray(rng.standard_normal(1 << 20).astype(np.float32))
a = cp.asarray(rng.standard_normal((300, 200)).astype(np.float32))
b = cp.asarray(rng.standard_normal((200, 100)).astype(np.float32))
cp.asnumpy(x[:10] * 2)
sort, cumulative_sum = cp.sort, cp.cumsum
"""


# Each call twice, to its result on the device; SYNC waits for the device.
TIMED = r"""
out = {}
for expr in CALLS:
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        r = eval(expr)
        SYNC
        times.append((time.perf_counter() - t0) * 1e3)
    out[expr] = times
print(json.dumps(out))
"""


def run(source: str, caches: str, device: str | None) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=f"{caches}/xdg", POCL_CACHE_DIR=f"{caches}/pocl",
               CUPY_CACHE_DIR=f"{caches}/cupy")
    for d in ("xdg", "pocl", "cupy"):
        os.makedirs(f"{caches}/{d}", exist_ok=True)
    sync = "ol.synchronize()" if device else "cp.cuda.Device().synchronize()"
    text = (source + TIMED.replace("SYNC", sync)).replace("CALLS", repr(CALLS))
    text = text.replace("DEVICE", repr(device))
    done = subprocess.run([sys.executable, "-c", text], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(name: str, cold: dict, disk: dict) -> None:
    print(f"\n{name}: ms to the result on the device, first call / second call")
    print(f"| call | cold process | disk cache |")
    print("|---|---|---|")
    for expr in CALLS:
        c, d = cold[expr], disk[expr]
        print(f"| `{expr}` | {c[0]:.1f} / {c[1]:.2f} | {d[0]:.1f} / {d[1]:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", action="store_true", help="the CUDA device, and CuPy")
    ap.add_argument("--device", action="append",
                    help="offload device filter (default: both CPU platforms, or cuda:gpu:0)")
    args = ap.parse_args()
    devices = args.device or (["cuda:gpu:0"] if args.gpu else ["opencl:cpu:0", "opencl:cpu:1"])
    for device in devices:
        with tempfile.TemporaryDirectory() as caches:
            cold = run(OFFLOAD, caches, device)
            disk = run(OFFLOAD, caches, device)
        table(f"offload on {device}", cold, disk)
    if args.gpu:
        with tempfile.TemporaryDirectory() as caches:
            cold = run(CUPY, caches, None)
            disk = run(CUPY, caches, None)
        table("CuPy", cold, disk)


if __name__ == "__main__":
    main()
