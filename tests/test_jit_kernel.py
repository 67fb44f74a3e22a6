"""Device kernels from notebook cells, through jupyter_client as a notebook
would: a kernel defined in one cell and launched in another (its source comes
from the cell through linecache), a CompileError pointing into the cell, and the
Jupyter kernel alive afterwards. CI's device is PoCL's CPU device.
"""

from __future__ import annotations

import re

from kernel_testlib import describe, execute, of_type, strip_ansi

DEFINE = """\
import numpy as np, offload as ol, math

@ol.kernel
def saxpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]
"""


def ok(kc, code):
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    return msgs


def test_kernel_from_a_cell_runs(kc):
    ok(kc, DEFINE)
    msgs = ok(kc, """\
rng = np.random.default_rng()
x = rng.random(1001, dtype=np.float32); y0 = rng.random(1001, dtype=np.float32)
dx, dy = ol.asarray(x, device="opencl:cpu:0"), ol.asarray(y0, device="opencl:cpu:0")
ev = ol.call_kernel_async(saxpy, ol.Range(1001), 2.5, dx, dy)
ev.wait()
got = ol.asnumpy(dy)
print(bool(np.array_equal(got, np.float32(2.5) * x + y0)), ev.elapsed >= 0, len(saxpy.signatures))
""")
    out = "".join(m["content"]["text"] for m in of_type(msgs, "stream") if m["content"]["name"] == "stdout")
    assert out.split() == ["True", "True", "1"], out


def test_compile_error_points_into_the_cell(kc):
    reply, msgs = execute(kc, """\
import offload as ol, numpy as np

@ol.kernel
def bad(item, a):
    i = item.get_id(0)
    a[i] = {1: 2}
""")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    reply, msgs = execute(kc, "bad[ol.Range(4)](np.zeros(4))")
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "CompileError", describe(reply, msgs)
    text = strip_ansi(c["evalue"])
    lines = text.splitlines()
    assert re.match(r".+:6:12: a dict is not supported in kernels$", lines[0]), text
    assert lines[1] == "    a[i] = {1: 2}", text
    assert lines[2] == "           ^", text
    # the kernel process is fine and still runs device code
    msgs = ok(kc, "x = ol.asarray(np.arange(3.0)); print(float(ol.asnumpy(x).sum()))")
    assert "3.0" in "".join(m["content"].get("text", "") for m in of_type(msgs, "stream"))
