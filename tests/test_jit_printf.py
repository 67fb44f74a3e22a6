"""print() inside device kernels (issue 6 item 6).

A kernel's print(a, b, ..., sep=, end=) of numbers, bools and constant
strings becomes one device printf: OpenCL's (the OpenCL.std printf
instruction in SPIR-V) or CUDA's vprintf. Ints print in decimal, bools as
True/False, floats as Python prints them (the shortest digits that read back
as the same value: repr() for float64, NumPy's str() for float32). The text
reaches the cell's output before whatever the cell prints after waiting for
the kernel.

(a) code generation: SPIR-V (validated by the JIT) and PTX (ptxas, when the
    CUDA toolkit is installed);
(b) the Jupyter kernel: device lines arrive between the host's prints;
(c) CompileErrors with their exact places;
(d) printing kernels run on PoCL's CPU device, print what Python would, and
    still compute their results.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from kernel_testlib import describe, execute, merged
from offload_fixtures import CPU_FILTER, cpu, find_ptxas, load_offload  # noqa: F401  (cpu: a fixture)

_ol = load_offload()  # a missing extension is a failure, not a skip


@pytest.fixture(scope="module")
def ol():
    return _ol


@contextlib.contextmanager
def device_stdout():
    """What is written to fd 1 (where PoCL writes device printf output) while
    the block runs: box[0] after it. A file, not a pipe: PoCL writes each
    work-group's text with one write(), and a file keeps each whole."""
    sys.stdout.flush()
    saved = os.dup(1)
    box = []
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 1)
        try:
            yield box
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            f.seek(0)
            box.append(f.read().decode())


def on_cpu(ol, a):
    return ol.asarray(a, device=CPU_FILTER)


def run_printing(ol, kernel, n, *args):
    """Runs kernel over Range(n) on the CPU device; the lines it printed."""
    with device_stdout() as out:
        kernel[ol.Range(n)](*args)
        ol.synchronize(ol.Device(CPU_FILTER))
    return out[0].splitlines()


def py_str(v):
    """How Python prints v (a NumPy scalar or a Python number)."""
    if isinstance(v, (np.floating, float)) and not isinstance(v, np.float32):
        return repr(float(v))
    return str(v)


# ============================================================================
# Kernels


def k_show(item, x, y, flags, n8, u64, out):
    i = item.get_id(0)
    print("item", i, x[i], y[i], flags[i], n8[i], u64[i])
    out[i] = x[i] * 2.0


def k_sep_end(item, x):
    i = item.get_id(0)
    print("a", i, "100%", x[i], sep="|", end=";\n")
    print()
    print("no newline", end="")
    print(end="")
    print(" then", "ünïcode ✓", sep=None, end=None)


def k_repr(item, x, y):
    i = item.get_id(0)
    print(i, x[i], y[i])


def k_weak_and_literals(item, out):
    i = item.get_id(0)
    v = 0.1 * (i + 1)
    print(i, v, 2.5, -7, True, i > 0, 10**18)
    out[i] = v


def df_describe(a, i):
    print("device function sees", i, a[i])
    return a[i] + 1.0


df_describe_obj = _ol.device_func(df_describe)


def k_calls_printing_df(item, a, out):
    i = item.get_id(0)
    out[i] = df_describe_obj(a, i)


def k_loop_print(item, out):
    i = item.get_id(0)
    s = 0
    for k in range(3):
        s += k * i
        print("i", i, "k", k, "s", s)
    out[i] = s


def k_nd_print(it, out):
    g = it.get_global_id(0)
    loc = it.get_local_id(0)
    grp = it.get_group().get_group_id(0)
    print("g", g, "local", loc, "group", grp)
    out[g] = loc


# the offending kernels (each has one error)


def k_print_array(item, a):
    i = item.get_id(0)
    print("a is", a)


def k_print_fstring(item, a):
    i = item.get_id(0)
    print(f"a[i] = {a[i]}")


def k_print_sep_variable(item, a):
    i = item.get_id(0)
    s = 1
    print(i, sep=s)


def k_print_to_file(item, a):
    i = item.get_id(0)
    print(i, file=None)


def k_print_value_used(item, a):
    i = item.get_id(0)
    v = print(i)
    a[i] = v


def where(func, snippet, sub=None):
    """(line, col) of the first line of func's body holding snippet; col of sub in it."""
    lines, start = inspect.getsourcelines(func)
    for k, line in enumerate(lines[1:], 1):
        pos = line.find(snippet)
        if pos >= 0:
            if sub is not None:
                pos = line.index(sub, pos)
            return start + k, pos + 1, line.rstrip("\n")
    raise AssertionError(f"{snippet!r} is not in {func.__name__}")


# ============================================================================
# (a) code generation


ARGS_SHOW = (np.zeros(4), np.zeros(4, np.float32), np.zeros(4, bool), np.zeros(4, np.int8),
             np.zeros(4, np.uint64), np.zeros(4))


def test_spirv_has_the_printf_instruction(ol):
    k = ol.kernel(k_show)
    spirv = k.inspect_spirv(*ARGS_SHOW, range=ol.Range(4))
    assert re.search(r'OpExtInstImport "OpenCL\.std"', spirv), spirv[:2000]
    calls = re.findall(r"OpExtInst %\w+ %\w+ printf ", spirv)
    assert len(calls) == 1, "one print() is one printf, so work-items' lines cannot interleave"
    # the format is a constant (UniformConstant) char array
    assert re.search(r"UniformConstant", spirv)


def test_floats_call_one_compiled_formatter(ol):
    """The device library's float_repr is linked into a printing kernel once and
    called for each float (float32 widened), not inlined: the kernel's own pipeline
    never optimises it again (docs/float-printing.md)."""
    llvm = ol.kernel(k_show).inspect_llvm(*ARGS_SHOW, range=ol.Range(4))
    defined = re.findall(r"^define .*@(\w+)\(", llvm, re.M)
    assert len(defined) == 2 and any(d.startswith("ofl_lib_float_repr") for d in defined), defined
    repr_fn = next(d for d in defined if d.startswith("ofl_lib_float_repr"))
    assert len(re.findall(rf"call .*@{repr_fn}\(", llvm)) == 2, llvm[:3000]


def test_spirv_of_strings_and_keywords(ol):
    k = ol.kernel(k_sep_end)
    spirv = k.inspect_spirv(np.zeros(4), range=ol.Range(4))
    # print(end="") prints nothing, so it makes no call
    assert len(re.findall(r"OpExtInst %\w+ %\w+ printf ", spirv)) == 4, spirv[-3000:]


@pytest.mark.parametrize("name", ["show", "sep_end", "repr", "nd", "device_func"])
def test_ptx_calls_vprintf_and_assembles(ol, name, tmp_path):
    launch = {
        "show": (k_show, ARGS_SHOW, ol.Range(4)),
        "sep_end": (k_sep_end, (np.zeros(4),), ol.Range(4)),
        "repr": (k_repr, (np.zeros(4), np.zeros(4, np.float32)), ol.Range(4)),
        "nd": (k_nd_print, (np.zeros(8, np.int64),), ol.NdRange(8, 4)),
        "device_func": (k_calls_printing_df, (np.zeros(4), np.zeros(4)), ol.Range(4)),
    }[name]
    func, args, rng = launch
    k = ol.kernel(func)
    ptx = k.inspect_ptx(*args, range=rng, sm=80)
    assert re.search(r"\.extern \.func .*vprintf", ptx), ptx[:2000]
    assert re.search(r"call\.uni[^;]*vprintf", ptx, re.S), ptx[-3000:]
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas is not installed: the PTX was checked by LLVM only")
    path = tmp_path / f"{name}.ptx"
    path.write_text(ptx)
    p = subprocess.run([ptxas, "-arch=sm_80", str(path), "-o", str(tmp_path / f"{name}.cubin")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_ptx_argument_buffer_is_laid_out_as_cuda_does(ol):
    """vprintf reads its arguments from a buffer laid out like a C struct of
    the promoted values: an int (bool as %s pointer, int8 as int) takes 4
    bytes, 8-byte values are 8-aligned."""
    k = ol.kernel(k_show)
    ptx = k.inspect_ptx(*ARGS_SHOW, range=ol.Range(4), sm=80)
    stores = [(m.group(1), int(m.group(2) or 0)) for m in
              re.finditer(r"st\.local\.(u32|u64|b32|b64|f64)\s+\[%rd\d+(?:\+(\d+))?\]", ptx)]
    offsets = {off: ty for ty, off in stores}
    assert offsets, ptx[-4000:]
    for off, ty in offsets.items():
        assert off % (8 if ty.endswith("64") else 4) == 0, (off, ty)
    # "item" i (i64), x (6 parts), y (6), flag (ptr), int8 as a 32-bit int, uint64
    assert any(ty.endswith("32") for ty in offsets.values()), "the int8 travels as an int"


# ============================================================================
# (d) printing on the device: what Python would print


def test_printing_kernel_prints_and_computes(ol, cpu):
    x = np.array([0.5, -1.25, 0.1, 1e-7])
    y = np.array([0.1, 3.0, -2.5e-5, 1e7], np.float32)
    flags = np.array([True, False, True, False])
    n8 = np.array([-128, 0, 5, 127], np.int8)
    u64 = np.array([0, 1, 2**63, 2**64 - 1], np.uint64)
    out = on_cpu(ol, np.zeros(4))
    k = ol.kernel(k_show)
    lines = run_printing(ol, k, 4, *(on_cpu(ol, a) for a in (x, y, flags, n8, u64)), out)
    want = {" ".join(["item", str(i)] + [py_str(a[i]) for a in (x, y, flags, n8, u64)]) for i in range(4)}
    assert set(lines) == want and len(lines) == 4, lines
    np.testing.assert_array_equal(ol.asnumpy(out), x * 2.0)


def test_sep_end_percent_and_unicode(ol, cpu):
    k = ol.kernel(k_sep_end)
    with device_stdout() as out:
        k[ol.Range(1)](on_cpu(ol, np.array([2.5])))
        ol.synchronize(cpu)
    assert out[0] == "a|0|100%|2.5;\n\nno newline then ünïcode ✓\n", repr(out[0])


def test_weak_literals_bools_and_big_ints(ol, cpu):
    k = ol.kernel(k_weak_and_literals)
    out = on_cpu(ol, np.zeros(3))
    lines = run_printing(ol, k, 3, out)
    want = {f"{i} {0.1 * (i + 1)!r} 2.5 -7 True {i > 0} {10**18}" for i in range(3)}
    assert set(lines) == want, lines
    np.testing.assert_allclose(ol.asnumpy(out), [0.1, 0.2, 0.30000000000000004])


def test_print_in_a_device_function(ol, cpu):
    k = ol.kernel(k_calls_printing_df)
    a = np.array([1.5, 2.0, -3.0])
    out = on_cpu(ol, np.zeros(3))
    lines = run_printing(ol, k, 3, on_cpu(ol, a), out)
    assert set(lines) == {f"device function sees {i} {float(a[i])!r}" for i in range(3)}, lines
    np.testing.assert_array_equal(ol.asnumpy(out), a + 1.0)


def test_print_in_a_loop_keeps_each_items_order(ol, cpu):
    k = ol.kernel(k_loop_print)
    out = on_cpu(ol, np.zeros(4, np.int64))
    lines = run_printing(ol, k, 4, out)
    assert sorted(lines) == sorted(f"i {i} k {k} s {sum(j * i for j in range(k + 1))}" for i in range(4) for k in range(3))
    for i in range(4):  # one work-item's prints stay in program order
        mine = [ln for ln in lines if ln.startswith(f"i {i} ")]
        assert mine == [f"i {i} k {k} s {sum(j * i for j in range(k + 1))}" for k in range(3)], lines
    np.testing.assert_array_equal(ol.asnumpy(out), [3 * i for i in range(4)])


def test_print_in_an_nd_range_kernel(ol, cpu):
    k = ol.kernel(k_nd_print)
    out = on_cpu(ol, np.zeros(8, np.int64))
    with device_stdout() as text:
        k[ol.NdRange(8, 4)](out)
        ol.synchronize(cpu)
    assert set(text[0].splitlines()) == {f"g {g} local {g % 4} group {g // 4}" for g in range(8)}
    np.testing.assert_array_equal(ol.asnumpy(out), [g % 4 for g in range(8)])


def _repr_values(rng, n):
    x = rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64).copy()
    y = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32).copy()
    x[~np.isfinite(x)] = 1.0
    y[~np.isfinite(y)] = 1.0
    # numbers people print: few digits, integers, powers, ties, the ends of the ranges
    few = [float(f"{rng.integers(1, 10 ** int(d))}e{e}") for d, e in zip(rng.integers(1, 17, n // 4),
                                                                         rng.integers(-25, 25, n // 4))]
    x[: n // 4] = few
    y[: n // 4] = np.array(few).astype(np.float32)
    x[n // 4: n // 2: 3] = rng.integers(-2**62, 2**62, len(x[n // 4: n // 2: 3])).astype(np.float64)
    y[n // 4: n // 2: 3] = rng.integers(-2**30, 2**30, len(y[n // 4: n // 2: 3])).astype(np.float32)
    special = [0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 1 / 3, 1e16, 9999999999999998.0, 1e15, 1e-4, 9.999999999999999e-05,
               1e-5, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e22, 1e23, 2.0**63, 4.35,
               1576772810977639.75, 1234567890123456.25, float("inf"), -float("inf"), float("nan"), 123.456]
    x[-len(special):] = special
    y32 = [0.0, -0.0, 1e6, 999999.94, 1e-4, 1.0000001e-4, 93767056.0, 16777217.0, 3.4028235e38, 1e-45,
           1.1754944e-38, 0.3, 7.0, 1.5e-5, 8388608.5, float("inf"), float("nan")]
    y[-len(y32):] = np.array(y32, np.float32)
    return x, y


def test_floats_print_as_python_does(ol, cpu):
    """Every float64 prints as repr(float(v)) and every float32 as NumPy's
    str(v): random bit patterns, short decimals, integers, the specials."""
    x, y = _repr_values(np.random.default_rng(2026), 3000)
    k = ol.kernel(k_repr)
    lines = run_printing(ol, k, len(x), on_cpu(ol, x), on_cpu(ol, y))
    assert len(lines) == len(x)
    bad = []
    for line in lines:
        i, a, b = line.split(" ")
        i = int(i)
        if a != repr(float(x[i])) or b != str(y[i]):
            bad.append((i, a, repr(float(x[i])), b, str(y[i])))
    assert not bad, f"{len(bad)} differ (index, got, want, got32, want32): {bad[:10]}"


# ============================================================================
# (c) compile errors


def _compile_error(ol, func, *args):
    with pytest.raises(ol.CompileError) as info:
        ol.kernel(func)[ol.Range(4)](*[on_cpu(ol, np.zeros(4)) for _ in args])
    return info.value


@pytest.mark.parametrize("func, snippet, sub, words", [
    (k_print_array, 'print("a is", a)', "a)", r"prints numbers, bools and constant strings, not array\(float64"),
    (k_print_fstring, 'print(f"', 'f"', r"(?s)f-strings cannot be printed.*separate arguments"),
    (k_print_sep_variable, "print(i, sep=s)", "s)", r"sep= must be a constant string"),
    (k_print_to_file, "print(i, file=None)", "file=", r"cannot take file="),
    (k_print_value_used, "v = print(i)", "print(i)", r"returns no value"),
], ids=["array", "f-string", "sep-variable", "file", "value-used"])
def test_print_compile_errors(ol, cpu, func, snippet, sub, words):
    e = _compile_error(ol, func, "a")
    line, col, text = where(func, snippet, sub)
    assert (e.lineno, e.colno) == (line, col), f"at {e.lineno}:{e.colno}, expected {line}:{col}\n{e}"
    lines = str(e).splitlines()
    assert lines[0].startswith(f"{e.filename}:{line}:{col}: "), str(e)
    assert lines[1] == "    " + text.strip(), str(e)
    indent = len(text) - len(text.lstrip())
    assert lines[2] == "    " + " " * (col - 1 - indent) + "^", str(e)
    assert re.search(words, str(e)), str(e)
    assert os.path.samefile(e.filename, __file__)


def test_array_error_says_what_can_be_printed(ol, cpu):
    e = _compile_error(ol, k_print_array, "a")
    assert "print(a[i])" in str(e), str(e)


# ============================================================================
# (b) through the Jupyter kernel: device lines between the host's


CELL = f"""\
import numpy as np, offload as ol

@ol.kernel
def show(item, x, y, flags, out):
    i = item.get_id(0)
    print("item", i, x[i], y[i], flags[i], "ok")
    out[i] = x[i] + 1.0

x = ol.asarray(np.array([0.5, -1.25, 0.1, 3e-7]), device={CPU_FILTER!r})
y = ol.asarray(np.array([1.5, 1e7, -0.1, 2.0], np.float32), device={CPU_FILTER!r})
flags = ol.asarray(np.array([True, False, False, True]), device={CPU_FILTER!r})
out = ol.zeros(4, device={CPU_FILTER!r})
print("host before")
show[ol.Range(4)](x, y, flags, out)
r = ol.asnumpy(out)
print("host after", r.tolist())
"""

DEVICE_LINES = {f"item {i} {x!r} {str(y)} {f} ok" for i, (x, y, f) in enumerate(zip(
    [0.5, -1.25, 0.1, 3e-7], np.array([1.5, 1e7, -0.1, 2.0], np.float32), [True, False, False, True]))}


def _stdout_lines(msgs):
    text = "".join(t for kind, t in merged(msgs) if kind == "stdout")
    return text.splitlines(), text


def test_device_lines_arrive_between_the_host_prints(kc):
    reply, msgs = execute(kc, CELL, timeout=120)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    lines, text = _stdout_lines(msgs)
    assert lines[0] == "host before", text
    assert lines[-1] == "host after [1.5, -0.25, 1.1, 1.0000003]", text
    assert set(lines[1:-1]) == DEVICE_LINES and len(lines) == 6, text


def test_partial_device_lines_come_before_a_synchronized_print(kc):
    """print(..., end="") leaves no line end for a buffer to wait for: the
    text is in the cell before what the host prints after ol.synchronize()."""
    code = f"""\
import numpy as np, offload as ol

@ol.kernel
def dots(item, x):
    i = item.get_id(0)
    print(".", end="")

print("start", end=" ")
dots[ol.Range(5)](ol.zeros(5, device={CPU_FILTER!r}))
ol.synchronize(ol.Device({CPU_FILTER!r}))
print("| end")
"""
    reply, msgs = execute(kc, code, timeout=120)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    _, text = _stdout_lines(msgs)
    assert text == "start .....| end\n", repr(text)


def test_compile_error_of_a_print_in_a_cell(kc):
    code = """\
import numpy as np, offload as ol

@ol.kernel
def bad(item, a):
    print(f"{a}")

bad[ol.Range(2)](ol.zeros(2, device="opencl:cpu:0"))
"""
    reply, msgs = execute(kc, code, timeout=120)
    assert reply["content"]["status"] == "error", describe(reply, msgs)
    assert reply["content"]["ename"] == "CompileError", describe(reply, msgs)
    assert re.search(r":5:11: f-strings cannot be printed", reply["content"]["evalue"]), reply["content"]["evalue"]
