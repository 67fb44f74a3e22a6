"""The JIT's device library (jit/lib/complex.py, docs/complex.md): complex
division, run-time powers and math functions as device functions in the kernel
language, parsed once per process and inlined into each kernel.

- an integer exponent known only at run time (cpow's squarings) gives the same
  bits as the same exponent written as a constant (unrolled by the compiler);
- kernels calling the library compile on several threads at once (one parsed
  library, typed under a lock) and agree with NumPy.
"""

from __future__ import annotations

import linecache
import threading

import numpy as np
import pytest

from offload_fixtures import device_fixture, load_offload  # noqa: F401

ol = load_offload()

device = device_fixture(ol)

CDTYPES = ["complex64", "complex128"]


def kernel(name, expr, params="x"):
    """An @ol.kernel out[i] = expr, from text (registered in linecache, where the JIT reads it)."""
    src = f"@ol.kernel\ndef {name}(item, out, {params}):\n    i = item.get_id(0)\n    out[i] = {expr}\n"
    filename = f"<test_jit_complex_library {name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"ol": ol, "np": np}
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def values(dtype):
    rng = np.random.default_rng(7)
    z = (rng.uniform(-3, 3, 64) + 1j * rng.uniform(-3, 3, 64)).astype(dtype)
    # not 0: 0 ** -n is NaN at run time (NumPy's cpow) and 1 / 0 for a constant
    return np.concatenate([z, np.array([1j, -1, 1e30 + 1e-30j, complex(np.inf, 1)], dtype)])


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("n", [-3, -2, -1, 0, 1, 2, 3, 7, 99])
def test_runtime_integer_power_is_the_constant_one(device, dtype, n):
    const = kernel(f"const_{n + 10}", f"x[i] ** {n}")
    runtime = kernel("runtime", "x[i] ** e[i]", "x, e")

    x = values(dtype)
    e = np.full(x.size, complex(n, 0), dtype)
    outs = []
    for k, args in ((const, (x,)), (runtime, (x, e))):
        o = ol.asarray(np.zeros_like(x), device=device)
        k[ol.Range(x.size)](o, *[ol.asarray(a, device=device) for a in args])
        outs.append(ol.asnumpy(o))
    assert outs[0].tobytes() == outs[1].tobytes(), (outs[0], outs[1])


def test_kernels_compile_the_library_on_threads(device):
    exprs = ["np.exp(x[i]) / x[i]", "np.arcsin(x[i]) + np.sqrt(x[i])", "np.tanh(x[i]) ** x[i]",
             "np.arctanh(x[i]) * np.log10(x[i])"]
    x = values("complex128")[:64]
    errors, results = [], {}

    def run(k, expr):
        try:
            o = ol.asarray(np.zeros_like(x), device=device)
            kernel(f"k{k}", expr)[ol.Range(x.size)](o, ol.asarray(x, device=device))
            results[k] = ol.asnumpy(o)
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k, e)) for k, e in enumerate(exprs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with np.errstate(all="ignore"):
        for k, expr in enumerate(exprs):
            want = eval(expr.replace("x[i]", "x"), {"np": np, "x": x})
            np.testing.assert_allclose(results[k], want, rtol=1e-12, atol=1e-300)


# A process parses the library at its first kernel that needs it: one naming a complex
# value or type, or launched with a complex argument. Each case runs in a process of its
# own, where nothing complex came before, and compares with NumPy.
FIRST_NEED = {
    "complex arguments": ("out[i] = np.exp(x[i]) / y[i]", "c", "np.exp(x) / y"),
    "a complex literal": ("out[i] = abs(np.sqrt(x[i] * 1j))", "f", "np.abs(np.sqrt(x * 1j))"),
    "complex()": ("out[i] = abs(np.log(complex(x[i], y[i])))", "f",
                  "np.abs(np.log(x + 1j * y))"),
    "a complex dtype": ("out[i] = abs(np.exp(np.complex128(x[i])))", "f",
                        "np.abs(np.exp(x.astype(np.complex128)))"),
}

FIRST_NEED_SCRIPT = r"""
import sys, numpy as np
sys.path.insert(0, PYDIR)
import offload as ol
@ol.kernel
def k(item, out, x, y):
    i = item.get_id(0)
    BODY
rng = np.random.default_rng(3)
kind = KIND
x = rng.uniform(0.5, 2, 100)
y = rng.uniform(0.5, 2, 100)
if kind == "c":
    x, y = x + 1j * rng.uniform(-1, 1, 100), y - 1j * rng.uniform(-1, 1, 100)
out = ol.asarray(np.full(100, np.nan, x.dtype if kind == "c" else np.float64), device=DEVICE)
k[ol.Range(100)](out, ol.asarray(x, device=DEVICE), ol.asarray(y, device=DEVICE))
np.testing.assert_allclose(ol.asnumpy(out), WANT, rtol=1e-12)
print("ok")
"""


@pytest.mark.parametrize("case", list(FIRST_NEED))
def test_library_loads_at_first_need(device, case, tmp_path):
    import subprocess
    import sys

    from offload_fixtures import PYDIR

    if not device.has_fp64:
        pytest.skip(f"{device} has no float64")
    body, kind, want = FIRST_NEED[case]
    script = (FIRST_NEED_SCRIPT.replace("PYDIR", repr(str(PYDIR))).replace("BODY", body)
              .replace("KIND", repr(kind)).replace("WANT", want)
              .replace("DEVICE", repr(device.filter_string)))
    path = tmp_path / "first_need.py"  # a file: kernels compile from their source
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
