"""CPU devices side by side: offload on every OpenCL CPU platform it sees (PoCL
through SPIR 1.2, Intel's CPU runtime through SPIR-V as IL), numba-dpex on
Intel's runtime, and NumPy, in one run on one machine.

    python3 bench/bench_cpu.py [--ndpex /tmp/ndpex-venv] [--reps 21] [--json out.json]

numba-dpex 0.23 (the last release) needs the 2024.2 oneAPI stack in a venv of
its own (../shared/tools/peer-numba-dpex.sh): it runs there as a child process,
given the same kernel source and the same inputs (bench_jit.make_case, fixed
seed), and its results are checked against the same float64 references.

Every time is the host's clock around launch + wait (or the array operation +
synchronize), median of --reps after warm-up, in ms unless the row says us. The
array operations run on every CPU device and in NumPy by turns, op by op.
offload's kernels are timed twice: as a user gets them (index checks on, the
default on CPU devices) and with @kernel(boundscheck=False), which is what
numba-dpex runs (it has no index checks).
"""
from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_jit as bj  # noqa: E402  (kernels, inputs and references shared with the GPU bench)

KERNELS = {  # name -> (offload function, size, extra make_case arguments)
    "vadd": (bj.ol_vadd, 1 << 24, {}),
    "saxpy": (bj.ol_saxpy, 1 << 24, {}),
    "black_scholes": (bj.ol_black_scholes, 1 << 22, {}),
    "pairwise_distance": (bj.ol_pairwise_distance, 2048, {"m": 2048, "dims": 3}),
}


def med(xs):
    return statistics.median(xs) * 1e3


def timed(fn, sync, reps, warm=3):
    for _ in range(warm):
        fn()
    sync()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t)
    return out


# ---------------------------------------------------------------- offload

def ol_kernel_ms(ol, dev, name, reps, boundscheck):
    fn, n, kw = KERNELS[name]
    case = bj.make_case(name, n, np.float32, **kw)
    k = ol.kernel(boundscheck=boundscheck)(fn)
    arrs = {a: ol.asarray(v, device=dev) for a, v in case.arrays.items()}
    args = bj.launch_args(case, arrs)
    r = ol.Range(*case.shape)
    ts = timed(lambda: k[r](*args), lambda: ol.synchronize(dev), reps)
    # saxpy updates y in place: check one launch from fresh inputs
    arrs = {a: ol.asarray(v, device=dev) for a, v in case.arrays.items()}
    k[r](*bj.launch_args(case, arrs))
    err, _ = bj.check({o: ol.asnumpy(arrs[o]) for o in case.outs}, case.ref, np.float32)
    return med(ts), err


# (label, operation) over 1-D arrays x, y of 2^22 and 2^24 float32, then over a
# 2048 x 2048 float32 matrix m, then a 1024^2 product; the same code runs on offload
# arrays and NumPy's.
VECTOR_OPS = [("x * 4 + 1", lambda x, y: x * 4 + 1), ("x + y", lambda x, y: x + y),
              ("x.sum()", lambda x, y: x.sum()), ("x.max()", lambda x, y: x.max()),
              ("x.argmax()", lambda x, y: x.argmax())]
MATRIX_OPS = [("m.sum(axis=0), 2048^2", lambda m: m.sum(axis=0)),
              ("m.sum(axis=1), 2048^2", lambda m: m.sum(axis=1))]


def array_ops(places, reps, rounds=3):
    """Medians (ms) of every VECTOR_OPS and MATRIX_OPS row on each place (name ->
    (to_dev, sync); to_dev puts a NumPy array there, the identity for NumPy itself).
    The places take turns op by op, rounds times: this machine's bandwidth and cache
    move by 10-40 % between minutes, and turns put that on all places alike."""
    out = {name: {} for name in places}
    rng = np.random.default_rng(1)

    def row(label, hosts, op, reps):
        args = {name: [to_dev(h) for h in hosts] for name, (to_dev, _) in places.items()}
        ts = {name: [] for name in places}
        for _ in range(rounds):
            for name, (_, sync) in places.items():
                ts[name] += timed(lambda: op(*args[name]), sync, max(1, reps // rounds))
        for name in places:
            out[name][label] = med(ts[name])

    for n in (1 << 22, 1 << 24):
        hosts = [rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)]
        for label, op in VECTOR_OPS:
            row(f"{label}, 2^{n.bit_length() - 1}", hosts, op, reps)
    m = rng.random((2048, 2048), dtype=np.float32)
    for label, op in MATRIX_OPS:
        row(label, [m], op, reps)
    row("a @ b, 1024^2", [rng.random((1024, 1024), dtype=np.float32)], lambda a: a @ a,
        max(3, reps // 4))
    return out


def ol_place(ol, dev):
    return (lambda h: ol.asarray(h, device=dev), lambda: ol.synchronize(dev))


NUMPY_PLACE = (lambda h: h, lambda: None)


def ol_transfers_ms(ol, dev, reps):
    """ol.asarray to the device and ol.asnumpy back of 2^25 float32 (128 MiB), against
    NumPy's own copy of the same array: a CPU device's memory is the host's."""
    h = np.random.default_rng(3).random(1 << 25, dtype=np.float32)
    sync = lambda: ol.synchronize(dev)  # noqa: E731
    x = ol.asarray(h, device=dev)
    return {"asarray": med(timed(lambda: ol.asarray(h, device=dev), sync, max(3, reps // 3))),
            "asnumpy": med(timed(lambda: ol.asnumpy(x), sync, max(3, reps // 3))),
            "np.copy": med(timed(lambda: h.copy(), lambda: None, max(3, reps // 3)))}


def ol_launch_us(ol, dev, reps, after_blas=False):
    if after_blas:  # NumPy's OpenBLAS on the device's mapped buffers, as `a @ b` runs
        a = ol.asarray(np.random.default_rng(4).random((1024, 1024), dtype=np.float32), device=dev)
        a @ a
    k = ol.kernel(bj.ol_vadd)
    a = ol.zeros(1024, dtype=np.float32, device=dev)
    r = ol.Range(1024)
    ts = timed(lambda: k[r](a, a, a), lambda: ol.synchronize(dev), reps * 20)
    return med(ts) * 1e3


def ol_new_kernel_ms(ol, dev, tag):
    """A kernel never seen before (fresh source text, so no cache can hold it), from
    definition to the result on the host, in this warm process."""
    src = f"def saxpy_{tag}(item, a, x, y):\n    i = item.get_id(0)\n    y[i] = a * x[i] + y[i]\n"
    # a file, as a notebook cell would be: the JIT reads the function's source
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(src)
    ns = {}
    x = ol.asarray(np.ones(1 << 20, np.float32), device=dev)
    y = ol.zeros(1 << 20, dtype=np.float32, device=dev)
    t = time.perf_counter()
    exec(compile(src, fh.name, "exec"), ns)
    k = ol.kernel(ns[f"saxpy_{tag}"])
    k[ol.Range(1 << 20)](np.float32(2), x, y)
    host = ol.asnumpy(y)
    ms = (time.perf_counter() - t) * 1e3
    os.unlink(fh.name)
    assert host[0] == 2.0
    return ms


def loop_axpb(x, y):
    import offload as ol
    for i in ol.prange(x.shape[0]):
        y[i] = x[i] * 4 + 1


def ol_loop_ms(ol, dev, reps):
    """An @ol.jit prange loop (what a %%offload cell runs) over NumPy arrays: their trip
    to the device and back included, as a user's cell has it."""
    axpb = ol.jit(loop_axpb)
    n = 1 << 24
    x = np.random.default_rng(2).random(n, dtype=np.float32)
    y = np.full(n, np.nan, np.float32)
    before = ol.default_device()
    ol.set_default_device(dev)  # NumPy arrays go to the default device
    try:
        ts = timed(lambda: axpb(x, y), lambda: None, max(3, reps // 3))
    finally:
        ol.set_default_device(before)
    assert np.array_equal(y, x * np.float32(4) + np.float32(1))
    return med(ts)


# ---------------------------------------------------------------- numba-dpex, in its venv

NDPEX_CHILD = r'''
import json, math, statistics, sys, time
sys.path.insert(0, {here!r})
import numpy as np, dpnp, dpctl, numba_dpex as dpex
import bench_jit as bj
reps = {reps}
out = {{"device": dpctl.select_default_device().name, "kernels": {{}}}}
SRC = {sources!r}
KW = {kw!r}
SIZES = {sizes!r}
for name, src in SRC.items():
    ns = {{"math": math}}
    exec(src, ns)
    k = dpex.kernel(ns["ol_" + name])
    case = bj.make_case(name, SIZES[name], np.float32, **KW[name])
    arrs = {{a: dpnp.asarray(v) for a, v in case.arrays.items()}}
    args = bj.launch_args(case, arrs)
    q = arrs[case.outs[0]].sycl_queue
    r = dpex.Range(*case.shape)
    for _ in range(3):
        dpex.call_kernel(k, r, *args)
    q.wait()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); dpex.call_kernel(k, r, *args); q.wait(); ts.append(time.perf_counter() - t)
    arrs = {{a: dpnp.asarray(v) for a, v in case.arrays.items()}}
    dpex.call_kernel(k, r, *bj.launch_args(case, arrs)); q.wait()
    err, _ = bj.check({{o: dpnp.asnumpy(arrs[o]) for o in case.outs}}, case.ref, np.float32)
    out["kernels"][name] = [statistics.median(ts) * 1e3, err]
# launch: n = 1024, launch + wait
ns = {{}}
exec(SRC["vadd"], ns)
k = dpex.kernel(ns["ol_vadd"])
a = dpnp.zeros(1024, dtype=np.float32); q = a.sycl_queue
for _ in range(50):
    dpex.call_kernel(k, dpex.Range(1024), a, a, a)
q.wait()
ts = []
for _ in range(reps * 20):
    t = time.perf_counter(); dpex.call_kernel(k, dpex.Range(1024), a, a, a); q.wait(); ts.append(time.perf_counter() - t)
out["launch_us"] = statistics.median(ts) * 1e6
# a new kernel from definition to result (fresh source: no cache holds it), median of 3
x = dpnp.ones(1 << 20, dtype=np.float32); y = dpnp.zeros(1 << 20, dtype=np.float32)
ts = []
for _ in range(3):
    src = "def saxpy_new(item, a, x, y):\n    i = item.get_id(0)\n    y[i] = a * x[i] + y[i]  # %d\n" % time.time_ns()
    t = time.perf_counter()
    ns = {{}}
    exec(src, ns)
    k = dpex.kernel(ns["saxpy_new"])
    dpex.call_kernel(k, dpex.Range(1 << 20), np.float32(2), x, y)
    host = dpnp.asnumpy(y)
    ts.append((time.perf_counter() - t) * 1e3)
out["new_kernel_ms"] = statistics.median(ts)
print("@@JSON" + json.dumps(out))
'''


def run_ndpex(venv, reps):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        return {"error": f"no numba-dpex venv at {venv} (bash ../shared/tools/peer-numba-dpex.sh {venv})"}
    code = NDPEX_CHILD.format(
        here=HERE, reps=reps,
        sources={name: textwrap.dedent(inspect.getsource(fn)) for name, (fn, _, _) in KERNELS.items()},
        kw={name: kw for name, (_, _, kw) in KERNELS.items()},
        sizes={name: n for name, (_, n, _) in KERNELS.items()})
    env = dict(os.environ, OCL_ICD_VENDORS=os.path.join(venv, "opencl-vendors-intel"),
               LD_LIBRARY_PATH=os.path.join(venv, "lib"))
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([py, "-c", code], env=env, capture_output=True, text=True, cwd=tmp,
                           timeout=1800)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("@@JSON")), None)
    if p.returncode or not line:
        return {"error": (p.stderr or p.stdout)[-2000:]}
    return json.loads(line[6:])


# ---------------------------------------------------------------- tables

def table(title, heads, rows):
    print(f"\n{title}")
    widths = [max(len(str(r[i])) for r in [heads] + rows) for i in range(len(heads))]
    for r in [heads, ["-" * w for w in widths]] + rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))))


def f(v, p=2):
    return "-" if v is None else f"{v:.{p}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ndpex", default="/tmp/ndpex-venv", help="the numba-dpex venv")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--json")
    args = ap.parse_args()

    import offload as ol
    devs = [d for d in ol.get_devices(device_type="cpu") if d.backend == "opencl"]
    label = {d.filter_string: f"{d.filter_string} ({'SPIR-V IL' if d.il_version else 'SPIR 1.2'})"
             for d in devs}
    print(f"bench_cpu.py -- {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, numpy {np.__version__}")
    for d in devs:
        print(f"  {d.filter_string}: {d.name} [{d.driver_version}] {d.version}"
              f"{'  (default)' if d.filter_string == ol.default_device().filter_string else ''}")
    res = {"devices": list(label.values()), "offload": {}}

    nd = run_ndpex(args.ndpex, args.reps)
    res["numba_dpex"] = nd
    print(f"  numba-dpex 0.23 on {nd.get('device', '?')}" if "error" not in nd
          else f"  numba-dpex: not run: {nd['error'][:300]}")

    for d in devs:
        fs = d.filter_string
        r = res["offload"][fs] = {"kernels": {}, "kernels_nocheck": {}}
        for name in KERNELS:
            r["kernels"][name] = ol_kernel_ms(ol, d, name, args.reps, True)
            r["kernels_nocheck"][name] = ol_kernel_ms(ol, d, name, args.reps, False)
        r["launch_us"] = ol_launch_us(ol, d, args.reps)
        r["launch_after_blas_us"] = ol_launch_us(ol, d, args.reps, after_blas=True)
        r["transfers_ms"] = ol_transfers_ms(ol, d, args.reps)
        r["new_kernel_ms"] = statistics.median(
            ol_new_kernel_ms(ol, d, f"{fs.replace(':', '_')}_{time.time_ns()}") for _ in range(3))
        r["loop_ms"] = ol_loop_ms(ol, d, args.reps)
    ops = array_ops({**{d.filter_string: ol_place(ol, d) for d in devs}, "numpy": NUMPY_PLACE},
                    args.reps)
    res["numpy"] = ops.pop("numpy")
    for fs, r in ops.items():
        res["offload"][fs]["array_ops"] = r

    # (a) kernels
    heads = ["kernel (ms)"] + [f"{label[d.filter_string]} checks / none" for d in devs] + \
        ["numba-dpex (Intel)", "ratio numba-dpex / offload Intel, none", "max rel err offload", "numba-dpex"]
    rows = []
    il = next((d.filter_string for d in devs if d.il_version), None)
    for name in KERNELS:
        row = [name]
        errs = []
        for d in devs:
            r = res["offload"][d.filter_string]
            (a, e1), (b, e2) = r["kernels"][name], r["kernels_nocheck"][name]
            row.append(f"{f(a)} / {f(b)}")
            errs += [e1, e2]
        nk = nd.get("kernels", {}).get(name)
        peer_ok = nk and nk[1] <= 1e-5
        row.append((f(nk[0]) + ("" if peer_ok else " (wrong)")) if nk else "-")
        mine = res["offload"][il]["kernels_nocheck"][name][0] if il else None
        row.append(f(nk[0] / mine) if nk and mine and peer_ok else "-")
        row.append(f"{max(errs):.1e}")
        row.append(f"{nk[1]:.1e}" if nk else "-")
        rows.append(row)
    n_desc = ", ".join(f"{k} {('%d x %d' % (n, kw['m'])) if 'm' in kw else '2^%d' % (n.bit_length() - 1)}"
                       for k, (_, n, kw) in KERNELS.items())
    table(f"(a) kernels, float32 ({n_desc}); launch + wait, median of {args.reps}", heads, rows)

    # (b) array operations
    heads = ["operation (ms)"] + [label[d.filter_string] for d in devs] + ["NumPy"] + \
        [f"NumPy / {d.filter_string}" for d in devs]
    rows = []
    for op, npt in res["numpy"].items():
        mine = [res["offload"][d.filter_string]["array_ops"][op] for d in devs]
        rows.append([op] + [f(v) for v in mine] + [f(npt)] + [f(npt / v) for v in mine])
    table("(b) array operations on device arrays, + synchronize, the places taking turns (ratio > 1: offload faster)", heads, rows)

    # (c) launch, new kernel, loop
    heads = ["measure"] + [label[d.filter_string] for d in devs] + ["numba-dpex (Intel)", "NumPy"]
    rows = [
        ["launch + wait, n = 1024 (us)"] + [f(res["offload"][d.filter_string]["launch_us"], 1) for d in devs]
        + [f(nd.get("launch_us"), 1), "-"],
        ["the same right after a @ b (OpenBLAS's idle threads still spin) (us)"]
        + [f(res["offload"][d.filter_string]["launch_after_blas_us"], 1) for d in devs] + ["-", "-"],
        ["new saxpy kernel, definition -> result, warm process, median of 3 (ms)"]
        + [f(res["offload"][d.filter_string]["new_kernel_ms"], 1) for d in devs]
        + [f(nd.get("new_kernel_ms"), 1), "-"],
        ["ol.asarray of 2^25 float32 (128 MiB) (ms)"]
        + [f(res["offload"][d.filter_string]["transfers_ms"]["asarray"]) for d in devs]
        + ["-", "np.copy " + f(res["offload"][devs[0].filter_string]["transfers_ms"]["np.copy"])],
        ["ol.asnumpy of the same (ms)"]
        + [f(res["offload"][d.filter_string]["transfers_ms"]["asnumpy"]) for d in devs] + ["-", "-"],
        ["@ol.jit prange loop y = x*4+1 on NumPy arrays, 2^24 (ms)"]
        + [f(res["offload"][d.filter_string]["loop_ms"]) for d in devs]
        + ["-", f(res["numpy"]["x * 4 + 1, 2^24"])],
    ]
    table("(c) launch, a new kernel, a loop over NumPy arrays", heads, rows)

    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
