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
