"""Device kernels (@ol.kernel, DESIGN.md "The Python surface" -> "Device
kernels"): the corpus of tests/jit_corpus.py run on PoCL's CPU device and, where
offload finds one, on the first CUDA GPU, each result checked against NumPy;
the launch forms (k[Range], call_kernel, call_kernel_async), NumPy arguments,
introspection (inspect_llvm / inspect_spirv / inspect_ptx, signatures) and
"nothing silently becomes float64".

Imports only numpy, pytest and offload_fixtures (the GPU machine runs
`pytest tests/test_jit_corpus.py --noconftest`). A failure prints the seed:
OFFLOAD_TEST_SEED=<n> reruns with the same inputs.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from offload_fixtures import CPU_FILTER, device_filters, load_offload

_ol = load_offload()  # a missing extension is a failure, not a skip

import jit_corpus as jc  # noqa: E402  (after the guard)
from jit_corpus import CASES, In, Launch, Out, run_case  # noqa: E402

DEVICES = device_filters(_ol)


@pytest.fixture(scope="module")
def ol():
    return _ol


@pytest.fixture(scope="module", params=DEVICES)
def device(request, ol):
    devs = [d for d in ol.get_devices() if d.filter_string == request.param]
    if not devs:
        pytest.fail(f"no {request.param} device; offload.get_devices() = {ol.get_devices()!r}", pytrace=False)
    return devs[0]


# ---------------------------------------------------------------- the corpus


def test_corpus_covers_enough_kernels():
    names = jc.kernel_names()
    assert len(names) >= 45, sorted(names)
    assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus(ol, device, case):
    run_case(ol, case, device)


def test_corpus_twice_with_new_inputs(ol, device):
    """Compiled code is reused: a second launch with other data is right too."""
    for name in ["saxpy", "matmul", "int_divmod[int32]", "collatz", "ids3[5x7x3]"]:
        c = next(c for c in CASES if c.name == name)
        for seed in (1, 2):
            run_case(ol, c, device, seed=jc.SEED + seed)


# ---------------------------------------------------------------- launch forms


def _saxpy_data(ol, device, n=1000):
    rng = np.random.default_rng(jc.SEED)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    want = (2.0 * x.astype(np.float64) + y).astype(np.float32)
    return ol.asarray(x, device=device), ol.asarray(y, device=device), want


def test_launch_with_subscript(ol, device):
    x, y, want = _saxpy_data(ol, device)
    assert jc.saxpy[ol.Range(1000)](2.0, x, y) is None
    np.testing.assert_allclose(ol.asnumpy(y), want, rtol=1e-6, atol=1e-6)


def test_call_kernel_returns_none_once_queued(ol, device):
    x, y, want = _saxpy_data(ol, device)
    assert ol.call_kernel(jc.saxpy, ol.Range(1000), 2.0, x, y) is None
    ol.synchronize(device)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6, atol=1e-6)
    # queued launches run in order: a second one sees the first's result
    ol.call_kernel(jc.saxpy, ol.Range(1000), 2.0, x, y)
    ol.synchronize()
    want2 = (2.0 * x.asnumpy().astype(np.float64) + want).astype(np.float32)
    np.testing.assert_allclose(y.asnumpy(), want2, rtol=1e-5, atol=1e-5)


def test_call_kernel_async_event(ol, device):
    x, y, want = _saxpy_data(ol, device, n=1 << 20)
    ev = ol.call_kernel_async(jc.saxpy, ol.Range(1 << 20), 2.0, x, y)
    assert ev is not None
    assert ev.wait() is None
    assert isinstance(ev.elapsed, float)
    assert 0.0 <= ev.elapsed < 60.0, ev.elapsed
    np.testing.assert_allclose(ol.asnumpy(y), want, rtol=1e-6, atol=1e-6)
    ev.wait()  # waiting twice is fine


def test_many_async_launches_in_order(ol, device):
    a = ol.asarray(np.zeros(4097, np.int32), device=device)
    events = [ol.call_kernel_async(jc.increment, ol.Range(4097), a) for _ in range(20)]
    for ev in events:
        ev.wait()
        assert ev.elapsed >= 0.0
    np.testing.assert_array_equal(ol.asnumpy(a), np.full(4097, 20, np.int32))


@pytest.mark.parametrize("dims", [(1000,), (37, 29), (5, 7, 3)], ids=["1d", "2d", "3d"])
def test_call_kernel_with_range_of_each_rank(ol, device, dims):
    kernel = {1: jc.ids1, 2: jc.ids2, 3: jc.ids3}[len(dims)]
    c = next(c for c in CASES if c.kernel is kernel and c.make(np.random.default_rng(0)).range == dims)
    launch = c.make(np.random.default_rng(0))
    prep = jc.Prepared(ol, launch, device)
    ol.call_kernel(kernel, ol.Range(*dims), *prep.args)
    prep.check(ol, f"call_kernel {c.name}")


# ---------------------------------------------------------------- NumPy arguments


def test_numpy_arguments_come_back_with_the_results(ol, device, capfd):
    before = ol.default_device()
    ol.set_default_device(device.filter_string)  # NumPy-only launches run on the default device
    try:
        _numpy_arguments(ol, capfd, device)
    finally:
        ol.set_default_device(before.filter_string)


def _numpy_arguments(ol, capfd, device):
    rng = np.random.default_rng(jc.SEED)
    a, b = rng.uniform(-1, 1, 1000), rng.uniform(-1, 1, 1000)
    c = np.full(1000, np.nan)
    capfd.readouterr()
    jc.vadd[ol.Range(1000)](a, b, c)
    # the copy back waits for the kernel: the result is there when the call returns
    np.testing.assert_allclose(c, a + b, rtol=1e-15, atol=0)
    err = capfd.readouterr().err
    noted = any(line.startswith("offload:") for line in err.splitlines())
    if device.device_type == "cpu":  # the host's memory is the device's: used in place, nothing to note
        assert not noted, f"a CPU device copied NumPy arguments: {err!r}"
    else:
        assert noted, f"no 'offload:' note on stderr: {err!r}"


def test_numpy_and_offload_arguments_mixed(ol, device):
    rng = np.random.default_rng(jc.SEED)
    x = rng.uniform(-1, 1, 1000).astype(np.float32)
    y = ol.asarray(rng.uniform(-1, 1, 1000).astype(np.float32), device=device)
    out = np.full(1000, np.nan, np.float32)
    jc.vadd[ol.Range(1000)](x, y, out)  # runs where the offload array lives
    np.testing.assert_allclose(out, (x.astype(np.float64) + ol.asnumpy(y)).astype(np.float32), rtol=1e-6)


def test_offload_arguments_give_no_note(ol, device, capfd):
    x, y, want = _saxpy_data(ol, device)
    jc.saxpy[ol.Range(1000)](2.0, x, y)  # compiled before: no compile messages either
    capfd.readouterr()
    jc.saxpy[ol.Range(1000)](2.0, x, y)
    ol.synchronize(device)
    assert "offload:" not in capfd.readouterr().err


def test_numpy_scalar_types_are_kept(ol, device):
    """A Python float is weak and np.float32(0.1) a float32 argument: float32
    arithmetic. np.float64(0.1) is a float64 argument (NEP 50: NumPy scalars
    are strong): float64 arithmetic, cast to float32 by the store."""
    x = np.random.default_rng(jc.SEED).uniform(-100, 100, 1000).astype(np.float32)
    for a in (0.1, np.float32(0.1)):
        y = ol.asarray(np.full(1000, np.nan, np.float32), device=device)
        jc.scale_by[ol.Range(1000)](a, ol.asarray(x, device=device), y)
        np.testing.assert_array_equal(ol.asnumpy(y), x * np.float32(0.1))
    y = ol.asarray(np.full(1000, np.nan, np.float32), device=device)
    jc.scale_by[ol.Range(1000)](np.float64(0.1), ol.asarray(x, device=device), y)
    np.testing.assert_array_equal(ol.asnumpy(y), (x * np.float64(0.1)).astype(np.float32))


# ---------------------------------------------------------------- introspection


def _saxpy_host_args(n=1000, dtype=np.float32):
    return [2.0, np.ones(n, dtype), np.ones(n, dtype)]


def test_inspect_llvm(ol):
    ir = jc.saxpy.inspect_llvm(*_saxpy_host_args(), range=ol.Range(1000))
    assert isinstance(ir, str)
    assert "define" in ir and "saxpy" in ir, ir[:2000]
    assert re.search(r"\bfloat\b", ir), "a float32 kernel's IR has float values"


def test_inspect_spirv(ol):
    text = jc.saxpy.inspect_spirv(*_saxpy_host_args(), range=ol.Range(1000))
    assert isinstance(text, str)
    assert "OpEntryPoint" in text and "saxpy" in text, text[:2000]


@pytest.mark.parametrize("sm", [None, 80, 86])
def test_inspect_ptx_needs_no_gpu(ol, sm):
    kw = {} if sm is None else {"sm": sm}
    ptx = jc.saxpy.inspect_ptx(*_saxpy_host_args(), range=ol.Range(1000), **kw)
    assert isinstance(ptx, str)
    assert ".version" in ptx and ".entry" in ptx and "saxpy" in ptx, ptx[:2000]
    assert f".target sm_{sm or 80}" in ptx, ptx[:2000]


def test_inspect_range_defaults_to_1d(ol):
    assert jc.saxpy.inspect_llvm(*_saxpy_host_args()) == jc.saxpy.inspect_llvm(*_saxpy_host_args(), range=ol.Range(7))


def test_inspect_copies_nothing_and_runs_nothing(ol, capfd):
    args = _saxpy_host_args()
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    capfd.readouterr()
    jc.saxpy.inspect_llvm(*args, range=ol.Range(1000))
    jc.saxpy.inspect_spirv(*args, range=ol.Range(1000))
    jc.saxpy.inspect_ptx(*args, range=ol.Range(1000))
    assert "offload:" not in capfd.readouterr().err, "inspect_* must not copy NumPy arguments"
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_inspect_2d_and_3d_ranges(ol):
    a, b, c = np.ones((37, 13), np.float32), np.ones((13, 29), np.float32), np.ones((37, 29), np.float32)
    assert "OpEntryPoint" in jc.matmul.inspect_spirv(a, b, c, range=ol.Range(37, 29))
    out, lin = np.ones((5, 7, 3), np.int64), np.ones(105, np.int64)
    assert ".entry" in jc.ids3.inspect_ptx(out, lin, range=ol.Range(5, 7, 3))


def test_signatures_one_per_specialization(ol, device):
    k = ol.kernel(_scale_twice)
    assert list(k.signatures) == []
    for dtype in (np.float32, np.float32, np.float64, np.float64, np.float32):
        x = ol.asarray(np.arange(10, dtype=dtype), device=device)
        k[ol.Range(10)](x)
        np.testing.assert_array_equal(ol.asnumpy(x), np.arange(10, dtype=dtype) * 2)
    sigs = list(k.signatures)
    assert len(sigs) == 2, sigs
    assert all(isinstance(s, str) for s in sigs)
    assert any("float32" in s for s in sigs) and any("float64" in s for s in sigs), sigs


def _scale_twice(item, x):
    i = item.get_id(0)
    x[i] *= 2


# ---------------------------------------------------------------- nothing silently becomes float64

# float32-only kernels (no Python float argument, no float64 array): their IR has
# no double and their PTX no .f64 instruction.
FLOAT32_ONLY = ["scale_literals[f32]", "row_sums", "matmul", "stencil", "use_device_funcs[f32]", "cond_expr"]


@pytest.mark.parametrize("name", FLOAT32_ONLY)
def test_float32_kernels_have_no_double(ol, name):
    c = next(c for c in CASES if c.name == name)
    launch = c.make(np.random.default_rng(0))
    args = jc.host_args(launch)
    ir = c.kernel.inspect_llvm(*args, range=ol.Range(*launch.range))
    assert not re.search(r"\bdouble\b", ir), f"{name}: float64 in the LLVM IR of a float32 kernel\n{ir}"
    ptx = c.kernel.inspect_ptx(*args, range=ol.Range(*launch.range))
    assert ".f64" not in ptx, f"{name}: float64 instructions in the PTX of a float32 kernel\n{ptx}"


# ---------------------------------------------------------------- ranges of any size


def test_vadd_any_length(ol, device):
    """One specialization serves any Range of the same rank (and a size-1 one)."""
    for n in (1, 2, 1000, 1025):
        launch = Launch((n,), [In(np.arange(n, dtype=np.float32)), In(np.ones(n, np.float32)),
                               Out(np.arange(n, dtype=np.float32) + 1)])
        prep = jc.Prepared(ol, launch, device)
        jc.vadd[ol.Range(n)](*prep.args)
        prep.check(ol, f"vadd n={n}")


def test_kernel_in_its_globals_is_collected(ol, tmp_path):
    # kernel -> function -> __globals__ -> kernel: the collector must free the
    # cycle (and with it the kernel's programs) once nothing else holds it.
    import gc
    import importlib.util
    import weakref

    src = tmp_path / "cyclemod.py"
    src.write_text("import offload as ol\n\n@ol.kernel\ndef twice(item, a):\n    i = item.get_id(0)\n    a[i] *= 2\n")
    spec = importlib.util.spec_from_file_location("cyclemod", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = ol.asarray(np.arange(5, dtype=np.float32), device=CPU_FILTER)
    mod.twice[ol.Range(5)](x)
    np.testing.assert_array_equal(ol.asnumpy(x), np.arange(5, dtype=np.float32) * 2)
    ref = weakref.ref(mod.twice)
    del mod, spec
    gc.collect()
    assert ref() is None, "the kernel was not collected"


# ---------------------------------------------------------------- where the source comes from

# The JIT takes a kernel's lines from linecache, from its first decorator to the
# last line indented deeper than its def; a block that this cuts short (a string
# or bracket reaching back to the def's column) is found by inspect instead.
LAYOUTS = '''\
import offload as ol

def passthrough(f):
    return f

@passthrough
@ol.kernel(
)
def decorated(item, a):
    i = item.get_id(0)
# a comment at column 0 inside the body
    a[i] = a[i] + 1
    # the body goes on after the comment
    a[i] = a[i] * 3
# a comment after the body

def helper():
    pass

class Holder:
    @staticmethod
    @ol.kernel
    def method(item, a):
        i = item.get_id(0)
        a[i] = a[i] - 2

def make(c):
    @ol.kernel
    def nested(item, a):
        i = item.get_id(0)
        a[i] = a[i] * c
    return nested

@ol.kernel
def string_at_column_0(item, a):
    """A docstring that
reaches column 0."""
    i = item.get_id(0)
    a[i] = a[i] + (
3)

@ol.kernel
def one_line(item, a): a[item.get_id(0)] = 7
@ol.kernel
def right_after(item, a): a[item.get_id(0)] = 8
'''


@pytest.mark.parametrize("name, expect", [
    ("decorated", lambda x: (x + 1) * 3),
    ("Holder.method", lambda x: x - 2),
    ("nested", lambda x: x * 5),
    ("string_at_column_0", lambda x: x + 3),
    ("one_line", lambda x: np.full_like(x, 7)),
    ("right_after", lambda x: np.full_like(x, 8)),
])
def test_source_layouts(ol, tmp_path, name, expect):
    import importlib.util

    src = tmp_path / "layouts.py"
    src.write_text(LAYOUTS)
    spec = importlib.util.spec_from_file_location("layouts", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = mod.make(5) if name == "nested" else mod.Holder.method if name == "Holder.method" else getattr(mod, name)
    x = np.random.default_rng().random(37).astype(np.float32)
    a = ol.asarray(x, device=CPU_FILTER)
    kernel[ol.Range(37)](a)
    np.testing.assert_array_equal(ol.asnumpy(a), expect(x).astype(np.float32))


def test_source_edited_on_disk_is_read_again(ol, tmp_path):
    """An edited file, imported again, compiles its new source (linecache's entry is checked)."""
    import importlib.util

    src = tmp_path / "edited.py"
    x = np.arange(6, dtype=np.float32)
    for factor in (2, 3):
        src.write_text(f"import offload as ol\n\n@ol.kernel\ndef scale(item, a):\n    a[item.get_id(0)] *= {factor}\n")
        spec = importlib.util.spec_from_file_location("edited", src)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        a = ol.asarray(x, device=CPU_FILTER)
        mod.scale[ol.Range(6)](a)
        np.testing.assert_array_equal(ol.asnumpy(a), x * factor)


def test_order_of_widened_bools(ol, device):
    """min/max/<= of bools widened to uint8: LLVM narrows them back to compares and
    llvm.umin of i1, which SPIR-V forbids (OpULessThan wants integers) -- found by the
    CPU reduction of bool arrays; the backend widens them again."""

    @ol.kernel
    def k(item, x, out):
        i = item.get_id(0)
        a = np.uint8(x[i])
        v = np.uint8(x[i + 1])
        lo = a if a <= v else v
        hi = max(a, v)
        out[i] = np.uint8(lo != 0) * 4 + np.uint8(hi != 0) * 2 + np.uint8(a < v)

    rng = np.random.default_rng(jc.SEED)
    x = rng.random(1001) < 0.5
    out = np.full(1000, 0x5A, np.uint8)
    d_out = ol.asarray(out, device=device)
    k[ol.Range(1000)](ol.asarray(x, device=device), d_out)
    a, v = x[:-1].astype(np.uint8), x[1:].astype(np.uint8)
    want = (np.minimum(a, v) != 0) * 4 + (np.maximum(a, v) != 0) * 2 + (a < v)
    np.testing.assert_array_equal(ol.asnumpy(d_out), want.astype(np.uint8))
