"""No build can hang the notebook (issue 37, item 6).

PoCL builds a kernel's code at its first launch for each work-group size, in its worker
thread inside this process; Intel's runtime builds in the helper process offload-clbuild.
Both are bounded by OFFLOAD_BUILD_TIMEOUT (a DeviceError naming the kernel, the process
lives on) and end at an interrupt. Each case runs in a child Python with its own empty
POCL_CACHE_DIR and XDG_CACHE_HOME, so that every build is a cold one. The bounds on the
children's run time only detect a hang; nothing here times a build.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from offload_fixtures import PYDIR
from test_intel_runtime import LIB, kernel_python

HANG = 300  # seconds: a child that runs longer has hung

# children start on empty caches, so PoCL builds everything: a loaded 2-core machine takes
# tens of seconds where an idle one takes a few
pytestmark = pytest.mark.timeout(HANG + 30)

POCL = ("import offload as ol\n"
        "pocl = [d for d in ol.get_devices() if d.platform.startswith('Portable')]\n")


def cold_env(tmp_path: Path, **extra) -> dict:
    """A child's environment: empty PoCL and offload caches, both CPU platforms visible."""
    pocl, xdg = tmp_path / "pocl-cache", tmp_path / "xdg-cache"
    pocl.mkdir(exist_ok=True)
    xdg.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(PYDIR), "POCL_CACHE_DIR": str(pocl),
           "XDG_CACHE_HOME": str(xdg)}
    for name in ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "OFFLOAD_DEVICE", "OFFLOAD_CLBUILD",
                 "OFFLOAD_BUILD_TIMEOUT", "OFFLOAD_BUILD_IN_PROCESS", "OFFLOAD_CANCEL"):
        env.pop(name, None)
    env.update(extra)
    return env


def run_child(tmp_path: Path, code: str, **extra) -> str:
    script = tmp_path / "child.py"
    script.write_text(code)
    p = subprocess.run([kernel_python(), str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=HANG, env=cold_env(tmp_path, **extra))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def needs_pocl():
    code = POCL + "print(len(pocl))\n"
    out = subprocess.run([kernel_python(), "-c", code], capture_output=True, text=True,
                         env=cold_env(Path("/tmp"))).stdout.strip()
    if out in ("", "0"):
        pytest.skip("no PoCL device here")


def test_any_then_all_on_a_cold_pocl_cache(tmp_path):
    """What never returned (PoCL 3.1's LLVM looped building all()'s and-ed flag blocks):
    any, all and count_nonzero of a (4, 5, 37) bool array over each AXES case of
    tests/test_array_api_stats.py, built cold, match NumPy."""
    needs_pocl()
    out = run_child(tmp_path, POCL + """
import numpy as np
a = np.random.default_rng(7).random((4, 5, 37)) > 0.5
a[2, 3] = True
x = ol.asarray(a, device=pocl[0])
for axis in (None, -1, (0, 2)):
    keepdims = axis == (0, 2)
    for f in ("any", "all", "count_nonzero"):
        got = ol.asnumpy(getattr(ol, f)(x, axis=axis, keepdims=keepdims))
        want = getattr(np, f)(a, axis=axis, keepdims=keepdims)
        assert np.array_equal(got, want), (f, axis, got, want)
ones = ol.asarray(np.ones((3, 4), bool), device=pocl[0])
assert bool(ol.asnumpy(ol.all(ones))) and not bool(ol.asnumpy(ol.any(ones * 0)))
print("ok")
""")
    assert out.strip() == "ok"


AXPB = """
@ol.kernel
def axpb(item, x, y):
    i = item.get_id(0)
    y[i] = x[i] * 4 + 1
"""


def test_a_pocl_build_past_the_timeout_is_a_device_error(tmp_path):
    """PoCL's clBuildProgram (in this process, on a thread of its own) that outlasts
    OFFLOAD_BUILD_TIMEOUT (here 1 ms, which every cold build does): a DeviceError naming the
    kernel and the device; the kernel is left to end, and with the limit lifted the same
    kernel builds and runs right."""
    needs_pocl()
    out = run_child(tmp_path, POCL + AXPB + """
import numpy as np, os
x = ol.asarray(np.arange(1000, dtype=np.float32), device=pocl[0])
y = ol.empty_like(x)
try:
    ol.call_kernel(axpb, ol.Range(1000), x, y)
    print("no error")
except ol.DeviceError as e:
    print("error:", e)
del os.environ["OFFLOAD_BUILD_TIMEOUT"]
ol.call_kernel(axpb, ol.Range(1000), x, y)
assert np.array_equal(ol.asnumpy(y), np.arange(1000, dtype=np.float32) * 4 + 1)
print("usable")
""", OFFLOAD_BUILD_TIMEOUT="0.001")
    first, last = out.strip().splitlines()[0], out.strip().splitlines()[-1]
    assert first.startswith("error: cannot build kernel 'ofl_axpb' for opencl:cpu:"), out
    assert "did not finish in 0.001 s (OFFLOAD_BUILD_TIMEOUT)" in first, out
    assert last == "usable", out


def test_a_pocl_build_at_launch_past_the_timeout_is_a_device_error(tmp_path):
    """A kernel built and run, then launched with a new work-group shape, which PoCL builds
    at that launch, in its worker thread, with OFFLOAD_BUILD_TIMEOUT lowered to 1 ms: the
    wait fails with a DeviceError naming the kernel and the device; once that build ends,
    the device works on, with the right values."""
    needs_pocl()
    out = run_child(tmp_path, POCL + AXPB + """
import numpy as np, os, time
n = 100000  # a grid of 65535 or more: another shape than 1000's
x = ol.asarray(np.arange(n, dtype=np.float32), device=pocl[0])
y = ol.empty_like(x)
ol.call_kernel(axpb, ol.Range(1000), x, y)
ol.synchronize(pocl[0])
os.environ["OFFLOAD_BUILD_TIMEOUT"] = "0.001"
try:  # the launch waits for its index checks' record
    ol.call_kernel(axpb, ol.Range(n), x, y)
    ol.synchronize(pocl[0])
    print("no error")
except ol.DeviceError as e:
    print("error:", e)
del os.environ["OFFLOAD_BUILD_TIMEOUT"]
for _ in range(600):  # the build ends soon: the device is usable again
    try:
        got = ol.asnumpy(y)
        break
    except ol.DeviceError:
        time.sleep(0.1)
assert np.array_equal(got, np.arange(n, dtype=np.float32) * 4 + 1), got
print("usable")
""")
    first, last = out.strip().splitlines()[0], out.strip().splitlines()[-1]
    assert first.startswith("error: kernel 'ofl_axpb' has been building for opencl:cpu:"), out
    assert pocl_filter_in(first) and "OFFLOAD_BUILD_TIMEOUT" in first, out
    assert last == "usable", out


def pocl_filter_in(message: str) -> bool:
    return "opencl:cpu:" in message and "PoCL" in message


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan"])
def test_a_bad_build_timeout_is_a_clear_error(tmp_path, value):
    """OFFLOAD_BUILD_TIMEOUT that is not a positive number: the build says so, naming the
    variable, and the process goes on (a NumPy computation after it)."""
    needs_pocl()
    out = run_child(tmp_path, POCL + AXPB + """
import numpy as np
x = ol.asarray(np.arange(10, dtype=np.float32), device=pocl[0])
y = ol.empty_like(x)
try:
    ol.call_kernel(axpb, ol.Range(10), x, y)
    ol.synchronize(pocl[0])
    print("no error")
except Exception as e:
    print(type(e).__name__, e)
print(int(np.arange(4).sum()))
""", OFFLOAD_BUILD_TIMEOUT=value)
    first, last = out.strip().splitlines()[0], out.strip().splitlines()[-1]
    assert f"OFFLOAD_BUILD_TIMEOUT={value} is not a number of seconds" in first, out
    assert last == "6", out


def looping_kernel_source() -> str:
    """A kernel on which PoCL 3.1's LLVM 15 never ends its build at the first launch (with
    no cancel checks in its loops, OFFLOAD_CANCEL=0): the form all() had on PoCL, 16 uint8
    flags and-ed 8 rows deep (module/lib/reduce/mod_reduce.c). Were PoCL to build it quickly one
    day, the interrupt test below would fail, saying so: it needs a build that does not end
    by itself."""
    lines = ["def looping(item, x, out, base, Q, sp, sq, K, S, ident):",
             "    l = item.get_local_id(0)",
             "    r = item.get_group().get_group_id(0)",
             "    m = r // S",
             "    o = base + (m // Q) * sp + (m % Q) * sq",
             "    c = (K + S - 1) // S",
             "    c = (c + 127) // 128 * 128",
             "    k = (r % S) * c",
             "    hi = min(k + c, K)",
             "    total = ident",
             "    while k + 127 < hi:"]
    for row in range(8):
        for u in range(16):
            var = f"v{u}" if row else f"a{u}"
            lines.append(f"        {var} = np.uint8(x[np.uint64(o + k + {row * 16 + u})])")
            if row:
                lines.append(f"        a{u} = a{u} & v{u}")
    h = 8
    while h:
        lines += [f"        a{j} = a{j} & a{j + h}" for j in range(h)]
        h //= 2
    lines += ["        v0 = np.uint8(a0)",
              "        total = total & v0",
              "        k += 128",
              "    k += l",
              "    while k < hi:",
              "        v0 = np.uint8(x[np.uint64(o + k)])",
              "        total = total & v0",
              "        k += 1",
              "    out[np.uint64(m)] = total != 0"]
    return "\n".join(lines) + "\n"


def test_an_interrupt_ends_a_pocl_build_in_progress(tmp_path):
    """Ctrl-C while PoCL builds (a build that never ends): KeyboardInterrupt, the process
    computes on, and it exits (within the build timeout, here 20 s, as its exit waits for
    the device once more)."""
    needs_pocl()
    (tmp_path / "looping.py").write_text("import numpy as np\n\n" + looping_kernel_source())
    script = tmp_path / "child.py"
    script.write_text(POCL + """
import signal, sys, time, numpy as np
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, '.')
from looping import looping
k = ol.kernel(boundscheck=False)(looping)
x = ol.asarray(np.ones(740, bool), device=pocl[0])
out = ol.zeros(1, dtype=bool, device=pocl[0])
ol.call_kernel(k, ol.NdRange(1, 1), x, out, 0, 1, 0, 0, 740, 1, np.uint8(1))
print("queued", flush=True)
t = time.monotonic()
try:
    ol.asnumpy(out)
    print("finished")
except KeyboardInterrupt:
    print("interrupted after %.0f s" % (time.monotonic() - t))
print(int(np.arange(4).sum()), flush=True)
""")
    p = subprocess.Popen([kernel_python(), str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env=cold_env(tmp_path, OFFLOAD_CANCEL="0", OFFLOAD_BUILD_TIMEOUT="20"))
    try:
        assert p.stdout.readline().strip() == "queued"
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=HANG)
    finally:
        p.kill()
    lines = out.strip().splitlines()
    assert lines and lines[0].startswith("interrupted"), out + err
    assert lines[-1] == "6" and p.returncode == 0, out + err


needs_runtime = pytest.mark.skipif(LIB is None, reason="intel-opencl-rt is not installed")

INTEL = ("import offload as ol\n"
         "intel = [d for d in ol.get_devices() if d.platform == 'Intel(R) OpenCL'][0]\n")


def stand_in(tmp_path: Path, script: str) -> str:
    helper = tmp_path / "offload-clbuild"
    helper.write_text("#!/bin/sh\n" + script)
    helper.chmod(0o755)
    return str(helper)


@needs_runtime
def test_a_helper_build_past_the_timeout_is_a_device_error(tmp_path):
    """A helper that never answers (a stand-in that sleeps), OFFLOAD_BUILD_TIMEOUT=20: the
    build is a DeviceError naming the kernel and the device, the helper is ended, and the
    process goes on to compute on another device. (The limit holds for PoCL's build of the
    multiplication too, which a loaded 2-core machine with a cold cache took past 2 s.)"""
    out = run_child(tmp_path, INTEL + AXPB + """
import numpy as np, time
x = ol.asarray(np.arange(8, dtype=np.float32), device=intel)
y = ol.empty_like(x)
try:
    ol.call_kernel(axpb, ol.Range(8), x, y)
    print("no error")
except ol.DeviceError as e:
    print("error:", e)
pocl = [d for d in ol.get_devices() if d.platform.startswith('Portable')]
if pocl:
    z = ol.asarray(np.arange(8, dtype=np.float32), device=pocl[0])
    print(ol.asnumpy(z * 2).tolist())
else:
    print("no PoCL")
""", OFFLOAD_CLBUILD=stand_in(tmp_path, "exec sleep 600\n"), OFFLOAD_BUILD_TIMEOUT="20",
        OFFLOAD_CACHE="0")
    first, last = out.strip().splitlines()[0], out.strip().splitlines()[-1]
    assert first.startswith("error: cannot build kernel 'ofl_axpb' for opencl:cpu:"), out
    assert "did not finish in 20 s (OFFLOAD_BUILD_TIMEOUT)" in first, out
    assert last in ("[0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]", "no PoCL"), out
