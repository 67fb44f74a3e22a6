"""Kernel-language errors: an unsupported construct is an offload.CompileError
that names the file, line and column and shows the source line with a caret
(DESIGN.md, "The Python surface" -> "Device kernels"):

    {filename}:{lineno}:{colno}: {message}
        {the source line, stripped, after 4 spaces}
        {spaces}^
    [more lines: what to use instead]

lineno and colno are 1-based; colno is where the offending construct starts in
the physical line. Wrong argument counts at launch are TypeErrors.

The kernels below are plain functions, decorated in the tests (so that a
decorator that compiles eagerly cannot break the import of this module).
Expected positions are found by searching each function's source for the
offending text, so editing this file cannot make them stale. Where two places
are equally right (the call or its bad argument, an assignment's target or
its value), the test accepts either.
"""

from __future__ import annotations

import inspect
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from offload_fixtures import CPU_FILTER, load_offload, run_python

_ol = load_offload()  # a missing extension is a failure, not a skip


@pytest.fixture(scope="module")
def ol():
    return _ol


G_LIST = [1, 2]
G_COUNT = 0


# ============================================================================
# The offending kernels (plain functions; each has one error)


def k_list_display(item, a):
    i = item.get_id(0)
    x = [1, 2]
    a[i] = x[0]


def k_dict_display(item, a):
    i = item.get_id(0)
    d = {1: 2.0}
    a[i] = d[1]


def k_set_display(item, a):
    i = item.get_id(0)
    s = {1, 2}
    a[i] = len(s)


def k_list_comprehension(item, a):
    i = item.get_id(0)
    xs = [a[k] for k in range(3)]
    a[i] = xs[0]


def k_lambda(item, a):
    i = item.get_id(0)
    f = lambda v: v + 1
    a[i] = f(a[i])


def k_try(item, a):
    i = item.get_id(0)
    try:
        a[i] = 1.0
    except IndexError:
        pass


def k_with(item, a):
    i = item.get_id(0)
    with a:
        a[i] = 1.0


def k_yield(item, a):
    i = item.get_id(0)
    yield a[i]


def k_string_value(item, a):
    i = item.get_id(0)
    s = "hello"
    a[i] = len(s)


def k_unknown_function(item, a):
    i = item.get_id(0)
    n = sorted(a)
    a[i] = n


def k_global_list(item, a):
    i = item.get_id(0)
    a[i] = G_LIST[0]


def k_array_attribute(item, a):
    i = item.get_id(0)
    f = a.flags
    a[i] = f


def k_too_many_indices(item, a):
    i = item.get_id(0)
    a[i, i] = 1.0


def k_float_index(item, a):
    i = item.get_id(0)
    a[1.5] = i


def k_get_id_variable(item, a, d):
    i = item.get_id(d)
    a[i] = 1.0


def k_get_id_3(item, a):
    i = item.get_id(3)
    a[i] = 1.0


def k_get_id_beyond_range(item, a):
    i = item.get_id(0)
    j = item.get_id(2)
    a[i, j] = 1.0


def k_type_conflict(item, a, b):
    i = item.get_id(0)
    x = a
    x = 1.0
    b[i] = x


def k_for_over_array(item, arr, out):
    i = item.get_id(0)
    for v in arr:
        out[i] += v


def k_for_else(item, a):
    i = item.get_id(0)
    for k in range(3):
        a[i] += 1.0
    else:
        a[i] = 0.0


def k_del(item, a):
    i = item.get_id(0)
    x = a[i]
    del x


def k_global_statement(item, a):
    global G_COUNT
    i = item.get_id(0)
    a[i] = G_COUNT


def make_k_nonlocal():
    c = 1.0

    def k_nonlocal(item, a):
        nonlocal c
        i = item.get_id(0)
        a[i] = c

    return k_nonlocal


def k_keyword_argument(item, a):
    i = item.get_id(0)
    a[i] = math.sqrt(x=a[i])


def k_return_value(item, a):
    i = item.get_id(0)
    return a[i]


def k_slice(item, a, out):
    i = item.get_id(0)
    b = a[1:3]
    out[i] = b[0]


def k_undefined_name(item, a):
    i = item.get_id(0)
    a[i] = undefined_thing * 2


def plain_helper(v):
    return v * 2


def k_plain_function(item, a):
    i = item.get_id(0)
    a[i] = plain_helper(a[i])


def k_import(item, a):
    i = item.get_id(0)
    import os as _os  # noqa: F401

    a[i] = 1.0


def df_bad(v):
    return [v]


df_bad_dev = _ol.device_func(df_bad)


def k_calls_bad_device_func(item, a):
    i = item.get_id(0)
    a[i] = df_bad_dev(a[i])


# ============================================================================
# The table


def where(func, snippet: str, sub: str = None):
    """(lineno, colno, line) of the first line of func's source (the def line
    only for a snippet starting "def ") that holds `snippet`; the column is
    that of `sub` found from there (default: of the snippet itself)."""
    lines, start = inspect.getsourcelines(func)
    for k, line in enumerate(lines):
        if k == 0 and not snippet.startswith("def "):
            continue
        pos = line.find(snippet)
        if pos >= 0:
            if sub is not None:
                pos = line.index(sub, pos)
            return start + k, pos + 1, line.rstrip("\n")
    raise AssertionError(f"{snippet!r} is not in the source of {func.__name__}")


@dataclass
class Err:
    name: str
    func: object  # the plain function (make_k_nonlocal: called to get it)
    at: list  # acceptable positions: "snippet" or ("line snippet", "sub") (see where())
    words: str  # a regex the message must match (case-insensitive)
    args: list = field(default_factory=lambda: ["f32"])  # "f32" a float32[16], "f32_2d" a float32[4, 4], or a value
    range: tuple = (16,)
    also_lines: list = field(default_factory=list)  # snippets whose line numbers the message must name
    src: object = None  # the function holding the error, when it is not `func`

    def kernel_func(self):
        return self.func() if self.func is make_k_nonlocal else self.func

    def positions(self):
        src = self.src or self.kernel_func()
        return [where(src, *(spec if isinstance(spec, tuple) else (spec,))) for spec in self.at]


ERRORS = [
    Err("list display", k_list_display, ["[1, 2]"], r"\blist"),
    Err("dict display", k_dict_display, ["{1: 2.0}"], r"\bdict"),
    Err("set display", k_set_display, ["{1, 2}"], r"\bset\b"),
    Err("list comprehension", k_list_comprehension, ["[a[k] for"], r"comprehension|\blist"),
    Err("lambda", k_lambda, ["lambda v"], r"lambda"),
    Err("try/except", k_try, ["try:"], r"\btry\b|exception"),
    Err("with", k_with, ["with a:"], r"\bwith\b"),
    Err("yield", k_yield, ["yield a[i]", "def k_yield"], r"yield|generator"),
    Err("string value", k_string_value, ['"hello"'], r"str"),
    Err("unknown function", k_unknown_function, ["sorted(a)"], r"sorted"),
    Err("global list", k_global_list, ["G_LIST[0]"], r"G_LIST|\blist"),
    Err("array attribute", k_array_attribute, ["a.flags", ("a.flags", "flags")], r"flags"),
    Err("too many indices", k_too_many_indices, ["a[i, i]", ("a[i, i]", "i, i]")], r"ind|dimension"),
    Err("float index", k_float_index, ["a[1.5]", "1.5"], r"ind|integer|float"),
    Err("get_id of a variable", k_get_id_variable, ["item.get_id(d)", ("item.get_id(d)", "d)")],
        r"constant|literal", args=["f32", 0]),
    Err("get_id(3)", k_get_id_3, ["item.get_id(3)", ("item.get_id(3)", "3)")], r"dimension|range|\b3\b"),
    Err("get_id(2) in a 2-D range", k_get_id_beyond_range, ["item.get_id(2)", ("item.get_id(2)", "2)")],
        r"dimension|range|\b2\b", args=["f32_2d"], range=(4, 4)),
    Err("type conflict", k_type_conflict, ["x = a", ("x = a", "a"), "x = 1.0", ("x = 1.0", "1.0")],
        r"array|ndarray", args=["f32", "f32"], also_lines=["x = a", "x = 1.0"]),
    Err("for over an array", k_for_over_array, ["for v in arr", ("for v in arr", "arr")], r"range",
        args=["f32", "f32"]),
    Err("for-else", k_for_else, ["for k in", "else:", "a[i] = 0.0"], r"else"),
    Err("del", k_del, ["del x"], r"\bdel\b"),
    Err("global statement", k_global_statement, ["global G_COUNT"], r"global"),
    Err("nonlocal statement", make_k_nonlocal, ["nonlocal c"], r"nonlocal"),
    Err("keyword argument", k_keyword_argument, ["math.sqrt(x=", "x=a[i]"], r"keyword"),
    Err("return with a value", k_return_value, ["return a[i]", ("return a[i]", "a[i]")], r"return"),
    Err("slice", k_slice, ["a[1:3]", "1:3"], r"slice", args=["f32", "f32"]),
    Err("undefined name", k_undefined_name, ["undefined_thing"], r"undefined_thing"),
    Err("plain Python function", k_plain_function, ["plain_helper(a[i])"], r"plain_helper|device_func"),
    Err("import", k_import, ["import os"], r"import"),
    Err("error in a device_func", k_calls_bad_device_func, ["[v]"], r"\blist", src=df_bad),
]


def _make_args(ol, specs):
    args = []
    for s in specs:
        if s == "f32":
            args.append(ol.asarray(np.zeros(16, np.float32), device=CPU_FILTER))
        elif s == "f32_2d":
            args.append(ol.asarray(np.zeros((4, 4), np.float32), device=CPU_FILTER))
        else:
            args.append(s)
    return args


def check_compile_error(e, err: Err):
    assert isinstance(e, Exception)
    text = str(e)
    positions = err.positions()
    src_file = inspect.getsourcefile(err.src or err.kernel_func())
    assert isinstance(e.filename, str) and os.path.exists(e.filename), f"filename {e.filename!r}\n{text}"
    assert os.path.samefile(e.filename, src_file), f"{e.filename} is not {src_file}"
    got = (e.lineno, e.colno)
    assert got in [(ln, col) for ln, col, _ in positions], (
        f"{err.name}: CompileError at line {e.lineno}, column {e.colno}; expected one of "
        f"{[(ln, col, line.strip()) for ln, col, line in positions]}\n{text}")
    line = next(line for ln, col, line in positions if (ln, col) == got)
    lines = text.splitlines()
    assert len(lines) >= 3, text
    prefix = f"{e.filename}:{e.lineno}:{e.colno}: "
    assert lines[0].startswith(prefix) and len(lines[0]) > len(prefix), f"the first line should start {prefix!r}:\n{text}"
    assert lines[1] == "    " + line.strip(), f"the second line should be the source line:\n{text}"
    indent = len(line) - len(line.lstrip())
    assert lines[2] == "    " + " " * (e.colno - 1 - indent) + "^", f"the third line should be the caret:\n{text}"
    message = "\n".join([lines[0][len(prefix):]] + lines[3:])  # without the source line and the caret
    assert re.search(err.words, message, re.I), f"{err.name}: the message should match /{err.words}/:\n{text}"
    for snippet in err.also_lines:
        ln = where(err.kernel_func(), snippet)[0]
        assert re.search(rf"\b{ln}\b", message), f"{err.name}: the message should name line {ln}:\n{text}"


@pytest.mark.parametrize("err", ERRORS, ids=[e.name for e in ERRORS])
def test_compile_error(ol, err):
    with pytest.raises(ol.CompileError) as info:
        k = ol.kernel(err.kernel_func())
        k[ol.Range(*err.range)](*_make_args(ol, err.args))
    check_compile_error(info.value, err)


def test_there_are_enough_error_cases():
    assert len(ERRORS) >= 15


def test_compile_error_is_an_exception_with_position_attributes(ol):
    assert issubclass(ol.CompileError, Exception)
    assert not issubclass(ol.CompileError, (ol.DeviceError, TypeError))


def test_compile_error_from_inspect_and_again_at_each_launch(ol):
    """The same error from inspect_* (no launch) and from every later launch:
    a failed compile leaves nothing half-made behind."""
    err = next(e for e in ERRORS if e.name == "list display")
    k = ol.kernel(k_list_display)
    a = np.zeros(16, np.float32)
    for how in ("inspect_llvm", "inspect_spirv", "inspect_ptx", "launch", "launch"):
        with pytest.raises(ol.CompileError) as info:
            if how == "launch":
                k[ol.Range(16)](ol.asarray(a, device=CPU_FILTER))
            else:
                getattr(k, how)(a, range=ol.Range(16))
        check_compile_error(info.value, err)
    assert list(k.signatures) == []


def test_type_conflict_names_both_types(ol):
    k = ol.kernel(k_type_conflict)
    with pytest.raises(ol.CompileError) as info:
        k[ol.Range(16)](*_make_args(ol, ["f32", "f32"]))
    assert re.search(r"float", str(info.value), re.I), str(info.value)


# ---------------------------------------------------------------- launch-time argument errors


def _ok_kernel(item, a, b):
    i = item.get_id(0)
    b[i] = a[i]


@pytest.mark.parametrize("n", [0, 1, 3], ids=["none", "too-few", "too-many"])
def test_wrong_number_of_arguments_is_type_error(ol, n):
    k = ol.kernel(_ok_kernel)
    args = _make_args(ol, ["f32"] * n)
    with pytest.raises(TypeError) as info:
        k[ol.Range(16)](*args)
    assert "_ok_kernel" in str(info.value) or "argument" in str(info.value), str(info.value)
    with pytest.raises(TypeError):
        ol.call_kernel(k, ol.Range(16), *args)
    # and the kernel still works with the right ones
    b = ol.asarray(np.zeros(16, np.float32), device=CPU_FILTER)
    a = ol.asarray(np.arange(16, dtype=np.float32), device=CPU_FILTER)
    k[ol.Range(16)](a, b)
    np.testing.assert_array_equal(ol.asnumpy(b), np.arange(16, dtype=np.float32))


# ---------------------------------------------------------------- devices without float64

FP64_CHILD = """
result = {{}}
import math
import numpy as np
import offload as ol

dev = ol.Device({dev!r})
result["has_fp64"] = dev.has_fp64


def widen(item, a, b):
    i = item.get_id(0)
    b[i] = np.float64(a[i]) * 2


def weak(item, a, b):
    i = item.get_id(0)
    b[i] = a[i] * 0.5 + math.sqrt(2.0)


rng = np.random.default_rng()
x = rng.standard_normal(64).astype(np.float32)
a = ol.asarray(x, device=dev)
b = ol.asarray(np.full(64, np.nan, np.float32), device=dev)
try:
    ol.kernel(widen)[ol.Range(64)](a, b)
except ol.CompileError as e:
    result["widen"] = [str(e), e.lineno, e.colno]
result["launches"] = ol.kernel(widen).stats["launches"]
a64 = ol.asarray(x.astype(np.float64), device=dev)
try:
    ol.kernel(weak)[ol.Range(64)](a64, b)
except ol.CompileError as e:
    result["array64"] = str(e)
# weak Python floats compute in float32 there, so this one runs
ol.kernel(weak)[ol.Range(64)](a, b)
result["weak"] = ol.asnumpy(b).tolist()
result["x"] = x.tolist()
"""


def test_float64_refused_on_a_device_without_it(tmp_path):
    """OFFLOAD_WITHOUT=fp64 makes the device report no fp64, as many laptop GPUs do: a
    kernel that computes in float64 is a CompileError at its line, before any launch;
    weak Python floats become float32 and run."""
    child = tmp_path / "fp64_child.py"  # a file: kernels are compiled from their source
    child.write_text(FP64_CHILD.format(dev=CPU_FILTER))
    r = run_python(f"import runpy\nresult.update(runpy.run_path({str(child)!r})['result'])",
                   env={"OFFLOAD_WITHOUT": "fp64"}, timeout=120)
    assert r["has_fp64"] is False
    msg, line, col = r["widen"]
    assert "float64" in msg and "no fp64" in msg, msg
    assert "b[i] = np.float64(a[i]) * 2" in msg, msg
    assert "^" in msg and line > 0 and col > 0
    assert "float64" in r["array64"], r["array64"]
    x = np.asarray(r["x"], np.float32)
    want = x * np.float32(0.5) + np.float32(math.sqrt(2.0))
    np.testing.assert_allclose(np.asarray(r["weak"], np.float32), want, rtol=1e-6)
