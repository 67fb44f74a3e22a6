#!/usr/bin/env python3
"""What building in a helper process costs: Intel's CPU runtime compiles SPIR-V in
offload-clbuild (offload/ofl_buildproc.c), and this process loads the program binary it
returns; OFFLOAD_BUILD_IN_PROCESS=1 builds in the notebook's own process, as before.

    PYTHONPATH=python python3 bench/bench_build_apart.py [--children 5] [--kernels 8]

Each measurement is a fresh child process (this Python) with an empty disk cache
(OFFLOAD_CACHE=0), so that every kernel is compiled. Inside it, after `import offload` and
the device is found, time.perf_counter spans:
  arrays         an input and --kernels + 1 outputs made on the device: its opening, and the
                 builds of the fill kernels ol.zeros runs (the first build starts the helper)
  first kernel   the definition of a saxpy kernel to its result on the host: the JIT, the
                 runtime's compiler starting (and, apart, the helper starting), the build
  next kernels   each of --kernels more saxpy kernels of new source text, likewise; median
The table shows the median over --children fresh processes for each way, by turns. Results
are checked (y == 2x + y) after the clock stops. A benchmark: it asserts nothing on time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, os, sys, tempfile, time
import numpy as np, offload as ol
dev = [d for d in ol.get_devices() if d.platform == "Intel(R) OpenCL"]
if not dev:
    print(json.dumps(None)); sys.exit()
dev = dev[0]
t = time.perf_counter()
x = ol.asarray(np.ones(1 << 16, np.float32), device=dev)
ys = [ol.zeros(1 << 16, dtype=np.float32, device=dev) for _ in range({kernels} + 1)]
ol.synchronize(dev)
times = [(time.perf_counter() - t) * 1e3]
for n, y in enumerate(ys):
    src = f"def saxpy_{{n}}_{{time.time_ns()}}(item, a, x, y):\n    i = item.get_id(0)\n    y[i] = a * x[i] + y[i]\n"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(src)  # a file, as a notebook cell is: the JIT reads the function's source
    ns = {{}}
    t = time.perf_counter()
    exec(compile(src, fh.name, "exec"), ns)
    k = ol.kernel(next(v for v in ns.values() if callable(v)))
    k[ol.Range(1 << 16)](np.float32(2), x, y)
    host = ol.asnumpy(y)
    times.append((time.perf_counter() - t) * 1e3)
    os.unlink(fh.name)
    assert (host == 2.0).all(), host[:4]
print(json.dumps(times))
'''

WAYS = {"apart (default)": {}, "in process": {"OFFLOAD_BUILD_IN_PROCESS": "1"}}


def child(kernels: int, extra: dict) -> list[float] | None:
    env = dict(os.environ, OFFLOAD_CACHE="0", **extra)
    # the child runs in an empty directory: PYTHONPATH=python must still find the module
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in
                                        env.get("PYTHONPATH", "").split(os.pathsep) if p)
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([sys.executable, "-c", CHILD.format(kernels=kernels)], env=env,
                           capture_output=True, text=True, cwd=d, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"child failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--children", type=int, default=5)
    ap.add_argument("--kernels", type=int, default=8)
    ap.add_argument("--json")
    a = ap.parse_args()
    setup = {w: [] for w in WAYS}
    first = {w: [] for w in WAYS}
    later = {w: [] for w in WAYS}
    for _ in range(a.children):
        for way, extra in WAYS.items():  # by turns: the machine's load drifts
            t = child(a.kernels, extra)
            if t is None:
                print("no Intel OpenCL CPU runtime here (scripts/setup installs it on x86-64)")
                return
            setup[way].append(t[0])
            first[way].append(t[1])
            later[way].append(statistics.median(t[2:]))
    print(f"Intel's OpenCL CPU runtime, saxpy 2^16, definition -> result (ms), median of "
          f"{a.children} fresh processes")
    print(f"{'way':<18}{'arrays':>10}{'first kernel':>14}{'next kernels':>14}")
    for way in WAYS:
        print(f"{way:<18}{statistics.median(setup[way]):>10.1f}{statistics.median(first[way]):>14.1f}"
              f"{statistics.median(later[way]):>14.1f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"arrays": setup, "first": first, "later": later}, f)


if __name__ == "__main__":
    main()
