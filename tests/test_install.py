"""`make install` puts the kernel, its kernelspec, the glue, the build helper and
the offload module (for the configured python3) where they belong; checked in a
DESTDIR."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig

from kernel_testlib import BUILDDIR


def test_make_install_into_destdir(tmp_path):
    dest = tmp_path / "root"
    subprocess.run(["make", "-s", "-C", str(BUILDDIR), "install", f"DESTDIR={dest}"], check=True,
                   stdout=subprocess.DEVNULL)
    files = [p for p in dest.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert "offload-kernel" in names
    # the helper that builds for Intel's CPU runtime apart (offload/ofl_buildproc.c)
    helper = [p for p in files if p.name == "offload-clbuild"]
    assert helper and str(helper[0]).endswith("/libexec/offload/offload-clbuild"), sorted(names)
    assert os.access(helper[0], os.X_OK)
    assert "kernel.json" in names and "__init__.py" in names

    spec = json.loads(next(p for p in files if p.name == "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (offload)"
    assert spec["argv"][0].endswith("/bin/offload-kernel") and spec["argv"][1:] == ["-f", "{connection_file}"]
    assert spec["interrupt_mode"] == "signal" and spec["language"] == "python"

    ext = sysconfig.get_config_var("EXT_SUFFIX")
    module = [p for p in files if p.name == "offload" + ext]
    assert module, f"offload{ext} not installed; installed: {sorted(names)}"
    platlib = sysconfig.get_path("platlib")
    assert str(module[0]).endswith(platlib + "/offload" + ext)
    out = subprocess.run([sys.executable, "-c", "import offload; print(offload.__file__)"],
                         env={**os.environ, "PYTHONPATH": str(module[0].parent)},
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(module[0])
