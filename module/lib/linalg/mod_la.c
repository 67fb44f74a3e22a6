/* mod_la: offload.linalg, the array API 2024.12 linear algebra extension
 * (issue 23) -- a submodule that mod_la_add_module makes (called from
 * mod_lib_add_functions) -- and the host path mod_fft.c shares with it.
 *
 * Its functions are of three kinds:
 * - the main namespace's own function objects: matmul matrix_transpose
 *   tensordot vecdot;
 * - plain array work, compositions of the namespace's operations, so they run
 *   on every device: cross diagonal (a view) outer trace vector_norm
 *   matrix_power (repeated matmul) and matrix_norm ('fro', 1, -1, inf, -inf;
 *   2, -2 and 'nuc' are svdvals');
 * - LAPACK's, the table LAPACK below, one dispatcher for all: on CPU devices
 *   whose memory the host addresses (OpenCL CPU devices), numpy.linalg's own
 *   function on host copies of the operands and its results copied back to
 *   the device (mod_la_host_call: the copies are O(n^2) at memcpy speed, the
 *   work O(n^3)); on CUDA devices mod_vendor's cuSOLVER calls, or simple
 *   compositions of them (det from slogdet, eigvalsh from eigh, pinv and
 *   matrix_rank from svd); other devices get a NotImplementedError that says
 *   what serves these functions.
 * (mod_la_path's test switch runs those compositions on CPU devices too, with
 * NumPy standing in for mod_vendor: tests/test_linalg.py runs both paths.)
 * Singular or non-positive-definite input is offload.linalg.LinAlgError, a
 * numpy.linalg.LinAlgError, whichever path found it. Floating-point input is
 * required where the standard asks for it (TypeError otherwise), as
 * array-api-strict does: an integer array never becomes float64 behind the
 * user's back on a device that may lack it. */
#include "lib/linalg/mod_linalg.h"
#include "lib/elementwise/mod_elementwise.h"
#include "lib/reduce/mod_reduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mod_la_error is defined in mod_vendor.c, which raises it too: the lower file owns it */
static PyObject *namespace;       /* offload (borrowed: it outlives its functions) */
static PyObject *linalg;          /* offload.linalg (borrowed: offload holds it) */
static PyObject *np_linalg_error; /* numpy.linalg.LinAlgError, kept for the process */

/* NumPy 2's result types, kept for the process (the vendor path's are made of them too) */
enum { EIGH, QR, SLOGDET, SVD, NRESULTS };
static PyObject *result_types[NRESULTS];

/* offload.linalg.<name>(x), for the compositions that stand on another of its functions */
static PyObject *la_call(const char *name, PyObject *x) {
    PyObject *fn = PyObject_GetAttrString(linalg, name);
    PyObject *r = fn ? PyObject_CallOneArg(fn, x) : NULL;
    Py_XDECREF(fn);
    return r;
}

int mod_la_path(ofl_device *dev, const char *fn) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    if (in->backend == OFL_OPENCL && in->type == OFL_CPU) {
        const char *path = getenv("OFFLOAD_LA_PATH");
        return path && !strcmp(path, "vendor") ? MOD_LA_VENDOR : MOD_LA_HOST;
    }
    if (in->backend == OFL_CUDA) return MOD_LA_VENDOR;
    PyErr_Format(PyExc_NotImplementedError,
                 "offload.%s does not run on %s (%s): it runs on CPU devices (NumPy's LAPACK "
                 "and pocketfft on the host's copy) and on CUDA devices (cuSOLVER, cuFFT); "
                 "move the array there with x.to_device(...)",
                 fn, in->filter, in->name);
    return MOD_LA_NONE;
}

/* ---- the host path ---- */

/* The offload arrays among the host call's arguments, in the order
 * host_arg meets them (args, then kw's values): all on dev. -1 with an
 * exception. */
static int gather(PyObject *o, ofl_device *dev, const char *fn, mod_array **arrs, int *n) {
    if (!mod_array_check(o)) return 0;
    ofl_device *d = mod_array_device((mod_array *)o);
    if (d != dev) {
        PyErr_Format(mod_ExecutionPlacementError,
                     "offload.%s: arrays live on two devices, %s and %s; move one with "
                     ".to_device(...)",
                     fn, ofl_device_get_info(dev)->filter, ofl_device_get_info(d)->filter);
        return -1;
    }
    if (*n == MOD_MAP_MAX) {
        PyErr_Format(PyExc_SystemError, "offload.%s: more than %d arrays", fn, MOD_MAP_MAX);
        return -1;
    }
    arrs[(*n)++] = (mod_array *)o;
    return 0;
}

/* o for the host: the next mapped view where it is an offload array (new reference) */
static PyObject *host_arg(PyObject *o, PyObject **views, int *k) {
    return Py_NewRef(mod_array_check(o) ? views[(*k)++] : o);
}

static PyObject *to_device(PyObject *r, ofl_device *dev) {
    if (mod_is_numpy_array(r) || mod_is_numpy_scalar(r)) return mod_array_from_host(r, dev);
    if (!PyTuple_Check(r)) return Py_NewRef(r); /* a Python number, None */
    Py_ssize_t n = PyTuple_GET_SIZE(r);
    PyObject *items = PyTuple_New(n);
    for (Py_ssize_t i = 0; items && i < n; i++) {
        PyObject *item = to_device(PyTuple_GET_ITEM(r, i), dev);
        if (!item)
            Py_CLEAR(items);
        else
            PyTuple_SET_ITEM(items, i, item);
    }
    if (!items || PyTuple_CheckExact(r)) return items;
    PyObject *out = PyObject_Call((PyObject *)Py_TYPE(r), items, NULL); /* a named tuple */
    Py_DECREF(items);
    return out;
}

/* NumPy's LinAlgError (set) becomes offload's, with its message. */
static void linalg_error_is_ours(void) {
    if (!PyErr_ExceptionMatches(np_linalg_error) || PyErr_ExceptionMatches(mod_la_error)) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *msg = value ? PyObject_Str(value) : NULL;
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (msg) {
        PyErr_SetObject(mod_la_error, msg);
        Py_DECREF(msg);
    }
}

PyObject *mod_la_host_call(ofl_device *dev, const char *module, const char *name, PyObject *args,
                           PyObject *kw) {
    char fn[96];
    snprintf(fn, sizeof fn, "%s.%s", strchr(module, '.') ? strchr(module, '.') + 1 : module, name);
    PyObject *mod = PyImport_ImportModule(module);
    PyObject *f = mod ? PyObject_GetAttrString(mod, name) : NULL;
    Py_XDECREF(mod);
    /* the arrays read in place: mapped (the device's memory is the host's), not copied */
    Py_ssize_t n = PyTuple_GET_SIZE(args), pos = 0;
    mod_array *arrs[MOD_MAP_MAX];
    PyObject *views[MOD_MAP_MAX], *key, *value, *hargs = NULL, *hkw = NULL, *r = NULL, *out = NULL;
    mod_host_map maps[MOD_MAP_MAX];
    bool readonly[MOD_MAP_MAX] = {false};
    int narr = 0, k = 0, rc = f ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++)
        rc = gather(PyTuple_GET_ITEM(args, i), dev, fn, arrs, &narr);
    while (rc == 0 && kw && PyDict_Next(kw, &pos, &key, &value))
        rc = gather(value, dev, fn, arrs, &narr);
    if (rc < 0 || mod_arrays_map_host(arrs, readonly, narr, views, maps) < 0) {
        Py_XDECREF(f);
        return NULL;
    }
    hargs = PyTuple_New(n);
    for (Py_ssize_t i = 0; hargs && i < n; i++)
        PyTuple_SET_ITEM(hargs, i, host_arg(PyTuple_GET_ITEM(args, i), views, &k));
    if (!hargs) goto out;
    if (kw && PyDict_GET_SIZE(kw)) {
        if (!(hkw = PyDict_New())) goto out;
        for (pos = 0; PyDict_Next(kw, &pos, &key, &value);) {
            PyObject *h = host_arg(value, views, &k);
            int st = PyDict_SetItem(hkw, key, h);
            Py_DECREF(h);
            if (st < 0) goto out;
        }
    }
    r = PyObject_Call(f, hargs, hkw);
    if (!r)
        linalg_error_is_ours();
    else
        out = to_device(r, dev); /* copies: r may be a view of the mapped inputs */
out:
    Py_XDECREF(f);
    Py_XDECREF(hargs);
    Py_XDECREF(hkw);
    Py_XDECREF(r);
    for (int i = 0; i < narr; i++) { /* the views go first, then the mappings */
        Py_DECREF(views[i]);
        if (mod_array_unmap_host(&maps[i]) < 0) Py_CLEAR(out);
    }
    return out;
}

/* ---- small helpers ---- */

static PyObject *need_floating(const char *fn, const mod_array *a) {
    return PyErr_Format(PyExc_TypeError,
                        "offload.%s needs a floating-point array (float32, float64, complex64, "
                        "complex128), not %s: convert it with offload.astype",
                        fn, mod_dtype_name(a->dtype));
}

static PyObject *need_numeric(const char *fn, const mod_array *a) {
    return PyErr_Format(PyExc_TypeError, "offload.%s needs numeric arrays, not %s", fn,
                        mod_dtype_name(a->dtype));
}

/* NumPy's checks, in its words, so that both paths say the same: 0 or -1 */
static int need_matrices(const mod_array *a, bool square) {
    if (a->nd < 2)
        PyErr_Format(mod_la_error,
                     "%d-dimensional array given. Array must be at least two-dimensional", a->nd);
    else if (square && a->shape[a->nd - 1] != a->shape[a->nd - 2])
        PyErr_SetString(mod_la_error, "Last 2 dimensions of the array must be square");
    else
        return 0;
    return -1;
}

/* batch + tail as a new tuple of a's leading nd - drop dimensions and tail's */
static PyObject *shape_with(const mod_array *a, int drop, int ntail, const Py_ssize_t *tail) {
    Py_ssize_t s[MOD_MAXDIMS + 2];
    int nb = a->nd - drop;
    for (int i = 0; i < nb; i++) s[i] = a->shape[i];
    for (int i = 0; i < ntail; i++) s[nb + i] = tail[i];
    return mod_int_tuple(nb + ntail, s);
}

static PyObject *reshape(PyObject *x, PyObject *shape) { /* shape stolen */
    return shape ? mod_kit_call("reshape", Py_BuildValue("(ON)", x, shape), NULL) : NULL;
}

/* offload.matmul(x, y) (stacks broadcast), through the namespace: mod_matmul
 * calls down into this file's host path */
static PyObject *matmul(PyObject *x, PyObject *y) {
    return mod_kit_call("matmul", PyTuple_Pack(2, x, y), NULL);
}

/* kw[key] as a truth value, dflt when absent; -1 with an exception */
static int kw_flag(PyObject *kw, const char *key, bool dflt) {
    PyObject *v = kw ? PyDict_GetItemString(kw, key) : NULL; /* borrowed */
    return v ? PyObject_IsTrue(v) : dflt;
}

/* a tuple (stolen) as a named tuple of result_types[which] */
static PyObject *named(int which, PyObject *tuple) {
    if (!tuple) return NULL;
    PyObject *r = PyObject_Call(result_types[which], tuple, NULL);
    Py_DECREF(tuple);
    return r;
}

/* The machine epsilon of a's (real) dtype times max(M, N), the standard's default rtol */
static PyObject *default_rtol(const mod_array *a) {
    PyObject *fi = mod_kit_call("finfo", PyTuple_Pack(1, a->dtype), NULL);
    PyObject *eps = fi ? PyObject_GetAttrString(fi, "eps") : NULL;
    Py_XDECREF(fi);
    if (!eps) return NULL;
    Py_ssize_t m = a->shape[a->nd - 2], n = a->shape[a->nd - 1];
    double v = PyFloat_AsDouble(eps) * (double)(m > n ? m : n);
    Py_DECREF(eps);
    return v == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(v);
}

/* S.max(-1, keepdims) * rtol, rtol None, a number or an array of the batch shape */
static PyObject *cutoff(PyObject *s, const mod_array *a, PyObject *rtol) {
    PyObject *one = PyLong_FromLong(-1);
    PyObject *smax = one ? mod_reduce_named("max", s, one, NULL, true) : NULL;
    Py_XDECREF(one);
    PyObject *rt = rtol == Py_None         ? default_rtol(a)
                   : mod_array_check(rtol) ? mod_kit_call("expand_dims", PyTuple_Pack(1, rtol),
                                                          Py_BuildValue("{s:i}", "axis", -1))
                                           : Py_NewRef(rtol);
    PyObject *r = smax && rt ? PyNumber_Multiply(smax, rt) : NULL;
    Py_XDECREF(smax);
    Py_XDECREF(rt);
    return r;
}

/* ---- the vendor path's leaves ----
 * mod_vendor's on CUDA devices; on others (only under the test switch, see
 * mod_la_path) NumPy's with the same contract: C-contiguous results on the
 * device, tuples for several. */

static bool on_cuda(const mod_array *a) {
    return ofl_device_get_info(mod_array_device(a))->backend == OFL_CUDA;
}

/* <module>.<name>(*args, **kw) by mod_la_host_call; args and kw (or NULL) stolen */
static PyObject *stand_in(const char *module, const char *name, PyObject *args, PyObject *kw) {
    PyObject *r = NULL;
    if (args && !PyErr_Occurred())
        r = mod_la_host_call(mod_array_device((mod_array *)PyTuple_GET_ITEM(args, 0)), module, name,
                             args, kw);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

static PyObject *v_solve(mod_array *a, mod_array *b) {
    return on_cuda(a) ? mod_vendor_solve(a, b)
                      : stand_in("numpy.linalg", "solve", PyTuple_Pack(2, a, b), NULL);
}
static PyObject *v_inv(mod_array *a) {
    return on_cuda(a) ? mod_vendor_inv(a)
                      : stand_in("numpy.linalg", "inv", PyTuple_Pack(1, a), NULL);
}
static PyObject *v_slogdet(mod_array *a) {
    return on_cuda(a) ? mod_vendor_slogdet(a)
                      : stand_in("numpy.linalg", "slogdet", PyTuple_Pack(1, a), NULL);
}
static PyObject *v_cholesky(mod_array *a, bool upper) {
    return on_cuda(a) ? mod_vendor_cholesky(a, upper)
                      : stand_in("numpy.linalg", "cholesky", PyTuple_Pack(1, a),
                                 Py_BuildValue("{s:O}", "upper", mod_kit_bool(upper)));
}
static PyObject *v_eigh(mod_array *a, bool vectors) {
    return on_cuda(a)
               ? mod_vendor_eigh(a, vectors)
               : stand_in("numpy.linalg", vectors ? "eigh" : "eigvalsh", PyTuple_Pack(1, a), NULL);
}
static PyObject *v_svd(mod_array *a, bool full_matrices, bool uv) {
    if (on_cuda(a)) return mod_vendor_svd(a, full_matrices, uv);
    return uv ? stand_in("numpy.linalg", "svd", PyTuple_Pack(1, a),
                         Py_BuildValue("{s:O}", "full_matrices", mod_kit_bool(full_matrices)))
              : stand_in("numpy.linalg", "svdvals", PyTuple_Pack(1, a), NULL);
}
static PyObject *v_qr(mod_array *a, bool complete) {
    return on_cuda(a) ? mod_vendor_qr(a, complete)
                      : stand_in("numpy.linalg", "qr", PyTuple_Pack(1, a),
                                 Py_BuildValue("{s:s}", "mode", complete ? "complete" : "reduced"));
}

PyObject *mod_la_vendor_fft(mod_array *x, int rank, int kind, bool inverse, Py_ssize_t last_n) {
    if (on_cuda(x)) return mod_vendor_fft(x, rank, kind, inverse, last_n);
    Py_ssize_t axes[3], s[3];
    for (int i = 0; i < rank; i++) {
        axes[i] = x->nd - rank + i;
        s[i] = i == rank - 1 ? last_n : x->shape[axes[i]];
    }
    PyObject *ax = mod_int_tuple(rank, axes);
    if (!ax) return NULL;
    /* unnormalised both ways: an inverse's "forward" norm scales by 1 */
    if (kind == MOD_FFT_C2C)
        return stand_in(
            "numpy.fft", inverse ? "ifftn" : "fftn", PyTuple_Pack(1, x),
            Py_BuildValue("{s:N,s:s}", "axes", ax, "norm", inverse ? "forward" : "backward"));
    if (kind == MOD_FFT_R2C)
        return stand_in("numpy.fft", "rfftn", PyTuple_Pack(1, x),
                        Py_BuildValue("{s:N}", "axes", ax));
    return stand_in(
        "numpy.fft", "irfftn", PyTuple_Pack(1, x),
        Py_BuildValue("{s:N,s:N,s:s}", "axes", ax, "s", mod_int_tuple(rank, s), "norm", "forward"));
}

/* ---- LAPACK's functions: one dispatcher, a table ---- */

typedef struct la_fn la_fn;
struct la_fn {
    PyMethodDef def;   /* name, doc; the function is la_dispatch */
    int narrays;       /* positional-only array arguments */
    const char *kw[2]; /* its keyword-only arguments, NULL-terminated */
    bool square;
    /* the vendor path: a[] C-contiguous copies in the operands' common dtype */
    PyObject *(*vendor)(mod_array **a, PyObject *kw);
};

static PyObject *vendor_cholesky(mod_array **a, PyObject *kw) {
    int upper = kw_flag(kw, "upper", false);
    return upper < 0 ? NULL : v_cholesky(a[0], upper);
}

static PyObject *vendor_det(mod_array **a, PyObject *kw) {
    PyObject *sl = v_slogdet(a[0]);
    if (!sl) return NULL;
    PyObject *e = mod_kit_call("exp", PyTuple_Pack(1, PyTuple_GET_ITEM(sl, 1)), NULL);
    PyObject *r = e ? PyNumber_Multiply(PyTuple_GET_ITEM(sl, 0), e) : NULL;
    Py_XDECREF(e);
    Py_DECREF(sl);
    return r;
}

static PyObject *vendor_eigh(mod_array **a, PyObject *kw) {
    return named(EIGH, v_eigh(a[0], true));
}
static PyObject *vendor_eigvalsh(mod_array **a, PyObject *kw) { return v_eigh(a[0], false); }
static PyObject *vendor_inv(mod_array **a, PyObject *kw) { return v_inv(a[0]); }
static PyObject *vendor_slogdet(mod_array **a, PyObject *kw) {
    return named(SLOGDET, v_slogdet(a[0]));
}
static PyObject *vendor_svd(mod_array **a, PyObject *kw) {
    int full = kw_flag(kw, "full_matrices", true);
    return full < 0 ? NULL : named(SVD, v_svd(a[0], full, true));
}
static PyObject *vendor_svdvals(mod_array **a, PyObject *kw) { return v_svd(a[0], false, false); }

static PyObject *vendor_qr(mod_array **a, PyObject *kw) {
    PyObject *mode = kw ? PyDict_GetItemString(kw, "mode") : NULL; /* la_dispatch checked it */
    bool complete = mode && PyUnicode_CompareWithASCIIString(mode, "complete") == 0;
    return named(QR, v_qr(a[0], complete));
}

/* x1 (..., M, M), x2 (..., M, K) or (M,) (a vector only when 1-D, as the
 * standard and NumPy 2 say): both broadcast to one batch shape. */
static PyObject *vendor_solve(mod_array **a, PyObject *kw) {
    bool vector = a[1]->nd == 1;
    if (a[1]->nd == 0)
        return PyErr_Format(PyExc_ValueError, "linalg.solve: x2 is a 0-d array, not a vector or a "
                                              "stack of matrices");
    PyObject *b = vector ? mod_kit_call("expand_dims", PyTuple_Pack(1, (PyObject *)a[1]),
                                        Py_BuildValue("{s:i}", "axis", -1))
                         : Py_NewRef((PyObject *)a[1]);
    if (!b) return NULL;
    mod_array *bb = (mod_array *)b;
    Py_ssize_t m = a[0]->shape[a[0]->nd - 1];
    if (bb->shape[bb->nd - 2] != m) {
        Py_DECREF(b);
        return PyErr_Format(PyExc_ValueError,
                            "linalg.solve: x2 needs %zd rows (x1 is a stack of %zd x %zd "
                            "matrices), not %zd",
                            m, m, m, bb->shape[bb->nd - 2]);
    }
    PyObject *shapes = Py_BuildValue("(NN)", mod_int_tuple(a[0]->nd - 2, a[0]->shape),
                                     mod_int_tuple(bb->nd - 2, bb->shape));
    PyObject *batch = shapes ? mod_np_call("broadcast_shapes", shapes, NULL) : NULL;
    Py_XDECREF(shapes);
    PyObject *ops[2] = {(PyObject *)a[0], b}, *full[2] = {NULL, NULL}, *r = NULL;
    for (int i = 0; batch && i < 2; i++) {
        mod_array *o = (mod_array *)ops[i];
        PyObject *tail = mod_int_tuple(2, o->shape + o->nd - 2);
        PyObject *shape = tail ? PySequence_Concat(batch, tail) : NULL;
        Py_XDECREF(tail);
        PyObject *have = shape ? mod_int_tuple(o->nd, o->shape) : NULL;
        int same = have ? PyObject_RichCompareBool(have, shape, Py_EQ) : -1;
        Py_XDECREF(have);
        if (same == 1 && mod_array_is_c_contiguous(o)) {
            full[i] = Py_NewRef(ops[i]); /* no batch to broadcast: cuSOLVER's input already */
        } else {
            PyObject *v = same == 0
                              ? mod_kit_call("broadcast_to", PyTuple_Pack(2, ops[i], shape), NULL)
                              : NULL;
            full[i] = v ? mod_ops_copy((mod_array *)v, NULL) : NULL;
            Py_XDECREF(v);
        }
        Py_XDECREF(shape);
        if (!full[i]) goto out;
    }
    if (batch) r = v_solve((mod_array *)full[0], (mod_array *)full[1]);
    if (r && vector) {
        PyObject *key = Py_BuildValue("(Oi)", Py_Ellipsis, 0);
        Py_SETREF(r, key ? PyObject_GetItem(r, key) : NULL);
        Py_XDECREF(key);
    }
out:
    Py_XDECREF(batch);
    Py_XDECREF(full[0]);
    Py_XDECREF(full[1]);
    Py_DECREF(b);
    return r;
}

static PyObject *rtol_arg(PyObject *kw) {
    PyObject *v = kw ? PyDict_GetItemString(kw, "rtol") : NULL;
    return v ? v : Py_None; /* borrowed */
}

/* conj(Vh).mT @ (S⁺[..., None] * conj(U).mT), S⁺ the reciprocals of the
 * singular values above the cutoff, 0 for the others (NumPy's pinv) */
static PyObject *vendor_pinv(mod_array **a, PyObject *kw) {
    mod_array *x = a[0];
    Py_ssize_t m = x->shape[x->nd - 2], n = x->shape[x->nd - 1];
    if (m == 0 || n == 0) {
        Py_ssize_t nm[2] = {n, m};
        return mod_kit_call("zeros", Py_BuildValue("(N)", shape_with(x, 2, 2, nm)),
                            Py_BuildValue("{s:O,s:N}", "dtype", x->dtype, "device",
                                          mod_device_new(mod_array_device(x))));
    }
    PyObject *usv = v_svd(x, false, true);
    if (!usv) return NULL;
    PyObject *u = PyTuple_GET_ITEM(usv, 0), *s = PyTuple_GET_ITEM(usv, 1),
             *vh = PyTuple_GET_ITEM(usv, 2);
    PyObject *cut = cutoff(s, x, rtol_arg(kw));
    PyObject *large = cut ? PyObject_RichCompare(s, cut, Py_GT) : NULL;
    PyObject *rec = large ? mod_kit_call("reciprocal", PyTuple_Pack(1, s), NULL) : NULL;
    PyObject *zero = rec ? mod_kit_call("zeros_like", PyTuple_Pack(1, s), NULL) : NULL;
    PyObject *sp = zero ? mod_kit_call("where", PyTuple_Pack(3, large, rec, zero), NULL) : NULL;
    PyObject *spc =
        sp ? mod_kit_call("expand_dims", PyTuple_Pack(1, sp), Py_BuildValue("{s:i}", "axis", -1))
           : NULL;
    PyObject *uc = spc ? mod_kit_call("conj", PyTuple_Pack(1, u), NULL) : NULL;
    PyObject *uh = uc ? PyObject_GetAttrString(uc, "mT") : NULL;
    PyObject *right = uh ? PyNumber_Multiply(spc, uh) : NULL;
    PyObject *vc = right ? mod_kit_call("conj", PyTuple_Pack(1, vh), NULL) : NULL;
    PyObject *v = vc ? PyObject_GetAttrString(vc, "mT") : NULL;
    PyObject *r = v ? matmul(v, right) : NULL;
    PyObject *tmp[] = {cut, large, rec, zero, sp, spc, uc, uh, right, vc, v, usv};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) Py_XDECREF(tmp[i]);
    return r;
}

/* the number of singular values above the cutoff (NumPy's matrix_rank) */
static PyObject *vendor_matrix_rank(mod_array **a, PyObject *kw) {
    mod_array *x = a[0];
    if (x->shape[x->nd - 2] == 0 || x->shape[x->nd - 1] == 0)
        return mod_kit_call("zeros", Py_BuildValue("(N)", shape_with(x, 2, 0, NULL)),
                            Py_BuildValue("{s:s,s:N}", "dtype", "int64", "device",
                                          mod_device_new(mod_array_device(x))));
    PyObject *s = v_svd(x, false, false);
    PyObject *cut = s ? cutoff(s, x, rtol_arg(kw)) : NULL;
    PyObject *large = cut ? PyObject_RichCompare(s, cut, Py_GT) : NULL;
    PyObject *r = large ? mod_kit_call("count_nonzero", PyTuple_Pack(1, large),
                                       Py_BuildValue("{s:i}", "axis", -1))
                        : NULL;
    Py_XDECREF(s);
    Py_XDECREF(cut);
    Py_XDECREF(large);
    return r;
}

static PyObject *la_dispatch(PyObject *self, PyObject *args, PyObject *kw);
/* one row: the name (numpy.linalg's too), its signature, how many arrays it
 * takes, its keyword (or NULL), whether x is square, the docstring; its
 * vendor path is vendor_<name> */
#define LA(name, sig, narrays, kw, square, doc)                                                    \
    {                                                                                              \
        {#name, MOD_KWFUNC(la_dispatch), #name sig "\n--\n\n" doc}, narrays, {kw}, square,         \
            vendor_##name                                                                          \
    }

static la_fn LAPACK[] = {
    LA(cholesky, "(x, /, *, upper=False)", 1, "upper", true,
       "The Cholesky factor of each Hermitian positive-definite matrix of x: lower triangular L "
       "with x = L @ L^H, or upper U with x = U^H @ U."),
    LA(det, "(x, /)", 1, NULL, true, "The determinant of each square matrix of x."),
    LA(eigh, "(x, /)", 1, NULL, true,
       "EighResult(eigenvalues, eigenvectors) of each Hermitian matrix of x, the eigenvalues "
       "(real) ascending."),
    LA(eigvalsh, "(x, /)", 1, NULL, true,
       "The eigenvalues (real, ascending) of each Hermitian matrix of x."),
    LA(inv, "(x, /)", 1, NULL, true, "The inverse of each square matrix of x."),
    LA(pinv, "(x, /, *, rtol=None)", 1, "rtol", false,
       "The Moore-Penrose pseudo-inverse of each matrix of x: singular values at most rtol times "
       "the largest count as zero (rtol None: max(M, N) * eps)."),
    LA(qr, "(x, /, *, mode='reduced')", 1, "mode", false,
       "QRResult(Q, R) of each matrix of x; mode 'reduced' (Q is M x K) or 'complete' (M x M)."),
    LA(slogdet, "(x, /)", 1, NULL, true,
       "SlogdetResult(sign, logabsdet) of the determinant of each square matrix of x."),
    LA(solve, "(x1, x2, /)", 2, NULL, true,
       "The solution of x1 @ y = x2 for each square matrix of x1: x2 is (..., M, K), or a vector "
       "(M,) when 1-D; the batch dimensions broadcast."),
    LA(svd, "(x, /, *, full_matrices=True)", 1, "full_matrices", false,
       "SVDResult(U, S, Vh) of each matrix of x, S (real) descending."),
    LA(svdvals, "(x, /)", 1, NULL, false,
       "The singular values (real, descending) of each matrix of x."),
    LA(matrix_rank, "(x, /, *, rtol=None)", 1, "rtol", false,
       "The rank of each matrix of x: its singular values above rtol times the largest (rtol "
       "None: max(M, N) * eps)."),
};

/* numpy.linalg.<name>(*args, **kw), rtol=None unless given: the standard's
 * default, max(M, N) * eps, which NumPy's pinv takes only so (without: 1e-15) */
static PyObject *host_lapack(const la_fn *f, ofl_device *dev, PyObject *args, PyObject *kw) {
    bool rtol = f->kw[0] && !strcmp(f->kw[0], "rtol");
    PyObject *hkw = !rtol ? Py_XNewRef(kw) : kw ? PyDict_Copy(kw) : PyDict_New();
    if (rtol && (!hkw || (!PyDict_GetItemString(hkw, "rtol") &&
                          PyDict_SetItemString(hkw, "rtol", Py_None) < 0))) {
        Py_XDECREF(hkw);
        return NULL;
    }
    PyObject *r = mod_la_host_call(dev, "numpy.linalg", f->def.ml_name, args, hkw);
    Py_XDECREF(hkw);
    return r;
}

static PyObject *la_dispatch(PyObject *self, PyObject *args, PyObject *kw) {
    const la_fn *f = PyCapsule_GetPointer(self, "offload.linalg");
    if (!f) return NULL;
    char fn[64];
    snprintf(fn, sizeof fn, "linalg.%s", f->def.ml_name);
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs != f->narrays)
        return PyErr_Format(PyExc_TypeError, "%s() takes %d positional argument%s but %zd %s given",
                            f->def.ml_name, f->narrays, f->narrays > 1 ? "s" : "", nargs,
                            nargs == 1 ? "was" : "were");
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (kw && PyDict_Next(kw, &pos, &key, &value)) {
        bool known = false;
        for (int i = 0; i < 2 && f->kw[i]; i++)
            known |= PyUnicode_CompareWithASCIIString(key, f->kw[i]) == 0;
        if (!known)
            return PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%S'",
                                f->def.ml_name, key);
    }
    mod_array *a[2] = {NULL, NULL};
    for (int i = 0; i < f->narrays; i++) {
        if (!(a[i] = mod_kit_array_arg(PyTuple_GET_ITEM(args, i), fn))) return NULL;
        if (!mod_kit_is_inexact(a[i]->dtype)) return need_floating(fn, a[i]);
        if (mod_array_device(a[i]) != mod_array_device(a[0]))
            return PyErr_Format(mod_ExecutionPlacementError,
                                "offload.%s: arrays live on two devices, %s and %s; move one "
                                "with .to_device(...)",
                                fn, ofl_device_get_info(mod_array_device(a[0]))->filter,
                                ofl_device_get_info(mod_array_device(a[i]))->filter);
    }
    if (need_matrices(a[0], f->square) < 0) return NULL;
    PyObject *mode = kw ? PyDict_GetItemString(kw, "mode") : NULL; /* borrowed */
    if (mode && (!PyUnicode_Check(mode) || (PyUnicode_CompareWithASCIIString(mode, "reduced") &&
                                            PyUnicode_CompareWithASCIIString(mode, "complete"))))
        return PyErr_Format(PyExc_ValueError, "linalg.qr: mode is 'reduced' or 'complete', not %R",
                            mode);
    ofl_device *dev = mod_array_device(a[0]);
    switch (mod_la_path(dev, fn)) {
    case MOD_LA_HOST: return host_lapack(f, dev, args, kw);
    case MOD_LA_VENDOR: break;
    default: return NULL;
    }
    /* cuSOLVER's inputs: C-contiguous, one dtype */
    PyObject *dtype = f->narrays == 1
                          ? Py_NewRef(a[0]->dtype)
                          : mod_kit_call("result_type", PyTuple_Pack(2, a[0], a[1]), NULL);
    PyObject *c[2] = {NULL, NULL}, *r = NULL;
    for (int i = 0; dtype && i < f->narrays; i++) {
        bool ready = mod_array_is_c_contiguous(a[i]) &&
                     PyObject_RichCompareBool(a[i]->dtype, dtype, Py_EQ) == 1;
        c[i] = ready ? Py_NewRef((PyObject *)a[i]) : mod_ops_copy(a[i], dtype);
        if (!c[i]) goto out;
    }
    if (dtype) r = f->vendor((mod_array **)c, kw);
out:
    Py_XDECREF(dtype);
    Py_XDECREF(c[0]);
    Py_XDECREF(c[1]);
    return r;
}

/* ---- plain array work, on any device ---- */

/* cross(x1, x2, /, *, axis=-1): the operands broadcast, axis (of size 3)
 * counted in the broadcast shape, each component a product difference. */
static PyObject *f_cross(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "axis", NULL};
    PyObject *x1, *x2, *axis_o = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:cross", kwlist, &x1, &x2, &axis_o))
        return NULL;
    mod_array *a = mod_kit_array_arg(x1, "linalg.cross"),
              *b = a ? mod_kit_array_arg(x2, "linalg.cross") : NULL;
    if (!b) return NULL;
    if (mod_dtype_name(a->dtype)[0] == 'b' || mod_dtype_name(b->dtype)[0] == 'b')
        return need_numeric("linalg.cross", mod_dtype_name(a->dtype)[0] == 'b' ? a : b);
    int nmin = a->nd < b->nd ? a->nd : b->nd, axis = -1;
    if (axis_o && mod_kit_axis(axis_o, nmin, "linalg.cross", &axis) < 0) return NULL;
    if (axis_o) axis -= nmin; /* from the end: the broadcast shape's last nmin axes are both's */
    PyObject *pair = mod_kit_call("broadcast_arrays", PyTuple_Pack(2, x1, x2), NULL);
    if (!pair) return NULL;
    PyObject *ops[2], *comp[2][3] = {{NULL}}, *out[3] = {NULL}, *r = NULL;
    for (int w = 0; w < 2; w++) ops[w] = PySequence_GetItem(pair, w);
    Py_DECREF(pair);
    if (!ops[0] || !ops[1]) goto done;
    mod_array *p = (mod_array *)ops[0];
    int ax = p->nd + axis;
    if (p->shape[ax] != 3) {
        PyErr_Format(PyExc_ValueError,
                     "linalg.cross: x1 and x2 need size 3 along axis %d, not %zd and %zd", axis,
                     a->shape[a->nd + axis], b->shape[b->nd + axis]);
        goto done;
    }
    for (int w = 0; w < 2; w++) {
        PyObject *moved = mod_kit_call("moveaxis", Py_BuildValue("(Oii)", ops[w], ax, -1), NULL);
        for (int i = 0; moved && i < 3; i++) {
            PyObject *key = Py_BuildValue("(Oi)", Py_Ellipsis, i);
            comp[w][i] = key ? PyObject_GetItem(moved, key) : NULL;
            Py_XDECREF(key);
            if (!comp[w][i]) break;
        }
        Py_XDECREF(moved);
        if (!comp[w][2]) goto done;
    }
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3, k = (i + 2) % 3;
        PyObject *l = PyNumber_Multiply(comp[0][j], comp[1][k]);
        PyObject *rr = l ? PyNumber_Multiply(comp[0][k], comp[1][j]) : NULL;
        out[i] = rr ? PyNumber_Subtract(l, rr) : NULL;
        Py_XDECREF(l);
        Py_XDECREF(rr);
        if (!out[i]) goto done;
    }
    PyObject *list = Py_BuildValue("[OOO]", out[0], out[1], out[2]);
    r = list ? mod_kit_call("stack", PyTuple_Pack(1, list), Py_BuildValue("{s:i}", "axis", ax))
             : NULL;
    Py_XDECREF(list);
done:
    for (int w = 0; w < 2; w++) {
        Py_XDECREF(ops[w]);
        for (int i = 0; i < 3; i++) Py_XDECREF(comp[w][i]);
    }
    for (int i = 0; i < 3; i++) Py_XDECREF(out[i]);
    return r;
}

/* A view of the diagonals: one stride, the sum of the matrix's two. */
static PyObject *diagonal(mod_array *a, Py_ssize_t k) {
    int nd = a->nd;
    Py_ssize_t rows = a->shape[nd - 2], cols = a->shape[nd - 1];
    Py_ssize_t len = 0; /* an offset past the matrix (any size: no overflow) gives none */
    if (k >= 0 && k < cols) len = cols - k < rows ? cols - k : rows;
    if (k < 0 && k > -rows) len = rows + k < cols ? rows + k : cols;
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS], offset = a->offset;
    bool any = len > 0;
    for (int i = 0; i < nd - 2; i++) {
        shape[i] = a->shape[i];
        strides[i] = a->strides[i];
        any &= shape[i] > 0;
    }
    shape[nd - 2] = len;
    strides[nd - 2] = a->strides[nd - 2] + a->strides[nd - 1];
    if (any) offset += k >= 0 ? k * a->strides[nd - 1] : -k * a->strides[nd - 2];
    return mod_array_view(a, nd - 1, shape, strides, offset);
}

static PyObject *f_diagonal(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "offset", NULL};
    PyObject *x;
    Py_ssize_t k = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$n:diagonal", kwlist, &x, &k)) return NULL;
    mod_array *a = mod_kit_array_arg(x, "linalg.diagonal");
    if (!a) return NULL;
    if (a->nd < 2)
        return PyErr_Format(PyExc_ValueError,
                            "linalg.diagonal needs an array of two or more dimensions, not %d",
                            a->nd);
    return diagonal(a, k);
}

static PyObject *f_trace(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "offset", "dtype", NULL};
    PyObject *x, *dtype = Py_None;
    Py_ssize_t k = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$nO:trace", kwlist, &x, &k, &dtype)) return NULL;
    mod_array *a = mod_kit_array_arg(x, "linalg.trace");
    if (!a) return NULL;
    if (mod_dtype_name(a->dtype)[0] == 'b') return need_numeric("linalg.trace", a);
    if (a->nd < 2)
        return PyErr_Format(PyExc_ValueError,
                            "linalg.trace needs an array of two or more dimensions, not %d", a->nd);
    PyObject *d = diagonal(a, k), *axis = PyLong_FromLong(-1);
    PyObject *r =
        d && axis ? mod_reduce_named("sum", d, axis, dtype == Py_None ? NULL : dtype, false) : NULL;
    Py_XDECREF(d);
    Py_XDECREF(axis);
    return r;
}

static PyObject *f_outer(PyObject *self, PyObject *args) {
    PyObject *x1, *x2;
    if (!PyArg_ParseTuple(args, "OO:outer", &x1, &x2)) return NULL;
    mod_array *a = mod_kit_array_arg(x1, "linalg.outer"),
              *b = a ? mod_kit_array_arg(x2, "linalg.outer") : NULL;
    if (!b) return NULL;
    if (mod_dtype_name(a->dtype)[0] == 'b' || mod_dtype_name(b->dtype)[0] == 'b')
        return need_numeric("linalg.outer", mod_dtype_name(a->dtype)[0] == 'b' ? a : b);
    if (a->nd != 1 || b->nd != 1)
        return PyErr_Format(PyExc_ValueError,
                            "linalg.outer needs two 1-D arrays, not %d-D and %d-D", a->nd, b->nd);
    PyObject *col =
        mod_kit_call("expand_dims", PyTuple_Pack(1, x1), Py_BuildValue("{s:i}", "axis", -1));
    PyObject *r = col ? PyNumber_Multiply(col, x2) : NULL;
    Py_XDECREF(col);
    return r;
}

/* The largest or smallest of x (magnitudes, >= 0) over axis. The largest of
 * none is 0, as NumPy's norms say (the sum of none, of the right shape); the
 * smallest of none stays the reduction's ValueError, as there. */
static PyObject *extreme(PyObject *x, PyObject *axis, bool keepdims, bool largest) {
    mod_array *a = (mod_array *)x;
    Py_ssize_t size = 1;
    for (int d = 0; d < a->nd; d++) size *= a->shape[d];
    return mod_reduce_named(!largest ? "min" : size ? "max" : "sum", x, axis, NULL, keepdims);
}

/* sum(|x|**ord)**(1/ord), with NumPy's special orders: inf (max |x|), -inf
 * (min), 0 (the count of non-zeros), 1 (no power), 2 (sqrt of squares). */
static PyObject *vector_norm(PyObject *x, PyObject *axis, bool keepdims, double ord) {
    PyObject *ax = mod_kit_call("abs", PyTuple_Pack(1, x), NULL), *r = NULL;
    if (!ax) return NULL;
    PyObject *real = ((mod_array *)ax)->dtype; /* borrowed: ax holds it */
    if (isinf(ord)) {
        r = extreme(ax, axis, keepdims, ord > 0);
    } else if (ord == 0) {
        PyObject *zero = PyLong_FromLong(0);
        PyObject *nz = zero ? PyObject_RichCompare(x, zero, Py_NE) : NULL;
        r = nz ? mod_reduce_named("sum", nz, axis, real, keepdims) : NULL;
        Py_XDECREF(zero);
        Py_XDECREF(nz);
    } else if (ord == 1) {
        r = mod_reduce_named("sum", ax, axis, NULL, keepdims);
    } else {
        PyObject *p = ord == 2 ? PyNumber_Multiply(ax, ax)
                               : mod_kit_call("pow", Py_BuildValue("(Od)", ax, ord), NULL);
        PyObject *s = p ? mod_reduce_named("sum", p, axis, NULL, keepdims) : NULL;
        r = !s         ? NULL
            : ord == 2 ? mod_kit_call("sqrt", PyTuple_Pack(1, s), NULL)
                       : mod_kit_call("pow", Py_BuildValue("(Od)", s, 1.0 / ord), NULL);
        Py_XDECREF(p);
        Py_XDECREF(s);
    }
    Py_DECREF(ax);
    return r;
}

/* ord as a number; NumPy's ValueError for anything else */
static int norm_order(PyObject *o, const char *what, double *out) {
    if (!PyUnicode_Check(o) && PyNumber_Check(o)) {
        *out = PyFloat_AsDouble(o);
        if (!(*out == -1.0 && PyErr_Occurred()) && !isnan(*out)) return 0;
        PyErr_Clear();
    }
    PyErr_Format(PyExc_ValueError, "Invalid norm order %R for %s", o, what);
    return -1;
}

static PyObject *f_vector_norm(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "axis", "keepdims", "ord", NULL};
    PyObject *x, *axis = Py_None, *ord_o = NULL;
    int keepdims = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OpO:vector_norm", kwlist, &x, &axis, &keepdims,
                                     &ord_o))
        return NULL;
    mod_array *a = mod_kit_array_arg(x, "linalg.vector_norm");
    if (!a) return NULL;
    if (!mod_kit_is_inexact(a->dtype)) return need_floating("linalg.vector_norm", a);
    double ord = 2;
    if (ord_o && norm_order(ord_o, "vectors", &ord) < 0) return NULL;
    return vector_norm(x, axis, keepdims, ord);
}

static PyObject *f_matrix_norm(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "keepdims", "ord", NULL};
    PyObject *x, *ord_o = NULL;
    int keepdims = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$pO:matrix_norm", kwlist, &x, &keepdims, &ord_o))
        return NULL;
    mod_array *a = mod_kit_array_arg(x, "linalg.matrix_norm");
    if (!a) return NULL;
    if (!mod_kit_is_inexact(a->dtype)) return need_floating("linalg.matrix_norm", a);
    if (a->nd < 2)
        return PyErr_Format(PyExc_ValueError,
                            "linalg.matrix_norm needs an array of two or more dimensions, not %d",
                            a->nd);
    bool fro =
        !ord_o || (PyUnicode_Check(ord_o) && !PyUnicode_CompareWithASCIIString(ord_o, "fro"));
    bool nuc = ord_o && PyUnicode_Check(ord_o) && !PyUnicode_CompareWithASCIIString(ord_o, "nuc");
    double ord = 0;
    if (!fro && !nuc &&
        (norm_order(ord_o, "matrices", &ord) < 0 ||
         !(fabs(ord) == 1 || fabs(ord) == 2 || isinf(ord)))) {
        PyErr_Clear();
        return PyErr_Format(PyExc_ValueError, "Invalid norm order %R for matrices", ord_o);
    }
    PyObject *r = NULL, *last = PyLong_FromLong(-1);
    if (!last) return NULL;
    if (fro) {
        PyObject *both = Py_BuildValue("(ii)", -2, -1);
        r = both ? vector_norm(x, both, false, 2) : NULL;
        Py_XDECREF(both);
    } else if (nuc || fabs(ord) == 2) {
        PyObject *s = la_call("svdvals", x);
        r = !s    ? NULL
            : nuc ? mod_reduce_named("sum", s, last, NULL, false)
                  : extreme(s, last, false, ord > 0);
        Py_XDECREF(s);
    } else { /* 1: the largest column sum; inf: the largest row sum; negative: smallest */
        PyObject *ax = mod_kit_call("abs", PyTuple_Pack(1, x), NULL);
        PyObject *sumaxis = PyLong_FromLong(fabs(ord) == 1 ? -2 : -1);
        PyObject *s = ax && sumaxis ? mod_reduce_named("sum", ax, sumaxis, NULL, false) : NULL;
        r = s ? extreme(s, last, false, ord > 0) : NULL;
        Py_XDECREF(ax);
        Py_XDECREF(sumaxis);
        Py_XDECREF(s);
    }
    Py_DECREF(last);
    if (r && keepdims) {
        Py_ssize_t ones[2] = {1, 1};
        Py_SETREF(r, reshape(r, shape_with(a, 2, 2, ones)));
    }
    return r;
}

/* x**n by squaring with matmul; n < 0 inverts first (LinAlgError when singular) */
static PyObject *f_matrix_power(PyObject *self, PyObject *args) {
    PyObject *x, *n_o;
    if (!PyArg_ParseTuple(args, "OO:matrix_power", &x, &n_o)) return NULL;
    mod_array *a = mod_kit_array_arg(x, "linalg.matrix_power");
    if (!a) return NULL;
    if (!PyIndex_Check(n_o))
        return PyErr_Format(PyExc_TypeError,
                            "linalg.matrix_power: the exponent must be an "
                            "integer, not %.100s",
                            Py_TYPE(n_o)->tp_name);
    Py_ssize_t n = PyNumber_AsSsize_t(n_o, PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (!mod_kit_is_inexact(a->dtype)) return need_floating("linalg.matrix_power", a);
    if (need_matrices(a, true) < 0) return NULL;
    if (n == 0) {
        PyObject *eye = mod_kit_call("eye", Py_BuildValue("(n)", a->shape[a->nd - 1]),
                                     Py_BuildValue("{s:O,s:N}", "dtype", a->dtype, "device",
                                                   mod_device_new(mod_array_device(a))));
        PyObject *shape = eye ? mod_int_tuple(a->nd, a->shape) : NULL;
        PyObject *b =
            shape ? mod_kit_call("broadcast_to", Py_BuildValue("(ON)", eye, shape), NULL) : NULL;
        PyObject *r = b ? mod_ops_copy((mod_array *)b, NULL) : NULL;
        Py_XDECREF(eye);
        Py_XDECREF(b);
        return r;
    }
    PyObject *base = n < 0 ? la_call("inv", x) : mod_ops_copy(a, NULL), *r = NULL;
    if (n < 0) n = -n;
    if (n == PY_SSIZE_T_MIN) return PyErr_Format(PyExc_OverflowError, "matrix_power: n too large");
    while (base) {
        if (n & 1) {
            PyObject *p = r ? matmul(r, base) : Py_NewRef(base);
            Py_XSETREF(r, p);
            if (!r) break;
        }
        n >>= 1;
        if (!n) break;
        Py_SETREF(base, matmul(base, base));
    }
    if (!base) Py_CLEAR(r);
    Py_XDECREF(base);
    return r;
}

static PyMethodDef functions[] = {
    {"cross", MOD_KWFUNC(f_cross),
     "cross(x1, x2, /, *, axis=-1)\n--\n\n"
     "The cross product of the 3-element vectors along axis, x1 and x2 broadcast."},
    {"diagonal", MOD_KWFUNC(f_diagonal),
     "diagonal(x, /, *, offset=0)\n--\n\n"
     "A view of the diagonal of each matrix of x (offset > 0: above the main one)."},
    {"trace", MOD_KWFUNC(f_trace),
     "trace(x, /, *, offset=0, dtype=None)\n--\n\n"
     "The sum of the diagonal of each matrix of x, in dtype (None: sum's rule)."},
    {"outer", f_outer, METH_VARARGS,
     "outer(x1, x2, /)\n--\n\nThe outer product of two 1-D arrays."},
    {"vector_norm", MOD_KWFUNC(f_vector_norm),
     "vector_norm(x, /, *, axis=None, keepdims=False, ord=2)\n--\n\n"
     "The vector norm over axis (None: all elements): sum(|x|**ord)**(1/ord), inf and -inf "
     "the largest and smallest |x|, 0 the count of non-zeros."},
    {"matrix_norm", MOD_KWFUNC(f_matrix_norm),
     "matrix_norm(x, /, *, keepdims=False, ord='fro')\n--\n\n"
     "The norm of each matrix of x: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf (NumPy's)."},
    {"matrix_power", f_matrix_power, METH_VARARGS,
     "matrix_power(x, n, /)\n--\n\n"
     "Each square matrix of x to the integer power n (n < 0: of its inverse)."},
    {NULL},
};

/* NumPy's result type, or (before NumPy 2) a named tuple with its fields */
static PyObject *result_type(const char *name, const char *fields) {
    PyObject *mod = PyImport_ImportModule("numpy.linalg._linalg");
    PyObject *t = mod ? PyObject_GetAttrString(mod, name) : NULL;
    Py_XDECREF(mod);
    if (t) return t;
    PyErr_Clear();
    mod = PyImport_ImportModule("collections");
    t = mod ? PyObject_CallMethod(mod, "namedtuple", "ss", name, fields) : NULL;
    Py_XDECREF(mod);
    return t;
}

int mod_la_add_module(PyObject *module) {
    namespace = module;
    if (!mod_la_error) {
        PyObject *npl = PyImport_ImportModule("numpy.linalg");
        np_linalg_error = npl ? PyObject_GetAttrString(npl, "LinAlgError") : NULL;
        Py_XDECREF(npl);
        if (!np_linalg_error) return -1;
        mod_la_error = PyErr_NewExceptionWithDoc(
            "offload.linalg.LinAlgError",
            "A linear algebra function found its input singular or not positive-definite "
            "(a numpy.linalg.LinAlgError).",
            np_linalg_error, NULL);
        static const char *names[NRESULTS][2] = {{"EighResult", "eigenvalues eigenvectors"},
                                                 {"QRResult", "Q R"},
                                                 {"SlogdetResult", "sign logabsdet"},
                                                 {"SVDResult", "U S Vh"}};
        for (int i = 0; mod_la_error && i < NRESULTS; i++)
            if (!(result_types[i] = result_type(names[i][0], names[i][1]))) return -1;
        if (!mod_la_error) return -1;
    }
    PyObject *m = PyModule_New("offload.linalg");
    if (!m) return -1;
    linalg = m;
    PyObject *modname = PyUnicode_FromString("offload.linalg");
    int rc = modname && PyModule_AddFunctions(m, functions) == 0 &&
                     PyModule_AddObjectRef(m, "LinAlgError", mod_la_error) == 0
                 ? 0
                 : -1;
    for (size_t i = 0; rc == 0 && i < sizeof LAPACK / sizeof LAPACK[0]; i++) {
        PyObject *cap = PyCapsule_New(&LAPACK[i], "offload.linalg", NULL);
        PyObject *f = cap ? PyCFunction_NewEx(&LAPACK[i].def, cap, modname) : NULL;
        rc = f ? PyModule_AddObjectRef(m, LAPACK[i].def.ml_name, f) : -1;
        Py_XDECREF(cap);
        Py_XDECREF(f);
    }
    static const char *shared[] = {"matmul", "matrix_transpose", "tensordot", "vecdot"};
    for (size_t i = 0; rc == 0 && i < sizeof shared / sizeof shared[0]; i++) {
        PyObject *f = PyObject_GetAttrString(module, shared[i]);
        rc = f ? PyModule_AddObjectRef(m, shared[i], f) : -1;
        Py_XDECREF(f);
    }
    if (rc == 0) rc = mod_kit_add_submodule(module, "linalg", m);
    Py_XDECREF(modname);
    Py_DECREF(m);
    return rc;
}
