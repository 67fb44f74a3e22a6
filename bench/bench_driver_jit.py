"""How long the CUDA driver takes to compile offload's PTX to SASS, and why.

The cold-compile target of issue 4 (define -> first result <= 50 ms) includes the
driver's PTX JIT (cuModuleLoadData), which offload cannot make faster. This
script measures it for the bench_jit kernels' PTX, in this process, with the
driver's cache off (CUDA_CACHE_DISABLE=1 is set before CUDA starts), median of
--reps loads after one warm-up load:

  as emitted          offload's PTX
  opt level 0         the same through cuModuleLoadDataEx(CU_JIT_OPTIMIZATION_LEVEL=0)
  approximate div/sqrt/rcp   the PTX with div.rn/sqrt.rn/rcp.rn replaced by their
                      approximate forms: not usable (Python needs correctly rounded
                      results) -- it shows what the IEEE slow paths cost the driver

Run on the GPU machine: PYTHONPATH=<build>/python python3 bench/bench_driver_jit.py
"""
import argparse
import ctypes
import os
import re
import statistics
import sys
import time

os.environ["CUDA_CACHE_DISABLE"] = "1"  # before offload (or anything) starts CUDA

import numpy as np  # noqa: E402

import offload as ol  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_jit as B  # noqa: E402

CU_JIT_OPTIMIZATION_LEVEL = 7


def load_ms(cu, ptx: bytes, reps: int, opt_level=None) -> float:
    ts = []
    for _ in range(reps + 1):
        mod = ctypes.c_void_p()
        t0 = time.perf_counter()
        if opt_level is None:
            rc = cu.cuModuleLoadData(ctypes.byref(mod), ptx)
        else:
            opts = (ctypes.c_int * 1)(CU_JIT_OPTIMIZATION_LEVEL)
            vals = (ctypes.c_void_p * 1)(opt_level)
            rc = cu.cuModuleLoadDataEx(ctypes.byref(mod), ptx, 1, opts, vals)
        ts.append((time.perf_counter() - t0) * 1e3)
        if rc:
            raise RuntimeError(f"cuModuleLoadData failed with CUDA error {rc}")
        cu.cuModuleUnload(mod)
    return statistics.median(ts[1:])


def approximate(ptx: str) -> str:
    ptx = re.sub(r"\bdiv\.rn\.f32\b", "div.full.f32", ptx)
    ptx = re.sub(r"\bsqrt\.rn\.f32\b", "sqrt.approx.f32", ptx)
    return re.sub(r"\brcp\.rn\.f32\b", "rcp.approx.f32", ptx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=12)
    args = ap.parse_args()
    gpus = ol.get_devices(backend="cuda")
    if not gpus:
        sys.exit("no CUDA device: this measures the CUDA driver")
    ol.synchronize(gpus[0])  # the context exists: what follows is the JIT alone
    cu = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    if cu.cuCtxGetCurrent(ctypes.byref(ctx)) or not ctx.value:
        dev = ctypes.c_int()
        cu.cuDeviceGet(ctypes.byref(dev), 0)
        cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        cu.cuCtxSetCurrent(ctx)
    print(f"{gpus[0]!r}: cuModuleLoadData, driver cache off, median of {args.reps} (ms)")
    print(f"{'kernel':<15}{'PTX lines':>10}{'as emitted':>12}{'opt level 0':>13}{'approx div/sqrt/rcp':>21}")
    for name in ("vadd", "saxpy", "black_scholes"):
        case = B.make_case(name, 1 << 16, np.float32)
        text = ol.kernel(getattr(B, "ol_" + name)).inspect_ptx(
            *B.launch_args(case, case.arrays), range=ol.Range(*case.shape), sm=90)  # as for an H100
        ptx = text.encode() + b"\0"
        row = [load_ms(cu, ptx, args.reps), load_ms(cu, ptx, args.reps, 0),
               load_ms(cu, approximate(text).encode() + b"\0", args.reps)]
        print(f"{name:<15}{text.count(chr(10)):>10}" + "".join(f"{v:>{w}.1f}" for v, w in zip(row, (12, 13, 21))))


if __name__ == "__main__":
    main()
