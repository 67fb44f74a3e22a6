"""Reproducers found by fuzzing the JIT (issue 18 items 1 and 3), each a
regression test.

Item 1: no Python source may end the process. Those that used to (a cycle of
device functions, long expressions, what the SPIR-V translator dies on) run
in a child python (offload_fixtures.run_python), so a crash fails the test
instead of killing pytest. Each child writes the kernel's source to a file
and imports it: kernels are compiled from their source, and a generated
2,000-term expression has to live somewhere linecache can find it.

Item 3: integer semantics follow NumPy 2 for typed values and Python for
literals; what a kernel cannot do as Python does is a CompileError with file,
line, column and caret (as in test_jit_errors.py). What only the run time knows
(a zero range() step, an integer to a negative power) is a ValueError after a
checked launch (the CPU device checks by default), with the place.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from offload_fixtures import CPU_FILTER, load_offload, poisoned, run_python

_ol = load_offload()  # a missing extension is a failure, not a skip


@pytest.fixture(scope="module")
def ol():
    return _ol


# ----------------------------------------------------------------------------
# A child python that compiles and runs a kernel from generated source

CHILD = """
import importlib.util, os, sys, tempfile
import numpy as np
import offload as ol
SRC = {src!r}
d = tempfile.mkdtemp()
path = os.path.join(d, "gen_kernels.py")
with open(path, "w") as f:
    f.write(SRC)
spec = importlib.util.spec_from_file_location("gen_kernels", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
a = np.asarray({a!r}, dtype={dtype!r})
b = np.full(len(a), -7.0)
dev = [x for x in ol.get_devices() if x.filter_string == {dev!r}][0]
try:
    mod.k[ol.Range(len(a))](ol.asarray(a, device=dev), db := ol.asarray(b, device=dev))
    result["out"] = ol.asnumpy(db).tolist()
except Exception as e:
    result["error"] = type(e).__name__
    result["message"] = str(e)
result["path"] = path
"""


def run_kernel(body: str, a, dtype="float64", pre: str = "") -> dict:
    """Compiles `def k(item, a, b): i = item.get_id(0); <body>` (with `pre`,
    module-level code, before it) in a child python and runs it over a's
    length on the CPU device; the child's result: out, or error and message."""
    src = "import math\nimport numpy as np\nimport offload as ol\n" + textwrap.dedent(pre) + (
        "\n@ol.kernel\ndef k(item, a, b):\n    i = item.get_id(0)\n" + textwrap.indent(textwrap.dedent(body), "    ")
    )
    return run_python(CHILD.format(src=src, a=list(a), dtype=dtype, dev=CPU_FILTER), timeout=300)


def assert_compile_error(res: dict, message: str, line_text: str | None = None) -> str:
    """The child got a CompileError: file:line:col: message, the source line, a caret."""
    assert res.get("error") == "CompileError", res
    text = res["message"]
    lines = text.splitlines()
    m = re.match(r"(.+):(\d+):(\d+): (.*)$", lines[0])
    assert m and m.group(1) == res["path"], text
    assert message in m.group(4), text
    src_line = open(res["path"]).read().splitlines()[int(m.group(2)) - 1]
    col = int(m.group(3))
    assert re.fullmatch(r" *\^", lines[2]), text
    shown = lines[1][4:]
    if len(src_line.strip()) > 160:  # a long line is shown around the caret, "..." marking the cuts
        assert shown.strip(".") in src_line, text
        assert shown[len(lines[2]) - 5] == src_line[col - 1], text
    else:
        assert shown == src_line.strip(), text
        assert len(lines[2]) - 4 == col - (len(src_line) - len(src_line.lstrip())), text
    if line_text is not None:
        assert line_text in src_line, text
    return text


# ============================================================================
# Item 1: nothing ends the process


def test_device_functions_in_a_cycle_are_a_compile_error():
    res = run_kernel(
        "b[i] = f1(a[i])\n",
        [1.0, 2.0],
        pre="""
        @ol.device_func
        def f1(x):
            return f2(x) + 1.0

        @ol.device_func
        def f2(x):
            return f1(x) * 2.0
        """,
    )
    text = assert_compile_error(res, "device functions call each other in a cycle: f1 -> f2 -> f1",
                                "return f1(x)")
    assert "cannot be recursive" in text


def test_three_device_functions_in_a_cycle():
    res = run_kernel(
        "b[i] = f1(a[i])\n",
        [1.0],
        pre="""
        @ol.device_func
        def f1(x):
            return f2(x)

        @ol.device_func
        def f2(x):
            return f3(x)

        @ol.device_func
        def f3(x):
            return f2(x) + f1(x)
        """,
    )
    assert_compile_error(res, "cycle: f2 -> f3 -> f2")


@pytest.mark.parametrize("terms", [500, 2000, 2900])
def test_long_sum_compiles_and_runs(terms):
    """CPython 3.11 compiles about 2,990 terms; every length it takes must work."""
    res = run_kernel("b[i] = a[i]" + " + 1.0" * terms + "\n", [0.0, 1.5, -2.0])
    assert res.get("out") == [0.0 + terms, 1.5 + terms, -2.0 + terms], res


@pytest.mark.parametrize("terms", [2000, 10000])
def test_long_and_chain_compiles_and_runs(terms):
    res = run_kernel("b[i] = float(" + " and ".join(["a[i] > 0"] * terms) + ")\n", [1.0, -1.0, 2.0])
    assert res.get("out") == [1.0, 0.0, 1.0], res


def test_nesting_deeper_than_the_limit_is_a_compile_error():
    """With a raised recursion limit CPython compiles deeper code than the JIT
    takes (10,000 levels): a CompileError, not a crash."""
    code = "import sys\nsys.setrecursionlimit(100000)\n" + CHILD.format(
        src="import offload as ol\n@ol.kernel\ndef k(item, a, b):\n    i = item.get_id(0)\n    b[i] = a[i]"
        + " + 1.0" * 12000 + "\n",
        a=[1.0], dtype="float64", dev=CPU_FILTER)
    res = run_python(code, timeout=300)
    assert_compile_error(res, "nested more than 10000 levels deep")


@pytest.mark.parametrize("depth", [4, 8, 40, 95])
def test_nested_ifs_on_opencl(depth):
    """SLP vectorisation made i4 masks and 32/64-wide vectors the translator dies on."""
    thresholds = [round(0.1 * d, 2) for d in range(depth)]
    body = "b[i] = 0.0\n"
    for d, t in enumerate(thresholds):
        body += "    " * d + f"if a[i] > {t}:\n"
    body += "    " * depth + "b[i] = 1.0\n"
    rng = np.random.default_rng()
    a = rng.uniform(-1, 0.1 * depth + 1, 64)
    res = run_kernel(body, a.tolist())
    want = (a > max(thresholds)).astype(float)
    assert res.get("out") == want.tolist(), res


def test_product_compare_has_no_vector_reduce():
    """float(((-n) * (n ** 3)) < 5) made llvm.vector.reduce.mul.v4i64."""
    a = np.random.default_rng().integers(-50, 50, 37)
    res = run_kernel("n = a[i]\nb[i] = float(((-n) * (n ** 3)) < 5)\n", a.tolist(), dtype="int64")
    want = [float(((-n) * (n**3)) < 5) for n in a.tolist()]
    assert res.get("out") == want, res


# ============================================================================
# Item 3: integer semantics


def launch(ol, cpu, kernel, *arrays):
    dev = [ol.asarray(x, device=cpu) for x in arrays]
    kernel[ol.Range(len(arrays[0]))](*dev)
    return [ol.asnumpy(d) for d in dev]


@pytest.fixture(scope="module")
def cpu(ol):
    return [d for d in ol.get_devices() if d.filter_string == CPU_FILTER][0]


U64_MAX = np.uint64(2**64 - 1)


def k_signed_unsigned(item, a, lt, mx, mn, eq, lt64):
    i = item.get_id(0)
    lt[i] = float(int(a[i]) < np.uint8(i))
    mx[i] = max(i - 10, np.uint8(i))
    mn[i] = min(np.uint8(i), a[i], np.uint16(200))
    eq[i] = float(a[i] == U64_MAX)
    lt64[i] = float(a[i] < U64_MAX)


def test_signed_unsigned_compare_by_value(ol, cpu):
    k = ol.kernel(k_signed_unsigned)
    a = np.array([-3, -2, -1, -5, 7, 0], np.int64)
    n = len(a)
    outs = launch(ol, cpu, k, a, np.full(n, 9.0), np.full(n, 99, np.int64), np.full(n, 99, np.int64),
                  np.full(n, 9.0), np.full(n, 9.0))
    i = np.arange(n)
    assert outs[1].tolist() == [float(int(x) < np.uint8(j)) for x, j in zip(a, i)] == [1, 1, 1, 1, 0, 1]
    assert outs[2].tolist() == [max(j - 10, np.uint8(j)) for j in i] == list(range(n))
    assert outs[3].tolist() == [min(np.uint8(j), x, np.uint16(200)) for j, x in zip(i, a)]
    assert outs[4].tolist() == [0.0] * n  # -1 is not 2**64 - 1
    assert outs[5].tolist() == [1.0] * n


def k_and_or(item, a, b, o_and, o_or, o_mixed, o_cond):
    i = item.get_id(0)
    o_and[i] = a[i] and b[i]
    o_or[i] = a[i] or b[i] or 2.5
    o_mixed[i] = (a[i] > 0) and b[i]   # a bool and a float: the float, or False as 0.0
    o_cond[i] = 1.0 if a[i] and b[i] > 0 else -1.0


def test_and_or_give_the_deciding_operand_as_python(ol, cpu):
    """Python's `and`/`or` give the operand that decided, not a bool (the fuzzers' 10,000-term
    `and` chain found it)."""
    k = ol.kernel(k_and_or)
    rng = np.random.default_rng()
    a = rng.choice([0.0, 0.0, 1.5, -2.0, 3.25], 64)
    b = rng.choice([0.0, 4.0, -0.5], 64)
    outs = launch(ol, cpu, k, a, b, *(poisoned((64,), np.float64) for _ in range(4)))
    assert outs[2].tolist() == [float(x and y) for x, y in zip(a, b)]
    assert outs[3].tolist() == [float(x or y or 2.5) for x, y in zip(a, b)]
    assert outs[4].tolist() == [float((x > 0) and y) for x, y in zip(a, b)]
    assert outs[5].tolist() == [1.0 if x and y > 0 else -1.0 for x, y in zip(a, b)]


def k_mixed_arith(item, a8, u8, a64, u64, o16, of64):
    i = item.get_id(0)
    o16[i] = a8[i] + u8[i]
    of64[i] = a64[i] + u64[i]


def test_mixed_arithmetic_promotes_as_numpy(ol, cpu):
    k = ol.kernel(k_mixed_arith)
    rng = np.random.default_rng()
    a8 = rng.integers(-128, 128, 50, dtype=np.int8)
    u8 = rng.integers(0, 256, 50, dtype=np.uint8)
    a64 = rng.integers(-(2**40), 2**40, 50, dtype=np.int64)
    u64 = rng.integers(0, 2**40, 50, dtype=np.uint64)
    assert (a8 + u8).dtype == np.int16 and (a64 + u64).dtype == np.float64
    outs = launch(ol, cpu, k, a8, u8, a64, u64, np.zeros(50, np.int16), np.zeros(50))
    np.testing.assert_array_equal(outs[4], a8 + u8)
    np.testing.assert_array_equal(outs[5], a64 + u64)


def k_literals(item, a, b):
    i = item.get_id(0)
    b[i, 0] = 2 ** -1
    b[i, 1] = 10**308 * 10.0
    b[i, 2] = -9223372036854775808 + a[i]
    b[i, 3] = int(a[i]) ** -2
    b[i, 4] = 2**62 + (2**62 - 1)


def test_python_literals_compute_as_python(ol, cpu):
    k = ol.kernel(k_literals)
    a = np.array([1.0, 2.0, 4.0])
    outs = launch(ol, cpu, k, a, np.zeros((3, 5)))
    want = [[2**-1, 10**308 * 10.0, -9223372036854775808 + x, int(x) ** -2, float(2**62 + (2**62 - 1))] for x in a]
    np.testing.assert_array_equal(outs[1], np.array(want))


@pytest.mark.parametrize("expr, shown", [
    ("2**63", "9223372036854775808"),
    ("2**64 - 1", "18446744073709551615"),
    ("1 << 70", "1180591620717411303424"),
    ("a[i] * 9223372036854775808", "9223372036854775808"),
    ("2 ** 100000000", None),
])
def test_int_constants_that_do_not_fit_are_compile_errors(expr, shown):
    res = run_kernel(f"b[i] = {expr}\n", [1.0])
    text = assert_compile_error(res, "does not fit in 64 bits", expr)
    if shown:
        assert f"({shown})" in text.splitlines()[0], text


def test_typed_int_to_negative_power_is_numpys_error():
    res = run_kernel("b[i] = a[i] ** -1\n", [1, 2], dtype="int64")
    text = assert_compile_error(res, "Integers to negative integer powers are not allowed")
    assert text.splitlines()[2].index("^") == text.splitlines()[1].index("-1"), text


def test_variable_assigned_only_in_a_branch_is_a_compile_error():
    res = run_kernel("if a[i] > 100:\n    x = 1.0\nb[i] = x\n", [1.0])
    assert_compile_error(res, "'x' is read here, but on some path to here it is not assigned yet", "b[i] = x")


def test_variable_assigned_only_in_a_loop_is_a_compile_error():
    res = run_kernel("for j in range(int(a[i])):\n    x = j\nb[i] = x\n", [1.0])
    assert_compile_error(res, "'x' is read here", "b[i] = x")


def k_assigned_on_every_path(item, a, b):
    i = item.get_id(0)
    if a[i] > 0:
        x = 1.0
    else:
        x = 2.0
    for j in range(3):
        y = j
    while True:
        z = 5.0
        break
    if a[i] > 100:
        return
    else:
        w = 4.0
    b[i] = x + y + z + w


def test_assigned_on_every_path_compiles(ol, cpu):
    k = ol.kernel(k_assigned_on_every_path)
    a = np.array([1.0, -1.0])
    outs = launch(ol, cpu, k, a, np.zeros(2))
    assert outs[1].tolist() == [1.0 + 2 + 5 + 4, 2.0 + 2 + 5 + 4]


def test_range_with_zero_step_is_a_compile_error():
    res = run_kernel("s = 0\nfor j in range(0, 5, 0):\n    s += 1\nb[i] = s\n", [1.0])
    assert_compile_error(res, "range() arg 3 must not be zero", "range(0, 5, 0)")


# ----------------------------------------------------------------------------
# Errors only the run time knows (a zero range() step, an integer to a negative
# power): with checks (the default on the CPU device) the kernel records them
# in the bounds record and the launch raises Python's / NumPy's ValueError with
# the place; without checks the loop runs zero times and the power is 0.

HERE = __file__
prange = _ol.prange


def where(marker: str, before: str) -> str:
    """FILE:LINE:COL of what follows `before` on the line of this file that ends with `# <marker>`."""
    with open(HERE) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# {marker}"):
                assert before in line, f"no {before!r} on the line marked {marker}"
                return f"{HERE}:{n}:{line.index(before) + len(before) + 1}"
    raise AssertionError(f"no line marked {marker}")


def value_error(message: str, marker: str, before: str) -> str:
    return re.escape(f"{message} (at {where(marker, before)})") + "$"


ZERO_STEP = "range() arg 3 must not be zero"
NEG_POWER = "Integers to negative integer powers are not allowed"


def k_runtime_step(item, n, s, out):
    i = item.get_id(0)
    t = 0
    for j in range(i, n, s):  # runtime_step
        t += j
    out[i] = t


def k_step_from_array(item, st, out):
    i = item.get_id(0)
    t = 0
    for j in range(20, -20, st[i]):  # step_from_array
        t += j
    out[i] = t


def k_runtime_power(item, a, e, out):
    i = item.get_id(0)
    out[i] = a[i] ** e  # runtime_power


def k_power_from_array(item, a, e, out):
    i = item.get_id(0)
    out[i] = a[i] ** e[i]  # power_from_array


@_ol.device_func
def d_count(n, s):
    t = 0
    for j in range(0, n, s):  # device_step
        t += 1
    return t


def k_device_step_then_bad_index(item, s, out):
    i = item.get_id(0)
    t = d_count(10, s)
    out[i + 100] = t


@_ol.jit
def j_prange_step(out, s):
    for i in prange(out.shape[0]):
        t = 0
        for j in range(0, 10, s):  # prange_step
            t += 1
        out[i] = t


def run_on(ol, cpu, kernel, n, *args):
    dev = [ol.asarray(x, device=cpu) if isinstance(x, np.ndarray) else x for x in args]
    kernel[ol.Range(n)](*dev)
    return [ol.asnumpy(d) if isinstance(x, np.ndarray) else None for x, d in zip(args, dev)]


@pytest.mark.parametrize("s", [1, 3, 7, -1, -4, 100])
def test_runtime_step_computes_as_python(ol, cpu, s):
    k = ol.kernel(k_runtime_step)
    n = 12
    stop = n if s > 0 else -n
    out = run_on(ol, cpu, k, n, stop, s, poisoned(n, np.int64))[2]
    assert out.tolist() == [sum(range(i, stop, s)) for i in range(n)]


def test_runtime_zero_step_is_a_value_error(ol, cpu):
    k = ol.kernel(k_runtime_step)
    out = ol.asarray(poisoned(8, np.int64), device=cpu)
    with pytest.raises(ValueError, match=value_error(ZERO_STEP, "runtime_step", "range(i, n, ")):
        k[ol.Range(8)](10, 0, out)
    with pytest.raises(ValueError, match="range"):  # python's own, for comparison
        range(0, 10, 0)
    k[ol.Range(8)](10, 2, out)  # the kernel goes on working
    assert ol.asnumpy(out).tolist() == [sum(range(i, 10, 2)) for i in range(8)]


def test_zero_step_of_one_work_item_from_an_array(ol, cpu):
    k = ol.kernel(k_step_from_array)
    st = np.array([-1, -3, 5, -7, 2], np.int32)
    out = run_on(ol, cpu, k, len(st), st, poisoned(len(st), np.int64))[1]
    assert out.tolist() == [sum(range(20, -20, int(x))) for x in st]
    st[3] = 0
    with pytest.raises(ValueError, match=value_error(ZERO_STEP, "step_from_array", "range(20, -20, ")):
        run_on(ol, cpu, k, len(st), st, poisoned(len(st), np.int64))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_runtime_power_computes_as_numpy(ol, cpu, dtype):
    k = ol.kernel(k_runtime_power)
    a = np.array([-3, -2, -1, 0, 1, 2, 5], dtype)
    for e in [0, 1, 2, 3, 5]:
        want = a ** e
        assert want.dtype == dtype  # NEP 50: a Python int takes the array's type
        out = run_on(ol, cpu, k, len(a), a, e, poisoned(len(a), dtype))[2]
        np.testing.assert_array_equal(out, want)


def test_runtime_negative_power_is_numpys_value_error(ol, cpu):
    k = ol.kernel(k_runtime_power)
    a = np.array([1, 2, 3], np.int32)
    with pytest.raises(ValueError, match=NEG_POWER):  # NumPy's own, for comparison
        a ** np.int64(-1)
    with pytest.raises(ValueError, match=value_error(NEG_POWER, "runtime_power", "** ")):
        run_on(ol, cpu, k, len(a), a, -1, poisoned(len(a), np.int32))


def test_negative_power_of_one_work_item_from_an_array(ol, cpu):
    k = ol.kernel(k_power_from_array)
    a = np.array([3, -2, 7, 4], np.int32)
    e = np.array([2, 3, 0, 1], np.int32)
    out = run_on(ol, cpu, k, len(a), a, e, poisoned(len(a), np.int32))[2]
    np.testing.assert_array_equal(out, a ** e)
    e[2] = -2
    with pytest.raises(ValueError, match=value_error(NEG_POWER, "power_from_array", "** ")):
        run_on(ol, cpu, k, len(a), a, e, poisoned(len(a), np.int32))


def test_float_power_with_a_negative_exponent_is_no_error(ol, cpu):
    k = ol.kernel(k_runtime_power)
    a = np.array([2.0, 4.0, -0.5])
    out = run_on(ol, cpu, k, len(a), a, -1, poisoned(len(a), np.float64))[2]
    np.testing.assert_array_equal(out, a ** -1)


def test_first_error_wins(ol, cpu):
    """A device function goes on after its error (it cannot end the kernel); the bad index
    after it is not what the launch reports."""
    k = ol.kernel(k_device_step_then_bad_index)
    out = ol.asarray(poisoned(1, np.int64), device=cpu)
    with pytest.raises(ValueError, match=value_error(ZERO_STEP, "device_step", "range(0, n, ")):
        k[ol.Range(1)](0, out)
    with pytest.raises(IndexError, match=r"index 100 is out of bounds for axis 0 with size 1 \(array 'out' at "):
        k[ol.Range(1)](1, out)


def test_prange_loop_zero_step_is_a_value_error(ol, cpu):
    out = ol.asarray(poisoned(6, np.int64), device=cpu)
    j_prange_step(out, 3)
    assert ol.asnumpy(out).tolist() == [len(range(0, 10, 3))] * 6
    with pytest.raises(ValueError, match=value_error(ZERO_STEP, "prange_step", "range(0, 10, ")):
        j_prange_step(out, 0)


UNCHECKED = """
import numpy as np
import offload as ol
dev = [x for x in ol.get_devices() if x.filter_string == {dev!r}][0]
path = {path!r}
spec = __import__("importlib.util").util.spec_from_file_location("rt_kernels", path)
mod = __import__("importlib.util").util.module_from_spec(spec)
spec.loader.exec_module(mod)
for name, args, n in [("step", (10, 0), 4), ("power", (np.array([2, -1, 3, 0], np.int32), -1), 4)]:
    out = ol.asarray(np.full(n, -7, np.int64), device=dev)
    dargs = [ol.asarray(x, device=dev) if isinstance(x, np.ndarray) else x for x in args]
    try:
        getattr(mod, name)[ol.Range(n)](*dargs, out)
        result[name] = ol.asnumpy(out).tolist()
    except Exception as e:
        result[name] = type(e).__name__ + ": " + str(e)
"""

RT_KERNELS = """\
import offload as ol
@ol.kernel
def step(item, n, s, out):
    i = item.get_id(0)
    t = 0
    for j in range(0, n, s):
        t += 1
    out[i] = t
@ol.kernel
def power(item, a, e, out):
    i = item.get_id(0)
    out[i] = a[i] ** e
"""


@pytest.mark.parametrize("checks", ["0", None])
def test_without_checks_zero_step_runs_zero_times_and_negative_power_is_0(tmp_path, checks):
    """Documented (README, issue 18): where checks are off (OFFLOAD_BOUNDSCHECK=0 here; GPUs by
    default) a zero step known only at run time runs the loop zero times, and an integer to a
    negative power known only at run time gives 0. With the default, the CPU device checks."""
    path = tmp_path / "rt_kernels.py"
    path.write_text(RT_KERNELS)
    res = run_python(UNCHECKED.format(dev=CPU_FILTER, path=str(path)),
                     env={"OFFLOAD_BOUNDSCHECK": checks, "OFFLOAD_CACHE": "0"}, timeout=300)
    if checks == "0":
        assert res["step"] == [0, 0, 0, 0], res
        assert res["power"] == [0, 0, 0, 0], res
    else:
        def at(before):
            n, line = next((n, ln) for n, ln in enumerate(RT_KERNELS.splitlines(), 1) if before in ln)
            return f"{path}:{n}:{line.index(before) + len(before) + 1}"
        assert res["step"] == f"ValueError: {ZERO_STEP} (at {at('range(0, n, ')})", res
        assert res["power"] == f"ValueError: {NEG_POWER} (at {at('** ')})", res
