"""pytest set-up for the offload Jupyter kernel tests.

The kernel is found through its kernelspec: `make` writes
<builddir>/share/jupyter/kernels/offload/kernel.json, and this file puts
<builddir>/share/jupyter first on JUPYTER_PATH (builddir = $OFFLOAD_BUILDDIR,
default the repository root). Tests talk to the kernel only as a frontend
would: jupyter_client, or raw ZeroMQ sockets for the garbage cases.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_testlib import BUILDDIR, KERNEL_NAME, Kernel, start_kernel  # noqa: E402

SHARE = BUILDDIR / "share" / "jupyter"
os.environ["JUPYTER_PATH"] = os.pathsep.join(
    [str(SHARE)] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
)

# seconds per test unless a test says otherwise: CI starts on empty caches, where PoCL builds
# every kernel a test launches first (0.5-0.9 s each on a 2-core machine), which took some
# tests past 60 s
DEFAULT_TIMEOUT = 120

# the vendored array API suite runs as a process of its own (test_array_api_conformance.py)
collect_ignore = ["array-api-tests"]

try:
    import pytest_timeout  # noqa: F401

    HAVE_TIMEOUT = True
except ImportError:  # pragma: no cover
    HAVE_TIMEOUT = False


def pytest_configure(config):
    config.addinivalue_line("markers", "timeout(seconds): per-test time limit (pytest-timeout)")
    if not HAVE_TIMEOUT:
        sys.stderr.write(
            "warning: pytest-timeout is not installed (python3 -m pip install pytest-timeout); "
            "a hung kernel will hang the test run\n"
        )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TIMEOUT))


def _kernelspec_problem() -> str | None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        if KERNEL_NAME != "offload":
            return f"kernelspec {KERNEL_NAME!r} (from OFFLOAD_TEST_KERNEL) not found"
        return (
            f"the 'offload' kernelspec is missing: no {SHARE}/kernels/offload/kernel.json.\n"
            f"Build the kernel first (in {BUILDDIR}): autoreconf -fi && ./configure && make\n"
            "(or set OFFLOAD_BUILDDIR to the build directory)."
        )
    exe = spec.argv[0] if spec.argv else ""
    if KERNEL_NAME == "offload" and not (os.path.isabs(exe) and os.access(exe, os.X_OK)) and not shutil.which(exe):
        return f"the 'offload' kernelspec names {exe!r}, which is not an executable: run make in {BUILDDIR}"
    return None


def pytest_report_header(config):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
        return f"kernel under test: {KERNEL_NAME} -> {' '.join(spec.argv)}"
    except NoSuchKernel:
        return f"kernel under test: {KERNEL_NAME} (kernelspec not found)"


def pytest_sessionstart(session):
    problem = _kernelspec_problem()
    if problem:
        pytest.exit(f"offload tests cannot run: {problem}", returncode=1)


# ----------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def kernel(tmp_path_factory, request) -> Kernel:
    """One started kernel shared by the tests of a module (for tests that leave it usable)."""
    log = tmp_path_factory.mktemp("kernel") / f"{request.module.__name__}.stderr"
    k = start_kernel(log)
    yield k
    k.shutdown()


@pytest.fixture
def kc(kernel):
    """The shared kernel's client, with stale messages drained."""
    from kernel_testlib import drain

    drain(kernel.kc, settle=0.05)
    return kernel.kc


@pytest.fixture
def fresh_kernel(tmp_path) -> Kernel:
    """A kernel of the test's own, for tests that interrupt, restart or attack it."""
    k = start_kernel(tmp_path / "kernel.stderr")
    yield k
    k.shutdown()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for name, value in getattr(item, "funcargs", {}).items():
            if isinstance(value, Kernel):
                report.sections.append((f"kernel stderr ({name})", value.log()[-6000:]))
