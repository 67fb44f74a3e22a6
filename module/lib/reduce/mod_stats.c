/* mod_stats: the array API's statistical and utility functions that are not
 * plain reductions -- offload.var std cumulative_sum cumulative_prod cumsum
 * cumprod diff, and the ndarray methods var std cumsum cumprod -- with NumPy
 * 2's arguments, result dtypes and errors. (any, all and count_nonzero are
 * reductions: mod_reduce.c.) Added by mod_lib_add_functions.
 *
 * var and std are two passes of existing kernels: the mean (mod_reduce),
 * then the sum of squared deviations from it (element-wise ops, then a sum
 * that accumulates in float64), as NumPy's _var computes them -- so a
 * float32 variance is as accurate as NumPy's, never a one-pass E[x^2] -
 * E[x]^2.
 *
 * The scans (cumulative_*) are the kernels of module/kernels/scan.py, which
 * this file plans and launches; they take the operation, the accumulator's
 * dtype and the form's constants as compile-time arguments. The input is read C-
 * contiguous (a strided one is copied first) as M rows of K elements, the
 * scanned axis's, `inner` elements apart: row m starts at
 * (m // inner) * K * inner + m % inner. The result, a new C-contiguous
 * array, is the same with K + include_initial. Two forms:
 * - runs: each work-item scans a run of one row sequentially; when there are
 *   fewer rows than the device wants work-items, a row is split into S runs
 *   whose totals are scanned (one work-item per row) and added to the runs
 *   after the first (3 launches). Neighbouring work-items take neighbouring
 *   rows, so for inner > 1 their loads are neighbours. A CPU device always
 *   takes this form: its runtimes run a work-group's barrier tree one
 *   work-item at a time (see mod_reduce.c's CPU form).
 * - blocks (a GPU with few long rows): reduce, then scan. Enough groups to
 *   fill the device each own a span of whole tiles of a row; when a row has
 *   several spans, a first launch leaves each span's total, and the second
 *   scans each span tile by tile (L * kper elements in local memory: a
 *   sequential run per work-item, a tree over the runs' totals), starting
 *   from the sum of the totals before it and carrying the tile's total to
 *   the next. So the data is read twice and written once, in two launches
 *   (one for a single span), with no division per element. An exclusive
 *   form scans in place: mod_stats_exclusive_scan, the sort's and unique's
 *   scans on GPUs.
 * Sums and products accumulate in the result's dtype, as NumPy's
 * add.accumulate does (its cumsum is sequential; the runs and blocks only
 * regroup the float additions). OFFLOAD_SCAN_FORM=runs|blocks forces a form
 * (tests run the GPU's form on a CPU device with it). */
#include "lib/reduce/mod_reduce.h"
#include "lib/elementwise/mod_elementwise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arguments ---- */

static PyObject *offload_call(const char *name, PyObject *arg) {
    PyObject *mod = PyImport_ImportModule("offload");
    PyObject *r = mod ? PyObject_CallMethod(mod, name, "O", arg) : NULL;
    Py_XDECREF(mod);
    return r;
}

/* The other array of a binary operation must live on x's device. */
static int same_device(mod_array *x, PyObject *o) {
    if (!mod_array_check(o) || mod_array_device((mod_array *)o) == mod_array_device(x)) return 0;
    PyObject *d1 = mod_device_new(mod_array_device(x));
    PyObject *d2 = d1 ? mod_device_new(mod_array_device((mod_array *)o)) : NULL;
    if (d2)
        PyErr_Format(mod_ExecutionPlacementError,
                     "arrays on different devices: %R and %R (move one with .to_device())", d1, d2);
    Py_XDECREF(d1);
    Py_XDECREF(d2);
    return -1;
}

/* ---- var, std ---- */

/* NumPy's var/std: var(a, axis=None, dtype=None, out=None, ddof=0,
 * keepdims=False, *, correction=0) -- the array API's correction= and
 * NumPy's ddof= spellings of the same number. */
static PyObject *var_or_std(bool std, PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "axis", "dtype", "out", "ddof", "keepdims", "correction", NULL};
    const char *fn = std ? "std" : "var";
    PyObject *xo = self, *axis = Py_None, *dtype = Py_None, *out = Py_None, *ddof = NULL,
             *corr = NULL;
    int keepdims = 0;
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%s|OOOOp$O:%s", self ? "" : "O", fn);
    if (!(self ? PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist + 1, &axis, &dtype, &out, &ddof,
                                             &keepdims, &corr)
               : PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &xo, &axis, &dtype, &out, &ddof,
                                             &keepdims, &corr)))
        return NULL;
    if (!mod_kit_array_arg(xo, fn)) return NULL;
    if (out != Py_None)
        return PyErr_Format(PyExc_TypeError,
                            "offload.%s: out= is not supported; use the returned array", fn);
    if (ddof && corr)
        return PyErr_Format(PyExc_ValueError,
                            "ddof and correction can't be provided simultaneously.");
    double c = 0.0;
    PyObject *cobj = ddof ? ddof : corr;
    if (cobj && (c = PyFloat_AsDouble(cobj)) == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *x = NULL, *mean = NULL, *dev = NULL, *sq = NULL, *sum = NULL, *div = NULL, *r = NULL;
    if (dtype != Py_None) { /* computed in dtype, as NumPy's dtype= */
        PyObject *want = mod_dtype_new(dtype);
        x = want ? mod_ops_copy((mod_array *)xo, want) : NULL;
        Py_XDECREF(want);
    } else {
        x = Py_NewRef(xo);
    }
    if (!x || !(mean = mod_reduce_named("mean", x, axis, NULL, true))) goto out;
    /* bool and integers: the deviations in the mean's float dtype */
    if (!(dev = PyNumber_Subtract(x, mean))) goto out;
    if (!strncmp(mod_dtype_name(((mod_array *)dev)->dtype), "complex", 7)) {
        /* complex: |x - mean|^2 as NumPy's _var, re * re + im * im, a real variance */
        PyObject *re = PyObject_GetAttrString(dev, "real"),
                 *im = PyObject_GetAttrString(dev, "imag");
        PyObject *re2 = re ? PyNumber_Multiply(re, re) : NULL,
                 *im2 = im ? PyNumber_Multiply(im, im) : NULL;
        sq = re2 && im2 ? PyNumber_Add(re2, im2) : NULL;
        Py_XDECREF(re);
        Py_XDECREF(im);
        Py_XDECREF(re2);
        Py_XDECREF(im2);
    } else {
        sq = PyNumber_Multiply(dev, dev);
    }
    if (!sq) goto out;
    Py_CLEAR(dev);
    if (!(sum = mod_reduce_named("sum", sq, axis, NULL, keepdims))) goto out;
    mod_array *xa = (mod_array *)x, *ma = (mod_array *)mean;
    Py_ssize_t nx = 1, nm = 1;
    for (int i = 0; i < xa->nd; i++) nx *= xa->shape[i];
    for (int i = 0; i < ma->nd; i++) nm *= ma->shape[i];
    double n = nm ? (double)(nx / nm) - c : 0.0; /* elements per result, less the correction */
    if (!(div = PyFloat_FromDouble(n > 0 ? n : 0.0))) goto out;
    /* a Python float divisor is weak (NEP 50): a float32 variance stays float32;
     * 0 gives inf or nan, as NumPy's */
    if (!(r = PyNumber_TrueDivide(sum, div))) goto out;
    if (std) Py_SETREF(r, offload_call("sqrt", r));
out:
    Py_XDECREF(x);
    Py_XDECREF(mean);
    Py_XDECREF(dev);
    Py_XDECREF(sq);
    Py_XDECREF(sum);
    Py_XDECREF(div);
    return r;
}

static PyObject *f_var(PyObject *m, PyObject *a, PyObject *k) {
    return var_or_std(false, NULL, a, k);
}
static PyObject *f_std(PyObject *m, PyObject *a, PyObject *k) {
    return var_or_std(true, NULL, a, k);
}
static PyObject *m_var(PyObject *x, PyObject *a, PyObject *k) { return var_or_std(false, x, a, k); }
static PyObject *m_std(PyObject *x, PyObject *a, PyObject *k) { return var_or_std(true, x, a, k); }

/* ---- scans: kernel texts ---- */

#define SCAN_GROUP 256    /* work-items per group of the blocks form, at most */
#define SCAN_MIN_RUN 4096 /* elements a run keeps at least when a row is split (runs form) */

/* What a scan's kernels (module/kernels/scan.py) are specialised on. A
 * bool scan (NumPy's add.accumulate with dtype=bool: a logical or;
 * multiply: and) computes in uint8 and stores `!= 0` into bool arrays. */
typedef struct {
    bool prod;
    PyObject *dtype; /* the result's, borrowed */
    bool boolean;
    bool exclusive; /* blocks form only: element k gets the total before it */
} scan_key;

/* Elements per work-item of a blocks-form tile: 16, 8 for complex128, whose
 * tile then still fits CUDA's 48 KB of static local memory. */
static int kper(const scan_key *k) {
    return strcmp(mod_dtype_name(k->dtype), "complex128") ? 16 : 8;
}

enum { SCAN_RUNS, SCAN_TOTALS, SCAN_ADD_RUNS, SCAN_REDUCE, SCAN_BLOCKS };
static const char *const scan_kernels[] = {"scan_runs", "scan_totals", "scan_add_runs",
                                           "scan_reduce", "scan_blocks"};

/* Launches scan.py's kernel `which` over `items` work-items (local > 0: an
 * NdRange of groups of local), with arrays first, then the integers nums,
 * then the compile-time arguments key says. */
static int scan_launch(const scan_key *k, int which, Py_ssize_t items, Py_ssize_t local,
                       PyObject *const *arrays, int narrays, const Py_ssize_t *nums, int nnums) {
    PyObject *kern = mod_library_get("scan", scan_kernels[which]);
    PyObject *op = mod_library_get("reduce", k->boolean ? (k->prod ? "bit_and" : "bit_or")
                                                        : (k->prod ? "multiply" : "add"));
    if (!kern || !op) return -1;
    PyObject *args[20], *owned[10]; /* owned: the numbers made here */
    int n = 0, nowned = 0, rc = -1;
    for (int i = 0; i < narrays; i++) args[n++] = arrays[i];
    long consts[] = {k->prod, SCAN_GROUP, kper(k)}; /* ID, GROUP, P */
    for (int i = 0; i < nnums + 3; i++)
        if (!(owned[nowned++] =
                  i < nnums ? PyLong_FromSsize_t(nums[i]) : PyLong_FromLong(consts[i - nnums])))
            goto out;
    for (int i = 0; i < nnums; i++) args[n++] = owned[i];
    args[n++] = op;
    args[n++] = k->boolean ? mod_dtype_find_borrowed('u', 1) : k->dtype; /* ACC */
    args[n++] = owned[nnums];                                            /* ID */
    args[n++] = mod_kit_bool(k->boolean);                                /* BOOLEAN */
    if (which >= SCAN_REDUCE) args[n++] = owned[nnums + 1], args[n++] = owned[nnums + 2];
    if (which == SCAN_BLOCKS) args[n++] = mod_kit_bool(k->exclusive);
    mod_shape range = {.ndim = 1, .size = {items}};
    if (local > 0) range.nd = true, range.local[0] = local;
    PyObject *r = mod_kernel_launch(kern, &range, args, n, false);
    rc = r ? 0 : -1;
    Py_XDECREF(r);
out:
    for (int i = 0; i < nowned; i++) Py_XDECREF(owned[i]);
    return rc;
}

static PyObject *view1(mod_array *a, Py_ssize_t n) {
    Py_ssize_t strides[1] = {a->itemsize};
    return mod_array_view(a, 1, &n, strides, a->offset);
}

/* Work-items per group of the blocks form: SCAN_GROUP, or the device's most
 * (a power of two). */
static Py_ssize_t scan_group(ofl_device *dev) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    size_t most = in->max_work_group_size;
    if (in->max_work_item_sizes[0] && in->max_work_item_sizes[0] < most)
        most = in->max_work_item_sizes[0];
    Py_ssize_t L = SCAN_GROUP;
    while (L > 1 && (size_t)L > most) L /= 2;
    return L;
}

/* Scans M rows of K elements of x (C-contiguous, the rows `inner` apart)
 * into out (the same with Ko = K + inc elements a row). x may be out for an
 * exclusive scan (always the blocks form). */
static int scan_into(const scan_key *k, mod_array *x, mod_array *out, Py_ssize_t M, Py_ssize_t K,
                     Py_ssize_t inner, int inc) {
    if (M == 0) return 0;
    ofl_device *dev = mod_array_device(out);
    const ofl_device_info *in = ofl_device_get_info(dev);
    Py_ssize_t cus = in->max_compute_units ? (Py_ssize_t)in->max_compute_units : 1;
    Py_ssize_t Ko = K + inc;
    const char *force = getenv("OFFLOAD_SCAN_FORM");
    bool blocks = k->exclusive || (in->type != OFL_CPU && K >= 512 && M < 16 * 1024);
    if (force && !strcmp(force, "blocks")) blocks = K > 0;
    if (force && !strcmp(force, "runs")) blocks = k->exclusive;
    Py_ssize_t nx = M * K, no = M * Ko;
    if (no == 0) return 0;
    /* 1-D views of the whole buffers: the kernels take the layout as numbers
     * (with nothing to read, x is out: an empty view is no argument) */
    PyObject *x1 = nx ? view1(x, nx) : view1(out, no), *o1 = view1(out, no), *tot = NULL;
    int rc = -1;
    if (!x1 || !o1) goto out;
    if (!blocks) {
        /* runs: enough of them to fill the device, each SCAN_MIN_RUN long at least */
        Py_ssize_t want = in->type == OFL_CPU ? 4 * cus : 2048 * cus;
        Py_ssize_t S = (want + M - 1) / M, most = K / SCAN_MIN_RUN;
        if (S > most) S = most;
        if (S < 1) S = 1;
        if (S > 1) {
            Py_ssize_t n = M * S;
            if (!(tot = mod_array_new_empty(dev, out->dtype, 1, &n))) goto out;
        }
        PyObject *arrays[3] = {x1, o1, tot ? tot : o1};
        Py_ssize_t nums[] = {M, K, Ko, inner, inc, S};
        if (scan_launch(k, SCAN_RUNS, M * S, 0, arrays, 3, nums, 6) < 0) goto out;
        if (S > 1) {
            Py_ssize_t nt[] = {M, S};
            if (scan_launch(k, SCAN_TOTALS, M, 0, &tot, 1, nt, 2) < 0) goto out;
            PyObject *a3[2] = {o1, tot};
            if (scan_launch(k, SCAN_ADD_RUNS, M * (S - 1), 0, a3, 2, nums, 6) < 0) goto out;
        }
        rc = 0;
        goto out;
    }
    /* blocks: enough groups to fill the device, each a span of whole tiles */
    Py_ssize_t L = scan_group(dev), B = L * kper(k), tiles = (K + B - 1) / B;
    Py_ssize_t Gr = (8 * cus + M - 1) / M;
    if (Gr > tiles) Gr = tiles;
    Py_ssize_t C = (tiles + Gr - 1) / Gr * B;
    Gr = (K + C - 1) / C;
    if (Gr > 1) {
        Py_ssize_t n = M * Gr;
        if (!(tot = mod_array_new_empty(dev, out->dtype, 1, &n))) goto out;
        PyObject *a1[2] = {x1, tot};
        Py_ssize_t n1[] = {K, inner, Gr, C};
        if (scan_launch(k, SCAN_REDUCE, M * Gr * L, L, a1, 2, n1, 4) < 0) goto out;
    }
    PyObject *arrays[3] = {x1, o1, tot ? tot : o1};
    Py_ssize_t nums[] = {K, Ko, inner, inc, Gr, C};
    if (scan_launch(k, SCAN_BLOCKS, M * Gr * L, L, arrays, 3, nums, 6) < 0) goto out;
    rc = 0;
out:
    Py_XDECREF(x1);
    Py_XDECREF(o1);
    Py_XDECREF(tot);
    return rc;
}

int mod_stats_exclusive_scan(mod_array *a, Py_ssize_t n) {
    scan_key key = {.dtype = a->dtype, .exclusive = true};
    return scan_into(&key, a, a, 1, n, 1, 0);
}

/* ---- scans: the Python surface ---- */

/* NumPy 2's cumsum dtype for in: bool and signed integers int64, unsigned
 * uint64, floats and complex their own. */
static PyObject *scan_default_dtype_borrowed(PyObject *in) {
    const char *n = mod_dtype_name(in);
    if (n[0] == 'f' || n[0] == 'c') return in;
    return mod_dtype_find_borrowed(n[0] == 'u' ? 'u' : 'i', 8);
}

/* cumulative_sum/prod (array_api: axis required above 1-D) and cumsum/cumprod
 * (numpy: axis=None flattens). */
static PyObject *scan(bool prod, bool numpy, PyObject *xo, PyObject *axis, PyObject *dtype,
                      PyObject *out_arg, int inc) {
    const char *fn =
        numpy ? (prod ? "cumprod" : "cumsum") : (prod ? "cumulative_prod" : "cumulative_sum");
    mod_array *x = mod_kit_array_arg(xo, fn);
    if (!x) return NULL;
    if (out_arg && out_arg != Py_None)
        return PyErr_Format(PyExc_TypeError,
                            "offload.%s: out= is not supported; use the returned array", fn);
    if (!numpy && axis == Py_None && x->nd > 1)
        return PyErr_Format(PyExc_ValueError, "For arrays which have more than one dimension "
                                              "``axis`` argument is required.");
    PyObject *want = NULL;
    if (dtype != Py_None && !(want = mod_dtype_new(dtype))) return NULL;
    PyObject *odt = want ? want : scan_default_dtype_borrowed(x->dtype);
    /* a 0-d array scans as one element; axis=None flattens (C order) */
    Py_ssize_t size = 1;
    for (int i = 0; i < x->nd; i++) size *= x->shape[i];
    int nd = 1, ax = 0;
    Py_ssize_t shape[MOD_MAXDIMS] = {size};
    if (x->nd >= 1 && axis != Py_None) {
        if (mod_kit_axis(axis, x->nd, NULL, &ax) < 0) goto fail;
        nd = x->nd;
        memcpy(shape, x->shape, sizeof(Py_ssize_t) * (size_t)nd);
    } else if (axis != Py_None && mod_kit_axis(axis, 1, NULL, &ax) < 0) {
        goto fail;
    }
    Py_ssize_t outer = 1, inner = 1, K = shape[ax];
    for (int i = 0; i < ax; i++) outer *= shape[i];
    for (int i = ax + 1; i < nd; i++) inner *= shape[i];
    shape[ax] = K + inc;
    PyObject *out = mod_array_new_empty(mod_array_device(x), odt, nd, shape);
    /* strides: one C-contiguous copy first (the kernels take the layout as numbers) */
    bool strided = size > 0 && !mod_array_is_c_contiguous(x);
    PyObject *xc = out && strided ? mod_ops_copy(x, NULL) : NULL;
    scan_key key = {.prod = prod, .dtype = odt, .boolean = mod_dtype_name(odt)[0] == 'b'};
    if (out && ((strided && !xc) || scan_into(&key, xc ? (mod_array *)xc : x, (mod_array *)out,
                                              outer * inner, K, inner, inc) < 0))
        Py_CLEAR(out);
    Py_XDECREF(xc);
    Py_XDECREF(want);
    return out;
fail:
    Py_XDECREF(want);
    return NULL;
}

/* cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) */
static PyObject *cumulative(bool prod, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "axis", "dtype", "out", "include_initial", NULL};
    PyObject *x, *axis = Py_None, *dtype = Py_None, *out = Py_None;
    int inc = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw,
                                     prod ? "O|$OOOp:cumulative_prod" : "O|$OOOp:cumulative_sum",
                                     kwlist, &x, &axis, &dtype, &out, &inc))
        return NULL;
    return scan(prod, false, x, axis, dtype, out, inc);
}

/* cumsum(a, axis=None, dtype=None, out=None); self: the array of a method */
static PyObject *numpy_scan(bool prod, PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "axis", "dtype", "out", NULL};
    PyObject *x = self, *axis = Py_None, *dtype = Py_None, *out = Py_None;
    const char *fmt =
        self ? (prod ? "|OOO:cumprod" : "|OOO:cumsum") : (prod ? "O|OOO:cumprod" : "O|OOO:cumsum");
    if (!(self ? PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist + 1, &axis, &dtype, &out)
               : PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &x, &axis, &dtype, &out)))
        return NULL;
    return scan(prod, true, x, axis, dtype, out, 0);
}

static PyObject *f_cumulative_sum(PyObject *m, PyObject *a, PyObject *k) {
    return cumulative(false, a, k);
}
static PyObject *f_cumulative_prod(PyObject *m, PyObject *a, PyObject *k) {
    return cumulative(true, a, k);
}
static PyObject *f_cumsum(PyObject *m, PyObject *a, PyObject *k) {
    return numpy_scan(false, NULL, a, k);
}
static PyObject *f_cumprod(PyObject *m, PyObject *a, PyObject *k) {
    return numpy_scan(true, NULL, a, k);
}
static PyObject *m_cumsum(PyObject *x, PyObject *a, PyObject *k) {
    return numpy_scan(false, x, a, k);
}
static PyObject *m_cumprod(PyObject *x, PyObject *a, PyObject *k) {
    return numpy_scan(true, x, a, k);
}

/* ---- diff ---- */

/* a[..., lo:hi, ...] on axis ax (hi PY_SSIZE_T_MAX: to the end): a view. */
static PyObject *slice_axis(PyObject *a, int nd, int ax, Py_ssize_t lo, Py_ssize_t hi) {
    PyObject *key = PyTuple_New(nd);
    for (int i = 0; key && i < nd; i++) {
        PyObject *s = NULL;
        if (i != ax) {
            s = PySlice_New(NULL, NULL, NULL);
        } else {
            PyObject *l = PyLong_FromSsize_t(lo);
            PyObject *h = hi == PY_SSIZE_T_MAX ? Py_NewRef(Py_None) : PyLong_FromSsize_t(hi);
            s = l && h ? PySlice_New(l, h, NULL) : NULL;
            Py_XDECREF(l);
            Py_XDECREF(h);
        }
        if (!s)
            Py_CLEAR(key);
        else
            PyTuple_SET_ITEM(key, i, s);
    }
    PyObject *r = key ? PyObject_GetItem(a, key) : NULL;
    Py_XDECREF(key);
    return r;
}

/* What prepend=/append= adds along ax: an offload array (0-d: broadcast)
 * or a Python/NumPy scalar. *len: its length along ax; *dtype: its dtype
 * as NumPy's asanyarray gives it (new reference). */
static int diff_part(mod_array *x, int ax, PyObject *v, int index, Py_ssize_t *len,
                     PyObject **dtype) {
    if (mod_array_check(v)) {
        mod_array *p = (mod_array *)v;
        if (same_device(x, v) < 0) return -1;
        *dtype = Py_NewRef(p->dtype);
        if (p->nd == 0) return *len = 1, 0;
        if (p->nd != x->nd) {
            PyErr_Format(PyExc_ValueError,
                         "all the input arrays must have same number of dimensions, but the "
                         "array at index 0 has %d dimension(s) and the array at index 1 has %d "
                         "dimension(s)",
                         index ? x->nd : p->nd, index ? p->nd : x->nd);
            Py_CLEAR(*dtype);
            return -1;
        }
        for (int i = 0; i < x->nd; i++)
            if (i != ax && p->shape[i] != x->shape[i]) {
                PyErr_Format(PyExc_ValueError,
                             "all the input array dimensions except for the concatenation axis "
                             "must match exactly, but along dimension %d, the array at index 0 "
                             "has size %zd and the array at index 1 has size %zd",
                             i, index ? x->shape[i] : p->shape[i],
                             index ? p->shape[i] : x->shape[i]);
                Py_CLEAR(*dtype);
                return -1;
            }
        return *len = p->shape[ax], 0;
    }
    if (mod_is_numpy_array(v)) {
        PyErr_Format(PyExc_TypeError,
                     "offload.diff: %s= is a NumPy array; offload.asarray(...) moves it to the "
                     "device (no silent copies)",
                     index ? "append" : "prepend");
        return -1;
    }
    PyObject *args = PyTuple_Pack(1, v);
    PyObject *arr = args ? mod_np_call("asarray", args, NULL) : NULL;
    PyObject *dt = arr ? PyObject_GetAttrString(arr, "dtype") : NULL;
    Py_XDECREF(args);
    Py_XDECREF(arr);
    if (!dt) return -1;
    *dtype = mod_dtype_new(dt);
    Py_DECREF(dt);
    *len = 1;
    return *dtype ? 0 : -1;
}

static PyObject *f_diff(PyObject *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"a", "n", "axis", "prepend", "append", NULL};
    PyObject *xo, *axis_o = NULL, *pre = Py_None, *app = Py_None;
    Py_ssize_t n = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|nOOO:diff", kwlist, &xo, &n, &axis_o, &pre, &app))
        return NULL;
    mod_array *x = mod_kit_array_arg(xo, "diff");
    if (!x) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "order must be non-negative but got %zd", n);
    if (n == 0) return Py_NewRef(xo);
    if (x->nd == 0)
        return PyErr_Format(PyExc_ValueError,
                            "diff requires input that is at least one dimensional");
    int ax = x->nd - 1;
    if (axis_o && mod_kit_axis(axis_o, x->nd, NULL, &ax) < 0) return NULL;
    PyObject *c = Py_NewRef(xo), *parts[3] = {pre, xo, app}, *dts[3] = {NULL, NULL, NULL};
    Py_ssize_t lens[3] = {0, x->shape[ax], 0};
    if (pre != Py_None || app != Py_None) { /* concatenated along ax first, as NumPy */
        Py_CLEAR(c);
        dts[1] = Py_NewRef(x->dtype);
        if ((pre != Py_None && diff_part(x, ax, pre, 0, &lens[0], &dts[0]) < 0) ||
            (app != Py_None && diff_part(x, ax, app, 1, &lens[2], &dts[2]) < 0))
            goto out;
        PyObject *targs = PyTuple_New(0);
        for (int i = 0; targs && i < 3; i++)
            if (dts[i] && _PyTuple_Resize(&targs, PyTuple_GET_SIZE(targs) + 1) == 0)
                PyTuple_SET_ITEM(targs, PyTuple_GET_SIZE(targs) - 1, Py_NewRef(dts[i]));
        PyObject *rt = targs ? mod_np_call("result_type", targs, NULL) : NULL;
        Py_XDECREF(targs);
        PyObject *dt = rt ? mod_dtype_new(rt) : NULL;
        Py_XDECREF(rt);
        if (!dt) goto out;
        Py_ssize_t shape[MOD_MAXDIMS];
        memcpy(shape, x->shape, sizeof(Py_ssize_t) * (size_t)x->nd);
        shape[ax] = lens[0] + lens[1] + lens[2];
        c = mod_array_new_empty(mod_array_device(x), dt, x->nd, shape);
        Py_DECREF(dt);
        Py_ssize_t at = 0;
        for (int i = 0; c && i < 3; i++) {
            if (parts[i] == Py_None || !lens[i]) continue;
            PyObject *dst = slice_axis(c, x->nd, ax, at, at + lens[i]);
            /* a scalar goes over as a 0-d array (a value, not array data) */
            PyObject *src = !dst ? NULL
                            : mod_array_check(parts[i])
                                ? Py_NewRef(parts[i])
                                : mod_array_from_host(parts[i], mod_array_device(x));
            if (src && ((mod_array *)src)->nd == 0) { /* broadcast: zero strides */
                mod_array *d = (mod_array *)dst;
                Py_ssize_t zero[MOD_MAXDIMS] = {0};
                Py_SETREF(src, mod_array_view((mod_array *)src, d->nd, d->shape, zero,
                                              ((mod_array *)src)->offset));
            }
            int rc = dst && src ? mod_ops_copy_into((mod_array *)dst, src) : -1;
            Py_XDECREF(dst);
            Py_XDECREF(src);
            if (rc < 0) Py_CLEAR(c);
            at += lens[i];
        }
        if (!c) goto out;
    }
    bool boolean = mod_dtype_name(((mod_array *)c)->dtype)[0] == 'b';
    for (Py_ssize_t i = 0; i < n && c; i++) {
        Py_ssize_t len = ((mod_array *)c)->shape[ax];
        PyObject *hi = slice_axis(c, x->nd, ax, len ? 1 : 0, PY_SSIZE_T_MAX);
        PyObject *lo = hi ? slice_axis(c, x->nd, ax, 0, len ? len - 1 : 0) : NULL;
        PyObject *d = !lo       ? NULL
                      : boolean ? PyObject_RichCompare(hi, lo, Py_NE) /* NumPy's not_equal */
                                : PyNumber_Subtract(hi, lo);
        Py_XDECREF(hi);
        Py_XDECREF(lo);
        Py_SETREF(c, d);
    }
out:
    for (int i = 0; i < 3; i++) Py_XDECREF(dts[i]);
    return c;
}

/* ---- tables ---- */

static PyMethodDef functions[] = {
    {"var", MOD_KWFUNC(f_var),
     "var(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=0.0) -> "
     "ndarray\n\nVariance over all axes or the given ones, sum((x - mean)**2) / (N - correction), "
     "in two passes as NumPy; ddof= is NumPy's name for correction=. Float inputs keep their "
     "dtype, integers and bool give float64. N - correction <= 0 gives inf or nan. out= must be "
     "None."},
    {"std", MOD_KWFUNC(f_std),
     "std(x, /, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=0.0) -> "
     "ndarray\n\nStandard deviation: sqrt(var(x, ...))."},
    {"cumulative_sum", MOD_KWFUNC(f_cumulative_sum),
     "cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) -> ndarray\n\n"
     "Cumulative sum along axis (required for more than one dimension), with a leading 0 when "
     "include_initial. Bool and integers accumulate in int64 (unsigned: uint64) unless dtype= "
     "says otherwise; floats in their own dtype. A parallel scan on x's device."},
    {"cumulative_prod", MOD_KWFUNC(f_cumulative_prod),
     "cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False) -> ndarray\n\n"
     "Cumulative product, as cumulative_sum (the initial value is 1)."},
    {"cumsum", MOD_KWFUNC(f_cumsum),
     "cumsum(a, axis=None, dtype=None, out=None) -> ndarray\n\nNumPy's cumulative sum: "
     "axis=None scans the flattened array (C order). out= must be None."},
    {"cumprod", MOD_KWFUNC(f_cumprod),
     "cumprod(a, axis=None, dtype=None, out=None) -> ndarray\n\nNumPy's cumulative product, "
     "as cumsum."},
    {"diff", MOD_KWFUNC(f_diff),
     "diff(a, /, n=1, axis=-1, prepend=None, append=None) -> ndarray\n\nThe n-th discrete "
     "difference along axis, a[1:] - a[:-1] (bool: a[1:] != a[:-1]) n times; prepend/append "
     "(offload arrays, or scalars broadcast along axis) are joined to a first, in NumPy's "
     "result dtype. n=0 returns a."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef methods[] = {
    {"var", MOD_KWFUNC(m_var),
     "var(axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=0.0) -> "
     "ndarray: offload.var(self, ...)"},
    {"std", MOD_KWFUNC(m_std),
     "std(axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=0.0) -> "
     "ndarray: offload.std(self, ...)"},
    {"cumsum", MOD_KWFUNC(m_cumsum),
     "cumsum(axis=None, dtype=None, out=None) -> ndarray: offload.cumsum(self, ...)"},
    {"cumprod", MOD_KWFUNC(m_cumprod),
     "cumprod(axis=None, dtype=None, out=None) -> ndarray: offload.cumprod(self, ...)"},
    {NULL, NULL, 0, NULL},
};

int mod_stats_add_functions(PyObject *module) {
    if (PyModule_AddFunctions(module, functions) < 0) return -1;
    return mod_type_add_methods(&mod_ArrayType, methods);
}
