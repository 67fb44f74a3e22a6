/* offload.ndarray: an n-dimensional array in one device's memory -- its
 * memory, layout, transfers and Python type. The functions that make arrays
 * (asarray, zeros, ...) are mod_create.c's.
 *
 * Memory: an array holds a reference to an allocation object (mod_alloc) that
 * owns the device buffer; views (slices, .T, reshape) share it, so the device
 * memory goes when the last array using it does. An array of size 0 owns no
 * device memory at all (mod_alloc.buf is NULL).
 *
 * Layout is NumPy's: shape, strides in bytes (negative for reversed views),
 * and the byte offset of element [0,...,0]. Host data always goes through
 * NumPy arrays: uploads take NumPy's C-contiguous copy of the source; reads
 * of contiguous arrays land straight in a new NumPy array; a strided view
 * reads the byte span that covers it and lets NumPy pick the elements out.
 *
 * Strided copies, dtype casts, fills and assignments run as kernels: lib/'s,
 * handed over at import (mod_array_kernels) with the arithmetic and the
 * reductions, so that this file names nothing above core. Every device
 * transfer runs with the GIL released. */
#include "mod_core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const mod_array_kernels *kernels; /* lib/'s, from mod_array_init */

/* ---- allocations ---- */

struct mod_alloc {
    PyObject_HEAD
    ofl_device *dev;
    ofl_buffer *buf; /* owned; NULL for 0 bytes */
    PyObject *owner; /* foreign memory (mod_array_wrap): what keeps it alive; else NULL */
};

static void alloc_dealloc(mod_alloc *m) {
    ofl_buffer *buf = m->buf;
    if (buf) { /* ofl_free waits for the device's queue: not under the GIL */
        Py_BEGIN_ALLOW_THREADS
        ofl_free(buf);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(m->owner); /* after ofl_free: our queued work no longer uses the memory */
    PyObject_Free(m);
}

static PyTypeObject AllocType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload._Allocation",
    .tp_basicsize = sizeof(mod_alloc),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device memory shared by an array and its views.",
    .tp_dealloc = (destructor)alloc_dealloc,
};

static mod_alloc *alloc_new(ofl_device *dev, size_t bytes) {
    ofl_buffer *buf = NULL;
    if (bytes) {
        ofl_error err;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = ofl_alloc(dev, bytes, &buf, &err);
        Py_END_ALLOW_THREADS
        if (rc) {
            mod_raise(&err);
            return NULL;
        }
    }
    mod_alloc *m = PyObject_New(mod_alloc, &AllocType);
    if (!m) {
        ofl_free(buf);
        return NULL;
    }
    m->dev = dev;
    m->buf = buf;
    m->owner = NULL;
    return m;
}

/* ---- device transfers (n == 0 is a no-op, so empty arrays need no buffer) ---- */

static int dev_read(mod_array *a, Py_ssize_t off, void *dst, Py_ssize_t n) {
    if (n <= 0) return 0;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_read(a->mem->buf, (size_t)off, dst, (size_t)n, &err);
    Py_END_ALLOW_THREADS
    return rc ? (mod_raise(&err), -1) : 0;
}

static int dev_write(mod_array *a, Py_ssize_t off, const void *src, Py_ssize_t n) {
    if (n <= 0) return 0;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_write(a->mem->buf, (size_t)off, src, (size_t)n, &err);
    Py_END_ALLOW_THREADS
    return rc ? (mod_raise(&err), -1) : 0;
}

static int dev_copy(mod_array *dst, Py_ssize_t doff, mod_array *src, Py_ssize_t soff,
                    Py_ssize_t n) {
    if (n <= 0) return 0;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_copy(dst->mem->buf, (size_t)doff, src->mem->buf, (size_t)soff, (size_t)n, &err);
    Py_END_ALLOW_THREADS
    return rc ? (mod_raise(&err), -1) : 0;
}

/* ---- layout ---- */

static Py_ssize_t layout_size(int nd, const Py_ssize_t *shape) {
    Py_ssize_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
}

static Py_ssize_t array_size(const mod_array *a) { return layout_size(a->nd, a->shape); }

bool mod_array_is_c_contiguous(const mod_array *a) {
    Py_ssize_t expect = a->itemsize;
    if (array_size(a) == 0) return true;
    for (int i = a->nd - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->strides[i] != expect) return false;
        expect *= a->shape[i];
    }
    return true;
}

/* The bytes [lo, hi) of the buffer that hold the array's elements. */
static void array_span(const mod_array *a, Py_ssize_t *lo, Py_ssize_t *hi) {
    *lo = *hi = a->offset;
    for (int i = 0; i < a->nd; i++) {
        Py_ssize_t ext = a->strides[i] * (a->shape[i] - 1);
        if (ext < 0)
            *lo += ext;
        else
            *hi += ext;
    }
    *hi += a->itemsize;
}

ofl_device *mod_array_device(const mod_array *a) { return a->mem->dev; }
ofl_buffer *mod_array_buffer(const mod_array *a) { return a->mem->buf; }

/* A new array object over mem (which it references) with this layout. */
static mod_array *view_new(mod_alloc *mem, PyObject *dtype, int nd, const Py_ssize_t *shape,
                           const Py_ssize_t *strides, Py_ssize_t offset) {
    mod_array *a = PyObject_New(mod_array, &mod_ArrayType);
    if (!a) return NULL;
    a->mem = (mod_alloc *)Py_NewRef((PyObject *)mem);
    a->dtype = Py_NewRef(dtype);
    a->itemsize = mod_dtype_itemsize(dtype);
    a->nd = nd;
    a->offset = offset;
    a->weakreflist = NULL;
    for (int i = 0; i < nd; i++) /* not memcpy: a 0-d shape may come as NULL */
        a->shape[i] = shape[i], a->strides[i] = strides[i];
    return a;
}

PyObject *mod_array_view(mod_array *a, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
                         Py_ssize_t offset) {
    return (PyObject *)view_new(a->mem, a->dtype, nd, shape, strides, offset);
}

static void c_strides(int nd, const Py_ssize_t *shape, Py_ssize_t itemsize, Py_ssize_t *strides) {
    Py_ssize_t s = itemsize;
    for (int i = nd - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

PyObject *mod_array_new_empty(ofl_device *dev, PyObject *dtype, int nd, const Py_ssize_t *shape) {
    Py_ssize_t itemsize = mod_dtype_itemsize(dtype), n = itemsize, strides[MOD_MAXDIMS];
    if (itemsize == 0) /* a caller passed a dtype mod_dtype_new() did not return */
        return PyErr_Format(PyExc_SystemError, "offload: non-canonical dtype %R", dtype);
    if (nd > MOD_MAXDIMS)
        return PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions", MOD_MAXDIMS);
    for (int i = 0; i < nd; i++) {
        if (shape[i] < 0)
            return PyErr_Format(PyExc_ValueError, "negative dimensions are not allowed");
        if (shape[i] && n > PY_SSIZE_T_MAX / shape[i])
            return PyErr_Format(PyExc_ValueError, "array is too big: its size overflows");
        n *= shape[i];
    }
    if (layout_size(nd, shape) == 0) n = 0;
    mod_alloc *mem = alloc_new(dev, (size_t)n);
    if (!mem) return NULL;
    c_strides(nd, shape, itemsize, strides);
    mod_array *a = view_new(mem, dtype, nd, shape, strides, 0);
    Py_DECREF(mem);
    return (PyObject *)a;
}

PyObject *mod_array_wrap(ofl_buffer *buf, PyObject *owner, PyObject *dtype, int nd,
                         const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t offset) {
    mod_alloc *mem = PyObject_New(mod_alloc, &AllocType);
    if (!mem) {
        ofl_free(buf);
        return NULL;
    }
    mem->dev = ofl_buffer_device(buf);
    mem->buf = buf;
    mem->owner = Py_NewRef(owner);
    mod_array *a = view_new(mem, dtype, nd, shape, strides, offset);
    Py_DECREF(mem);
    return (PyObject *)a;
}

/* ---- NumPy helpers ---- */

/* numpy.empty(shape, dtype) */
static PyObject *np_empty(int nd, const Py_ssize_t *shape, PyObject *dtype) {
    PyObject *s = mod_int_tuple(nd, shape);
    PyObject *args = s ? PyTuple_Pack(2, s, dtype) : NULL;
    PyObject *r = args ? mod_np_call("empty", args, NULL) : NULL;
    Py_XDECREF(s);
    Py_XDECREF(args);
    return r;
}

static PyObject *np_bytes(Py_ssize_t n) /* numpy.empty(n, uint8) */
{
    PyObject *u8 = mod_dtype_find_borrowed('u', 1);
    return np_empty(1, &n, u8);
}

/* numpy.ndarray(shape, dtype, buffer=buf, offset=offset, strides=strides):
 * the array's elements inside a host copy of its covering span. */
static PyObject *np_strided(mod_array *a, PyObject *buf, Py_ssize_t offset) {
    PyObject *shape = mod_int_tuple(a->nd, a->shape), *strides = mod_int_tuple(a->nd, a->strides);
    PyObject *args = shape ? PyTuple_Pack(2, shape, a->dtype) : NULL;
    PyObject *kw = strides && args ? Py_BuildValue("{sOsnsO}", "buffer", buf, "offset", offset,
                                                   "strides", strides)
                                   : NULL;
    PyObject *r = kw ? mod_np_call("ndarray", args, kw) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

/* ---- device -> host ---- */

/* numpy.ndarray(shape, dtype, buffer, offset, strides) over a's mapped memory */
static PyObject *host_view(mod_array *a, void *p, bool write) {
    if (!p) return np_empty(a->nd, a->shape, a->dtype); /* no elements, no buffer */
    PyObject *mem = PyMemoryView_FromMemory(p, (Py_ssize_t)ofl_buffer_size(mod_array_buffer(a)),
                                            write ? PyBUF_WRITE : PyBUF_READ);
    PyObject *shape = mod_int_tuple(a->nd, a->shape), *strides = mod_int_tuple(a->nd, a->strides);
    PyObject *args = mem && shape ? PyTuple_Pack(2, shape, a->dtype) : NULL;
    PyObject *kw = args && strides ? Py_BuildValue("{s:O,s:n,s:O}", "buffer", mem, "offset",
                                                   a->offset, "strides", strides)
                                   : NULL;
    PyObject *view = kw ? mod_np_call("ndarray", args, kw) : NULL;
    Py_XDECREF(mem);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return view;
}

int mod_arrays_map_host(mod_array **a, const bool *write, int n, PyObject **views,
                        mod_host_map *maps) {
    ofl_buffer *bufs[MOD_MAP_MAX];
    bool wr[MOD_MAP_MAX];
    void *ptr[MOD_MAP_MAX];
    int m = 0, rc = 0;
    for (int i = 0; i < n; i++) {
        views[i] = NULL, maps[i] = (mod_host_map){mod_array_buffer(a[i]), NULL};
        if (maps[i].buf) bufs[m] = maps[i].buf, wr[m++] = write[i];
    }
    ofl_error err;
    Py_BEGIN_ALLOW_THREADS;
    rc = ofl_buffers_map(bufs, wr, ptr, m, &err);
    Py_END_ALLOW_THREADS;
    if (rc) {
        for (int i = 0; i < n; i++) maps[i].buf = NULL;
        mod_raise(&err);
        return -1;
    }
    for (int i = 0, k = 0; i < n; i++)
        if (maps[i].buf) maps[i].p = ptr[k++];
    for (int i = 0; i < n && rc == 0; i++)
        if (!(views[i] = host_view(a[i], maps[i].p, write[i]))) rc = -1;
    if (rc) {
        for (int i = 0; i < n; i++) {
            Py_CLEAR(views[i]);
            mod_array_unmap_host(&maps[i]);
        }
        return -1;
    }
    return 0;
}

int mod_array_unmap_host(mod_host_map *map) {
    if (!map->buf || !map->p) return 0;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = ofl_buffer_unmap(map->buf, map->p, &err);
    Py_END_ALLOW_THREADS;
    map->p = NULL;
    if (rc && !PyErr_Occurred()) mod_raise(&err);
    return rc ? -1 : 0;
}

PyObject *mod_array_asnumpy(mod_array *a) {
    if (mod_array_is_c_contiguous(a)) {
        PyObject *out = np_empty(a->nd, a->shape, a->dtype);
        Py_buffer view;
        if (!out || mod_np_buffer(out, &view, true) < 0) {
            Py_XDECREF(out);
            return NULL;
        }
        int rc = dev_read(a, a->offset, view.buf, view.len);
        PyBuffer_Release(&view);
        if (rc < 0) Py_CLEAR(out);
        return out;
    }
    /* strided: read the covering span, let NumPy pick the elements */
    Py_ssize_t lo, hi;
    array_span(a, &lo, &hi);
    PyObject *buf = np_bytes(hi - lo), *out = NULL;
    Py_buffer view;
    if (!buf || mod_np_buffer(buf, &view, true) < 0) {
        Py_XDECREF(buf);
        return NULL;
    }
    int rc = dev_read(a, lo, view.buf, view.len);
    PyBuffer_Release(&view);
    if (rc == 0) out = np_strided(a, buf, a->offset - lo);
    Py_DECREF(buf);
    /* a dense view (.T, [::-1]) keeps its NumPy strides; a sparse one is
     * compacted so the span's unused bytes are not kept alive */
    if (out && hi - lo > array_size(a) * a->itemsize) {
        PyObject *c = mod_call_method(out, "copy", NULL, NULL);
        Py_SETREF(out, c);
    }
    return out;
}

/* ---- host -> device ---- */

/* A C-contiguous NumPy array of a supported dtype holding obj (converted to
 * dtype when given). */
PyObject *mod_host_array(PyObject *obj, PyObject *dtype) {
    PyObject *args = PyTuple_Pack(1, obj);
    PyObject *kw = args ? Py_BuildValue("{ss}", "order", "C") : NULL;
    if (kw && dtype && PyDict_SetItemString(kw, "dtype", dtype) < 0) Py_CLEAR(kw);
    PyObject *arr = kw ? mod_np_call("asarray", args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    if (!arr || dtype) return arr;
    /* no dtype given: NumPy inferred it; accept it only if arrays support it
     * and convert a non-native byte order */
    PyObject *have = PyObject_GetAttrString(arr, "dtype");
    PyObject *want = have ? mod_dtype_new(have) : NULL;
    int same = want ? PyObject_RichCompareBool(have, want, Py_EQ) : -1;
    if (same == 0) {
        PyObject *cargs = PyTuple_Pack(1, want);
        PyObject *c = cargs ? mod_call_method(arr, "astype", cargs, NULL) : NULL;
        Py_XDECREF(cargs);
        Py_SETREF(arr, c);
    } else if (same < 0) {
        Py_CLEAR(arr);
    }
    Py_XDECREF(have);
    Py_XDECREF(want);
    return arr;
}

/* A new device array holding a NumPy array (made C-contiguous first if need be). */
static PyObject *upload(PyObject *arr, ofl_device *dev) {
    PyObject *host = mod_host_array(arr, NULL); /* arr itself when already fit */
    PyObject *dtype = host ? mod_dtype_from_array(host) : NULL;
    Py_buffer view;
    if (!dtype || mod_np_buffer(host, &view, false) < 0) {
        Py_XDECREF(host);
        Py_XDECREF(dtype);
        return NULL;
    }
    PyObject *a = NULL;
    if (view.ndim > MOD_MAXDIMS)
        PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions", MOD_MAXDIMS);
    else
        a = mod_array_new_empty(dev, dtype, view.ndim, view.shape);
    if (a && dev_write((mod_array *)a, 0, view.buf, view.len) < 0) Py_CLEAR(a);
    PyBuffer_Release(&view);
    Py_DECREF(host);
    Py_DECREF(dtype);
    return a;
}

PyObject *mod_array_from_host(PyObject *host, ofl_device *dev) { return upload(host, dev); }

/* A CPU device addresses the host's memory: a writable C-contiguous NumPy
 * array of a supported dtype is used where it lies (its owner kept alive by
 * the device array) rather than copied there and back. Read-only arrays are
 * copied, so that no kernel can write into memory the process may not.
 * 1 with *out, 0 when host cannot be used in place, -1 with an exception. */
static int over_host(PyObject *host, ofl_device *dev, PyObject **out) {
    *out = NULL;
    if (ofl_device_get_info(dev)->type != OFL_CPU || !mod_is_numpy_array(host)) return 0;
    PyObject *dtype = mod_dtype_from_array(host);
    Py_buffer view;
    if (!dtype || mod_np_buffer(host, &view, true) < 0) {
        Py_XDECREF(dtype);
        PyErr_Clear(); /* not ours to use in place: a copy will say what is wrong, if anything */
        return 0;
    }
    /* The buffer spans from the array's page to its end rounded to 64 bytes
     * (what Intel's runtime takes in place; neither bound leaves the array's
     * first or last page); the array sits at an offset inside it, and only
     * its own bytes are ever written back (mod_array_sync_host). */
    uintptr_t start = (uintptr_t)view.buf, base = start & ~(uintptr_t)4095;
    size_t span = (((size_t)(start - base) + (size_t)view.len + 63) & ~(size_t)63);
    int rc = 0;
    ofl_buffer *buf = NULL;
    ofl_error err;
    if (view.len > 0 && view.ndim <= MOD_MAXDIMS &&
        ofl_buffer_wrap_host(dev, (void *)base, span, &buf, &err) == 0) {
        Py_ssize_t strides[MOD_MAXDIMS];
        for (int d = view.ndim - 1; d >= 0; d--)
            strides[d] = d == view.ndim - 1 ? view.itemsize : strides[d + 1] * view.shape[d + 1];
        *out = mod_array_wrap(buf, host, dtype, view.ndim, view.shape, strides,
                              (Py_ssize_t)(start - base));
        rc = *out ? 1 : -1;
    }
    PyBuffer_Release(&view);
    Py_DECREF(dtype);
    return rc;
}

PyObject *mod_array_for_device(PyObject *host, ofl_device *dev, bool *in_place) {
    PyObject *a = NULL;
    int rc = over_host(host, dev, &a);
    *in_place = rc == 1;
    return rc == 0 ? mod_array_from_host(host, dev) : a;
}

int mod_array_sync_host(mod_array *a) {
    ofl_error err;
    size_t bytes = (size_t)(array_size(a) * a->itemsize); /* C-contiguous: mod_array_in_place's */
    if (ofl_buffer_sync_host(a->mem->buf, (size_t)a->offset, bytes, &err) == 0) return 0;
    mod_raise(&err);
    return -1;
}

bool mod_array_is_in_place(mod_array *a) { return ofl_buffer_host(a->mem->buf) != NULL; }

/* The default floating dtype of a device, as dpctl: float64 where it computes in it. */
static PyObject *default_float_borrowed(ofl_device *dev) {
    return mod_dtype_find_borrowed('f', ofl_device_get_info(dev)->has_fp64 ? 8 : 4);
}

/* Writes elem (itemsize bytes) into every element of a fresh C-contiguous
 * array, a chunk at a time: no host copy of the whole array. */
int mod_array_fill(mod_array *a, const void *elem) {
    Py_ssize_t total = array_size(a) * a->itemsize;
    if (total == 0) return 0;
    Py_ssize_t chunk = (1 << 20) / a->itemsize * a->itemsize;
    chunk = chunk < total ? chunk : total;
    char *p = PyMem_Malloc((size_t)chunk);
    if (!p) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < chunk; i += a->itemsize) memcpy(p + i, elem, (size_t)a->itemsize);
    int rc = 0;
    for (Py_ssize_t off = 0; rc == 0 && off < total; off += chunk)
        rc = dev_write(a, a->offset + off, p, chunk < total - off ? chunk : total - off);
    PyMem_Free(p);
    return rc;
}

/* ---- conversions between arrays ---- */

/* A C-contiguous copy of a on dev (its own device or another): one device
 * copy when a is contiguous, else a gather kernel on a's device first. */
PyObject *mod_array_copy_to(mod_array *a, ofl_device *dev) {
    if (!mod_array_is_c_contiguous(a)) {
        PyObject *packed = kernels->copy(a, NULL);
        if (!packed || dev == a->mem->dev) return packed;
        PyObject *c = mod_array_copy_to((mod_array *)packed, dev);
        Py_DECREF(packed);
        return c;
    }
    PyObject *c = mod_array_new_empty(dev, a->dtype, a->nd, a->shape);
    if (c && dev_copy((mod_array *)c, 0, a, a->offset, array_size(a) * a->itemsize) < 0)
        Py_CLEAR(c);
    return c;
}

/* a as dtype on dev: converted by a kernel on a's device, then moved. */
PyObject *mod_array_cast_to(mod_array *a, PyObject *dtype, ofl_device *dev) {
    PyObject *c = kernels->copy(a, dtype);
    if (!c || dev == a->mem->dev) return c;
    PyObject *moved = mod_array_copy_to((mod_array *)c, dev);
    Py_DECREF(c);
    return moved;
}

int mod_parse_copy(PyObject *copy) {
    if (copy == Py_None) return -1;
    int t = PyObject_IsTrue(copy);
    return t < 0 ? -2 : t;
}

PyObject *mod_copy_needed_error(const char *what) {
    PyErr_Format(PyExc_ValueError,
                 "copy=False, but %s needs a copy; pass copy=None to copy only when needed", what);
    return NULL;
}

/* ---- indexing ---- */

typedef struct {
    int nd;
    Py_ssize_t offset, shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
} layout;

static int index_error(PyObject *item) {
    PyErr_Format(PyExc_IndexError,
                 "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                 "integer or boolean arrays are valid indices; got %.100s",
                 Py_TYPE(item)->tp_name);
    return -1;
}

/* The layout key selects from a: 1 when it names a single element (an integer
 * for every axis), 0 for a view, -1 on error. NumPy's rules for basic indexing. */
static int index_layout(const mod_array *a, PyObject *key, layout *out) {
    PyObject *one[1] = {key};
    PyObject **items = one;
    Py_ssize_t n = 1;
    if (PyTuple_Check(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    int used = 0, ellipses = 0;
    bool all_int = true;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *it = items[k];
        if (it == Py_Ellipsis)
            ellipses++, all_int = false;
        else if (it == Py_None)
            all_int = false;
        else if (PySlice_Check(it))
            used++, all_int = false;
        else if (PyIndex_Check(it) && !PyBool_Check(it)) /* also NumPy integers */
            used++;
        else
            return index_error(it);
    }
    if (ellipses > 1) {
        PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
        return -1;
    }
    if (used > a->nd) {
        PyErr_Format(PyExc_IndexError,
                     "too many indices for array: array is %d-dimensional, but %d were indexed",
                     a->nd, used);
        return -1;
    }
    int single = all_int && used == a->nd, dim = 0;
    out->nd = 0;
    out->offset = a->offset;
    for (Py_ssize_t k = 0; k <= n; k++) {
        PyObject *it = k < n ? items[k] : Py_Ellipsis; /* trailing axes: an implied ... */
        if (k == n && ellipses) break;
        if (it == Py_Ellipsis || it == Py_None) {
            int take = it == Py_None ? 0 : a->nd - used;
            if (out->nd + (it == Py_None ? 1 : take) > MOD_MAXDIMS) {
                PyErr_Format(PyExc_IndexError, "arrays have at most %d dimensions", MOD_MAXDIMS);
                return -1;
            }
            if (it == Py_None) {
                out->shape[out->nd] = 1, out->strides[out->nd++] = 0;
            }
            for (int j = 0; j < take; j++, dim++, used++)
                out->shape[out->nd] = a->shape[dim], out->strides[out->nd++] = a->strides[dim];
        } else if (PySlice_Check(it)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(it, &start, &stop, &step) < 0) return -1;
            Py_ssize_t len = PySlice_AdjustIndices(a->shape[dim], &start, &stop, step);
            if (len == 0) /* as NumPy: an empty slice keeps the axis' own stride */
                start = 0, step = 1;
            out->offset += start * a->strides[dim];
            out->shape[out->nd] = len;
            out->strides[out->nd++] = a->strides[dim] * step;
            dim++;
        } else {
            Py_ssize_t i = PyNumber_AsSsize_t(it, PyExc_IndexError);
            if (i == -1 && PyErr_Occurred()) {
                if (!PyErr_ExceptionMatches(PyExc_TypeError)) /* an array's __index__ refusing */
                    return -1;
                PyErr_Clear();
                return index_error(it);
            }
            Py_ssize_t size = a->shape[dim];
            if (i < -size || i >= size) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for axis %d with size %zd", i, dim, size);
                return -1;
            }
            out->offset += (i < 0 ? i + size : i) * a->strides[dim];
            dim++;
        }
    }
    return single;
}

static mod_array *view_of(mod_array *a, const layout *l) {
    return view_new(a->mem, a->dtype, l->nd, l->shape, l->strides, l->offset);
}

/* One element, read from the device, as a NumPy scalar (what NumPy returns). */
static PyObject *read_scalar(mod_array *a, Py_ssize_t offset) {
    PyObject *host = np_empty(0, NULL, a->dtype);
    Py_buffer view;
    if (!host || mod_np_buffer(host, &view, true) < 0) {
        Py_XDECREF(host);
        return NULL;
    }
    int rc = dev_read(a, offset, view.buf, a->itemsize);
    PyBuffer_Release(&view);
    PyObject *key = rc < 0 ? NULL : PyTuple_New(0);
    PyObject *r = key ? PyObject_GetItem(host, key) : NULL; /* host[()]: the scalar */
    Py_XDECREF(key);
    Py_DECREF(host);
    return r;
}

/* Whether key asks for advanced indexing: an array (ours or NumPy's), a list
 * or a boolean, alone or in a tuple. Those are lib's (kernels->getitem). */
static bool is_advanced_item(PyObject *it) {
    return mod_array_check(it) || mod_is_numpy_array(it) || PyList_Check(it) || PyBool_Check(it) ||
           (mod_is_numpy_scalar(it) && !PyIndex_Check(it)); /* np.bool_ (np.int64 is an index) */
}

static bool is_advanced(PyObject *key) {
    if (!PyTuple_Check(key)) return is_advanced_item(key);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(key); k++)
        if (is_advanced_item(PyTuple_GET_ITEM(key, k))) return true;
    return false;
}

static PyObject *array_subscript(mod_array *a, PyObject *key) {
    if (is_advanced(key)) return kernels->getitem(a, key);
    layout l;
    int single = index_layout(a, key, &l);
    if (single < 0) return NULL;
    /* an element is a 0-d array, as the array API (and CuPy) say: it stays on the
     * device; float(x[i]), x[i].item() or printing it reads it */
    return (PyObject *)view_of(a, &l);
}

/* A C-contiguous NumPy array of the view's own dtype and shape goes up from
 * its buffer as it is: no staging copy (CuPy's set() does the same).
 * 1 done, 0 not this case, -1 error. */
static int assign_from_buffer(mod_array *v, PyObject *value) {
    if (!mod_is_numpy_array(value) || !mod_array_is_c_contiguous(v)) return 0;
    PyObject *dtype = PyObject_GetAttrString(value, "dtype");
    PyObject *shape = PyObject_GetAttrString(value, "shape");
    PyObject *want = mod_int_tuple(v->nd, v->shape);
    int same = dtype && shape && want && PyObject_RichCompareBool(dtype, v->dtype, Py_EQ) == 1 &&
               PyObject_RichCompareBool(shape, want, Py_EQ) == 1;
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    Py_XDECREF(want);
    if (PyErr_Occurred()) return -1;
    Py_buffer view;
    if (!same || PyObject_GetBuffer(value, &view, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear(); /* e.g. Fortran order: the general path handles it */
        return 0;
    }
    int rc = 0;
    if (view.len == array_size(v) * v->itemsize)
        rc = dev_write(v, v->offset, view.buf, view.len) < 0 ? -1 : 1;
    PyBuffer_Release(&view);
    return rc;
}

static bool is_scalar(PyObject *o) {
    return PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o) ||
           mod_is_numpy_scalar(o);
}

/* value as a NumPy scalar of dtype, converted as NumPy converts on
 * assignment: 3.7 into int8 is 3, 300 raises OverflowError. */
static PyObject *scalar_as(PyObject *value, PyObject *dtype) {
    PyObject *args = PyTuple_Pack(1, value);
    PyObject *kw = args ? Py_BuildValue("{sO}", "dtype", dtype) : NULL;
    PyObject *arr = kw ? mod_np_call("asarray", args, kw) : NULL;
    PyObject *key = arr ? PyTuple_New(0) : NULL;
    PyObject *r = key ? PyObject_GetItem(arr, key) : NULL; /* arr[()]: the scalar */
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(arr);
    Py_XDECREF(key);
    return r;
}

/* v[...] = value, NumPy's casts and broadcasting, by lib's kernels
 * (kernels->assign): nothing reads v's memory back to the host. A scalar is
 * converted on the host and filled in; an offload array on another device
 * is moved to v's first; host data (NumPy arrays, lists) goes up once --
 * straight into a contiguous v of its own dtype and shape, else as a
 * temporary array a kernel then copies in. */
int mod_array_assign(mod_array *v, PyObject *value) {
    if (is_scalar(value)) {
        PyObject *s = scalar_as(value, v->dtype);
        int rc = !s ? -1 : array_size(v) ? kernels->assign(v, s) : 0;
        Py_XDECREF(s);
        return rc;
    }
    if (mod_array_check(value)) {
        mod_array *s = (mod_array *)value;
        if (s->mem->dev == v->mem->dev) return kernels->assign(v, value);
        PyObject *moved = mod_array_copy_to(s, v->mem->dev);
        int rc = moved ? kernels->assign(v, moved) : -1;
        Py_XDECREF(moved);
        return rc;
    }
    int direct = assign_from_buffer(v, value);
    if (direct) return direct < 0 ? -1 : 0;
    PyObject *host = mod_host_array(value, v->dtype);
    PyObject *up = host ? upload(host, v->mem->dev) : NULL;
    int rc = up ? kernels->assign(v, up) : -1;
    Py_XDECREF(host);
    Py_XDECREF(up);
    return rc;
}

static int array_ass_subscript(mod_array *a, PyObject *key, PyObject *value) {
    if (!value) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    if (is_advanced(key)) return kernels->setitem(a, key, value);
    layout l;
    if (index_layout(a, key, &l) < 0) return -1;
    mod_array *v = view_of(a, &l);
    if (!v) return -1;
    int rc = mod_array_assign(v, value);
    Py_DECREF(v);
    return rc;
}

static Py_ssize_t array_length(mod_array *a) {
    if (a->nd == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return a->shape[0];
}

static PyObject *array_item(mod_array *a, Py_ssize_t i) /* for iteration */
{
    PyObject *k = PyLong_FromSsize_t(i);
    PyObject *r = k ? array_subscript(a, k) : NULL;
    Py_XDECREF(k);
    return r;
}

static PyObject *array_iter(mod_array *a) {
    if (a->nd == 0) return PyErr_Format(PyExc_TypeError, "iteration over a 0-d array");
    return PySeqIter_New((PyObject *)a);
}

/* ---- the ndarray type ---- */

static void array_dealloc(mod_array *a) {
    if (a->weakreflist) PyObject_ClearWeakRefs((PyObject *)a);
    Py_XDECREF(a->dtype);
    Py_XDECREF(a->mem);
    PyObject_Free(a);
}

static PyObject *array_repr(mod_array *a) {
    PyObject *host = mod_array_asnumpy(a);
    if (!host) return NULL;
    PyObject *args = PyTuple_Pack(1, host);
    PyObject *kw = Py_BuildValue("{ssss}", "separator", ", ", "prefix", "ndarray(");
    PyObject *body = args && kw ? mod_np_call("array2string", args, kw) : NULL;
    PyObject *r = NULL;
    if (body) {
        const ofl_device_info *in = ofl_device_get_info(a->mem->dev);
        PyObject *shape = array_size(a) == 0 && a->nd != 1 ? mod_int_tuple(a->nd, a->shape) : NULL;
        if (shape) /* NumPy names the shape of an empty array, which [] does not show */
            r = PyUnicode_FromFormat("ndarray(%U, shape=%R, dtype=%s, device=%s)", body, shape,
                                     mod_dtype_name(a->dtype), in->filter);
        else if (!PyErr_Occurred())
            r = PyUnicode_FromFormat("ndarray(%U, dtype=%s, device=%s)", body,
                                     mod_dtype_name(a->dtype), in->filter);
        Py_XDECREF(shape);
    }
    Py_DECREF(host);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(body);
    return r;
}

static PyObject *array_str(mod_array *a) {
    PyObject *host = mod_array_asnumpy(a);
    PyObject *r = host ? PyObject_Str(host) : NULL;
    Py_XDECREF(host);
    return r;
}

/* bool(x), int(x), float(x), complex(x), operator.index(x): NumPy 2's rules,
 * which need at most one element -- only that element is read. */
static PyObject *one_element(mod_array *a, bool any_shape, bool integer) {
    const char *name = mod_dtype_name(a->dtype);
    bool integral = !strncmp(name, "int", 3) || !strncmp(name, "uint", 4);
    if (integer && (!integral || a->nd != 0))
        return PyErr_Format(PyExc_TypeError,
                            "only integer scalar arrays can be converted to a scalar index");
    if (!any_shape && a->nd != 0)
        return PyErr_Format(PyExc_TypeError,
                            "only 0-dimensional arrays can be converted to Python scalars");
    Py_ssize_t n = array_size(a);
    if (n != 1)
        return PyErr_Format(PyExc_ValueError,
                            n ? "The truth value of an array with more than one element is "
                                "ambiguous. Use a.any() or a.all()"
                              : "The truth value of an empty array is ambiguous. Use `array.size "
                                "> 0` to check that an array is not empty.");
    Py_ssize_t offset = a->offset; /* the one element: its index is 0 on every axis */
    return read_scalar(a, offset);
}
static PyObject *convert(mod_array *a, PyObject *(*to)(PyObject *), bool integer) {
    PyObject *e = one_element(a, false, integer);
    PyObject *r = e ? to(e) : NULL;
    Py_XDECREF(e);
    return r;
}
static PyObject *array_int(mod_array *a) { return convert(a, PyNumber_Long, false); }
static PyObject *array_float(mod_array *a) { return convert(a, PyNumber_Float, false); }
static PyObject *array_index(mod_array *a) { return convert(a, PyNumber_Index, true); }
static int array_bool(mod_array *a) {
    PyObject *e = one_element(a, true, false);
    int r = e ? PyObject_IsTrue(e) : -1;
    Py_XDECREF(e);
    return r;
}
static PyObject *m_complex(mod_array *a, PyObject *unused) {
    PyObject *e = one_element(a, false, false);
    PyObject *r = e ? PyObject_CallOneArg((PyObject *)&PyComplex_Type, e) : NULL;
    Py_XDECREF(e);
    return r;
}

/* item(*index): one element as a Python scalar, as NumPy's method: no
 * index for an array of one element, else an int (C order) or one int per axis. */
static PyObject *m_item(mod_array *a, PyObject *args) {
    PyObject *e = NULL;
    Py_ssize_t n = array_size(a), nargs = PyTuple_GET_SIZE(args);
    if (nargs == 0) {
        if (n != 1)
            return PyErr_Format(PyExc_ValueError,
                                "can only convert an array of size 1 to a Python scalar");
        e = read_scalar(a, a->offset);
    } else if (nargs == 1 && a->nd != 1 && !PyTuple_Check(PyTuple_GET_ITEM(args, 0))) {
        /* a flat index, in C order */
        Py_ssize_t i = PyNumber_AsSsize_t(PyTuple_GET_ITEM(args, 0), PyExc_IndexError);
        if (i == -1 && PyErr_Occurred()) return NULL;
        if (i < -n || i >= n)
            return PyErr_Format(PyExc_IndexError, "index %zd is out of bounds for size %zd", i, n);
        Py_ssize_t offset = a->offset, rest = i < 0 ? i + n : i;
        for (int d = a->nd - 1; d >= 0; d--) {
            offset += (rest % a->shape[d]) * a->strides[d];
            rest /= a->shape[d];
        }
        e = read_scalar(a, offset);
    } else {
        layout l;
        int single = index_layout(a, nargs == 1 ? PyTuple_GET_ITEM(args, 0) : args, &l);
        if (single < 0) return NULL;
        if (!single) return PyErr_Format(PyExc_ValueError, "incorrect number of indices for array");
        e = read_scalar(a, l.offset);
    }
    PyObject *r = e ? PyObject_CallMethod(e, "item", NULL) : NULL;
    Py_XDECREF(e);
    return r;
}

static PyObject *get_shape(mod_array *a, void *c) { return mod_int_tuple(a->nd, a->shape); }
static PyObject *get_strides(mod_array *a, void *c) { return mod_int_tuple(a->nd, a->strides); }
static PyObject *get_dtype(mod_array *a, void *c) { return Py_NewRef(a->dtype); }
static PyObject *get_ndim(mod_array *a, void *c) { return PyLong_FromLong(a->nd); }
static PyObject *get_size(mod_array *a, void *c) { return PyLong_FromSsize_t(array_size(a)); }
static PyObject *get_itemsize(mod_array *a, void *c) { return PyLong_FromSsize_t(a->itemsize); }
static PyObject *get_nbytes(mod_array *a, void *c) {
    return PyLong_FromSsize_t(array_size(a) * a->itemsize);
}
static PyObject *get_device(mod_array *a, void *c) { return mod_device_new(a->mem->dev); }
static PyObject *get_usm_type(mod_array *a, void *c) { return PyUnicode_FromString("device"); }

static PyObject *get_T(mod_array *a, void *c) {
    layout l = {.nd = a->nd, .offset = a->offset};
    for (int i = 0; i < a->nd; i++)
        l.shape[i] = a->shape[a->nd - 1 - i], l.strides[i] = a->strides[a->nd - 1 - i];
    return (PyObject *)view_of(a, &l);
}

/* The array API's matrix transpose: the last two axes swapped, a view. */
static PyObject *get_mT(mod_array *a, void *c) {
    if (a->nd < 2)
        return PyErr_Format(PyExc_ValueError, "matrix transpose with ndim < 2 is undefined");
    layout l = {.nd = a->nd, .offset = a->offset};
    for (int i = 0; i < a->nd; i++) l.shape[i] = a->shape[i], l.strides[i] = a->strides[i];
    l.shape[a->nd - 2] = a->shape[a->nd - 1], l.strides[a->nd - 2] = a->strides[a->nd - 1];
    l.shape[a->nd - 1] = a->shape[a->nd - 2], l.strides[a->nd - 1] = a->strides[a->nd - 2];
    return (PyObject *)view_of(a, &l);
}

static PyGetSetDef array_getset[] = {
    {"shape", (getter)get_shape, NULL, "tuple of dimensions", NULL},
    {"dtype", (getter)get_dtype, NULL, "element type (a numpy.dtype)", NULL},
    {"ndim", (getter)get_ndim, NULL, "number of dimensions", NULL},
    {"size", (getter)get_size, NULL, "number of elements", NULL},
    {"itemsize", (getter)get_itemsize, NULL, "bytes per element", NULL},
    {"nbytes", (getter)get_nbytes, NULL, "bytes of the elements (size * itemsize)", NULL},
    {"strides", (getter)get_strides, NULL, "bytes to step in each dimension, as NumPy's", NULL},
    {"device", (getter)get_device, NULL, "the Device the data lives on", NULL},
    {"usm_type", (getter)get_usm_type, NULL, "'device': memory of the device, not shared", NULL},
    {"T", (getter)get_T, NULL, "view with the axes reversed", NULL},
    {"mT", (getter)get_mT, NULL, "view with the last two axes swapped (stacks of matrices)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *m_asnumpy(mod_array *a, PyObject *unused) { return mod_array_asnumpy(a); }

static PyObject *m_copy(mod_array *a, PyObject *unused) {
    return mod_array_copy_to(a, a->mem->dev);
}

static PyObject *m_tolist(mod_array *a, PyObject *unused) {
    PyObject *host = mod_array_asnumpy(a);
    PyObject *r = host ? mod_call_method(host, "tolist", NULL, NULL) : NULL;
    Py_XDECREF(host);
    return r;
}

/* to_device(device, /, *, stream=None): the array itself when already there. */
static PyObject *m_to_device(mod_array *a, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "stream", NULL};
    PyObject *device, *stream = Py_None;
    ofl_device *dev;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$O:to_device", kwlist, &device, &stream) ||
        mod_device_resolve(device, &dev) < 0)
        return NULL;
    if (stream != Py_None)
        return PyErr_Format(PyExc_ValueError, "to_device: streams are not supported; each device "
                                              "has one in-order queue");
    return dev == a->mem->dev ? Py_NewRef(a) : mod_array_copy_to(a, dev);
}

static PyObject *m_array(mod_array *a, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:__array__", kwlist, &dtype, &copy)) return NULL;
    int c = mod_parse_copy(copy);
    if (c == -2) return NULL;
    if (c == 0) return mod_copy_needed_error("moving device data to NumPy");
    PyObject *host = mod_array_asnumpy(a);
    if (!host || dtype == Py_None) return host;
    PyObject *cargs = PyTuple_Pack(1, dtype);
    PyObject *ckw = Py_BuildValue("{sO}", "copy", Py_False);
    PyObject *r = cargs && ckw ? mod_call_method(host, "astype", cargs, ckw) : NULL;
    Py_DECREF(host);
    Py_XDECREF(cargs);
    Py_XDECREF(ckw);
    return r;
}

/* Shape from one argument (an int or a sequence of ints) or several ints. */
int mod_parse_shape(PyObject *obj, int *nd, Py_ssize_t *shape) {
    if (PyIndex_Check(obj) && !PySequence_Check(obj)) { /* an int, not a NumPy array */
        *nd = 1;
        shape[0] = PyNumber_AsSsize_t(obj, PyExc_ValueError);
        return shape[0] == -1 && PyErr_Occurred() ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(obj, "shape must be an int or a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MOD_MAXDIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions", MOD_MAXDIMS);
        return -1;
    }
    *nd = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        shape[i] = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i), PyExc_ValueError);
        if (shape[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* astype(dtype, /, *, copy=True, device=None): converted by a kernel on the
 * array's device, then moved; the array itself when nothing changes and
 * copy is false. */
static PyObject *m_astype(mod_array *a, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dtype", "copy", "device", NULL};
    PyObject *spec, *copy = Py_True, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O:astype", kwlist, &spec, &copy, &device))
        return NULL;
    int c = PyObject_IsTrue(copy);
    ofl_device *dev = a->mem->dev;
    if (c < 0 || (device != Py_None && mod_device_resolve(device, &dev) < 0)) return NULL;
    PyObject *dtype = mod_dtype_new(spec);
    if (!dtype) return NULL;
    PyObject *r = dtype != a->dtype         ? mod_array_cast_to(a, dtype, dev)
                  : c || dev != a->mem->dev ? mod_array_copy_to(a, dev)
                                            : Py_NewRef(a);
    Py_DECREF(dtype);
    return r;
}

/* fill(value): NumPy's method -- every element set to a scalar, by kernel. */
static PyObject *m_fill(mod_array *a, PyObject *value) {
    PyObject *v = NULL;
    if (mod_array_check(value) ? ((mod_array *)value)->nd == 0 : is_scalar(value))
        v = Py_NewRef(value);
    else if (mod_is_numpy_array(value)) { /* a 0-d one: its scalar */
        PyObject *key = PyTuple_New(0);
        v = key ? PyObject_GetItem(value, key) : NULL;
        Py_XDECREF(key);
        if (!v && PyErr_ExceptionMatches(PyExc_IndexError)) PyErr_Clear();
        if (v && !is_scalar(v)) Py_CLEAR(v);
    }
    if (!v) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "setting an array element with a sequence.");
        return NULL;
    }
    int rc = mod_array_assign(a, v);
    Py_DECREF(v);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef array_methods[] = {
    {"asnumpy", (PyCFunction)m_asnumpy, METH_NOARGS, "asnumpy() -> numpy.ndarray: a host copy"},
    {"copy", (PyCFunction)m_copy, METH_NOARGS,
     "copy() -> ndarray: a C-contiguous copy on the same device"},
    {"to_device", MOD_KWFUNC(m_to_device),
     "to_device(device, /, *, stream=None) -> ndarray\n\nThe array on another device (itself if "
     "already there)."},
    {"tolist", (PyCFunction)m_tolist, METH_NOARGS, "tolist() -> nested lists of Python scalars"},
    {"item", (PyCFunction)m_item, METH_VARARGS,
     "item(*index) -> a Python scalar: the array's one element, or the element at index (a "
     "flat index in C order, or one int per axis); reads that element from the device"},
    {"astype", MOD_KWFUNC(m_astype),
     "astype(dtype, /, copy=True, *, device=None) -> ndarray\n\nThe array converted to dtype "
     "on its device (then moved to device, if given); itself when nothing changes and copy is "
     "False."},
    {"fill", (PyCFunction)m_fill, METH_O,
     "fill(value) -> None: sets every element to the scalar value (cast as NumPy casts it)"},
    {"__complex__", (PyCFunction)m_complex, METH_NOARGS,
     "__complex__() -> complex: the element of a 0-d array"},
    {"__array__", MOD_KWFUNC(m_array),
     "__array__(dtype=None, copy=None) -> numpy.ndarray (always a copy)"},
    {NULL, NULL, 0, NULL},
};

/* ---- construction from Python arguments ---- */

PyObject *mod_array_create(PyObject *shape_arg, PyObject *dtype_arg, PyObject *device_arg) {
    int nd;
    Py_ssize_t shape[MOD_MAXDIMS];
    ofl_device *dev;
    if (mod_parse_shape(shape_arg, &nd, shape) < 0 || mod_device_resolve(device_arg, &dev) < 0)
        return NULL;
    PyObject *dtype =
        dtype_arg == Py_None ? Py_NewRef(default_float_borrowed(dev)) : mod_dtype_new(dtype_arg);
    PyObject *a = dtype ? mod_array_new_empty(dev, dtype, nd, shape) : NULL;
    Py_XDECREF(dtype);
    return a;
}

static PyObject *array_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    PyObject *shape, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:ndarray", kwlist, &shape, &dtype, &device))
        return NULL;
    return mod_array_create(shape, dtype, device);
}

static PyMappingMethods array_as_mapping = {
    .mp_length = (lenfunc)array_length,
    .mp_subscript = (binaryfunc)array_subscript,
    .mp_ass_subscript = (objobjargproc)array_ass_subscript,
};

static PySequenceMethods array_as_sequence = {
    .sq_length = (lenfunc)array_length,
    .sq_item = (ssizeargfunc)array_item,
};

static PyNumberMethods array_as_number = {
    .nb_bool = (inquiry)array_bool,
    .nb_int = (unaryfunc)array_int,
    .nb_float = (unaryfunc)array_float,
    .nb_index = (unaryfunc)array_index,
};

PyTypeObject mod_ArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.ndarray",
    .tp_basicsize = sizeof(mod_array),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ndarray(shape, dtype=None, device=None)\n\nAn n-dimensional array in a device's "
              "memory (uninitialised when made this way; see asarray, zeros, ...).",
    .tp_new = array_tp_new,
    .tp_dealloc = (destructor)array_dealloc,
    .tp_repr = (reprfunc)array_repr,
    .tp_str = (reprfunc)array_str,
    .tp_as_number = &array_as_number,
    .tp_as_sequence = &array_as_sequence,
    .tp_as_mapping = &array_as_mapping,
    .tp_iter = (getiterfunc)array_iter,
    .tp_weaklistoffset = offsetof(mod_array, weakreflist),
    .tp_methods = array_methods,
    .tp_getset = array_getset,
};

int mod_array_init(const mod_array_kernels *k) {
    kernels = k;
    k->fill_slots(&mod_ArrayType);
    if (PyType_Ready(&AllocType) < 0 || PyType_Ready(&mod_ArrayType) < 0) return -1;
    return mod_type_add_methods(&mod_ArrayType, k->methods);
}
