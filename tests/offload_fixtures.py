"""Helpers and fixtures for the tests of the `offload` Python module (devices
and arrays) and of its magics.

Module tests import the standalone extension, <builddir>/python/offload*.so,
into the pytest process (builddir = $OFFLOAD_BUILDDIR, default the repository
root, as in kernel_testlib). It is part of the build, so a missing one is a
test FAILURE with a clear message, never a skip.

Tests use fixtures from here by importing them into their module:
    from offload_fixtures import ol, cpu  # noqa: F401  (fixtures)

CI has two CPU platforms: Intel's OpenCL CPU runtime (pip; it takes SPIR-V as IL, so it is
`opencl:cpu:0`, the default) and PoCL (SPIR 1.2, `opencl:cpu:1`); device tests run on
every device a run sees (device_filters). PoCL can be asked for two
CPU devices (POCL_DEVICES="pthread pthread"), which gives tests two distinct
devices on one machine: placement errors, cross-device copies, `cpu:1`.
An empty directory in OCL_ICD_VENDORS hides every OpenCL platform.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

# As kernel_testlib's BUILDDIR, computed here so that module-only tests (test_cuda.py
# on the GPU machine, which has no pyzmq or jupyter_client) need not import it.
REPO = Path(__file__).resolve().parent.parent
BUILDDIR = Path(os.environ.get("OFFLOAD_BUILDDIR") or REPO).resolve()
PYDIR = BUILDDIR / "python"
CPU_FILTER = "opencl:cpu:0"


def find_ptxas() -> str | None:
    """NVIDIA's PTX assembler: on PATH, in $CUDA_HOME/bin (`make check` points CUDA_HOME at
    pip's nvidia-cuda-nvcc-cu12 when no toolkit is set), or in /usr/local/cuda/bin."""
    home = os.environ.get("CUDA_HOME")
    for p in (shutil.which("ptxas"), home and os.path.join(home, "bin", "ptxas"), "/usr/local/cuda/bin/ptxas"):
        if p and os.access(p, os.X_OK):
            return p
    return None
# Two PoCL CPU devices: opencl:cpu:0 and opencl:cpu:1 -- and no other platform: the
# system's ICD files only, which leaves out a pip-installed runtime (Intel's).
TWO_CPUS_ENV = {"POCL_DEVICES": "pthread pthread", "OCL_ICD_VENDORS": "/etc/OpenCL/vendors"}


def extension_path() -> Path | None:
    found = sorted(PYDIR.glob("offload*.so"))
    return found[0] if found else None


def load_offload():
    """The standalone `offload` extension from <builddir>/python (fails the test if absent)."""
    so = extension_path()
    if so is None:
        pytest.fail(
            f"the offload extension module is missing: no {PYDIR}/offload*.so.\n"
            f"It is part of the build: run make in {BUILDDIR} "
            "(or set OFFLOAD_BUILDDIR to the build directory).",
            pytrace=False,
        )
    if str(PYDIR) not in sys.path:
        sys.path.insert(0, str(PYDIR))
    import offload

    got = Path(getattr(offload, "__file__", "") or "")
    if got.resolve() != so.resolve():
        pytest.fail(
            f"`import offload` in the test process found {got or offload!r}, not {so}",
            pytrace=False,
        )
    return offload


@pytest.fixture(scope="module")
def ol():
    """The offload module (standalone extension)."""
    return load_offload()


@pytest.fixture(scope="module")
def cpu(ol):
    """PoCL's CPU device, the device every CI machine has."""
    devs = [d for d in ol.get_devices() if d.filter_string == CPU_FILTER]
    if not devs:
        pytest.fail(
            f"no {CPU_FILTER} device: the CI device is PoCL's CPU device "
            f"(apt install pocl-opencl-icd); offload.get_devices() = {ol.get_devices()!r}",
            pytrace=False,
        )
    return devs[0]


@pytest.fixture
def restore_default(ol):
    """Puts the session default device back after a test that changes it."""
    before = ol.default_device()
    yield
    ol.set_default_device(before)


# ----------------------------------------------------------------------------
# Subprocesses: a fresh interpreter with its own environment


def run_python(code: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 60) -> dict:
    """Run code in `python3` with <builddir>/python first on sys.path and env
    added to the environment. The code may set a dict `result`; it comes back
    (JSON) as the return value, with "stdout"/"stderr" of the run added.
    A non-zero exit fails the test with the child's output."""
    so = extension_path()
    if so is None:
        load_offload()  # fails with the message
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([str(PYDIR)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    marker = "@@OFFLOAD-RESULT@@"
    script = (
        "import json, sys\nresult = {}\n"
        + textwrap.dedent(code)
        + f"\nsys.stdout.flush()\nprint({marker!r} + json.dumps(result))\n"
    )
    # cwd: not the repository root, whose offload/ directory would be a namespace package
    p = subprocess.run(
        [sys.executable, "-c", script],
        env=full_env,
        cwd=str(cwd or tempfile.gettempdir()),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if p.returncode != 0 or marker not in p.stdout:
        pytest.fail(
            f"the child python failed (exit {p.returncode}); env {env}\n"
            f"--- code ---\n{textwrap.dedent(code)}\n--- stdout ---\n{p.stdout[-4000:]}\n"
            f"--- stderr ---\n{p.stderr[-4000:]}",
            pytrace=False,
        )
    out, _, res = p.stdout.rpartition(marker)
    result = json.loads(res.strip())
    result["stdout"] = out
    result["stderr"] = p.stderr
    return result


@pytest.fixture(scope="session")
def empty_icd_dir(tmp_path_factory) -> Path:
    """A directory with no .icd files: OCL_ICD_VENDORS=<it> finds no OpenCL platform."""
    return tmp_path_factory.mktemp("no-icd-vendors")


# ----------------------------------------------------------------------------
# Kernels with a particular device set-up


@pytest.fixture(scope="module")
def two_cpu_kernel(tmp_path_factory, request):
    """A kernel that sees two PoCL CPU devices and starts with OFFLOAD_DEVICE=cpu:1."""
    from kernel_testlib import start_kernel

    log = tmp_path_factory.mktemp("kernel") / f"{request.module.__name__}.two-cpu.stderr"
    k = start_kernel(log, extra_env={**TWO_CPUS_ENV, "OFFLOAD_DEVICE": "cpu:1"})
    yield k
    k.shutdown()


@pytest.fixture
def no_device_kernel(tmp_path, empty_icd_dir):
    """A kernel that finds no OpenCL platform (and, on CI, no CUDA driver)."""
    from kernel_testlib import start_kernel

    k = start_kernel(tmp_path / "kernel.stderr", extra_env={"OCL_ICD_VENDORS": str(empty_icd_dir)})
    yield k
    k.shutdown()


# ----------------------------------------------------------------------------
# Small things


def rss_bytes() -> int:
    """Resident set size of this process (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def has_cuda_driver() -> bool:
    """Whether libcuda.so.1 can be loaded here (then CUDA devices may exist)."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------
# Data: dtypes, random arrays, exact comparison, a table of basic slices

DTYPES = [
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
]


def random_array(dtype: str, shape, seed: int = 0) -> np.ndarray:
    """Fresh random data covering the whole range of dtype (and NaN, inf, -0.0 for floats)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        a = rng.integers(0, 2, size=n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)
        if n >= 2:
            a[0], a[1] = info.min, info.max
    else:
        with np.errstate(over="ignore"):
            a = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, size=n)).astype(dt)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, np.finfo(dt).tiny, np.finfo(dt).max], dtype=dt)
        k = min(n, len(special))
        a[:k] = special[:k]
    return a.reshape(shape)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Exactly equal: dtype, shape and every bit (NaN payloads and -0.0 included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        u = np.dtype(f"u{a.dtype.itemsize}")
        return np.array_equal(np.ascontiguousarray(a).view(u), np.ascontiguousarray(b).view(u))
    return np.array_equal(a, b)


def check_equal(x, expected: np.ndarray, what: str = "") -> None:
    got = x if isinstance(x, np.ndarray) else np.asarray(x.asnumpy())
    assert isinstance(got, np.ndarray)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    assert same_bits(got, expected), f"{what}: values differ\n got {got!r}\nwant {expected!r}"


A1 = np.arange(17, dtype="int64") * 3 - 20
A2 = np.arange(6 * 7, dtype="int64").reshape(6, 7) * 5 - 40
A3 = np.arange(4 * 5 * 6, dtype="int64").reshape(4, 5, 6) - 60

SLICES = [
    # (id, base, function applied to both the NumPy and the offload array)
    ("1d[::2]", A1, lambda a: a[::2]),
    ("1d[::-1]", A1, lambda a: a[::-1]),
    ("1d[3:11:3]", A1, lambda a: a[3:11:3]),
    ("1d[-5:]", A1, lambda a: a[-5:]),
    ("1d[10:2:-2]", A1, lambda a: a[10:2:-2]),
    ("1d[5:5]", A1, lambda a: a[5:5]),
    ("1d[:]", A1, lambda a: a[:]),
    ("1d[100:]", A1, lambda a: a[100:]),
    ("1d[-100:3]", A1, lambda a: a[-100:3]),
    ("1d[...]", A1, lambda a: a[...]),
    ("2d[1:,::-2]", A2, lambda a: a[1:, ::-2]),
    ("2d.T", A2, lambda a: a.T),
    ("2d[:,1]", A2, lambda a: a[:, 1]),
    ("2d[2]", A2, lambda a: a[2]),
    ("2d[-1]", A2, lambda a: a[-1]),
    ("2d[::2,::3]", A2, lambda a: a[::2, ::3]),
    ("2d[-1,::-1]", A2, lambda a: a[-1, ::-1]),
    ("2d[...,3]", A2, lambda a: a[..., 3]),
    ("2d[1:4][::-1]", A2, lambda a: a[1:4][::-1]),
    ("2d.T[::2]", A2, lambda a: a.T[::2]),
    ("2d.T.T", A2, lambda a: a.T.T),
    ("2d[::-1,::-1]", A2, lambda a: a[::-1, ::-1]),
    ("2d[2:3,4:5]", A2, lambda a: a[2:3, 4:5]),
    ("2d[:0]", A2, lambda a: a[:0]),
    ("3d[1:3,::2,::-3]", A3, lambda a: a[1:3, ::2, ::-3]),
    ("3d[:,2,:]", A3, lambda a: a[:, 2, :]),
    ("3d[...,::2]", A3, lambda a: a[..., ::2]),
    ("3d.T", A3, lambda a: a.T),
    ("3d[::-1,::-1,::-1]", A3, lambda a: a[::-1, ::-1, ::-1]),
    ("3d[1:,:,1:][:,::2,::-1]", A3, lambda a: a[1:, :, 1:][:, ::2, ::-1]),
    ("3d[1,...]", A3, lambda a: a[1, ...]),
    ("3d[2,3]", A3, lambda a: a[2, 3]),
    ("3d[:,:,5]", A3, lambda a: a[:, :, 5]),
    ("3d.T[1][::-1]", A3, lambda a: a.T[1][::-1]),
]


# ---------------------------------------------------------------- device tests on fresh data

# One seed per pytest session; a failing test prints it, OFFLOAD_TEST_SEED=<n> reruns with it.
SEED = int(os.environ.get("OFFLOAD_TEST_SEED") or secrets.randbits(32))


def device_filters(ol_module) -> list[str]:
    """The devices a device test runs on: every device this run sees -- on CI both CPU
    platforms, PoCL (SPIR 1.2 from our SPIR-V) and Intel's runtime (the SPIR-V itself) --
    and CPU_FILTER always, whose absence then fails the test with the devices listed."""
    found = [d.filter_string for d in ol_module.get_devices()]
    return found if CPU_FILTER in found else [CPU_FILTER] + found


def device_fixture(ol_module):
    """A module-scoped `device` fixture over device_filters(): in a test module,
    `device = device_fixture(ol)`."""

    @pytest.fixture(scope="module", params=device_filters(ol_module))
    def device(request):
        devs = [d for d in ol_module.get_devices() if d.filter_string == request.param]
        if not devs:
            pytest.fail(f"no {request.param} device; offload.get_devices() = {ol_module.get_devices()!r}",
                        pytrace=False)
        return devs[0]

    return device


@pytest.fixture
def rng(request):
    """Fresh inputs for each test. The seed goes to stdout, which pytest shows for a failing test."""
    print(f"inputs from OFFLOAD_TEST_SEED={SEED}")
    return np.random.default_rng([SEED, zlib.crc32(request.node.name.encode())])


def poisoned(shape, dtype) -> np.ndarray:
    """An output's starting value, unlike any result: NaN for floats, 0x5A5A... for integers."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return np.full(shape, np.nan, dt)
    return np.full(shape, np.frombuffer(b"\x5a" * dt.itemsize, dt)[0], dt)


@pytest.fixture(params=["host", "vendor"])
def la_path(request, monkeypatch):
    """The path offload.linalg's LAPACK functions and offload.fft's transforms take on a CPU
    device: "host" (NumPy's own on the host's copy) or "vendor" (OFFLOAD_LA_PATH=vendor: the
    compositions the CUDA path makes around cuSOLVER and cuFFT, with NumPy standing in)."""
    if request.param == "vendor":
        monkeypatch.setenv("OFFLOAD_LA_PATH", "vendor")
    else:
        monkeypatch.delenv("OFFLOAD_LA_PATH", raising=False)
    return request.param


def checked_host(x, device, dtype=None, shape=None):
    """x's data, after checking that it is an offload array on device (of dtype and shape)."""
    import numpy as np
    ol = load_offload()
    assert isinstance(x, ol.ndarray), type(x)
    assert x.device == ol.Device(device)
    if dtype is not None:
        assert x.dtype == np.dtype(dtype), (x.dtype, dtype)
    if shape is not None:
        assert x.shape == tuple(shape), (x.shape, shape)
    return ol.asnumpy(x)


def random_floats(rng, shape, dtype):
    """Standard normal values (both parts for a complex dtype) in dtype."""
    import numpy as np
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)
