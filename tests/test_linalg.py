"""offload.linalg, the array API's linear algebra extension (issue 23 items 4-6).

Every function on every device offload sees (on CI both CPU platforms, where LAPACK's
functions run NumPy's on the host's copy and the rest are device kernels), against
NumPy on fresh random data computed in float64/complex128: stacks of matrices, the
four floating dtypes, strided views, the named-tuple results. Then the errors:
LinAlgError (offload's, a numpy.linalg.LinAlgError) for singular and non-positive-
definite input with the module still working afterwards, TypeError for host data and
integer input, NumPy's error types for bad arguments, ExecutionPlacementError for two
devices. A failing test prints its seed: OFFLOAD_TEST_SEED=<n> reruns it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from offload_fixtures import PYDIR, load_offload, device_fixture, la_path, rng  # noqa: F401  (fixtures)
from offload_fixtures import checked_host as host, random_floats as rand

ol = load_offload()
device = device_fixture(ol)

FLOATS = ["float32", "float64", "complex64", "complex128"]
RTOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-9, "complex128": 1e-9}
WIDE = {"float32": "float64", "float64": "float64", "complex64": "complex128", "complex128": "complex128"}
REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
NAMES = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
         "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
         "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]


def invertible(rng, shape, dtype):
    """Well-conditioned square matrices: diagonally dominant."""
    return (rand(rng, shape, dtype) + 3 * shape[-1] * np.eye(shape[-1])).astype(dtype)


def hpd(rng, shape, dtype):
    """Hermitian positive-definite matrices."""
    a = rand(rng, shape, dtype).astype(WIDE[dtype])
    return (a @ a.conj().swapaxes(-1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(got, want, dtype, scale=1.0):
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


def test_the_submodule():
    assert ol.linalg.__name__ == "offload.linalg" and sys.modules["offload.linalg"] is ol.linalg
    for name in NAMES:
        assert callable(getattr(ol.linalg, name)), name
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        assert getattr(ol.linalg, name) is getattr(ol, name)  # the namespace's own
    assert issubclass(ol.linalg.LinAlgError, np.linalg.LinAlgError)
    assert ol.asarray([1.0]).__array_namespace__() is ol
    r = subprocess.run([sys.executable, "-c", "import offload.linalg, offload.fft; "
                        "from offload.linalg import solve; from offload.fft import rfft; print('ok')"],
                       env={"PYTHONPATH": str(PYDIR), "PATH": "/usr/bin:/bin"}, capture_output=True,
                       text=True, timeout=60, cwd="/")
    assert r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("dtype", FLOATS)
def test_inv_det_slogdet_solve(device, rng, dtype, la_path):
    a = invertible(rng, (2, 3, 5, 5), dtype)
    x = ol.asarray(a, device=device)
    w = a.astype(WIDE[dtype])
    close(host(ol.linalg.inv(x), device, dtype, a.shape), np.linalg.inv(w), dtype)
    det = host(ol.linalg.det(x), device, dtype, (2, 3))
    close(det, np.linalg.det(w), dtype, scale=np.abs(np.linalg.det(w)).max())
    res = ol.linalg.slogdet(x)
    assert type(res).__name__ == "SlogdetResult" and res[0] is res.sign and res[1] is res.logabsdet
    want = np.linalg.slogdet(w)
    close(host(res.sign, device, dtype, (2, 3)), want.sign, dtype)
    close(host(res.logabsdet, device, REAL[dtype], (2, 3)), want.logabsdet, dtype, scale=10)
    # a stack of right-hand sides, a batch that broadcasts, and a vector (1-D only)
    b = rand(rng, (3, 5, 2), dtype)
    got = host(ol.linalg.solve(x, ol.asarray(b, device=device)), device, dtype, (2, 3, 5, 2))
    close(got, np.linalg.solve(w, b.astype(WIDE[dtype])), dtype, scale=1)
    v = rand(rng, (5,), dtype)
    got = host(ol.linalg.solve(x, ol.asarray(v, device=device)), device, dtype, (2, 3, 5))
    close(got, np.linalg.solve(w, v.astype(WIDE[dtype])), dtype, scale=1)
    # a 2-D matrix alone: det is 0-d
    assert ol.linalg.det(x[0, 0]).shape == ()


def test_mixed_dtypes_promote(device, rng, la_path):
    a = invertible(rng, (4, 4), "float32")
    b = rand(rng, (4, 2), "float64")
    got = ol.linalg.solve(ol.asarray(a, device=device), ol.asarray(b, device=device))
    np.testing.assert_allclose(host(got, device, "float64"), np.linalg.solve(a.astype("float64"), b),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cholesky(device, rng, dtype, la_path):
    a = hpd(rng, (3, 6, 6), dtype)
    x = ol.asarray(a, device=device)
    w = a.astype(WIDE[dtype])
    low = host(ol.linalg.cholesky(x), device, dtype, a.shape)
    close(low, np.linalg.cholesky(w), dtype, scale=10)
    assert np.array_equal(low, np.tril(low))
    up = host(ol.linalg.cholesky(x, upper=True), device, dtype, a.shape)
    assert np.array_equal(up, np.triu(up))
    close(up.conj().swapaxes(-1, -2) @ up, w, dtype, scale=10)


@pytest.mark.parametrize("dtype", FLOATS)
def test_eigh_eigvalsh(device, rng, dtype, la_path):
    a = hpd(rng, (2, 7, 7), dtype) - 7 * np.eye(7).astype(dtype)  # eigenvalues of both signs
    x = ol.asarray(a, device=device)
    w = a.astype(WIDE[dtype])
    res = ol.linalg.eigh(x)
    assert type(res).__name__ == "EighResult" and res[0] is res.eigenvalues and res[1] is res.eigenvectors
    vals = host(res.eigenvalues, device, REAL[dtype], (2, 7))
    vecs = host(res.eigenvectors, device, dtype, (2, 7, 7))
    scale = np.abs(np.linalg.eigvalsh(w)).max()
    close(vals, np.linalg.eigvalsh(w), dtype, scale=scale)
    assert np.all(np.diff(vals, axis=-1) >= 0)  # ascending
    close(w @ vecs.astype(WIDE[dtype]), vecs * vals[..., None, :], dtype, scale=scale)
    close(host(ol.linalg.eigvalsh(x), device, REAL[dtype], (2, 7)), np.linalg.eigvalsh(w), dtype,
          scale=scale)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 6, 4), (2, 4, 6)])
def test_qr(device, rng, dtype, shape, la_path):
    a = rand(rng, shape, dtype)
    x = ol.asarray(a, device=device)
    m, n = shape[-2:]
    k = min(m, n)
    for mode, qs, rs in (("reduced", (m, k), (k, n)), ("complete", (m, m), (m, n))):
        res = ol.linalg.qr(x, mode=mode) if mode == "complete" else ol.linalg.qr(x)
        assert type(res).__name__ == "QRResult" and res[0] is res.Q and res[1] is res.R
        q = host(res.Q, device, dtype, shape[:-2] + qs)
        r = host(res.R, device, dtype, shape[:-2] + rs)
        assert np.array_equal(r, np.triu(r))
        close(q @ r, a, dtype, scale=5)
        close(q.conj().swapaxes(-1, -2) @ q, np.broadcast_to(np.eye(qs[1]), q.shape[:-2] + (qs[1],) * 2),
              dtype, scale=1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 4, 6)])
def test_svd_svdvals(device, rng, dtype, shape, la_path):
    a = rand(rng, shape, dtype)
    x = ol.asarray(a, device=device)
    m, n = shape[-2:]
    k = min(m, n)
    want = np.linalg.svd(a.astype(WIDE[dtype]), compute_uv=False)
    for full in (True, False):
        res = ol.linalg.svd(x, full_matrices=full) if not full else ol.linalg.svd(x)
        assert type(res).__name__ == "SVDResult" and res[1] is res.S and res.Vh is res[2]
        u = host(res.U, device, dtype, shape[:-2] + ((m, m) if full else (m, k)))
        s = host(res.S, device, REAL[dtype], shape[:-2] + (k,))
        vh = host(res.Vh, device, dtype, shape[:-2] + ((n, n) if full else (k, n)))
        close(s, want, dtype, scale=5)
        close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, scale=5)
    s = host(ol.linalg.svdvals(x), device, REAL[dtype], shape[:-2] + (k,))
    close(s, want, dtype, scale=5)
    assert np.all(np.diff(s, axis=-1) <= 0)  # descending


@pytest.mark.parametrize("dtype", FLOATS)
def test_pinv_matrix_rank(device, rng, dtype, la_path):
    # rank 2 matrices of 5 x 4, and full-rank ones
    low = (rand(rng, (3, 5, 2), dtype) @ rand(rng, (3, 2, 4), dtype)).astype(dtype)
    full = rand(rng, (3, 5, 4), dtype)
    for a, rank in ((low, 2), (full, 4)):
        x = ol.asarray(a, device=device)
        got = host(ol.linalg.matrix_rank(x), device, shape=(3,))
        assert got.dtype.kind == "i" and np.array_equal(got, [rank] * 3)
        p = host(ol.linalg.pinv(x), device, dtype, (3, 4, 5))
        # the default cutoff, 5 * eps, drops rank 2's rounding noise: so does 1e-4 (or 1e-12)
        want = np.linalg.pinv(a.astype(WIDE[dtype]), rtol=1e-4 if RTOL[dtype] > 1e-6 else 1e-12)
        close(p, want, dtype, scale=5)
    # rtol: a number, or an array of the batch shape; a huge one leaves rank 0
    x = ol.asarray(full, device=device)
    assert np.array_equal(host(ol.linalg.matrix_rank(x, rtol=2.0), device), [0, 0, 0])
    rt = ol.asarray(np.array([2.0, 1e-6, 2.0], REAL[dtype]), device=device)
    assert np.array_equal(host(ol.linalg.matrix_rank(x, rtol=rt), device), [0, 4, 0])
    assert np.array_equal(host(ol.linalg.pinv(x, rtol=2.0), device), np.zeros((3, 4, 5), dtype))


def test_strided_and_views(device, rng, la_path):
    a = invertible(rng, (4, 6, 6), "float64")
    x = ol.asarray(a, device=device)
    np.testing.assert_allclose(host(ol.linalg.inv(x.mT), device), np.linalg.inv(a.swapaxes(-1, -2)),
                               rtol=1e-10)
    np.testing.assert_allclose(host(ol.linalg.det(x[::2, 1:, 1:]), device),
                               np.linalg.det(a[::2, 1:, 1:]), rtol=1e-10)
    np.testing.assert_allclose(host(ol.linalg.svdvals(x[:, ::-1, ::2]), device),
                               np.linalg.svdvals(a[:, ::-1, ::2]), rtol=1e-10)


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "float64", "complex64", "complex128"])
def test_cross(device, rng, dtype):
    a = rand(rng, (4, 3), dtype) if dtype[0] != "i" else rng.integers(-9, 9, (4, 3)).astype(dtype)
    b = rand(rng, (2, 1, 3), dtype) if dtype[0] != "i" else rng.integers(-9, 9, (2, 1, 3)).astype(dtype)
    x, y = ol.asarray(a, device=device), ol.asarray(b, device=device)
    got = host(ol.linalg.cross(x, y), device, dtype, (2, 4, 3))
    np.testing.assert_allclose(got, np.linalg.cross(a, b), rtol=RTOL.get(dtype, 0))
    # the vectors along another axis
    c, d = np.moveaxis(a, -1, 0), rand(rng, (3, 4), "float64").astype(dtype)
    got = host(ol.linalg.cross(ol.asarray(c, device=device), ol.asarray(d, device=device), axis=-2),
               device, dtype, (3, 4))
    np.testing.assert_allclose(got, np.cross(c, d, axis=0), rtol=RTOL.get(dtype, 0))
    with pytest.raises(ValueError, match="size 3"):
        ol.linalg.cross(x[:, :2], y[..., :2])
    with pytest.raises(np.exceptions.AxisError):
        ol.linalg.cross(x, y, axis=-3)


@pytest.mark.parametrize("dtype", ["bool", "int16", "uint8", "float32", "complex128"])
def test_diagonal_trace(device, rng, dtype):
    a = (rng.integers(0, 9, (2, 4, 6)) * (1 + 1j if dtype[0] == "c" else 1)).astype(dtype)
    x = ol.asarray(a, device=device)
    for k in (0, 1, 3, 5, 6, 40, -1, -3, -4, -40):
        d = ol.linalg.diagonal(x, offset=k)
        assert np.array_equal(host(d, device, dtype), np.linalg.diagonal(a, offset=k)), k
        assert np.array_equal(host(ol.linalg.diagonal(x.mT, offset=k), device),
                              np.linalg.diagonal(a.swapaxes(-1, -2), offset=k)), k
        if dtype != "bool":
            want = np.linalg.trace(a, offset=k)
            got = host(ol.linalg.trace(x, offset=k), device, shape=(2,))
            assert got.dtype == want.dtype and np.array_equal(got, want), k
    for k in (sys.maxsize, -sys.maxsize - 1):  # past any matrix (NumPy's C int overflows)
        assert host(ol.linalg.diagonal(x, offset=k), device, dtype).shape == (2, 0)
    if dtype == "bool":
        with pytest.raises(TypeError):
            ol.linalg.trace(x)
    else:
        got = host(ol.linalg.trace(x, dtype="float64" if dtype[0] != "c" else "complex128"), device)
        assert got.dtype.kind in "fc" and np.allclose(got, np.linalg.trace(a))
    with pytest.raises(ValueError):
        ol.linalg.diagonal(x[0, 0])


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "complex64"])
def test_outer(device, rng, dtype):
    a = (rng.integers(0, 9, 5) * (1 - 1j if dtype[0] == "c" else 1)).astype(dtype)
    b = rng.integers(0, 9, 3).astype(dtype)
    got = host(ol.linalg.outer(ol.asarray(a, device=device), ol.asarray(b, device=device)), device,
               dtype, (5, 3))
    assert np.array_equal(got, np.linalg.outer(a, b))
    with pytest.raises(ValueError):
        ol.linalg.outer(ol.asarray(a.reshape(1, 5), device=device), ol.asarray(b, device=device))


@pytest.mark.parametrize("dtype", FLOATS)
def test_vector_norm(device, rng, dtype):
    a = rand(rng, (3, 4, 5), dtype)
    a[0, 0, 0] = 0
    x = ol.asarray(a, device=device)
    w = a.astype(WIDE[dtype])
    for ord in (2, 1, 0, -1, -2, 3, 0.5, np.inf, -np.inf):
        for axis, keepdims in ((None, False), (None, True), (1, False), ((0, 2), True), (-1, False)):
            got = ol.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims)
            with np.errstate(divide="ignore"):  # 0 ** negative: inf, as offload's
                want = np.linalg.vector_norm(w, ord=ord, axis=axis, keepdims=keepdims)
            close(host(got, device, REAL[dtype], want.shape), want, dtype, scale=10)
    close(host(ol.linalg.vector_norm(x), device, REAL[dtype], ()), np.linalg.vector_norm(w), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_norm(device, rng, dtype, la_path):
    a = rand(rng, (2, 3, 5, 4), dtype)
    x = ol.asarray(a, device=device)
    w = a.astype(WIDE[dtype])
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        for keepdims in (False, True):
            got = ol.linalg.matrix_norm(x, ord=ord, keepdims=keepdims)
            want = np.linalg.matrix_norm(w, ord=ord, keepdims=keepdims)
            close(host(got, device, REAL[dtype], want.shape), want, dtype, scale=10)
    close(host(ol.linalg.matrix_norm(x), device, REAL[dtype], (2, 3)), np.linalg.matrix_norm(w), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matrix_power(device, rng, dtype, la_path):
    a = (invertible(rng, (2, 4, 4), dtype) / 12).astype(dtype)
    x = ol.asarray(a, device=device)
    w = a.astype(WIDE[dtype])
    for n in (0, 1, 2, 3, 6, 7, -1, -2, -5):
        got = host(ol.linalg.matrix_power(x, n), device, dtype, a.shape)
        want = np.linalg.matrix_power(w, n)
        close(got, want, dtype, scale=np.abs(want).max())
    one = host(ol.linalg.matrix_power(x[0], 1), device, dtype, (4, 4))
    assert np.array_equal(one, a[0])
    with pytest.raises(TypeError):
        ol.linalg.matrix_power(x, 1.5)
    with pytest.raises(np.linalg.LinAlgError):
        ol.linalg.matrix_power(x[..., :3], 2)


def test_linalg_errors_leave_the_module_working(device, rng, la_path):
    singular = np.ones((2, 3, 3))
    s = ol.asarray(singular, device=device)
    for f in (ol.linalg.inv, lambda s: ol.linalg.solve(s, s), lambda s: ol.linalg.matrix_power(s, -2)):
        with pytest.raises(ol.linalg.LinAlgError, match="[Ss]ingular"):
            f(s)
    not_pd = ol.asarray(-np.eye(3), device=device)
    with pytest.raises(ol.linalg.LinAlgError):
        ol.linalg.cholesky(not_pd)
    with pytest.raises(np.linalg.LinAlgError):  # numpy's class catches it too
        ol.linalg.cholesky(not_pd)
    assert np.allclose(host(ol.linalg.det(s), device), 0)  # singular is no error for det
    with pytest.raises(ol.linalg.LinAlgError, match="square"):
        ol.linalg.inv(ol.asarray(np.ones((3, 4)), device=device))
    with pytest.raises(ol.linalg.LinAlgError, match="two-dimensional"):
        ol.linalg.det(ol.asarray(np.ones(3), device=device))
    a = invertible(rng, (3, 3), "float64")  # and everything still works
    assert np.allclose(host(ol.linalg.inv(ol.asarray(a, device=device)), device), np.linalg.inv(a))
    assert np.allclose(host(ol.asarray(a, device=device) + 1, device), a + 1)


def test_type_errors(device, rng, la_path):
    a = invertible(rng, (3, 3), "float64")
    x = ol.asarray(a, device=device)
    for name in NAMES:
        f = getattr(ol.linalg, name)
        args = (a, a) if name in ("cross", "matmul", "outer", "solve", "tensordot", "vecdot") else \
               (a, 2) if name == "matrix_power" else (a,)
        with pytest.raises(TypeError, match="offload.asarray"):
            f(*args)
    ints = ol.asarray(np.eye(3, dtype=np.int64), device=device)
    for name in ("cholesky", "det", "eigh", "eigvalsh", "inv", "pinv", "qr", "slogdet", "svd",
                 "svdvals", "matrix_rank", "matrix_norm", "vector_norm"):
        with pytest.raises(TypeError, match="floating-point"):
            getattr(ol.linalg, name)(ints)
    with pytest.raises(TypeError, match="floating-point"):
        ol.linalg.solve(x, ints)
    with pytest.raises(TypeError):
        ol.linalg.inv(x, x)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ol.linalg.inv(x, upper=True)
    with pytest.raises(TypeError):
        ol.linalg.cross(ol.asarray(np.ones(3, bool), device=device), ol.asarray(np.ones(3, bool), device=device))


def test_bad_arguments(device, rng, la_path):
    x = ol.asarray(rand(rng, (4, 3), "float64"), device=device)
    with pytest.raises(ValueError):
        ol.linalg.qr(x, mode="r")
    with pytest.raises(ValueError):
        ol.linalg.qr(x, mode="bogus")
    for ord in ("bogus", 3, 0, "inf", None):
        with pytest.raises(ValueError):
            ol.linalg.matrix_norm(x, ord=ord)
    for ord in ("fro", "nuc", float("nan")):
        with pytest.raises(ValueError):
            ol.linalg.vector_norm(x, ord=ord)
    with pytest.raises(ValueError):
        ol.linalg.matrix_norm(x[0])
    with pytest.raises(np.exceptions.AxisError):
        ol.linalg.vector_norm(x, axis=2)
    sq = ol.asarray(invertible(rng, (3, 3), "float64"), device=device)
    with pytest.raises(ValueError):
        ol.linalg.solve(sq, x)  # 4 rows for 3 x 3


def test_two_devices(la_path):
    devs = ol.get_devices()
    if len(devs) < 2:
        pytest.skip("one device: no placement to get wrong")
    a = np.eye(3) * 2
    x, y = ol.asarray(a, device=devs[0]), ol.asarray(a, device=devs[1])
    with pytest.raises(ol.ExecutionPlacementError):
        ol.linalg.solve(x, y)
    with pytest.raises(ol.ExecutionPlacementError):
        ol.linalg.matrix_rank(x, rtol=ol.asarray([0.5], device=devs[1]))


def test_numpy_dispatch(device, rng):
    a = invertible(rng, (2, 4, 4), "float32")
    x = ol.asarray(a, device=device)
    got = np.linalg.inv(x)  # NumPy's function sends the call to offload.linalg.inv
    assert isinstance(got, ol.ndarray) and got.device == x.device
    np.testing.assert_allclose(ol.asnumpy(got), np.linalg.inv(a.astype("float64")), rtol=2e-4, atol=1e-5)
    assert np.linalg.eigh(x).eigenvalues.device == x.device


def test_empty_inputs(device, la_path):
    """Empty stacks and 0 x 0 matrices give NumPy's shapes, and norms of nothing are 0."""
    for shape in [(0, 3, 3), (2, 0, 0), (0, 0)]:
        a = np.ones(shape) + np.eye(shape[-1])
        x = ol.asarray(a, device=device)
        for name in ("inv", "det", "eigvalsh", "cholesky", "svdvals", "matrix_rank", "pinv"):
            want = getattr(np.linalg, name)(a)
            got = host(getattr(ol.linalg, name)(x), device, shape=np.shape(want))
            assert got.dtype == want.dtype and np.allclose(got, want), (name, shape)
        sign, logabs = ol.linalg.slogdet(x)
        assert np.allclose(host(sign, device), np.linalg.slogdet(a).sign)
        assert host(ol.linalg.solve(x, x), device).shape == shape
        assert host(ol.linalg.matrix_power(x, 3), device).shape == shape
        for ord in ("fro", "nuc", 1, 2, np.inf):
            want = np.linalg.matrix_norm(a, ord=ord)
            assert np.array_equal(host(ol.linalg.matrix_norm(x, ord=ord), device, shape=np.shape(want)), want)
    for shape, axis in (((0,), None), ((2, 0), -1), ((0, 3), 0), ((2, 0), 0)):
        want = np.linalg.vector_norm(np.zeros(shape), ord=np.inf, axis=axis)
        got = ol.linalg.vector_norm(ol.zeros(shape, device=device), ord=np.inf, axis=axis)
        assert np.array_equal(host(got, device, shape=np.shape(want)), want)
    with pytest.raises(ValueError):  # the smallest of nothing: NumPy's error too
        ol.linalg.matrix_norm(ol.zeros((0, 0), device=device), ord=-1)


def test_in_the_jupyter_kernel(kernel):
    """In a notebook: LinAlgError is the cell's error, and the kernel and module carry on."""
    from kernel_testlib import cell_error, cell_ok, stream_text

    kc = kernel.kc
    cell_ok(kc, "import offload as ol, numpy as np\nimport offload.linalg, offload.fft")
    ename, evalue, _ = cell_error(kc, "ol.linalg.inv(ol.zeros((2, 3, 3)))")
    assert ename == "LinAlgError" and "ingular" in evalue
    ename, _, _ = cell_error(kc, "ol.linalg.cholesky(ol.asarray(-np.eye(2)))")
    assert ename == "LinAlgError"
    msgs = cell_ok(kc, "print(round(float(ol.linalg.det(ol.asarray(np.eye(3) * 2))), 9), "
                       "ol.fft.fft(ol.ones(4, dtype=ol.complex64)).dtype)")
    assert stream_text(msgs).split() == ["8.0", "complex64"]
    kernel.assert_alive("after LinAlgError")
