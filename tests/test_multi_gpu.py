"""Several GPUs in one process (issue 24, item 1): every GPU listed in PCI
order, each with its own context, stream, pool, compile cache and compiler
thread; copies between GPUs peer to peer; arrays of two GPUs in one
operation refused; %%offload --device and OFFLOAD_DEVICE reaching the second
GPU; threads driving one GPU each.

Runs where offload finds two CUDA devices or more (the lent multi-GPU
machines); skipped, with the reason, everywhere else. The same paths between
CPU devices (through the host) are tested in test_arrays.py with two PoCL
devices.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from offload_fixtures import DTYPES, check_equal, load_offload, random_array, run_python


@pytest.fixture(scope="module")
def ol():
    mod = load_offload()
    n = len(mod.get_devices(backend="cuda"))
    if n < 2:
        pytest.skip(f"needs two CUDA devices; offload finds {n} here")
    return mod


@pytest.fixture(scope="module")
def gpus(ol):
    return ol.get_devices(backend="cuda")


def test_every_gpu_listed_in_pci_order(ol, gpus):
    filters = [d.filter_string for d in gpus]
    assert filters == [f"cuda:gpu:{i}" for i in range(len(gpus))]
    buses = [d.pci_bus_id for d in gpus]
    assert all(buses) and buses == sorted(buses), buses
    assert len(set(buses)) == len(buses)
    # a second discovery (another process) gives the same order
    r = run_python("import offload as ol\nresult['b'] = [d.pci_bus_id for d in ol.get_devices(backend='cuda')]")
    assert r["b"] == buses


@pytest.mark.parametrize("dtype", DTYPES)
def test_to_device_between_gpus(ol, gpus, dtype):
    a, b = gpus[0], gpus[1]
    host = random_array(dtype, (1000, 37), seed=24)
    x = ol.asarray(host, device=a)
    y = x.to_device(b)
    assert y.device == b and x.device == a
    check_equal(y, host, f"{dtype} {a} -> {b}")
    z = y.to_device(a)  # and back, the other direction
    check_equal(z, host, f"{dtype} {b} -> {a}")


def test_to_device_views_and_sizes(ol, gpus):
    a, b = gpus[0], gpus[-1]
    rng = np.random.default_rng()
    host = rng.standard_normal((513, 257)).astype(np.float32)
    x = ol.asarray(host, device=a)
    check_equal(x[::3, 5:].to_device(b), host[::3, 5:], "strided view")
    check_equal(x.T.to_device(b), host.T, "transpose")
    check_equal(ol.empty((0, 4), device=a).to_device(b), np.empty((0, 4)), "empty")
    big = rng.standard_normal(3 << 25).astype(np.float32)  # 384 MiB: several staging chunks' worth
    got = ol.asarray(big, device=a).to_device(b)
    assert ol.asnumpy(got[::4096]).tolist() == big[::4096].tolist()
    assert float(ol.sum(got)) == pytest.approx(float(big.sum(dtype=np.float64)), rel=1e-4)


def test_copy_waits_for_the_source_kernel(ol, gpus):
    """The copy must see what a kernel queued on the source GPU wrote."""
    @ol.kernel
    def fill(item, out, v):
        i = item.get_id(0)
        out[i] = v + i

    a, b = gpus[0], gpus[1]
    n = 1 << 24
    x = ol.empty(n, dtype=np.float32, device=a)
    for v in (1.0, 2.0, 3.0):
        ol.call_kernel(fill, ol.Range(n), x, np.float32(v))
        y = x.to_device(b)  # no synchronize in between
        assert ol.asnumpy(y[-4:]).tolist() == (v + np.arange(n - 4, n, dtype=np.float32)).tolist()


def test_each_gpu_compiles_and_runs_its_own(ol, gpus):
    @ol.kernel
    def axpy(item, a, x, y):
        i = item.get_id(0)
        y[i] = a * x[i] + y[i]

    rng = np.random.default_rng()
    for d in gpus:
        xh = rng.standard_normal(100_003).astype(np.float32)
        yh = rng.standard_normal(100_003).astype(np.float32)
        x, y = ol.asarray(xh, device=d), ol.asarray(yh, device=d)
        ol.call_kernel(axpy, ol.Range(xh.size), np.float32(2.5), x, y)
        check_equal(y, np.float32(2.5) * xh + yh, str(d))
    # one specialisation per GPU: each loaded in that GPU's own context
    on = {sig.rpartition(" on ")[2] for sig in axpy.signatures}
    assert on == {d.filter_string for d in gpus}, axpy.signatures


def test_two_gpus_in_one_operation_refused(ol, gpus):
    a, b = gpus[0], gpus[1]
    x = ol.ones(10, device=a)
    y = ol.ones(10, device=b)
    with pytest.raises(ol.ExecutionPlacementError) as e:
        x + y
    assert a.filter_string in str(e.value) and b.filter_string in str(e.value)

    @ol.kernel
    def add(item, x, y):
        i = item.get_id(0)
        x[i] += y[i]

    with pytest.raises(ol.ExecutionPlacementError):
        ol.call_kernel(add, ol.Range(10), x, y)
    check_equal(x, np.ones(10), "x untouched")


def test_offload_cell_on_the_second_gpu(ol, gpus):
    """What %%offload --device cuda:gpu:1 runs: the cell's loops in a LoopContext on that GPU."""
    n = 1 << 20
    rng = np.random.default_rng()
    xh = rng.standard_normal(n).astype(np.float32)
    ns = {"ol": ol, "np": np, "x": xh, "y": np.full(n, np.nan, np.float32)}
    code = ol._compile_cell("for i in ol.prange(x.shape[0]):\n    y[i] = x[i] * 4 + 1\n", "<cell>")
    seen = {}
    with ol.LoopContext(device=gpus[1].filter_string, verbose=True,
                        on_record=lambda records: seen.update(log=list(records))):
        exec(code, ns)
    check_equal(ns["y"], xh * 4 + 1, "prange on cuda:gpu:1")
    devices = [r["device"] for r in seen.get("log", []) if r.get("kind") == "device"]
    assert devices == [gpus[1].filter_string], seen


def test_offload_device_variable(ol, gpus):
    r = run_python(
        "import offload as ol, numpy as np\n"
        "x = ol.arange(1000, dtype=np.float32)\n"
        "result['d'] = ol.default_device().filter_string\n"
        "result['x'] = x.device.filter_string\n"
        "result['s'] = float((x * 2).sum())\n",
        env={"OFFLOAD_DEVICE": "cuda:gpu:1"},
    )
    assert r["d"] == r["x"] == "cuda:gpu:1"
    assert r["s"] == float(np.arange(1000, dtype=np.float32).sum() * 2)


def test_a_thread_per_gpu(ol, gpus):
    """Each thread drives its own GPU at the same time; no lock is shared."""
    @ol.kernel
    def scale(item, x, k):
        i = item.get_id(0)
        x[i] = x[i] * k

    rng = np.random.default_rng()
    hosts = [rng.standard_normal(1 << 22).astype(np.float32) for _ in gpus]
    results, errors = {}, []

    def work(i, d):
        try:
            x = ol.asarray(hosts[i], device=d)
            for _ in range(20):
                ol.call_kernel(scale, ol.Range(x.size), x, np.float32(1.0001))
            results[i] = ol.asnumpy(x.to_device(gpus[(i + 1) % len(gpus)]))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i, d)) for i, d in enumerate(gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, h in enumerate(hosts):
        want = h.copy()
        for _ in range(20):
            want = want * np.float32(1.0001)
        np.testing.assert_allclose(results[i], want, rtol=1e-6)


def test_dlpack_names_the_drivers_ordinal(ol, gpus):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed")
    for d in gpus:
        x = ol.arange(16, dtype=np.float32, device=d)
        kind, ordinal = x.__dlpack_device__()
        c = cp.from_dlpack(x)
        assert c.device.id == ordinal
        with cp.cuda.Device(ordinal):
            assert c.sum().item() == 120.0
        back = ol.from_dlpack(c)
        assert back.device == d


def test_local_rank_picks_its_gpu(ol, gpus):
    """An MPI rank (or Dask worker) r takes GPU r mod n (README, "The device of a rank")."""
    for rank in (1, len(gpus) + 1):
        r = run_python(
            "import offload as ol\n"
            "result['d'] = ol.default_device().filter_string\n"
            "result['r'] = ol.local_rank()\n",
            env={"OMPI_COMM_WORLD_LOCAL_RANK": str(rank), "OFFLOAD_DEVICE": None},
        )
        assert r["r"] == rank and r["d"] == f"cuda:gpu:{rank % len(gpus)}", r


def test_pickle_between_gpus(ol, gpus):
    import pickle

    host = np.random.default_rng().standard_normal((300, 7)).astype(np.float32)
    x = ol.asarray(host, device=gpus[0])
    with ol.pickle_device(gpus[1]):
        y = pickle.loads(pickle.dumps(x, protocol=5))
    assert y.device == gpus[1]
    check_equal(y, host, "unpickled on the second GPU")
