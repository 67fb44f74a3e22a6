#!/usr/bin/env python3
"""Benchmark: offload's matmul (`a @ b` on offload arrays) against the library a user would
otherwise call -- CuPy (cuBLAS) on an NVIDIA GPU, NumPy (its BLAS) on the CPU.

    PYTHONPATH=<build>/python python3 bench/bench_matmul.py --gpu            # H100 vs cuBLAS
    PYTHONPATH=<build>/python python3 bench/bench_matmul.py                  # CPU device vs NumPy
    PYTHONPATH=<build>/python python3 bench/bench_matmul.py --sizes 256,512  # a quick look

This is a benchmark, not a test: it asserts nothing about speed (issue 7 sets no target). It
checks every result (after timing) and prints the check table; a failed check marks its row.

Method. For each n (--sizes, default 1024,2048,4096): A and B are n x n float32 (--dtype),
uniform in [-1, 1), from a fixed seed; offload gets ol.asarray copies on its device, the peer
its own copies of the same arrays.
  offload: 2 warm-up products (the first compiles the kernel, or reads it from the disk
    cache), then R (--reps) products `c = a @ b`, each inside its own offload.DeviceTimer, so
    each time is the device time of that one launch (the runtime's events around the kernel;
    allocating the result and the host's launch work are outside it); the median. The same R
    products are also timed on the host clock, each `a @ b` plus ol.synchronize(device): the
    "wall" column, what a user waits for.
  CuPy (--gpu): TF32 off (CUPY_TF32 removed and NVIDIA_TF32_OVERRIDE=0 set before CuPy is
    imported); 2 warm-ups, then R products cp.matmul(ca, cb, out=cc) queued back to back, each
    between two cupy.cuda.Events; one synchronise; the median of the event spans (the first may
    include the host's launch work; the median does not).
  NumPy (the CPU device): R products A @ B on the host clock, the median. NumPy's BLAS and
    PoCL both use every core; the peer runs before offload at each size, so that the two
    never share the cores.
GFLOP/s = 2 n^3 / t. ratio = peer ms / offload ms (> 1: offload faster). "% of peak": of the
device's FP32 peak counting a fused multiply-add as 2 FLOPs -- on a CUDA GPU SMs x FP32 lanes
per SM x 2 x the SM clock that nvidia-smi reports as the maximum; elsewhere only with
--peak-gflops. offload's kernel issues a multiply and an add per term (the JIT has no fused
multiply-add), so half that peak is its own ceiling.

Check, after timing: up to 64 whole rows and 64 whole columns of the last C against a float64
NumPy product, each element's error divided by (|A| @ |B|) of that element; tolerance 1e-5
for float32 (its rounding gives ~1e-7; TF32 or a lost tile gives more), 1e-12 for float64.

--json PATH writes every number, the environment and the tables.
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

ol = None  # offload, once imported


# ================================================================ data and checks

def make_inputs(n, dtype, seed=7):
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) * 2 - 1).astype(dtype)
    B = (rng.random((n, n)) * 2 - 1).astype(dtype)
    k = min(64, n)
    rows = np.sort(rng.choice(n, k, replace=False))
    cols = np.sort(rng.choice(n, k, replace=False))
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = {"rows": rows, "cols": cols,
           "C_rows": A64[rows] @ B64, "S_rows": np.abs(A64[rows]) @ np.abs(B64),
           "C_cols": A64 @ B64[:, cols], "S_cols": np.abs(A64) @ np.abs(B64[:, cols])}
    return A, B, ref


def check(C, ref, tol):
    """(max of |C - ref| / (|A| @ |B|) over the sampled rows and columns, ok?)"""
    C = np.asarray(C, dtype=np.float64)
    e = max(float(np.max(np.abs(C[ref["rows"]] - ref["C_rows"]) / ref["S_rows"])),
            float(np.max(np.abs(C[:, ref["cols"]] - ref["C_cols"]) / ref["S_cols"])))
    return e, bool(e <= tol)  # NaN compares False


# ================================================================ timing

def med(ts):
    return statistics.median(ts) if ts else None


def time_offload(a, b, dev, reps, warm=2):
    """(device seconds of each product, wall seconds of each product, the last result)."""
    for _ in range(warm):
        c = a @ b
    ol.synchronize(dev)
    await_full_build()
    dev_ts, wall_ts = [], []
    for _ in range(reps):
        with ol.DeviceTimer() as t:
            c = a @ b
        dev_ts.append(t.seconds / max(1, t.launches))
    for _ in range(reps):
        t0 = time.perf_counter()
        c = a @ b
        ol.synchronize(dev)
        wall_ts.append(time.perf_counter() - t0)
    return dev_ts, wall_ts, c


def time_cupy(cp, ca, cb, cc, reps, warm=2):
    for _ in range(warm):
        cp.matmul(ca, cb, out=cc)
    cp.cuda.Device().synchronize()
    evs = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for e0, e1 in evs:
        e0.record()
        cp.matmul(ca, cb, out=cc)
        e1.record()
    cp.cuda.Device().synchronize()
    return [cp.cuda.get_elapsed_time(e0, e1) * 1e-3 for e0, e1 in evs]


def time_numpy(A, B, reps, warm=1):
    for _ in range(warm):
        C = A @ B
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        C = A @ B
        ts.append(time.perf_counter() - t0)
    return ts, C


# ================================================================ one size

def case(n, dtype, dev, cp, reps, tol, peak, checks):
    flop = 2.0 * n ** 3
    log(f"n = {n}: data and the float64 reference")
    A, B, ref = make_inputs(n, dtype)
    res = {"n": n}
    # the peer first: PoCL's worker threads, busy just after offload's products, would
    # otherwise compete with NumPy's BLAS threads for the same cores
    if cp is not None:
        log(f"n = {n}: CuPy (cuBLAS)")
        ca, cb, cc = cp.asarray(A), cp.asarray(B), cp.empty((n, n), dtype)
        ts = time_cupy(cp, ca, cb, cc, reps)
        err, ok = check(cp.asnumpy(cc), ref, tol)
        res["peer"] = {"name": "CuPy (cuBLAS)", "s": ts, "err": err, "ok": ok}
        del ca, cb, cc
        cp.get_default_memory_pool().free_all_blocks()
    else:
        log(f"n = {n}: NumPy")
        ts, C = time_numpy(A, B, reps)
        err, ok = check(C, ref, tol)
        res["peer"] = {"name": f"NumPy {np.__version__}", "s": ts, "err": err, "ok": ok}
    try:
        a, b = ol.asarray(A, device=dev), ol.asarray(B, device=dev)
        log(f"n = {n}: offload")
        dev_ts, wall_ts, c = time_offload(a, b, dev, reps)
        err, ok = check(ol.asnumpy(c), ref, tol)
        checks.append((f"offload a @ b, n = {n}", err, ok))
        res["offload"] = {"device_s": dev_ts, "wall_s": wall_ts, "err": err, "ok": ok}
        del a, b, c
    except Exception as ex:  # a CompileError, DeviceError, ... is reported, not fatal
        msg = f"{type(ex).__name__}: {str(ex).strip()}"
        print(f"  ! offload n = {n}: {msg[:2000]}")
        res["offload"] = {"error": msg}
        checks.append((f"offload n = {n}: {msg.splitlines()[0][:100]}", None, False))
    checks.append((f"{res['peer']['name']}, n = {n}", res["peer"]["err"], res["peer"]["ok"]))
    o, p = res["offload"], res["peer"]
    to, tw, tp = med(o.get("device_s")), med(o.get("wall_s")), med(p["s"])
    rate = flop / to / 1e9 if to else None
    failed = [who for who, r in (("offload", o), ("peer", p)) if not r.get("ok")]
    row = {"case": f"{n}x{n} @ {n}x{n} {np.dtype(dtype).name}",
           "offload ms": to * 1e3 if to else None, "offload wall ms": tw * 1e3 if tw else None,
           "offload GFLOP/s": rate, "peer": p["name"], "peer ms": tp * 1e3,
           "peer GFLOP/s": flop / tp / 1e9, "ratio": tp / to if to else None,
           "% of peak": 100 * rate / peak if rate and peak else None,
           "peer % of peak": 100 * flop / tp / 1e9 / peak if peak else None,
           "checks": "FAIL: " + ",".join(failed) if failed else "ok"}
    return row, res


# ================================================================ output

def fmt(v, p=2):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if v != 0 and (abs(v) >= 1e6 or abs(v) < 10 ** -p):
        return f"{v:.3g}"
    return f"{v:.{p}f}"


COLUMNS = [("case", lambda r: r["case"]),
           ("offload ms", lambda r: fmt(r["offload ms"], 3)),
           ("GFLOP/s", lambda r: fmt(r["offload GFLOP/s"], 1)),
           ("% of peak", lambda r: fmt(r["% of peak"], 1)),
           ("wall ms", lambda r: fmt(r["offload wall ms"], 3)),
           ("peer", lambda r: r["peer"]),
           ("peer ms", lambda r: fmt(r["peer ms"], 3)),
           ("peer GFLOP/s", lambda r: fmt(r["peer GFLOP/s"], 1)),
           ("peer % of peak", lambda r: fmt(r["peer % of peak"], 1)),
           ("ratio", lambda r: fmt(r["ratio"], 3)),
           ("checks", lambda r: r["checks"])]


def table(title, rows, note=None):
    cells = [[f(r) for _, f in COLUMNS] for r in rows]
    print_table(title, [h for h, _ in COLUMNS], cells, note, left=(0, 5))
    TABLES.append({"title": title, "note": note, "rows": rows})


# ================================================================ environment

def import_cupy():
    """CuPy with TF32 off in cuBLAS (both before CuPy is imported), or (None, why)."""
    os.environ.pop("CUPY_TF32", None)
    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy, cupy.__version__
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"


def nvidia_smi():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    p = subprocess.run([smi, "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True)
    return p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else None


def gpu_peak_gflops(dev, smi):
    """FP32 peak (an FMA counted as 2 FLOPs) of a CUDA device, from its SMs, its compute
    capability's FP32 lanes per SM and nvidia-smi's maximum SM clock; None if unknown."""
    if not smi:
        return None
    try:
        mhz = float(smi.split(",")[-1])
        cc = dev.version.rsplit(" ", 1)[-1]  # "CUDA compute capability 9.0"
    except ValueError:
        return None
    lanes = 64 if cc in ("6.0", "7.0", "7.2", "7.5", "8.0") else 128
    return dev.max_compute_units * lanes * 2 * mhz * 1e6 / 1e9


def environment(dev, smi):
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
            "python": sys.version.split()[0], "numpy": np.__version__,
            "offload": getattr(ol, "__version__", "?"),
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "device": f"{dev.filter_string}: {dev.name} (driver {dev.driver_version}; {dev.version}; "
                      f"{dev.max_compute_units} compute units)",
            "nvidia_smi": smi, "OFFLOAD_MATMUL_TILES": os.environ.get("OFFLOAD_MATMUL_TILES")}


# ================================================================ main

def main():
    global ol
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", action="store_true",
                    help="offload's first CUDA device against CuPy (cuBLAS); default: the CPU device "
                         "against NumPy")
    ap.add_argument("--device", help="an offload device filter (default: cuda:gpu:0 with --gpu, else "
                                     "opencl:cpu:0)")
    ap.add_argument("--sizes", default="1024,2048,4096", help="comma-separated n (1024,2048,4096)")
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--reps", type=int, help="timed products per size (GPU 20, CPU 5)")
    ap.add_argument("--peak-gflops", type=float,
                    help="the device's FP32 peak for '%% of peak' (computed on CUDA GPUs)")
    ap.add_argument("--json", help="write every number here")
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes: want comma-separated integers, not {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        ap.error("--sizes: at least one size, each >= 1")
    reps = args.reps or (20 if args.gpu else 5)

    try:
        import offload
    except ImportError as e:
        sys.exit(f"bench_matmul.py: cannot import offload ({e}); run with PYTHONPATH=<build>/python")
    ol = offload
    filt = args.device or ("cuda:gpu:0" if args.gpu else "opencl:cpu:0")
    try:
        dev = ol.Device(filt)
    except Exception as e:
        sys.exit(f"bench_matmul.py: no device {filt!r} ({type(e).__name__}: {e}); devices: "
                 f"{[d.filter_string for d in ol.get_devices()]}")
    cp, cp_note = (None, "not asked for (no --gpu)")
    if args.gpu:
        cp, cp_note = import_cupy()
    smi = nvidia_smi() if dev.backend == "cuda" else None
    peak = args.peak_gflops or (gpu_peak_gflops(dev, smi) if dev.backend == "cuda" else None)
    env = environment(dev, smi)
    env["peer"] = f"CuPy {cp_note}" if cp is not None else f"NumPy {np.__version__} (CuPy: {cp_note})"
    env["peak_gflops"] = peak
    print(f"bench_matmul.py -- {env['date']} on {env['host']}")
    print(f"  command : {env['command']}")
    print(f"  python {env['python']}, numpy {env['numpy']}, offload {env['offload']}")
    print(f"  device  : {env['device']}")
    if smi:
        print(f"  nvidia-smi: {smi}")
    print(f"  peer    : {env['peer']}" + ("; NVIDIA_TF32_OVERRIDE=0, CUPY_TF32 unset" if cp else ""))
    print(f"  peak    : {fmt(peak, 0) + ' GFLOP/s FP32 (FMA = 2 FLOPs)' if peak else 'n/a (--peak-gflops)'}")
    if args.gpu and cp is None:
        print("  CuPy missing or unusable: the peer is NumPy on the host")
    sys.stdout.flush()

    tol = 1e-5 if args.dtype == "float32" else 1e-12
    results = {"env": env, "args": vars(args), "cases": []}
    rows, checks = [], []
    try:
        for n in sizes:
            r, res = case(n, args.dtype, dev, cp, reps, tol, peak, checks)
            rows.append(r)
            results["cases"].append(res)
        check_table(f"checks, after timing (max |err| / (|A|@|B|) over sampled rows and columns, tol {tol:g})",
                    checks, err_head="error")
        table(f"a @ b on {dev.filter_string} ({dev.name}): offload device time, median of {reps} "
              f"(ratio = peer ms / offload ms, > 1: offload faster)", rows,
              note="wall ms: a @ b plus synchronize on the host clock; % of peak: of the FP32 peak above "
                   "(offload's kernel does a multiply and an add per term, so 50% is its ceiling)")
    finally:
        save_json(results, args.json)


if __name__ == "__main__":
    main()
