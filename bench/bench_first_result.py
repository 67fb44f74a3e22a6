#!/usr/bin/env python3
"""Benchmark: a fresh process's time to its first result -- what every kernel restart,
Dask worker or script pays (issue 37, item 3). Each measurement is a new Python process
that imports the library, defines saxpy, runs it once on 2**20 float32 and reads the
result back; the time is from before the import to the result on the host, taken inside
the process. Cold: empty caches (offload's XDG_CACHE_HOME, PoCL's POCL_CACHE_DIR,
NUMBA_CACHE_DIR); warm: the same caches again, after a first run filled them.

    PYTHONPATH=<build>/python python3 bench/bench_first_result.py            # CPU devices
    PYTHONPATH=<build>/python python3 bench/bench_first_result.py --gpu      # + numba-cuda

bench/bench_warm_start.py breaks offload's own warm start down further (SPIR-V cache
against binary cache, helper processes started). Peers in the same run where they are
installed: numba-cuda (--gpu, with cache=True for
its warm runs), numba-dpex (its own venv: --dpex-python PATH, see
../shared/tools/peer-numba-dpex.sh; 0.23 keeps no kernel on disk, so its warm rows
have only the system's caches). Median of --runs processes per row.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

OFFLOAD = r"""
import time
t0 = time.perf_counter()
import numpy as np, offload as ol
@ol.kernel
def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]
n = 1 << 20
x = ol.asarray(np.ones(n, np.float32), device=DEVICE)
y = ol.asarray(np.ones(n, np.float32), device=DEVICE)
t1 = time.perf_counter()
saxpy[ol.Range(n)](np.float32(2), x, y)
r = ol.asnumpy(y)
t2 = time.perf_counter()
assert r[0] == 3 and r[-1] == 3
print(f"{(t2 - t0) * 1e3:.1f} {(t1 - t0) * 1e3:.1f}")
"""

NUMBA_CUDA = r"""
import time
t0 = time.perf_counter()
import numpy as np
np.row_stack = np.vstack
from numba import cuda
@cuda.jit(cache=CACHE)
def saxpy(a, x, y):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = a * x[i] + y[i]
n = 1 << 20
x = cuda.to_device(np.ones(n, np.float32))
y = cuda.to_device(np.ones(n, np.float32))
t1 = time.perf_counter()
saxpy[(n + 255) // 256, 256](np.float32(2), x, y)
r = y.copy_to_host()
t2 = time.perf_counter()
assert r[0] == 3 and r[-1] == 3
print(f"{(t2 - t0) * 1e3:.1f} {(t1 - t0) * 1e3:.1f}")
"""

NUMBA_DPEX = r"""
import time
t0 = time.perf_counter()
import numpy as np, dpnp, numba_dpex as dpex
from numba_dpex import kernel_api as kapi
@dpex.kernel
def saxpy(item: kapi.Item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]
n = 1 << 20
x = dpnp.ones(n, dtype=np.float32, device=DEVICE)
y = dpnp.ones(n, dtype=np.float32, device=DEVICE)
t1 = time.perf_counter()
dpex.call_kernel(saxpy, dpex.Range(n), np.float32(2), x, y)
r = dpnp.asnumpy(y)
t2 = time.perf_counter()
assert r[0] == 3 and r[-1] == 3
print(f"{(t2 - t0) * 1e3:.1f} {(t1 - t0) * 1e3:.1f}")
"""


def one(python, code, env):
    """One process; kernels are compiled from their source, so the code is a file."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    try:
        out = subprocess.run([python, f.name], env=env, capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    total, arrays = (float(v) for v in out.stdout.split())
    return total, arrays


def rows(name, python, code, runs, extra_env):
    """Cold: a new cache directory per process; warm: one directory, filled first."""
    base = dict(os.environ, **extra_env)
    cold = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            env = dict(base, XDG_CACHE_HOME=d, POCL_CACHE_DIR=os.path.join(d, "pocl"),
                       NUMBA_CACHE_DIR=os.path.join(d, "numba"))
            cold.append(one(python, code, env))
    with tempfile.TemporaryDirectory() as d:
        env = dict(base, XDG_CACHE_HOME=d, POCL_CACHE_DIR=os.path.join(d, "pocl"),
                   NUMBA_CACHE_DIR=os.path.join(d, "numba"))
        one(python, code, env)
        warm = [one(python, code, env) for _ in range(runs)]
    for label, got in (("cold", cold), ("warm", warm)):
        total = statistics.median(t for t, _ in got)
        arrays = statistics.median(a for _, a in got)
        print(f"  {name:34s} {label}: first result {total:8.1f} ms  (import + arrays {arrays:7.1f} ms)",
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dpex-python", help="a python with numba-dpex and dpnp (peer)")
    a = ap.parse_args()
    import offload as ol

    devices = ["cuda:gpu:0"] if a.gpu else [d.filter_string for d in ol.get_devices(device_type="cpu")]
    print(f"bench_first_result: import -> saxpy of 2**20 float32 on the host, median of {a.runs} processes")
    for dev in devices:
        rows(f"offload {dev}", sys.executable, OFFLOAD.replace("DEVICE", repr(dev)), a.runs, {})
    if a.gpu:
        rows("numba-cuda (cache=True)", sys.executable, NUMBA_CUDA.replace("CACHE", "True"), a.runs, {})
    if a.dpex_python:
        rows("numba-dpex opencl:cpu", a.dpex_python, NUMBA_DPEX.replace("DEVICE", repr("opencl:cpu")),
             a.runs, dpex_env(a.dpex_python))


def dpex_env(python):
    """The environment peer-numba-dpex.sh's venv needs: Intel's runtime from the venv as the
    only OpenCL platform, and its lib/ on the loader's path (the dpctl wheel's RPATH is
    broken)."""
    venv = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    env = {}
    if os.path.isdir(os.path.join(venv, "opencl-vendors-intel")):
        env["OCL_ICD_VENDORS"] = os.path.join(venv, "opencl-vendors-intel")
    if os.path.isdir(os.path.join(venv, "lib")):
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (os.path.join(venv, "lib"), os.environ.get("LD_LIBRARY_PATH")) if p)
    return env


if __name__ == "__main__":
    main()
