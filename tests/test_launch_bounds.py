"""@offload.kernel(launch_bounds=...): CUDA's __launch_bounds__ as numba-cuda takes it.

The bounds reach the PTX as .maxntid / .minnctapersm (inspect_ptx needs no GPU), a
kernel pickled by value keeps them, bad values are refused when the decorator is
applied, and on a device that is not CUDA they change nothing. That ptxas then keeps
to the registers is tests/test_jit_ptxas.py's (it needs ptxas).
"""

from __future__ import annotations

import numpy as np
import pytest

from offload_fixtures import check_equal, device_fixture, load_offload, ol, poisoned, rng  # noqa: F401

_ol = load_offload()
device = device_fixture(_ol)


def _directives(k, x):
    ptx = k.inspect_ptx(x, np.float32(1), range=_ol.Range(x.shape[0]), sm=90)
    return [ln.strip() for ln in ptx.splitlines() if ln.strip().startswith((".maxntid", ".minnctapersm"))]


def _scale_source(ol, **how):
    @ol.kernel(**how)
    def scale(item, x, s):
        i = item.get_id(0)
        x[i] = x[i] * s

    return scale


@pytest.mark.parametrize(
    "bounds, want",
    [
        (None, []),
        (128, [".maxntid 128, 1, 1"]),
        ((128,), [".maxntid 128, 1, 1"]),
        ((256, 4), [".maxntid 256, 1, 1", ".minnctapersm 4"]),
    ],
)
def test_bounds_reach_the_ptx(ol, bounds, want):
    k = _scale_source(ol, launch_bounds=bounds)
    assert _directives(k, ol.zeros(64, dtype=np.float32)) == want


def test_a_bounded_kernel_runs_on_every_device(ol, device, rng):
    k = _scale_source(ol, launch_bounds=(64, 2))
    a = rng.standard_normal(1000).astype(np.float32)
    x = ol.asarray(a, device=device)
    k[ol.Range(1000)](x, np.float32(2.0))
    check_equal(x, a * 2, "launch_bounds=(64, 2)")

    @ol.kernel(launch_bounds=64)
    def fill(item, y, v):
        y[item.get_global_id(0)] = v + item.get_local_id(0)

    y = ol.asarray(poisoned(256, np.float32), device=device)
    fill[ol.NdRange(256, 64)](y, np.float32(3.0))
    check_equal(y, 3.0 + np.tile(np.arange(64, dtype=np.float32), 4), "NdRange with groups of the bound")


def test_a_kernel_pickled_by_value_keeps_its_bounds(ol):
    cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle (Dask's pickler) is not installed")
    k = _scale_source(ol, launch_bounds=(96, 3), boundscheck=True)
    k2 = cloudpickle.loads(cloudpickle.dumps(k))
    assert k2 is not k and k2.boundscheck
    x = ol.zeros(64, dtype=np.float32)
    assert _directives(k2, x) == [".maxntid 96, 1, 1", ".minnctapersm 3"]


@pytest.mark.parametrize(
    "bad, error, words",
    [
        (0, ValueError, "max_threads must be 1..1024"),
        (2048, ValueError, "max_threads must be 1..1024"),
        ((256, 0), ValueError, "min_blocks 1..64"),
        ((256, 65), ValueError, "min_blocks 1..64"),
        ((256, 4, 1), TypeError, "takes max_threads or (max_threads, min_blocks)"),
        ((), TypeError, "takes max_threads or (max_threads, min_blocks)"),
        ("256", TypeError, "takes max_threads or (max_threads, min_blocks)"),
        (256.0, TypeError, "takes max_threads or (max_threads, min_blocks)"),
        (True, TypeError, "takes max_threads or (max_threads, min_blocks)"),
    ],
)
def test_bad_bounds_are_refused(ol, bad, error, words):
    with pytest.raises(error, match=None) as e:
        ol.kernel(launch_bounds=bad)
    assert words in str(e.value)


def test_other_keywords_are_named(ol):
    with pytest.raises(TypeError, match="takes boundscheck= and launch_bounds=, not 'launchbounds'="):
        ol.kernel(launchbounds=64)
