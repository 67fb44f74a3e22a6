"""Compiled kernels are cached in memory (per kernel object and argument types)
and on disk under $XDG_CACHE_HOME/offload, keyed by everything that makes the
code: source (of the kernel and the device functions it calls), the values of
the globals and closure variables it reads, argument types, target, compiler
version and device. OFFLOAD_CACHE=0 turns the disk cache off. A corrupt entry
is a miss, never wrong code. `k.stats` counts per kernel object:
{"compiles", "memory_hits", "disk_hits"}.

Every test runs fresh child processes (run_python) with XDG_CACHE_HOME in a
temporary directory, so the user's cache is never read or written, and with
the kernels in a module file of their own (a kernel needs its source file).
"""

from __future__ import annotations

import hashlib
import os
import re
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from offload_fixtures import BUILDDIR, CPU_FILTER, REPO, extension_path, load_offload, run_python

_ol = load_offload()  # a missing extension is a failure, not a skip

MODULE = """\
import offload as ol

SCALE = {scale}


@ol.device_func
def shift(v):
    return v + {shift}


@ol.kernel
def k(item, x, y):
    i = item.get_id(0)
    y[i] = shift(x[i] * SCALE) + {offset}


def make(c):
    @ol.kernel
    def kc(item, x, y):
        i = item.get_id(0)
        y[i] = x[i] * c
    return kc
"""

# Runs k (and optionally other launches) in the child; reports results and stats.
CHILD = """\
import sys
import numpy as np
import offload as ol
sys.path.insert(0, {moddir!r})
import kmod

def launch(kernel, dtype):
    x = ol.asarray(np.arange(16, dtype=dtype), device={dev!r})
    y = ol.asarray(np.zeros(16, dtype=dtype), device={dev!r})
    kernel[ol.Range(16)](x, y)
    return ol.asnumpy(y).tolist()

result["y"] = launch(kmod.k, np.{dtype})
result["stats"] = {{k: int(v) for k, v in dict(kmod.k.stats).items()}}
result["signatures"] = list(kmod.k.signatures)
"""


def expected(scale=2.0, shift=0.5, offset=1.0):
    return (np.arange(16, dtype=np.float64) * scale + shift + offset).tolist()


class Env:
    """A kernel module, a cache directory and the children that use them."""

    def __init__(self, tmp_path: Path, pocl_cache: Path):
        self.pocl_cache = pocl_cache
        self.moddir = tmp_path / "mods"
        self.moddir.mkdir()
        self.xdg = tmp_path / "xdg"
        self.xdg.mkdir()
        self.cache = self.xdg / "offload"
        self.write()

    def write(self, scale=2.0, shift=0.5, offset=1.0):
        (self.moddir / "kmod.py").write_text(MODULE.format(scale=scale, shift=shift, offset=offset))

    def run(self, extra: str = "", dtype="float32", env: dict | None = None) -> dict:
        code = CHILD.format(moddir=str(self.moddir), dev=CPU_FILTER, dtype=dtype) + textwrap.dedent(extra)
        # PoCL keeps its own cache under XDG_CACHE_HOME too: give it a directory
        # of its own, so that the offload cache's directory is all ours.
        full_env = {"XDG_CACHE_HOME": str(self.xdg), "OFFLOAD_CACHE": None, "PYTHONDONTWRITEBYTECODE": "1",
                    "OFFLOAD_DEVICE": None, "POCL_CACHE_DIR": str(self.pocl_cache)}
        full_env.update(env or {})
        return run_python(code, env=full_env, timeout=120)

    def files(self) -> list[Path]:
        """The JIT's entries: the built binaries in bin/ (Intel's runtime) are
        tests/test_binary_cache.py's."""
        return sorted(self.cache.glob("*.oflc")) if self.cache.exists() else []

    def all_files(self) -> list[Path]:
        return sorted(p for p in self.cache.rglob("*") if p.is_file()) if self.cache.exists() else []


@pytest.fixture(scope="session")
def pocl_cache(tmp_path_factory) -> Path:
    """PoCL's build cache, shared by the children of this session."""
    return tmp_path_factory.mktemp("pocl-cache")


@pytest.fixture
def env(tmp_path, pocl_cache) -> Env:
    return Env(tmp_path, pocl_cache)


def stats(r: dict) -> tuple:
    s = r["stats"]
    assert set(s) >= {"compiles", "memory_hits", "disk_hits"}, s
    return s["compiles"], s["memory_hits"], s["disk_hits"]


# ---------------------------------------------------------------- in memory


def test_memory_hits_and_signatures(env):
    r = env.run("""
        steps = []
        for dtype in (np.float32, np.float32, np.float64, np.float64, np.float32):
            y = launch(kmod.k, dtype)
            steps.append([len(kmod.k.signatures), dict(kmod.k.stats), y])
        result["steps"] = steps
        result["final_signatures"] = list(kmod.k.signatures)
    """)
    want = expected()
    counts = [s[0] for s in r["steps"]]
    # the CHILD's own first launch (float32) came before these five
    assert counts == [1, 1, 2, 2, 2], r["steps"]
    for _, _, y in r["steps"]:
        assert y == want
    final = r["steps"][-1][1]
    assert final["compiles"] == 2 and final["disk_hits"] == 0, final
    assert final["memory_hits"] == 4, final
    sigs = r["final_signatures"]
    assert len(sigs) == 2 and all(isinstance(s, str) for s in sigs), sigs
    assert any("float32" in s for s in sigs) and any("float64" in s for s in sigs), sigs


def test_fresh_process_compiles_once(env):
    r = env.run()
    assert r["y"] == expected()
    assert stats(r) == (1, 0, 0)
    assert len(r["signatures"]) == 1 and "float32" in r["signatures"][0], r["signatures"]
    assert env.files(), f"nothing was written under {env.cache}"


# ---------------------------------------------------------------- on disk


def test_second_process_hits_the_disk_cache(env):
    first = env.run()
    assert stats(first) == (1, 0, 0)
    files = env.files()
    second = env.run()
    assert second["y"] == expected()
    assert stats(second) == (0, 0, 1)
    assert env.files() == files, "a hit must not add entries"


def test_other_argument_types_are_other_entries(env):
    assert stats(env.run(dtype="float32")) == (1, 0, 0)
    r = env.run(dtype="float64")
    assert stats(r) == (1, 0, 0)
    assert r["y"] == expected()
    assert stats(env.run(dtype="float32")) == (0, 0, 1)
    assert stats(env.run(dtype="float64")) == (0, 0, 1)


def test_changed_kernel_source_misses(env):
    assert stats(env.run()) == (1, 0, 0)
    env.write(offset=7.0)
    r = env.run()
    assert r["y"] == expected(offset=7.0), "the new source must be used"
    assert stats(r) == (1, 0, 0)
    assert stats(env.run()) == (0, 0, 1)


def test_changed_device_func_misses(env):
    """Only the device function changes: the kernel's own source is the same."""
    assert stats(env.run()) == (1, 0, 0)
    env.write(shift=-3.25)
    r = env.run()
    assert r["y"] == expected(shift=-3.25)
    assert stats(r) == (1, 0, 0)


def test_changed_global_constant_misses(env):
    """A global read by the kernel is part of the key (its value is compiled in)."""
    assert stats(env.run()) == (1, 0, 0)
    env.write(scale=3.0)
    r = env.run()
    assert r["y"] == expected(scale=3.0)
    assert stats(r) == (1, 0, 0)
    env.write(scale=2.0)
    r = env.run()
    assert r["y"] == expected(scale=2.0)
    assert stats(r) == (0, 0, 1), "the first entry is still there"


def test_closure_values_are_part_of_the_key(env):
    extra = """
        k2, k5 = kmod.make(2.0), kmod.make(5.0)
        result["y2"], result["y5"] = launch(k2, np.float32), launch(k5, np.float32)
        result["s2"], result["s5"] = dict(k2.stats), dict(k5.stats)
    """
    r = env.run(extra)
    assert r["y2"] == (np.arange(16) * 2.0).tolist()
    assert r["y5"] == (np.arange(16) * 5.0).tolist(), "same source, other closure value: other code"
    assert (r["s2"]["compiles"], r["s2"]["disk_hits"]) == (1, 0)
    assert (r["s5"]["compiles"], r["s5"]["disk_hits"]) == (1, 0)
    r = env.run(extra)
    assert r["y2"] == (np.arange(16) * 2.0).tolist() and r["y5"] == (np.arange(16) * 5.0).tolist()
    assert (r["s2"]["compiles"], r["s2"]["disk_hits"]) == (0, 1)
    assert (r["s5"]["compiles"], r["s5"]["disk_hits"]) == (0, 1)


def test_cache_off_writes_nothing_and_reads_nothing(env):
    r = env.run(env={"OFFLOAD_CACHE": "0"})
    assert r["y"] == expected()
    assert stats(r) == (1, 0, 0)
    assert env.all_files() == [], f"OFFLOAD_CACHE=0 wrote {env.all_files()}"
    # with entries present, OFFLOAD_CACHE=0 does not read them either
    assert stats(env.run()) == (1, 0, 0)
    assert env.files()
    r = env.run(env={"OFFLOAD_CACHE": "0"})
    assert stats(r) == (1, 0, 0)
    assert r["y"] == expected()


@pytest.mark.parametrize("how", ["flip-middle", "truncate", "empty", "garbage"])
def test_corrupt_entries_are_misses(env, how):
    assert stats(env.run()) == (1, 0, 0)
    files = env.files()
    assert files
    for p in files:
        data = bytearray(p.read_bytes())
        if how == "flip-middle":
            mid = len(data) // 2
            for j in range(mid, min(mid + 16, len(data))):
                data[j] ^= 0xA5
        elif how == "truncate":
            data = data[: len(data) // 2]
        elif how == "empty":
            data = bytearray()
        else:
            data = bytearray(os.urandom(max(len(data), 64)))
        p.chmod(0o600)
        p.write_bytes(bytes(data))
    r = env.run()
    assert r["y"] == expected(), "a corrupt entry must never give wrong code"
    assert stats(r) == (1, 0, 0)
    # the entry was replaced: the next process hits it again
    r = env.run()
    assert r["y"] == expected()
    assert stats(r) == (0, 0, 1)


def test_unusable_cache_directory_is_not_an_error(env, tmp_path):
    not_a_dir = tmp_path / "plain-file"
    not_a_dir.write_text("not a directory")
    r = env.run(env={"XDG_CACHE_HOME": str(not_a_dir)})
    assert r["y"] == expected()
    assert stats(r) == (1, 0, 0)


def test_concurrent_processes_share_the_cache(env):
    results, errors = [], []

    def one():
        try:
            results.append(env.run())
        except BaseException as e:  # pytest.fail in a thread: report it below
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 4
    for r in results:
        assert r["y"] == expected()
        c, m, d = stats(r)
        assert c + d == 1 and m == 0, r["stats"]
    r = env.run()
    assert stats(r) == (0, 0, 1)
    assert not [p for p in env.files() if "tmp" in p.name.lower()], f"temporary files left: {env.files()}"


# ------------------------------------------- keys cover every input (item 5)

# Two kernels with one body: the module's vadd and a vadd defined inside a
# function. Their sources hash alike, but they are two programs with two
# entry points (ofl_vadd, ofl____locals__vadd): one must never be served the
# other's code.
VMOD = """\
import offload as ol


@ol.kernel
def vadd(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]


def make_local():
    @ol.kernel
    def vadd(item, a, b, c):
        i = item.get_id(0)
        c[i] = a[i] + b[i]
    return vadd
"""

VCHILD = """\
import sys
import numpy as np
import offload as ol
sys.path.insert(0, {moddir!r})
import vmod

def run(k):
    a = ol.asarray(np.arange(8, dtype=np.float32), device={dev!r})
    b = ol.asarray(np.full(8, 10, dtype=np.float32), device={dev!r})
    c = ol.asarray(np.zeros(8, dtype=np.float32), device={dev!r})  # no fill kernel in the cache
    k[ol.Range(8)](a, b, c)
    return ol.asnumpy(c).tolist()

result["y"] = [run(vmod.vadd if w == "module" else vmod.make_local()) for w in {which!r}]
"""

VADD = [float(10 + i) for i in range(8)]


def run_vadd(env: Env, which: list[str], extra_env: dict | None = None) -> dict:
    (env.moddir / "vmod.py").write_text(VMOD)
    code = VCHILD.format(moddir=str(env.moddir), dev=CPU_FILTER, which=which)
    full_env = {"XDG_CACHE_HOME": str(env.xdg), "OFFLOAD_CACHE": None, "PYTHONDONTWRITEBYTECODE": "1",
                "OFFLOAD_DEVICE": None, "POCL_CACHE_DIR": str(env.pocl_cache)}
    full_env.update(extra_env or {})
    return run_python(code, env=full_env, timeout=120)


def test_same_body_module_and_local_kernels_in_one_process(env):
    r = run_vadd(env, ["module", "local"])
    assert r["y"] == [VADD, VADD]
    assert len(env.files()) == 2, env.files()


def test_same_body_module_and_local_kernels_in_two_processes(env):
    assert run_vadd(env, ["module"])["y"] == [VADD]
    assert run_vadd(env, ["local"])["y"] == [VADD]  # the reproducer: found the module's entry
    assert run_vadd(env, ["local", "module"])["y"] == [VADD, VADD]
    assert len(env.files()) == 2, env.files()


def test_same_body_kernels_racing_processes(env):
    results, errors = [], []

    def one(which):
        try:
            results.append(run_vadd(env, which))
        except BaseException as e:  # pytest.fail in a thread: report it below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(w,)) for w in (["module"], ["local"]) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert [r["y"] for r in results] == [[VADD]] * 4
    assert len(env.files()) == 2, env.files()
    assert not [p for p in env.files() if "tmp" in p.name.lower()], f"temporary files left: {env.files()}"


@pytest.mark.parametrize("how", ["truncate", "garbage"])
def test_bad_entries_are_rebuilt_with_a_debug_line(env, how):
    assert run_vadd(env, ["module"])["y"] == [VADD]
    (entry,) = env.files()
    data = entry.read_bytes()
    entry.chmod(0o600)
    entry.write_bytes(data[: len(data) // 3] if how == "truncate" else os.urandom(len(data)))
    r = run_vadd(env, ["module"], {"OFFLOAD_LOG": "debug"})
    assert r["y"] == [VADD]
    assert "offload: cache: " in r["stderr"] and "rebuilding" in r["stderr"], r["stderr"]
    assert env.files() == [entry] and entry.read_bytes() != data[: len(data) // 3]
    # without OFFLOAD_LOG=debug the cache says nothing
    entry.write_bytes(b"short")
    r = run_vadd(env, ["module"])
    assert r["y"] == [VADD] and "offload: cache" not in r["stderr"]


# ---------------------------------------------------------------- the build's key


def test_the_build_key_is_the_hash_of_the_compilers_sources():
    """The disk entries' compiler key comes from the build (offload/ofl_build_key.h):
    SHA-256 over the JIT's and the runtime's sources, each file's path and bytes,
    so that any change to them (and a rebuild) makes a new key."""
    header = (BUILDDIR / "offload" / "ofl_build_key.h").read_text()
    files = re.findall(r"^ \* (\S+)$", header, re.M)
    assert "jit/jit_codegen.c" in files and "jit/jit_compile.c" in files, files
    assert "offload/ofl_program.c" in files and "offload/ofl_bincache.c" in files, files
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.encode() + b"\n" + (REPO / f).read_bytes())
    key = digest.hexdigest()[:16]
    assert f'#define OFL_BUILD_KEY "{key}"' in header, "ofl_build_key.h is older than the sources"
    assert _ol._build_key == key


def test_a_changed_compiler_never_serves_an_old_entry(env, tmp_path):
    """The same extension with another build key (its bytes patched, as a rebuilt
    compiler would differ) misses every entry the first one wrote, and the first
    one still finds its own."""
    report = 'result["key"] = ol._build_key\n'
    first = env.run(report)
    assert stats(first) == (1, 0, 0) and stats(env.run(report)) == (0, 0, 1)
    so = extension_path()
    old = first["key"].encode()
    new = hashlib.sha256(old).hexdigest()[:16].encode()
    data = so.read_bytes()
    assert data.count(old) >= 1, "the build key is not in the extension's bytes"
    patched = tmp_path / "patched"
    patched.mkdir()
    (patched / so.name).write_bytes(data.replace(old, new))
    other = env.run(report, env={"PYTHONPATH": str(patched)})
    assert other["key"] == new.decode(), "the child did not load the patched extension"
    assert other["y"] == expected()
    assert stats(other) == (1, 0, 0), "an entry written by another build was served"
    assert stats(env.run(report)) == (0, 0, 1)
