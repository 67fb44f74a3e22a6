"""Built program binaries on disk (issue 37, item 3; offload/ofl_bincache.c).

Intel's CPU runtime builds SPIR-V in the helper offload-clbuild; the binary it hands back is
kept in $XDG_CACHE_HOME/offload/bin, so that a new process loads it and starts no helper.
Entries that do not check out (torn, corrupt, another driver's) are built again. Each case
runs children with their own XDG_CACHE_HOME.
"""
from __future__ import annotations

import hashlib
import os
import struct
import subprocess
from pathlib import Path

import pytest

from offload_fixtures import PYDIR
from test_intel_runtime import LIB, kernel_python

pytestmark = pytest.mark.skipif(LIB is None, reason="intel-opencl-rt is not installed")

CHILD = """
import os, json, numpy as np, offload as ol
from pathlib import Path
dev = [d for d in ol.get_devices() if d.platform == "Intel(R) OpenCL"][0]

@ol.kernel
def axpb(item, x, y):
    i = item.get_id(0)
    y[i] = x[i] * 4 + 1

x = ol.asarray(np.arange(100, dtype=np.float32), device=dev)
y = ol.empty_like(x)
ol.call_kernel(axpb, ol.Range(100), x, y)
ok = bool(np.array_equal(y.asnumpy(), np.arange(100, dtype=np.float32) * 4 + 1))
helpers = 0
for stat in Path("/proc").glob("[0-9]*/stat"):
    try:
        f = stat.read_text().rsplit(")", 1)
        helpers += f[0].split("(", 1)[1] == "offload-clbuild" and int(f[1].split()[1]) == os.getpid()
    except (OSError, IndexError, ValueError):
        pass
print(json.dumps({"ok": ok, "helpers": helpers}))
"""


def run(tmp_path: Path, **extra) -> dict:
    import json
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(PYDIR), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    for name in ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "OFFLOAD_DEVICE", "OFFLOAD_CACHE",
                 "OFFLOAD_CLBUILD", "OFFLOAD_BUILD_IN_PROCESS"):
        env.pop(name, None)
    env.update(extra)
    p = subprocess.run([kernel_python(), str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "xdg" / "offload" / "bin").glob("*.oflb"))


def test_a_warm_start_loads_binaries_and_starts_no_helper(tmp_path):
    cold = run(tmp_path)
    assert cold == {"ok": True, "helpers": 1}, cold
    assert entries(tmp_path), "the cold run should have kept its binaries"
    warm = run(tmp_path)
    assert warm == {"ok": True, "helpers": 0}, warm


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "empty"])
def test_a_corrupt_binary_is_built_again(tmp_path, damage):
    run(tmp_path)
    files = entries(tmp_path)
    for f in files:
        data = bytearray(f.read_bytes())
        if damage == "flip a byte":
            data[len(data) // 2 + 40] ^= 0xFF
        elif damage == "truncate":
            data = data[: len(data) // 2]
        else:
            data = bytearray()
        f.write_bytes(bytes(data))
    again = run(tmp_path)
    assert again == {"ok": True, "helpers": 1}, again
    for f in files:  # written anew, whole
        assert f.stat().st_size > 200, f


def test_a_binary_the_driver_refuses_is_built_again(tmp_path):
    """An entry that checks out (its bytes match their SHA-256) but is no binary of this
    device's: the driver refuses it, the entry is deleted and the kernel built again."""
    run(tmp_path)
    files = entries(tmp_path)
    for f in files:
        head = f.read_bytes()[:52]  # magic, flags, length, key
        junk = b"not a program binary, but a well-formed entry" * 8
        f.write_bytes(head[:12] + struct.pack("<Q", len(junk)) + head[20:52]
                      + hashlib.sha256(junk).digest() + junk)
    again = run(tmp_path)
    assert again == {"ok": True, "helpers": 1}, again
    assert all(b"well-formed" not in f.read_bytes() for f in entries(tmp_path))


def test_offload_cache_0_keeps_no_binaries(tmp_path):
    first = run(tmp_path, OFFLOAD_CACHE="0")
    assert first == {"ok": True, "helpers": 1}, first
    assert not entries(tmp_path)
