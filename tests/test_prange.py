"""prange loops in @offload.jit functions (and offload._compile_cell, what
%%offload cells use), run on every device a run sees (NumPy arrays go to the
default device, which each test sets in turn), checked against NumPy on fresh
random data with poisoned outputs; reductions (+=, *=, min, max) of several
dtypes; multi-dimensional and stepped ranges; the CompileErrors with their
line and column."""

from __future__ import annotations

import ast
import math
import textwrap

import numpy as np
import pytest

from offload_fixtures import device_filters, load_offload

ol = load_offload()
prange = ol.prange


@pytest.fixture(autouse=True, params=device_filters(ol))
def on_each_device(request):
    before = ol.default_device()
    ol.set_default_device(request.param)
    yield request.param
    ol.set_default_device(before)


def rng():
    return np.random.default_rng()


@ol.jit
def scaled_sqrt(a, b, k):
    for i in prange(a.shape[0]):
        b[i] = math.sqrt(a[i]) * k
    return b


@ol.jit
def grid(m, out):
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            out[i, j] = m[i, j] * 2 + i - j


@ol.jit
def cube(x, out):
    for i in prange(x.shape[0]):
        for j in prange(x.shape[1]):
            for k in prange(x.shape[2]):
                out[i, j, k] = x[i, j, k] + 100 * i + 10 * j + k


@ol.jit
def stepped(a, out):
    for i in prange(a.shape[0] - 1, -1, -2):
        out[i] = a[i] + 1
    for i in prange(1, a.shape[0], 3):
        out[i] = a[i] * 3


@ol.jit
def reductions(a):
    s = 0
    p = 1.0
    lo = a[0]
    hi = a[0]
    for i in prange(a.shape[0]):
        s += a[i]
        p *= 1 + a[i] / 100000
        lo = min(lo, a[i])
        hi = max(hi, a[i])
    return s, p, lo, hi


@ol.jit
def count_positive(a):
    n = 0
    for i in prange(a.shape[0]):
        if a[i] > 0:
            n += 1
    return n


@ol.jit
def row_sums(m, out):
    for i in prange(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            if m[i, j] < 0:
                continue
            acc += m[i, j]
        out[i] = acc


@ol.jit
def skip_odd(a, out):
    for i in prange(a.shape[0]):
        if i % 2:
            continue
        out[i] = a[i]


def test_prange_is_range_on_the_host():
    assert list(prange(5)) == list(range(5))
    assert list(prange(1, 10, 3)) == [1, 4, 7]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_dimensional_loop(dtype):
    a = rng().random(1001).astype(dtype)
    b = np.full_like(a, np.nan)
    r = scaled_sqrt(a, b, 3)
    assert r is b
    np.testing.assert_allclose(b, np.sqrt(a.astype(np.float64)) * 3, rtol=1e-6)
    assert b.dtype == dtype


def test_two_dimensional_loop_with_views():
    m = rng().standard_normal((37, 53))
    out = np.full((53, 37), np.nan).T  # a transposed (non-contiguous) output
    grid(m, out)
    i, j = np.indices(m.shape)
    np.testing.assert_allclose(out, m * 2 + i - j)


def test_three_dimensional_loop():
    x = rng().integers(-5, 5, (7, 9, 11)).astype(np.int32)
    out = np.full(x.shape, -999, np.int64)
    cube(x, out)
    i, j, k = np.indices(x.shape)
    np.testing.assert_array_equal(out, x + 100 * i + 10 * j + k)


def test_stepped_ranges():
    a = rng().random(50)
    out = np.full(50, np.nan)
    stepped(a, out)
    want = np.full(50, np.nan)
    for i in range(49, -1, -2):
        want[i] = a[i] + 1
    for i in range(1, 50, 3):
        want[i] = a[i] * 3
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_reductions(dtype):
    a = (rng().random(5000) * 100).astype(dtype)
    s, p, lo, hi = reductions(a)
    np.testing.assert_allclose(s, a.astype(np.float64).sum(), rtol=1e-5)
    np.testing.assert_allclose(p, np.prod(1 + a.astype(np.float64) / 100000), rtol=1e-3)
    assert lo == a.min() and hi == a.max()


def test_reduction_types_follow_numpy():
    a = rng().random(300).astype(np.float32)
    s, p, lo, hi = reductions(a)
    assert isinstance(s, np.float32)  # 0 + float32 values: float32 (NEP 50)


def test_counting_reduction_and_empty_ranges():
    a = rng().standard_normal(777)
    assert count_positive(a) == int((a > 0).sum())
    assert count_positive(np.zeros(0)) == 0
    s, p, lo, hi = reductions(np.array([4.0]))
    assert (s, lo, hi) == (4.0, 4.0, 4.0)


def test_private_variables_inner_loops_and_continue():
    m = rng().standard_normal((40, 30))
    out = np.full(40, np.nan)
    row_sums(m, out)
    np.testing.assert_allclose(out, np.where(m < 0, 0, m).sum(axis=1))
    a = rng().random(21)
    out = np.full(21, -1.0)
    skip_odd(a, out)
    np.testing.assert_array_equal(out[::2], a[::2])
    assert (out[1::2] == -1).all()


@ol.jit
def sum_and_shift(a, b):
    s = 0.0
    for i in prange(a.shape[0]):
        b[i] = a[i] + 1
        s += a[i]
    return s


def test_kernels_are_made_past_what_tracebacks_hang_on_nodes():
    """IPython's tracebacks give every node they walk a `parent` -- the
    contexts and operators, which every tree shares, included -- which a copy
    of a template's nodes must not follow into other trees."""
    tree = ast.parse("b[i] = a[i] + s")
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node
    try:
        a = rng().random(1000)
        b = np.zeros(1000)
        np.testing.assert_allclose(sum_and_shift(a, b), a.sum())
        np.testing.assert_array_equal(b, a + 1)
    finally:
        for node in ast.walk(tree):
            node.__dict__.pop("parent", None)


def test_device_arrays_stay_on_the_device():
    a = ol.asarray(rng().random(100))
    b = ol.full(100, np.nan)
    scaled_sqrt(a, b, 2)
    np.testing.assert_allclose(ol.asnumpy(b), np.sqrt(ol.asnumpy(a)) * 2)


def test_scalars_are_read_at_launch():
    code = ol._compile_cell("for i in prange(n):\n    out[i] = k * i\n", "<t>", 1)
    for k in (2, 5):
        out = np.full(10, -1)
        exec(code, {"prange": prange, "n": 10, "out": out, "k": k})
        np.testing.assert_array_equal(out, k * np.arange(10))


def test_loop_context_copies_once_and_reports():
    src = "for i in prange(a.shape[0]):\n    b[i] = a[i] + 1\nfor i in prange(a.shape[0]):\n    b[i] *= 2\n"
    code = ol._compile_cell(src, "<t>", 1)
    # strided: copied even to a CPU device (test_cpu_in_place.py: contiguous ones are not)
    a = rng().random(128)[::2]
    b = np.full(128, np.nan)[::2]
    with ol.LoopContext(verbose=True) as ctx:
        exec(code, {"prange": prange, "a": a, "b": b})
        assert np.isnan(b).all()  # copied back at the end of the context, not before
    np.testing.assert_allclose(b, (a + 1) * 2)
    kinds = [r["kind"] for r in ctx.records]
    assert kinds.count("copy in") == 2 and kinds.count("copy out") == 1 and kinds.count("launch") == 2
    assert [r["name"] for r in ctx.records if r["kind"] == "copy out"] == ["b"]


def test_loop_context_prints_its_lines_unless_the_hook_showed_them(capfd):
    """Outside a notebook the report is lines of text; a hook that shows the records
    (the %%offload magic's display) takes them over, and only then nothing is printed."""
    code = ol._compile_cell("for i in prange(2, a.shape[0]):\n    a[i] = i\n", "<t>", 1)
    capfd.readouterr()
    for hook_says, printed in ((None, True), (False, True), (True, False)):
        seen = []
        hook = None if hook_says is None else (lambda records: seen.append(len(records)) or hook_says)
        with ol.LoopContext(verbose=True, on_record=hook) as ctx:
            exec(code, {"prange": prange, "a": np.zeros(40)})
        out = capfd.readouterr().out
        texts = [r["text"] for r in ctx.records]
        assert any("ran the loop at line 1 over prange(2, 40):" in t for t in texts), texts
        assert [r["range"] for r in ctx.records if r["kind"] == "launch"] == ["prange(2, 40)"]
        assert out == ("".join(t + "\n" for t in texts) if printed else ""), (hook_says, out)
        assert seen == ([] if hook is None else list(range(1, len(texts) + 1)))


def compile_error(src: str):
    with pytest.raises(ol.CompileError) as e:
        code = ol._compile_cell(textwrap.dedent(src), "<cell 9>", 1)
        exec(code, {"prange": prange, "np": np, "a": np.zeros(4), "b": np.zeros(4)})
    return e.value


@pytest.mark.parametrize("src, line, col, words", [
    ("for i in prange(4):\n    if a[i] > 0:\n        break\n", 3, 9, "break"),
    ("x = 1\nfor i, j in prange(4):\n    pass\n", 2, 5, "single name"),
    ("for i in prange(4):\n    a[i] = 1\nelse:\n    pass\n", 1, 1, "else"),
    ("for i in prange(4, step=2):\n    a[i] = 1\n", 1, 10, "positional"),
    ("for i in prange(4):\n    a[i] = 1\n    b[i] = [1, 2]\n", 3, 12, "list"),
])
def test_compile_errors_point_at_the_cell(src, line, col, words):
    e = compile_error(src)
    assert (e.lineno, e.colno) == (line, col), str(e)
    assert f"<cell 9>:{line}:{col}:" in str(e) and words in str(e)
    assert "^" in str(e)


def test_jit_refuses_closures():
    k = 3

    def inner(a):
        for i in prange(a.shape[0]):
            a[i] = k

    with pytest.raises(TypeError, match="enclosing function"):
        ol.jit(inner)(np.zeros(3))
