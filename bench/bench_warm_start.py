#!/usr/bin/env python3
"""A new process's first arrays and first kernel, with the disk caches empty (cold) and
filled by an earlier process (warm), on each CPU platform: Intel's CPU runtime (SPIR-V,
built in offload-clbuild; warm, its program binaries come from offload's binary cache,
offload/ofl_bincache.c) and PoCL (SPIR 1.2; warm, from PoCL's own kernel cache).

    PYTHONPATH=python python3 bench/bench_warm_start.py [--children 5]

Each measurement is a fresh child process of this Python with its own XDG_CACHE_HOME and
POCL_CACHE_DIR: empty for a cold run, filled by one untimed run before the warm ones.
time.perf_counter spans, from before `import offload`:
  import         import offload (and NumPy before it, untimed)
  first arrays   import, then an ol.asarray and an ol.zeros on the device and the zeros read
                 back: the device's opening, the fill kernel's JIT (or cache) and build
  first kernel   first arrays, then a saxpy kernel defined, launched and its result read back
  helpers        offload-clbuild processes the child started (0 when nothing was compiled)
Rows: cold (empty caches), il (the JIT's SPIR-V cache filled, offload's binary cache
emptied: what a warm start cost before that cache) and warm (both filled). The table
shows the median over --children runs. Results are checked (y == 2x + y) after
the clock stops. A benchmark: it asserts nothing on time.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import json, os, sys, time
from pathlib import Path
import numpy as np
t0 = time.perf_counter()
import offload as ol
t_import = time.perf_counter() - t0
devs = [d for d in ol.get_devices(device_type="cpu") if d.platform.startswith({platform!r})]
if not devs:
    print(json.dumps(None)); sys.exit()
dev = devs[0]
x = ol.asarray(np.arange(1 << 16, dtype=np.float32), device=dev)
y = ol.zeros(1 << 16, dtype=np.float32, device=dev)
y.asnumpy()
t_arrays = time.perf_counter() - t0

@ol.kernel
def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]

ol.call_kernel(saxpy, ol.Range(1 << 16), np.float32(2), x, y)
got = y.asnumpy()
t_kernel = time.perf_counter() - t0
assert np.array_equal(got, 2 * np.arange(1 << 16, dtype=np.float32)), got[:4]
helpers = 0
for stat in Path("/proc").glob("[0-9]*/stat"):
    try:
        f = stat.read_text().rsplit(")", 1)
        helpers += f[0].split("(", 1)[1] == "offload-clbuild" and int(f[1].split()[1]) == os.getpid()
    except (OSError, IndexError, ValueError):
        pass
print(json.dumps([t_import * 1e3, t_arrays * 1e3, t_kernel * 1e3, helpers]))
'''

PLATFORMS = {"Intel": "Intel(R) OpenCL", "PoCL": "Portable Computing Language"}


def child(platform: str, caches: Path) -> list | None:
    env = dict(os.environ, XDG_CACHE_HOME=str(caches / "xdg"), POCL_CACHE_DIR=str(caches / "pocl"))
    for name in ("OFFLOAD_CACHE", "OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "OFFLOAD_DEVICE"):
        env.pop(name, None)
    (caches / "xdg").mkdir(parents=True, exist_ok=True)
    (caches / "pocl").mkdir(parents=True, exist_ok=True)
    # the kernel's source must be a file: kernels are compiled from their source
    script = caches / "child.py"
    script.write_text(CHILD.format(platform=platform))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--children", type=int, default=5)
    args = ap.parse_args()
    print(f"{'platform':8} {'cache':5} {'import':>9} {'arrays':>9} {'kernel':>9} {'helpers':>7}")
    for short, platform in PLATFORMS.items():
        cold, warm = [], []
        with tempfile.TemporaryDirectory() as base:
            for i in range(args.children):
                r = child(platform, Path(base) / f"cold{i}")
                if r is None:
                    break
                cold.append(r)
            if not cold:
                print(f"{short:8} (no such device)")
                continue
            filled = Path(base) / "warm"
            child(platform, filled)  # fills the caches, untimed
            il = []
            for _ in range(args.children):
                warm.append(child(platform, filled))
                # as before the binary cache: the SPIR-V cached, every binary built again
                shutil.rmtree(filled / "xdg" / "offload" / "bin", ignore_errors=True)
                il.append(child(platform, filled))
                child(platform, filled)  # the binaries back, untimed
        for name, runs in (("cold", cold), ("il", il), ("warm", warm)):
            med = [statistics.median(r[k] for r in runs) for k in range(3)]
            helpers = max(r[3] for r in runs)
            print(f"{short:8} {name:5} {med[0]:7.1f}ms {med[1]:7.1f}ms {med[2]:7.1f}ms {helpers:7d}")


if __name__ == "__main__":
    main()
