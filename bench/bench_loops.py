#!/usr/bin/env python3
"""Benchmark: prange loops (@ol.jit, the rewrite %%offload cells use) against NumPy on CPU
devices and CuPy on a GPU, in the same run, and maps against the same body as an
@ol.kernel (issue 37, items 1 and 2).

    PYTHONPATH=<build>/python python3 bench/bench_loops.py                 # every CPU device
    PYTHONPATH=<build>/python python3 bench/bench_loops.py --device opencl:cpu:1
    PYTHONPATH=<build>/python python3 bench/bench_loops.py --gpu           # cuda:gpu:0 vs CuPy
    ... --sizes 20,24 --reps 15 --quick

A benchmark, not a test: it asserts nothing about speed, but every result is checked
against NumPy. Arrays live on the device (offload arrays), so a call's time is its
launches, the reductions' read back and the host's work around them: what a user's loop
costs. Each row is the median of --reps calls after a warm-up, ol.synchronize() inside
the clock; ratio = peer time / loop time (> 1: the loop is faster).

Rows (n = 2**size float32 and float64 elements):
  sum      total += x[i]                        peer x.sum() (on a GPU also float(x.sum()))
  sum2d    the same over an (n/1024, 1024) view, two nested pranges   peer x.sum()
  min/max  m = min(m, x[i]) / max                peer x.min() / x.max()
  dot      s += x[i] * y[i]                     peer x @ y
  map      y[i] = x[i] * 2 + 1                  peer x * 2 + 1; and the @ol.kernel
  map2d    out[i, j] = m[i, j] * 2 + 1          peer; and the @ol.kernel
  map3d    over an (n/4096, 64, 64) view        peer; and the @ol.kernel
  stencil  out[i] = (x[i-1] + x[i] + x[i+1]) / 3  peer (x[:-2] + x[1:-1] + x[2:]) / 3
  mandel   notebook 06's Mandelbrot, 480 x 720, 64 iterations  (NumPy: its masked loop)
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import time

import numpy as np

import offload as ol
from offload import prange

MAXIT = 64


@ol.jit
def loop_sum(x):
    total = 0.0
    for i in prange(x.shape[0]):
        total += x[i]
    return total


@ol.jit
def loop_sum2d(m):
    total = 0.0
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            total += m[i, j]
    return total


@ol.jit
def loop_min(x):
    m = math.inf
    for i in prange(x.shape[0]):
        m = min(m, x[i])
    return m


@ol.jit
def loop_max(x):
    m = -math.inf
    for i in prange(x.shape[0]):
        m = max(m, x[i])
    return m


@ol.jit
def loop_dot(x, y):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * y[i]
    return s


@ol.jit
def loop_map(x, y):
    for i in prange(x.shape[0]):
        y[i] = x[i] * 2 + 1


@ol.jit
def loop_map2d(m, out):
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            out[i, j] = m[i, j] * 2 + 1


@ol.jit
def loop_map3d(c, out):
    for i in prange(c.shape[0]):
        for j in prange(c.shape[1]):
            for k in prange(c.shape[2]):
                out[i, j, k] = c[i, j, k] * 2 + 1


@ol.jit
def loop_stencil(x, out):
    for i in prange(1, x.shape[0] - 1):
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3


@ol.jit
def loop_mandel(xs, ys, counts):
    for r in prange(ys.shape[0]):
        for c in prange(xs.shape[0]):
            x0 = xs[c]
            y0 = ys[r]
            x = np.float32(0)
            y = np.float32(0)
            k = 0
            while k < MAXIT and x * x + y * y <= 4:
                x, y = x * x - y * y + x0, 2 * x * y + y0
                k += 1
            counts[r, c] = k


@ol.kernel
def kernel_map(item, x, y):
    i = item.get_id(0)
    y[i] = x[i] * 2 + 1


@ol.kernel
def kernel_map2d(item, m, out):
    i, j = item.get_id(0), item.get_id(1)
    out[i, j] = m[i, j] * 2 + 1


@ol.kernel
def kernel_map3d(item, c, out):
    i, j, k = item.get_id(0), item.get_id(1), item.get_id(2)
    out[i, j, k] = c[i, j, k] * 2 + 1


def mandel_numpy(xs, ys, counts):
    c = (xs[None, :] + 1j * ys[:, None]).astype(np.complex64)
    z = np.zeros_like(c)
    counts[:] = MAXIT
    alive = np.ones(c.shape, dtype=bool)
    for k in range(MAXIT):
        z[alive] = z[alive] * z[alive] + c[alive]
        escaped = alive & (z.real * z.real + z.imag * z.imag > 4)
        counts[escaped] = k + 1
        alive &= ~escaped


def median_ms(fn, reps, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


class Peer:
    """NumPy on the host for CPU devices, CuPy for a GPU (arrays already there)."""

    def __init__(self, gpu):
        self.gpu = gpu
        if gpu:
            import cupy

            self.xp, self.name = cupy, "CuPy"
            self.sync = cupy.cuda.Device().synchronize
        else:
            self.xp, self.name = np, "NumPy"
            self.sync = lambda: None

    def asarray(self, a):
        return self.xp.asarray(a)


def row(name, dtype, n, ms, peer_ms, peer, kernel_ms=None, note=""):
    extra = f"  @ol.kernel {kernel_ms:8.3f} ms ({kernel_ms / ms:4.2f})" if kernel_ms else ""
    extra += f"  ({note})" if note else ""
    print(f"  {name:8s} {np.dtype(dtype).name:8s} 2^{int(math.log2(n)):<3d} loop {ms:8.3f} ms  "
          f"{peer.name} {peer_ms:8.3f} ms  ratio {peer_ms / ms:5.2f}{extra}", flush=True)


def close(got, want, n, dtype):
    tol = 1e-4 * max(1, math.sqrt(n) / 100) if np.dtype(dtype) == np.float32 else 1e-9
    assert abs(float(got) - float(want)) <= tol * max(1.0, abs(float(want))), (got, want)


def run_device(dev, sizes, reps, peer):
    info = ol.Device(dev)
    print(f"\n{dev}: {info.name} ({info.driver_version}); peer {peer.name}", flush=True)
    sync = lambda: (ol.synchronize(), peer.sync())  # noqa: E731
    rng = np.random.default_rng(1)
    for size in sizes:
        n = 2**size
        for dtype in (np.float32, np.float64):
            if dtype == np.float64 and not info.has_fp64:
                continue
            h, hy = rng.random(n).astype(dtype), rng.random(n).astype(dtype)
            x, y, out = ol.asarray(h, device=dev), ol.asarray(hy, device=dev), ol.empty(n, dtype=dtype,
                                                                                        device=dev)
            px, py = peer.asarray(h), peer.asarray(hy)
            want = h.astype(np.float64).sum()
            close(loop_sum(x), want, n, dtype)
            peer_sum = median_ms(lambda: px.sum(), reps, sync)
            loop_ms = median_ms(lambda: loop_sum(x), reps, sync)
            row("sum", dtype, n, loop_ms, peer_sum, peer)
            if peer.gpu:  # the loop returns a host number; CuPy's x.sum() a device scalar
                row("sum", dtype, n, loop_ms, median_ms(lambda: float(px.sum()), reps, sync),
                    peer, note="peer float(x.sum())")
            m = x.reshape((n // 1024, 1024))
            close(loop_sum2d(m), want, n, dtype)
            row("sum2d", dtype, n, median_ms(lambda: loop_sum2d(m), reps, sync), peer_sum, peer)
            assert loop_min(x) == h.min() and loop_max(x) == h.max()
            row("min", dtype, n, median_ms(lambda: loop_min(x), reps, sync),
                median_ms(lambda: px.min(), reps, sync), peer)
            row("max", dtype, n, median_ms(lambda: loop_max(x), reps, sync),
                median_ms(lambda: px.max(), reps, sync), peer)
            close(loop_dot(x, y), h.astype(np.float64) @ hy.astype(np.float64), n, dtype)
            row("dot", dtype, n, median_ms(lambda: loop_dot(x, y), reps, sync),
                median_ms(lambda: px @ py, reps, sync), peer)
            loop_map(x, out)
            np.testing.assert_allclose(ol.asnumpy(out), h * 2 + 1, rtol=1e-6)
            r1 = ol.Range(n)
            row("map", dtype, n, median_ms(lambda: loop_map(x, out), reps, sync),
                median_ms(lambda: px * 2 + 1, reps, sync), peer,
                median_ms(lambda: kernel_map[r1](x, out), reps, sync))
            m2, o2 = x.reshape((n // 1024, 1024)), out.reshape((n // 1024, 1024))
            pm2 = px.reshape((n // 1024, 1024))
            loop_map2d(m2, o2)
            np.testing.assert_allclose(ol.asnumpy(o2), h.reshape(-1, 1024) * 2 + 1, rtol=1e-6)
            r2 = ol.Range(n // 1024, 1024)
            row("map2d", dtype, n, median_ms(lambda: loop_map2d(m2, o2), reps, sync),
                median_ms(lambda: pm2 * 2 + 1, reps, sync), peer,
                median_ms(lambda: kernel_map2d[r2](m2, o2), reps, sync))
            m3, o3 = x.reshape((n // 4096, 64, 64)), out.reshape((n // 4096, 64, 64))
            pm3 = px.reshape((n // 4096, 64, 64))
            loop_map3d(m3, o3)
            np.testing.assert_allclose(ol.asnumpy(o3), h.reshape(-1, 64, 64) * 2 + 1, rtol=1e-6)
            r3 = ol.Range(n // 4096, 64, 64)
            row("map3d", dtype, n, median_ms(lambda: loop_map3d(m3, o3), reps, sync),
                median_ms(lambda: pm3 * 2 + 1, reps, sync), peer,
                median_ms(lambda: kernel_map3d[r3](m3, o3), reps, sync))
            loop_stencil(x, out)
            np.testing.assert_allclose(ol.asnumpy(out)[1:-1], (h[:-2] + h[1:-1] + h[2:]) / 3,
                                       rtol=1e-5)
            row("stencil", dtype, n, median_ms(lambda: loop_stencil(x, out), reps, sync),
                median_ms(lambda: (px[:-2] + px[1:-1] + px[2:]) / 3, reps, sync), peer)
    xs = np.linspace(-2.2, 0.8, 720, dtype=np.float32)
    ys = np.linspace(-1.2, 1.2, 480, dtype=np.float32)
    counts = np.full((480, 720), -1, dtype=np.int32)
    dxs, dys, dcounts = ol.asarray(xs, device=dev), ol.asarray(ys, device=dev), ol.asarray(counts,
                                                                                             device=dev)
    loop_mandel(dxs, dys, dcounts)
    mandel_numpy(xs, ys, counts)
    same = (ol.asnumpy(dcounts) == counts).mean()
    assert same > 0.999, same
    loop_ms = median_ms(lambda: loop_mandel(dxs, dys, dcounts), reps, sync)
    numpy_ms = median_ms(lambda: mandel_numpy(xs, ys, counts), max(3, reps // 5), lambda: None)
    print(f"  mandel   480 x 720, 64 iterations: loop {loop_ms:8.3f} ms  NumPy {numpy_ms:8.3f} ms  "
          f"ratio {numpy_ms / loop_ms:5.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", action="append", help="a device filter (repeatable); default: every CPU device")
    ap.add_argument("--gpu", action="store_true", help="cuda:gpu:0 against CuPy")
    ap.add_argument("--sizes", default=None, help="log2 sizes, comma-separated (default 20,22,24; GPU 20,24,26)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="one small size, 3 reps: a smoke test")
    a = ap.parse_args()
    sizes = [int(s) for s in (a.sizes or ("20,24,26" if a.gpu else "20,22,24")).split(",")]
    if a.quick:
        sizes, a.reps = [16], 3
    devices = a.device or (["cuda:gpu:0"] if a.gpu else
                           [d.filter_string for d in ol.get_devices(device_type="cpu")])
    print(f"bench_loops: {platform.node()}, {platform.processor() or platform.machine()}, "
          f"numpy {np.__version__}, python {sys.version.split()[0]}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}, median of {a.reps}")
    peer = Peer(a.gpu)
    for dev in devices:
        run_device(dev, sizes, a.reps, peer)


if __name__ == "__main__":
    main()
