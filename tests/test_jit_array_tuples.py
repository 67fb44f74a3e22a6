"""Tuples of arrays as kernel arguments: a run-time parameter given a tuple
of arrays takes each element as an array parameter of its own; the tuple's
length is compile-time (one variant per length), T[k] with a compile-time k
is element k, len(T) a constant, and a loop over T is unrolled. Launched on
every device this run sees, against NumPy on fresh random data into
poisoned outputs; every misuse is a CompileError or TypeError that names it,
and the kernel launches again afterwards.
"""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import device_fixture, load_offload, poisoned, rng  # noqa: F401

ol = load_offload()
device = device_fixture(ol)


@ol.kernel
def weighted_sum(item, out, I, W: ol.constexpr):
    i = item.get_id(0)
    acc = 0.0
    for k in ol.static_range(len(I)):
        acc += I[k][i] * W[k]
    out[i] = acc


@ol.kernel
def sum_by_loop(item, out, T):
    i = item.get_id(0)
    s = 0.0
    for a in T:
        s += a[i]
    out[i] = s


@ol.kernel
def scatter_rows(item, T, x):
    # element k of T gets row k of x: stores through a tuple's elements
    i = item.get_id(0)
    for k in ol.static_range(len(T)):
        T[k][i] = x[k, i]


@ol.kernel
def gather_mixed(item, out, T):
    # elements of different dtypes and ranks: each is typed on its own
    i = item.get_id(0)
    out[i] = T[0][T[1][i], 1] + T[2][i]


@ol.kernel
def last_bound(item, out, T):
    # after a loop over T, its variable keeps the last element, as in Python
    i = item.get_id(0)
    for a in T:
        out[i] = 0.0
    out[i] = a[i]


def dev_array(x, device):
    return ol.asarray(x, device=device)


@pytest.mark.parametrize("K", [1, 2, 5])
def test_static_range_over_len(device, rng, K):
    n = 257
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(K)]
    w = tuple(float(v) for v in rng.integers(-3, 4, K))
    out = dev_array(poisoned(n, "float32"), device)
    weighted_sum[ol.Range(n)](out, tuple(dev_array(x, device) for x in xs), w)
    want = sum(np.float32(wk) * x for wk, x in zip(w, xs))
    np.testing.assert_allclose(ol.asnumpy(out), want, rtol=1e-5, atol=1e-5)


def test_each_length_is_a_variant(device, rng):
    n = 16
    xs = [dev_array(rng.standard_normal(n), device) for _ in range(3)]
    out = dev_array(poisoned(n, "float64"), device)
    before = len(sum_by_loop.signatures)
    for K in (1, 2, 3, 2, 1):
        sum_by_loop[ol.Range(n)](out, tuple(xs[:K]))
        want = sum(ol.asnumpy(x) for x in xs[:K])
        np.testing.assert_allclose(ol.asnumpy(out), want)
    sigs = sum_by_loop.signatures[before:]
    assert len(sigs) == 3, sigs
    assert sorted(s.count("array(") for s in sigs) == [2, 3, 4], sigs


def test_an_empty_tuple_unrolls_nothing(device):
    out = dev_array(poisoned(8, "float64"), device)
    sum_by_loop[ol.Range(8)](out, ())
    assert np.array_equal(ol.asnumpy(out), np.zeros(8))


def test_stores_through_elements_and_numpy_elements_come_back(device, rng):
    n = 100
    x = rng.standard_normal((3, n))
    outs = (dev_array(poisoned(n, "float64"), device), poisoned(n, "float64"),
            dev_array(poisoned(n, "float32"), device))
    scatter_rows[ol.Range(n)](outs, dev_array(x, device))
    assert np.array_equal(ol.asnumpy(outs[0]), x[0])
    assert np.array_equal(outs[1], x[1])  # a NumPy element: copied there and back
    assert np.array_equal(ol.asnumpy(outs[2]), x[2].astype(np.float32))


def test_elements_of_different_types(device, rng):
    n = 50
    table = rng.standard_normal((7, 3))
    idx = rng.integers(0, 7, n).astype(np.int32)
    add = rng.integers(-5, 5, n).astype(np.int16)
    out = dev_array(poisoned(n, "float64"), device)
    gather_mixed[ol.Range(n)](out, (dev_array(table, device), dev_array(idx, device),
                                    dev_array(add, device)))
    np.testing.assert_array_equal(ol.asnumpy(out), table[idx, 1] + add)


def test_loop_variable_keeps_the_last_element(device, rng):
    xs = [dev_array(rng.standard_normal(9), device) for _ in range(3)]
    out = dev_array(poisoned(9, "float64"), device)
    last_bound[ol.Range(9)](out, tuple(xs))
    assert np.array_equal(ol.asnumpy(out), ol.asnumpy(xs[2]))


def test_an_index_out_of_range_names_the_element(device):
    @ol.kernel(boundscheck=True)
    def shifted(item, out, I):
        i = item.get_id(0)
        out[i] = I[1][i + 5]

    a = dev_array(np.arange(10.0), device)
    out = dev_array(poisoned(10, "float64"), device)
    with pytest.raises(IndexError, match=r"index 10 is out of bounds for axis 0 with size 10 "
                                         r"\(array 'I\[1\]' at "):
        shifted[ol.Range(10)](out, (a, a))


# ---- misuse: clear errors, and the kernel launches afterwards ----


@ol.kernel
def runtime_index(item, out, I, j):
    i = item.get_id(0)
    out[i] = I[j][i]


@ol.kernel
def index_past_end(item, out, I):
    i = item.get_id(0)
    out[i] = I[2][i]


@ol.kernel
def assigns_tuple(item, out, I):
    i = item.get_id(0)
    I = out
    out[i] = 1.0


@ol.kernel
def whole_tuple(item, out, I):
    i = item.get_id(0)
    out[i] = I


@ol.device_func
def first_of(T):
    return T[0][0]


@ol.kernel
def tuple_to_device_function(item, out, I):
    i = item.get_id(0)
    out[i] = first_of(I)


@pytest.mark.parametrize("kernel,extra,message", [
    (runtime_index, (0,), r"a tuple of arrays takes compile-time indices"),
    (index_past_end, (), r"index 2 is out of range: this tuple holds 2 arrays"),
    (assigns_tuple, (), r"'I' is a parameter given a tuple of arrays and cannot be assigned"),
    (whole_tuple, (), r"'I' is a tuple of arrays, which a kernel uses at compile time only"),
    (tuple_to_device_function, (), r"'I' is a tuple of arrays, which a kernel uses at compile"),
])
def test_misuse_is_a_compile_error(device, kernel, extra, message):
    a = dev_array(np.arange(4.0), device)
    out = dev_array(poisoned(4, "float64"), device)
    with pytest.raises(ol.CompileError, match=message):
        kernel[ol.Range(4)](out, (a, a), *extra)
    sum_by_loop[ol.Range(4)](out, (a, a))
    assert np.array_equal(ol.asnumpy(out), 2 * np.arange(4.0))


def test_a_tuple_of_numbers_is_not_a_run_time_argument(device):
    a = dev_array(np.arange(4.0), device)
    out = dev_array(poisoned(4, "float64"), device)
    with pytest.raises(TypeError, match=r"sum_by_loop\(\): argument 2 is a tuple, whose elements "
                                        r"a kernel takes as arrays, but element 1 is float"):
        sum_by_loop[ol.Range(4)](out, (a, 1.0))
    with pytest.raises(TypeError, match=r"sum_by_loop\(\) takes 2 arguments after the item, got 3"):
        sum_by_loop[ol.Range(4)](out, (a,), 3)
    sum_by_loop[ol.Range(4)](out, (a,))
    assert np.array_equal(ol.asnumpy(out), np.arange(4.0))


@ol.kernel
def sum_constants(item, out, T: ol.constexpr):
    i = item.get_id(0)
    s = 0.0
    for v in T:
        s += v
    out[i] = s


def test_a_loop_over_an_empty_compile_time_tuple(device):
    out = dev_array(poisoned(4, "float64"), device)
    sum_constants[ol.Range(4)](out, ())
    assert np.array_equal(ol.asnumpy(out), np.zeros(4))
    sum_constants[ol.Range(4)](out, (1.5, 2.0))
    assert np.array_equal(ol.asnumpy(out), np.full(4, 3.5))
