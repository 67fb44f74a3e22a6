"""Intel's OpenCL CPU runtime installed with pip into the kernel's Python
(`pip install intel-opencl-rt intel-cmplr-lib-rt`, as scripts/setup does on
x86-64): the kernel still starts, lists it beside PoCL with no environment
variable, and compiles for it through SPIR-V given as IL. A runtime that
lacks its libraries is named, with the package to install, by
`%lsplatform -v`, and the kernel lives.

The wheel puts a Khronos libOpenCL.so.1 beside libpython (a pyenv or venv
prefix's lib/), whose own libraries (libsvml, ...) the dynamic loader cannot
find there: a kernel binary whose run path named that directory did not start.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kernel_testlib import (
    BUILDDIR,
    describe,
    execute,
    start_kernel,
    stream_text,
    strip_ansi,
    wait_reply,
)
from offload_fixtures import PYDIR

PLATFORM = "Intel(R) OpenCL"


def kernel_python() -> str:
    """The interpreter the kernel embeds (configure's PYTHON_EXECUTABLE)."""
    for line in (BUILDDIR / "Makefile").read_text().splitlines():
        if line.startswith("PYTHON_EXECUTABLE = "):
            return line.split("=", 1)[1].strip()
    return sys.executable


def runtime_library() -> Path | None:
    """libintelocl.so as pip installed it for the kernel's Python, or None."""
    code = ("import importlib.metadata as m, pathlib\n"
            "try:\n"
            "    fs = m.distribution('intel-opencl-rt').files\n"
            "except m.PackageNotFoundError:\n"
            "    fs = []\n"
            "print(next((pathlib.Path(f.locate()).resolve() for f in fs if f.name == 'libintelocl.so'), ''))")
    out = subprocess.run([kernel_python(), "-c", code], capture_output=True, text=True).stdout.strip()
    return Path(out) if out else None


LIB = runtime_library()
needs_runtime = pytest.mark.skipif(
    LIB is None, reason="intel-opencl-rt is not installed in the kernel's Python "
    "(scripts/setup installs it on x86-64 unless OFFLOAD_SKIP_INTEL=1)")


def display_text(msgs) -> str:
    return strip_ansi("".join(str(m["content"].get("data", {}).get("text/plain", ""))
                              for m in msgs if m["msg_type"] == "display_data"))


def env_without_icd_settings() -> dict:
    return {"OCL_ICD_VENDORS": None, "OCL_ICD_FILENAMES": None, "OFFLOAD_DEVICE": None}


@pytest.fixture(scope="module")
def plain_kernel(tmp_path_factory):
    # its own disk cache: builds that an earlier run kept (offload/ofl_bincache.c) would
    # start no helper, and the tests here count helpers
    tmp = tmp_path_factory.mktemp("intel")
    k = start_kernel(tmp / "kernel.stderr",
                     extra_env={**env_without_icd_settings(), "XDG_CACHE_HOME": str(tmp)})
    yield k
    k.shutdown()


@needs_runtime
def test_kernel_starts_and_lists_both_cpu_platforms(plain_kernel):
    reply, msgs = execute(plain_kernel.kc, "%lsplatform -vv")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    text = display_text(msgs)
    assert PLATFORM in text, text
    assert "Portable Computing Language" in text, f"the system's ICDs must stay visible:\n{text}"
    assert "SPIR-V_1.0" in text, text


@needs_runtime
def test_wheel_loader_beside_libpython_does_not_stop_the_kernel(plain_kernel):
    """What made the kernel fail to start: the run path must not lead to the wheel's loader."""
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "")
    exe = BUILDDIR / "kernel" / "offload-kernel"
    runpath = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert f"{libdir}:" not in runpath and f"{libdir}]" not in runpath, runpath
    maps = Path(f"/proc/{plain_kernel.pid}/maps").read_text()
    loaders = {line.split()[-1] for line in maps.splitlines() if "libOpenCL.so" in line}
    assert loaders and not any(str(LIB.parent) in p for p in loaders), loaders


@needs_runtime
def test_a_kernel_runs_on_the_intel_device_through_il(plain_kernel):
    """The same kernel on both CPU platforms; %kernels says which path each took:
    SPIR-V given as IL to Intel's runtime (the default CPU), SPIR 1.2 to PoCL."""
    code = """
import numpy as np, offload as ol
@ol.kernel
def axpb(item, x, y):
    i = item.get_id(0)
    y[i] = x[i] * 4 + 1
for dev in ol.get_devices(device_type="cpu"):
    x = np.random.default_rng().random(1000, dtype=np.float32)
    y = ol.full(1000, np.nan, dtype=np.float32, device=dev)
    axpb[ol.Range(1000)](ol.asarray(x, device=dev), y)
    assert np.array_equal(ol.asnumpy(y), x * np.float32(4) + np.float32(1)), dev
print(ol.default_device().filter_string, [d.filter_string for d in ol.get_devices(device_type="cpu") if d.il_version])
"""
    reply, msgs = execute(plain_kernel.kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    default, il_devices = stream_text(msgs).strip().split(" ", 1)
    assert il_devices == "['opencl:cpu:0']" and default == "opencl:cpu:0", stream_text(msgs)
    reply, msgs = execute(plain_kernel.kc, "%kernels")
    text = display_text(msgs)
    targets = sorted(re.findall(r"opencl:cpu:\d+ spir\S*", text))
    assert "opencl:cpu:0 spirv" in targets and "opencl:cpu:1 spir1.2" in targets, text


def test_incomplete_runtime_names_the_missing_package(tmp_path):
    """A runtime whose compiler libraries are missing: %lsplatform -v says which package to install."""
    if LIB is None:
        pytest.skip("intel-opencl-rt is not installed in the kernel's Python (OFFLOAD_SKIP_INTEL=1 or not x86-64)")
    venv = tmp_path / "venv"
    subprocess.run([kernel_python(), "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                   check=True)
    lib = venv / "lib"
    vendors = venv / "etc" / "OpenCL" / "vendors"
    vendors.mkdir(parents=True)
    # the wheel's own .icd names conda's placeholder prefix, as pip leaves it
    (vendors / "intel-cpu.icd").write_text("/opt/anaconda1anaconda2anaconda3/lib/libintelocl.so\n")
    compiler_libs = ("libsvml", "libimf", "libirng", "libintlc", "libirc")
    for f in LIB.parent.iterdir():
        if f.name.startswith(compiler_libs) or not f.name.startswith("lib"):
            continue
        if f.name.startswith("libintelocl"):
            try:
                os.link(f.resolve(), lib / f.name)  # $ORIGIN must be this directory
            except OSError:
                import shutil
                shutil.copy2(f.resolve(), lib / f.name)
        else:
            (lib / f.name).symlink_to(f.resolve())
    env = {k: v for k, v in os.environ.items() if k not in ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES")}
    env["PYTHONPATH"] = str(PYDIR)
    p = subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import offload as ol; ol.lsplatform(1); print(len(ol.get_devices()))"],
                       env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"{lib / 'libintelocl.so'} cannot load" in p.stdout, p.stdout
    assert "is missing (pip install intel-cmplr-lib-rt" in p.stdout, p.stdout
    assert "Portable Computing Language" in p.stdout, p.stdout


# ---- builds in a helper process (offload/ofl_buildproc.c) ----

# Intel's vectorizer (vplan-vec, 2026.2) segfaulted on this loop: a float stepped by a
# subtraction, read before the step after the loop (kernel fuzzer, seed 2189110301). The
# JIT now makes the step an fma, which it takes; the fake helpers below stand in for a
# compiler that still crashes.
RECURRENCE = """
import numpy as np, offload as ol
dev = [d for d in ol.get_devices() if d.platform == "Intel(R) OpenCL"][0]
@ol.kernel
def recurrence(item, n, x, out):
    i = item.get_id(0)
    before = 1.0
    f = 1.0
    for j in range(n):
        before = f
        f = f - x
    out[i] = before
n = int(np.random.default_rng().integers(2, 9))
out = ol.full(4, np.nan, device=dev)
recurrence[ol.Range(4)](n, 0.5, out)
want = 1.0 - 0.5 * (n - 1)
print(ol.asnumpy(out).tolist() == [want] * 4)
"""
HELPER = BUILDDIR / "offload" / "offload-clbuild"
# What Intel's compiler leaves on stderr as it crashes
LAST_WORDS = 'echo \'1.\tRunning pass "vplan-vec" on function "ofl_k"\' >&2\n'


def helpers_of(pid: int) -> list[int]:
    """The offload-clbuild processes that pid started."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            name = fields[0].split("(", 1)[1]
            ppid = int(fields[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and name == "offload-clbuild":
            found.append(int(stat.parent.name))
    return found


@contextlib.contextmanager
def kernel_with_helper(tmp_path: Path, script: str):
    """A kernel whose builds for Intel's device go to a stand-in helper, a shell script."""
    helper = tmp_path / "offload-clbuild"
    helper.write_text("#!/bin/sh\n" + script)
    helper.chmod(0o755)
    k = start_kernel(tmp_path / "kernel.stderr",
                     extra_env={**env_without_icd_settings(), "OFFLOAD_CLBUILD": str(helper),
                                "XDG_CACHE_HOME": str(tmp_path)})
    try:
        yield k
    finally:
        k.shutdown()


@needs_runtime
def test_no_crash_and_no_helper_left_idle(plain_kernel):
    """The loop that crashed Intel's compiler builds vectorized now (no warning), in one helper."""
    reply, msgs = execute(plain_kernel.kc, RECURRENCE)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert stream_text(msgs).strip() == "True", describe(reply, msgs)
    assert "RuntimeWarning" not in stream_text(msgs, "stderr"), describe(reply, msgs)
    assert len(helpers_of(plain_kernel.pid)) == 1, helpers_of(plain_kernel.pid)


@needs_runtime
def test_a_compiler_crash_is_built_again_with_the_vectorizer_off(tmp_path):
    """A compiler that crashes vectorizing (here a stand-in that crashes unless the vectorizer
    is off, and is the real helper when it is): the kernel runs, with the right value, says
    so, and the kernel lives."""
    crashes_vectorizing = (f'[ "$CL_CONFIG_CPU_VECTORIZER_MODE" = 1 ] || '
                           f'{{ {LAST_WORDS.strip()}; kill -SEGV $$; }}\nexec "{HELPER}" "$@"\n')
    with kernel_with_helper(tmp_path, crashes_vectorizing) as k:
        reply, msgs = execute(k.kc, RECURRENCE)
        assert reply["content"]["status"] == "ok", describe(reply, msgs)
        assert stream_text(msgs).strip() == "True", describe(reply, msgs)
        warning = stream_text(msgs, "stderr")
        assert "RuntimeWarning: kernel 'recurrence' (" in warning, describe(reply, msgs)
        assert "the compiler of opencl:cpu:0 crashed vectorizing it" in warning, warning
        reply, msgs = execute(k.kc, "%kernels")
        assert re.search(r"recurrence .* opencl:cpu:0 spirv vectorizer-off", display_text(msgs)), describe(reply, msgs)
        k.assert_alive("after its compiler crashed in a helper")


@needs_runtime
def test_a_killed_helper_is_started_again(plain_kernel):
    axpb = """
import numpy as np, offload as ol
dev = [d for d in ol.get_devices() if d.platform == "Intel(R) OpenCL"][0]
@ol.kernel
def axpb_{n}(item, x, y):
    i = item.get_id(0)
    y[i] = x[i] * {n} + 1
x = np.random.default_rng().random(100, dtype=np.float32)
y = ol.full(100, np.nan, dtype=np.float32, device=dev)
axpb_{n}[ol.Range(100)](ol.asarray(x, device=dev), y)
print(np.array_equal(ol.asnumpy(y), x * np.float32({n}) + np.float32(1)))
"""
    reply, msgs = execute(plain_kernel.kc, axpb.format(n=3))
    assert stream_text(msgs).strip() == "True", describe(reply, msgs)
    helpers = helpers_of(plain_kernel.pid)
    assert helpers, "Intel's builds should run in a helper process"
    for pid in helpers:  # the next build may find it still dying: SIGKILL is not a crash
        os.kill(pid, 9)
    reply, msgs = execute(plain_kernel.kc, axpb.format(n=5))
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert stream_text(msgs).strip() == "True", describe(reply, msgs)
    assert helpers_of(plain_kernel.pid), "a helper should be running again"


@needs_runtime
def test_a_compiler_that_always_crashes_is_a_clean_error(tmp_path):
    """Crashed twice (vectorizer on, then off): DeviceError quoting the signal and the pass it
    was in; the kernel lives and its other devices still build."""
    with kernel_with_helper(tmp_path, LAST_WORDS + "kill -SEGV $$\n") as k:
        reply, msgs = execute(k.kc, RECURRENCE)
        assert reply["content"]["status"] == "error", describe(reply, msgs)
        c = reply["content"]
        assert c["ename"] == "DeviceError", describe(reply, msgs)
        # the first build is ol.full's
        assert re.match(r"cannot build kernel 'ofl_\w+' for opencl:cpu:0 ", c["evalue"]), c["evalue"]
        assert c["evalue"].count("crashed (signal 11, Segmentation fault)") == 2, c["evalue"]
        assert 'its last words: Running pass "vplan-vec" on function "ofl_k"' in c["evalue"], c["evalue"]
        assert "built again with its vectorizer off" in c["evalue"], c["evalue"]
        k.assert_alive("after its compiler crashed twice")
        reply, msgs = execute(k.kc, RECURRENCE.replace('d.platform == "Intel(R) OpenCL"',
                                                       'd.platform.startswith("Portable")'))
        assert stream_text(msgs).strip() == "True", describe(reply, msgs)


@needs_runtime
def test_a_build_that_never_ends_can_be_interrupted(tmp_path):
    """A compiler that never answers (a stand-in that sleeps): the cell waits, as for any
    long build, until the user interrupts; then it ends as KeyboardInterrupt, the helper is
    ended with it, and the kernel lives."""
    with kernel_with_helper(tmp_path, "while :; do sleep 1; done\n") as k:
        msg_id = k.kc.execute(RECURRENCE, allow_stdin=False)
        with pytest.raises(queue.Empty):
            k.kc.get_shell_msg(timeout=3)
        hung = helpers_of(k.pid)
        assert hung, "the build should wait in a helper"
        k.km.interrupt_kernel()
        reply = wait_reply(k.kc, msg_id)
        assert reply["content"]["status"] == "error", reply["content"]
        assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]
        assert not set(hung) & set(helpers_of(k.pid)), "the helper that hung should be gone"
        k.assert_alive("after interrupting a build")


@needs_runtime
def test_a_helper_that_finds_no_device_leaves_builds_here(tmp_path):
    """A helper that cannot serve the device (exit status 3): builds run in the kernel's
    process, as without one."""
    with kernel_with_helper(tmp_path, "exit 3\n") as k:
        reply, msgs = execute(k.kc, RECURRENCE)
        assert reply["content"]["status"] == "ok", describe(reply, msgs)
        assert stream_text(msgs).strip() == "True", describe(reply, msgs)


@needs_runtime
@pytest.mark.parametrize("value,helpers", [("1", 0), ("0", 1), ("", 1)])
def test_build_in_process_switch(value, helpers, tmp_path):
    """OFFLOAD_BUILD_IN_PROCESS=1 builds in the process; "0" or "" is as unset."""
    code = ("import os, offload as ol\n"
            "d = [d for d in ol.get_devices() if d.platform == 'Intel(R) OpenCL'][0]\n"
            "ol.zeros(4, device=d)\n"
            "print(os.getpid(), flush=True)\n"
            "import sys; sys.stdin.read()\n")
    p = subprocess.Popen([kernel_python(), "-c", code], cwd=tmp_path, stdout=subprocess.PIPE,
                         stdin=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(PYDIR), "OFFLOAD_CACHE": "0",
                              "OFFLOAD_BUILD_IN_PROCESS": value})
    try:  # the child waits on stdin, so that its helpers can be counted while it lives
        pid = int(p.stdout.readline())
        assert len(helpers_of(pid)) == helpers
    finally:
        p.stdin.close()
        p.wait(timeout=60)
