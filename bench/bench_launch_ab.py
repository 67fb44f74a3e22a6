"""Launch overhead of two or more builds of the offload module, side by side.

A refactor must not cost launch time, and one run of bench_jit.py per build
cannot tell a change of 0.3 us from the host's noise. This takes the host
overhead per launch (bench_jit.py's part (a): 1 work-item, N launches + sync,
median of 5 batches) in fresh processes, alternating the builds round by
round, so that both see the same machine state; then prints each build's
median over the rounds, with numba-cuda's in the same processes as the peer.

    PYTHONPATH=... python3 bench/bench_launch_ab.py --build old=/tmp/base --build new=/tmp/ofl/python
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, sys
sys.path.insert(0, {here!r})
import numpy as np
import offload as ol
import bench_jit as b
dev = ol.get_devices(backend="cuda")[0]
sync = lambda: ol.synchronize(dev)
h1 = np.ones(1, np.float32)
out = {{}}
for nargs, okern, nkern in ((0, b.ol_k0, b.nb_k0), (1, b.ol_k1, b.nb_k1), (3, b.ol_k3, b.nb_k3)):
    k = ol.kernel(okern)
    arrs = [ol.asarray(h1, device=dev) for _ in range(nargs)]
    ol.call_kernel(k, ol.Range(1), *arrs)
    sync()
    out[f"offload {{nargs}}"] = b.per_launch_us(b.ol_loop_getitem(ol, k, arrs), sync, {n}, 1000)
    if {numba}:
        cuda = b.import_peers()[0]
        kn = cuda.jit(nkern)
        darrs = [cuda.to_device(h1) for _ in range(nargs)]
        out[f"numba {{nargs}}"] = b.per_launch_us(b.nb_loop(kn, darrs), cuda.synchronize, {n}, 1000)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True,
                    help="NAME=DIR: a directory holding offload*.so (repeat)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--no-numba", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    runs = {name: [] for name, _ in builds}
    for r in range(args.rounds):
        order = builds if r % 2 == 0 else builds[::-1]
        for name, path in order:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([path, HERE]))
            code = CHILD.format(here=HERE, n=args.launches, numba=not args.no_numba)
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, timeout=600)
            if p.returncode:
                sys.exit(f"{name}: child failed\n{p.stderr[-3000:]}")
            runs[name].append(json.loads(p.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[name][-1].items()),
                  flush=True)
    keys = list(runs[builds[0][0]][0])
    print(f"\nhost overhead per launch, 1 work-item, {args.launches} launches + sync, "
          f"median of 5 batches per process, then the median over {args.rounds} processes (us)")
    print(f"{'case':<12}" + "".join(f"{name:>22}" for name, _ in builds))
    for key in keys:
        cells = []
        for name, _ in builds:
            xs = [run[key] for run in runs[name]]
            cells.append(f"{statistics.median(xs):6.2f} ({min(xs):.2f}-{max(xs):.2f})")
        print(f"{key:<12}" + "".join(f"{c:>22}" for c in cells))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
