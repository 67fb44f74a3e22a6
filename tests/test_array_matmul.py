"""Matrix products of offload arrays (DESIGN.md, "Arrays"; issue 7): offload.matmul
and the @ operator -- NumPy's shape rules, result dtypes and error messages for
1-D and 2-D operands; float32, float64, mixed and integer dtypes; transposed,
sliced and reversed views; empty dimensions; one asynchronous kernel launch per
product on the operands' device, never a copy through the host; the errors for
mismatched shapes, unsupported dtypes, NumPy operands and two devices; and the
PTX of the CUDA kernel (read without a GPU).

Every product is checked against NumPy on fresh random inputs: integers
exactly, floats within (k + 2) * eps * (|A| @ |B|) of a float64 product,
element by element (a bound any order of the k additions meets). Runs on
PoCL's CPU device and, where offload finds one, on the first CUDA GPU.

Imports only numpy, pytest and offload_fixtures (the GPU machine runs
`pytest tests/test_array_matmul.py --noconftest`). A failing test prints its
seed: OFFLOAD_TEST_SEED=<n> reruns it with the same inputs.
"""

from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    CPU_FILTER,
    TWO_CPUS_ENV,
    find_ptxas,
    load_offload,
    run_python,
    device_filters,
    device_fixture,
    rng,
)

ol = load_offload()  # a missing extension is a failure, not a skip

DEVICES = device_filters(ol)


device = device_fixture(ol)


@pytest.fixture(params=["library", "kernel"], autouse=True)
def matmul_path(request, monkeypatch):
    """Every test runs both ways a float product can take: the vendor library (NumPy's BLAS
    on a CPU device, cuBLAS on CUDA) and offload's own kernel (OFFLOAD_MATMUL=kernel),
    which integer products and devices without a library always take."""
    if request.param == "kernel":
        monkeypatch.setenv("OFFLOAD_MATMUL", "kernel")
    else:
        monkeypatch.delenv("OFFLOAD_MATMUL", raising=False)
    return request.param


def rand(rng, shape, dtype) -> np.ndarray:
    """Floats in [-1, 1); 8- and 16-bit integers over their whole range (products and sums
    wrap, as in NumPy); wider integers small enough that nothing overflows (NumPy's
    own signed overflow is C's undefined behaviour)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1, 1, shape).astype(dt)
    if dt.itemsize <= 2:
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    return rng.integers(0 if dt.kind == "u" else -1000, 1000, shape).astype(dt)


def check_product(got, A: np.ndarray, B: np.ndarray, what: str = "") -> None:
    """got (an offload array) is NumPy's A @ B: shape, dtype, and values."""
    want = np.matmul(A, B)
    assert isinstance(got, ol.ndarray), f"{what}: got a {type(got).__name__}"
    host = ol.asnumpy(got)
    assert host.shape == want.shape, f"{what}: shape {host.shape}, NumPy's {want.shape}"
    assert host.dtype == want.dtype, f"{what}: dtype {host.dtype}, NumPy's {want.dtype}"
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(host, want, err_msg=what)
        return
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    A64, B64 = A.astype(wide), B.astype(wide)
    ref, mag = np.matmul(A64, B64), np.matmul(np.abs(A64), np.abs(B64))
    k = A.shape[-1]
    tol = (k + 2) * np.finfo(want.dtype).eps * mag
    err = np.abs(host.astype(wide) - ref)
    bad = ~(err <= tol)  # NaN (an element nothing wrote) is bad too
    if bad.any():
        where = np.argwhere(bad)[:5].tolist() if bad.ndim else "()"
        pytest.fail(f"{what}: {int(bad.sum())} of {bad.size} elements off (k = {k}), first at {where}; "
                    f"worst error {float(np.nanmax(err))!r}", pytrace=False)


def on(device, x: np.ndarray):
    return ol.asarray(x, device=device)


# ============================================================================
# Shapes and dtypes

SHAPES = [(1, 1, 1), (3, 5, 7), (65, 33, 129), (130, 257, 70), (256, 256, 256)]  # (m, k, n)
FLOAT_PAIRS = [("float32", "float32"), ("float64", "float64"), ("float32", "float64"), ("float64", "float32")]


@pytest.mark.parametrize("dtypes", FLOAT_PAIRS, ids=["@".join(p) for p in FLOAT_PAIRS])
@pytest.mark.parametrize("mkn", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_float_products(device, rng, mkn, dtypes):
    m, k, n = mkn
    A, B = rand(rng, (m, k), dtypes[0]), rand(rng, (k, n), dtypes[1])
    check_product(on(device, A) @ on(device, B), A, B, f"{A.dtype}{A.shape} @ {B.dtype}{B.shape}")


INT_PAIRS = [("int8", "int8"), ("uint8", "uint8"), ("int16", "int16"), ("uint16", "uint16"), ("int32", "int32"),
             ("uint32", "uint32"), ("int64", "int64"), ("uint64", "uint64"), ("uint8", "int8"), ("int32", "float32"),
             ("int64", "uint64"), ("int16", "float64")]


@pytest.mark.parametrize("dtypes", INT_PAIRS, ids=["@".join(p) for p in INT_PAIRS])
def test_integer_products(device, rng, dtypes):
    """Integer results are NumPy's exactly (8- and 16-bit ones wrap); mixed with floats (or
    int64 with uint64) they are float64, as in NumPy."""
    A, B = rand(rng, (37, 45), dtypes[0]), rand(rng, (45, 70), dtypes[1])
    check_product(ol.matmul(on(device, A), on(device, B)), A, B, f"{dtypes[0]} @ {dtypes[1]}")


# ============================================================================
# Views: any strides, no copies

VIEWS = [
    # (id, base shape of a, view of a, base shape of b, view of b); the views are (m, k) and (k, n)
    ("a.T", (40, 30), lambda x: x.T, (40, 50), lambda x: x),
    ("b.T", (30, 40), lambda x: x, (50, 40), lambda x: x.T),
    ("a.T@b.T", (70, 65), lambda x: x.T, (33, 70), lambda x: x.T),
    ("steps", (61, 80), lambda x: x[::2, 1::2], (100, 45), lambda x: x[3:83:2, ::3]),
    ("reversed", (31, 20), lambda x: x[::-1], (20, 17), lambda x: x[::-1, ::-1]),
    ("column-blocks", (64, 90), lambda x: x[:, 10:50], (40, 200), lambda x: x[:, 64:130]),
    ("T-of-slices", (50, 66), lambda x: x[5:45, ::-3].T, (60, 80), lambda x: x.T[::2, :][:, 3:]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", VIEWS, ids=[v[0] for v in VIEWS])
def test_strided_operands(device, rng, case, dtype, matmul_path):
    name, sa, va, sb, vb = case
    A, B = rand(rng, sa, dtype), rand(rng, sb, dtype)
    a, b = on(device, A), on(device, B)
    with ol.DeviceTimer() as t:  # the kernel reads the views as they are: no gathers first
        c = va(a) @ vb(b)
    # the CPU form: its blocks, then the rows and columns past them (an edge kernel each);
    # cuBLAS reads rows or columns in runs (an operand with steps in both is copied first)
    # and its call is timed as a launch; NumPy's BLAS on a CPU device's memory launches none
    cpu_form = ol._matmul_plan(dtype, device)[0] == "matmul_cpu"
    if matmul_path == "library":
        most = 3 if device.backend == "cuda" else 0
    else:
        most = 3 if cpu_form else 1
    assert t.launches <= most, f"{name}: {t.launches} launches for one product"
    check_product(c, va(A), vb(B), name)
    np.testing.assert_array_equal(ol.asnumpy(a), A, err_msg="the operand changed")
    np.testing.assert_array_equal(ol.asnumpy(b), B, err_msg="the operand changed")


# ============================================================================
# 1-D operands

VECTORS = [
    # (id, shape of a, shape of b, views)
    ("v@M", (33,), (33, 20), lambda x: x, lambda x: x),
    ("M@v", (20, 33), (33,), lambda x: x, lambda x: x),
    ("v@v", (33,), (33,), lambda x: x, lambda x: x),
    ("strided-v@M", (99,), (33, 20), lambda x: x[::3], lambda x: x),
    ("M.T@reversed-v", (40, 20), (40,), lambda x: x.T, lambda x: x[::-1]),
    ("column@row", (20, 6), (7, 20), lambda x: x[:, 2], lambda x: x[3]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", VECTORS, ids=[v[0] for v in VECTORS])
def test_vector_operands(device, rng, case, dtype):
    """A 1-D operand is a vector, as in NumPy: v @ M is (n,), M @ v is (m,), v @ v is 0-d."""
    name, sa, sb, va, vb = case
    A, B = rand(rng, sa, dtype), rand(rng, sb, dtype)
    c = va(on(device, A)) @ vb(on(device, B))
    assert c.ndim == np.matmul(va(A), vb(B)).ndim, name
    check_product(c, va(A), vb(B), name)


# ============================================================================
# Empty dimensions

EMPTY = [((4, 0), (0, 5)), ((0, 3), (3, 5)), ((4, 3), (3, 0)), ((0, 0), (0, 0)), ((0, 4), (4, 0)), ((0,), (0, 3)),
         ((0,), (0,)), ((3, 0), (0,))]


@pytest.mark.parametrize("shapes", EMPTY, ids=[f"{a}@{b}" for a, b in EMPTY])
def test_empty_dimensions(device, shapes):
    """k == 0 gives zeros (the sum of nothing); m or n == 0 an empty array."""
    sa, sb = shapes
    A, B = np.ones(sa, np.float32), np.ones(sb, np.float32)
    c = on(device, A) @ on(device, B)
    want = np.matmul(A, B)
    host = ol.asnumpy(c)
    assert host.shape == want.shape and host.dtype == want.dtype
    np.testing.assert_array_equal(host, want)


def test_k_zero_overwrites_fresh_memory(device):
    """The result's memory is fresh, and may hold anything: k == 0 must still write zeros."""
    junk = [on(device, np.full((300, 200), np.nan, np.float32)) for _ in range(3)]
    del junk  # their memory may come back for the result
    c = on(device, np.ones((300, 0), np.float32)) @ on(device, np.ones((0, 200), np.float32))
    np.testing.assert_array_equal(ol.asnumpy(c), np.zeros((300, 200), np.float32))


# ============================================================================
# The result, the operator's forms, asynchrony


def test_result_is_a_new_c_contiguous_array_on_the_device(device, rng):
    A, B = rand(rng, (50, 30), "float32"), rand(rng, (30, 20), "float32")
    a, b = on(device, A), on(device, B)
    c = a.T.T[::1] @ b[:, ::-1]
    assert c.device == device
    assert c.shape == (50, 20) and c.strides == (20 * 4, 4)
    c[...] = 0  # its own memory: the operands are untouched
    np.testing.assert_array_equal(ol.asnumpy(a), A)
    np.testing.assert_array_equal(ol.asnumpy(b), B)


def test_function_operator_and_reflected_form_agree(device, rng):
    A, B = rand(rng, (20, 30), "float64"), rand(rng, (30, 10), "float64")
    a, b = on(device, A), on(device, B)
    results = {"a @ b": a @ b, "matmul(a, b)": ol.matmul(a, b), "a.__matmul__(b)": a.__matmul__(b),
               "b.__rmatmul__(a)": b.__rmatmul__(a)}
    first = ol.asnumpy(results["a @ b"])
    for how, c in results.items():
        np.testing.assert_array_equal(ol.asnumpy(c), first, err_msg=how)
    check_product(results["a @ b"], A, B)


def test_at_equals_rebinds_to_the_product(device, rng):
    """`x @= y` is `x = x @ y` (there is no in-place form): a new array, x's old memory untouched."""
    A, B = rand(rng, (16, 16), "float32"), rand(rng, (16, 8), "float32")
    x = on(device, A)
    before = x
    x @= on(device, B)
    assert x is not before and x.shape == (16, 8)
    check_product(x, A, B)
    np.testing.assert_array_equal(ol.asnumpy(before), A)


def test_chained_products(device, rng, matmul_path):
    """Each product is one launch on the device's in-order queue, and a chain's later launches
    read the earlier ones' results (intermediates included) in order."""
    A, B, C = (rand(rng, (64, 64), "float32") for _ in range(3))
    a, b, cc = on(device, A), on(device, B), on(device, C)
    with ol.DeviceTimer() as t:
        r = ((a @ b) @ cc.T) @ a
    # a cuBLAS call is timed as a launch; NumPy's BLAS on the host is none
    on_host = matmul_path == "library" and device.backend != "cuda"
    assert t.launches == (0 if on_host else 3), f"{t.launches} launches"
    want = ((A.astype(np.float64) @ B) @ C.T) @ A
    np.testing.assert_allclose(ol.asnumpy(r), want, rtol=1e-3, atol=1e-3)


# ============================================================================
# Errors

MISMATCH = [((3, 4), (5, 6)), ((3,), (4,)), ((3, 4), (5,)), ((4,), (5, 6)), ((2, 3), (2, 3))]


@pytest.mark.parametrize("shapes", MISMATCH, ids=[f"{a}@{b}" for a, b in MISMATCH])
def test_mismatched_inner_dimensions_raise_numpys_value_error(device, shapes):
    sa, sb = shapes
    A, B = np.ones(sa, np.float32), np.ones(sb, np.float32)
    with pytest.raises(ValueError) as numpy_error:
        A @ B
    for how, f in [("@", lambda a, b: a @ b), ("matmul", ol.matmul)]:
        with pytest.raises(ValueError) as info:
            f(on(device, A), on(device, B))
        assert str(info.value) == str(numpy_error.value), f"{how}: {info.value}"


def test_zero_dimensional_operands_raise_numpys_value_error(device):
    a = on(device, np.ones((3, 3), np.float32))
    s = on(device, np.float32(2))
    for how, f, numpy_f in [("a @ 0-d", lambda: a @ s, lambda: np.ones((3, 3)) @ np.ones(())),
                            ("0-d @ a", lambda: s @ a, lambda: np.ones(()) @ np.ones((3, 3))),
                            ("a @ 2.0", lambda: a @ 2.0, lambda: np.ones((3, 3)) @ 2.0),
                            ("2 @ a", lambda: 2 @ a, lambda: 2 @ np.ones((3, 3))),
                            ("a @ np.float32", lambda: a @ np.float32(2), lambda: np.ones((3, 3)) @ np.float32(2))]:
        with pytest.raises(ValueError) as numpy_error:
            numpy_f()
        with pytest.raises(ValueError) as info:
            f()
        assert str(info.value) == str(numpy_error.value), how


# Stacks of matrices (issue 23 item 2): batch dimensions broadcast as NumPy's, 1-D operands
# as a row or a column whose dimension leaves the result, views with steps and transposes
STACKS = [((2, 3, 4), (4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2)),
          ((1, 6, 2), (3, 2, 7)), ((0, 3, 4), (4, 2)), ((2, 3, 0), (2, 0, 4)), ((3, 2, 5, 4), (4, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex64"])
@pytest.mark.parametrize("shapes", STACKS, ids=str)
def test_stacks_of_matrices_broadcast_as_numpy(device, rng, shapes, dtype):
    A, B = (rand(rng, s, dtype if dtype != "complex64" else "float32") for s in shapes)
    if dtype == "complex64":
        A = (A + 1j * rand(rng, shapes[0], "float32")).astype(dtype)
        B = (B - 1j * rand(rng, shapes[1], "float32")).astype(dtype)
    check_product(on(device, A) @ on(device, B), A, B, f"{shapes}")
    check_product(ol.matmul(on(device, A), on(device, B)), A, B, f"matmul{shapes}")


def test_stacks_of_views(device, rng):
    A, B = rand(rng, (3, 8, 6), "float32"), rand(rng, (3, 5, 6), "float32")
    a, b = on(device, A), on(device, B)
    check_product(a @ b.mT, A, np.swapaxes(B, -1, -2), "a @ b.mT")
    check_product(a[::-1, ::2] @ b[:, ::2].mT, A[::-1, ::2], np.swapaxes(B[:, ::2], -1, -2),
                  "strided")


def test_stacks_that_do_not_broadcast_raise_value_error(device):
    a, b = on(device, np.ones((2, 3, 4), np.float32)), on(device, np.ones((3, 4, 5), np.float32))
    with pytest.raises(ValueError, match="broadcast"):
        a @ b
    with pytest.raises(ValueError):
        np.ones((2, 3, 4)) @ np.ones((3, 4, 5))


@pytest.mark.parametrize("dtypes", [("bool", "bool"), ("bool", "float32"), ("int32", "bool")])
def test_bool_operands_raise_type_error_naming_the_supported_dtypes(device, dtypes):
    a = on(device, np.ones((3, 3), dtypes[0]))
    b = on(device, np.ones((3, 3), dtypes[1]))
    with pytest.raises(TypeError) as info:
        a @ b
    msg = str(info.value)
    for word in ("float32", "float64", "integer", "bool"):
        assert word in msg, f"the message should name {word}: {msg}"


def test_numpy_operands_are_refused(device):
    """No silent copies either way: NumPy defers to offload's operator, which refuses."""
    a, h = on(device, np.ones((3, 3), np.float32)), np.ones((3, 3), np.float32)
    for how, f in [("a @ numpy", lambda: a @ h), ("numpy @ a", lambda: h @ a),
                   ("matmul(a, numpy)", lambda: ol.matmul(a, h)), ("matmul(numpy, a)", lambda: ol.matmul(h, a)),
                   ("a @ list", lambda: a @ h.tolist()), ("matmul(numpy, numpy)", lambda: ol.matmul(h, h))]:
        with pytest.raises(TypeError, match=r"offload\.asarray") as info:
            f()
        assert "numpy.ndarray" in str(info.value) or "list" in str(info.value), f"{how}: {info.value}"


def test_unrelated_operands_get_pythons_type_error(device):
    a = on(device, np.ones((3, 3), np.float32))
    for other in ("abc", object(), None):
        with pytest.raises(TypeError, match="unsupported operand"):
            a @ other
        with pytest.raises(TypeError, match="unsupported operand"):
            other @ a


def test_operands_on_two_devices_raise_execution_placement_error():
    r = run_python(
        """
        import numpy as np, offload as ol
        a = ol.ones((4, 4), dtype='float32', device='cpu:0')
        b = ol.ones((4, 4), dtype='float32', device='cpu:1')
        result['errors'] = []
        for f in (lambda: a @ b, lambda: b @ a, lambda: ol.matmul(a, b[0])):
            try:
                f()
                result['errors'].append(None)
            except Exception as e:
                result['errors'].append([isinstance(e, ol.ExecutionPlacementError), str(e)])
        result['same'] = ol.asnumpy(a @ a).tolist()  # and products on one device still work
        """,
        env=TWO_CPUS_ENV,
    )
    for err in r["errors"]:
        assert err is not None, "arrays on two devices were multiplied"
        is_epe, msg = err
        assert is_epe, msg
        assert "opencl:cpu:0" in msg and "opencl:cpu:1" in msg, msg
    assert r["same"] == (np.ones((4, 4)) @ np.ones((4, 4))).tolist()


def test_tiles_from_the_environment(device, rng, monkeypatch):
    """OFFLOAD_MATMUL_TILES picks the tiling (a tuning knob): other tilings give the same
    products; malformed ones, and blocks an OpenCL device cannot take, are a ValueError."""
    A, B = rand(rng, (45, 37), "float32"), rand(rng, (37, 29), "float32")
    a, b = on(device, A), on(device, B)
    for tiles in ("4,8,2,2,4,0", "8,4,4,2,8,1", "8,4,2,8,8,1", "2,2,1,1,1"):
        monkeypatch.setenv("OFFLOAD_MATMUL_TILES", tiles)
        check_product(a @ b, A, B, f"OFFLOAD_MATMUL_TILES={tiles}")
    # one-row blocks: more row blocks than are launched (32768), so work-groups loop over rows
    monkeypatch.setenv("OFFLOAD_MATMUL_TILES", "1,16,1,1,16,1")
    A2, B2 = rand(rng, (40000, 3), "float32"), rand(rng, (3, 5), "float32")
    check_product(on(device, A2) @ on(device, B2), A2, B2, "40000 one-row blocks")
    bad = ["16,16", "16,16,0,4,8", "a,b,c,d,e", "16,16,4,4,8,2", "16,16,4,4,8,1,"]
    if device.backend != "cuda":
        bad.append("16,16,8,8,8")  # a 64-element block: too wide a vector for SPIR-V
    for tiles in bad:
        monkeypatch.setenv("OFFLOAD_MATMUL_TILES", tiles)
        with pytest.raises(ValueError, match="OFFLOAD_MATMUL_TILES"):
            a @ b


def test_cpu_form_where_the_device_vectorises_across_work_items():
    """Intel's CPU runtime makes vectors across a group's work-items: there matmul takes
    its CPU form (a column per work-item, no tiles), except for a b walked by columns,
    which the tiles read in runs. PoCL, which vectorises within a work-item, keeps
    the tiles. Both forms are checked against NumPy by every test above."""
    cpus = [d for d in ol.get_devices() if d.device_type == "cpu"]
    if not cpus:
        pytest.skip("no CPU device")
    for d in cpus:
        lanes = "Portable Computing Language" not in d.platform
        name, consts, local = ol._matmul_plan("float32", d)
        assert (name, consts) == (("matmul_cpu", (np.float32, 16)) if lanes else
                                  ("matmul_tiled", (np.float32, np.float32, np.float32, 16, 16, 4, 4,
                                                    8, False, False, True))), (d, name, consts)
        assert (tuple(local) == (1, 16)) == lanes, (d, local)
        name, consts, _ = ol._matmul_plan("float32", d, b_by_col=True)
        assert name == "matmul_tiled" and consts[9] is True, (d, name, consts)


# ============================================================================
# The CUDA kernel's PTX (no GPU needed)


def ptx_of(dtype: str) -> str:
    name, consts, local = ol._matmul_plan(dtype, "ptx")
    k = ol._library("matmul", name)
    a = ol.asarray(np.ones((64, 64), dtype), device=CPU_FILTER)
    return k.inspect_ptx(a, a, a, *consts, range=ol.NdRange((local[0] * 4, local[1] * 4), local),
                         sm=90)


def inner_loops(ptx: str) -> list[list[str]]:
    """The instructions of each basic block that branches back to itself and reads shared memory."""
    loops, label, body = [], None, []
    for line in ptx.splitlines():
        line = line.split("//")[0].strip()
        m = re.match(r"^(\$L\w+):$", line)
        if m:
            label, body = m.group(1), []
            continue
        if not line or label is None:
            continue
        body.append(line)
        if re.match(r"^(@!?%p\d+ )?bra", line):  # the block ends
            if line.endswith(f"{label};") and any("ld.shared" in x for x in body):
                loops.append(body)
            label = None
    return loops


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ptx_inner_loop(dtype, tmp_path):
    """The multiply loop reads local memory with vector loads and does little besides the
    arithmetic: a few address and loop-counter instructions, no index arithmetic per element."""
    ptx = ptx_of(dtype)
    assert ".local" not in ptx, "the kernel keeps something in local (stack) memory"
    loops = inner_loops(ptx)
    assert len(loops) == 1, f"{len(loops)} shared-memory loops in:\n{ptx}"
    body = loops[0]
    arith = [x for x in body if re.match(r"^(mul|add|fma)\.rn\.f(32|64)", x)]
    # one fused multiply-add per product (offload.fma in the text), none split in two
    assert all(x.startswith("fma.rn") for x in arith), [x for x in arith if not x.startswith("fma")]
    loads = [x for x in body if x.startswith("ld.shared")]
    other = [x for x in body if x not in arith and x not in loads]
    assert all(".v" in x for x in loads), f"scalar shared loads in the inner loop: {loads}"
    assert len(arith) >= 16, f"{len(arith)} arithmetic instructions"
    assert len(other) <= 8, f"{len(other)} instructions besides loads and arithmetic: {other}"
    ptxas = find_ptxas()
    if ptxas:  # where the toolkit is installed: no spills either
        (tmp_path / "matmul.ptx").write_text(ptx)
        p = subprocess.run([ptxas, "-arch=sm_90", "-v", "-o", os.devnull, str(tmp_path / "matmul.ptx")],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert re.search(r"\b0 bytes spill stores", p.stderr), p.stderr


def test_library_calls_are_timed_as_launches(device, rng, matmul_path):
    """A cuBLAS product is a span of device time like a launch: DeviceTimer (so %time and
    %timeit) waits for it and counts its time."""
    if device.backend != "cuda" or matmul_path != "library":
        pytest.skip("cuBLAS serves CUDA devices")
    A = rand(rng, (512, 512), "float32")
    a = on(device, A)
    with ol.DeviceTimer() as t:
        c = a @ a
    assert t.launches == 1 and t.seconds > 0, (t.launches, t.seconds)
    check_product(c, A, A, "timed")
