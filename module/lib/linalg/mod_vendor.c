/* mod_vendor: offload arrays on CUDA devices through cuBLAS, cuSOLVER and
 * cuFFT (offload/ofl_cuda_math.c) -- the row-major side of column-major
 * libraries. A C-contiguous (r x c) matrix is, read column-major, its
 * transpose; each entry below picks the reading that needs the fewest
 * transposing copies (a matmul none: C^T = B^T A^T), and says which.
 * LAPACK works in place, so inputs are copied first; the results are new
 * arrays. Only info codes are read back (a singular matrix must raise).
 *
 * Called by mod_matmul.c (matmul on CUDA devices), mod_la.c and mod_fft.c,
 * for arrays on a CUDA device, with the inputs the contract in mod_lib.h
 * describes. */
#include "lib/linalg/mod_linalg.h"
#include "lib/elementwise/mod_elementwise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- arrays as the libraries' matrices ---- */

static int math_type(const mod_array *a, ofl_math_type *t) {
    static const char *const names[] = {[OFL_MATH_F32] = "float32",
                                        [OFL_MATH_F64] = "float64",
                                        [OFL_MATH_C64] = "complex64",
                                        [OFL_MATH_C128] = "complex128"};
    const char *name = mod_dtype_name(a->dtype);
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, names[i])) return *t = (ofl_math_type)i, 0;
    PyErr_Format(PyExc_TypeError,
                 "the CUDA math libraries take float32, float64, complex64 or complex128 "
                 "arrays, not %s",
                 name);
    return -1;
}

static bool is_complex(ofl_math_type t) { return t == OFL_MATH_C64 || t == OFL_MATH_C128; }

/* The real dtype of a's parts (a's own when real), borrowed. */
static PyObject *real_dtype(const mod_array *a) {
    return mod_dtype_name(a->dtype)[0] == 'c' ? mod_dtype_find_borrowed('f', a->itemsize / 2)
                                              : a->dtype;
}

static bool need(ofl_math_lib lib) {
    const char *why = NULL;
    if (ofl_math_available(lib, &why)) return true;
    PyErr_SetString(PyExc_RuntimeError, why);
    return false;
}

bool mod_vendor_blas_ready(ofl_device *dev) {
    return ofl_device_get_info(dev)->backend == OFL_CUDA && ofl_math_available(OFL_CUBLAS, NULL);
}

static ofl_matrix mat(const mod_array *a, int64_t ld, int64_t stride) {
    return (ofl_matrix){mod_array_buffer(a), (size_t)a->offset, ld, stride};
}

/* The number of matrices in a stack (..., r, c). */
static int64_t stack_count(const mod_array *a) {
    int64_t n = 1;
    for (int d = 0; d < a->nd - 2; d++) n *= a->shape[d];
    return n;
}

/* A new C-contiguous array on a's device: a's batch dimensions, then the
 * last `core` of shape. */
static mod_array *new_stack(const mod_array *a, PyObject *dtype, int core, Py_ssize_t r,
                            Py_ssize_t c) {
    Py_ssize_t shape[MOD_MAXDIMS];
    int nb = a->nd - 2;
    memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)nb);
    shape[nb] = r;
    if (core == 2) shape[nb + 1] = c;
    return (mod_array *)mod_array_new_empty(mod_array_device(a), dtype, nb + core, shape);
}

/* A C-contiguous copy of a with its last two dimensions swapped: the
 * column-major reading of the copy is a itself. */
static mod_array *transposed_copy(mod_array *a) {
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    int nd = a->nd;
    memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)nd);
    memcpy(strides, a->strides, sizeof(Py_ssize_t) * (size_t)nd);
    shape[nd - 2] = a->shape[nd - 1], shape[nd - 1] = a->shape[nd - 2];
    strides[nd - 2] = a->strides[nd - 1], strides[nd - 1] = a->strides[nd - 2];
    PyObject *view = mod_array_view(a, nd, shape, strides, a->offset);
    PyObject *copy = view ? mod_ops_copy((mod_array *)view, NULL) : NULL;
    Py_XDECREF(view);
    return (mod_array *)copy;
}

static mod_array *plain_copy(mod_array *a) { return (mod_array *)mod_ops_copy(a, NULL); }

/* The first rows rows of each matrix of a C-contiguous stack, as a view. */
static mod_array *top_rows(mod_array *a, Py_ssize_t rows) {
    Py_ssize_t shape[MOD_MAXDIMS];
    memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->nd);
    shape[a->nd - 2] = rows;
    return (mod_array *)mod_array_view(a, a->nd, shape, a->strides, a->offset);
}

/* Device int32 scratch of count elements; NULL with an exception. */
static ofl_buffer *int_buffer(ofl_device *dev, int64_t count) {
    ofl_buffer *b = NULL;
    ofl_error err;
    if (ofl_alloc(dev, (size_t)(count ? count : 1) * sizeof(int), &b, &err)) mod_raise(&err);
    return b;
}

/* The info codes of a stack of count runs: the first nonzero one (with its
 * matrix in *which), 0 when all succeeded, -1 with an exception when the
 * read failed. A negative code is a wrong argument of ours: SystemError. */
static int first_failure(ofl_buffer *info, int64_t count, const char *routine, int64_t *which) {
    if (count == 0) return 0; /* nothing ran, nothing failed */
    int *codes = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(int));
    if (!codes) return PyErr_NoMemory(), -1;
    ofl_error err;
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS;
    rc = ofl_read(info, 0, codes, (size_t)count * sizeof(int), &err);
    Py_END_ALLOW_THREADS;
    if (rc) {
        PyMem_Free(codes);
        mod_raise(&err);
        return -1;
    }
    int code = 0;
    for (int64_t i = 0; i < count && !code; i++)
        if (codes[i]) code = codes[i], *which = i;
    PyMem_Free(codes);
    if (code < 0) {
        PyErr_Format(PyExc_SystemError, "cuSOLVER's %s refused argument %d", routine, -code);
        return -1;
    }
    return code;
}

/* offload.linalg.LinAlgError: made by mod_la_add_module, defined here, the
 * lower of the two files that raise it. */
PyObject *mod_la_error;

static PyObject *linalg_error(const char *what) {
    PyErr_SetString(mod_la_error, what);
    return NULL;
}

/* ofl_* status: 0, or -1 with the exception set. */
static int ran(int st, ofl_error *err) {
    if (st) mod_raise(err);
    return st ? -1 : 0;
}

/* ---- cuBLAS: matmul ---- */

/* How one operand (..., r, c) lies as a stack of column-major matrices:
 * trans when it is read as its transpose (row-major rows), the leading
 * dimension, and one stride between consecutive matrices (0: broadcast). */
typedef struct {
    bool trans;
    int64_t ld, stride;
} layout;

static bool layout_of(const mod_array *x, layout *l) {
    int nd = x->nd;
    Py_ssize_t isz = x->itemsize, r = x->shape[nd - 2], c = x->shape[nd - 1];
    Py_ssize_t sr = x->strides[nd - 2], sc = x->strides[nd - 1];
    if ((c == 1 || sc == isz) && (r == 1 || (sr > 0 && sr % isz == 0 && sr / isz >= c)))
        l->trans = true, l->ld = r == 1 ? (c > 1 ? c : 1) : sr / isz;
    else if ((r == 1 || sr == isz) && (c == 1 || (sc > 0 && sc % isz == 0 && sc / isz >= r)))
        l->trans = false, l->ld = c == 1 ? (r > 1 ? r : 1) : sc / isz;
    else
        return false;
    /* the batch dimensions must step through the stack by one stride */
    int64_t stride = 0, count = 1;
    bool known = false;
    for (int d = nd - 3; d >= 0; d--) {
        if (x->shape[d] == 1) continue;
        if (x->strides[d] < 0 || x->strides[d] % (isz * count)) return false;
        int64_t s = x->strides[d] / (isz * count);
        if (known && s != stride) return false;
        stride = s, known = true, count *= x->shape[d];
    }
    l->stride = stride;
    return true;
}

PyObject *mod_vendor_matmul(mod_array *a, mod_array *b) {
    ofl_math_type t;
    if (math_type(a, &t) < 0 || !need(OFL_CUBLAS)) return NULL;
    int nd = a->nd;
    Py_ssize_t m = a->shape[nd - 2], k = a->shape[nd - 1], n = b->shape[nd - 1];
    if (k == 0 || m == 0 || n == 0 || stack_count(a) == 0) { /* nothing to read: zeros */
        mod_array *c = new_stack(a, a->dtype, 2, m, n);
        static const char zero[16];
        if (c && mod_array_fill(c, zero) < 0) Py_CLEAR(c);
        return (PyObject *)c;
    }
    layout la, lb;
    mod_array *ac = NULL, *bc = NULL; /* copies where a layout does not fit */
    if (!layout_of(a, &la) && (!(ac = plain_copy(a)) || !layout_of(ac, &la))) goto fail;
    if (!layout_of(b, &lb) && (!(bc = plain_copy(b)) || !layout_of(bc, &lb))) goto fail;
    mod_array *c = new_stack(a, a->dtype, 2, m, n);
    if (!c) goto fail;
    /* c^T (n x m, column-major) = b^T a^T: b in the first place, a in the second */
    const char *tf32 = getenv("OFFLOAD_TF32");
    ofl_error err;
    int st;
    Py_BEGIN_ALLOW_THREADS;
    st = ofl_math_gemm(mod_array_device(c), t, !lb.trans, !la.trans, n, m, k,
                       mat(bc ? bc : b, lb.ld, lb.stride), mat(ac ? ac : a, la.ld, la.stride),
                       mat(c, n, (int64_t)m * n), stack_count(c), tf32 && !strcmp(tf32, "1"), &err);
    Py_END_ALLOW_THREADS;
    Py_XDECREF(ac);
    Py_XDECREF(bc);
    if (ran(st, &err) < 0) Py_CLEAR(c);
    return (PyObject *)c;
fail:
    Py_XDECREF(ac);
    Py_XDECREF(bc);
    return NULL;
}

/* ---- cuSOLVER ---- */

/* Everything one factorisation needs: the working copy, pivots, info. */
typedef struct {
    ofl_math_type t;
    ofl_device *dev;
    int64_t count;
    mod_array *w; /* the working copy, C-contiguous */
    ofl_buffer *piv, *info;
} job;

static int job_start(job *j, mod_array *a, bool transposed, bool pivots) {
    memset(j, 0, sizeof *j);
    if (math_type(a, &j->t) < 0 || !need(OFL_CUSOLVER)) return -1;
    j->dev = mod_array_device(a);
    /* an empty stack or empty matrices: the libraries do not run, no info to read */
    bool empty = a->shape[a->nd - 1] == 0 || a->shape[a->nd - 2] == 0;
    j->count = empty ? 0 : stack_count(a);
    j->w = transposed ? transposed_copy(a) : plain_copy(a);
    if (!j->w || !(j->info = int_buffer(j->dev, j->count))) return -1;
    if (pivots && !(j->piv = int_buffer(j->dev, j->count * a->shape[a->nd - 1]))) return -1;
    return 0;
}

static void job_end(job *j) {
    Py_XDECREF(j->w);
    ofl_free(j->piv);
    ofl_free(j->info);
}

/* LU of the copy of a (..., n, n): column-major it is a^T, whose LU solves
 * a x = b by getrs with trans. A singular matrix: LinAlgError. */
static int lu(job *j, mod_array *a, bool singular_raises) {
    if (job_start(j, a, false, true) < 0) return -1;
    int64_t n = a->shape[a->nd - 1], which = 0;
    ofl_error err;
    int st;
    Py_BEGIN_ALLOW_THREADS;
    st = ofl_math_getrf(j->dev, j->t, n, mat(j->w, n, n * n), j->piv, j->info, j->count, &err);
    Py_END_ALLOW_THREADS;
    if (ran(st, &err) < 0) return -1;
    if (!singular_raises) return 0;
    int code = first_failure(j->info, j->count, "getrf", &which);
    if (code > 0) linalg_error("Singular matrix");
    return code ? -1 : 0;
}

/* x = a^-1 b for the LU in j, b (..., n, k) */
static PyObject *lu_solve(job *j, mod_array *b) {
    int64_t n = b->shape[b->nd - 2], k = b->shape[b->nd - 1];
    mod_array *x = transposed_copy(b); /* column-major: b itself, overwritten by x */
    if (!x) return NULL;
    ofl_error err;
    int st;
    Py_BEGIN_ALLOW_THREADS;
    st = ofl_math_getrs(j->dev, j->t, true, n, k, mat(j->w, n, n * n), j->piv, mat(x, n, n * k),
                        j->info, j->count, &err);
    Py_END_ALLOW_THREADS;
    PyObject *r = ran(st, &err) < 0 ? NULL : (PyObject *)transposed_copy(x);
    Py_DECREF(x);
    return r;
}

PyObject *mod_vendor_solve(mod_array *a, mod_array *b) {
    job j;
    PyObject *r = lu(&j, a, true) < 0 ? NULL : lu_solve(&j, b);
    job_end(&j);
    return r;
}

PyObject *mod_vendor_inv(mod_array *a) {
    job j;
    PyObject *r = NULL;
    if (lu(&j, a, true) == 0) {
        Py_ssize_t n = a->shape[a->nd - 1];
        PyObject *device = PyObject_GetAttrString((PyObject *)a, "device");
        PyObject *kw =
            device ? Py_BuildValue("{s:O,s:N}", "dtype", a->dtype, "device", device) : NULL;
        mod_array *eye = (mod_array *)mod_kit_call("eye", Py_BuildValue("(n)", n), kw);
        if (eye) {
            /* one identity per matrix: a view that repeats it over a's batch */
            Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS] = {0};
            memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->nd);
            strides[a->nd - 2] = eye->strides[0], strides[a->nd - 1] = eye->strides[1];
            mod_array *b = (mod_array *)mod_array_view(eye, a->nd, shape, strides, eye->offset);
            r = b ? lu_solve(&j, b) : NULL;
            Py_XDECREF(b);
            Py_DECREF(eye);
        }
    }
    job_end(&j);
    return r;
}

/* A new NumPy array of shape and dtype (by name). */
static PyObject *np_empty(PyObject *shape, const char *dtype) {
    PyObject *args = Py_BuildValue("(Os)", shape, dtype);
    PyObject *r = args ? mod_np_call("empty", args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

/* host (a NumPy array) as dtype, on dev. */
static PyObject *to_device_as(PyObject *host, PyObject *dtype, ofl_device *dev) {
    PyObject *args = PyTuple_Pack(1, dtype);
    PyObject *cast = args ? mod_call_method(host, "astype", args, NULL) : NULL;
    PyObject *r = cast ? mod_array_from_host(cast, dev) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(cast);
    return r;
}

/* Element e of a diagonal read back: float32/float64 parts, complex or not. */
static void diag_elem(const void *d, ofl_math_type t, Py_ssize_t e, double *re, double *im) {
    bool cx = is_complex(t);
    Py_ssize_t i = cx ? 2 * e : e;
    if (t == OFL_MATH_F32 || t == OFL_MATH_C64)
        *re = ((const float *)d)[i], *im = cx ? ((const float *)d)[i + 1] : 0;
    else
        *re = ((const double *)d)[i], *im = cx ? ((const double *)d)[i + 1] : 0;
}

/* sign and log|det| of matrix i from the LU's diagonal d and pivots piv
 * (1-based, LAPACK's): a row swap flips the sign. A zero on the diagonal:
 * sign 0, log|det| -inf, as NumPy. */
static void lu_slogdet(const void *d, const int *piv, ofl_math_type t, Py_ssize_t n, int64_t i,
                       double *sign, double *logdet) {
    double sr = 1, si = 0, acc = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        double re, im;
        diag_elem(d, t, i * n + q, &re, &im);
        double mag = hypot(re, im);
        if (mag == 0) {
            sign[0] = sign[1] = 0, *logdet = -INFINITY;
            return;
        }
        if (piv[i * n + q] != q + 1) sr = -sr, si = -si;
        double ur = re / mag, ui = im / mag, nr = sr * ur - si * ui;
        si = sr * ui + si * ur, sr = nr;
        acc += log(mag);
    }
    sign[0] = sr, sign[1] = si, *logdet = acc;
}

/* From the LU's diagonal and pivots, on the host: two small reads. */
PyObject *mod_vendor_slogdet(mod_array *a) {
    job j;
    PyObject *r = NULL, *diag = NULL, *d_host = NULL, *bshape = NULL, *s_np = NULL, *l_np = NULL;
    PyObject *sign = NULL, *logdet = NULL;
    int *piv = NULL;
    if (lu(&j, a, false) < 0) goto done;
    int nd = a->nd, nb = nd - 2;
    Py_ssize_t n = a->shape[nd - 1], shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    memcpy(shape, j.w->shape, sizeof(Py_ssize_t) * (size_t)nb);
    memcpy(strides, j.w->strides, sizeof(Py_ssize_t) * (size_t)nb);
    shape[nb] = n, strides[nb] = (n + 1) * a->itemsize;
    PyObject *view = mod_array_view(j.w, nb + 1, shape, strides, j.w->offset);
    diag = view ? mod_ops_copy((mod_array *)view, NULL) : NULL;
    Py_XDECREF(view);
    if (!diag || !(d_host = mod_array_asnumpy((mod_array *)diag))) goto done;
    size_t npiv = (size_t)(j.count * n);
    if (!(piv = PyMem_Malloc((npiv ? npiv : 1) * sizeof(int)))) {
        PyErr_NoMemory();
        goto done;
    }
    ofl_error err;
    if (npiv && ofl_read(j.piv, 0, piv, npiv * sizeof(int), &err)) {
        mod_raise(&err);
        goto done;
    }
    bool cx = is_complex(j.t);
    if (!(bshape = mod_int_tuple(nb, a->shape)) ||
        !(s_np = np_empty(bshape, cx ? "complex128" : "float64")) ||
        !(l_np = np_empty(bshape, "float64")))
        goto done;
    Py_buffer db, sb, lb;
    if (mod_np_buffer(d_host, &db, false) < 0) goto done;
    if (mod_np_buffer(s_np, &sb, true) < 0) {
        PyBuffer_Release(&db);
        goto done;
    }
    if (mod_np_buffer(l_np, &lb, true) < 0) {
        PyBuffer_Release(&db), PyBuffer_Release(&sb);
        goto done;
    }
    for (int64_t i = 0; i < stack_count(a); i++) { /* 0 x 0 matrices too: sign 1, log 0 */
        double sg[2];
        lu_slogdet(db.buf, piv, j.t, n, i, sg, (double *)lb.buf + i);
        ((double *)sb.buf)[cx ? 2 * i : i] = sg[0];
        if (cx) ((double *)sb.buf)[2 * i + 1] = sg[1];
    }
    PyBuffer_Release(&db), PyBuffer_Release(&sb), PyBuffer_Release(&lb);
    if ((sign = to_device_as(s_np, a->dtype, j.dev)) &&
        (logdet = to_device_as(l_np, real_dtype(a), j.dev)))
        r = PyTuple_Pack(2, sign, logdet);
done:
    PyMem_Free(piv);
    Py_XDECREF(diag);
    Py_XDECREF(d_host);
    Py_XDECREF(bshape);
    Py_XDECREF(s_np);
    Py_XDECREF(l_np);
    Py_XDECREF(sign);
    Py_XDECREF(logdet);
    job_end(&j);
    return r;
}

/* Column-major, the copy holds conj(a) = a^T (a Hermitian): potrf with the
 * opposite triangle gives the row-major factor of the asked one, whose other
 * triangle still holds the input (zeroed by tril/triu). */
PyObject *mod_vendor_cholesky(mod_array *a, bool upper) {
    job j;
    PyObject *r = NULL;
    if (job_start(&j, a, false, false) == 0) {
        int64_t n = a->shape[a->nd - 1], which = 0;
        ofl_error err;
        int st;
        Py_BEGIN_ALLOW_THREADS;
        st = ofl_math_potrf(j.dev, j.t, !upper, n, mat(j.w, n, n * n), j.info, j.count, &err);
        Py_END_ALLOW_THREADS;
        int code = ran(st, &err) < 0 ? -1 : first_failure(j.info, j.count, "potrf", &which);
        if (code > 0) linalg_error("Matrix is not positive definite");
        if (code == 0) r = mod_kit_call(upper ? "triu" : "tril", Py_BuildValue("(O)", j.w), NULL);
    }
    job_end(&j);
    return r;
}

/* The transposed copy holds a column-major; NumPy reads the lower triangle. */
PyObject *mod_vendor_eigh(mod_array *a, bool vectors) {
    job j;
    PyObject *r = NULL;
    if (job_start(&j, a, true, false) == 0) {
        int64_t n = a->shape[a->nd - 1], which = 0;
        mod_array *w = new_stack(a, real_dtype(a), 1, n, 0);
        ofl_error err;
        int st = -1;
        if (w) {
            Py_BEGIN_ALLOW_THREADS;
            st = ofl_math_syevd(j.dev, j.t, vectors, false, n, mat(j.w, n, n * n), mat(w, n, n),
                                j.info, j.count, &err);
            Py_END_ALLOW_THREADS;
        }
        int code = !w || ran(st, &err) < 0 ? -1 : first_failure(j.info, j.count, "syevd", &which);
        if (code > 0) linalg_error("Eigenvalues did not converge");
        if (code == 0) {
            /* the eigenvectors are the columns of the column-major result */
            PyObject *v = vectors ? (PyObject *)transposed_copy(j.w) : NULL;
            r = !vectors ? Py_NewRef(w) : v ? PyTuple_Pack(2, w, v) : NULL;
            Py_XDECREF(v);
        }
        Py_XDECREF(w);
    }
    job_end(&j);
    return r;
}

/* cuSOLVER's gesvd takes rows >= columns. A wide or square a (m <= n) is
 * read column-major as a^T (n x m) = U' S V'^H, so a = conj(V') S U'^T: the
 * row-major readings of V'^H and U' are a's U and Vh as they lie. A tall a
 * is copied transposed (column-major: a itself) and its factors read back
 * transposed. */
PyObject *mod_vendor_svd(mod_array *a, bool full_matrices, bool uv) {
    int nd = a->nd;
    Py_ssize_t m = a->shape[nd - 2], n = a->shape[nd - 1];
    bool wide = m <= n;
    Py_ssize_t rows = wide ? n : m, cols = wide ? m : n; /* the column-major problem */
    job j;
    PyObject *r = NULL;
    mod_array *s = NULL, *u = NULL, *vt = NULL;
    if (job_start(&j, a, !wide, false) < 0) goto done;
    Py_ssize_t ucols = full_matrices ? rows : cols;
    if (!(s = new_stack(a, real_dtype(a), 1, cols, 0))) goto done;
    /* u: rows x ucols column-major (row-major shape ucols x rows); vt: cols x cols */
    if (uv && (!(u = new_stack(a, a->dtype, 2, ucols, rows)) ||
               !(vt = new_stack(a, a->dtype, 2, cols, cols))))
        goto done;
    ofl_matrix none = {0};
    ofl_error err;
    int st;
    int64_t which = 0;
    Py_BEGIN_ALLOW_THREADS;
    st = ofl_math_gesvd(j.dev, j.t, uv, full_matrices, rows, cols, mat(j.w, rows, rows * cols),
                        mat(s, cols, cols), uv ? mat(u, rows, rows * ucols) : none,
                        uv ? mat(vt, cols, cols * cols) : none, j.info, j.count, &err);
    Py_END_ALLOW_THREADS;
    int code = ran(st, &err) < 0 ? -1 : first_failure(j.info, j.count, "gesvd", &which);
    if (code > 0) linalg_error("SVD did not converge");
    if (code) goto done;
    if (!uv) {
        r = Py_NewRef(s);
    } else if (wide) {
        r = PyTuple_Pack(3, vt, s, u);
    } else {
        mod_array *ut = transposed_copy(u), *vh = ut ? transposed_copy(vt) : NULL;
        if (vh) r = PyTuple_Pack(3, ut, s, vh);
        Py_XDECREF(ut);
        Py_XDECREF(vh);
    }
done:
    Py_XDECREF(s);
    Py_XDECREF(u);
    Py_XDECREF(vt);
    job_end(&j);
    return r;
}

/* geqrf on the transposed copy (column-major: a); R is the upper triangle
 * of its top rows read back transposed, Q orgqr's columns read back
 * transposed. A complete Q of a tall a needs m columns: orgqr then runs on
 * an m x m copy whose first n columns are the reflectors. */
PyObject *mod_vendor_qr(mod_array *a, bool complete) {
    int nd = a->nd;
    Py_ssize_t m = a->shape[nd - 2], n = a->shape[nd - 1], k = m < n ? m : n;
    Py_ssize_t qcols = complete ? m : k;
    job j;
    PyObject *r = NULL, *rr = NULL;
    mod_array *tau = NULL, *f = NULL, *top = NULL, *q = NULL, *qv = NULL, *qt = NULL;
    if (job_start(&j, a, true, false) < 0) goto done;
    if (!(tau = new_stack(a, a->dtype, 1, k, 0))) goto done;
    ofl_error err;
    int st;
    int64_t which = 0;
    Py_BEGIN_ALLOW_THREADS;
    st =
        ofl_math_geqrf(j.dev, j.t, m, n, mat(j.w, m, m * n), mat(tau, k, k), j.info, j.count, &err);
    Py_END_ALLOW_THREADS;
    if (ran(st, &err) < 0 || first_failure(j.info, j.count, "geqrf", &which)) goto done;
    if (!(f = transposed_copy(j.w)) || !(top = top_rows(f, complete ? m : k)) ||
        !(rr = mod_kit_call("triu", Py_BuildValue("(O)", top), NULL)))
        goto done;
    if (qcols <= n) {
        q = (mod_array *)Py_NewRef(j.w);
    } else {
        mod_array *dst;
        if (!(q = new_stack(a, a->dtype, 2, m, m)) || !(dst = top_rows(q, n))) goto done;
        int rc = mod_ops_copy_into(dst, (PyObject *)j.w);
        Py_DECREF(dst);
        if (rc < 0) goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    st = ofl_math_orgqr(j.dev, j.t, m, qcols, k, mat(q, m, (int64_t)m * q->shape[nd - 2]),
                        mat(tau, k, k), j.info, j.count, &err);
    Py_END_ALLOW_THREADS;
    if (ran(st, &err) < 0 || first_failure(j.info, j.count, "orgqr", &which)) goto done;
    if ((qv = top_rows(q, qcols)) && (qt = transposed_copy(qv))) r = PyTuple_Pack(2, qt, rr);
done:
    Py_XDECREF(rr);
    Py_XDECREF(tau);
    Py_XDECREF(f);
    Py_XDECREF(top);
    Py_XDECREF(q);
    Py_XDECREF(qv);
    Py_XDECREF(qt);
    job_end(&j);
    return r;
}

/* ---- cuFFT ---- */

PyObject *mod_vendor_fft(mod_array *x, int rank, int kind, bool inverse, Py_ssize_t last_n) {
    ofl_math_type t;
    if (math_type(x, &t) < 0 || !need(OFL_CUFFT)) return NULL;
    if ((kind == MOD_FFT_R2C) == is_complex(t))
        return PyErr_Format(PyExc_TypeError, "fft: a %s input for this transform",
                            mod_dtype_name(x->dtype));
    int nd = x->nd;
    if (rank < 1 || rank > 3 || rank > nd)
        return PyErr_Format(PyExc_ValueError, "fft: %d transformed dimensions of a %d-d array",
                            rank, nd);
    /* C2R consumes its input; any other reads a C-contiguous one in place */
    mod_array *in = kind == MOD_FFT_C2R || !mod_array_is_c_contiguous(x)
                        ? plain_copy(x)
                        : (mod_array *)Py_NewRef(x);
    if (!in) return NULL;
    Py_ssize_t shape[MOD_MAXDIMS];
    memcpy(shape, x->shape, sizeof(Py_ssize_t) * (size_t)nd);
    int64_t n[3], batch = 1;
    for (int d = 0; d < nd - rank; d++) batch *= x->shape[d];
    for (int i = 0; i < rank; i++) n[i] = x->shape[nd - rank + i];
    PyObject *dtype = x->dtype;
    if (kind == MOD_FFT_R2C) {
        shape[nd - 1] = x->shape[nd - 1] / 2 + 1;
        dtype = mod_dtype_find_borrowed('c', x->itemsize * 2);
    } else if (kind == MOD_FFT_C2R) {
        shape[nd - 1] = n[rank - 1] = last_n;
        dtype = real_dtype(x);
    }
    mod_array *out = (mod_array *)mod_array_new_empty(mod_array_device(x), dtype, nd, shape);
    if (out) {
        ofl_error err;
        int st;
        Py_BEGIN_ALLOW_THREADS;
        st = ofl_math_fft(mod_array_device(x), (ofl_fft_kind)kind, t, inverse, rank, n, batch,
                          mod_array_buffer(in), (size_t)in->offset, mod_array_buffer(out),
                          (size_t)out->offset, &err);
        Py_END_ALLOW_THREADS;
        if (ran(st, &err) < 0) Py_CLEAR(out);
    }
    Py_DECREF(in);
    return (PyObject *)out;
}
