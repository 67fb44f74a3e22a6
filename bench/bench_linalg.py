#!/usr/bin/env python3
"""Benchmark: dense linear algebra and FFTs (issue 23) -- offload against CuPy on an
NVIDIA GPU (both through cuBLAS, cuSOLVER and cuFFT), against NumPy on a CPU device.

    PYTHONPATH=<build>/python python3 bench/bench_linalg.py --gpu      # cuda:gpu:0 vs CuPy
    PYTHONPATH=<build>/python python3 bench/bench_linalg.py            # the CPU device vs NumPy
    PYTHONPATH=<build>/python python3 bench/bench_linalg.py --quick    # small sizes, smoke test

A benchmark, not a test: it asserts nothing about speed. Every result is checked against
NumPy (float64 where the case allows) after timing; a failed check marks its row FAILED.

Cases. GPU: matmul n x n float32 at 1024, 2048, 4096, 8192 (cuBLAS; TF32 off on both
sides), the same at 4096 through offload's own kernel (OFFLOAD_MATMUL=kernel: TFLOP/s,
issue 23 wants >= 1.5 x the 21 TFLOP/s it had without a fused multiply-add), solve 4096^2
float32 with one right-hand side column block of 1, svd 2048^2 float32 (all of U, S, Vh),
eigh 2048^2 float32, fft of 2^24 complex64, rfft of 2^24 float32. CPU: matmul float32 at
512, 1024, 2048, solve 1024^2 float64, fft of 2^20 complex128 and rfft of 2^20 float64.
Inputs come from a fixed seed; symmetric ones for eigh, diagonally dominant ones for solve.

Timing: each case runs three times (plans, handles, pools), then --reps calls back to back
and one synchronisation, on both sides: seconds per call, what a user's loop of calls gets.
ratio = peer time / offload time (> 1: offload faster). Targets (issue 23 item 7, on the
H100): matmul >= 0.95, solve >= 0.9, svd >= 0.9, eigh >= 0.9, fft >= 0.9, rfft >= 0.9;
on the CPU device against NumPy, matmul >= 0.9 at 512-2048.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import offload as ol

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_arrays import wall_per_call as per_call  # noqa: E402  (TF32 off for CuPy there too)


def host(x):
    return x if isinstance(x, np.ndarray) else (ol.asnumpy(x) if isinstance(x, ol.ndarray) else x.get())


def gpu_cases(rng, quick):
    f32 = np.float32
    mm = [256, 512] if quick else [1024, 2048, 4096, 8192]
    for n in mm:
        a, b = rng.uniform(-1, 1, (n, n)).astype(f32), rng.uniform(-1, 1, (n, n)).astype(f32)
        yield (f"matmul {n}^2 f32", 2.0 * n ** 3, (a, b), lambda xp, a, b: xp.matmul(a, b),
               lambda a, b, r: np.abs(r - a.astype(np.float64) @ b).max() <= 1e-5 * n, None)
    n = 512 if quick else 4096
    a, b = rng.uniform(-1, 1, (n, n)).astype(f32), rng.uniform(-1, 1, (n, n)).astype(f32)
    yield (f"matmul {n}^2 f32, kernel", 2.0 * n ** 3, (a, b), lambda xp, a, b: xp.matmul(a, b),
           lambda a, b, r: np.abs(r - a.astype(np.float64) @ b).max() <= 1e-5 * n, "kernel")
    a = rng.uniform(-1, 1, (n, n)).astype(f32) + n * np.eye(n, dtype=f32)
    b = rng.uniform(-1, 1, (n, 1)).astype(f32)
    yield (f"solve {n}^2 f32", 2.0 / 3 * n ** 3, (a, b), lambda xp, a, b: xp.linalg.solve(a, b),
           lambda a, b, r: np.abs(a.astype(np.float64) @ r - b).max() <= 1e-3, None)
    n = 256 if quick else 2048
    a = rng.uniform(-1, 1, (n, n)).astype(f32)
    yield (f"svd {n}^2 f32", None, (a,), lambda xp, a: xp.linalg.svd(a),
           lambda a, r: np.allclose((r[0] * r[1]) @ r[2], a, atol=1e-3), None)
    s = (a + a.T) / 2
    yield (f"eigh {n}^2 f32", None, (s,), lambda xp, a: xp.linalg.eigh(a),
           lambda a, r: np.allclose(r[0], np.linalg.eigvalsh(a.astype(np.float64)), atol=1e-3), None)
    n = 1 << (16 if quick else 24)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    yield (f"fft 2^{n.bit_length() - 1} c64", None, (x,), lambda xp, x: xp.fft.fft(x),
           lambda x, r: np.abs(r - np.fft.fft(x.astype(np.complex128))).max() <= 1e-3 * np.sqrt(n), None)
    x = rng.standard_normal(n).astype(f32)
    yield (f"rfft 2^{n.bit_length() - 1} f32", None, (x,), lambda xp, x: xp.fft.rfft(x),
           lambda x, r: np.abs(r - np.fft.rfft(x.astype(np.float64))).max() <= 1e-3 * np.sqrt(n), None)


def cpu_cases(rng, quick):
    f32 = np.float32
    for n in ([128, 256] if quick else [512, 1024, 2048]):
        a, b = rng.uniform(-1, 1, (n, n)).astype(f32), rng.uniform(-1, 1, (n, n)).astype(f32)
        yield (f"matmul {n}^2 f32", 2.0 * n ** 3, (a, b), lambda xp, a, b: xp.matmul(a, b),
               lambda a, b, r: np.abs(r - a.astype(np.float64) @ b).max() <= 1e-5 * n, None)
    n = 256 if quick else 1024
    a = rng.uniform(-1, 1, (n, n)) + n * np.eye(n)
    b = rng.uniform(-1, 1, (n, 1))
    yield (f"solve {n}^2 f64", 2.0 / 3 * n ** 3, (a, b), lambda xp, a, b: xp.linalg.solve(a, b),
           lambda a, b, r: np.abs(a @ r - b).max() <= 1e-9, None)
    n = 1 << (14 if quick else 20)
    x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    yield (f"fft 2^{n.bit_length() - 1} c128", None, (x,), lambda xp, x: xp.fft.fft(x),
           lambda x, r: np.abs(r - np.fft.fft(x)).max() <= 1e-9 * np.sqrt(n), None)
    x = rng.standard_normal(n)
    yield (f"rfft 2^{n.bit_length() - 1} f64", None, (x,), lambda xp, x: xp.fft.rfft(x),
           lambda x, r: np.abs(r - np.fft.rfft(x)).max() <= 1e-9 * np.sqrt(n), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", action="store_true", help="cuda:gpu:0 against CuPy")
    ap.add_argument("--device", help="an offload device filter (default: cuda:gpu:0 with --gpu)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    dev = (ol.Device(args.device) if args.device else
           ol.get_devices(backend="cuda")[0] if args.gpu else ol.default_device())
    rng = np.random.default_rng(23)
    if args.gpu:
        import cupy as cp
        peer, peer_name = cp, "CuPy"
        to_peer, peer_sync = cp.asarray, cp.cuda.Device().synchronize
    else:
        peer, peer_name = np, "NumPy"
        to_peer, peer_sync = (lambda a: a), (lambda: None)
    print(f"offload on {dev.filter_string} ({dev.name}) against {peer_name} {peer.__version__}, "
          f"{args.reps} calls per case", flush=True)
    print(f"{'case':28} {'offload ms':>11} {peer_name + ' ms':>10} {'ratio':>6} {'GFLOP/s':>9}  check")
    for name, flop, data, fn, ok, env in (gpu_cases if args.gpu else cpu_cases)(rng, args.quick):
        if env:
            os.environ["OFFLOAD_MATMUL"] = env
        xs = [ol.asarray(d, device=dev) for d in data]
        t_ol, r_ol = per_call(lambda: fn(ol, *xs), lambda: ol.synchronize(dev), args.reps)
        os.environ.pop("OFFLOAD_MATMUL", None)
        ps = [to_peer(d) for d in data]
        t_peer, _ = per_call(lambda: fn(peer, *ps), peer_sync, args.reps)
        got = tuple(host(v) for v in r_ol) if isinstance(r_ol, tuple) else host(r_ol)
        good = ok(*data, got)
        gf = f"{flop / t_ol / 1e9:9.0f}" if flop else " " * 9
        print(f"{name:28} {t_ol * 1e3:11.3f} {t_peer * 1e3:10.3f} {t_peer / t_ol:6.2f} {gf}  "
              f"{'ok' if good else 'FAILED'}", flush=True)
        del xs, ps, r_ol
    return 0


if __name__ == "__main__":
    sys.exit(main())
