"""Regression tests for what the issue-18 reviews and the fuzzers in tests/fuzz/
found. Each runs its reproducer in a child python (most of them crashed the
process) and asserts the behaviour that is right: no crash, and either the value
Python/NumPy gives or a clean error. A finding still open is a strict xfail
whose reason says what is wrong; remove the mark with its fix.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from fuzzlib import child_env, run_script


HDR = "import math, sys\nimport numpy as np\nimport offload as ol\n"

# Launch, then print the outputs or the exception's class and message.
TRY = '''
try:
    {launch}
    print("RESULT", {show})
except Exception as e:
    print("EXC", type(e).__name__, str(e).splitlines()[0][:300])
'''


def launch(code: str, launch_line: str, show: str, **kw):
    child = run_script(HDR + code + TRY.format(launch=launch_line, show=show), **kw)
    assert not child.crashed and not child.timed_out, f"the process died: {child.describe()}"
    assert child.returncode == 0, child.describe()
    line = [ln for ln in child.stdout.splitlines() if ln.startswith(("RESULT", "EXC"))]
    assert line, child.describe()
    return line[-1]


def expect_value_or_compile_error(out: str, value: str) -> None:
    assert out == f"RESULT {value}" or out.startswith("EXC CompileError"), out


# ---------------------------------------------------------------- (1) recursion


def test_device_functions_calling_each_other_in_a_cycle():
    """Was: segfault (unbounded recursion in the translator). Wanted: CompileError."""
    out = launch('''
@ol.device_func
def f(x):
    if x > 0:
        return g(x - 1)
    return x
@ol.device_func
def g(x):
    return f(x)
@ol.kernel
def k(item, a):
    i = item.get_id(0)
    a[i] = f(a[i])
a = ol.asarray(np.arange(4))
''', "k[ol.Range(4)](a)", "ol.asnumpy(a).tolist()")
    assert out.startswith("EXC CompileError"), out


# ---------------------------------------------------------------- (2) long expressions


def long_expr_kernel(terms: int, op: str, term: str) -> str:
    body = f" {op} ".join(["a[i]"] + [term] * terms)
    return f'''
@ol.kernel
def k(item, a, out):
    i = item.get_id(0)
    out[i] = {body}
a = ol.asarray(np.arange(4.0)); out = ol.zeros(4)
'''


@pytest.mark.parametrize("terms,op,term,want", [
    (2000, "+", "1.0", "[2000.0, 2001.0, 2002.0, 2003.0]"),
    (10000, "and", "a[i]", "[0.0, 1.0, 2.0, 3.0]"),  # Python's value: the operand that decided
], ids=["sum2000", "and10000"])
def test_very_long_expression(terms, op, term, want):
    """Was: segfault (recursion on a deep BinOp/BoolOp tree). Wanted: the value or a CompileError.
    (A 10,000-term sum is not here: CPython's own compiler already refuses it, RecursionError.)"""
    out = launch(long_expr_kernel(terms, op, term), "k[ol.Range(4)](a, out)", "ol.asnumpy(out).tolist()")
    expect_value_or_compile_error(out, want)


# ---------------------------------------------------------------- (4) and new: vector reductions on OpenCL


def test_vector_reduce_mul_on_opencl():
    """Was: llvm-spirv exits 8 'Unexpected llvm intrinsic: llvm.vector.reduce.mul.v4i64'."""
    out = launch('''
@ol.kernel
def k(item, n, out):
    i = item.get_id(0)
    out[i] = float(((-n) * (n ** 3)) < 5)
out = ol.zeros(4)
''', "k[ol.Range(4)](3, out)", "ol.asnumpy(out).tolist()")
    assert out == "RESULT [1.0, 1.0, 1.0, 1.0]", out


def test_vector_reduce_add_of_short_loop_in_branch_on_opencl():
    """Found by test_fuzz_kernels (seed 777): an int accumulated over range(4) inside an
    if is vectorised into llvm.vector.reduce.add.v4i64, which llvm-spirv rejects: the
    process exits with status 8 ('InvalidFunctionCall: Unexpected llvm intrinsic')."""
    out = launch('''
@ol.kernel
def k(item, a, out):
    i = item.get_id(0)
    i1 = i
    if a[i] < 0:
        for j0 in range(4):
            i1 += int(j0 / a[i]) % 1000
    out[i] = i1
a = ol.asarray(np.array([-1.0, 2.0, -4.0, 8.0])); out = ol.zeros(4)
''', "k[ol.Range(4)](a, out)", "ol.asnumpy(out).tolist()")
    # Python: i=0: int(j/-1) % 1000 for j in 0..3 is 0, 999, 998, 997; i=2: int(j/-4) is 0
    assert out == "RESULT [2994.0, 1.0, 2.0, 3.0]", out


# ---------------------------------------------------------------- (5) wild index


# fixed by the runtime-safety merge (index checks by default on CPU devices)
def test_wild_negative_index_without_boundscheck_does_not_kill_the_process():
    """Was: segfault of the whole process for a[i - 2**40] on PoCL's CPU device.
    Wanted: an error (IndexError/DeviceError), not a dead process."""
    out = launch('''
@ol.kernel
def k(item, a, out):
    i = item.get_id(0)
    out[i] = a[i - 2**40]
a = ol.asarray(np.arange(4.0)); out = ol.zeros(4)
''', "k[ol.Range(4)](a, out); ol.synchronize()", "ol.asnumpy(out).tolist()")
    assert out.startswith("EXC"), out


# ---------------------------------------------------------------- (6) threads


def test_threads_launching_the_same_fresh_kernel():
    """Was: 4 threads x 20 launches of one new kernel on PoCL: some threads get
    ValueError('no program given to launch'), and the process dies at exit (SIGSEGV while
    garbage-collecting, or SIGABRT 'The futex facility returned an unexpected error code')."""
    child = run_script(HDR + '''
import threading
@ol.kernel
def k(item, a):
    i = item.get_id(0)
    a[i] = a[i] + 1
arrs = [ol.zeros(64) for _ in range(4)]
errs = []
def work(j):
    try:
        for _ in range(20):
            k[ol.Range(64)](arrs[j])
        ol.synchronize()
    except Exception as e:
        errs.append(repr(e))
ts = [threading.Thread(target=work, args=(j,)) for j in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print("RESULT", [float(ol.asnumpy(x)[0]) for x in arrs], errs)
''')
    assert child.returncode == 0, child.describe()
    assert "RESULT [20.0, 20.0, 20.0, 20.0] []" in child.stdout, child.describe()


# ---------------------------------------------------------------- (7) signed vs unsigned


@pytest.mark.xfail(strict=True, reason=(
    "open: min() of a negative Python int argument and a uint64 is computed in uint64 (NumPy 2's "
    "promotion, where NumPy raises OverflowError for the value); Python gives -1"))
def test_python_int_against_uint64_compares_as_numpy():
    """Was: -1 (a Python int argument) < np.uint64(1) is False and max(-1, np.uint64(1))
    is 2**64-1 in a kernel; NumPy 2 gives True and 1."""
    out = launch('''
@ol.kernel
def k(item, a, b, out):
    i = item.get_id(0)
    out[0] = a < b
    out[1] = max(a, b)
    out[2] = min(a, b)
    out[3] = a > b
out = ol.zeros(4)
''', "k[ol.Range(1)](-1, np.uint64(1), out)", "ol.asnumpy(out).tolist()")
    assert out == "RESULT [1.0, 1.0, -1.0, 0.0]", out


def test_intel_compiler_float_recurrence_after_the_loop():
    """Was (kernel fuzzer, seed 2189110301): the process died in clBuildProgram on Intel's
    CPU runtime, whose vectorizer (vplan-vec, 2026.2) segfaults on a float loop variable
    stepped by a subtraction and read before the step after the loop. Wanted: the value
    Python gives, from vectorized code: the JIT makes such a step an fma (jit_backend.c),
    which Intel's compiler takes. (Had it crashed, the build would have been tried again in
    a helper process with the vectorizer off -- offload/ofl_buildproc.c -- and warned: here
    an error.)"""
    out = launch('''
import warnings
warnings.simplefilter("error")
dev = [d for d in ol.get_devices() if d.platform == "Intel(R) OpenCL"]
@ol.kernel
def k(item, n, x, out):
    i = item.get_id(0)
    before = 1.0
    f = 1.0
    for j in range(n):
        before = f
        f = f - x
    out[i] = before
if not dev:
    print("RESULT no Intel runtime")
    sys.exit()
out = ol.zeros(4, device=dev[0])
''', "k[ol.Range(4)](3, 0.5, out)", "ol.asnumpy(out).tolist()")
    if out == "RESULT no Intel runtime":
        pytest.skip("Intel's OpenCL CPU runtime is not installed")
    assert out == "RESULT [0.0, 0.0, 0.0, 0.0]", out


# ---------------------------------------------------------------- (8) constant powers and shifts


@pytest.mark.parametrize("expr,want", [
    ("2 ** -1", "0.5"),
    ("2 ** 63", repr(float(2**63))),
    ("1 << 70", repr(float(1 << 70))),
], ids=["neg-exponent", "2**63", "1<<70"])
def test_constant_powers_and_shifts(expr, want):
    """Was: 2 ** -1 gives 0.0, 2 ** 63 wraps to -2**63, 1 << 70 gives 0. Wanted: Python's
    value, or a CompileError where it does not fit the kernel's integers."""
    out = launch(f'''
@ol.kernel
def k(item, out):
    out[0] = {expr}
out = ol.zeros(1)
''', "k[ol.Range(1)](out)", "ol.asnumpy(out)[0].item()")
    expect_value_or_compile_error(out, want)


def test_shifted_negative_choice_stored_as_float_on_every_device():
    """Was (fuzz seed 201984083): `(0 if odd else -5) >> 3` stored in a float64 array gave
    1.0 for odd b on both OpenCL devices -- the optimiser makes it sitofp of the bool (true
    is -1.0) and the SPIR-V translator converted the bool as 1. Wanted: Python's -1.0."""
    out = launch('''
@ol.kernel
def k(item, b, out):
    i = item.get_id(0)
    out[i] = ((0 if b[i] % 2 == 0 else -5) >> 3)
def on_every_device():
    res = set()
    for d in ol.get_devices():
        b = ol.asarray(np.array([1, 2, 3], np.int32), device=d)
        o = ol.zeros(3, device=d)
        k[ol.Range(3)](b, o)
        res.add(tuple(ol.asnumpy(o).tolist()))
    return sorted(res)
''', "res = on_every_device()", "res")
    assert out == "RESULT [(-1.0, 0.0, -1.0)]", out


# ---------------------------------------------------------------- (9) unassigned read, zero step


def test_read_of_a_variable_unassigned_on_some_path():
    """Was: compiles and reads a leftover value (1.0). Wanted: CompileError (Python:
    UnboundLocalError)."""
    out = launch('''
@ol.kernel
def k(item, out):
    i = item.get_id(0)
    if i > 100:
        y = 1.0
    out[i] = y
out = ol.zeros(3)
''', "k[ol.Range(3)](out)", "ol.asnumpy(out).tolist()")
    assert out.startswith("EXC"), out


# fixed: a constant zero step is a CompileError; one known only at run time is a ValueError
# where the launch checks (tests/test_jit_robustness.py)
def test_range_with_zero_step():
    """Was: range(0, 5, 0) runs zero times. Wanted: an error, as Python's ValueError."""
    out = launch('''
@ol.kernel
def k(item, out):
    i = item.get_id(0)
    s = 0.0
    for j in range(0, 5, 0):
        s += 1.0
    out[i] = s
out = ol.zeros(3)
''', "k[ol.Range(3)](out); ol.synchronize()", "ol.asnumpy(out).tolist()")
    assert out.startswith("EXC"), out


def test_variables_only_in_a_branch_decided_at_compile_time():
    """Was (test_fuzz_kernels, seed 20240518): CompileError "the type of 'j0' cannot be
    inferred", as `if (not True):` kept only its else and j0 was assigned only in the
    branch dropped. Wanted: Python's result; j0 and f2 exist only in the dropped code."""
    out = launch('''
@ol.kernel
def k(item, a, out):
    i = item.get_id(0)
    s = a[i]
    if (not True):
        f2 = s * 2
        for j0 in range(1, 6, 2):
            s += j0 + f2
    else:
        s = -s
    out[i] = s
a = ol.asarray(np.arange(4.0)); out = ol.zeros(4)
''', "k[ol.Range(4)](a, out)", "ol.asnumpy(out).tolist()")
    assert out == "RESULT [-0.0, -1.0, -2.0, -3.0]", out


# ---------------------------------------------------------------- (10) kernels of the same name


def test_kernel_defined_in_a_function_beside_one_of_the_same_name(tmp_path):
    """Was: ValueError "no kernel named 'ofl_make__locals__vadd' in the program built
    for opencl:cpu:0 (it has: ofl_vadd)" -- the cache hands back the module-level
    vadd's program (same source text) for make()'s vadd."""
    out = launch('''
@ol.kernel
def vadd(item, a, b, c):
    i = item.get_id(0)
    c[i] = a[i] + b[i]
def make():
    @ol.kernel
    def vadd(item, a, b, c):
        i = item.get_id(0)
        c[i] = a[i] + b[i]
    return vadd
x = ol.asarray(np.arange(4.0)); c = ol.zeros(4)
vadd[ol.Range(4)](x, x, c)
''', "make()[ol.Range(4)](x, x, c)", "ol.asnumpy(c).tolist()",
        env={"OFFLOAD_CACHE": None, "XDG_CACHE_HOME": str(tmp_path)})
    assert out == "RESULT [0.0, 2.0, 4.0, 6.0]", out


# ---------------------------------------------------------------- (11) synchronize()


# fixed by the runtime-safety merge
def test_synchronize_waits_for_every_device():
    """Was: offload.synchronize() returns while a kernel launched on another device
    (opencl:cpu:1) still runs. The kernel prints when done; that text is flushed when
    the kernel is waited for, so it must come before what follows synchronize()."""
    child = run_script(HDR + '''
@ol.kernel
def spin(item, n, out):
    i = item.get_id(0)
    s = 0.0
    for j in range(n):
        s = s + math.sin(s + j)
    out[i] = s
    print("KERNEL-DONE")
d1 = ol.Device("opencl:cpu:1")
out = ol.zeros(1, device=d1)
ol.call_kernel_async(spin, ol.Range(1), 3_000_000, out)
ol.synchronize()
sys.stdout.flush()
print("AFTER-SYNC", flush=True)
ol.synchronize(d1)
''', env={"POCL_DEVICES": "pthread pthread"})
    assert child.returncode == 0, child.describe()
    text = child.stdout
    assert "KERNEL-DONE" in text and text.index("KERNEL-DONE") < text.index("AFTER-SYNC"), text


# ---------------------------------------------------------------- (13) interrupting a kernel


@pytest.mark.timeout(60)
def test_runaway_while_kernel_can_be_interrupted(tmp_path):
    """Was: SIGINT while ol.synchronize() waits for a kernel that never ends is ignored:
    the process hangs. Wanted: KeyboardInterrupt (the generous wait is a bound, not a
    measurement)."""
    script = tmp_path / "runaway.py"
    script.write_text(HDR + '''
@ol.kernel
def runaway(item, out):
    i = item.get_id(0)
    x = 0
    while x >= 0:
        x = (x + 1) % 1000
    out[i] = x
out = ol.zeros(1, dtype=np.int64)
print("LAUNCHED", flush=True)
try:  # a checked launch (the CPU default) waits at the launch; an unchecked one at synchronize()
    runaway[ol.Range(1)](out)
    ol.synchronize()
except KeyboardInterrupt:
    print("INTERRUPTED", flush=True)
    import os
    os._exit(0)  # the kernel may still spin on PoCL's threads: do not wait for it at exit
''')
    p = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=child_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        first = p.stdout.readline()
        assert "LAUNCHED" in first, first + p.stderr.read()
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("SIGINT did not interrupt ol.synchronize() within 10 s (the process still runs)")
        assert "INTERRUPTED" in out, out + err
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
