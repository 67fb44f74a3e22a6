"""Shared pieces of the fuzzers in tests/fuzz/: seeds, budgets, and running a
script in a child interpreter whose crash is a result rather than a dead pytest.

Seeds: each fuzzer runs once with a fixed seed (the same cases on every run, so a
CI failure reproduces) and once with a fresh random seed that it prints; replay
any run with OFFLOAD_FUZZ_SEED=<n> (both runs then use n).
Budget: OFFLOAD_FUZZ_SECONDS (default 8 per run, so about 16 s per fuzzer) bounds
how long a fuzzer keeps generating cases; it is a bound on work, never an
assertion about speed.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

FIXED_SEED = 20240518
DEFAULT_SECONDS = 8.0  # per seed: the fixed run and the random run together stay under ~20 s

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
REPO = TESTS.parent
BUILDDIR = Path(os.environ.get("OFFLOAD_BUILDDIR") or REPO).resolve()
PYDIR = BUILDDIR / "python"


def budget_seconds() -> float:
    return float(os.environ.get("OFFLOAD_FUZZ_SECONDS") or DEFAULT_SECONDS)


def seeds() -> list[tuple[str, int]]:
    """(label, seed) pairs for pytest.mark.parametrize: the fixed one and a random one,
    or just the replayed one when OFFLOAD_FUZZ_SEED is set."""
    forced = os.environ.get("OFFLOAD_FUZZ_SEED")
    if forced:
        return [("replay", int(forced))]
    return [("fixed", FIXED_SEED), ("random", secrets.randbits(32))]


def seed_ids() -> list[str]:
    return [label for label, _ in seeds()]


def announce(name: str, seed: int) -> None:
    """Printed into the test's captured stdout (pytest shows it for a failure; -s shows it always)."""
    print(f"{name}: seed {seed}; replay with OFFLOAD_FUZZ_SEED={seed} "
          f"python3 -m pytest tests/fuzz/{name}.py -s", flush=True)


class Budget:
    """Work may start while time is left (a case already running is never cut short)."""

    def __init__(self, seconds: float | None = None):
        self.seconds = budget_seconds() if seconds is None else seconds
        self.start = time.monotonic()

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.start)

    def __bool__(self) -> bool:
        return self.left() > 0


# ----------------------------------------------------------------------------
# Child interpreters


@dataclass
class Child:
    returncode: int | None  # None: killed after the timeout
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def crashed(self) -> bool:
        """Died of a signal (segfault, abort) or exited without Python's own error path
        (LLVM's report_fatal_error and SPIR-V translators call exit() with their own codes)."""
        return self.returncode is not None and self.returncode not in (0, 1)

    def how(self) -> str:
        if self.timed_out:
            return "timed out (killed)"
        rc = self.returncode
        if rc is not None and rc < 0:
            try:
                return f"killed by signal {-rc} ({signal.Signals(-rc).name})"
            except ValueError:
                return f"killed by signal {-rc}"
        return f"exit status {rc}"

    def describe(self, limit: int = 3000) -> str:
        return (f"{self.how()}\n--- stderr ---\n{self.stderr[-limit:]}\n"
                f"--- stdout ---\n{self.stdout[-limit:]}")


def child_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PYDIR)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # Fresh compiles: the disk cache would hide a crash of the compiler behind an earlier hit.
    env.setdefault("OFFLOAD_CACHE", "0")
    env["PYTHONFAULTHANDLER"] = "1"  # a segfault prints the Python stack it happened under
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run_script(code: str, *, env: dict | None = None, timeout: float = 60,
               directory: Path | None = None, name: str = "fuzzcase.py") -> Child:
    """Run code as a file (kernels are compiled from their source, so it must be a real
    file) in a fresh python3; never raises for the child's failure."""
    d = Path(directory or tempfile.mkdtemp(prefix="offload-fuzz-"))
    path = d / name
    path.write_text(textwrap.dedent(code))
    # cwd: not the repository root, whose offload/ directory would be a namespace package
    p = subprocess.Popen([sys.executable, str(path)], cwd=str(d), env=child_env(env),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return Child(p.returncode, out, err, False)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return Child(None, out, err, True)
