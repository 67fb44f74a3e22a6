/* mod_index: NumPy's advanced indexing of offload arrays -- x[key] and
 * x[key] = value where key holds integer arrays, boolean masks or Python
 * booleans (core's ndarray.__getitem__/__setitem__ hand such keys here,
 * through mod_lib_array_kernels) -- and offload.take, take_along_axis and
 * nonzero (added by mod_lib_add_functions).
 *
 * Semantics are NumPy's: index arrays (offload arrays of any integer dtype;
 * lists and NumPy arrays, small and explicit, are uploaded, as CuPy does)
 * broadcast together; integers beside them count as advanced indices; the
 * advanced dimensions replace the indexed ones in place when the advanced
 * indices are adjacent in the key, else they come first; a boolean mask is
 * its nonzero() (one integer array per axis it covers); True / False add an
 * axis of length 1 / 0. Negative indices wrap; an index out of range is an
 * IndexError with NumPy's wording. That check runs on the device -- the
 * first offending position of each index array is kept in a flag array --
 * and is read back at the indexing call, so the IndexError surfaces there:
 * a gather checks as it reads (an index out of range reads nothing), and
 * setitem checks in a kernel of its own before it scatters, so nothing was
 * written. The result
 * of x[...] is a new C-contiguous array on x's device; a 0-d result stays a
 * 0-d array (NumPy returns a scalar).
 *
 * The device code is module/kernels/index.py's; this file plans and
 * launches it. Every access is one launch of its access kernel over the
 * result's elements: the result's dimensions (merged where every operand
 * steps as one) come in a small int64 array with x's, the value's and each
 * index array's strides, so one kernel serves every shape, specialised by
 * the operation, the number of index arrays (a tuple of them), the checked
 * ones and the dtypes; one merged dimension (take, 1-D keys) skips the
 * per-element divisions. Index arrays are used as C-contiguous int64
 * (others are converted by a kernel first; uint64 wraps as NumPy's cast to
 * intp does).
 *
 * A mask is compacted on the device: per group of 1024 elements a count
 * (a tree in local memory), a scan of those counts by one work-group, and a
 * scatter that ranks each group's elements with a scan in local memory and
 * writes their coordinates. The total is read back (the result's shape
 * depends on it). x[mask] with a mask of x's shape (both C-contiguous) skips
 * the coordinates: its scatter compacts the values themselves, each group
 * staging its selected values in local memory and writing them coalesced.
 * On CPU devices the barriers make these kernels slower than they could be,
 * but they are correct everywhere.
 *
 * x[key] = value: value a scalar (converted as NumPy's x.dtype.type(v):
 * 300 into int8 raises OverflowError), an offload array on x's device, or a
 * NumPy array or list (uploaded; converted to x's dtype on the host first,
 * as NumPy's assignment casts, unsafely). It broadcasts to the indexed
 * shape; an offload value is cast by the store (NumPy's unsafe casting). With
 * repeated indices NumPy keeps the last value; here which one lands is
 * unspecified (as the array API says), since the work-items store in
 * parallel. */
#include "lib/order/mod_order.h"
#include "lib/elementwise/mod_elementwise.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAXK (2 * MOD_MAXDIMS) /* index arrays in one key (masks give one per axis) */
#define GROUP 256              /* work-items per group of the compaction kernels */
#define PER_ITEM 4             /* mask elements per work-item: GROUP * PER_ITEM per group */
#define CHUNK (GROUP * PER_ITEM)

/* ---- small helpers ---- */

static PyObject *i64(void) { return mod_dtype_find_borrowed('i', 8); }

/* NumPy's way of writing a shape in its indexing messages: (2,3), (2,), (). */
static void shape_str(char *buf, size_t len, int nd, const Py_ssize_t *shape) {
    size_t u = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < nd && u < len; d++)
        u +=
            (size_t)snprintf(buf + u, len - u, "%zd%s", shape[d], nd == 1 || d < nd - 1 ? "," : "");
    if (u < len) snprintf(buf + u, len - u, ")");
}

/* A new int64 device array holding v[0..n-1]. */
static PyObject *upload_i64(const int64_t *v, Py_ssize_t n, ofl_device *dev) {
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)v, n * (Py_ssize_t)sizeof *v);
    PyObject *args = bytes ? PyTuple_Pack(1, bytes) : NULL;
    PyObject *kw = args ? Py_BuildValue("{sO}", "dtype", i64()) : NULL;
    PyObject *host = kw ? mod_np_call("frombuffer", args, kw) : NULL;
    PyObject *a = host ? mod_array_from_host(host, dev) : NULL;
    Py_XDECREF(bytes);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(host);
    return a;
}

/* Reads n int64 elements of the C-contiguous a from its start (waits for the device). */
static int read_i64(mod_array *a, Py_ssize_t start, int64_t *out, Py_ssize_t n) {
    Py_ssize_t strides[1] = {8};
    PyObject *v = mod_array_view(a, 1, &n, strides, a->offset + start * 8);
    PyObject *host = v ? mod_array_asnumpy((mod_array *)v) : NULL;
    Py_XDECREF(v);
    Py_buffer view;
    if (!host || mod_np_buffer(host, &view, false) < 0) {
        Py_XDECREF(host);
        return -1;
    }
    memcpy(out, view.buf, (size_t)n * sizeof *out);
    PyBuffer_Release(&view);
    Py_DECREF(host);
    return 0;
}

/* The 1-D view, in elements, of the memory that holds a: *base is a's
 * element [0,...,0] in it. NULL (no error) when a is empty. */
static PyObject *flat_view(mod_array *a, Py_ssize_t *base) {
    Py_ssize_t lo = a->offset, hi = a->offset;
    for (int d = 0; d < a->nd; d++) {
        if (a->shape[d] == 0) return NULL;
        Py_ssize_t ext = a->strides[d] * (a->shape[d] - 1);
        if (ext < 0)
            lo += ext;
        else
            hi += ext;
    }
    Py_ssize_t n = (hi - lo) / a->itemsize + 1, strides[1] = {a->itemsize};
    *base = (a->offset - lo) / a->itemsize;
    return mod_array_view(a, 1, &n, strides, lo);
}

/* a as a C-contiguous int64 array on its device: a itself (a new
 * reference) when it is one, else a converted copy. */
static PyObject *as_index(mod_array *a) {
    if (a->dtype == i64() && mod_array_is_c_contiguous(a)) return Py_NewRef(a);
    return mod_ops_copy(a, i64());
}

static bool is_integer(PyObject *dtype) {
    const char *n = mod_dtype_name(dtype);
    return n[0] == 'i' || n[0] == 'u';
}
static bool is_bool(PyObject *dtype) { return mod_dtype_name(dtype)[0] == 'b'; }

static int placement_error(const char *what, ofl_device *a, ofl_device *b) {
    PyErr_Format(mod_ExecutionPlacementError,
                 "%s: the array lives on %s and the index or value on %s; move one with "
                 ".to_device(...)",
                 what, ofl_device_get_info(a)->filter, ofl_device_get_info(b)->filter);
    return -1;
}

/* A launch over groups work-groups of GROUP work-items. */
static mod_shape groups_of(Py_ssize_t groups) {
    return (mod_shape){.ndim = 1, .nd = true, .size = {groups * GROUP}, .local = {GROUP}};
}

/* ---- compaction: the coordinates of a's nonzero elements ---- */

/* The tally of a mask's true elements: a count per group of GROUP * per
 * elements, the counts' exclusive scan (each group's first output: offs)
 * and their total, the one number read back, to size the result. */
typedef struct {
    PyObject *work;                  /* counts, offs, total: int64; owned */
    PyObject *counts, *offs, *total; /* views of work; owned */
    Py_ssize_t n;                    /* the mask's length */
    Py_ssize_t G;                    /* groups */
    int64_t count;
} tally_t;

static void tally_clear(tally_t *c) {
    Py_CLEAR(c->work);
    Py_CLEAR(c->counts);
    Py_CLEAR(c->offs);
    Py_CLEAR(c->total);
}

/* mv: the n mask elements, 1-D. 0, or -1 with an exception; tally_clear
 * after, either way. */
static int tally_marks(ofl_device *dev, PyObject *mv, Py_ssize_t n, int per, tally_t *c) {
    *c = (tally_t){.n = n, .G = (n + GROUP * per - 1) / (GROUP * per)};
    Py_ssize_t G = c->G, two = 2 * G + 1, one = 1, st[1] = {8};
    if (!(c->work = mod_array_new_empty(dev, i64(), 1, &two))) return -1;
    mod_array *w = (mod_array *)c->work;
    c->counts = mod_array_view(w, 1, &G, st, w->offset);
    c->offs = mod_array_view(w, 1, &G, st, w->offset + 8 * G);
    c->total = mod_array_view(w, 1, &one, st, w->offset + 16 * G);
    mod_shape counting = groups_of(G), scanning = groups_of(1);
    if (!c->counts || !c->offs || !c->total ||
        mod_library_launch("index", "nz_count", &counting, "OOnii", mv, c->counts, n, GROUP, per) <
            0 ||
        mod_library_launch("index", "nz_scan", &scanning, "OOOni", c->counts, c->offs, c->total, G,
                           GROUP) < 0)
        return -1;
    return read_i64(w, 2 * G, &c->count, 1);
}

/* The coordinates of a's nonzero elements (a != 0, NaN counts), C order:
 * a new int64 array of shape (max(a.ndim, 1), count). */
static PyObject *nonzero_rows(mod_array *a) {
    ofl_device *dev = mod_array_device(a);
    int k = a->nd > 0 ? a->nd : 1;
    Py_ssize_t n = mod_kit_size(a->nd, a->shape), shape[2] = {k, 0};
    if (n == 0) return mod_array_new_empty(dev, i64(), 2, shape);
    PyObject *m = mod_array_is_c_contiguous(a) ? Py_NewRef(a) : mod_ops_copy(a, NULL);
    PyObject *mv = NULL, *out = NULL, *shp = NULL, *ov = NULL;
    Py_ssize_t st[1] = {8}, mst[1] = {((mod_array *)a)->itemsize};
    tally_t c = {0};
    if (!m || !(mv = mod_array_view((mod_array *)m, 1, &n, mst, ((mod_array *)m)->offset)) ||
        tally_marks(dev, mv, n, PER_ITEM, &c) < 0)
        goto done;
    shape[1] = (Py_ssize_t)c.count;
    if (!(out = mod_array_new_empty(dev, i64(), 2, shape)) || c.count == 0) goto done;
    int64_t dims[MOD_MAXDIMS] = {0};
    for (int d = 0; d < a->nd; d++) dims[d] = a->shape[d];
    if (a->nd == 0) dims[0] = 1;
    Py_ssize_t all = k * (Py_ssize_t)c.count;
    mod_shape range = groups_of(c.G);
    if (!(shp = upload_i64(dims, k, dev)) ||
        !(ov = mod_array_view((mod_array *)out, 1, &all, st, ((mod_array *)out)->offset)) ||
        mod_library_launch("index", "nz_scatter", &range, "OOOOinnii", mv, c.offs, ov, shp, k, n,
                           (Py_ssize_t)c.count, GROUP, PER_ITEM) < 0)
        Py_CLEAR(out);
done:
    tally_clear(&c);
    Py_XDECREF(m);
    Py_XDECREF(mv);
    Py_XDECREF(shp);
    Py_XDECREF(ov);
    return out;
}

/* Row d of nonzero_rows' (k, count) result: a 1-D int64 view. */
static PyObject *row_of(mod_array *rows, int d) {
    Py_ssize_t n = rows->shape[1], st[1] = {8};
    return mod_array_view(rows, 1, &n, st, rows->offset + (Py_ssize_t)d * n * 8);
}

/* ---- x[mask] with mask of x's shape: the values, compacted directly ---- */

/* x[mask], x and mask (bool, x's shape, on x's device) C-contiguous: a new
 * 1-D array. A count per group, their scan, the total read back, then the
 * values themselves -- no coordinates written and gathered. */
static PyObject *mask_values(mod_array *x, mod_array *mask) {
    ofl_device *dev = mod_array_device(x);
    Py_ssize_t n = mod_kit_size(x->nd, x->shape), shape[1] = {0};
    if (n == 0) return mod_array_new_empty(dev, x->dtype, 1, shape);
    int per = x->itemsize > 8 ? 8 : 16; /* the group's values fit 32 KB of local memory */
    PyObject *mv = NULL, *xv = NULL, *out = NULL;
    Py_ssize_t mst[1] = {mask->itemsize}, xst[1] = {x->itemsize};
    tally_t c = {0};
    mv = mod_array_view(mask, 1, &n, mst, mask->offset);
    xv = mod_array_view(x, 1, &n, xst, x->offset);
    if (!mv || !xv || tally_marks(dev, mv, n, per, &c) < 0) goto done;
    shape[0] = (Py_ssize_t)c.count;
    if (!(out = mod_array_new_empty(dev, x->dtype, 1, shape)) || c.count == 0) goto done;
    mod_shape range = groups_of(c.G);
    if (mod_library_launch("index", "mask_take", &range, "OOOOniiO", mv, xv, c.offs, out, n, GROUP,
                           per, x->dtype) < 0)
        Py_CLEAR(out);
done:
    tally_clear(&c);
    Py_XDECREF(mv);
    Py_XDECREF(xv);
    return out;
}

/* ---- the plan of one gather or scatter ---- */

/* What x[key] reads: the result's dimensions, each stepping x by xs bytes
 * and index array k by is[k] elements; then index array k's value v (after
 * wrapping by an[k]) adds v * as[k] bytes. */
typedef struct {
    int nd;
    Py_ssize_t shape[MOD_MAXDIMS], xs[MOD_MAXDIMS];
    Py_ssize_t xoff; /* bytes: the element read when every coordinate and index is 0 */
    int K;
    PyObject *idx[MAXK]; /* owned: C-contiguous int64 on x's device */
    Py_ssize_t is[MAXK][MOD_MAXDIMS];
    Py_ssize_t as[MAXK], an[MAXK];
    int axis[MAXK];   /* x's axis, for the message */
    bool check[MAXK]; /* from the user (masks' coordinates are in range by construction) */
} plan;

static void plan_clear(plan *p) {
    for (int k = 0; k < p->K; k++) Py_CLEAR(p->idx[k]);
    p->K = 0;
}

/* How many of p's index arrays are checked (*nchk), and whether their
 * flags -- each keeps the first position where its index is out of range --
 * are int64 (wide: an index array of 2^31 elements or more, which needs
 * 64-bit atomics) rather than int32 (every device has 32-bit atomics). */
static void count_checks(plan *p, int *nchk, bool *wide) {
    *nchk = 0, *wide = false;
    for (int k = 0; k < p->K; k++)
        if (p->check[k]) {
            mod_array *ix = (mod_array *)p->idx[k];
            *wide |= mod_kit_size(ix->nd, ix->shape) > INT32_MAX;
            (*nchk)++;
        }
}

/* Reads the flags back (waits): IndexError naming the first index out of
 * range, as NumPy does. Consumes fl. */
static int report_flags(plan *p, PyObject *fl, int nchk, bool wide) {
    /* the flags read back as they are (no conversion kernel), widened here */
    int64_t flags[MAXK];
    int rc = 0;
    PyObject *host = mod_array_asnumpy((mod_array *)fl);
    Py_buffer view;
    if (!host || mod_np_buffer(host, &view, false) < 0) rc = -1;
    if (rc == 0) {
        for (int c = 0; c < nchk; c++)
            flags[c] = wide ? ((const int64_t *)view.buf)[c] : ((const int32_t *)view.buf)[c];
        PyBuffer_Release(&view);
    }
    Py_XDECREF(host);
    int64_t none = wide ? INT64_MAX : INT32_MAX;
    for (int k = 0, c = 0; k < p->K && rc == 0; k++) {
        if (!p->check[k]) continue;
        if (flags[c++] == none) continue;
        int64_t bad;
        if (read_i64((mod_array *)p->idx[k], flags[c - 1], &bad, 1) < 0)
            rc = -1;
        else {
            PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %d with size %zd",
                         (long long)bad, p->axis[k], p->an[k]);
            rc = -1;
        }
    }
    Py_DECREF(fl);
    return rc;
}

/* Checks every index array that needs it on the device, before a scatter
 * (a gather checks as it reads: run_access). */
static int check_bounds(mod_array *x, plan *p) {
    int nchk;
    bool wide;
    count_checks(p, &nchk, &wide);
    if (nchk == 0) return 0;
    PyObject *fl = mod_kit_call(
        "full", Py_BuildValue("(iL)", nchk, wide ? (long long)INT64_MAX : (long long)INT32_MAX),
        Py_BuildValue("{s:s,s:N}", "dtype", wide ? "int64" : "int32", "device",
                      mod_device_new(mod_array_device(x))));
    if (!fl) return -1;
    PyObject *flag = mod_dtype_find_borrowed('i', wide ? 8 : 4);
    int rc = 0;
    for (int k = 0, c = 0; k < p->K && rc == 0; k++) {
        if (!p->check[k]) continue;
        mod_array *ix = (mod_array *)p->idx[k];
        Py_ssize_t n = mod_kit_size(ix->nd, ix->shape), st[1] = {8};
        mod_shape range = {.ndim = 1, .size = {n}};
        PyObject *v = n ? mod_array_view(ix, 1, &n, st, ix->offset) : NULL;
        if (n && (!v || mod_library_launch("index", "check", &range, "OnOiO", v, p->an[k], fl, c,
                                           flag) < 0))
            rc = -1;
        c++;
        Py_XDECREF(v);
    }
    if (rc < 0) {
        Py_DECREF(fl);
        return -1;
    }
    return report_flags(p, fl, nchk, wide);
}

/* Runs p over x: a gather into the new C-contiguous out (value NULL), or a
 * scatter of value -- a scalar of x's dtype, or an offload array whose
 * strides over p's dimensions (bytes, 0 where it broadcasts) are vs. */
static int run_access(mod_array *x, plan *p, mod_array *out, PyObject *value, mod_array *varr,
                      const Py_ssize_t *vs) {
    Py_ssize_t n = mod_kit_size(p->nd, p->shape);
    if (n == 0) return 0;
    int mode = !out ? (varr ? 1 : 2) : 0;
    int nchk = 0;
    bool wide = false;
    if (mode == 0) count_checks(p, &nchk, &wide);
    /* merge the dimensions: per d the strides of x, the value and each index, in elements */
    int nops = 2 + p->K;
    Py_ssize_t sh[MOD_MAXDIMS], st[MOD_MAXDIMS][2 + MAXK];
    int nd = 0;
    for (int d = 0; d < p->nd; d++) {
        if (p->shape[d] == 1) continue;
        Py_ssize_t s[2 + MAXK];
        s[0] = p->xs[d] / x->itemsize;
        s[1] = varr ? vs[d] / varr->itemsize : 0;
        for (int k = 0; k < p->K; k++) s[2 + k] = p->is[k][d];
        bool merge = nd > 0;
        for (int i = 0; i < nops && merge; i++) merge = st[nd - 1][i] == s[i] * p->shape[d];
        if (merge) {
            sh[nd - 1] *= p->shape[d];
            for (int i = 0; i < nops; i++) st[nd - 1][i] = s[i];
            continue;
        }
        sh[nd] = p->shape[d];
        memcpy(st[nd], s, sizeof(Py_ssize_t) * (size_t)nops);
        nd++;
    }
    if (nd == 0) {
        sh[0] = 1;
        memset(st[0], 0, sizeof st[0]);
        nd = 1;
    }
    int64_t meta[MOD_MAXDIMS * (3 + MAXK) + 3 * MAXK];
    int m = 0;
    for (int d = 0; d < nd; d++) {
        meta[m++] = sh[d];
        meta[m++] = st[d][0];
        if (mode == 1) meta[m++] = st[d][1];
        for (int k = 0; k < p->K; k++) meta[m++] = st[d][2 + k];
    }
    for (int k = 0; k < p->K; k++) meta[m++] = p->as[k] / x->itemsize, meta[m++] = p->an[k];
    /* a gather's flags ride in the same upload, after meta: int64 words, or
     * int32 pairs, all "none yet" */
    int fm = m;
    for (int c = 0; c < nchk; c += wide ? 1 : 2)
        meta[m++] = wide ? INT64_MAX : (int64_t)0x7FFFFFFF7FFFFFFFLL;
    ofl_device *dev = mod_array_device(x);
    Py_ssize_t xb, vb = 0, ost[1] = {x->itemsize};
    PyObject *mt = upload_i64(meta, m, dev), *fl = NULL;
    PyObject *xv = mt ? flat_view(x, &xb) : NULL;
    PyObject *vv = NULL, *ov = NULL, *idx = NULL, *chk = NULL;
    int rc = -1;
    if (xv && nchk) {
        mod_array *ma = (mod_array *)mt;
        Py_ssize_t fn = nchk, fst = wide ? 8 : 4;
        if (!(fl = mod_array_view(ma, 1, &fn, &fst, ma->offset + (Py_ssize_t)fm * 8))) goto out;
        mod_array *fa = (mod_array *)fl; /* meta's int64 words read as the flags' dtype */
        Py_SETREF(fa->dtype, Py_NewRef(mod_dtype_find_borrowed('i', fst)));
        fa->itemsize = fst;
    }
    if (!xv) goto out;
    xb += (p->xoff - x->offset) / x->itemsize;
    if (varr) {
        vv = flat_view(varr, &vb);
        if (!vv) goto out;
    }
    if (out && !(ov = mod_array_view(out, 1, &n, ost, out->offset))) goto out;
    /* the index arrays, 1-D, and each one's flag (-1: not checked here) */
    if (!(idx = PyTuple_New(p->K)) || !(chk = PyTuple_New(p->K))) goto out;
    for (int k = 0, c = 0; k < p->K; k++) {
        mod_array *ix = (mod_array *)p->idx[k];
        Py_ssize_t in = mod_kit_size(ix->nd, ix->shape), ist[1] = {8};
        PyObject *v = mod_array_view(ix, 1, &in, ist, ix->offset);
        PyObject *slot = PyLong_FromLong(fl && p->check[k] ? c++ : -1);
        if (!v || !slot) {
            Py_XDECREF(v);
            Py_XDECREF(slot);
            goto out;
        }
        PyTuple_SET_ITEM(idx, k, v);
        PyTuple_SET_ITEM(chk, k, slot);
    }
    mod_shape range = {.ndim = 1, .size = {n}};
    /* unchecked, the flags are never read: meta stands in */
    rc = mod_library_launch("index", "access", &range, "OOOOinnOiOOO", mode ? xv : ov,
                            mode == 0   ? xv
                            : mode == 1 ? vv
                                        : value,
                            idx, mt, nd, xb, vb, fl ? fl : mt, mode, mod_kit_bool(nd == 1), chk,
                            mod_dtype_find_borrowed('i', fl && !wide ? 4 : 8));
    if (fl) rc = rc == 0 ? report_flags(p, Py_NewRef(fl), nchk, wide) : -1;
out:
    Py_XDECREF(fl);
    Py_XDECREF(mt);
    Py_XDECREF(xv);
    Py_XDECREF(vv);
    Py_XDECREF(ov);
    Py_XDECREF(idx);
    Py_XDECREF(chk);
    return rc;
}

/* ---- keys ---- */

enum { IT_INT, IT_SLICE, IT_NONE, IT_ELLIPSIS, IT_ARRAY, IT_MASK, IT_BOOL };

typedef struct {
    int kind;
    PyObject *obj; /* borrowed: the key's item */
    Py_ssize_t i;  /* IT_INT's value, IT_BOOL's 0 or 1 */
    PyObject *arr; /* owned: IT_ARRAY's C-contiguous int64, IT_MASK's bool, on x's device */
} key_item;

static const char invalid_index[] =
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices";

/* o.dtype.kind of a NumPy array or scalar ('b' 'i' 'u' 'f' ...), 0 with an exception. */
static char numpy_kind(PyObject *o) {
    PyObject *dt = PyObject_GetAttrString(o, "dtype");
    PyObject *kind = dt ? PyObject_GetAttrString(dt, "kind") : NULL;
    const char *k = kind ? PyUnicode_AsUTF8(kind) : NULL;
    char c = k ? k[0] : 0;
    Py_XDECREF(dt);
    Py_XDECREF(kind);
    return c;
}

/* A host array (NumPy's or a list) as an index on dev: IT_MASK, IT_BOOL
 * (0-d) or IT_ARRAY (as int64; [] is an empty integer index, as NumPy). */
static int host_index(PyObject *obj, ofl_device *dev, key_item *it) {
    PyObject *h = PyObject_CallMethod(mod_numpy_borrowed(), "asarray", "O", obj);
    if (!h) return -1;
    char k = numpy_kind(h);
    int rc = -1;
    if (!k) goto out;
    bool empty_list = PyList_Check(obj) && PyObject_Length(h) == 0;
    if (k == 'b' && !empty_list) {
        if (PyObject_Length(h) < 0) { /* 0-d: a Python bool */
            PyErr_Clear();
            int t = PyObject_IsTrue(h);
            if (t < 0) goto out;
            it->kind = IT_BOOL;
            it->i = t;
            rc = 0;
            goto out;
        }
        it->kind = IT_MASK;
        it->arr = mod_array_from_host(h, dev);
    } else if (k == 'i' || k == 'u' || empty_list) {
        PyObject *c = PyObject_CallMethod(h, "astype", "O", i64());
        it->kind = IT_ARRAY;
        it->arr = c ? mod_array_from_host(c, dev) : NULL;
        Py_XDECREF(c);
    } else {
        PyErr_SetString(PyExc_IndexError,
                        "arrays used as indices must be of integer (or boolean) type");
        goto out;
    }
    rc = it->arr ? 0 : -1;
out:
    Py_DECREF(h);
    return rc;
}

/* Classifies one item of a key (uploading host arrays, converting index
 * arrays to int64). */
static int classify(PyObject *o, ofl_device *dev, key_item *it) {
    memset(it, 0, sizeof *it);
    it->obj = o;
    if (o == Py_Ellipsis) {
        it->kind = IT_ELLIPSIS;
        return 0;
    }
    if (o == Py_None) {
        it->kind = IT_NONE;
        return 0;
    }
    if (PySlice_Check(o)) {
        it->kind = IT_SLICE;
        return 0;
    }
    if (PyBool_Check(o) || (mod_is_numpy_scalar(o) && !PyIndex_Check(o))) {
        if (!PyBool_Check(o) && numpy_kind(o) != 'b') { /* np.float64(1.0): not an index */
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, invalid_index);
            return -1;
        }
        int t = PyObject_IsTrue(o);
        if (t < 0) return -1;
        it->kind = IT_BOOL;
        it->i = t;
        return 0;
    }
    if (mod_array_check(o)) {
        mod_array *a = (mod_array *)o;
        if (mod_array_device(a) != dev)
            return placement_error("indexing", dev, mod_array_device(a));
        if (is_bool(a->dtype)) {
            if (a->nd == 0) { /* a 0-d mask is a Python bool (one element read back) */
                PyObject *h = mod_array_asnumpy(a);
                int t = h ? PyObject_IsTrue(h) : -1;
                Py_XDECREF(h);
                if (t < 0) return -1;
                it->kind = IT_BOOL;
                it->i = t;
                return 0;
            }
            it->kind = IT_MASK;
            it->arr = Py_NewRef(o);
            return 0;
        }
        if (!is_integer(a->dtype)) {
            PyErr_SetString(PyExc_IndexError,
                            "arrays used as indices must be of integer (or boolean) type");
            return -1;
        }
        it->kind = IT_ARRAY;
        it->arr = as_index(a);
        return it->arr ? 0 : -1;
    }
    if (mod_is_numpy_array(o) || PyList_Check(o)) return host_index(o, dev, it);
    if (PyIndex_Check(o)) {
        it->kind = IT_INT;
        it->i = PyNumber_AsSsize_t(o, PyExc_IndexError);
        return it->i == -1 && PyErr_Occurred() ? -1 : 0;
    }
    PyErr_SetString(PyExc_IndexError, invalid_index);
    return -1;
}

static int add_index(plan *p, PyObject *idx, Py_ssize_t as, Py_ssize_t an, int axis, bool check) {
    if (p->K == MAXK) {
        Py_DECREF(idx);
        PyErr_Format(PyExc_IndexError, "offload takes at most %d index arrays in one key", MAXK);
        return -1;
    }
    p->idx[p->K] = idx;
    p->as[p->K] = as, p->an[p->K] = an, p->axis[p->K] = axis, p->check[p->K] = check;
    p->K++;
    return 0;
}

/* The broadcast shape of p's index arrays into (*nb, b); each array's
 * strides over it into p->is (before placement). */
static int broadcast_indices(plan *p, int *nb, Py_ssize_t *b) {
    mod_array *ixs[MAXK];
    for (int k = 0; k < p->K; k++) ixs[k] = (mod_array *)p->idx[k];
    if (mod_kit_broadcast(ixs, p->K, nb, b)) {
        char msg[2048] = "shape mismatch: indexing arrays could not be broadcast "
                         "together with shapes ";
        for (int j = 0; j < p->K; j++) {
            char one[256];
            shape_str(one, sizeof one, ixs[j]->nd, ixs[j]->shape);
            size_t u = strlen(msg);
            snprintf(msg + u, sizeof msg - u, "%s ", one);
        }
        PyErr_SetString(PyExc_IndexError, msg);
        return -1;
    }
    for (int k = 0; k < p->K; k++) {
        mod_array *ix = (mod_array *)p->idx[k];
        Py_ssize_t elems = 1, own[MOD_MAXDIMS];
        for (int d = ix->nd - 1; d >= 0; d--) own[d] = elems, elems *= ix->shape[d];
        for (int d = 0; d < *nb; d++) {
            int id = d - (*nb - ix->nd);
            p->is[k][d] = id < 0 || ix->shape[id] == 1 ? 0 : own[id];
        }
    }
    return 0;
}

/* The plan of x[key] (key: what core found advanced). NumPy's rules,
 * mapping.c's prepare_index and its "consec" for where the advanced
 * dimensions go. */
static int plan_key(mod_array *x, PyObject *key, plan *p) {
    memset(p, 0, sizeof *p);
    PyObject *one[1] = {key};
    PyObject **objs = one;
    Py_ssize_t n = 1;
    if (PyTuple_Check(key)) {
        objs = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    if (n > 4 * MOD_MAXDIMS) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but "
                     "%zd were indexed",
                     x->nd, n);
        return -1;
    }
    key_item items[4 * MOD_MAXDIMS];
    ofl_device *dev = mod_array_device(x);
    int used = 0, ellipses = 0, rc = -1, nitems = 0;
    for (Py_ssize_t i = 0; i < n; i++, nitems++) {
        if (classify(objs[i], dev, &items[i]) < 0) goto out;
        key_item *it = &items[i];
        if (it->kind == IT_ELLIPSIS) ellipses++;
        if (it->kind == IT_INT || it->kind == IT_SLICE || it->kind == IT_ARRAY) used++;
        if (it->kind == IT_MASK) used += ((mod_array *)it->arr)->nd;
    }
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        goto out;
    }
    if (used > x->nd) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but %d were indexed",
                     x->nd, used);
        goto out;
    }
    /* walk the key: plain (sliced, new, untouched) dimensions in order, the
     * advanced ones as index arrays; consec as NumPy's mapiter */
    int np_ = 0, xd = 0, status = -1, consec = 0, result_dim = 0;
    Py_ssize_t psh[MOD_MAXDIMS], pst[MOD_MAXDIMS];
    p->xoff = x->offset;
    for (int i = 0; i <= nitems; i++) {
        key_item trailing = {.kind = IT_ELLIPSIS};
        if (i == nitems && ellipses) break;
        key_item *it = i < nitems ? &items[i] : &trailing;
        bool fancy = it->kind == IT_INT || it->kind == IT_ARRAY || it->kind == IT_MASK ||
                     it->kind == IT_BOOL;
        if (i < nitems) {
            if (fancy) {
                if (status == -1)
                    consec = result_dim, status = 0;
                else if (status == 1)
                    status = 2, consec = 0;
            } else if (status == 0) {
                status = 1;
            }
        }
        int add =
            it->kind == IT_ELLIPSIS ? x->nd - used : it->kind == IT_SLICE || it->kind == IT_NONE;
        if (np_ + add > MOD_MAXDIMS) {
            PyErr_Format(PyExc_IndexError, "arrays have at most %d dimensions", MOD_MAXDIMS);
            goto out;
        }
        result_dim += add;
        switch (it->kind) {
        case IT_ELLIPSIS:
            for (int j = 0; j < add; j++, xd++)
                psh[np_] = x->shape[xd], pst[np_++] = x->strides[xd];
            break;
        case IT_NONE: psh[np_] = 1, pst[np_++] = 0; break;
        case IT_SLICE: {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(it->obj, &start, &stop, &step) < 0) goto out;
            Py_ssize_t len = PySlice_AdjustIndices(x->shape[xd], &start, &stop, step);
            if (len == 0) start = 0, step = 1;
            p->xoff += start * x->strides[xd];
            psh[np_] = len, pst[np_++] = x->strides[xd] * step;
            xd++;
            break;
        }
        case IT_INT: {
            Py_ssize_t size = x->shape[xd], v = it->i;
            if (v < -size || v >= size) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for axis %d with size %zd", v, xd, size);
                goto out;
            }
            p->xoff += (v < 0 ? v + size : v) * x->strides[xd];
            xd++;
            break;
        }
        case IT_ARRAY:
            if (add_index(p, Py_NewRef(it->arr), x->strides[xd], x->shape[xd], xd, true) < 0)
                goto out;
            xd++;
            break;
        case IT_BOOL: { /* a new axis of length 1, indexed by [0] (True) or [] (False) */
            int64_t zero = 0;
            PyObject *z = upload_i64(&zero, it->i, dev);
            if (!z || add_index(p, z, 0, 1, xd, false) < 0) goto out;
            break;
        }
        case IT_MASK: {
            mod_array *m = (mod_array *)it->arr;
            for (int d = 0; d < m->nd; d++)
                if (m->shape[d] != x->shape[xd + d]) {
                    PyErr_Format(PyExc_IndexError,
                                 "boolean index did not match indexed array along axis %d; size "
                                 "of axis is %zd but size of corresponding boolean axis is %zd",
                                 xd + d, x->shape[xd + d], m->shape[d]);
                    goto out;
                }
            PyObject *rows = nonzero_rows(m);
            if (!rows) goto out;
            for (int d = 0; d < m->nd; d++) {
                PyObject *r = row_of((mod_array *)rows, d);
                if (!r ||
                    add_index(p, r, x->strides[xd + d], x->shape[xd + d], xd + d, false) < 0) {
                    Py_DECREF(rows);
                    goto out;
                }
            }
            Py_DECREF(rows);
            xd += m->nd;
            break;
        }
        }
    }
    int nb;
    Py_ssize_t b[MOD_MAXDIMS];
    if (broadcast_indices(p, &nb, b) < 0) goto out;
    if (np_ + nb > MOD_MAXDIMS) {
        PyErr_Format(PyExc_IndexError, "arrays have at most %d dimensions", MOD_MAXDIMS);
        goto out;
    }
    /* the result: plain[:consec], the broadcast index shape, plain[consec:] */
    Py_ssize_t bis[MAXK][MOD_MAXDIMS];
    for (int k = 0; k < p->K; k++) memcpy(bis[k], p->is[k], sizeof bis[k]);
    p->nd = 0;
    for (int d = 0; d < np_ + nb; d++) {
        bool adv = d >= consec && d < consec + nb;
        int src = d < consec ? d : adv ? d - consec : d - nb;
        p->shape[d] = adv ? b[src] : psh[src];
        p->xs[d] = adv ? 0 : pst[src];
        for (int k = 0; k < p->K; k++) p->is[k][d] = adv ? bis[k][src] : 0;
        p->nd++;
    }
    /* as NumPy: no bounds errors when the index arrays broadcast to nothing */
    if (mod_kit_size(nb, b) == 0)
        for (int k = 0; k < p->K; k++) p->check[k] = false;
    rc = 0;
out:
    for (int i = 0; i < nitems; i++) Py_XDECREF(items[i].arr);
    if (rc < 0) plan_clear(p);
    return rc;
}

/* ---- x[key], x[key] = value ---- */

static PyObject *gather(mod_array *x, plan *p) {
    PyObject *out = mod_array_new_empty(mod_array_device(x), x->dtype, p->nd, p->shape);
    if (out && run_access(x, p, (mod_array *)out, NULL, NULL, NULL) < 0) Py_CLEAR(out);
    return out;
}

PyObject *mod_index_getitem(mod_array *x, PyObject *key) {
    if (mod_array_check(key)) {
        mod_array *m = (mod_array *)key;
        if (is_bool(m->dtype) && m->nd == x->nd && x->nd > 0 &&
            !memcmp(m->shape, x->shape, sizeof(Py_ssize_t) * (size_t)x->nd) &&
            mod_array_device(m) == mod_array_device(x) && mod_array_is_c_contiguous(x) &&
            mod_array_is_c_contiguous(m))
            return mask_values(x, m);
    }
    plan p;
    if (plan_key(x, key, &p) < 0) return NULL;
    /* an empty result checks its indices all the same, as NumPy's */
    PyObject *r =
        mod_kit_size(p.nd, p.shape) == 0 && check_bounds(x, &p) < 0 ? NULL : gather(x, &p);
    plan_clear(&p);
    return r;
}

/* x[p] = value, value broadcast to p's shape as NumPy's setitem does. */
static int scatter(mod_array *x, plan *p, PyObject *value) {
    ofl_device *dev = mod_array_device(x);
    if (PyBool_Check(value) || PyLong_Check(value) || PyFloat_Check(value) ||
        mod_is_numpy_scalar(value)) {
        PyObject *type = PyObject_GetAttrString(x->dtype, "type");
        PyObject *v = type ? PyObject_CallOneArg(type, value) : NULL; /* 300 -> int8 raises */
        Py_XDECREF(type);
        int rc = v ? run_access(x, p, NULL, v, NULL, NULL) : -1;
        Py_XDECREF(v);
        return rc;
    }
    PyObject *held = NULL;
    if (mod_array_check(value)) {
        mod_array *v = (mod_array *)value;
        if (mod_array_device(v) != dev) return placement_error("setitem", dev, mod_array_device(v));
        /* a value sharing x's memory is read before anything is written, as NumPy does */
        held = v->mem == x->mem ? mod_ops_copy(v, NULL) : Py_NewRef(value);
    } else {
        /* host data: converted as NumPy's assignment would (a list's 300 into
         * int8 raises, an array's wraps), then uploaded */
        PyObject *h =
            mod_is_numpy_array(value)
                ? PyObject_CallMethod(value, "astype", "O", x->dtype)
                : PyObject_CallMethod(mod_numpy_borrowed(), "asarray", "OO", value, x->dtype);
        held = h ? mod_array_from_host(h, dev) : NULL;
        Py_XDECREF(h);
    }
    if (!held) return -1;
    mod_array *v = (mod_array *)held;
    /* NumPy drops the value's leading length-1 axes beyond the result's */
    int vnd = v->nd, lead = 0;
    while (vnd > p->nd && v->shape[lead] == 1) vnd--, lead++;
    Py_ssize_t vs[MOD_MAXDIMS];
    bool fits = vnd <= p->nd;
    for (int d = 0; d < p->nd && fits; d++) {
        int vd = d - (p->nd - vnd);
        if (vd < 0) {
            vs[d] = 0;
            continue;
        }
        Py_ssize_t len = v->shape[lead + vd];
        fits = len == p->shape[d] || len == 1;
        vs[d] = len == 1 ? 0 : v->strides[lead + vd];
    }
    int rc = -1;
    if (!fits) {
        char a[512], b[512];
        shape_str(a, sizeof a, v->nd, v->shape);
        shape_str(b, sizeof b, p->nd, p->shape);
        PyErr_Format(PyExc_ValueError,
                     "shape mismatch: value array of shape %s could not be broadcast to indexing "
                     "result of shape %s",
                     a, b);
    } else if (mod_kit_size(v->nd, v->shape) == 0) {
        rc = 0; /* nothing to write (the result is empty too) */
    } else {
        rc = run_access(x, p, NULL, NULL, v, vs);
    }
    Py_DECREF(held);
    return rc;
}

int mod_index_setitem(mod_array *x, PyObject *key, PyObject *value) {
    plan p;
    if (plan_key(x, key, &p) < 0) return -1;
    int rc = check_bounds(x, &p) < 0 ? -1 : scatter(x, &p, value);
    plan_clear(&p);
    return rc;
}

/* ---- take, take_along_axis, nonzero ---- */

static mod_array *array_arg(PyObject *o, const char *fn, const char *what) {
    if (mod_array_check(o)) return (mod_array *)o;
    PyErr_Format(PyExc_TypeError, "offload.%s needs an offload array as %s, not %s%s", fn, what,
                 Py_TYPE(o)->tp_name,
                 mod_is_numpy_array(o) || PyList_Check(o)
                     ? " (call offload.asarray(...) on it first: offload never copies to the "
                       "device behind your back)"
                     : "");
    return NULL;
}

/* The index array of take/take_along_axis: an integer (or, as NumPy's
 * casting allows, bool) offload array on x's device. */
static mod_array *index_arg(mod_array *x, PyObject *o, const char *fn) {
    mod_array *ix = array_arg(o, fn, "indices");
    if (!ix) return NULL;
    if (mod_array_device(ix) != mod_array_device(x)) {
        placement_error(fn, mod_array_device(x), mod_array_device(ix));
        return NULL;
    }
    if (!is_integer(ix->dtype) && !is_bool(ix->dtype)) {
        PyErr_Format(PyExc_TypeError,
                     "offload.%s: indices must be an integer array, not %s (NumPy: cannot cast "
                     "array data from dtype('%s') to dtype('int64') according to the rule "
                     "'same_kind')",
                     fn, mod_dtype_name(ix->dtype), mod_dtype_name(ix->dtype));
        return NULL;
    }
    return ix;
}

static PyObject *f_take(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "indices", "axis", NULL};
    PyObject *xo, *io, *axo = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:take", kwlist, &xo, &io, &axo)) return NULL;
    mod_array *x = array_arg(xo, "take", "x"), *ix = x ? index_arg(x, io, "take") : NULL;
    if (!ix) return NULL;
    PyObject *flat = NULL, *key = NULL, *r = NULL;
    PyObject *idx = as_index(ix); /* bools become 0 and 1, as NumPy's cast */
    int axis = 0;
    if (!idx) return NULL;
    if (axo == Py_None) {
        flat = PyObject_CallMethod(xo, "reshape", "(i)", -1); /* a view, or a copy if strided */
    } else if (mod_kit_axis(axo, x->nd, NULL, &axis) == 0) {
        flat = Py_NewRef(xo);
    }
    if (!flat) goto out;
    key = PyTuple_New(axis + 1);
    if (!key) goto out;
    for (int d = 0; d < axis; d++) {
        PyObject *all = PySlice_New(NULL, NULL, NULL);
        if (!all) goto out;
        PyTuple_SET_ITEM(key, d, all);
    }
    PyTuple_SET_ITEM(key, axis, Py_NewRef(idx));
    r = mod_index_getitem((mod_array *)flat, key);
out:
    Py_XDECREF(idx);
    Py_XDECREF(flat);
    Py_XDECREF(key);
    return r;
}

static PyObject *f_take_along_axis(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x", "indices", "axis", NULL};
    PyObject *xo, *io, *axo = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:take_along_axis", kwlist, &xo, &io, &axo))
        return NULL;
    mod_array *x = array_arg(xo, "take_along_axis", "x");
    mod_array *ix = x ? index_arg(x, io, "take_along_axis") : NULL;
    if (!ix) return NULL;
    PyObject *xflat = NULL, *r = NULL;
    int axis = 0;
    if (axo == Py_None) { /* NumPy: both flattened */
        if (ix->nd != 1) {
            PyErr_SetString(PyExc_ValueError,
                            "when axis=None, `indices` must have a single dimension.");
            return NULL;
        }
        if (!(xflat = PyObject_CallMethod(xo, "reshape", "(i)", -1))) return NULL;
        x = (mod_array *)xflat;
    } else {
        if (ix->nd != x->nd) {
            PyErr_SetString(PyExc_ValueError,
                            "`indices` and `arr` must have the same number of dimensions");
            return NULL;
        }
        if (!axo) {
            if (x->nd == 0) {
                mod_kit_axis_error(-1, 0, NULL);
                return NULL;
            }
            axis = x->nd - 1;
        } else if (mod_kit_axis(axo, x->nd, NULL, &axis) < 0) {
            return NULL;
        }
    }
    plan p;
    memset(&p, 0, sizeof p);
    PyObject *idx = as_index(ix);
    if (!idx) goto out;
    mod_array *ic = (mod_array *)idx;
    /* the result: x's and indices' shapes broadcast, but indices' length along axis */
    Py_ssize_t own = 1;
    p.nd = x->nd;
    p.xoff = x->offset;
    for (int d = x->nd - 1; d >= 0; d--) {
        Py_ssize_t xn = x->shape[d], in = ic->shape[d];
        if (d != axis && xn != in && xn != 1 && in != 1) {
            /* NumPy's message, from the fancy index it builds */
            char msg[2048] = "shape mismatch: indexing arrays could not be broadcast together "
                             "with shapes ";
            for (int j = 0; j < x->nd; j++) {
                Py_ssize_t sh[MOD_MAXDIMS];
                for (int e = 0; e < x->nd; e++)
                    sh[e] = j == axis ? ic->shape[e] : e == j ? x->shape[j] : 1;
                char one[256];
                shape_str(one, sizeof one, x->nd, sh);
                size_t u = strlen(msg);
                snprintf(msg + u, sizeof msg - u, "%s ", one);
            }
            PyErr_SetString(PyExc_IndexError, msg);
            Py_DECREF(idx);
            goto out;
        }
        p.shape[d] = d == axis ? in : xn == 1 ? in : xn;
        p.xs[d] = d == axis || xn == 1 ? 0 : x->strides[d];
        p.is[0][d] = in == 1 ? 0 : own;
        own *= in;
    }
    p.K = 1;
    p.idx[0] = idx;
    p.as[0] = x->strides[axis], p.an[0] = x->shape[axis], p.axis[0] = axis, p.check[0] = true;
    r = gather(x, &p);
out:
    plan_clear(&p);
    Py_XDECREF(xflat);
    return r;
}

static PyObject *f_nonzero(PyObject *self, PyObject *xo) {
    mod_array *x = array_arg(xo, "nonzero", "x");
    if (!x) return NULL;
    if (x->nd == 0) {
        PyErr_SetString(PyExc_ValueError, "Calling nonzero on 0d arrays is not allowed. Use "
                                          "np.atleast_1d(scalar).nonzero() instead.");
        return NULL;
    }
    PyObject *rows = nonzero_rows(x);
    PyObject *r = rows ? PyTuple_New(x->nd) : NULL;
    for (int d = 0; r && d < x->nd; d++) {
        PyObject *row = row_of((mod_array *)rows, d);
        if (!row)
            Py_CLEAR(r);
        else
            PyTuple_SET_ITEM(r, d, row);
    }
    Py_XDECREF(rows);
    return r;
}

static PyMethodDef functions[] = {
    {"take", MOD_KWFUNC(f_take),
     "take(x, indices, /, *, axis=None) -> ndarray\n\n"
     "The elements of x at indices along axis (x flattened when axis is None), as\n"
     "numpy.take: indices an integer offload array on x's device, negative ones\n"
     "counting from the end. An index out of range raises IndexError at this call\n"
     "(checked on the device and read back)."},
    {"take_along_axis", MOD_KWFUNC(f_take_along_axis),
     "take_along_axis(x, indices, /, *, axis=-1) -> ndarray\n\n"
     "x[..., indices, ...] pairing each index with its position along the other\n"
     "axes, as numpy.take_along_axis (x and indices broadcast there); indices an\n"
     "integer offload array with x's number of dimensions. Out of range indices\n"
     "raise IndexError at this call."},
    {"nonzero", (PyCFunction)f_nonzero, METH_O,
     "nonzero(x, /) -> tuple of ndarray\n\n"
     "The indices of x's nonzero (True, NaN included) elements, one int64 array\n"
     "per axis, in C order, as numpy.nonzero; computed on x's device (the count is\n"
     "read back to size the result). A 0-d x raises ValueError, as NumPy 2."},
    {NULL},
};

int mod_index_add_functions(PyObject *module) { return PyModule_AddFunctions(module, functions); }
