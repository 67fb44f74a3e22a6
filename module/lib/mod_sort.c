/* mod_sort: sorting, searching and the set functions of the array API
 * 2024.12 -- offload.sort argsort searchsorted unique_values unique_counts
 * unique_inverse unique_all, and ndarray's sort() and argsort() methods.
 * Registered by mod_lib.c (mod_sort_add_functions).
 *
 * Every sort is one LSD radix sort on the device. The array is first copied
 * C-contiguous with the sorted axis last (rows of n elements); a kernel maps
 * each element to a uint64 key whose unsigned order is the wanted order --
 * integers offset, floats with the sign bit flipped (all bits for negatives),
 * -0.0 made +0.0 and every NaN the largest key, so NaNs sort last and ties
 * between them keep their order -- and XORs it with all ones for
 * descending=True: the array API's descending sort is the ascending one
 * reversed for values (NaNs first, as array-api-strict's np.flip), with equal
 * elements still in their original order (stable). Each pass of 4 bits is
 * three kinds of launches: every work-item counts the digits of its run of
 * RUN consecutive elements (hist[digit][run], digit-major, so that one
 * exclusive scan over hist gives every run its start per digit), the scan,
 * and a scatter in which each work-item moves its run to those starts in
 * order -- stable, as LSD needs. The element's flat index travels with its
 * key; several rows are sorted together, their row number (flat index // n)
 * the most significant digits, sorted last. A value sort gathers the input at
 * the sorted indices.
 *
 * unique_* sort the flattened input with its indices, mark the first of each
 * run of equal values (NaN != NaN: each NaN its own value, as the array API
 * and NumPy 2 say), scan the marks, and scatter: values, the first index
 * (the sort is stable), counts from the runs' starts and inverse indices. The
 * number of unique values is the one number read back, to size the results.
 *
 * searchsorted is a binary search per element of x2, both operands in NumPy's
 * common dtype, NaN ordered last as in NumPy's sort. */
#include "mod_lib.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define RADIX_BITS 4
#define RADIX (1 << RADIX_BITS)
#define RUN 32        /* elements a work-item counts and scatters */
#define SCAN_CHUNK 64 /* elements a work-item sums in a scan's first pass */
/* At most this many, a scan is one work-item's loop: cheap on a CPU, where
 * a launch costs more than thousands of adds; a GPU thread's dependent loads
 * are slow, so there the chunks recurse down to a few hundred. */
#define SCAN_SERIAL_CPU 4096
#define SCAN_SERIAL_GPU 256

/* ---- kernel texts and launches ---- */

typedef struct {
    char s[4096];
    size_t n;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
    va_end(ap);
    if (k > 0) t->n += (size_t)k;
    if (t->n >= sizeof t->s) t->n = sizeof t->s - 1; /* caught by text_ok */
}

static bool text_ok(const text *t, const char *name) {
    if (t->n < sizeof t->s - 1) return true;
    PyErr_Format(PyExc_SystemError, "offload: the text of kernel %s outgrew its buffer", name);
    return false;
}

/* A launch's arguments, each an owned reference; a failed add poisons it. */
typedef struct {
    PyObject *v[12];
    int n;
    bool bad;
} argv_t;

static void arg_obj(argv_t *a, PyObject *o) { a->v[a->n++] = Py_XNewRef(o); }
static void arg_int(argv_t *a, Py_ssize_t i) {
    PyObject *o = PyLong_FromSsize_t(i);
    a->bad |= !o;
    a->v[a->n++] = o;
}
static void arg_u64(argv_t *a, Py_ssize_t i) {
    PyObject *o = PyObject_CallMethod(mod_numpy_borrowed(), "uint64", "n", i);
    a->bad |= !o;
    a->v[a->n++] = o;
}
static void args_clear(argv_t *a) {
    for (int i = 0; i < a->n; i++) Py_XDECREF(a->v[i]);
    a->n = 0;
}

/* Launches the text's kernel `name` over Range(items); clears a. */
static int launch(const char *name, const text *t, Py_ssize_t items, argv_t *a) {
    int rc = -1;
    if (!a->bad && text_ok(t, name)) {
        if (items <= 0) {
            rc = 0;
        } else {
            PyObject *r = mod_gen_launch(name, t->s, 1, &items, a->v, a->n);
            rc = r ? 0 : -1;
            Py_XDECREF(r);
        }
    }
    args_clear(a);
    return rc;
}

static PyObject *int64_dtype(void) { return mod_dtype_find_borrowed('i', 8); }
static PyObject *uint64_dtype(void) { return mod_dtype_find_borrowed('u', 8); }

static PyObject *new_1d(ofl_device *dev, PyObject *dtype, Py_ssize_t n) {
    return mod_array_new_empty(dev, dtype, 1, &n);
}

/* A 1-D view of a C-contiguous array's n elements (as dtype when given:
 * the same bytes read as another type of the same width). */
static PyObject *flat_view(mod_array *a, Py_ssize_t n, PyObject *dtype) {
    Py_ssize_t stride = a->itemsize;
    PyObject *v = mod_array_view(a, 1, &n, &stride, a->offset);
    if (v && dtype) Py_SETREF(((mod_array *)v)->dtype, Py_NewRef(dtype));
    return v;
}

static char kind_of(PyObject *dtype) {
    const char *name = mod_dtype_name(dtype);
    return name[0] == 'b' ? 'b' : name[0] == 'u' ? 'u' : name[0] == 'i' ? 'i' : 'f';
}

/* ---- exclusive scan of an int64 array, in place ---- */

static int scan_serial(mod_array *a, Py_ssize_t m) {
    text t = {.n = 0};
    put(&t, "def sort_scan_serial(it, a, m):\n"
            "    s = np.int64(0)\n"
            "    for i in range(m):\n"
            "        v = a[i]\n"
            "        a[i] = s\n"
            "        s += v\n");
    argv_t av = {.n = 0};
    arg_obj(&av, (PyObject *)a);
    arg_int(&av, m);
    return launch("sort_scan_serial", &t, 1, &av);
}

/* a[0..m) becomes its exclusive prefix sums: chunks' sums, their scan
 * (recursively), then each chunk's scan from its start. */
static int exclusive_scan(mod_array *a, Py_ssize_t m) {
    ofl_device *dev = mod_array_device(a);
    bool cpu = ofl_device_get_info(dev)->type == OFL_CPU;
    if (m <= (cpu ? SCAN_SERIAL_CPU : SCAN_SERIAL_GPU)) return scan_serial(a, m);
    Py_ssize_t chunks = (m + SCAN_CHUNK - 1) / SCAN_CHUNK;
    PyObject *sums = new_1d(dev, int64_dtype(), chunks);
    if (!sums) return -1;
    text t = {.n = 0};
    put(&t, "def sort_scan_sums(it, a, sums, m, c):\n"
            "    j = it.get_id(0)\n"
            "    s = np.int64(0)\n"
            "    for i in range(j * c, min(j * c + c, m)):\n"
            "        s += a[np.uint64(i)]\n"
            "    sums[j] = s\n");
    argv_t av = {.n = 0};
    arg_obj(&av, (PyObject *)a);
    arg_obj(&av, sums);
    arg_int(&av, m);
    arg_int(&av, SCAN_CHUNK);
    int rc = launch("sort_scan_sums", &t, chunks, &av);
    if (rc == 0) rc = exclusive_scan((mod_array *)sums, chunks);
    if (rc == 0) {
        t.n = 0;
        put(&t, "def sort_scan_apply(it, a, sums, m, c):\n"
                "    j = it.get_id(0)\n"
                "    s = sums[j]\n"
                "    for i in range(j * c, min(j * c + c, m)):\n"
                "        v = a[np.uint64(i)]\n"
                "        a[np.uint64(i)] = s\n"
                "        s += v\n");
        arg_obj(&av, (PyObject *)a);
        arg_obj(&av, sums);
        arg_int(&av, m);
        arg_int(&av, SCAN_CHUNK);
        rc = launch("sort_scan_apply", &t, chunks, &av);
    }
    Py_DECREF(sums);
    return rc;
}

/* ---- the radix sort ---- */

/* The key kernel for dtype: key[i] (uint64) and idx[i] = i. Floats read
 * their bits through `bits`, the same memory as uint32/uint64. */
static void key_text(text *t, PyObject *dtype, bool descending, char *name, size_t len) {
    const char *dn = mod_dtype_name(dtype);
    char kind = kind_of(dtype);
    int bits = (int)mod_dtype_itemsize(dtype) * 8;
    snprintf(name, len, "sort_key_%s%s", dn, descending ? "_desc" : "");
    put(t, "def %s(it, x, %skey, idx):\n    i = it.get_id(0)\n    v = x[i]\n", name,
        kind == 'f' ? "bits, " : "");
    put(t, "    top = np.uint64(1) << np.uint64(63)\n    ones = top | (top - np.uint64(1))\n");
    if (kind == 'b') {
        put(t, "    k = np.uint64(1) if v else np.uint64(0)\n");
    } else if (kind == 'u') {
        put(t, "    k = np.uint64(v)\n");
    } else if (kind == 'i' && bits < 64) {
        put(t, "    k = np.uint64(np.int64(v) + %lld)\n", 1LL << (bits - 1));
    } else if (kind == 'i') {
        put(t, "    k = np.uint64(v) ^ top\n");
    } else if (bits == 32) {
        /* NaN above +inf (0xff800000 once the sign bit is set); -0.0 as +0.0 */
        put(t, "    b = bits[i]\n"
               "    if v != v:\n"
               "        k = np.uint64(4294967295)\n"
               "    elif v == 0:\n"
               "        k = np.uint64(2147483648)\n"
               "    elif b >= np.uint32(2147483648):\n"
               "        k = np.uint64(b ^ np.uint32(4294967295))\n"
               "    else:\n"
               "        k = np.uint64(b) + np.uint64(2147483648)\n");
    } else {
        put(t, "    b = bits[i]\n"
               "    if v != v:\n"
               "        k = ones\n"
               "    elif v == 0:\n"
               "        k = top\n"
               "    elif b >= top:\n"
               "        k = b ^ ones\n"
               "    else:\n"
               "        k = b | top\n");
    }
    if (descending) {
        if (bits == 64 || kind == 'b')
            put(t, "    k = k ^ %s\n", kind == 'b' ? "np.uint64(1)" : "ones");
        else
            put(t, "    k = k ^ np.uint64(%lld)\n", (1LL << bits) - 1);
    }
    put(t, "    key[i] = k\n    idx[i] = i\n");
}

/* The digit of element i in a pass: of its key, or (by_row) of its row. */
static const char *digit_expr(bool by_row) {
    return by_row ? "((idx[i] // rown) >> sh) & 15" : "np.int64((key[i] >> sh) & np.uint64(15))";
}

/* One pass: the digit at shift sh of key (or of idx // rown) orders
 * (key, idx) into (key2, idx2). Keys move only in key passes. */
static int radix_pass(PyObject *key, PyObject *idx, PyObject *key2, PyObject *idx2, PyObject *hist,
                      Py_ssize_t N, Py_ssize_t rown, int sh, bool by_row) {
    Py_ssize_t R = (N + RUN - 1) / RUN;
    const char *dig = digit_expr(by_row);
    char name[64];
    snprintf(name, sizeof name, "sort_hist_%s", by_row ? "row" : "key");
    text t = {.n = 0};
    put(&t,
        "def %s(it, key, idx, hist, n, runs, sh, rown):\n"
        "    r = it.get_id(0)\n"
        "    c = ol.private_array(%d, np.int64)\n"
        "    for d in range(%d):\n"
        "        c[d] = 0\n"
        "    for i in range(r * %d, min(r * %d + %d, n)):\n"
        "        d = %s\n"
        "        c[d] += 1\n"
        "    for d in range(%d):\n"
        "        hist[np.uint64(d * runs + r)] = c[d]\n",
        name, RADIX, RADIX, RUN, RUN, RUN, dig, RADIX);
    argv_t av = {.n = 0};
    arg_obj(&av, key);
    arg_obj(&av, idx);
    arg_obj(&av, hist);
    arg_int(&av, N);
    arg_int(&av, R);
    if (by_row)
        arg_int(&av, sh);
    else
        arg_u64(&av, sh);
    arg_int(&av, rown);
    if (launch(name, &t, R, &av) < 0 || exclusive_scan((mod_array *)hist, RADIX * R) < 0) return -1;
    snprintf(name, sizeof name, "sort_scatter_%s", by_row ? "row" : "key");
    t.n = 0;
    put(&t,
        "def %s(it, key, idx, key2, idx2, hist, n, runs, sh, rown):\n"
        "    r = it.get_id(0)\n"
        "    c = ol.private_array(%d, np.int64)\n"
        "    for d in range(%d):\n"
        "        c[d] = hist[np.uint64(d * runs + r)]\n"
        "    for i in range(r * %d, min(r * %d + %d, n)):\n"
        "        d = %s\n"
        "        p = np.uint64(c[d])\n"
        "        c[d] += 1\n"
        "        idx2[p] = idx[i]\n"
        "%s",
        name, RADIX, RADIX, RUN, RUN, RUN, dig, by_row ? "" : "        key2[p] = key[i]\n");
    arg_obj(&av, key);
    arg_obj(&av, idx);
    arg_obj(&av, key2);
    arg_obj(&av, idx2);
    arg_obj(&av, hist);
    arg_int(&av, N);
    arg_int(&av, R);
    if (by_row)
        arg_int(&av, sh);
    else
        arg_u64(&av, sh);
    arg_int(&av, rown);
    return launch(name, &t, R, &av);
}

/* The sorted order of c (C-contiguous, N elements in rows of n): a new 1-D
 * int64 array of flat indices into c, row by row. */
static PyObject *radix_order(mod_array *c, Py_ssize_t N, Py_ssize_t n, bool descending) {
    ofl_device *dev = mod_array_device(c);
    PyObject *dtype = c->dtype;
    char kind = kind_of(dtype);
    int bits = kind == 'b' ? RADIX_BITS : (int)c->itemsize * 8;
    PyObject *bufs[4] = {new_1d(dev, uint64_dtype(), N), new_1d(dev, int64_dtype(), N),
                         new_1d(dev, uint64_dtype(), N), new_1d(dev, int64_dtype(), N)};
    Py_ssize_t R = (N + RUN - 1) / RUN;
    PyObject *hist = new_1d(dev, int64_dtype(), RADIX * R);
    PyObject *x = flat_view(c, N, NULL), *bitsv = NULL, *result = NULL;
    if (!bufs[0] || !bufs[1] || !bufs[2] || !bufs[3] || !hist || !x) goto out;
    text t = {.n = 0};
    char name[64];
    key_text(&t, dtype, descending, name, sizeof name);
    argv_t av = {.n = 0};
    arg_obj(&av, x);
    if (kind == 'f') {
        if (!(bitsv = flat_view(c, N, mod_dtype_find_borrowed('u', c->itemsize)))) goto out;
        arg_obj(&av, bitsv);
    }
    arg_obj(&av, bufs[0]);
    arg_obj(&av, bufs[1]);
    if (launch(name, &t, N, &av) < 0) goto out;
    int cur = 0; /* (bufs[cur], bufs[cur + 1]) hold the keys and indices */
    for (int sh = 0; sh < bits; sh += RADIX_BITS, cur ^= 2)
        if (radix_pass(bufs[cur], bufs[cur + 1], bufs[cur ^ 2], bufs[(cur ^ 2) + 1], hist, N, n, sh,
                       false) < 0)
            goto out;
    Py_ssize_t rows = n ? N / n : 0;
    for (int sh = 0; rows > 1 && (Py_ssize_t)1 << sh < rows; sh += RADIX_BITS, cur ^= 2)
        if (radix_pass(bufs[cur], bufs[cur + 1], bufs[cur ^ 2], bufs[(cur ^ 2) + 1], hist, N, n, sh,
                       true) < 0)
            goto out;
    result = Py_NewRef(bufs[cur + 1]);
out:
    for (int i = 0; i < 4; i++) Py_XDECREF(bufs[i]);
    Py_XDECREF(hist);
    Py_XDECREF(x);
    Py_XDECREF(bitsv);
    return result;
}

/* out[i] = x[idx[i]] (values) or idx[i] % n (positions in the row). */
static int gather(PyObject *out, PyObject *x, PyObject *idx, Py_ssize_t N, Py_ssize_t n,
                  bool positions) {
    text t = {.n = 0};
    const char *name = positions ? "sort_positions" : "sort_gather";
    put(&t, "def %s(it, out, x, idx, n):\n    i = it.get_id(0)\n", name);
    put(&t, positions ? "    out[i] = idx[i] %% n\n" : "    out[i] = x[np.uint64(idx[i])]\n");
    argv_t av = {.n = 0};
    arg_obj(&av, out);
    arg_obj(&av, x);
    arg_obj(&av, idx);
    arg_int(&av, n);
    return launch(name, &t, N, &av);
}

/* ---- sort and argsort ---- */

static int axis_error(Py_ssize_t axis, int nd) {
    PyObject *mod = PyImport_ImportModule("numpy.exceptions");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "AxisError") : NULL;
    PyObject *exc = cls ? PyObject_CallFunction(cls, "ni", axis, nd) : NULL;
    if (exc) PyErr_SetObject(cls, exc);
    Py_XDECREF(mod);
    Py_XDECREF(cls);
    Py_XDECREF(exc);
    return -1;
}

static mod_array *array_arg(PyObject *x, const char *fn) {
    if (mod_array_check(x)) return (mod_array *)x;
    PyErr_Format(PyExc_TypeError, "offload.%s needs an offload array, not %.100s%s", fn,
                 Py_TYPE(x)->tp_name,
                 mod_is_numpy_array(x) ? " (call offload.asarray(...) on it first)" : "");
    return NULL;
}

/* x's shape and strides with axis moved last (into shape, strides). */
static void move_last(const mod_array *x, int axis, Py_ssize_t *shape, Py_ssize_t *strides) {
    int k = 0;
    for (int d = 0; d < x->nd; d++)
        if (d != axis) shape[k] = x->shape[d], strides[k++] = x->strides[d];
    shape[k] = x->shape[axis];
    strides[k] = x->strides[axis];
}

/* The sort of x along axis (a valid axis of x, which has nd >= 1): its
 * values (positions false) or argsort's positions, a new C-contiguous array
 * of x's shape. */
static PyObject *sort_along(mod_array *x, int axis, bool descending, bool positions) {
    ofl_device *dev = mod_array_device(x);
    int nd = x->nd;
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS], N = 1, n = x->shape[axis];
    move_last(x, axis, shape, strides);
    for (int d = 0; d < nd; d++) N *= shape[d];
    PyObject *dtype = positions ? int64_dtype() : x->dtype;
    if (N == 0) return mod_array_new_empty(dev, dtype, nd, x->shape);
    PyObject *moved = mod_array_new_empty(dev, dtype, nd, shape);
    if (!moved) return NULL;
    PyObject *view = mod_array_view(x, nd, shape, strides, x->offset);
    PyObject *c = view ? mod_ops_copy((mod_array *)view, NULL) : NULL;
    PyObject *order = c ? radix_order((mod_array *)c, N, n, descending) : NULL;
    PyObject *out = order ? flat_view((mod_array *)moved, N, NULL) : NULL;
    PyObject *cflat = out ? flat_view((mod_array *)c, N, NULL) : NULL;
    int rc = cflat ? gather(out, cflat, order, N, n, positions) : -1;
    Py_XDECREF(view);
    Py_XDECREF(c);
    Py_XDECREF(order);
    Py_XDECREF(out);
    Py_XDECREF(cflat);
    if (rc < 0) {
        Py_DECREF(moved);
        return NULL;
    }
    if (axis == nd - 1) return moved;
    /* back to x's axis order: a view of moved with the last axis at `axis` */
    mod_array *m = (mod_array *)moved;
    Py_ssize_t bshape[MOD_MAXDIMS], bstrides[MOD_MAXDIMS];
    for (int d = 0, k = 0; d < nd; d++) {
        int from = d == axis ? nd - 1 : k++;
        bshape[d] = m->shape[from];
        bstrides[d] = m->strides[from];
    }
    PyObject *back = mod_array_view(m, nd, bshape, bstrides, m->offset);
    PyObject *r = back ? mod_ops_copy((mod_array *)back, NULL) : NULL;
    Py_XDECREF(back);
    Py_DECREF(moved);
    return r;
}

/* kind= as NumPy spells it; every kind is this one stable sort. */
static int check_kind(PyObject *kind, PyObject *order) {
    if (order && order != Py_None) {
        PyErr_SetString(PyExc_ValueError, "Cannot specify order when the array has no fields.");
        return -1;
    }
    if (!kind || kind == Py_None) return 0;
    const char *k = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : NULL;
    if (k && (k[0] == 'q' || k[0] == 'Q' || k[0] == 'h' || k[0] == 'H' || k[0] == 's' ||
              k[0] == 'S' || k[0] == 'm' || k[0] == 'M'))
        return 0;
    PyErr_Format(PyExc_ValueError, "sort kind must be one of 'quick', 'heap', or 'stable' (got %R)",
                 kind);
    return -1;
}

/* sort/argsort of xo: axis an int or None (flattened), as NumPy. */
static PyObject *sort_impl(PyObject *xo, PyObject *axis_o, bool descending, bool positions,
                           const char *fn) {
    mod_array *x = array_arg(xo, fn);
    if (!x) return NULL;
    if (axis_o == Py_None) { /* NumPy: the flattened array */
        Py_ssize_t N = 1;
        for (int d = 0; d < x->nd; d++) N *= x->shape[d];
        PyObject *c = mod_ops_copy(x, NULL);
        PyObject *flat = c ? flat_view((mod_array *)c, N, NULL) : NULL;
        PyObject *r = flat ? sort_along((mod_array *)flat, 0, descending, positions) : NULL;
        Py_XDECREF(c);
        Py_XDECREF(flat);
        return r;
    }
    Py_ssize_t a = PyNumber_AsSsize_t(axis_o, PyExc_OverflowError);
    if (a == -1 && PyErr_Occurred()) return NULL;
    if (x->nd == 0 && positions && (a == 0 || a == -1)) {
        /* NumPy's argsort of a 0-d array: array([0]) */
        Py_ssize_t one = 1;
        PyObject *r = mod_array_new_empty(mod_array_device(x), int64_dtype(), 1, &one);
        int64_t zero = 0;
        if (r && mod_array_fill((mod_array *)r, &zero) < 0) Py_CLEAR(r);
        return r;
    }
    if (a < -x->nd || a >= x->nd) {
        axis_error(a, x->nd);
        return NULL;
    }
    return sort_along(x, (int)(a < 0 ? a + x->nd : a), descending, positions);
}

/* sort(a, axis=-1, kind=None, order=None, *, descending=False, stable=None) */
static PyObject *parse_sort(PyObject *self, PyObject *args, PyObject *kw, bool positions,
                            bool method) {
    static char *fkw[] = {"a", "axis", "kind", "order", "descending", "stable", NULL};
    PyObject *x = self, *axis = NULL, *kind = Py_None, *order = Py_None, *stable = Py_None;
    int descending = 0;
    const char *fn = positions ? "argsort" : "sort";
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%s|OOO$pO:%s", method ? "" : "O", fn);
    int ok = method ? PyArg_ParseTupleAndKeywords(args, kw, fmt, fkw + 1, &axis, &kind, &order,
                                                  &descending, &stable)
                    : PyArg_ParseTupleAndKeywords(args, kw, fmt, fkw, &x, &axis, &kind, &order,
                                                  &descending, &stable);
    if (!ok || check_kind(kind, order) < 0) return NULL;
    PyObject *minus1 = NULL;
    if (!axis) axis = minus1 = PyLong_FromLong(-1);
    PyObject *r = axis ? sort_impl(x, axis, descending, positions, fn) : NULL;
    Py_XDECREF(minus1);
    return r;
}

static PyObject *f_sort(PyObject *m, PyObject *a, PyObject *k) {
    return parse_sort(NULL, a, k, false, false);
}
static PyObject *f_argsort(PyObject *m, PyObject *a, PyObject *k) {
    return parse_sort(NULL, a, k, true, false);
}
static PyObject *m_argsort(PyObject *x, PyObject *a, PyObject *k) {
    return parse_sort(x, a, k, true, true);
}

/* ndarray.sort(axis=-1, kind=None, order=None, *, descending=False,
 * stable=None): in place, returns None, as NumPy's. */
static PyObject *m_sort(PyObject *x, PyObject *a, PyObject *k) {
    PyObject *s = parse_sort(x, a, k, false, true);
    if (!s) return NULL;
    int rc = mod_ops_copy_into((mod_array *)x, s);
    Py_DECREF(s);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- searchsorted ---- */

/* The common dtype NumPy compares in: result_type, bool searched as uint8
 * (kernels order integers, not bools). */
static PyObject *common_dtype(PyObject *a, PyObject *b) {
    PyObject *rt = PyObject_CallMethod(mod_numpy_borrowed(), "result_type", "OO", a, b);
    PyObject *d = rt ? mod_dtype_new(rt) : NULL;
    Py_XDECREF(rt);
    if (d && kind_of(d) == 'b') Py_SETREF(d, Py_NewRef(mod_dtype_find_borrowed('u', 1)));
    return d;
}

static PyObject *f_searchsorted(PyObject *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x1", "x2", "side", "sorter", NULL};
    PyObject *x1o, *x2o, *sorter_o = Py_None;
    const char *side = "left";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sO:searchsorted", kwlist, &x1o, &x2o, &side,
                                     &sorter_o))
        return NULL;
    bool right;
    if (!strcmp(side, "left") || !strcmp(side, "l") || !strcmp(side, "L"))
        right = false;
    else if (!strcmp(side, "right") || !strcmp(side, "r") || !strcmp(side, "R"))
        right = true;
    else
        return PyErr_Format(PyExc_ValueError, "side must be 'left' or 'right' (got '%s')", side);
    mod_array *x1 = array_arg(x1o, "searchsorted");
    if (!x1) return NULL;
    ofl_device *dev = mod_array_device(x1);
    if (x1->nd != 1) return PyErr_Format(PyExc_ValueError, "object too deep for desired array");
    PyObject *x2_own = NULL;
    if (!mod_array_check(x2o)) {
        if (mod_is_numpy_array(x2o) || PyList_Check(x2o) || PyTuple_Check(x2o))
            return PyErr_Format(PyExc_TypeError,
                                "offload.searchsorted: x2 must be an offload array, not %.100s "
                                "(call offload.asarray(...) on it first)",
                                Py_TYPE(x2o)->tp_name);
        if (!(PyLong_Check(x2o) || PyFloat_Check(x2o) || mod_is_numpy_scalar(x2o)))
            return PyErr_Format(PyExc_TypeError,
                                "offload.searchsorted: x2 must be an offload array or a scalar, "
                                "not %.100s",
                                Py_TYPE(x2o)->tp_name);
        /* a Python scalar is weak (NEP 50): in x1's dtype, as NumPy converts it */
        PyObject *h =
            PyObject_CallMethod(mod_numpy_borrowed(), "asarray", "OO", x2o,
                                PyLong_Check(x2o) || PyFloat_Check(x2o) ? x1->dtype : Py_None);
        x2_own = h ? mod_array_from_host(h, dev) : NULL;
        Py_XDECREF(h);
        if (!x2_own) return NULL;
        x2o = x2_own;
    }
    mod_array *x2 = (mod_array *)x2o;
    if (mod_array_device(x2) != dev) {
        Py_XDECREF(x2_own);
        return PyErr_Format(mod_ExecutionPlacementError,
                            "searchsorted: x1 lives on %s and x2 on %s; move one with "
                            ".to_device(...)",
                            ofl_device_get_info(dev)->filter,
                            ofl_device_get_info(mod_array_device(x2))->filter);
    }
    Py_ssize_t n = x1->shape[0], M = 1;
    for (int d = 0; d < x2->nd; d++) M *= x2->shape[d];
    PyObject *dt = common_dtype(x1->dtype, x2->dtype);
    PyObject *a = NULL, *v = NULL, *vflat = NULL, *out = NULL, *outflat = NULL, *result = NULL;
    if (!dt) goto done;
    if (sorter_o != Py_None) {
        mod_array *s = array_arg(sorter_o, "searchsorted");
        if (!s) goto done;
        if (mod_array_device(s) != dev) {
            PyErr_Format(
                mod_ExecutionPlacementError, "searchsorted: x1 lives on %s and sorter on %s",
                ofl_device_get_info(dev)->filter, ofl_device_get_info(mod_array_device(s))->filter);
            goto done;
        }
        if (s->nd != 1 || s->shape[0] != n) {
            PyErr_SetString(PyExc_ValueError, "sorter.size must equal a.size");
            goto done;
        }
        if (kind_of(s->dtype) != 'i' && kind_of(s->dtype) != 'u') {
            PyErr_SetString(PyExc_TypeError, "sorter must only contain integers");
            goto done;
        }
        /* a = x1[sorter], in the common dtype. NumPy does not check
         * sorter's indices; here an index out of range reads x1's nearest
         * end rather than memory past it (negative ones count from the end) */
        PyObject *sc = mod_ops_copy(s, int64_dtype());
        PyObject *x1c = sc ? mod_ops_copy(x1, dt) : NULL;
        a = x1c ? new_1d(dev, dt, n) : NULL;
        text t = {.n = 0};
        put(&t, "def searchsorted_sorter(it, out, x, s, n):\n"
                "    i = it.get_id(0)\n"
                "    j = s[i]\n"
                "    if j < 0:\n"
                "        j += n\n"
                "    j = min(max(j, 0), n - 1)\n"
                "    out[i] = x[np.uint64(j)]\n");
        argv_t av = {.n = 0};
        arg_obj(&av, a);
        arg_obj(&av, x1c);
        arg_obj(&av, sc);
        arg_int(&av, n);
        int rc = a ? launch("searchsorted_sorter", &t, n, &av) : (args_clear(&av), -1);
        Py_XDECREF(sc);
        Py_XDECREF(x1c);
        if (rc < 0) goto done;
    } else if (!(a = mod_ops_copy(x1, dt))) {
        goto done;
    }
    if (!(v = mod_ops_copy(x2, dt)) ||
        !(out = mod_array_new_empty(dev, int64_dtype(), x2->nd, x2->shape)))
        goto done;
    if (M > 0) {
        if (!(vflat = flat_view((mod_array *)v, M, NULL)) ||
            !(outflat = flat_view((mod_array *)out, M, NULL)))
            goto done;
        /* lt(p, q): p before q in NumPy's sort order, NaN last */
        const char *lt = kind_of(dt) == 'f' ? "(%s < %s or (%s != %s and %s == %s))" : "%s < %s";
        char cond[160];
        if (kind_of(dt) == 'f')
            snprintf(cond, sizeof cond, lt, right ? "x" : "y", right ? "y" : "x", right ? "y" : "x",
                     right ? "y" : "x", right ? "x" : "y", right ? "x" : "y");
        else
            snprintf(cond, sizeof cond, lt, right ? "x" : "y", right ? "y" : "x");
        text t = {.n = 0};
        char name[64];
        snprintf(name, sizeof name, "searchsorted_%s_%s", right ? "right" : "left",
                 mod_dtype_name(dt));
        put(&t,
            "def %s(it, out, a, v, n):\n"
            "    i = it.get_id(0)\n"
            "    x = v[i]\n"
            "    lo = np.int64(0)\n"
            "    hi = n\n"
            "    while lo < hi:\n"
            "        mid = (lo + hi) // 2\n"
            "        y = a[np.uint64(mid)]\n"
            "        if %s%s:\n"
            "            lo = mid + 1\n"
            "        else:\n"
            "            hi = mid\n"
            "    out[i] = lo\n",
            name, right ? "not " : "", cond);
        argv_t av = {.n = 0};
        arg_obj(&av, outflat);
        arg_obj(&av, a);
        arg_obj(&av, vflat);
        arg_int(&av, n);
        if (launch(name, &t, M, &av) < 0) goto done;
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(x2_own);
    Py_XDECREF(dt);
    Py_XDECREF(a);
    Py_XDECREF(v);
    Py_XDECREF(vflat);
    Py_XDECREF(out);
    Py_XDECREF(outflat);
    return result;
}

/* ---- unique_* ---- */

enum { U_VALUES, U_COUNTS, U_INVERSE, U_ALL };

/* The namedtuple classes NumPy 2 names its results with, for the process */
static PyObject *result_types[4];

static PyObject *f_unique(int what, PyObject *xo) {
    static const char *fns[] = {"unique_values", "unique_counts", "unique_inverse", "unique_all"};
    mod_array *x = array_arg(xo, fns[what]);
    if (!x) return NULL;
    ofl_device *dev = mod_array_device(x);
    Py_ssize_t N = 1;
    for (int d = 0; d < x->nd; d++) N *= x->shape[d];
    PyObject *c = NULL, *cflat = NULL, *order = NULL, *sv = NULL, *g = NULL, *values = NULL,
             *indices = NULL, *starts = NULL, *counts = NULL, *inverse = NULL, *inv_flat = NULL,
             *result = NULL;
    Py_ssize_t m = 0;
    if (!(inverse = mod_array_new_empty(dev, int64_dtype(), x->nd, x->shape))) goto done;
    if (N > 0) {
        if (!(c = mod_ops_copy(x, NULL)) || !(cflat = flat_view((mod_array *)c, N, NULL)) ||
            !(order = radix_order((mod_array *)c, N, N, false)) ||
            !(sv = new_1d(dev, x->dtype, N)) || gather(sv, cflat, order, N, N, false) < 0 ||
            !(g = new_1d(dev, int64_dtype(), N + 1)))
            goto done;
        /* g[i]: 1 where sv[i] starts a run of equal values (NaN != NaN);
         * g[N] = 0, so that its exclusive scan ends with the count */
        text t = {.n = 0};
        put(&t, "def unique_marks(it, g, sv, n):\n"
                "    i = it.get_id(0)\n"
                "    if i == 0:\n"
                "        g[i] = 1\n"
                "        g[n] = 0\n"
                "    elif sv[i] != sv[np.uint64(i - 1)]:\n"
                "        g[i] = 1\n"
                "    else:\n"
                "        g[i] = 0\n");
        argv_t av = {.n = 0};
        arg_obj(&av, g);
        arg_obj(&av, sv);
        arg_int(&av, N);
        if (launch("unique_marks", &t, N, &av) < 0 || exclusive_scan((mod_array *)g, N + 1) < 0)
            goto done;
        Py_ssize_t one = 1, stride = 8;
        PyObject *last =
            mod_array_view((mod_array *)g, 1, &one, &stride, ((mod_array *)g)->offset + N * stride);
        PyObject *h = last ? mod_array_asnumpy((mod_array *)last) : NULL;
        PyObject *item = h ? PyObject_CallMethod(h, "item", NULL) : NULL;
        m = item ? PyLong_AsSsize_t(item) : -1;
        Py_XDECREF(last);
        Py_XDECREF(h);
        Py_XDECREF(item);
        if (m < 0) goto done;
    }
    if (!(values = new_1d(dev, x->dtype, m)) || !(indices = new_1d(dev, int64_dtype(), m)) ||
        !(starts = new_1d(dev, int64_dtype(), m)) || !(counts = new_1d(dev, int64_dtype(), m)))
        goto done;
    if (N > 0) {
        if (!(inv_flat = flat_view((mod_array *)inverse, N, NULL))) goto done;
        text t = {.n = 0};
        put(&t, "def unique_scatter(it, sv, order, g, values, indices, starts, inverse):\n"
                "    i = it.get_id(0)\n"
                "    j = g[i]\n"
                "    first = i == 0\n"
                "    if i > 0:\n"
                "        first = sv[i] != sv[np.uint64(i - 1)]\n"
                "    p = order[i]\n"
                "    if first:\n"
                "        values[np.uint64(j)] = sv[i]\n"
                "        indices[np.uint64(j)] = p\n"
                "        starts[np.uint64(j)] = i\n"
                "        inverse[np.uint64(p)] = j\n"
                "    else:\n"
                "        inverse[np.uint64(p)] = j - 1\n");
        argv_t av = {.n = 0};
        arg_obj(&av, sv);
        arg_obj(&av, order);
        arg_obj(&av, g);
        arg_obj(&av, values);
        arg_obj(&av, indices);
        arg_obj(&av, starts);
        arg_obj(&av, inv_flat);
        if (launch("unique_scatter", &t, N, &av) < 0) goto done;
        t.n = 0;
        put(&t, "def unique_counts(it, counts, starts, m, n):\n"
                "    j = it.get_id(0)\n"
                "    e = n\n"
                "    if j + 1 < m:\n"
                "        e = starts[np.uint64(j + 1)]\n"
                "    counts[j] = e - starts[j]\n");
        arg_obj(&av, counts);
        arg_obj(&av, starts);
        arg_int(&av, m);
        arg_int(&av, N);
        if (launch("unique_counts", &t, m, &av) < 0) goto done;
    }
    switch (what) {
    case U_VALUES: result = Py_NewRef(values); break;
    case U_COUNTS:
        result = PyObject_CallFunctionObjArgs(result_types[what], values, counts, NULL);
        break;
    case U_INVERSE:
        result = PyObject_CallFunctionObjArgs(result_types[what], values, inverse, NULL);
        break;
    default:
        result = PyObject_CallFunctionObjArgs(result_types[what], values, indices, inverse, counts,
                                              NULL);
    }
done:
    Py_XDECREF(c);
    Py_XDECREF(cflat);
    Py_XDECREF(order);
    Py_XDECREF(sv);
    Py_XDECREF(g);
    Py_XDECREF(values);
    Py_XDECREF(indices);
    Py_XDECREF(starts);
    Py_XDECREF(counts);
    Py_XDECREF(inverse);
    Py_XDECREF(inv_flat);
    return result;
}

static PyObject *f_unique_values(PyObject *m, PyObject *x) { return f_unique(U_VALUES, x); }
static PyObject *f_unique_counts(PyObject *m, PyObject *x) { return f_unique(U_COUNTS, x); }
static PyObject *f_unique_inverse(PyObject *m, PyObject *x) { return f_unique(U_INVERSE, x); }
static PyObject *f_unique_all(PyObject *m, PyObject *x) { return f_unique(U_ALL, x); }

/* ---- the namespace ---- */

#define KWFUNC(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef functions[] = {
    {"sort", KWFUNC(f_sort),
     "sort(x, /, axis=-1, kind=None, order=None, *, descending=False, stable=None) -> ndarray\n\n"
     "A sorted copy of x along axis (None: the flattened array), on x's device. Always stable; "
     "NaNs last (first when descending: the ascending order reversed, ties kept in order). "
     "kind= is accepted for NumPy's sake; order= must be None."},
    {"argsort", KWFUNC(f_argsort),
     "argsort(x, /, axis=-1, kind=None, order=None, *, descending=False, stable=None) -> int64 "
     "ndarray\n\nThe indices that sort x along axis, as sort orders it: equal elements keep "
     "their order, also when descending."},
    {"searchsorted", KWFUNC(f_searchsorted),
     "searchsorted(x1, x2, /, side='left', sorter=None) -> int64 ndarray\n\nWhere to insert "
     "each element of x2 in the sorted 1-D x1 (or x1[sorter]) to keep it sorted: the first "
     "place (side='left') or the last ('right'). Compares in NumPy's common dtype, NaN last. "
     "As NumPy, sorter's indices are not checked (one out of range reads x1's nearest end)."},
    {"unique_values", (PyCFunction)f_unique_values, METH_O,
     "unique_values(x, /) -> ndarray\n\nThe sorted distinct elements of x (flattened); each "
     "NaN is distinct."},
    {"unique_counts", (PyCFunction)f_unique_counts, METH_O,
     "unique_counts(x, /) -> (values, counts)\n\nThe distinct elements and how often each "
     "occurs."},
    {"unique_inverse", (PyCFunction)f_unique_inverse, METH_O,
     "unique_inverse(x, /) -> (values, inverse_indices)\n\nThe distinct elements, and for each "
     "element of x the index of its value (x's shape)."},
    {"unique_all", (PyCFunction)f_unique_all, METH_O,
     "unique_all(x, /) -> (values, indices, inverse_indices, counts)\n\nunique_counts and "
     "unique_inverse together, with the index of each value's first occurrence in x."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef methods[] = {
    {"sort", KWFUNC(m_sort),
     "sort(axis=-1, kind=None, order=None, *, descending=False, stable=None) -> None\n\nSorts "
     "the array in place along axis, as offload.sort."},
    {"argsort", KWFUNC(m_argsort),
     "argsort(axis=-1, kind=None, order=None, *, descending=False, stable=None) -> int64 "
     "ndarray: offload.argsort(self, ...)"},
    {NULL, NULL, 0, NULL},
};

int mod_sort_add_functions(PyObject *module) {
    static const char *names[4][2] = {
        {NULL, NULL},
        {"UniqueCountsResult", "values counts"},
        {"UniqueInverseResult", "values inverse_indices"},
        {"UniqueAllResult", "values indices inverse_indices counts"},
    };
    PyObject *collections = PyImport_ImportModule("collections");
    PyObject *namedtuple = collections ? PyObject_GetAttrString(collections, "namedtuple") : NULL;
    PyObject *kw = Py_BuildValue("{ss}", "module", "offload");
    int rc = namedtuple && kw ? 0 : -1;
    for (int i = 1; i < 4 && rc == 0; i++) {
        if (result_types[i]) continue;
        PyObject *args = Py_BuildValue("(ss)", names[i][0], names[i][1]);
        if (!args || !(result_types[i] = PyObject_Call(namedtuple, args, kw))) rc = -1;
        Py_XDECREF(args);
    }
    Py_XDECREF(collections);
    Py_XDECREF(namedtuple);
    Py_XDECREF(kw);
    if (rc < 0) return -1;
    if (mod_type_add_methods(&mod_ArrayType, methods) < 0) return -1;
    return PyModule_AddFunctions(module, functions);
}
