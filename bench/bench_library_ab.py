"""The array library's calls, two or more builds side by side.

A change to the library's kernels must not cost speed, and run-to-run noise
on a shared machine is as large as the changes looked for. This times each
case in fresh processes, alternating the builds round by round so that all
see the same machine state, and prints each build's median over the rounds:
the reductions (every CPU form and the tree), and the host time of a small
call. Devices: every OpenCL CPU device, or with --gpu the first CUDA one.

    python3 bench/bench_library_ab.py --build old=/tmp/old/python --build new=$PWD/python
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import numpy as np
import offload as ol
dev = ol.Device({device!r})
sync = lambda: ol.synchronize(dev)
rng = np.random.default_rng(1)
f32 = rng.random(1 << 22, dtype=np.float32)
cases = {{
    "sum 2^22 float32": (f32, lambda x: x.sum()),
    "max 2^22 float32": (f32, lambda x: x.max()),
    "argmax 2^22 float32": (f32, lambda x: x.argmax()),
    "mean 2^22 float64": (f32.astype(np.float64), lambda x: x.mean()),
    "any 2^22 bool": (f32 > 2, lambda x: x.any()),
    "sum axis 0, 2048^2 float32": (f32.reshape(2048, 2048), lambda x: x.sum(axis=0)),
    "sum axis 1, 2048^2 float32": (f32.reshape(2048, 2048), lambda x: x.sum(axis=1)),
    "min axis (0, 2), 64x256x256 int32": ((f32 * 1000).astype(np.int32).reshape(64, 256, 256),
                                          lambda x: x.min(axis=(0, 2))),
    "sum of 1000 float32 (host time)": (f32[:1000], lambda x: x.sum()),
}}
out = {{}}
for name, (h, op) in cases.items():
    x = ol.asarray(h, device=dev)
    t = time.perf_counter(); r = op(x); sync()
    first = (time.perf_counter() - t) * 1e3
    want = op(h)
    assert np.allclose(ol.asnumpy(r), want, rtol=1e-3), (name, ol.asnumpy(r), want)
    ts = []
    for _ in range({reps}):
        t = time.perf_counter(); op(x); sync(); ts.append(time.perf_counter() - t)
    out[name] = sorted(ts)[len(ts) // 2] * 1e3
print(json.dumps(out))
"""


def devices(python, path, gpu):
    code = ("import offload as ol; print('\\n'.join(d.filter_string for d in ol.get_devices("
            + ("backend='cuda'" if gpu else "device_type='cpu'") + ")))")
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.split()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, help="name=PYTHONPATH")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=41)
    ap.add_argument("--gpu", action="store_true")
    a = ap.parse_args()
    builds = dict(b.split("=", 1) for b in a.build)
    devs = devices(sys.executable, next(iter(builds.values())), a.gpu)
    for dev in devs:
        got = {name: {} for name in builds}
        for _ in range(a.rounds):
            for name, path in builds.items():
                env = dict(os.environ, PYTHONPATH=path)
                r = subprocess.run([sys.executable, "-c", CHILD.format(device=dev, reps=a.reps)],
                                   env=env, capture_output=True, text=True)
                if r.returncode:
                    sys.exit(f"{name} on {dev}: {r.stderr[-2000:]}")
                for case, ms in json.loads(r.stdout).items():
                    got[name].setdefault(case, []).append(ms)
        print(f"\n{dev}: ms a call, median of {a.reps} calls, each build's rounds in order")
        print(f"| case | " + " | ".join(builds) + " |")
        print("|---|" + "---|" * len(builds))
        for case in got[next(iter(builds))]:
            cells = [", ".join(f"{v:.3f}" for v in got[n][case]) +
                     f" (**{statistics.median(got[n][case]):.3f}**)" for n in builds]
            print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
