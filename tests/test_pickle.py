"""Pickling offload arrays, devices and kernels (issue 24, item 2).

Arrays pickle by value -- dtype, shape and the elements through the host, as an
out-of-band buffer with protocol 5 -- and unpickle onto the receiving process's
pickle_device() or default device. Devices pickle by filter string; kernels by
reference from an importable module, else by value with their source. Checked
in-process, and across processes with multiprocessing (spawn)."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from offload_fixtures import (  # noqa: F401  (fixtures)
    DTYPES,
    PYDIR,
    SLICES,
    check_equal,
    device_fixture,
    empty_icd_dir,
    has_cuda_driver,
    load_offload,
    ol,
    random_array,
    restore_default,
    rng,
    run_python,
)

_ol = load_offload()
device = device_fixture(_ol)

SHAPES = [(), (0,), (0, 3), (7,), (3, 5), (2, 3, 4)]
ALL_DTYPES = DTYPES + ["complex64", "complex128"]


@_ol.kernel
def add_one(item, x):
    i = item.get_id(0)
    x[i] = x[i] + 1


def data(dtype, shape, rng):
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return random_array(dtype, shape, seed=int(rng.integers(1 << 31)))


def on(ol, a, device):
    x = ol.asarray(a, device=device)
    assert x.device == device
    return x


# ---------------------------------------------------------------- arrays, in one process


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_round_trip_every_dtype_and_shape(ol, device, rng, protocol):
    with ol.pickle_device(device):
        for dtype in ALL_DTYPES:
            for shape in SHAPES:
                a = data(dtype, shape, rng)
                y = pickle.loads(pickle.dumps(on(ol, a, device), protocol=protocol))
                assert isinstance(y, ol.ndarray) and y.device == device
                check_equal(y, a, f"{dtype}{shape} protocol {protocol}")


def test_protocol_5_is_out_of_band(ol, device, rng):
    a = rng.standard_normal((64, 33)).astype(np.float32)
    x = on(ol, a, device)
    buffers = []
    s = pickle.dumps(x, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1
    raw = buffers[0].raw()
    assert raw.nbytes == a.nbytes and bytes(raw) == a.tobytes()
    assert len(s) < 300, f"the elements went in-band: {len(s)} bytes"
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(s)  # the buffer is not in the stream
    with ol.pickle_device(device):
        check_equal(pickle.loads(s, buffers=buffers), a, "out-of-band")
        # in-band protocol 5 (no callback) carries the bytes itself
        check_equal(pickle.loads(pickle.dumps(x, protocol=5)), a, "in-band protocol 5")


@pytest.mark.parametrize("case", SLICES, ids=[c[0] for c in SLICES])
def test_views_pickle_their_own_elements_in_c_order(ol, device, case):
    _, base, view = case
    v = view(on(ol, base, device))
    want = view(base)
    buffers = []
    s = pickle.dumps(v, protocol=5, buffer_callback=buffers.append)
    assert buffers[0].raw().nbytes == want.nbytes
    with ol.pickle_device(device):
        y = pickle.loads(s, buffers=buffers)
    check_equal(y, np.ascontiguousarray(want), "view")
    assert y.strides == ol.empty(want.shape, want.dtype, device).strides  # fresh, C order


def test_unpickles_on_the_default_device_not_the_senders(ol, rng, restore_default):
    devs = ol.get_devices()
    a = rng.standard_normal(10)
    for d in devs:
        ol.set_default_device(d)
        for src in devs:
            y = pickle.loads(pickle.dumps(ol.asarray(a, device=src)))
            assert y.device == d
            check_equal(y, a, f"{src} -> {d}")


def test_pickle_device_setting_and_context_manager(ol, rng):
    devs = ol.get_devices()
    last = devs[-1]
    x = ol.asarray(rng.standard_normal(5), device=devs[0])
    s = pickle.dumps(x)
    default = ol.default_device()
    with ol.pickle_device(last.filter_string) as d:
        assert d == last
        assert pickle.loads(s).device == last
        with ol.pickle_device(None) as inner:
            assert inner is None
            assert pickle.loads(s).device == default
        assert pickle.loads(s).device == last
    assert pickle.loads(s).device == default
    # without `with`: set until set again
    setting = ol.pickle_device(last)
    try:
        assert setting.device == last and setting.previous is None
        assert pickle.loads(s).device == last
    finally:
        ol.pickle_device(None)
    assert pickle.loads(s).device == default


def test_pickle_device_bad_input(ol):
    with pytest.raises(ValueError) as bad:
        ol.pickle_device("nonsense")
    with pytest.raises(ValueError) as ref:
        ol.Device("nonsense")
    assert str(bad.value) == str(ref.value)
    with pytest.raises(ol.DeviceNotFoundError, match="no device matches"):
        ol.pickle_device("opencl:cpu:57")
    with pytest.raises(TypeError):
        ol.pickle_device(3.5)
    assert pickle.loads(pickle.dumps(ol.asarray([1]))).device == ol.default_device()


def test_copy_and_deepcopy_stay_on_the_device(ol, device, rng):
    a = rng.standard_normal((4, 5))
    x = on(ol, a, device)
    for y in (copy.copy(x), copy.deepcopy(x), copy.deepcopy([x, x])[0]):
        assert y.device == device
        check_equal(y, a, "copy")
    y = copy.copy(x)
    y[0, 0] = 99.0
    assert ol.asnumpy(x)[0, 0] == a[0, 0]


def test_device_pickles_by_filter_string(ol):
    for d in ol.get_devices():
        s = pickle.dumps(d)
        assert d.filter_string.encode() in s
        assert pickle.loads(s) is d


def test_kernel_pickles_by_reference_from_a_module(ol, device):
    assert pickle.loads(pickle.dumps(add_one)) is add_one
    assert b"_import_kernel" in pickle.dumps(add_one)


def test_kernel_pickles_by_value_elsewhere(ol, device, rng):
    cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle (Dask's pickler) is not installed")

    @ol.kernel(boundscheck=True)
    def scale(item, x, s):
        i = item.get_id(0)
        x[i] = x[i] * s

    k = cloudpickle.loads(cloudpickle.dumps(scale))
    assert isinstance(k, ol.Kernel) and k is not scale and k.boundscheck
    a = rng.standard_normal(33)
    x = on(ol, a, device)
    k[ol.Range(33)](x, 3.0)
    check_equal(x, a * 3.0, "unpickled kernel")


# ---------------------------------------------------------------- other processes


def test_unpickling_where_no_device_exists(ol, empty_icd_dir, tmp_path):
    if has_cuda_driver():
        pytest.skip("a CUDA driver is here: the child would find a device")
    blob = pickle.dumps(ol.asarray(np.arange(4.0))).hex()
    dev = pickle.dumps(ol.get_devices()[0]).hex()
    r = run_python(
        f"""
        import pickle, offload
        for name, blob in (("array", {blob!r}), ("device", {dev!r})):
            try:
                pickle.loads(bytes.fromhex(blob))
                result[name] = "no error"
            except offload.DeviceNotFoundError as e:
                result[name] = str(e)
        """,
        env={"OCL_ICD_VENDORS": str(empty_icd_dir), "OFFLOAD_DEVICE": None},
    )
    assert r["array"].startswith("unpickling an offload.ndarray (it came from opencl:cpu:"), r["array"]
    assert "no device" in r["array"]
    assert "no device matches" in r["device"], r["device"]


MP_SCRIPT = '''
import json, multiprocessing as mp, pickle, sys
import numpy as np
import offload as ol


@ol.kernel
def axpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def child(inbox, outbox):
    # a fresh process: its default device, its own compile of axpy
    while True:
        msg = inbox.get()
        if msg is None:
            return
        x, y, dev = msg
        assert isinstance(x, ol.ndarray) and x.device == ol.default_device(), (x.device, dev)
        axpy[ol.Range(x.size)](2.5, x, y)
        outbox.put((y, (x * x).sum(), x[::-2], ol.default_device().filter_string))


def total(x):
    return float(ol.asnumpy(x.sum()))


if __name__ == "__main__":
    seed = int(sys.argv[1])
    rng = np.random.default_rng(seed)
    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=child, args=(inbox, outbox))
    p.start()
    results = []
    for dev in ol.get_devices():
        a = rng.standard_normal(1000)
        b = rng.standard_normal(1000)
        inbox.put((ol.asarray(a, device=dev), ol.asarray(b, device=dev), dev))
        y, ss, rev, child_dev = outbox.get(timeout=60)
        assert isinstance(y, ol.ndarray) and y.device == ol.default_device()
        ok = (np.allclose(ol.asnumpy(y), 2.5 * a + b, rtol=1e-12)
              and np.isclose(float(ol.asnumpy(ss)), (a * a).sum(), rtol=1e-12)
              and np.array_equal(ol.asnumpy(rev), a[::-2]))
        results.append((dev.filter_string, child_dev, ok))
    inbox.put(None)
    p.join(30)
    # a pool: arrays as arguments and results
    with ctx.Pool(2) as pool:
        xs = [ol.asarray(rng.standard_normal(100)) for _ in range(4)]
        sums = pool.map(total, xs)
    pool_ok = np.allclose(sums, [ol.asnumpy(x).sum() for x in xs], rtol=1e-12)
    print("RESULT", json.dumps([results, bool(pool_ok), p.exitcode]))
'''


def test_multiprocessing_spawn(ol, tmp_path):
    script = tmp_path / "mp_offload.py"
    script.write_text(MP_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PYDIR), os.environ.get("PYTHONPATH", "")]))
    seed = int(np.random.default_rng().integers(1 << 31))
    p = subprocess.run([sys.executable, str(script), str(seed)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"seed {seed}\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    results, pool_ok, exitcode = json.loads(line[len("RESULT"):])
    assert results and all(ok for _, _, ok in results), (seed, results)
    assert pool_ok and exitcode == 0, (seed, line)


test_multiprocessing_spawn = pytest.mark.timeout(150)(test_multiprocessing_spawn)


def test_pickle_in_the_jupyter_kernel(kernel):
    """A notebook pickles an array and a kernel defined in a cell (by value, with the cell's
    source), as Dask would send them, and gets them back."""
    from kernel_testlib import cell_ok, stream_text

    pytest.importorskip("cloudpickle", reason="cloudpickle (Dask's pickler) is not installed")
    kc = kernel.kc
    cell_ok(kc, textwrap.dedent("""
        import pickle, numpy as np, offload as ol
        @ol.kernel
        def triple(item, x):
            i = item.get_id(0)
            x[i] = 3 * x[i]
        """))
    out = stream_text(cell_ok(kc, textwrap.dedent("""
        a = np.arange(12.0).reshape(3, 4)
        bufs = []
        s = pickle.dumps(ol.asarray(a)[:, ::2], protocol=5, buffer_callback=bufs.append)
        y = pickle.loads(s, buffers=bufs)
        import cloudpickle
        k = cloudpickle.loads(cloudpickle.dumps(triple))
        z = ol.asarray(a[:, ::2].ravel())
        k[ol.Range(z.size)](z)
        print(type(y).__name__, y.device == ol.default_device(), len(bufs),
              np.array_equal(ol.asnumpy(y), a[:, ::2]), k is not triple,
              np.array_equal(ol.asnumpy(z), 3 * a[:, ::2].ravel()))
        """)))
    assert out.split() == ["ndarray", "True", "1", "True", "True", "True"], out
