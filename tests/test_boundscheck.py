"""Index checks (numba's boundscheck=True): @ol.kernel(boundscheck=True),
@ol.jit(boundscheck=True) and `%%offload --boundscheck`.

An index out of range -- reading or writing, a global argument array, an
ol.local_array, an ol.private_array, an AtomicRef, in a device function; any
axis; a negative index past -n -- raises IndexError worded as NumPy's plus the
array and the place ("index 10 is out of bounds for axis 0 with size 10
(array 'a' at FILE:LINE:COL)"), and the access never touches memory out of
range (arrays are views into larger poisoned buffers whose other elements must
survive). In-range code gives the same results checked or not (against NumPy
on fresh random data, outputs poisoned first). The process stays usable after
the error. Without the flag the generated code has no checks; the PTX path
compiles with them (no GPU needed).

Runs on PoCL's CPU device and, where offload finds one, on the first CUDA GPU.
The module-level tests import only numpy, pytest and offload_fixtures; the
%%offload tests use the kernel fixtures of conftest.py (jupyter_client) and are
skipped without them (`--noconftest`). A failing test prints its seed:
OFFLOAD_TEST_SEED=<n> reruns it with the same inputs.
"""

from __future__ import annotations

import os
import re
import textwrap

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    load_offload,
    run_python,
    device_filters,
    device_fixture,
    rng,
    poisoned,
)

_ol = load_offload()  # a missing extension is a failure, not a skip
# The kernels below call ol.local_array, ol.group_barrier, ol.AtomicRef: the JIT
# resolves this module global (so there is no `ol` fixture to shadow it).
ol = _ol
prange = ol.prange

DEVICES = device_filters(ol)
GROUP = 64  # work-group size of the nd-range kernels
NBINS = 40  # bins of the local histogram
HERE = os.path.abspath(__file__)


device = device_fixture(ol)


def where(marker: str, array: str) -> str:
    """FILE:LINE:COL of `array[` (or of the `ol.AtomicRef(array, ...)`) on the
    line of this file that ends with `# <marker>`."""
    with open(HERE) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# {marker}"):
                m = re.search(rf"\b{re.escape(array)}\[|ol\.AtomicRef\({re.escape(array)},", line)
                assert m, f"no {array}[ on the line marked {marker}"
                return f"{HERE}:{n}:{m.start() + 1}"
    raise AssertionError(f"no line marked {marker}")


def expect(index: int, axis: int, size: int, array: str, marker: str) -> str:
    """The whole message, as a regex for pytest.raises(match=...)."""
    return re.escape(f"index {index} is out of bounds for axis {axis} with size {size} "
                     f"(array '{array}' at {where(marker, array)})") + "$"


def guarded(host: np.ndarray, device, pad: int = 7):
    """(view, buffer, where): host as an offload view into a larger buffer
    poisoned around it (buffer[where] is the view), so a write out of range shows."""
    full = poisoned(tuple(s + 2 * pad for s in host.shape), host.dtype)
    inner = tuple(slice(pad, pad + s) for s in host.shape)
    full[inner] = host
    buf = ol.asarray(full, device=device)
    return buf[inner], buf, inner


def assert_margin_poisoned(buf, inner, what: str):
    got = ol.asnumpy(buf)
    mask = np.ones(got.shape, bool)
    mask[inner] = False
    want = poisoned(got.shape, got.dtype)
    np.testing.assert_array_equal(got[mask], want[mask], err_msg=f"{what}: memory out of range was written")


# ============================================================================
# prange loops: @ol.jit(boundscheck=True)


@ol.jit(boundscheck=True)
def shift_read(a, b, off):
    for i in prange(b.shape[0]):
        b[i] = a[i + off] * 2  # shift_read


@ol.jit(boundscheck=True)
def shift_write(a, b, off):
    for i in prange(a.shape[0]):
        b[i + off] = a[i] + 1  # shift_write


@ol.jit(boundscheck=True)
def shift_read_2d(m, out, di, dj):
    for i in prange(out.shape[0]):
        for j in prange(out.shape[1]):
            out[i, j] = m[i + di, j + dj] - 3  # shift_read_2d


@ol.jit(boundscheck=True)
def shift_write_2d(m, out, di, dj):
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            out[i + di, j + dj] = m[i, j] * 5  # shift_write_2d


@ol.jit
def shift_read_unchecked(a, b, off):
    for i in prange(b.shape[0]):
        b[i] = a[i + off] * 2


def test_jit_flag_is_kept():
    assert shift_read.boundscheck is True and shift_read_unchecked.boundscheck is False


@pytest.mark.parametrize("off", ["high", "negative"])
def test_prange_read_1d(device, rng, off):
    n = int(rng.integers(50, 300))
    x = rng.standard_normal(n)
    a, abuf, ainner = guarded(x, device)
    b = ol.asarray(poisoned(n, np.float64), device=device)
    shift = 1 if off == "high" else -(n + 1)
    bad = n if off == "high" else -(n + 1)  # the one index out of range
    with pytest.raises(IndexError, match=expect(bad, 0, n, "a", "shift_read")):
        shift_read(a, b, shift)
    assert_margin_poisoned(abuf, ainner, "read")
    # still usable: in range (-n wraps to 0, as in Python) the results are NumPy's
    for ok_shift in (0, -n):
        b = ol.asarray(poisoned(n, np.float64), device=device)
        shift_read(a, b, ok_shift)
        np.testing.assert_array_equal(ol.asnumpy(b), x * 2)


@pytest.mark.parametrize("off", ["high", "negative"])
def test_prange_write_1d_touches_nothing_out_of_range(device, rng, off):
    n = int(rng.integers(50, 300))
    x = rng.standard_normal(n)
    b, buf, inner = guarded(poisoned(n, np.float64), device)
    shift = 3 if off == "high" else -(n + 3)
    bad = n if off == "high" else -(n + 3)  # the first index out of range (in order)
    with pytest.raises(IndexError, match=r"index -?\d+ is out of bounds for axis 0 with size %d \(array 'b' at %s\)$"
                       % (n, re.escape(where("shift_write", "b")))) as e:
        shift_write(ol.asarray(x, device=device), b, shift)
    bad_all = {n, n + 1, n + 2} if off == "high" else {-(n + 3), -(n + 2), -(n + 1)}
    assert int(re.match(r"index (-?\d+)", str(e.value)).group(1)) in bad_all, (bad, str(e.value))
    assert_margin_poisoned(buf, inner, "write")
    got = ol.asnumpy(b)
    # the work-items in range did their writes; the failing ones wrote nothing anywhere
    if off == "high":
        np.testing.assert_array_equal(got[3:], x[:-3] + 1)
        assert np.isnan(got[:3]).all()
    else:
        np.testing.assert_array_equal(got[:-3], x[3:] + 1)
        assert np.isnan(got[-3:]).all()


CASES_2D = [  # (di, dj) -> (axis, index out of range) for an m of shape (r, c)
    ("axis0_high", lambda r, c: (1, 0), lambda r, c: (0, r)),
    ("axis1_high", lambda r, c: (0, 1), lambda r, c: (1, c)),
    ("axis0_negative", lambda r, c: (-(r + 1), 0), lambda r, c: (0, -(r + 1))),
    ("axis1_negative", lambda r, c: (0, -(c + 1)), lambda r, c: (1, -(c + 1))),
]


@pytest.mark.parametrize("name,shift,bad", CASES_2D, ids=[c[0] for c in CASES_2D])
def test_prange_read_2d(device, rng, name, shift, bad):
    r, c = (int(v) for v in rng.integers(5, 40, 2))
    x = rng.standard_normal((r, c))
    m, buf, inner = guarded(x, device)
    out = ol.asarray(poisoned((r, c), np.float64), device=device)
    di, dj = shift(r, c)
    axis, index = bad(r, c)
    with pytest.raises(IndexError, match=expect(index, axis, (r, c)[axis], "m", "shift_read_2d")):
        shift_read_2d(m, out, di, dj)
    assert_margin_poisoned(buf, inner, name)
    shift_read_2d(m, out, 0, -c)  # in range: -c wraps to 0
    np.testing.assert_array_equal(ol.asnumpy(out), x - 3)


@pytest.mark.parametrize("name,shift,bad", CASES_2D, ids=[c[0] for c in CASES_2D])
def test_prange_write_2d(device, rng, name, shift, bad):
    r, c = (int(v) for v in rng.integers(5, 40, 2))
    x = rng.standard_normal((r, c))
    out, buf, inner = guarded(poisoned((r, c), np.float64), device)
    di, dj = shift(r, c)
    axis, index = bad(r, c)
    with pytest.raises(IndexError, match=expect(index, axis, (r, c)[axis], "out", "shift_write_2d")):
        shift_write_2d(ol.asarray(x, device=device), out, di, dj)
    assert_margin_poisoned(buf, inner, name)


def test_numpy_arguments_and_in_range_results(rng):
    """NumPy arguments (copied in and back by the call's context), on the default device."""
    n = int(rng.integers(100, 1000))
    x = rng.standard_normal(n)
    b = poisoned(n, np.float64)
    shift_read(x, b, 0)
    np.testing.assert_array_equal(b, x * 2)
    with pytest.raises(IndexError, match=expect(n, 0, n, "a", "shift_read")):
        shift_read(x, b, 1)
    b2 = poisoned(n, np.float64)
    shift_read_unchecked(x, b2, 0)
    np.testing.assert_array_equal(b2, x * 2)


# ============================================================================
# @ol.kernel(boundscheck=True)


def mix(item, a, m, out):
    i = item.get_id(0)
    n = a.shape[0]
    out[i] = a[-1 - i] * 2 + m[i % m.shape[0], -1] - a[i - n] + m[0, i % m.shape[1]]


mix_checked = ol.kernel(mix, boundscheck=True)
mix_plain = ol.kernel(mix)


@ol.kernel(boundscheck=True)
def gather(item, x, idx, y):
    g = item.get_id(0)
    y[g] = x[idx[g]]  # gather


@ol.device_func
def pick(v, i):
    return v[i]  # pick


@ol.kernel(boundscheck=True)
def gather_via_device_func(item, x, idx, y):
    g = item.get_id(0)
    y[g] = pick(x, idx[g])


@ol.kernel(boundscheck=True)
def scatter(item, x, idx, y):
    g = item.get_id(0)
    y[idx[g]] = x[g]  # scatter


def test_kernel_flag_and_signature(device, rng):
    assert mix_checked.boundscheck is True and mix_plain.boundscheck is False
    assert gather.boundscheck is True
    x = ol.asarray(rng.standard_normal(8), device=device)
    y = ol.asarray(poisoned(8, np.float64), device=device)
    gather[ol.Range(8)](x, ol.asarray(np.arange(8), device=device), y)
    assert any(s.endswith(f"with boundscheck on {device.filter_string}") for s in gather.signatures), gather.signatures


def test_in_range_same_results_checked_or_not(device, rng):
    n = int(rng.integers(100, 2000))
    a = rng.standard_normal(n).astype(np.float32)
    big = rng.standard_normal((17, 26)).astype(np.float32)
    m = ol.asarray(big, device=device)[:, ::2]  # strided: not C-contiguous
    mh = big[:, ::2]
    i = np.arange(n)
    want = a[::-1] * 2 + mh[i % mh.shape[0], -1] - a + mh[0, i % mh.shape[1]]
    for k in (mix_checked, mix_plain):
        out = ol.asarray(poisoned(n, np.float32), device=device)
        k[ol.Range(n)](ol.asarray(a, device=device), m, out)
        np.testing.assert_allclose(ol.asnumpy(out), want, rtol=1e-6, atol=1e-6, err_msg=k.__name__)


@pytest.mark.parametrize("kernel,marker,array", [(gather, "gather", "x"), (gather_via_device_func, "pick", "v")],
                         ids=["kernel", "device_func"])
@pytest.mark.parametrize("bad", ["high", "negative"])
def test_kernel_gather(device, rng, kernel, marker, array, bad):
    n = int(rng.integers(100, 1000))
    xh = rng.standard_normal(n)
    x, buf, inner = guarded(xh, device)
    idx = rng.integers(-n, n, n)
    y = ol.asarray(poisoned(n, np.float64), device=device)
    kernel[ol.Range(n)](x, ol.asarray(idx, device=device), y)
    np.testing.assert_array_equal(ol.asnumpy(y), xh[idx])
    at = int(rng.integers(0, n))
    idx[at] = n + int(rng.integers(0, 5)) if bad == "high" else -n - 1 - int(rng.integers(0, 5))
    with pytest.raises(IndexError, match=expect(idx[at], 0, n, array, marker)):
        kernel[ol.Range(n)](x, ol.asarray(idx, device=device), y)
    assert_margin_poisoned(buf, inner, "gather")
    # the kernel goes on working
    idx[at] = 0
    y = ol.asarray(poisoned(n, np.float64), device=device)
    kernel[ol.Range(n)](x, ol.asarray(idx, device=device), y)
    np.testing.assert_array_equal(ol.asnumpy(y), xh[idx])


def test_kernel_scatter_unsigned_index(device, rng):
    n = int(rng.integers(100, 1000))
    perm = rng.permutation(n).astype(np.uint32)
    perm[int(rng.integers(0, n))] = n + 2
    y, buf, inner = guarded(poisoned(n, np.float64), device)
    with pytest.raises(IndexError, match=expect(n + 2, 0, n, "y", "scatter")):
        scatter[ol.Range(n)](ol.asarray(rng.standard_normal(n), device=device), ol.asarray(perm, device=device), y)
    assert_margin_poisoned(buf, inner, "scatter")


def test_call_kernel_async_raises_too(device, rng):
    n = 64
    x = ol.asarray(rng.standard_normal(n), device=device)
    y = ol.asarray(poisoned(n, np.float64), device=device)
    idx = np.arange(n)
    idx[5] = n
    with pytest.raises(IndexError, match=expect(n, 0, n, "x", "gather")):
        ol.call_kernel_async(gather, ol.Range(n), x, ol.asarray(idx, device=device), y)
    idx[5] = 5
    ev = ol.call_kernel_async(gather, ol.Range(n), x, ol.asarray(idx, device=device), y)
    ev.wait()
    np.testing.assert_array_equal(ol.asnumpy(y), ol.asnumpy(x))


# ============================================================================
# nd-range kernels: local and private arrays, atomics, barriers


@ol.kernel(boundscheck=True)
def local_shift(item, x, y, off):
    g = item.get_global_id(0)
    li = item.get_local_id(0)
    t = ol.local_array(GROUP, np.float32)
    t[li] = x[g]
    ol.group_barrier(item.get_group())
    y[g] = t[li + off]  # local_shift


@ol.kernel(boundscheck=True)
def local_neighbours(item, x, y, off):
    """A write out of range of t must not land in u (or anywhere)."""
    g = item.get_global_id(0)
    li = item.get_local_id(0)
    t = ol.local_array(GROUP, np.float32)
    u = ol.local_array(GROUP, np.float32)
    u[li] = x[g]
    t[li] = 0
    ol.group_barrier(item.get_group())
    t[li + off] = -1  # local_neighbours
    ol.group_barrier(item.get_group())
    y[g] = u[li]


@ol.kernel(boundscheck=True)
def private_rows(item, x, y, k):
    g = item.get_id(0)
    p = ol.private_array((2, 3), np.float32)
    for r in range(2):
        for c in range(3):
            p[r, c] = r * 3 + c
    y[g] = x[g] + p[1, k]  # private_rows


@ol.kernel(boundscheck=True)
def staged_write(item, x, y, off):
    """A global write out of range in a kernel with a barrier (the work-item cannot leave)."""
    g = item.get_global_id(0)
    li = item.get_local_id(0)
    t = ol.local_array(GROUP, np.float32)
    t[li] = x[g]
    ol.group_barrier(item.get_group())
    y[g + off] = t[GROUP - 1 - li] * 2  # staged_write


@ol.kernel(boundscheck=True)
def count_global(item, data, hist):
    g = item.get_id(0)
    ol.AtomicRef(hist, data[g]).fetch_add(1)  # count_global


@ol.kernel(boundscheck=True)
def count_local(item, data, hist):
    li = item.get_local_id(0)
    g = item.get_global_id(0)
    h = ol.local_array(NBINS, np.int32)
    for b in range(li, NBINS, GROUP):
        h[b] = 0
    ol.group_barrier(item.get_group())
    ol.AtomicRef(h, data[g]).fetch_add(1)  # count_local
    ol.group_barrier(item.get_group())
    for b in range(li, NBINS, GROUP):
        ol.AtomicRef(hist, b).fetch_add(h[b])


@pytest.mark.parametrize("off,bad", [(1, GROUP), (-(GROUP + 1), -(GROUP + 1))], ids=["high", "negative"])
def test_local_array_read(device, rng, off, bad):
    n = GROUP * int(rng.integers(2, 20))
    xh = rng.standard_normal(n).astype(np.float32)
    x = ol.asarray(xh, device=device)
    y = ol.asarray(poisoned(n, np.float32), device=device)
    with pytest.raises(IndexError, match=expect(bad, 0, GROUP, "t", "local_shift")):
        local_shift[ol.NdRange(n, GROUP)](x, y, off)
    local_shift[ol.NdRange(n, GROUP)](x, y, -GROUP)  # -GROUP wraps to 0: y = x
    np.testing.assert_array_equal(ol.asnumpy(y), xh)


def test_local_array_write_skipped(device, rng):
    n = GROUP * int(rng.integers(2, 20))
    xh = rng.standard_normal(n).astype(np.float32)
    y = ol.asarray(poisoned(n, np.float32), device=device)
    with pytest.raises(IndexError, match=expect(GROUP, 0, GROUP, "t", "local_neighbours")):
        local_neighbours[ol.NdRange(n, GROUP)](ol.asarray(xh, device=device), y, 1)
    np.testing.assert_array_equal(ol.asnumpy(y), xh, err_msg="a local write out of range reached another array")


@pytest.mark.parametrize("k,bad", [(3, 3), (-4, -4)], ids=["high", "negative"])
def test_private_array_axis1(device, rng, k, bad):
    n = int(rng.integers(10, 500))
    xh = rng.standard_normal(n).astype(np.float32)
    y = ol.asarray(poisoned(n, np.float32), device=device)
    with pytest.raises(IndexError, match=expect(bad, 1, 3, "p", "private_rows")):
        private_rows[ol.Range(n)](ol.asarray(xh, device=device), y, k)
    private_rows[ol.Range(n)](ol.asarray(xh, device=device), y, -1)
    np.testing.assert_array_equal(ol.asnumpy(y), xh + 5)


def test_global_write_out_of_range_in_a_kernel_with_barriers(device, rng):
    n = GROUP * int(rng.integers(2, 20))
    xh = rng.standard_normal(n).astype(np.float32)
    y, buf, inner = guarded(poisoned(n, np.float32), device)
    with pytest.raises(IndexError, match=r"index \d+ is out of bounds for axis 0 with size %d \(array 'y' at %s\)$"
                       % (n, re.escape(where("staged_write", "y")))):
        staged_write[ol.NdRange(n, GROUP)](ol.asarray(xh, device=device), y, 2)
    assert_margin_poisoned(buf, inner, "staged write")
    want = (xh.reshape(-1, GROUP)[:, ::-1] * 2).reshape(-1)
    np.testing.assert_array_equal(ol.asnumpy(y)[2:], want[:-2])


@pytest.mark.parametrize("kernel,marker,array,size",
                         [(count_global, "count_global", "hist", NBINS), (count_local, "count_local", "h", NBINS)],
                         ids=["global", "local"])
def test_atomic_ref_out_of_range(device, rng, kernel, marker, array, size):
    n = GROUP * int(rng.integers(2, 40))
    data = rng.integers(0, NBINS, n).astype(np.int32)
    hist, buf, inner = guarded(np.zeros(NBINS, np.int32), device)
    r = ol.NdRange(n, GROUP) if kernel is count_local else ol.Range(n)
    kernel[r](ol.asarray(data, device=device), hist)
    np.testing.assert_array_equal(ol.asnumpy(hist), np.bincount(data, minlength=NBINS))
    at = int(rng.integers(0, n))
    data[at] = NBINS
    hist, buf, inner = guarded(np.zeros(NBINS, np.int32), device)
    with pytest.raises(IndexError, match=expect(NBINS, 0, size, array, marker)):
        kernel[r](ol.asarray(data, device=device), hist)
    assert_margin_poisoned(buf, inner, "atomic")
    # every other work-item counted; the failing one counted nowhere
    np.testing.assert_array_equal(ol.asnumpy(hist), np.bincount(np.delete(data, at), minlength=NBINS))


# ============================================================================
# The code: no checks without the flag; PTX compiles with them


def test_no_checks_without_the_flag(device, rng):
    a = ol.asarray(rng.standard_normal(16).astype(np.float32), device=device)
    m = ol.asarray(rng.standard_normal((4, 4)).astype(np.float32), device=device)
    out = ol.asarray(np.zeros(16, np.float32), device=device)
    plain = mix_plain.inspect_llvm(a, m, out)
    assert "cmpxchg" not in plain and "bounds" not in plain
    assert plain == mix_checked.inspect_llvm(a, m, out, boundscheck=False)
    checked = mix_checked.inspect_llvm(a, m, out)
    assert "cmpxchg" in checked and checked == mix_plain.inspect_llvm(a, m, out, boundscheck=True)
    # the kernel takes one more argument, the bounds record
    head = lambda ir: re.search(r"define [^\n]*@ofl_mix\(.*", ir).group(0).count("ptr ")  # noqa: E731
    assert head(checked) == head(plain) + 1


@pytest.mark.parametrize("kernel,ndrange", [(mix_checked, False), (count_local, True), (gather_via_device_func, False)],
                         ids=["range", "ndrange_local", "device_func"])
def test_ptx_with_checks(kernel, ndrange):
    if kernel is mix_checked:
        args = (np.zeros(16, np.float32), np.zeros((4, 4), np.float32), np.zeros(16, np.float32))
    elif kernel is count_local:
        args = (np.zeros(GROUP, np.int32), np.zeros(NBINS, np.int32))
    else:
        args = (np.zeros(16), np.zeros(16, np.int64), np.zeros(16))
    r = ol.NdRange(GROUP, GROUP) if ndrange else ol.Range(16)
    ptx = kernel.inspect_ptx(*args, range=r)
    assert ".entry" in ptx and "atom" in ptx and "cas" in ptx, ptx[:2000]
    plain = kernel.inspect_ptx(*args, range=r, boundscheck=False)
    assert ptx.count("cas") > plain.count("cas")
    assert kernel.inspect_spirv(*args, range=r).count("AtomicCompareExchange") > \
        kernel.inspect_spirv(*args, range=r, boundscheck=False).count("AtomicCompareExchange")


def test_disk_cache_says_where_the_source_is_now(tmp_path):
    """A checked kernel from the disk cache names the array and its place as
    the source now stands: here the same function, moved down two lines."""
    src = tmp_path / "bc_module.py"
    body = textwrap.dedent("""\
        import numpy as np, offload as ol

        @ol.kernel(boundscheck=True)
        def k(item, a, b):
            i = item.get_id(0)
            b[i] = a[i + 1]
        """)
    code = f"""
        import runpy
        import numpy as np
        ns = runpy.run_path({str(src)!r})
        k, ol = ns["k"], ns["ol"]
        try:
            k[ol.Range(10)](ol.asarray(np.arange(10.0)), ol.asarray(np.zeros(10)))
        except IndexError as e:
            result["error"] = str(e)
        result["stats"] = k.stats
        """
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "OFFLOAD_CACHE": None}
    src.write_text(body)
    first = run_python(code, env=env)
    src.write_text("# moved\n\n" + body)
    second = run_python(code, env=env)
    assert first["error"] == f"index 10 is out of bounds for axis 0 with size 10 (array 'a' at {src}:6:12)", first
    assert second["error"] == f"index 10 is out of bounds for axis 0 with size 10 (array 'a' at {src}:8:12)", second
    assert first["stats"]["compiles"] == 1 and second["stats"]["disk_hits"] == 1, (first["stats"], second["stats"])


def test_bad_decorator_arguments():
    with pytest.raises(TypeError, match="boundscheck"):
        ol.kernel(mix, bounds=True)
    with pytest.raises(TypeError, match="boundscheck"):
        ol.jit(bogus=True)
    deco = ol.jit(boundscheck=True)
    assert deco(shift_read_unchecked.py_func).boundscheck is True
    assert ol.kernel()(mix).boundscheck is False


# ============================================================================
# Checks by default on CPU devices (issue 18 item 2): PoCL runs kernels inside the
# kernel's process, where a wild index is a segfault of the notebook.


@ol.kernel
def far_read(item, a, b, off):
    i = item.get_id(0)
    b[i] = a[i + off]  # far_read


@ol.kernel(boundscheck=False)
def far_read_unchecked(item, a, b, off):
    i = item.get_id(0)
    b[i] = a[i + off]


@pytest.mark.parametrize("off", [1000000, -(2**40)])
def test_cpu_device_checks_by_default(rng, off):
    """Far out of range on the CPU device without any boundscheck asked for: an
    IndexError, not a crash; and the launch after it runs normally."""
    n = int(rng.integers(50, 300))
    x = rng.standard_normal(n)
    a = ol.asarray(x, device="opencl:cpu:0")
    b = ol.asarray(poisoned(n, np.float64), device="opencl:cpu:0")
    with pytest.raises(IndexError) as info:
        far_read[ol.Range(n)](a, b, off)
    # Every work-item reads out of range, and the first to fail reports: on a
    # device that runs groups on several threads, any of them (i + off, as written).
    msg = str(info.value)
    i = int(re.match(r"index (-?\d+) ", msg)[1]) - off
    assert 0 <= i < n, msg
    assert re.match(expect(i + off, 0, n, "a", "far_read"), msg), msg
    assert far_read.boundscheck is False  # not asked for: the device's default
    far_read[ol.Range(n)](a, b, 0)
    np.testing.assert_array_equal(ol.asnumpy(b), x)
    assert any(s.endswith("with boundscheck on opencl:cpu:0") for s in far_read.signatures)


def test_boundscheck_false_opts_out(rng):
    n = int(rng.integers(50, 300))
    x = rng.standard_normal(n)
    a = ol.asarray(x, device="opencl:cpu:0")
    b = ol.asarray(poisoned(n, np.float64), device="opencl:cpu:0")
    far_read_unchecked[ol.Range(n)](a, b, 0)
    np.testing.assert_array_equal(ol.asnumpy(b), x)
    assert not any("boundscheck" in s for s in far_read_unchecked.signatures)


@pytest.mark.parametrize("env", ["0", "1"])
def test_offload_boundscheck_env(env, tmp_path):
    """OFFLOAD_BOUNDSCHECK=0 turns the CPU default off, =1 checks on every device."""
    (tmp_path / "envk.py").write_text(textwrap.dedent("""
        import numpy as np, offload as ol
        @ol.kernel
        def copy(item, a, b):
            i = item.get_id(0)
            b[i] = a[i]
        a = ol.asarray(np.arange(10.0), device="opencl:cpu:0"); b = ol.zeros(10, device="opencl:cpu:0")
        copy[ol.Range(10)](a, b)
        ok = bool((ol.asnumpy(b) == np.arange(10.0)).all())
    """))
    code = f"""
        import sys; sys.path.insert(0, {str(tmp_path)!r})
        import envk
        result["ok"] = envk.ok
        result["signatures"] = envk.copy.signatures
    """
    r = run_python(code, env={"OFFLOAD_BOUNDSCHECK": env})
    assert r["ok"], r
    assert any("with boundscheck" in s for s in r["signatures"]) == (env == "1"), r["signatures"]


# ============================================================================
# %%offload --boundscheck through jupyter_client (the conftest.py kernel)

SETUP = "import numpy as np, math, offload as ol\nfrom offload import prange\nrng = np.random.default_rng()\n"


@pytest.fixture
def kcs(request):
    try:
        kc = request.getfixturevalue("kc")
    except pytest.FixtureLookupError:
        pytest.skip("the %%offload tests need the kernel fixtures of tests/conftest.py")
    ok(kc, SETUP)
    return kc


def ok(kc, code: str):
    from kernel_testlib import cell_ok  # jupyter_client: only where the kernel tests run

    return cell_ok(kc, code)


def error(kc, code: str):
    from kernel_testlib import cell_error

    return cell_error(kc, code)


def test_magic_index_error_and_the_kernel_lives_on(request, kcs):
    ename, evalue, _ = error(kcs, "%%offload --boundscheck\n"
                                  "a = rng.random(10)\n"
                                  "b = np.full(10, np.nan)\n"
                                  "for i in prange(10):\n"
                                  "    b[i] = a[i + 1]\n")
    assert ename == "IndexError", (ename, evalue)
    assert re.fullmatch(r"index 10 is out of bounds for axis 0 with size 10 \(array 'a' at <cell \d+>:5:12\)",
                        evalue), evalue
    ename, evalue, _ = error(kcs, "%%offload --quiet --boundscheck\n"
                                  "m = rng.random((6, 4))\n"
                                  "out = np.full((6, 4), np.nan)\n"
                                  "for i in prange(6):\n"
                                  "    for j in prange(4):\n"
                                  "        out[i, j - 5] = m[i, j]\n")
    assert ename == "IndexError" and re.fullmatch(
        r"index -5 is out of bounds for axis 1 with size 4 \(array 'out' at <cell \d+>:6:9\)", evalue), evalue
    # the kernel is alive and the same kind of cell runs in range, with NumPy's results
    ok(kcs, "%%offload --quiet --boundscheck\n"
            "a = rng.random(1000)\n"
            "b = np.full(1000, np.nan)\n"
            "for i in prange(1000):\n"
            "    b[i] = a[i - 1000] * 3 + a[-1 - i]\n")
    ok(kcs, "assert np.allclose(b, a * 3 + a[::-1], rtol=1e-15, atol=0), b")
    ok(kcs, "%%offload --quiet\n"
            "c = np.full(1000, np.nan)\n"
            "for i in prange(1000):\n"
            "    c[i] = a[i - 1000] * 3 + a[-1 - i]\n")
    ok(kcs, "assert np.array_equal(c, b)")
    request.getfixturevalue("kernel").assert_alive("an IndexError in an %%offload --boundscheck cell")


def test_magic_show_llvm_has_the_checks(kcs):
    from kernel_testlib import stream_text

    msgs = ok(kcs, "%%offload --quiet --boundscheck --show llvm\n"
                   "q = np.zeros(8)\n"
                   "for i in prange(8):\n"
                   "    q[i * 3 % 8] = i\n")
    assert "cmpxchg" in stream_text(msgs)
    msgs = ok(kcs, "%%offload --quiet --show llvm\n"
                   "q = np.zeros(8)\n"
                   "for i in prange(8):\n"
                   "    q[i * 3 % 8] = i\n")
    out = stream_text(msgs)
    assert "define" in out and "cmpxchg" not in out
    # q[i]: the loop's range is checked against q's shape before the launch,
    # so the kernel checks nothing per element
    msgs = ok(kcs, "%%offload --quiet --boundscheck --show llvm\n"
                   "q = np.zeros(8)\n"
                   "for i in prange(8):\n"
                   "    q[i] = i\n")
    out = stream_text(msgs)
    assert "define" in out and "cmpxchg" not in out
