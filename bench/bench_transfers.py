#!/usr/bin/env python3
"""Benchmark: host<->device copies of offload.asarray / offload.asnumpy against CuPy and
against the raw CUDA driver copy from C, plus device discovery time -- in one run.

    PYTHONPATH=python python3 bench/bench_transfers.py                 # 1 MiB .. 1 GiB
    PYTHONPATH=python python3 bench/bench_transfers.py --max-mb 64 --json /tmp/t.json

This is a benchmark, not a test: it asserts nothing about speed (it does fail if a round
trip changes the data). Everything below runs in this one command, on one machine, in one
session; the raw C numbers come from bench/copy_bandwidth.c, compiled with cc and run as a
child process just before the Python measurements.

Sizes: 1 MiB doubling to --max-mb MiB (MB here means MiB; GB/s means 10^9 bytes/s), float32,
fresh random data for each size (numpy.random.default_rng().random, never zeros). Each size
is checked once per path: the round trip equals the input bit for bit.

Timing: time.perf_counter around one operation, with the device synchronised before and
after (offload.synchronize / cudaDeviceSynchronize), Python's GC off; 2 warm-ups, then the
median of R repeats, R = clamp(2 GiB / size, 5, --reps) -- so 30 at 1 MiB and 5 at 1 GiB.
The result of each repeat is dropped after the clock stops, so freeing is never timed.

What is timed (the main table):
  H->D  offload.asarray(h, device=DEV)   -- includes the device allocation (cuMemAlloc each
        time; offload has no memory pool yet) and the copy from pageable NumPy memory
        cupy.asarray(h)                  -- likewise includes allocation (from CuPy's pool)
        raw C  cuMemcpyHtoD_v2 from pageable malloc'd memory (no allocation)
  D->H  offload.asnumpy(x)               -- a fresh numpy.empty, then the copy into it
        cupy.asnumpy(c)                  -- likewise
        raw C  cuMemcpyDtoH_v2 into pageable, already-touched malloc'd memory
  ratio = offload / CuPy bandwidth; target >= 0.90 at every size >= 64 MiB.
Details table (to explain the main one):
  offload x[...] = h  vs  CuPy c.set(h): copy into a preallocated device array
  CuPy c.get(out=o) into a preallocated NumPy array; raw C into freshly malloc'd memory
  (first-touch page faults inside the copy, as with numpy.empty); raw C from/to pinned
  memory (cuMemHostAlloc); raw C with offload's own call sequence (cuMemcpy*Async_v2 on a
  created stream + cuStreamSynchronize); host memcpy references np.copyto(o, h) and h.copy()
  offload.empty / cupy.empty: allocation alone, and dropping an offload array (its free),
  microseconds
  and whether cupy.asarray staged the data through CuPy's pinned memory pool.

Discovery (each in a fresh child process, with this Python, 5 times, interleaved, after one
untimed run of each; medians):
  offload probe: import numpy | import offload | offload.get_devices() +
                 offload.default_device()   (numpy is imported first, so "import offload"
                 is offload's own import; a numpy-only process is timed too)
  driver probe:  the drivers' own initialisation, through ctypes, in offload's order:
                 dlopen libcuda.so.1, cuInit(0), cuDeviceGetCount, cuDeviceGet for each;
                 then dlopen libOpenCL.so.1, clGetPlatformIDs, clGetDeviceIDs(ALL) for each
                 platform
  overhead = (get_devices + default_device) - driver probe; target <= 50 ms.

Modes: with a CUDA device (offload lists one and --device is not given) the device is
'cuda' and all columns are measured. Without one (or with --device cpu) offload's default
device is used (PoCL here), and the CuPy and raw C columns print 'n/a'; the NumPy host copy
is the reference then.

--json PATH writes every number, the environment and the tables.
"""
import argparse
import gc
import json
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
MiB = 1 << 20


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- timing helpers

def median_time(op, sync, reps, warm=2):
    """Median seconds of op() with sync() before and after; op's result is dropped after
    the clock stops (so an offload array's free is not timed)."""
    ts = []
    for i in range(warm + reps):
        sync()
        t0 = time.perf_counter()
        r = op()
        sync()
        t = time.perf_counter() - t0
        del r
        if i >= warm:
            ts.append(t)
    return statistics.median(ts)


def drop_time(make, sync, reps, warm=2):
    """Median seconds of dropping the last reference to make()'s result (offload: the
    device free, which waits for the device's queue first)."""
    ts = []
    for i in range(warm + reps):
        r = make()
        sync()
        t0 = time.perf_counter()
        del r
        t = time.perf_counter() - t0
        if i >= warm:
            ts.append(t)
    return statistics.median(ts)


def reps_for(nbytes, cap):
    return max(5, min(cap, (2048 * MiB) // nbytes))


def gbps(nbytes, secs):
    return nbytes / secs / 1e9 if secs and secs > 0 else None


# ---------------------------------------------------------------- raw C

def run_raw_c(min_mb, max_mb, reps):
    """Compile and run bench/copy_bandwidth.c; {bytes: {kind: GB/s}}, header lines, note."""
    src = os.path.join(HERE, "copy_bandwidth.c")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, [], "no C compiler"
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "copy_bandwidth")
        b = subprocess.run([cc, "-O2", "-o", exe, src, "-ldl"], capture_output=True, text=True)
        if b.returncode:
            return None, [], "build failed: " + b.stderr.strip()[-500:]
        log(f"raw C: running {os.path.basename(exe)} --min-mb {min_mb} --max-mb {max_mb}")
        p = subprocess.run([exe, "--min-mb", str(min_mb), "--max-mb", str(max_mb),
                            "--reps", str(reps)], capture_output=True, text=True)
    head = [l for l in p.stdout.splitlines() if l.startswith("#")]
    if p.returncode:
        return None, head, (head[0][2:] if head else "") + p.stderr.strip()[-500:]
    cols = None
    rows = {}
    for line in p.stdout.splitlines():
        if line.startswith("# bytes"):
            cols = line[2:].split()[1:]
        elif line and not line.startswith("#"):
            f = line.split()
            rows[int(f[0])] = dict(zip(cols, map(float, f[1:])))
    return rows, head, None


# ---------------------------------------------------------------- discovery

OFFLOAD_PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import offload
t2 = time.perf_counter()
devs = offload.get_devices()
d = offload.default_device()
t3 = time.perf_counter()
print(json.dumps({"numpy_ms": (t1 - t0) * 1e3, "import_ms": (t2 - t1) * 1e3,
                  "discover_ms": (t3 - t2) * 1e3, "devices": [repr(x) for x in devs],
                  "default": repr(d)}))
"""

NUMPY_PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy
print(json.dumps({"numpy_ms": (time.perf_counter() - t0) * 1e3}))
"""

DRIVER_PROBE = r"""
import ctypes, json, time
from ctypes import byref, c_int, c_uint32, c_uint64, c_void_p, POINTER
out = {}
t0 = time.perf_counter()
try:
    cu = ctypes.CDLL("libcuda.so.1")
    rc = cu.cuInit(0)
    n = c_int(0)
    if rc == 0:
        cu.cuDeviceGetCount(byref(n))
        for i in range(n.value):
            d = c_int(0)
            cu.cuDeviceGet(byref(d), i)
    out["cuda_devices"] = n.value
    out["cuda_ms"] = (time.perf_counter() - t0) * 1e3
except OSError as e:
    out["cuda_ms"] = None
    out["cuda_why"] = str(e)
t1 = time.perf_counter()
try:
    cl = ctypes.CDLL("libOpenCL.so.1")
    cl.clGetPlatformIDs.argtypes = [c_uint32, POINTER(c_void_p), POINTER(c_uint32)]
    cl.clGetDeviceIDs.argtypes = [c_void_p, c_uint64, c_uint32, POINTER(c_void_p),
                                  POINTER(c_uint32)]
    np_ = c_uint32(0)
    total = 0
    if cl.clGetPlatformIDs(0, None, byref(np_)) == 0 and np_.value:
        plats = (c_void_p * np_.value)()
        cl.clGetPlatformIDs(np_.value, plats, None)
        for p in plats:
            nd = c_uint32(0)
            if cl.clGetDeviceIDs(p, 0xFFFFFFFF, 0, None, byref(nd)) == 0 and nd.value:
                devs = (c_void_p * nd.value)()
                cl.clGetDeviceIDs(p, 0xFFFFFFFF, nd.value, devs, None)
                total += nd.value
    out["opencl_platforms"] = np_.value
    out["opencl_devices"] = total
    out["opencl_ms"] = (time.perf_counter() - t1) * 1e3
except OSError as e:
    out["opencl_ms"] = None
    out["opencl_why"] = str(e)
out["total_ms"] = (time.perf_counter() - t0) * 1e3
print(json.dumps(out))
"""


def probe(code):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=os.environ.copy())
    if p.returncode:
        raise RuntimeError("probe failed: " + p.stderr.strip()[-800:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure_discovery(runs=5):
    log("discovery: fresh processes")
    for code in (NUMPY_PROBE, DRIVER_PROBE, OFFLOAD_PROBE):  # untimed: warm the file cache
        probe(code)
    samples = {"numpy": [], "driver": [], "offload": []}
    for _ in range(runs):
        samples["numpy"].append(probe(NUMPY_PROBE))
        samples["driver"].append(probe(DRIVER_PROBE))
        samples["offload"].append(probe(OFFLOAD_PROBE))

    def med(kind, key):
        v = [s[key] for s in samples[kind] if s.get(key) is not None]
        return statistics.median(v) if v else None

    r = {
        "runs": runs,
        "numpy_import_ms": med("numpy", "numpy_ms"),
        "offload_import_ms": med("offload", "import_ms"),
        "offload_discover_ms": med("offload", "discover_ms"),
        "driver_cuda_ms": med("driver", "cuda_ms"),
        "driver_opencl_ms": med("driver", "opencl_ms"),
        "driver_total_ms": med("driver", "total_ms"),
        "devices": samples["offload"][0]["devices"],
        "default": samples["offload"][0]["default"],
        "driver_detail": {k: samples["driver"][0].get(k) for k in
                          ("cuda_devices", "cuda_why", "opencl_platforms", "opencl_devices",
                           "opencl_why")},
        "samples": samples,
    }
    r["overhead_ms"] = r["offload_discover_ms"] - r["driver_total_ms"]
    # the overhead of each run against the driver probe run just before it
    r["overhead_each_ms"] = [o["discover_ms"] - d["total_ms"]
                             for o, d in zip(samples["offload"], samples["driver"])]
    return r


# ---------------------------------------------------------------- environment

def environment(ol, dev, cp):
    env = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "offload": getattr(ol, "__version__", "?"),
        "cupy": cp.__version__ if cp else None,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "device": repr(dev),
        "device_name": dev.name,
        "device_driver_version": dev.driver_version,
        "device_version": dev.version,
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
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
        q = ("name,driver_version,pcie.link.gen.current,pcie.link.gen.max,"
             "pcie.link.width.current,pcie.link.width.max")
        p = subprocess.run([smi, f"--query-gpu={q}", "--format=csv,noheader"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            env["nvidia_smi"] = p.stdout.strip()
    return env


# ---------------------------------------------------------------- the run

def fmt(v, w=8, p=2):
    return f"{v:{w}.{p}f}" if isinstance(v, (int, float)) and v is not None else f"{'n/a':>{w}}"


def size_str(n):
    return f"{n // MiB} MiB" if n < 1024 * MiB else f"{n // (1024 * MiB)} GiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-mb", type=int, default=1)
    ap.add_argument("--max-mb", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=30, help="most repeats per point (small sizes)")
    ap.add_argument("--device", default=None,
                    help="offload filter; default 'cuda' when offload lists a CUDA device")
    ap.add_argument("--no-cupy", action="store_true")
    ap.add_argument("--no-raw", action="store_true")
    ap.add_argument("--no-discovery", action="store_true")
    ap.add_argument("--json", help="write everything here")
    args = ap.parse_args()

    # Discovery first: fresh processes, before this one touches any device.
    disc = None if args.no_discovery else measure_discovery()

    import offload as ol
    cuda_devs = ol.get_devices(backend="cuda")
    devname = args.device or ("cuda" if cuda_devs else None)
    dev = ol.Device(devname) if devname else ol.default_device()
    gpu = dev.backend == "cuda"
    devarg = devname or dev.filter_string
    cp = None
    cupy_why = "no CUDA device" if not gpu else None
    if gpu and not args.no_cupy:
        try:
            import cupy as cp
        except ImportError as e:
            cupy_why = f"cupy not importable: {e}"
    elif args.no_cupy:
        cupy_why = "--no-cupy"
    env = environment(ol, dev, cp)
    log(f"device {dev!r}: {dev.name}; cupy: {cp.__version__ if cp else cupy_why}")

    raw, raw_head, raw_why = (None, [], "--no-raw" if args.no_raw else "no CUDA device")
    if gpu and not args.no_raw:
        raw, raw_head, raw_why = run_raw_c(args.min_mb, args.max_mb, args.reps)
        if raw_why:
            log("raw C: " + raw_why)

    ol_sync = lambda: ol.synchronize(dev)  # noqa: E731
    cp_sync = cp.cuda.runtime.deviceSynchronize if cp else None
    if cp:
        cp_pinned_pool = cp.get_default_pinned_memory_pool()
        cp_pool = cp.get_default_memory_pool()

    rng = np.random.default_rng(12345)
    sizes = []
    n = args.min_mb * MiB
    while n <= args.max_mb * MiB:
        sizes.append(n)
        n *= 2
    rows = []
    cupy_pinned = None
    gc.disable()
    try:
        for nbytes in sizes:
            count = nbytes // 4
            h = rng.random(count, dtype=np.float32)  # fresh random data, every page touched
            reps = reps_for(nbytes, args.reps)
            log(f"{size_str(nbytes)}: {reps} repeats")
            r = {"bytes": nbytes, "reps": reps}

            # correctness, once per size and path
            x = ol.asarray(h, device=devarg)
            if not np.array_equal(ol.asnumpy(x), h):
                raise SystemExit(f"offload round trip differs at {nbytes} bytes")
            x[...] = h[::-1].copy()
            if not np.array_equal(ol.asnumpy(x), h[::-1]):
                raise SystemExit(f"offload x[...] = h round trip differs at {nbytes} bytes")
            x[...] = h
            if cp:
                if cupy_pinned is None:  # does cupy.asarray stage through pinned memory?
                    asked = []

                    def counting(size):
                        asked.append(size)
                        return cp_pinned_pool.malloc(size)
                    try:
                        cp.cuda.set_pinned_memory_allocator(counting)
                        c = cp.asarray(h)
                    finally:
                        cp.cuda.set_pinned_memory_allocator(cp_pinned_pool.malloc)
                    cupy_pinned = {"pinned_requests": asked}
                c = cp.asarray(h)
                if not np.array_equal(cp.asnumpy(c), h):
                    raise SystemExit(f"cupy round trip differs at {nbytes} bytes")

            # H->D
            r["h2d_offload"] = gbps(nbytes, median_time(
                lambda: ol.asarray(h, device=devarg), ol_sync, reps))
            r["h2d_offload_set"] = gbps(nbytes, median_time(
                lambda: x.__setitem__(Ellipsis, h), ol_sync, reps))
            o = np.empty_like(h)
            r["host_copyto"] = gbps(nbytes, median_time(lambda: np.copyto(o, h), lambda: None,
                                                        reps))
            r["host_copy"] = gbps(nbytes, median_time(lambda: h.copy(), lambda: None, reps))
            if cp:
                r["h2d_cupy"] = gbps(nbytes, median_time(lambda: cp.asarray(h), cp_sync, reps))
                r["h2d_cupy_set"] = gbps(nbytes, median_time(lambda: c.set(h), cp_sync, reps))
            # D->H
            r["d2h_offload"] = gbps(nbytes, median_time(lambda: ol.asnumpy(x), ol_sync, reps))
            if cp:
                r["d2h_cupy"] = gbps(nbytes, median_time(lambda: cp.asnumpy(c), cp_sync, reps))
                r["d2h_cupy_out"] = gbps(nbytes, median_time(lambda: c.get(out=o), cp_sync,
                                                             reps))
            # allocation alone (microseconds); offload's free is the drop after the clock
            r["alloc_offload_us"] = median_time(
                lambda: ol.empty((count,), dtype=np.float32, device=devarg), ol_sync, reps) * 1e6
            r["free_offload_us"] = drop_time(
                lambda: ol.empty((count,), dtype=np.float32, device=devarg), ol_sync, reps) * 1e6
            if cp:
                r["alloc_cupy_us"] = median_time(
                    lambda: cp.empty((count,), dtype=np.float32), cp_sync, reps) * 1e6
            if raw and nbytes in raw:
                k = raw[nbytes]
                r.update({"raw_" + key: v for key, v in k.items()})
            for key in ("h2d", "d2h"):
                a, b = r.get(f"{key}_offload"), r.get(f"{key}_cupy")
                r[f"{key}_ratio"] = a / b if a and b else None
            rows.append(r)
            x = h = o = c = None  # free this size's arrays before the next
            if cp:
                cp_pool.free_all_blocks()
            gc.collect()
    finally:
        gc.enable()

    # ------------------------------------------------------------ report
    big = [r for r in rows if r["bytes"] >= 64 * MiB]
    verdict = {}
    for key in ("h2d", "d2h"):
        ratios = [r[f"{key}_ratio"] for r in big if r.get(f"{key}_ratio") is not None]
        if not big:
            verdict[key] = "n/a (no size >= 64 MiB measured)"
        elif not ratios:
            verdict[key] = "n/a (no CuPy)"
        else:
            lo = min(ratios)
            verdict[key] = ("MET" if lo >= 0.90 else "NOT MET") + \
                f": lowest offload/CuPy at >= 64 MiB = {lo:.2f}"

    out = []
    p = out.append
    p("")
    p(f"# bench_transfers -- {env['date']} on {env['host']}")
    p(f"device {env['device']}: {env['device_name']}, driver {env['device_driver_version']}"
      + (f"; nvidia-smi: {env['nvidia_smi']}" if env.get("nvidia_smi") else ""))
    p(f"CPU {env['cpu']} ({env['cpus']} cores); Python {env['python']}, NumPy {env['numpy']}, "
      f"offload {env['offload']}, CuPy {env['cupy'] or 'n/a (' + str(cupy_why) + ')'}")
    p(f"command: {env['command']}")
    if raw_head:
        p("raw C (bench/copy_bandwidth.c, same machine and session, run just before): "
          + raw_head[0][2:])
    elif raw_why:
        p(f"raw C: n/a ({raw_why})")
    p("")
    p("GB/s = 1e9 B/s, median; H→D includes the device allocation"
      + (" (offload: cuMemAlloc per call; CuPy: its memory pool); raw C = cuMemcpy*_v2, "
         "pageable host memory" if gpu else ""))
    p("| size | H→D offload | H→D CuPy | H→D raw C | H→D offload/CuPy "
      "| D→H offload | D→H CuPy | D→H raw C | D→H offload/CuPy |")
    p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        p(f"| {size_str(r['bytes'])} | {fmt(r['h2d_offload'])} | {fmt(r.get('h2d_cupy'))} "
          f"| {fmt(r.get('raw_h2d_pageable'))} | {fmt(r.get('h2d_ratio'))} "
          f"| {fmt(r['d2h_offload'])} | {fmt(r.get('d2h_cupy'))} "
          f"| {fmt(r.get('raw_d2h_pageable'))} | {fmt(r.get('d2h_ratio'))} |")
    p("")
    p(f"target offload >= 90% of CuPy at >= 64 MiB:  H→D {verdict['h2d']};  "
      f"D→H {verdict['d2h']}")
    p("")
    p("details, GB/s (alloc in µs): preallocated H→D: offload x[...]=h, CuPy c.set(h); raw C "
      "H→D async (offload's call sequence), pinned; D→H: CuPy c.get(out=o), raw C async, "
      "into fresh malloc, pinned; host memcpy: np.copyto(o, h), h.copy()")
    p("| size | off x[...]=h | CuPy set | raw async | raw pinned | CuPy get(out) "
      "| raw D→H async | raw D→H fresh | raw D→H pinned | np.copyto | h.copy() "
      "| off empty µs | off free µs | CuPy empty µs |")
    p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        p(f"| {size_str(r['bytes'])} | {fmt(r['h2d_offload_set'])} "
          f"| {fmt(r.get('h2d_cupy_set'))} | {fmt(r.get('raw_h2d_async'))} "
          f"| {fmt(r.get('raw_h2d_pinned'))} | {fmt(r.get('d2h_cupy_out'))} "
          f"| {fmt(r.get('raw_d2h_async'))} | {fmt(r.get('raw_d2h_fresh'))} "
          f"| {fmt(r.get('raw_d2h_pinned'))} | {fmt(r['host_copyto'])} "
          f"| {fmt(r['host_copy'])} | {fmt(r['alloc_offload_us'], 8, 1)} "
          f"| {fmt(r['free_offload_us'], 8, 1)} "
          f"| {fmt(r.get('alloc_cupy_us'), 8, 1)} |")
    if cupy_pinned is not None:
        asked = cupy_pinned["pinned_requests"]
        p(f"cupy.asarray staged through CuPy's pinned memory pool: "
          f"{'yes' if asked else 'no'} (pinned allocations asked for by one "
          f"cupy.asarray of {size_str(sizes[0])}: {asked})")
    if disc:
        p("")
        p(f"discovery (fresh processes, median of {disc['runs']}): import numpy "
          f"{disc['numpy_import_ms']:.1f} ms; import offload (after numpy) "
          f"{disc['offload_import_ms']:.1f} ms; get_devices()+default_device() "
          f"{disc['offload_discover_ms']:.1f} ms -> {', '.join(disc['devices'])}")
        cu = disc["driver_cuda_ms"]
        p(f"drivers' own initialisation (ctypes): CUDA "
          f"{'n/a' if cu is None else f'{cu:.1f} ms'} (cuInit+cuDeviceGet), OpenCL "
          f"{disc['driver_opencl_ms']:.1f} ms "
          f"({disc['driver_detail'].get('opencl_platforms')} platforms, "
          f"{disc['driver_detail'].get('opencl_devices')} devices); total "
          f"{disc['driver_total_ms']:.1f} ms")
        each = ", ".join(f"{v:.1f}" for v in disc["overhead_each_ms"])
        ok = "MET" if disc["overhead_ms"] <= 50 else "NOT MET"
        p(f"discovery beyond the drivers: {disc['overhead_ms']:.1f} ms (per run: {each}); "
          f"target <= 50 ms: {ok}")
    text = "\n".join(out)
    print(text, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": env, "rows": rows, "verdict": verdict, "discovery": disc,
                       "raw_header": raw_head, "raw_why": raw_why, "cupy_why": cupy_why,
                       "cupy_pinned": cupy_pinned, "text": text}, f, indent=1)


if __name__ == "__main__":
    main()
