"""The Python array API's public conformance suite, data-apis/array-api-tests
(vendored in tests/array-api-tests, see its VENDORED.md), against `offload`
(issue 22, item 6; issue 37, item 5).

Each file of the suite (array_api_tests/test_*.py) runs as a pytest process of
its own, one test here per file and platform, each with its own time limit,
JUnit report and summary line: ARRAY_API_TESTS_MODULE=offload, API version
2024.12, hypothesis with --max-examples OFFLOAD_API_MAX_EXAMPLES (default 20;
the suite's own default is 100), derandomised (set OFFLOAD_API_DERANDOMIZE=0
to explore). The suite's unary special cases draw their one example with
hypothesis's .example(), which no seed fixes, so those differ from run to run.
The linalg and fft extensions (offload.linalg, offload.fft: issue 23) run too.

Every file runs on Intel's OpenCL CPU runtime (opencl:cpu:0 where scripts/setup
has installed it), whose builds take tens of milliseconds. The files of
POCL_FILES, those whose tests launch many different kernels, run on PoCL (the
system's OpenCL platforms only) as well, so that its path (the SPIR-V
translated to SPIR 1.2) meets the suite's examples too; a PoCL build costs
0.5-0.9 s on an empty cache. CI runs them on empty caches (.ci/run). When a
file runs past its limit, the platform's remaining files are skipped: a hung
build would most likely hang them too, and each would spend its whole limit.

Every test the suite is expected to fail is listed, with its reason, in
tests/array-api-xfails.txt (the suite's --xfails-file format: one test id per
line, `#` comments). A file's test fails when a test outside that list fails,
or when a listed id no longer names a test; test_pass_rate requires 95% of the
tests that ran in this session's files to pass. A listed test that passed is
named in the summary line (the random special cases make that no proof that it
is fixed). Reproduce a failure by hand with the command a test prints.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from offload_fixtures import PYDIR

HERE = Path(__file__).parent
SUITE = HERE / "array-api-tests"
XFAILS = HERE / "array-api-xfails.txt"
MAX_EXAMPLES = int(os.environ.get("OFFLOAD_API_MAX_EXAMPLES", "20"))
DERANDOMIZE = os.environ.get("OFFLOAD_API_DERANDOMIZE", "1") != "0"

pytest.importorskip("hypothesis", reason="the conformance suite needs hypothesis (scripts/setup)")
pytest.importorskip("ndindex", reason="the conformance suite needs ndindex (scripts/setup)")

# How each platform is chosen. Intel's runtime is found by offload itself (it is not in
# /etc/OpenCL/vendors), so its run must not set OCL_ICD_VENDORS; PoCL's run names the
# system's vendors directory, where PoCL is the only CPU platform.
PLATFORMS = {
    "intel": {"OCL_ICD_VENDORS": None, "OCL_ICD_FILENAMES": None, "OFFLOAD_DEVICE": "opencl:cpu:0"},
    "pocl": {"OCL_ICD_VENDORS": "/etc/OpenCL/vendors", "OCL_ICD_FILENAMES": None,
             "OFFLOAD_DEVICE": "opencl:cpu"},
}

# Seconds a file may take on Intel's runtime: about five times what it took on a cold 2-core
# machine of CI's kind (empty caches, two other test runs beside it), 120 unless listed here.
INTEL_LIMITS = {
    "test_linalg.py": 180,
    "test_signatures.py": 180,
    "test_operators_and_elementwise_functions.py": 300,
    "test_special_cases.py": 400,
}

# The files that run on PoCL as well, with their limits (measured as above; the whole suite
# took 6.7 minutes there, these 4.5). Left out: the files that check names, signatures,
# constants and dtypes (next to no kernels), DLPack, and linalg and fft, which CPU devices
# hand to the host's LAPACK and pocketfft.
POCL_FILES = {
    "test_array_object.py": 120,
    "test_creation_functions.py": 150,
    "test_indexing_functions.py": 120,
    "test_manipulation_functions.py": 120,
    "test_operators_and_elementwise_functions.py": 320,
    "test_searching_functions.py": 120,
    "test_set_functions.py": 120,
    "test_sorting_functions.py": 120,
    "test_special_cases.py": 300,
    "test_statistical_functions.py": 120,
    "test_utility_functions.py": 120,
}


def suite_files() -> list[str]:
    return sorted(p.name for p in (SUITE / "array_api_tests").glob("test_*.py"))


def cases() -> list:
    out = []
    for platform in ("intel", "pocl"):
        for name in suite_files():
            if platform == "pocl" and name not in POCL_FILES:
                continue
            limit = POCL_FILES[name] if platform == "pocl" else INTEL_LIMITS.get(name, 120)
            out.append(pytest.param(platform, name, limit, id=f"{platform}-{name.removesuffix('.py')}",
                                    marks=pytest.mark.timeout(limit + 60)))
    return out


def listed_xfails(name: str) -> list[str]:
    """The ids that tests/array-api-xfails.txt lists for this file."""
    lines = (line.strip() for line in XFAILS.read_text().splitlines())
    return [line for line in lines if line.split("::")[0] == f"array_api_tests/{name}"]


def outcomes(junit: Path) -> dict[str, list[str]]:
    """Test ids by outcome (passed, failed, skipped, xfailed) from pytest's JUnit XML
    (xunit1, whose `file` attribute gives the ids as pytest and the xfails file spell them)."""
    out: dict[str, list[str]] = {k: [] for k in ("passed", "failed", "skipped", "xfailed")}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("file")
        module = path.removesuffix(".py").replace("/", ".")
        inner = case.get("classname").removeprefix(module).lstrip(".")
        name = "::".join([path] + ([inner] if inner else []) + [case.get("name")])
        kids = {child.tag: child for child in case}
        if "failure" in kids or "error" in kids:
            out["failed"].append(name)
        elif "skipped" in kids:
            kind = kids["skipped"].get("type", "")
            out["xfailed" if kind == "pytest.xfail" else "skipped"].append(name)
        else:
            out["passed"].append(name)
    return out


def matches(test_id: str, listed: str) -> bool:
    """Whether a listed id names this test, as the suite's check_id_match has it: the whole id,
    the id without its parameters, or a class of tests."""
    return test_id == listed or test_id.split("[", 1)[0] == listed or test_id.startswith(listed + "::")


@pytest.fixture(scope="module")
def device_of():
    """The default device of each platform's environment, probed once: a run on Intel's
    runtime must be on it (SPIR-V as IL), not on PoCL, which takes opencl:cpu:0 where
    Intel's runtime is missing."""
    found = {}

    def probe(platform: str) -> tuple[str, str]:
        if platform not in found:
            code = "import offload as ol; d = ol.default_device(); print(repr((d.name, d.il_version)))"
            env = child_env(platform)
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, timeout=120)
            assert r.returncode == 0, f"offload did not start on {platform}:\n{r.stderr[-3000:]}"
            found[platform] = ast.literal_eval(r.stdout.strip().splitlines()[-1])
        return found[platform]

    return probe


def child_env(platform: str) -> dict[str, str]:
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="offload", ARRAY_API_TESTS_VERSION="2024.12",
               PYTHONPATH=os.pathsep.join([str(PYDIR), os.environ.get("PYTHONPATH", "")]))
    for key, value in PLATFORMS[platform].items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


# Counts of every file that ran in this session, for test_pass_rate.
RESULTS: dict[tuple[str, str], dict[str, int]] = {}
# The file that ran past its limit, by platform.
HUNG: dict[str, str] = {}


@pytest.mark.parametrize("platform, name, limit", cases())
def test_suite_file(platform, name, limit, tmp_path, device_of):
    device, il = device_of(platform)
    if platform == "intel" and not il:
        pytest.skip(f"Intel's OpenCL CPU runtime is not installed (the default device is {device}; "
                    "scripts/setup installs it on x86-64 unless OFFLOAD_SKIP_INTEL=1)")
    if platform == "pocl":
        assert not il, f"PoCL's run found a device that takes SPIR-V as IL: {device}"
    if platform in HUNG:
        pytest.skip(f"{HUNG[platform]} ran past its limit on {device}")
    listed = listed_xfails(name)
    xfails = tmp_path / "xfails.txt"
    xfails.write_text("".join(f"{i}\n" for i in listed))
    junit = tmp_path / "suite.xml"
    cmd = [sys.executable, "-m", "pytest", f"array_api_tests/{name}", "-v", "-rX", "-p", "no:cacheprovider",
           f"--max-examples={MAX_EXAMPLES}", "--hypothesis-disable-deadline",
           "--xfails-file", str(xfails), f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    if DERANDOMIZE:
        cmd.append("--hypothesis-derandomize")
    env = child_env(platform)
    settings = " ".join(f"{k}={v}" for k, v in PLATFORMS[platform].items() if v is not None)
    unset = " ".join(f"-u {k}" for k, v in PLATFORMS[platform].items() if v is None)
    again = (f"cd {SUITE} && env {unset} ARRAY_API_TESTS_MODULE=offload ARRAY_API_TESTS_VERSION=2024.12 "
             f"{settings} PYTHONPATH={PYDIR} {' '.join(cmd)}")
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=SUITE, env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        HUNG[platform] = name
        pytest.fail(f"{name} on {platform} ran past its {limit} s (the last tests it started are "
                    f"at the end):\n{out[-3000:]}\nrerun: {again}")
    took = time.monotonic() - start
    assert junit.exists(), f"the suite did not run:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}\n{again}"
    got = outcomes(junit)
    ran = len(got["passed"]) + len(got["failed"]) + len(got["xfailed"])
    RESULTS[platform, name] = {"passed": len(got["passed"]), "ran": ran}
    # JUnit counts a listed test that passed as passed; pytest's -rX summary names it.
    xpassed = re.findall(r"^XPASS (.*?)(?: - --xfails-file .*)?$", proc.stdout, re.M)
    summary = ", ".join(f"{len(v)} {k}" for k, v in got.items())
    print(f"\n{name} on {device} (--max-examples={MAX_EXAMPLES}): {summary} in {took:.0f} s"
          + "".join(f"\n  listed, but passed: {t}" for t in xpassed))
    assert sum(len(v) for v in got.values()) > 0, f"{name} collected no tests:\n{proc.stdout[-4000:]}"
    assert not got["failed"], (
        f"{len(got['failed'])} conformance tests failed on {device} that {XFAILS.name} does not list "
        f"(fix them, or list them there with the reason):\n  " + "\n  ".join(got["failed"][:60])
        + f"\n{proc.stdout[-3000:]}\nrerun: {again}")
    every = [t for ts in got.values() for t in ts]
    stale = [i for i in listed if not any(matches(t, i) for t in every)]
    assert not stale, f"{XFAILS.name} lists tests that {name} does not have:\n  " + "\n  ".join(stale)


def test_pass_rate():
    """95% of the conformance tests that ran in this session's files pass (the rest are the
    listed expected failures): the list must stay short."""
    if not RESULTS:
        pytest.skip("no file of the conformance suite ran in this session")
    passed = sum(r["passed"] for r in RESULTS.values())
    ran = sum(r["ran"] for r in RESULTS.values())
    print(f"\narray-api-tests, {len(RESULTS)} runs of its files: {passed} of the {ran} that ran pass")
    assert ran > 0 and passed / ran >= 0.95, f"{passed / ran:.1%} of the conformance tests that ran pass (95% wanted)"
