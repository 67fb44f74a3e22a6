"""Advanced indexing of offload arrays (issue 22): x[key] and x[key] = value with
integer arrays, boolean masks and Python booleans, and offload.take,
take_along_axis and nonzero -- each checked against NumPy on the same key:

- keys mixing integer arrays (offload arrays of every integer dtype, lists, NumPy
  arrays), masks, slices, None, Ellipsis and integers on 1-D..4-D arrays, with
  NumPy's placement of the advanced dimensions (adjacent: in place; separated:
  first); negative indices; masks all-False, all-True and random, over several
  compaction groups; empty results; non-contiguous x, index arrays and masks;
- every dtype for the values (complex dtypes do not exist in offload yet);
- setitem with scalars, offload arrays, NumPy arrays and lists, broadcast to the
  indexed shape and cast as NumPy's assignment (unsafe), overlapping values;
  repeated indices only with a scalar value (with an array, which of the values
  lands is unspecified on devices, as the array API says);
- the errors, with NumPy's wording: an index out of range (raised at the call,
  from the device's check, nothing written, the module usable afterwards), a
  mask of the wrong shape, index arrays that do not broadcast, float indices,
  too many indices, arrays on two devices (ExecutionPlacementError).

Runs on every device offload sees. Inputs are fresh random data each run; a
failing test prints its seed: OFFLOAD_TEST_SEED=<n> reruns it with the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (rng: a fixture)
    DTYPES,
    check_equal,
    device_fixture,
    load_offload,
    random_array,
    rng,
    run_python,
)

ol = load_offload()
device = device_fixture(ol)

INDEX_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def to_dev(key, device, how="offload"):
    """key with its NumPy arrays made offload arrays on device (how="offload"),
    lists (how="list") or left NumPy arrays (how="numpy")."""
    def conv(k):
        if isinstance(k, np.ndarray):
            if how == "offload":
                return ol.asarray(k, device=device)
            if how == "list":
                return k.tolist()
        return k
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


def got(a):
    return np.asarray(ol.asnumpy(a))


def host(x, device):
    return ol.asarray(x, device=device)


# ---------------------------------------------------------------------------- keys

def keys_for(rng):
    """(id, shape, key) -- the key made of NumPy arrays and basic items."""
    i = lambda n, *shape: rng.integers(-n, n, size=shape)  # noqa: E731
    m = lambda *shape: rng.random(shape) < 0.5  # noqa: E731
    return [
        ("1d-int", (9,), i(9, 5)),
        ("1d-int-2d", (9,), i(9, 3, 4)),
        ("1d-int-0d", (9,), np.array(-2)),
        ("1d-empty", (9,), np.zeros(0, np.int64)),
        ("1d-mask", (9,), m(9)),
        ("1d-true", (9,), True),
        ("1d-false", (9,), False),
        ("1d-ell-true", (9,), (Ellipsis, True)),
        ("1d-none-int", (9,), (None, i(9, 4))),
        ("2d-int", (5, 6), i(5, 7)),
        ("2d-int-int", (5, 6), (i(5, 4), i(6, 4))),
        ("2d-int-bcast", (5, 6), (i(5, 3, 1), i(6, 1, 4))),
        ("2d-slice-int", (5, 6), (slice(1, None, 2), i(6, 3))),
        ("2d-int-slice", (5, 6), (i(5, 2, 2), slice(None, None, -1))),
        ("2d-scalar-int", (5, 6), (2, i(6, 3))),
        ("2d-mask2d", (5, 6), m(5, 6)),
        ("2d-mask-rows", (5, 6), m(5)),
        ("2d-slice-mask", (5, 6), (slice(None), m(6))),
        ("2d-mask-int", (5, 6), (np.array([True, False, True, True, False]), i(6, 3))),
        ("2d-true-int", (5, 6), (True, i(5, 2))),
        ("3d-ell-int", (3, 4, 5), (Ellipsis, i(5, 2))),
        ("3d-int-slice-int", (3, 4, 5), (i(3, 2), slice(None), i(5, 2))),  # separated: first
        ("3d-int0-slice-int", (3, 4, 5), (1, slice(None), i(5, 2))),  # an int counts as advanced
        ("3d-slice-int-int", (3, 4, 5), (slice(None), i(4, 2, 1), i(5, 3))),  # adjacent: in place
        ("3d-none-int-none", (3, 4, 5), (None, i(3, 2), None, Ellipsis)),
        ("3d-int-ell-int", (3, 4, 5), (i(3, 2), Ellipsis, i(5, 2))),
        ("3d-mask2d-slice", (3, 4, 5), (m(3, 4), slice(1, 4))),
        ("3d-slice-mask2d", (3, 4, 5), (slice(None, None, -1), m(4, 5))),
        ("3d-mask3d", (3, 4, 5), m(3, 4, 5)),
        ("3d-int-ell-0dint", (3, 4, 5), (i(3, 2), Ellipsis, np.array(1))),
        ("4d-mixed", (2, 3, 4, 5), (slice(None), i(3, 2, 1), slice(1, 3), i(5, 3))),
        ("4d-adjacent", (2, 3, 4, 5), (0, slice(None), i(4, 2), i(5, 1))),
        ("4d-mask-none", (2, 3, 4, 5), (Ellipsis, None, m(4, 5))),
        ("4d-all", (2, 3, 4, 5), (i(2, 6), i(3, 6), i(4, 6), i(5, 6))),
        ("4d-empty-bcast", (2, 3, 4, 5), (i(2, 0), slice(None), i(4, 1))),
        ("4d-false-int", (2, 3, 4, 5), (Ellipsis, False, slice(2))),
    ]


KEY_IDS = [k[0] for k in keys_for(np.random.default_rng(0))]


@pytest.mark.parametrize("kid", KEY_IDS)
def test_getitem_matches_numpy(device, rng, kid):
    _, shape, key = next(k for k in keys_for(rng) if k[0] == kid)
    x = random_array("int32", shape, seed=int(rng.integers(1 << 30)))
    a = host(x, device)
    check_equal(a[to_dev(key, device)], np.asarray(x[key]), kid)


@pytest.mark.parametrize("kid", ["1d-int", "2d-int-bcast", "2d-mask-int", "3d-int-slice-int", "4d-mixed"])
@pytest.mark.parametrize("how", ["list", "numpy"])
def test_host_index_arrays_are_uploaded(device, rng, kid, how):
    _, shape, key = next(k for k in keys_for(rng) if k[0] == kid)
    x = random_array("float32", shape, seed=3)
    check_equal(host(x, device)[to_dev(key, device, how)], np.asarray(x[key]), kid)


@pytest.mark.parametrize("kid", KEY_IDS)
def test_setitem_matches_numpy(device, rng, kid):
    _, shape, key = next(k for k in keys_for(rng) if k[0] == kid)
    x = random_array("int16", shape, seed=int(rng.integers(1 << 30)))
    want = x.copy()
    want[key] = 7  # a scalar: repeated indices all get it
    a = host(x, device)
    a[to_dev(key, device)] = 7
    check_equal(a, want, kid)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_value_dtype(device, rng, dtype):
    x = random_array(dtype, (6, 40), seed=int(rng.integers(1 << 30)))
    idx = rng.permutation(40)[:25] - 20  # unique, some negative
    mask = rng.random((6, 40)) < 0.3
    a = host(x, device)
    check_equal(a[:, host(idx, device)], x[:, idx], "x[:, idx]")
    check_equal(a[host(mask, device)], x[mask], "x[mask]")
    check_equal(ol.take(a, host(idx, device), axis=1), np.take(x, idx, axis=1), "take")
    v = random_array(dtype, (6, 25), seed=5)
    want = x.copy()
    want[:, idx] = v
    a[:, host(idx, device)] = host(v, device)
    check_equal(a, want, "x[:, idx] = v")
    s = x[0, 0].item()
    want[mask] = s
    a[host(mask, device)] = s
    check_equal(a, want, "x[mask] = scalar")


@pytest.mark.parametrize("itype", INDEX_DTYPES)
def test_index_dtypes(device, rng, itype):
    x = random_array("float64", (30,), seed=1)
    info = np.iinfo(itype)
    lo = max(info.min, -30)
    idx = rng.integers(lo, 30, size=(4, 5)).astype(itype)
    a = host(x, device)
    check_equal(a[host(idx, device)], x[idx], itype)
    check_equal(ol.take(a, host(idx, device)), np.take(x, idx), "take " + itype)
    want = x.copy()
    want[idx] = -1.5
    a[host(idx, device)] = -1.5
    check_equal(a, want, "setitem " + itype)


def test_uint64_index_wraps_as_numpy(device):
    x = np.arange(5.0)
    idx = np.array([2**64 - 1, 0], dtype=np.uint64)  # NumPy's cast to intp: -1
    check_equal(host(x, device)[host(idx, device)], x[idx])


@pytest.mark.parametrize("n", [1, 700, 3000])
@pytest.mark.parametrize("kind", ["none", "all", "random", "sparse"])
def test_masks(device, rng, n, kind):
    x = random_array("float32", (n,), seed=int(rng.integers(1 << 30)))
    mask = {"none": np.zeros(n, bool), "all": np.ones(n, bool),
            "random": rng.random(n) < 0.5, "sparse": rng.random(n) < 0.01}[kind]
    a = host(x, device)
    m = host(mask, device)
    check_equal(a[m], x[mask], "x[mask]")
    for got_i, want_i in zip(ol.nonzero(m), np.nonzero(mask)):
        check_equal(got_i, want_i, "nonzero")
    want = x.copy()
    want[mask] = np.arange(mask.sum(), dtype=np.float32)
    a[m] = host(np.arange(mask.sum(), dtype=np.float32), device)
    check_equal(a, want, "x[mask] = v")


def test_mask_longer_than_one_scan_group(device, rng):
    """More than 256 groups of 1024 elements: each work-item of the scan takes several counts."""
    n = 300_001
    x = rng.random(n).astype(np.float32)
    mask = rng.random(n) < 0.3
    a, m = host(x, device), host(mask, device)
    check_equal(a[m], x[mask])
    check_equal(ol.nonzero(m)[0], np.nonzero(mask)[0])


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float32", "int64", "complex128"])
def test_mask_of_x_shape_every_dtype(device, rng, dtype):
    """x[mask] with mask of x's shape compacts the values directly (groups of 4096 elements,
    2048 for 16-byte ones): several groups, tails, 2-D, none and all selected."""
    for shape in [(9001,), (70, 130), (4096,)]:
        x = (rng.random(shape) * 100).astype(dtype)
        if dtype == "complex128":
            x = x + 1j * rng.random(shape)
        for mask in (rng.random(shape) < 0.4, np.zeros(shape, bool), np.ones(shape, bool)):
            check_equal(host(x, device)[host(mask, device)], x[mask], f"{dtype} {shape}")


def test_mask_over_groups_2d(device, rng):
    x = random_array("int64", (45, 70), seed=2)
    mask = rng.random((45, 70)) < 0.4
    a = host(x, device)
    check_equal(a[host(mask, device)], x[mask])
    for g, w in zip(ol.nonzero(host(mask, device)), np.nonzero(mask)):
        check_equal(g, w)


def test_non_contiguous(device, rng):
    base = random_array("float64", (8, 9, 10), seed=4)
    a = host(base, device)
    views = [
        (lambda z: z[::2, ::-1, 1::3]),
        (lambda z: z.T),
        (lambda z: z[1:, 2, ::-2]),
    ]
    for view in views:
        x, v = view(base), view(a)
        idx = rng.integers(-x.shape[-1], x.shape[-1], size=(3, 4))
        mask = rng.random(x.shape[:2]) < 0.5
        check_equal(v[..., host(idx, device)], x[..., idx])
        check_equal(v[host(mask, device)], x[mask])
        # non-contiguous index arrays and masks
        bigi = rng.integers(0, x.shape[0], size=(6, 8))
        check_equal(v[host(bigi, device)[::2, ::-3]], x[bigi[::2, ::-3]])
        bigm = rng.random((x.shape[0] * 2, x.shape[1])) < 0.5
        check_equal(v[host(bigm, device)[::2]], x[bigm[::2]])
        check_equal(v[host(bigm, device)[::-2]], x[bigm[::-2]])
    # setitem through a strided view writes through to the base
    want = base.copy()
    idx = np.array([0, 2, -1])
    want[::2, ::-1, 1::3][:, idx] = -7
    a[::2, ::-1, 1::3][:, host(idx, device)] = -7
    check_equal(a, want)


def test_empty(device, rng):
    x = random_array("int8", (4, 0, 3), seed=1)
    a = host(x, device)
    i = np.array([0, -1])
    check_equal(a[host(i, device)], x[i])
    check_equal(a[:, :, host(i, device)], x[:, :, i])
    check_equal(a[host(np.zeros((4, 0), bool), device)], x[np.zeros((4, 0), bool)])
    y = random_array("int8", (5,), seed=1)
    check_equal(host(y, device)[host(np.zeros((2, 0), np.int64), device)], y[np.zeros((2, 0), np.int64)])
    # index arrays broadcasting to nothing: no bounds error, as NumPy
    z = np.arange(6).reshape(2, 3)
    check_equal(host(z, device)[host(np.array([7]), device), host(np.zeros(0, np.int64), device)],
                z[[7], np.zeros(0, np.int64)])
    b = host(y, device)
    b[host(np.zeros(0, np.int64), device)] = 3
    check_equal(b, y)


def test_zero_d(device):
    x = np.array(3.5)
    a = host(x, device)
    check_equal(a[True], x[True])
    check_equal(a[False], x[False])
    check_equal(a[np.bool_(True)], x[np.bool_(True)])
    check_equal(a[host(np.array(True), device)], x[np.array(True)])
    y = np.arange(7)
    r = host(y, device)[host(np.array(-2), device)]  # a 0-d result stays a 0-d array
    assert isinstance(r, ol.ndarray) and r.shape == ()
    assert got(r) == y[-2]


# ---------------------------------------------------------------------------- setitem


def test_setitem_values(device, rng):
    x = random_array("float32", (5, 6, 7), seed=7)
    i = np.array([4, 0, -3])  # no repeats: which of two values lands is unspecified on a device
    j = np.array([[1], [3]])
    cases = [
        ("scalar", 2.5),
        ("np-scalar", np.float64(-1.25)),
        ("bcast-row", rng.random(7).astype(np.float32)),
        ("bcast-col", rng.random((2, 1, 1)).astype(np.float32)),
        ("leading-ones", rng.random((1, 1, 2, 3, 7)).astype(np.float32)),
        ("full", rng.random((2, 3, 7)).astype(np.float32)),
        ("float64", rng.random((2, 3, 7))),
        ("int", rng.integers(-100, 100, (3, 7))),
    ]
    for name, v in cases:
        for how in ["offload", "numpy", "list"]:
            if how != "offload" and not isinstance(v, np.ndarray):
                continue
            want = x.copy()
            want[j, i] = v
            a = host(x, device)
            val = ol.asarray(v, device=device) if how == "offload" and isinstance(v, np.ndarray) else (
                v.tolist() if how == "list" else v)
            a[host(j, device), host(i, device)] = val
            check_equal(a, want, f"{name} {how}")


def test_setitem_mask_broadcast(device, rng):
    x = random_array("int32", (5, 6), seed=3)
    rows = rng.random(5) < 0.5
    rows[0] = True
    row = rng.integers(-9, 9, 6).astype(np.int32)
    want = x.copy()
    want[rows] = row
    a = host(x, device)
    a[host(rows, device)] = host(row, device)
    check_equal(a, want)
    cols = rows.nonzero()[0]
    col = row[:5, None]  # (5, 1): broadcast along the chosen columns
    want[:, cols] = col
    a[:, host(cols, device)] = host(col, device)
    check_equal(a, want)


def test_setitem_casts_as_numpy(device):
    x = np.zeros(4, np.int8)
    a = host(x, device)
    i = host(np.array([0, 1]), device)
    v = np.array([300, -1.7])
    a[i] = v  # a NumPy array: unsafe cast (300 wraps)
    with np.errstate(invalid="ignore"):
        x[[0, 1]] = v
    check_equal(a, x)
    a[i] = host(np.array([1.9, 2.2]), device)
    x[[0, 1]] = np.array([1.9, 2.2])
    check_equal(a, x)
    with pytest.raises(OverflowError):
        a[i] = 300
    with pytest.raises(OverflowError):
        a[i] = [300, 2]
    b = host(np.zeros(3, bool), device)
    b[host(np.array([2]), device)] = 5
    check_equal(b, np.array([False, False, True]))


def test_setitem_overlapping_value(device):
    x = np.arange(10.0)
    a = host(x, device)
    idx = np.array([0, 1, 2, 3, 4])
    a[host(idx, device)] = a[5:]
    x[idx] = x[5:]
    check_equal(a, x)
    a[host(idx, device)] = a[::-2]
    x[idx] = x[::-2].copy()
    check_equal(a, x)


def test_setitem_shape_mismatch(device):
    a = host(np.zeros(5), device)
    with pytest.raises(ValueError, match=r"shape mismatch: value array of shape \(3,\) could not be "
                                         r"broadcast to indexing result of shape \(2,\)"):
        a[host(np.array([0, 1]), device)] = host(np.ones(3), device)
    with pytest.raises(ValueError, match="shape mismatch"):
        a[[0, 1]] = np.ones((2, 2))


# ---------------------------------------------------------------------------- errors


def test_out_of_bounds(device):
    x = np.arange(5.0)
    a = host(x, device)
    with pytest.raises(IndexError, match="^index 10 is out of bounds for axis 0 with size 5$"):
        a[host(np.array([1, 10, 12]), device)]
    with pytest.raises(IndexError, match="^index -6 is out of bounds for axis 0 with size 5$"):
        a[host(np.array([[1, 2], [-6, 7]]), device)]
    b = host(np.zeros((3, 4)), device)
    with pytest.raises(IndexError, match="^index 4 is out of bounds for axis 1 with size 4$"):
        b[:, host(np.array([0, 4]), device)]
    with pytest.raises(IndexError, match="^index 3 is out of bounds for axis 0 with size 3$"):
        b[3, host(np.array([0]), device)]
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 4"):
        b[host(np.array([0]), device), host(np.array([9]), device)] = 1.0  # nothing written
    check_equal(b, np.zeros((3, 4)))
    with pytest.raises(IndexError, match="^index 5 is out of bounds for axis 0 with size 5$"):
        ol.take(a, host(np.array([5]), device))
    with pytest.raises(IndexError, match="^index 6 is out of bounds"):
        ol.take_along_axis(b, host(np.full((3, 1), 6), device), axis=1)
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 5"):
        host(np.zeros((0, 5)), device)[:, host(np.array([10]), device)]
    # the device and the kernels stay usable
    check_equal(a[host(np.array([4, -5]), device)], x[[4, -5]])


def test_index_errors(device):
    a = host(np.zeros((5, 4)), device)
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0; "
                                         "size of axis is 5 but size of corresponding boolean axis is 4"):
        a[host(np.ones(4, bool), device)]
    with pytest.raises(IndexError, match="along axis 1; size of axis is 4 but size of corresponding "
                                         "boolean axis is 3"):
        a[host(np.ones((5, 3), bool), device)]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing arrays could not be broadcast "
                                         r"together with shapes \(2,\) \(3,\) "):
        a[host(np.array([0, 1]), device), host(np.array([0, 1, 2]), device)]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        a[host(np.array([0.0]), device)]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        a[[0.5]]
    with pytest.raises(IndexError, match="too many indices for array: array is 2-dimensional, but 3"):
        a[[0], [0], [0]]
    with pytest.raises(IndexError, match="only integers, slices"):
        a[np.float64(1.0), [0]]
    with pytest.raises(IndexError, match="a single ellipsis"):
        a[..., [0], ...]
    with pytest.raises(IndexError, match="only integers, slices"):
        a["x"]


def test_two_devices():
    devs = ol.get_devices()
    if len(devs) < 2:
        pytest.skip("one device")
    a = ol.asarray(np.arange(5.0), device=devs[0])
    i = ol.asarray(np.array([0, 1]), device=devs[1])
    m = ol.asarray(np.ones(5, bool), device=devs[1])
    with pytest.raises(ol.ExecutionPlacementError):
        a[i]
    with pytest.raises(ol.ExecutionPlacementError):
        a[m]
    with pytest.raises(ol.ExecutionPlacementError):
        a[ol.asarray(np.array([0, 1]), device=devs[0])] = ol.asarray(np.ones(2), device=devs[1])
    with pytest.raises(ol.ExecutionPlacementError):
        ol.take(a, i)


# ---------------------------------------------------------------------------- functions


def test_take(device, rng):
    x = random_array("int64", (4, 5, 6), seed=9)
    a = host(x, device)
    for axis in [None, 0, 1, 2, -1, -3]:
        n = x.size if axis is None else x.shape[axis]
        idx = rng.integers(-n, n, size=(2, 3))
        check_equal(ol.take(a, host(idx, device), axis=axis), np.take(x, idx, axis=axis), str(axis))
    check_equal(ol.take(a[::-1, :, ::2], host(np.array([3, 0]), device)), np.take(x[::-1, :, ::2], [3, 0]))
    check_equal(ol.take(host(np.array(5), device), host(np.array([0, 0]), device)), np.take(np.array(5), [0, 0]))
    y = np.arange(7.0)
    check_equal(ol.take(host(y, device), host(np.array(True), device)), np.take(y, np.array(True)))
    from numpy.exceptions import AxisError
    with pytest.raises(AxisError, match="axis 3 is out of bounds for array of dimension 3"):
        ol.take(a, host(np.array([0]), device), axis=3)
    with pytest.raises(TypeError):
        ol.take(a, host(np.array([0.0]), device))
    with pytest.raises(TypeError, match="asarray"):
        ol.take(a, np.array([0]))


def test_take_along_axis(device, rng):
    x = random_array("float32", (4, 5, 6), seed=9)
    a = host(x, device)
    for axis, ishape in [(-1, (4, 5, 3)), (0, (7, 5, 6)), (1, (4, 2, 1)), (1, (1, 3, 6)), (2, (4, 1, 8))]:
        idx = rng.integers(-x.shape[axis], x.shape[axis], size=ishape)
        check_equal(ol.take_along_axis(a, host(idx, device), axis=axis),
                    np.take_along_axis(x, idx, axis=axis), f"{axis} {ishape}")
    # the usual pairing with argsort, and the default axis
    idx = np.argsort(x, axis=-1)
    check_equal(ol.take_along_axis(a, host(idx, device)), np.take_along_axis(x, idx, axis=-1))
    check_equal(ol.take_along_axis(a.T, host(idx.T, device), axis=0), np.take_along_axis(x.T, idx.T, axis=0))
    y = x[:1]  # x broadcast along axis 0
    idx = rng.integers(0, 6, size=(3, 5, 2))
    check_equal(ol.take_along_axis(a[:1], host(idx, device), axis=2), np.take_along_axis(y, idx, axis=2))
    with pytest.raises(ValueError, match="same number of dimensions"):
        ol.take_along_axis(a, host(np.zeros((4, 5), np.int64), device), axis=1)
    with pytest.raises(IndexError, match="shape mismatch"):
        ol.take_along_axis(a, host(np.zeros((3, 5, 6), np.int64), device), axis=1)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float32", "float64"])
def test_nonzero(device, rng, dtype):
    for shape in [(50,), (7, 9), (3, 4, 5), (2, 3, 4, 5), (0, 3)]:
        x = random_array(dtype, shape, seed=int(rng.integers(1 << 30)))
        if x.size:
            x.reshape(-1)[rng.random(x.size) < 0.4] = 0
        r = ol.nonzero(host(x, device))
        want = np.nonzero(x)
        assert isinstance(r, tuple) and len(r) == len(want)
        for g, w in zip(r, want):
            check_equal(g, w.astype(np.int64), f"{dtype} {shape}")
    x = random_array(dtype, (6, 8), seed=2)
    for g, w in zip(ol.nonzero(host(x, device)[::-2, 1::3]), np.nonzero(x[::-2, 1::3])):
        check_equal(g, w.astype(np.int64), "strided")


def test_nonzero_errors(device):
    with pytest.raises(ValueError, match="Calling nonzero on 0d arrays is not allowed"):
        ol.nonzero(host(np.array(1.0), device))
    with pytest.raises(TypeError):
        ol.nonzero(np.arange(3))
    if np.isnan(np.float32("nan")):
        check_equal(ol.nonzero(host(np.array([0, np.nan, -0.0, 1], np.float32), device))[0], np.array([1, 3]))


def test_integer_indexing_without_64_bit_atomics():
    """Bounds checks flag the first bad position with a 32-bit atomic min, so integer-array
    indexing, take and assignment run on devices without 64-bit atomics (many laptop GPUs;
    OFFLOAD_WITHOUT=atomic64 makes the CPU device pretend to be one), and an index out of
    range is still NumPy's IndexError."""
    code = """
import numpy as np, offload as ol
x = ol.asarray(np.arange(10, dtype=np.float32))
idx = ol.asarray(np.array([1, -2, 3], np.int32))
got = [x[idx].asnumpy().tolist(), ol.take(x, idx).asnumpy().tolist(),
       x[ol.argmax(x)].asnumpy().tolist()]
x[idx] = 0
got.append(x.asnumpy().tolist())
try:
    x[ol.asarray(np.array([0, 10], np.int64))]
    got.append("no error")
except IndexError as e:
    got.append(str(e))
result = {"got": got}
"""
    r = run_python(code, env={"OFFLOAD_WITHOUT": "atomic64"}, timeout=120)["got"]
    assert r[:3] == [[1.0, 8.0, 3.0], [1.0, 8.0, 3.0], 9.0]
    assert r[3] == [0.0, 0.0, 2.0, 0.0, 4.0, 5.0, 6.0, 7.0, 0.0, 9.0]
    assert r[4] == "index 10 is out of bounds for axis 0 with size 10"
