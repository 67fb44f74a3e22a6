"""The PTX of every corpus kernel (tests/jit_corpus.py, with its argument types
and Range) and of every nd-range kernel of tests/test_jit_ndrange.py (local
arrays, barriers, atomics of every dtype) is accepted by NVIDIA's assembler,
ptxas, for sm_80 and sm_90.

inspect_ptx needs no GPU, so this runs wherever ptxas is installed (the CUDA
toolkit, or pip's nvidia-cuda-nvcc-cu12, which scripts/setup installs and `make
check` finds); without it the module is skipped, saying so. Kernels are checked in groups, the ptxas runs of a
group in parallel, so the whole corpus takes seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from offload_fixtures import find_ptxas, load_offload


PTXAS = find_ptxas()
if PTXAS is None:
    pytest.skip("ptxas is not installed (not on PATH, not in $CUDA_HOME/bin or /usr/local/cuda/bin): "
                "install the CUDA toolkit or pip's nvidia-cuda-nvcc-cu12 to check the JIT's PTX",
                allow_module_level=True)

_ol = load_offload()  # a missing extension is a failure, not a skip

import jit_corpus as jc  # noqa: E402  (after the guards)
import test_jit_ndrange as nd  # noqa: E402

ARCHS = ["sm_80", "sm_90"]
GROUP = 8  # corpus cases per test


def _groups():
    cases = jc.CASES
    return [cases[i:i + GROUP] for i in range(0, len(cases), GROUP)]


GROUPS = _groups()


@pytest.fixture(scope="module")
def ol():
    return _ol


def _ptxas(path: str, arch: str) -> tuple[str, str, int, str]:
    out = path[:-4] + f".{arch}.cubin"
    p = subprocess.run([PTXAS, f"-arch={arch}", path, "-o", out], capture_output=True, text=True, timeout=120)
    rc = p.returncode
    if rc == 0 and not (os.path.exists(out) and os.path.getsize(out) > 0):
        rc = -1  # "succeeded" without writing the cubin
    return path, arch, rc, (p.stdout + p.stderr).strip()


def _ptx_for(ol, case) -> str:
    launch = case.make(jc.rng_for(case.name, 0))
    ptx = case.kernel.inspect_ptx(*jc.host_args(launch), range=ol.Range(*launch.range), sm=80)
    assert isinstance(ptx, str), f"{case.name}: inspect_ptx returned {type(ptx).__name__}"
    assert re.search(r"^\s*\.target\s+sm_80\b", ptx, re.M), f"{case.name}: no `.target sm_80`\n{ptx[:1500]}"
    assert re.search(r"\.entry\b", ptx), f"{case.name}: no .entry\n{ptx[:1500]}"
    return ptx


@pytest.mark.parametrize("group", GROUPS, ids=[f"{g[0].name}..{g[-1].name}" for g in GROUPS])
def test_corpus_ptx_assembles(ol, tmp_path, group):
    files = {}
    for c in group:
        path = tmp_path / (re.sub(r"[^A-Za-z0-9_.-]+", "_", c.name) + ".ptx")
        path.write_text(_ptx_for(ol, c))
        files[str(path)] = c.name
    with ThreadPoolExecutor(max_workers=min(8, 2 * len(files))) as pool:
        runs = list(pool.map(lambda job: _ptxas(*job), [(f, a) for f in files for a in ARCHS]))
    failed = [f"{files[path]} ({arch}): ptxas exit {rc}\n{msg}" for path, arch, rc, msg in runs if rc != 0]
    assert not failed, "ptxas rejected the PTX of:\n" + "\n\n".join(failed)


def _a(shape, dtype="float32"):
    return np.zeros(shape, dtype)


def _nd_cases():
    """(name, kernel, args, NdRange) with the argument types the nd-range tests launch with."""
    n, i32, i64 = 256, "int32", "int64"
    cases = [
        ("tiled_matmul", nd.tiled_matmul, [_a((64, 48)), _a((48, 80)), _a((64, 80))], ((64, 80), (nd.TILE, nd.TILE))),
        ("group_sums", nd.group_sums, [_a(n), _a(n, i32), _a(4), _a(4, i32)], (n, nd.GROUP)),
        ("histogram_2d", nd.histogram_2d, [_a(n, i32), _a(n, i32), _a((9, 7), i32).T], (n, 64)),
        ("histogram_local", nd.histogram_local, [_a(n * nd.PER_ITEM, i32), _a(nd.NBINS, i32)], (n, 32)),
        ("group_scan", nd.group_scan, [_a(n, i32), _a(n, i32)], (n, nd.SCAN)),
        ("ids_2d", nd.ids_2d, [_a((12, 20, 24), i64)], ((12, 20), (4, 5))),
        ("ids_3d", nd.ids_3d, [_a((6, 8, 10 * nd.NIDS3), i64)], ((6, 8, 10), (2, 4, 5))),
        ("group_ids", nd.group_ids, [_a(n, i64)], (n, 64)),
        ("sums_by_device_func", nd.sums_by_device_func, [_a(n), _a(4), _a(n)], (n, nd.GROUP)),
    ]
    for dt in nd.ATOMIC_DTYPES:
        cases.append((f"histogram_global[{dt}]", nd.histogram_global, [_a(n, i32), _a(50, dt), _a(n, dt)], (n, 64)))
    for dt in ("int32", "float32"):
        cases.append((f"cas_max[{dt}]", nd.cas_max, [_a(n, dt), _a(1, dt)], (n, 64)))
        cases.append((f"cas_each[{dt}]", nd.cas_each, [_a(n, dt)] * 4, (n, 64)))
    for dt in ("float32", "float64"):
        cases.append((f"float_atomics[{dt}]", nd.float_atomics, [_a(n, dt), _a(n, dt), _a(3, dt)], (n, 64)))
    for dt in nd.INT_ATOMIC_DTYPES:
        cases.append((f"int_atomics[{dt}]", nd.int_atomics, [_a((3, n), dt), _a(9, dt), _a((2, n), dt), _a(n, dt),
                                                             _a(n, dt)], (n, 64)))
    return cases


def test_ndrange_ptx_assembles(ol, tmp_path):
    files = {}
    for name, kernel, args, (glob, loc) in _nd_cases():
        ptx = kernel.inspect_ptx(*args, range=ol.NdRange(glob, loc), sm=80)
        assert re.search(r"\.entry\b", ptx), f"{name}: no .entry\n{ptx[:1500]}"
        path = tmp_path / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".ptx")
        path.write_text(ptx)
        files[str(path)] = name
    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(lambda job: _ptxas(*job), [(f, a) for f in files for a in ARCHS]))
    failed = [f"{files[path]} ({arch}): ptxas exit {rc}\n{msg}" for path, arch, rc, msg in runs if rc != 0]
    assert not failed, "ptxas rejected the PTX of:\n" + "\n\n".join(failed)
    shared = (tmp_path / "tiled_matmul.ptx").read_text()
    assert ".shared" in shared and "bar.sync" in shared, "local tiles and barriers are missing"


def test_every_case_is_in_a_group():
    assert sum(len(g) for g in GROUPS) == len(jc.CASES)


def test_ptxas_rejects_broken_ptx(tmp_path):
    """The check above can fail: ptxas does reject bad PTX."""
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry broken() { bogus.instruction; }\n")
    assert _ptxas(str(bad), "sm_80")[2] != 0


def test_ptx_sm_default_and_choice(ol, tmp_path):
    args = [2.0, np.ones(8, np.float32), np.ones(8, np.float32)]
    default = jc.saxpy.inspect_ptx(*args, range=ol.Range(8))
    assert re.search(r"\.target\s+sm_80\b", default), default[:800]
    for sm in (75, 86):  # CUDA 13's ptxas knows no sm_70
        ptx = jc.saxpy.inspect_ptx(*args, range=ol.Range(8), sm=sm)
        assert re.search(rf"\.target\s+sm_{sm}\b", ptx), ptx[:800]
        path = tmp_path / f"saxpy{sm}.ptx"
        path.write_text(ptx)
        _, _, rc, msg = _ptxas(str(path), f"sm_{sm}")
        assert rc == 0, msg


def test_launch_bounds_cap_the_registers(ol, tmp_path):
    """launch_bounds=(256, 4) lets 4 groups of 256 share an SM: ptxas keeps the kernel
    to 64 registers (65536 / 1024), where unbounded it takes more."""
    n = 96  # float64 values live at once: more registers than 64 unbounded
    lines = ["def heavy(item, x, y):", "    i = item.get_id(0)"]
    lines += [f"    v{j} = x[i + {j}] * {j + 1.5}" for j in range(n)]
    lines += ["    s = 0.0"] + [f"    s += v{j} * v{n - 1 - j}" for j in range(n)]
    lines += ["    y[i] = s"]
    mod = tmp_path / "heavy_kernel.py"
    mod.write_text("\n".join(lines) + "\n")
    ns = {}
    exec(compile(mod.read_text(), str(mod), "exec"), ns)
    x, y = np.ones(64, np.float64), np.ones(64, np.float64)
    used = {}
    for bounds in (None, (256, 4)):
        k = ol.kernel(ns["heavy"], launch_bounds=bounds)
        path = tmp_path / f"bounds_{bool(bounds)}.ptx"
        path.write_text(k.inspect_ptx(x, y, range=ol.Range(24), sm=90))
        p = subprocess.run([PTXAS, "-arch=sm_90", "-v", str(path), "-o", str(path) + ".cubin"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        used[bounds] = int(re.search(r"Used (\d+) registers", p.stdout + p.stderr).group(1))
    assert used[None] > 64 >= used[(256, 4)], used
