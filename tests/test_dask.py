"""Dask with offload chunks (issue 24, item 3).

dask.array over offload arrays (from_array(x, asarray=False)), map_blocks with
offload kernels and array operations, reductions through Dask's tree, on a
distributed.LocalCluster of 2 worker processes (1 thread each) whose workers
take their devices by the documented rule (worker name -> device index;
$OFFLOAD_DEVICE per worker wins). dask.sizeof and tokenize see offload arrays
through ndarray.__sizeof__ and __dask_tokenize__ (offload never imports Dask).

The cluster runs in a child python of its own, from a script file: its
functions live in __main__, which Dask's cloudpickle sends by value (as it
does a notebook's), and no cluster outlives the test. One test runs the same
steps in the Jupyter kernel, as a notebook would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from offload_fixtures import PYDIR, load_offload, ol, rng  # noqa: F401  (fixtures)

dask = pytest.importorskip("dask", reason="dask is not installed (scripts/setup installs it)")
pytest.importorskip("distributed", reason="dask.distributed is not installed (scripts/setup installs it)")


def test_sizeof_is_the_object_and_its_elements(ol):
    from dask.sizeof import sizeof

    x = ol.zeros((100, 30), dtype="float32")
    assert sizeof(x) == sys.getsizeof(x)
    assert x.nbytes <= sizeof(x) < x.nbytes + 1024
    assert sizeof(x[:10]) < x.nbytes / 5  # a view counts what it shows
    assert sizeof(ol.zeros(0)) < 1024


def test_tokenize_is_deterministic_and_content_based(ol, rng):
    from dask.base import tokenize

    a = rng.standard_normal(1000)
    x = ol.asarray(a)
    assert tokenize(x) == tokenize(x) == tokenize(ol.asarray(a.copy()))
    b = a.copy()
    b[123] += 1.0
    assert tokenize(ol.asarray(b)) != tokenize(x)
    x[5] = 7.0  # the same object, new contents
    assert tokenize(x) != tokenize(ol.asarray(a))
    assert tokenize(ol.asarray(a, dtype="float32")) != tokenize(ol.asarray(a))
    assert tokenize(ol.asarray(a).reshape(10, 100)) != tokenize(ol.asarray(a))
    devs = ol.get_devices()
    if len(devs) > 1:
        assert tokenize(ol.asarray(a, device=devs[1])) != tokenize(ol.asarray(a, device=devs[0]))


CLUSTER_SCRIPT = '''
import json, sys
import numpy as np
import offload as ol
import dask, dask.array as da
from distributed import Client, LocalCluster


@ol.kernel
def axpy(item, a, x, y):
    i = item.get_id(0)
    y[i] = a * x[i] + y[i]


def block_axpy(b):
    # runs in a worker: an offload kernel on the block's device
    assert isinstance(b, ol.ndarray), type(b)
    out = ol.ones(b.shape, dtype=b.dtype, device=b.device)
    axpy[ol.Range(b.size)](2.0, b.reshape(-1), out.reshape(-1))
    return out


def where():
    return ol.local_rank(), ol.default_device().filter_string


def host(v):
    return np.asarray(ol.asnumpy(v)) if isinstance(v, ol.ndarray) else np.asarray(v)


def close(h, want):
    # sums in another order (Dask's tree, the device's groups): a float32 column sum of 60
    # values near 1 may be ~0.1 and differ by a few 1e-6 -- hence an absolute bound too
    f32 = h.dtype == np.float32
    return bool(np.allclose(h, want, rtol=1e-5 if f32 else 1e-11, atol=1e-4 if f32 else 1e-12))


if __name__ == "__main__":
    seed = int(sys.argv[1])
    rng = np.random.default_rng(seed)
    out = {}
    cpus = [d.filter_string for d in ol.get_devices(device_type="cpu")]
    gpus = [d.filter_string for d in ol.get_devices(device_type="gpu")]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        out["where"] = sorted(client.run(where).values())
        a = rng.standard_normal(4000)
        m = rng.standard_normal((60, 50)).astype(np.float32)
        x = da.from_array(ol.asarray(a), chunks=500, asarray=False)
        xm = da.from_array(ol.asarray(m), chunks=(20, 25), asarray=False)
        out["chunktype"] = type(x._meta).__name__
        y = x.map_blocks(block_axpy, dtype=x.dtype)  # 2 a + 1
        z = (y * y - 3.0 * x) / 2.0
        exprs = {
            "y": (y, 2 * a + 1),
            "z": (z, ((2 * a + 1) ** 2 - 3.0 * a) / 2.0),
            "sum": (z.sum(split_every=2), (((2 * a + 1) ** 2 - 3.0 * a) / 2.0).sum()),
            "mean": (y.mean(split_every=2), (2 * a + 1).mean()),
            "max": (x.max(split_every=2), a.max()),
            "min": (abs(x).min(split_every=3), abs(a).min()),
            "m_sum0": (xm.sum(axis=0, split_every=2), m.sum(axis=0)),
            "m_T": ((xm.T + 1.5).max(axis=1), (m.T + np.float32(1.5)).max(axis=1)),
        }
        got = dask.compute(*[e for e, _ in exprs.values()])
        out["checks"] = {}
        for (name, (_, want)), g in zip(exprs.items(), got):
            h = host(g)
            out["checks"][name] = [type(g).__name__, str(h.dtype) == str(np.asarray(want).dtype),
                                   h.shape == np.shape(want),
                                   close(h, want)]
        # the blocks really ran in both workers, on their devices
        owners = client.run(lambda: len(ol.kernel_table()))
        out["compiled_in"] = sorted(owners.values())
    # OFFLOAD_DEVICE given to each worker wins over its rank
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      env={"OFFLOAD_DEVICE": cpus[-1]}) as cluster, Client(cluster) as client:
        out["env"] = list(client.run(where).values())
    out["cpus"], out["team"] = cpus, gpus or cpus
    print("RESULT" + json.dumps(out))
'''


def run_script(tmp_path, text, timeout=150):
    script = tmp_path / "dask_offload.py"
    script.write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PYDIR), os.environ.get("PYTHONPATH", "")]))
    env.pop("OFFLOAD_DEVICE", None)
    seed = int(np.random.default_rng().integers(1 << 31))
    p = subprocess.run([sys.executable, str(script), str(seed)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"seed {seed}\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return seed, json.loads(line[len("RESULT"):])


@pytest.mark.timeout(180)
def test_local_cluster_of_two_processes(ol, tmp_path):
    seed, r = run_script(tmp_path, CLUSTER_SCRIPT)
    cpus, team = r["cpus"], r["team"]
    # worker i -> device i mod n of the GPUs, else of the CPU devices (CI: no GPU)
    assert r["where"] == [[0, team[0]], [1, team[1 % len(team)]]], r["where"]
    assert r["chunktype"] == "ndarray"
    bad = {k: v for k, v in r["checks"].items() if v[0] != "ndarray" or not all(v[1:])}
    assert not bad, f"seed {seed}: {bad}"
    assert all(n > 0 for n in r["compiled_in"]), r["compiled_in"]
    assert r["env"] == [[0, cpus[-1]]], r["env"]


@pytest.fixture
def dask_kernel(tmp_path):
    """A kernel started as Jupyter starts it, with no PYTHONPATH: its child processes (the
    cluster's workers, plain python3) import the standalone offload from the directory the
    kernelspec names (OFFLOAD_MODULE_DIR: the build tree's python/, or site-packages)."""
    from kernel_testlib import start_kernel

    k = start_kernel(tmp_path / "kernel.stderr", extra_env={"PYTHONPATH": None})
    yield k
    k.shutdown()


@pytest.mark.timeout(180)
def test_dask_in_the_jupyter_kernel(dask_kernel):
    """A notebook's cells: a kernel defined in a cell, a LocalCluster of processes,
    map_blocks launching the cell's kernel in the workers (which get its source
    from the pickle), a reduction, checked against NumPy."""
    from kernel_testlib import execute, stream_text

    def cell_ok(kc, code, timeout=30):
        reply, msgs = execute(kc, code, timeout=timeout)
        c = reply["content"]
        assert c["status"] == "ok", f"{c.get('ename')}: {c.get('evalue')}\n" + "\n".join(c.get("traceback", []))
        return msgs

    kc = dask_kernel.kc
    cell_ok(kc, textwrap.dedent("""
        import numpy as np, offload as ol, dask.array as da
        from distributed import Client, LocalCluster

        @ol.kernel
        def square(item, x, y):
            i = item.get_id(0)
            y[i] = x[i] * x[i]

        def block_square(b):
            y = ol.empty_like(b)
            square[ol.Range(b.size)](b, y)
            return y
        """))
    cell_ok(kc, "cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, "
                "dashboard_address=None); client = Client(cluster)", timeout=90)
    try:
        out = stream_text(cell_ok(kc, textwrap.dedent("""
            a = np.random.default_rng().standard_normal(3000)
            x = da.from_array(ol.asarray(a), chunks=700, asarray=False)
            s = x.map_blocks(block_square, dtype=x.dtype).sum(split_every=2).compute()
            ranks = sorted(client.run(ol.local_rank).values())
            print(type(s).__name__, bool(np.isclose(float(ol.asnumpy(s)), (a * a).sum(), rtol=1e-11)), ranks)
            """), timeout=90))
    finally:
        cell_ok(kc, "client.close(); cluster.close()", timeout=60)
    assert out.split() == ["ndarray", "True", "[0,", "1]"], out
