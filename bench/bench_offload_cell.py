#!/usr/bin/env python3
"""Benchmark: what a %%offload cell costs around its kernel, and a prange loop against the
same computation written as an @ol.kernel (issue 6, item 8).

    PYTHONPATH=<build>/python python3 bench/bench_offload_cell.py            # CPU device (+ Jupyter part)
    PYTHONPATH=<build>/python python3 bench/bench_offload_cell.py --gpu      # cuda:gpu:0, in-process parts
    ... --quick                                                              # smoke test

This is a benchmark, not a test: it asserts nothing about speed; results are checked.

The computation is the seeds' pairwise distance (dpbench): X (n x 3 float32) against itself,
D[i, j] = sqrt(sum_k (X[i, k] - X[j, k])^2), n = 4096 on a GPU, 1024 on the CPU device.

(1) prange vs @ol.kernel, device time. The prange form is the notebook's loop
        for i in prange(n):
            for j in range(n): d = 0.0; for k in range(3): ...; D[i, j] = np.sqrt(d)
    run by an @ol.jit function (the same rewrite as a %%offload cell), the kernel form is the
    same body over ol.Range(n) (tests/jit_corpus.py's pairwise_distance). Both on device
    arrays (no copies), 3 warm-up calls then R (--reps, 20) timed with ol.DeviceTimer, median.
    ratio = kernel time / prange time.

(2) overhead in-process: the cell's code compiled as the magic compiles it
    (offload._compile_cell) and run inside offload.LoopContext(verbose=False) -- everything
    %%offload does except talking to Jupyter -- against the bare launch of the cached
    @ol.kernel; each followed by a device synchronisation; R runs, median wall time.
    overhead = cell wall - kernel device time.

(3) overhead through Jupyter (only where the offload kernel binary is built, i.e. not from a
    GPU bundle): jupyter_client runs, on one kernel, R times each: `pass` (the protocol's
    round trip), a cell launching the cached @ol.kernel and synchronising, `%%offload --quiet`
    and `%%offload` with the prange loop over the same device arrays. Time from sending
    execute_request to the IOPub idle of that request, median.
    The kernel process keeps an ol.DeviceTimer open; after each timed cell an untimed cell
    reads its lap: that cell's device time. overhead = median(cell time - its device time)
    - median(`pass`).
"""

from __future__ import annotations

import argparse
import linecache
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import offload as ol

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import math, numpy as np, offload as ol
from offload import prange

@ol.kernel
def pairwise_kernel(item, X, D):
    i = item.get_id(0)
    for j in range(X.shape[0]):
        d = 0.0
        for k in range(X.shape[1]):
            tmp = X[i, k] - X[j, k]
            d += tmp * tmp
        D[i, j] = np.sqrt(d)

def sync():
    ol.DeviceTimer(record=False).sync()
"""

LOOP = """for i in prange(X.shape[0]):
    for j in range(X.shape[0]):
        d = 0.0
        for k in range(X.shape[1]):
            tmp = X[i, k] - X[j, k]
            d += tmp * tmp
        D[i, j] = np.sqrt(d)
"""

JIT = "@ol.jit\ndef pairwise_prange(X, D):\n" + "".join("    " + line + "\n" for line in LOOP.splitlines())


def median_device(fn, reps):
    for _ in range(3):
        fn()
    times = []
    with ol.DeviceTimer() as t:
        for _ in range(reps):
            fn()
            times.append(t.lap()[0])
    return statistics.median(times)


def median_wall(fn, reps):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def in_process(dev, n, reps):
    ns: dict = {}
    src = SETUP + JIT  # kernels compile from their source: let inspect find it, as for a cell
    linecache.cache["<bench>"] = (len(src), None, src.splitlines(True), "<bench>")
    exec(compile(src, "<bench>", "exec"), ns)
    rng = np.random.default_rng(3)
    xh = rng.random((n, 3), dtype=np.float32)
    X = ol.asarray(xh, device=dev)
    D1 = ol.full((n, n), np.nan, dtype=np.float32, device=dev)
    D2 = ol.full((n, n), np.nan, dtype=np.float32, device=dev)
    k, p, sync = ns["pairwise_kernel"], ns["pairwise_prange"], ns["sync"]
    t_kernel = median_device(lambda: k[ol.Range(n)](X, D1), reps)
    t_prange = median_device(lambda: p(X, D2), reps)
    want = np.sqrt(((xh[:, None, :].astype(np.float64) - xh[None, :, :]) ** 2).sum(axis=2))
    ok = all(np.allclose(d.asnumpy(), want, rtol=1e-5, atol=1e-6) for d in (D1, D2))

    ns.update(X=X, D=D2)
    code = ol._compile_cell(LOOP, "<cell>", 1)

    def cell():
        with ol.LoopContext(device=None, verbose=False):
            exec(code, ns)
        sync()

    def bare():
        k[ol.Range(n)](X, D1)
        sync()

    return t_kernel, t_prange, median_wall(cell, reps), median_wall(bare, reps), ok


def through_jupyter(dev, n, reps):
    binary = ROOT / "kernel" / "offload-kernel"
    spec = ROOT / "share" / "jupyter"
    if not binary.exists() or not (spec / "kernels" / "offload").exists():
        return None
    os.environ["JUPYTER_PATH"] = os.pathsep.join([str(spec)] + [p for p in [os.environ.get("JUPYTER_PATH")] if p])
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="offload")
    try:
        def run(code):
            t = time.perf_counter()
            msg_id = kc.execute(code)
            while True:
                m = kc.get_iopub_msg(timeout=60)
                if m["parent_header"].get("msg_id") != msg_id:
                    continue
                if m["msg_type"] == "error":
                    raise RuntimeError("\n".join(m["content"]["traceback"]))
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    return time.perf_counter() - t

        def printed(code):
            msg_id = kc.execute(code)
            text = ""
            while True:
                m = kc.get_iopub_msg(timeout=60)
                if m["parent_header"].get("msg_id") != msg_id:
                    continue
                if m["msg_type"] == "stream":
                    text += m["content"]["text"]
                if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    return text

        # a DeviceTimer open in the kernel process times every launch there; lap() after
        # each timed cell (in a cell of its own, untimed) gives that cell's device time
        run(SETUP + f"X = ol.asarray(np.random.default_rng(3).random(({n}, 3), dtype=np.float32), "
                    f"device={dev.filter_string!r})\nD = ol.empty(({n}, {n}), dtype=np.float32, device=X.device)\n"
                    "T = ol.DeviceTimer(); T.__enter__()\n")
        cells = {
            "pass": "pass",
            "@ol.kernel launch + sync": f"pairwise_kernel[ol.Range({n})](X, D); sync()",
            "%%offload --quiet": "%%offload --quiet\n" + LOOP,
            "%%offload (live report)": "%%offload\n" + LOOP,
        }
        out = {}
        for name, code in cells.items():
            for _ in range(3):
                run(code)
            walls, devs = [], []
            for _ in range(reps):
                printed("T.lap()")
                walls.append(run(code))
                devs.append(float(printed("print(T.lap()[0])")))
            out[name] = (statistics.median(walls), statistics.median(devs),
                         [w - d for w, d in zip(walls, devs)])
        return out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--n", type=int, help="points (default 4096 GPU, 1024 CPU); a small n leaves the overhead alone")
    args = ap.parse_args()
    dev = ol.get_devices(backend="cuda")[0] if args.gpu else ol.get_devices(backend="opencl")[0]
    n = args.n or (256 if args.quick else (4096 if args.gpu else 1024))
    reps = 3 if args.quick else args.reps
    print(f"device {dev.filter_string} ({dev.name}); pairwise distance n = {n}, float32; reps {reps}\n")
    t_kernel, t_prange, t_cell, t_bare, ok = in_process(dev, n, reps)
    print("(1) device time, median")
    print(f"    @ol.kernel           {t_kernel * 1e3:9.3f} ms")
    print(f"    prange (@ol.jit)     {t_prange * 1e3:9.3f} ms   ratio kernel/prange {t_kernel / t_prange:.3f}"
          f"   check {'ok' if ok else 'FAILED'}")
    print("(2) in-process wall time, median (each ends with a device synchronisation)")
    print(f"    bare @ol.kernel launch          {t_bare * 1e3:9.3f} ms   overhead {(t_bare - t_kernel) * 1e3:7.3f} ms")
    print(f"    cell code in LoopContext        {t_cell * 1e3:9.3f} ms   overhead {(t_cell - t_prange) * 1e3:7.3f} ms")
    jup = None if args.gpu else through_jupyter(dev, n, reps)
    if jup:
        print("(3) through Jupyter, execute_request to idle, median; device time measured in the kernel process")
        base = jup["pass"][0]
        for name, (wall, device, wall_minus_device) in jup.items():
            extra = "" if name == "pass" else (f"   device {device * 1e3:7.3f} ms   overhead "
                                               f"{(statistics.median(wall_minus_device) - base) * 1e3:7.3f} ms")
            print(f"    {name:<28}{wall * 1e3:9.3f} ms{extra}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
