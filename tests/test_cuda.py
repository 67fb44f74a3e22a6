"""CUDA devices: discovery, copies of every dtype, strided round trips,
__cuda_array_interface__ with CuPy and numba-cuda, DLPack with CuPy and
PyTorch.

Runs only where offload finds a CUDA device (the lent GPU machine); skipped,
with the reason, everywhere else. CuPy, numba-cuda and PyTorch tests are
skipped where those packages are not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from offload_fixtures import DTYPES, SLICES, check_equal, load_offload, random_array, run_python


@pytest.fixture(scope="module")
def ol():
    mod = load_offload()  # a missing extension is a failure, not a skip
    if not mod.get_devices(backend="cuda"):
        try:
            mod.Device("cuda")
            why = "?"
        except Exception as e:  # the runtime says why (no driver, no GPU)
            lines = str(e).splitlines()
            why = next((ln.strip() for ln in lines if "CUDA" in ln and ln is not lines[0]), lines[0])
        pytest.skip(f"no CUDA device here (offload.get_devices(backend='cuda') is empty: {why})")
    return mod


@pytest.fixture(scope="module", autouse=True)
def _needs_cuda(ol):
    """Every test here is skipped (with the reason) where offload finds no CUDA device."""


@pytest.fixture(scope="module")
def gpu(ol):
    return ol.get_devices(backend="cuda")[0]


@pytest.fixture(scope="module")
def cupy():
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # pragma: no cover
        pytest.skip(f"CuPy cannot use the GPU: {e}")
    return cp


@pytest.fixture(scope="module")
def numba_cuda():
    pytest.importorskip("numba", reason="numba is not installed")
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack  # numba-cuda 0.30.4 still uses it (removed in NumPy 2.4)
    try:
        from numba import cuda
    except ImportError as e:
        pytest.skip(f"numba.cuda is not importable: {e}")
    if not cuda.is_available():
        pytest.skip("numba.cuda finds no GPU")
    return cuda


@pytest.fixture(scope="module")
def torch():
    t = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not t.cuda.is_available():
        pytest.skip("PyTorch has no CUDA support here")
    return t


# ---------------------------------------------------------------- discovery


def test_cuda_discovery(ol, gpu):
    devs = ol.get_devices(backend="cuda")
    for i, d in enumerate(devs):
        assert d.backend == "cuda"
        assert d.device_type == "gpu"
        assert d.filter_string == f"cuda:gpu:{i}"
        assert repr(d) == f"Device(cuda:gpu:{i})"
    assert gpu.name and "nvidia" in (gpu.vendor + gpu.name).lower(), (gpu.vendor, gpu.name)
    assert gpu.version.startswith("CUDA"), gpu.version
    assert gpu.driver_version
    assert gpu.il_version == ""
    assert gpu.max_compute_units >= 1
    assert gpu.max_work_group_size >= 256
    assert len(gpu.max_work_item_sizes) == 3 and gpu.max_work_item_sizes[0] >= 256
    assert gpu.global_mem_size >= 1 << 30
    assert 0 < gpu.max_mem_alloc_size <= gpu.global_mem_size
    assert gpu.local_mem_size >= 16 << 10
    assert gpu.has_fp64 is True and gpu.has_atomic64 is True
    assert isinstance(gpu.has_fp16, bool)


def test_cuda_matches_nvidia_smi(gpu):
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("nvidia-smi is not installed")
    out = subprocess.run(
        [smi, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, timeout=30,
    ).stdout.strip().splitlines()
    name, mib = (s.strip() for s in out[0].split(","))
    assert gpu.name == name
    assert abs(gpu.global_mem_size / 2**20 - float(mib)) < 0.02 * float(mib)


def test_cuda_filters(ol, gpu):
    assert ol.Device("cuda") == gpu
    assert ol.Device("cuda:gpu:0") == gpu
    assert ol.Device("cuda:0") == gpu
    assert ol.Device("gpu") == gpu, "GPUs are listed CUDA first"
    assert ol.Device("CUDA:GPU") == gpu
    assert ol.Device("cuda:gpu,cpu") == gpu
    n = len(ol.get_devices(backend="cuda"))
    with pytest.raises(ol.DeviceNotFoundError) as ei:
        ol.Device(f"cuda:gpu:{n}")
    assert "cuda:gpu:0" in str(ei.value)
    with pytest.raises(ValueError):
        ol.Device("cuda:gpu:x")


def test_default_device_is_the_gpu():
    r = run_python("import offload\nresult['f'] = offload.default_device().filter_string", env={"OFFLOAD_DEVICE": None})
    assert r["f"] == "cuda:gpu:0"


def test_nvidia_gpu_listed_once(ol):
    """A GPU that NVIDIA's OpenCL platform also lists appears once, as cuda."""
    cuda_names = {d.name for d in ol.get_devices(backend="cuda")}
    ocl_nvidia = [d for d in ol.get_devices(backend="opencl") if d.name in cuda_names]
    assert not ocl_nvidia, f"listed twice: {ocl_nvidia}"


# ---------------------------------------------------------------- copies


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, ), (100003,), (31, 17), (4, 5, 6)], ids=["1", "1d", "2d", "3d"])
def test_cuda_round_trip_every_dtype(ol, gpu, dtype, shape):
    a = random_array(dtype, shape, seed=21)
    x = ol.asarray(a, device=gpu)
    assert x.device == gpu
    check_equal(ol.asnumpy(x), a, "asnumpy")
    check_equal(np.asarray(x), a, "np.asarray")
    check_equal(x.copy(), a, "copy on the GPU")


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "float64", "bool"])
@pytest.mark.parametrize("case", SLICES, ids=[c[0] for c in SLICES])
def test_cuda_strided_round_trips(ol, gpu, case, dtype):
    name, base, f = case
    a = base.astype(dtype)
    x = ol.asarray(a, device=gpu)
    v = f(x)
    want = f(a)
    assert v.shape == want.shape, name
    if want.size:
        assert v.strides == want.strides, name
    check_equal(ol.asnumpy(v), want.copy(), name)
    check_equal(v.copy(), want.copy(), f"{name}.copy()")


@pytest.mark.parametrize("nbytes", [(32 << 20) + 1, (100 << 20) + 12345, (64 << 20) - 3])
def test_cuda_large_transfers_of_odd_sizes(ol, gpu, nbytes):
    # Transfers of 32 MiB and more go through pinned chunks filled by several
    # threads: every byte, whatever the size and alignment, must arrive.
    host = np.random.default_rng().integers(0, 256, nbytes, dtype=np.uint8)
    assert np.array_equal(ol.asnumpy(ol.asarray(host, device=gpu)), host)
    assert np.array_equal(ol.asnumpy(ol.asarray(host[7:], device=gpu)), host[7:])
    # and downloads of views that start inside the allocation
    x = ol.asarray(host, device=gpu)
    assert np.array_equal(ol.asnumpy(x[5:]), host[5:])


def test_cuda_creation_and_setitem(ol, gpu):
    check_equal(ol.zeros((3, 4), dtype="float32", device=gpu), np.zeros((3, 4), "float32"))
    check_equal(ol.ones(5, dtype="int64", device=gpu), np.ones(5, "int64"))
    check_equal(ol.full((2, 2), 7.5, device=gpu), np.full((2, 2), 7.5))
    check_equal(ol.arange(0, 100, 3, dtype="int32", device=gpu), np.arange(0, 100, 3, dtype="int32"))
    a = random_array("float32", (8, 9), seed=22)
    x = ol.asarray(a, device=gpu)
    x[::2, 1::3] = 0
    a[::2, 1::3] = 0
    x[5] = np.arange(9, dtype="float32")
    a[5] = np.arange(9, dtype="float32")
    check_equal(x, a)
    y = x.copy()
    x[...] = np.nan
    check_equal(y, a, "copy independent of the original")


def test_cuda_cpu_transfers(ol, gpu):
    cpus = ol.get_devices(device_type="cpu")
    if not cpus:
        pytest.skip("no CPU device (PoCL) on this machine")
    a = random_array("float64", (50, 40), seed=23)
    x = ol.asarray(a, device=gpu)
    c = x.to_device(cpus[0])
    assert c.device == cpus[0]
    check_equal(c, a)
    g = c[::-1, ::3].to_device(gpu)
    assert g.device == gpu
    check_equal(g, a[::-1, ::3].copy())
    check_equal(x.to_device("cuda"), a)


def test_cuda_placement_error(ol, gpu):
    cpus = ol.get_devices(device_type="cpu")
    if not cpus:
        pytest.skip("no CPU device (PoCL) on this machine")
    x = ol.zeros(3, device=gpu)
    y = ol.zeros(3, device=cpus[0])
    with pytest.raises(ol.ExecutionPlacementError) as ei:
        ol._check_same_device(x, y)
    assert gpu.filter_string in str(ei.value) and cpus[0].filter_string in str(ei.value), str(ei.value)


def test_cuda_oversize_allocation(ol, gpu):
    with pytest.raises(MemoryError) as ei:
        ol.empty(1 << 50, dtype="u1", device=gpu)
    assert "cuda:gpu:0" in str(ei.value) or gpu.name in str(ei.value), str(ei.value)
    check_equal(ol.arange(4, device=gpu), np.arange(4))


def test_cuda_memory_is_freed(ol, gpu):
    """Twice the GPU's memory, 512 MB at a time, allocated and dropped."""
    chunk = 512 << 20
    for _ in range(2 * gpu.global_mem_size // chunk + 2):
        x = ol.zeros(chunk, dtype="uint8", device=gpu)
        del x
    check_equal(ol.ones(3, device=gpu), np.ones(3))


# ---------------------------------------------------------------- __cuda_array_interface__


@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_array_interface_fields(ol, gpu, dtype):
    x = ol.asarray(random_array(dtype, (6, 5), seed=24), device=gpu)
    cai = x.__cuda_array_interface__
    assert cai["shape"] == (6, 5)
    assert cai["typestr"] == np.dtype(dtype).str
    ptr, readonly = cai["data"]
    assert isinstance(ptr, int) and ptr != 0 and readonly is False
    assert cai["version"] >= 2
    assert cai.get("strides") in (None, (5 * x.itemsize, x.itemsize))
    v = x[1:, ::-2]
    vc = v.__cuda_array_interface__
    assert vc["shape"] == (5, 3)
    assert vc["strides"] == (5 * x.itemsize, -2 * x.itemsize)
    assert vc["data"][0] == ptr + (1 * 5 + 4) * x.itemsize


def test_cuda_array_interface_empty(ol, gpu):
    cai = ol.zeros((0, 3), device=gpu).__cuda_array_interface__
    assert cai["shape"] == (0, 3)
    assert cai["data"][0] == 0  # the protocol: 0 for a zero-size array


def test_no_cuda_array_interface_on_opencl(ol):
    cpus = ol.get_devices(backend="opencl")
    if not cpus:
        pytest.skip("no OpenCL device on this machine")
    x = ol.zeros(3, device=cpus[0])
    assert not hasattr(x, "__cuda_array_interface__")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_shares_memory(ol, gpu, cupy, dtype):
    a = random_array(dtype, (40, 30), seed=25)
    x = ol.asarray(a, device=gpu)
    c = cupy.asarray(x)
    assert c.data.ptr == x.__cuda_array_interface__["data"][0], "cupy.asarray copied the data"
    check_equal(cupy.asnumpy(c), a, "read through CuPy")
    # write through CuPy, read through offload
    c[3:7] = c[10:14]
    c[:, 0] = 1
    cupy.cuda.runtime.deviceSynchronize()
    a[3:7] = a[10:14]
    a[:, 0] = 1
    check_equal(ol.asnumpy(x), a, "written through CuPy, read through offload")


def test_cupy_strided_views(ol, gpu, cupy):
    a = random_array("float32", (20, 30), seed=26)
    x = ol.asarray(a, device=gpu)
    for f in (lambda t: t[::2], lambda t: t[1:, ::-3], lambda t: t.T, lambda t: t[5]):
        c = cupy.asarray(f(x))
        check_equal(cupy.asnumpy(c), f(a).copy(), "CuPy view of an offload view")
    c = cupy.asarray(x[::-2, 1::4])
    c[...] = -5
    cupy.cuda.runtime.deviceSynchronize()
    a[::-2, 1::4] = -5
    check_equal(x, a, "written through a CuPy view of an offload view")


def test_offload_reads_cupy_array(ol, gpu, cupy):
    """offload.asarray of a CuPy array (through __cuda_array_interface__ or DLPack)."""
    c = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    x = ol.asarray(c)
    assert x.device == gpu
    check_equal(x, np.arange(12, dtype="float32").reshape(3, 4))


def test_numba_cuda_shares_memory(ol, gpu, numba_cuda):
    a = random_array("float64", (16, 8), seed=27)
    x = ol.asarray(a, device=gpu)
    d = numba_cuda.as_cuda_array(x)
    assert d.shape == (16, 8)
    check_equal(d.copy_to_host(), a, "read through numba")
    d[2:4] = np.full((2, 8), 3.25)
    numba_cuda.synchronize()
    a[2:4] = 3.25
    check_equal(ol.asnumpy(x), a, "written through numba, read through offload")
    v = numba_cuda.as_cuda_array(x[1::3, ::2])
    check_equal(np.ascontiguousarray(v.copy_to_host()), a[1::3, ::2].copy(), "numba view of an offload view")


# ---------------------------------------------------------------- DLPack


def test_cuda_dlpack_device(ol, gpu):
    x = ol.zeros(3, device=gpu)
    assert x.__dlpack_device__() == (2, int(gpu.filter_string.rsplit(":", 1)[1]))  # kDLCUDA


@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_from_dlpack(ol, gpu, cupy, dtype):
    a = random_array(dtype, (9, 7), seed=28)
    x = ol.asarray(a, device=gpu)
    c = cupy.from_dlpack(x)
    check_equal(cupy.asnumpy(c), a, "cupy.from_dlpack")
    c[0] = c[1]
    cupy.cuda.runtime.deviceSynchronize()
    a[0] = a[1]
    check_equal(x, a, "cupy.from_dlpack shares memory")
    y = ol.from_dlpack(cupy.asarray(a[::-1]))
    assert y.device == gpu
    check_equal(y, a[::-1].copy(), "offload.from_dlpack(cupy)")


def test_cupy_from_dlpack_strided(ol, gpu, cupy):
    a = random_array("int32", (10, 12), seed=29)
    x = ol.asarray(a, device=gpu)
    c = cupy.from_dlpack(x[1::3, ::-2])
    check_equal(cupy.asnumpy(c), a[1::3, ::-2].copy())


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64"])
def test_torch_from_dlpack(ol, gpu, torch, dtype):
    a = random_array(dtype, (6, 11), seed=30)
    x = ol.asarray(a, device=gpu)
    t = torch.from_dlpack(x)
    assert t.is_cuda
    check_equal(t.cpu().numpy(), a, "torch.from_dlpack")
    t[2] = t[3]
    torch.cuda.synchronize()
    a[2] = a[3]
    check_equal(x, a, "torch.from_dlpack shares memory")
    tt = torch.from_numpy(np.ascontiguousarray(a[:, ::-1])).cuda()
    torch.cuda.synchronize()
    y = ol.from_dlpack(tt)
    assert y.device == gpu
    check_equal(y, a[:, ::-1].copy(), "offload.from_dlpack(torch)")


def test_torch_from_dlpack_strided(ol, gpu, torch):
    a = random_array("float32", (8, 10), seed=31)
    x = ol.asarray(a, device=gpu)
    t = torch.from_dlpack(x.T)
    check_equal(t.cpu().numpy(), a.T.copy())
    assert re.match(r"cuda", str(t.device))


FAULT_CHILD = """
result = {}
import numpy as np
import offload as ol


def scribble(item, a):
    i = item.get_id(0)
    a[i + (1 << 40)] = 1.0  # a terabyte past the end: an illegal address


def double(item, a):
    i = item.get_id(0)
    a[i] = a[i] * 2


gpu = ol.Device("cuda:gpu:0")
cpu = ol.Device("opencl:cpu:0") if ol.get_devices(backend="opencl", device_type="cpu") else None
x = ol.asarray(np.arange(8, dtype=np.float32), device=gpu)
try:
    ol.kernel(scribble)[ol.Range(8)](x)
    ol.synchronize(gpu)
except ol.DeviceError as e:
    result["fault"] = str(e)
for what, call in [("read", lambda: ol.asnumpy(x)),
                   ("new", lambda: ol.asarray(np.ones(4, np.float32), device=gpu)),
                   ("launch", lambda: ol.kernel(double)[ol.Range(8)](x))]:
    try:
        call()
        result[what] = "worked"
    except ol.DeviceError as e:
        result[what] = str(e)
if cpu is not None:
    y = ol.asarray(np.arange(8, dtype=np.float32), device=cpu)
    ol.kernel(double)[ol.Range(8)](y)
    result["cpu"] = ol.asnumpy(y).tolist()
"""


def test_cuda_kernel_fault_is_a_device_error(gpu, tmp_path):
    """An illegal address in a kernel is an offload.DeviceError naming the kernel and the
    device; the process goes on. Driver 580 keeps such a fault for the whole process (a new
    context, primary or not, returns it again), so the GPU is then refused with a message
    that says to restart, at once and without touching the driver, and other devices work."""
    child = tmp_path / "fault_child.py"  # a file: kernels are compiled from their source
    child.write_text(FAULT_CHILD)
    r = run_python(f"import runpy\nresult.update(runpy.run_path({str(child)!r})['result'])",
                   timeout=120)
    assert "fault" in r, r
    assert "scribble" in r["fault"] and "cuda:gpu:0" in r["fault"], r["fault"]
    assert re.search(r"illegal|ILLEGAL", r["fault"]), r["fault"]
    for what in ("read", "new", "launch"):
        msg = r[what]
        if "restart" in r["fault"]:  # the driver kept the fault: the device is refused
            assert "cuda:gpu:0" in msg and "restart" in msg, (what, msg)
            assert "scribble" in msg, (what, msg)
        elif what == "read":  # the context was made anew: the old array is gone
            assert "lost" in msg, msg
        else:
            assert msg == "worked", (what, msg)
    if "cpu" in r:
        assert r["cpu"] == [2.0 * i for i in range(8)]


COMPILER_CHILD = """
import glob, time
import numpy as np
import offload as ol


def rsqrt_ratio(item, a, b, out):
    i = item.get_id(0)
    out[i] = a[i] / b[i] + 1.0 / math.sqrt(b[i])


gpu = ol.Device("cuda:gpu:0")
rng = np.random.default_rng()
a, b = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32) + 0.5
da, db = ol.asarray(a, device=gpu), ol.asarray(b, device=gpu)  # opens the device
names = lambda: [open(t).read().strip() for t in glob.glob("/proc/self/task/*/comm")]
result["at_open"] = [names().count(n) for n in ("ofl-ptx-jit", "ofl-ptx-tune")]
time.sleep(1)  # the warm-up is over long before: the build below runs on that thread
k = ol.kernel(rsqrt_ratio)
want = (a.astype(np.float64) / b + 1.0 / np.sqrt(b.astype(np.float64))).astype(np.float32)
result["launches"], result["wrong"] = 0, 0
end = time.monotonic() + 0.5  # from the quick build to the tuner's, which takes ~50 ms
while time.monotonic() < end:
    out = ol.asarray(np.full(1000, np.nan, np.float32), device=gpu)
    k[ol.Range(1000)](da, db, out)
    result["launches"] += 1
    result["wrong"] += not np.allclose(ol.asnumpy(out), want, rtol=1e-6)
result["after"] = names().count("ofl-ptx-jit")
"""


def test_cuda_kernels_compile_on_the_devices_compiler_threads(gpu, tmp_path):
    """Opening a CUDA device starts its two compiler threads (one each per device): ofl-ptx-jit,
    which warms the driver's PTX compiler up and loads kernels quickly, and ofl-ptx-tune,
    which then builds them fully. A kernel runs right from its first launch on, through the
    switch to the full build (tests/unit/test_launch.c checks that the switch happens)."""
    child = tmp_path / "compiler_child.py"  # a file: kernels are compiled from their source
    child.write_text("import math\nresult = {}\n" + COMPILER_CHILD)
    r = run_python(f"import runpy\nresult.update(runpy.run_path({str(child)!r})['result'])",
                   timeout=120)
    assert r["at_open"] == [1, 1] and r["after"] == 1, r
    assert r["launches"] > 1 and r["wrong"] == 0, r


# ---------------------------------------------------------------- device time (%time, %timeit, %kernels)


def test_cuda_device_timer_and_kernel_table(ol, gpu):
    """While a DeviceTimer is open each launch is timed with an event pair on the stream;
    the times reach the timer and the kernel's row of kernel_table(), whose target names
    the PTX and the compute capability."""

    @ol.kernel
    def cu_timed_add(item, x):
        i = item.get_id(0)
        x[i] = x[i] + 1.0  # a CUDA test's kernel: unique source, so no cached twin

    n = 1 << 22
    x = ol.zeros(n, dtype=np.float32, device=gpu)
    cu_timed_add[ol.Range(n)](x)
    with ol.DeviceTimer() as t:
        for _ in range(5):
            cu_timed_add[ol.Range(n)](x)
        ev = ol.call_kernel_async(cu_timed_add, ol.Range(n), x)  # its own events, and the timer's
    assert t.launches == 6 and t.seconds > 0, t
    assert ev.elapsed > 0
    assert float(ol.asnumpy(x)[-1]) == 7.0
    (row,) = [r for r in ol.kernel_table() if r["name"].endswith("cu_timed_add")]
    assert row["device"] == gpu.filter_string and re.fullmatch(r"cuda:gpu:\d+ ptx sm_\d+", row["target"]), row
    assert (row["launches"], row["timed_launches"], row["memory_hits"]) == (7, 6, 6), row
    assert row["device_ms"] == pytest.approx(t.seconds * 1e3, rel=1e-6) and row["code_size"] > 0, row
    # more launches than a device keeps records for: the launches collect the finished ones
    m = 70000
    with ol.DeviceTimer() as t:
        for _ in range(m):
            cu_timed_add[ol.Range(32)](x)
    assert t.launches == m and t.seconds > 0, t
    assert float(ol.asnumpy(x)[0]) == 7.0 + m


TIMED_FAULT_CHILD = """
result = {}
import numpy as np
import offload as ol


def scribble_timed(item, a):
    i = item.get_id(0)
    a[i + (1 << 40)] = 1.0  # an illegal address


gpu = ol.Device("cuda:gpu:0")
x = ol.asarray(np.arange(8, dtype=np.float32), device=gpu)
t = ol.DeviceTimer()
try:
    ol.kernel(scribble_timed)[ol.Range(8)](x)
    t.sync()
    result["sync"] = "worked"
except ol.DeviceError as e:
    result["sync"] = str(e)
try:
    result["lap"] = repr(t.lap())
except ol.DeviceError as e:
    result["lap"] = "DeviceError: " + str(e)
t.close()
result["closed"] = True
"""


def test_cuda_fault_while_timing(gpu, tmp_path):
    """A kernel's fault under a DeviceTimer is a DeviceError at the sync; the timer's events
    died with the context, and collecting them afterwards neither crashes nor hangs."""
    child = tmp_path / "timed_fault_child.py"
    child.write_text(TIMED_FAULT_CHILD)
    r = run_python(f"import runpy\nresult.update(runpy.run_path({str(child)!r})['result'])", timeout=120)
    assert "scribble_timed" in r.get("sync", ""), r
    assert r.get("closed") is True, r
    assert r["lap"] == "(0.0, 0)" or r["lap"].startswith("DeviceError"), r


# ---------------------------------------------------------------- threads and interrupts (issue 18)


def test_cuda_threads_launch_one_fresh_kernel(ol, gpu):
    """Was: eight threads launching one freshly defined kernel on cuda:gpu:0 got 'no program
    given to launch', then a segfault."""
    import threading

    @ol.kernel
    def axpy_threads(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    n, errors = 4096, []

    def work(t):
        try:
            x = np.random.default_rng().random(n).astype(np.float32)
            yd = ol.asarray(np.ones(n, dtype=np.float32), device=gpu)
            xd = ol.asarray(x, device=gpu)
            for _ in range(20):
                axpy_threads[ol.Range(n)](np.float32(2), xd, yd)
            np.testing.assert_allclose(ol.asnumpy(yd), 1 + 20 * 2 * x, rtol=1e-5)
        except BaseException as e:  # reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert axpy_threads.stats["launches"] == 160


RUNAWAY_CHILD = """
import os, signal, threading
import numpy as np, offload as ol
gpu = ol.Device("cuda:gpu:0")

@ol.kernel
def runaway(item, out):
    i = item.get_id(0)
    x = 0
    while x >= 0:
        x = (x + 1) % 1000
    out[i] = x

@ol.kernel
def saxpy_after(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]

out = ol.zeros(1 << 16, dtype=np.int64, device=gpu)
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    runaway[ol.Range(1 << 16)](out)
    ol.synchronize()
    print("RAN-TO-THE-END", flush=True)
except KeyboardInterrupt:
    print("KEYBOARD-INTERRUPT", flush=True)
rng = np.random.default_rng()
x = rng.random(4096).astype(np.float32)
y = rng.random(4096).astype(np.float32)
yd = ol.asarray(y, device=gpu)
saxpy_after[ol.Range(4096)](np.float32(2), ol.asarray(x, device=gpu), yd)
print("AFTER", bool(np.allclose(ol.asnumpy(yd), 2 * x + y, rtol=1e-6)), flush=True)
"""


@pytest.mark.timeout(180)
def test_cuda_runaway_kernel_is_interrupted_and_the_gpu_goes_on(gpu, tmp_path):
    """A kernel that never ends (a while loop whose condition stays true) is stopped by the
    interrupt: synchronize() raises KeyboardInterrupt, the kernel reads the cancel flag and
    returns, and the same context runs the next kernel right."""
    import os
    import sys

    from offload_fixtures import PYDIR

    script = tmp_path / "runaway_cuda.py"
    script.write_text(RUNAWAY_CHILD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PYDIR), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=150)
    assert "KEYBOARD-INTERRUPT" in p.stdout and "AFTER True" in p.stdout, p.stdout + p.stderr
