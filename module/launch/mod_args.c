/* mod_args: the one place Python arguments become a kernel's parameters, in
 * the order jit.h declares (the kernel-argument ABI): typed for the JIT,
 * placed on one device (compute follows data), NumPy arrays copied there and
 * back, and packed for ofl_launch. Sized from the argument count. */
#include <string.h>

#include "mod_launch.h"

static PyObject *dtype_objs[JIT_NDTYPES]; /* canonical numpy.dtype per jit dtype, borrowed */

/* At the first use: the dtypes exist once the module is imported. */
static void init_types(void) {
    if (dtype_objs[0]) return;
    static const char kinds[JIT_NDTYPES] = {'b', 'i', 'i', 'i', 'i', 'u', 'u',
                                            'u', 'u', 'f', 'f', 'c', 'c'};
    for (int d = 0; d < JIT_NDTYPES; d++)
        dtype_objs[d] = mod_dtype_find_borrowed(kinds[d], jit_dtype_size(d));
}

static int dtype_of(PyObject *dtype) {
    for (int d = 0; d < JIT_NDTYPES; d++)
        if (dtype_objs[d] == dtype) return d;
    PyObject *canon = mod_dtype_new(dtype); /* byte-swapped or an alias */
    if (!canon) {
        PyErr_Clear();
        return -1;
    }
    int r = -1;
    for (int d = 0; d < JIT_NDTYPES; d++)
        if (dtype_objs[d] == canon) r = d;
    Py_DECREF(canon);
    return r;
}

static int numpy_scalar_type(PyObject *o, jit_type *t) {
    PyObject *dt = PyObject_GetAttrString(o, "dtype");
    int d = dt ? dtype_of(dt) : -1;
    Py_XDECREF(dt);
    PyErr_Clear();
    if (d < 0) return -1;
    *t = jit_scalar((jit_dtype)d);
    return 0;
}

int mod_arg_type(PyObject *o, int i, jit_type *t) {
    init_types();
    if (mod_array_check(o)) {
        mod_array *a = (mod_array *)o;
        int d = dtype_of(a->dtype);
        if (d < 0 || a->nd < 1 || a->nd > 3) {
            PyErr_Format(PyExc_TypeError,
                         "argument %d: kernels take arrays of 1 to 3 dimensions of bool, "
                         "int8-64, uint8-64, float32, float64, complex64 or complex128, not a "
                         "%d-D %s array",
                         i + 1, a->nd, mod_dtype_name(a->dtype));
            return -1;
        }
        *t = jit_array((jit_dtype)d, a->nd,
                       mod_array_is_c_contiguous(a) ? JIT_LAYOUT_C : JIT_LAYOUT_ANY);
        return 0;
    }
    /* exact checks: numpy.float64 is a float subclass, but strongly typed */
    if (PyBool_Check(o)) {
        *t = jit_scalar(JIT_BOOL);
        return 0;
    }
    if (PyLong_CheckExact(o)) {
        *t = jit_weak_int();
        return 0;
    }
    if (PyFloat_CheckExact(o)) {
        *t = jit_weak_float();
        return 0;
    }
    if (PyComplex_CheckExact(o)) {
        *t = jit_weak_complex();
        return 0;
    }
    if (mod_is_numpy_array(o)) {
        PyObject *dt = PyObject_GetAttrString(o, "dtype");
        int d = dt ? dtype_of(dt) : -1;
        Py_XDECREF(dt);
        PyObject *ndo = PyObject_GetAttrString(o, "ndim");
        int nd = ndo ? (int)PyLong_AsLong(ndo) : 0;
        Py_XDECREF(ndo);
        PyErr_Clear();
        if (d < 0 || nd < 1 || nd > 3) {
            PyErr_Format(PyExc_TypeError,
                         "argument %d: kernels take arrays of 1 to 3 dimensions of bool, "
                         "int8-64, uint8-64, float32, float64, complex64 or complex128",
                         i + 1);
            return -1;
        }
        *t = jit_array((jit_dtype)d, nd, JIT_LAYOUT_C);
        return 0;
    }
    if (mod_is_numpy_scalar(o) && numpy_scalar_type(o, t) == 0) return 0;
    PyErr_Format(PyExc_TypeError,
                 "argument %d: a kernel takes offload or NumPy arrays and numbers, not %s", i + 1,
                 Py_TYPE(o)->tp_name);
    return -1;
}

PyObject *mod_arg_dtype_borrowed(jit_dtype d) {
    init_types();
    return dtype_objs[d];
}

/* p, or a zeroed block of n items of size each where p holds fewer than n. */
static void *room(void *p, size_t have, size_t n, size_t size) {
    return n <= have ? memset(p, 0, n * size) : PyMem_Calloc(n ? n : 1, size);
}

static void unroom(void *p, const void *inline_storage) {
    if (p != inline_storage) PyMem_Free(p);
}

void mod_args_clear(mod_args *a) {
    for (Py_ssize_t i = 0; a->copied && i < a->n; i++)
        if (a->copied[i]) Py_DECREF(a->objs[i]);
    unroom(a->types, a->in.types);
    unroom(a->objs, a->in.objs);
    unroom(a->copied, a->in.copied);
    unroom(a->packed, a->in.packed);
    unroom(a->words, a->in.words);
    a->types = NULL, a->objs = NULL, a->copied = NULL, a->packed = NULL, a->words = NULL;
    a->n = 0, a->ncopied = 0, a->npacked = 0;
}

#define ROOM(a, field, n)                                                                          \
    room((a)->in.field, sizeof(a)->in.field / sizeof *(a)->in.field, (n), sizeof *(a)->in.field)

int mod_args_init(mod_args *a, PyObject *const *args, Py_ssize_t n) {
    a->types = NULL, a->objs = NULL, a->copied = NULL, a->packed = NULL, a->words = NULL;
    a->n = 0, a->ncopied = 0, a->npacked = 0, a->dev = NULL, a->given = args;
    if (n > MOD_SPREAD_MOST) {
        PyErr_Format(PyExc_TypeError, "a kernel takes at most %d arguments", MOD_SPREAD_MOST);
        return -1;
    }
    a->n = n;
    a->types = ROOM(a, types, (size_t)n);
    a->objs = ROOM(a, objs, (size_t)n);
    a->copied = ROOM(a, copied, (size_t)n);
    if (!a->types || !a->objs || !a->copied) {
        mod_args_clear(a);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        a->objs[i] = args[i];
        if (mod_arg_type(args[i], (int)i, &a->types[i]) < 0) {
            mod_args_clear(a);
            return -1;
        }
    }
    return 0;
}

int mod_args_place(mod_args *a) {
    a->dev = NULL;
    int first = -1;
    for (Py_ssize_t i = 0; i < a->n; i++) {
        if (!mod_array_check(a->given[i])) continue;
        ofl_device *d = mod_array_device((mod_array *)a->given[i]);
        if (!a->dev) {
            a->dev = d;
            first = (int)i;
        } else if (d != a->dev) {
            PyErr_Format(
                mod_ExecutionPlacementError,
                "kernel arguments live on two devices: argument %d on %s and argument %zd on %s; "
                "move one with .to_device(...)",
                first + 1, ofl_device_get_info(a->dev)->filter, i + 1,
                ofl_device_get_info(d)->filter);
            return -1;
        }
    }
    return a->dev ? 0 : mod_device_default(&a->dev);
}

int mod_args_upload(mod_args *a) {
    for (Py_ssize_t i = 0; i < a->n; i++) {
        if (a->types[i].kind != JT_ARRAY || mod_array_check(a->given[i])) continue;
        bool in_place;
        if (!(a->objs[i] = mod_array_for_device(a->given[i], a->dev, &in_place))) {
            a->objs[i] = a->given[i];
            return -1;
        }
        a->copied[i] = true;
        a->ncopied++;
    }
    return 0;
}

int mod_args_check_count(const mod_args *a, const jit_func *jf) {
    int want = jit_func_nparams(jf) - 1; /* after the item */
    if (a->n == want) return 0;
    PyErr_Format(PyExc_TypeError, "%s() takes %d argument%s after the item, got %zd",
                 jit_func_name(jf), want, want == 1 ? "" : "s", a->n);
    return -1;
}

/* A scalar argument in the width its type says, into w (two words for a
 * complex128); its size, or 0 with an exception. */
static size_t scalar_word(PyObject *o, jit_type t, Py_ssize_t i, ofl_device *dev, mod_arg_word *w) {
    if (t.kind == JT_WEAK_INT) {
        int overflow;
        w->i64 = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_Format(PyExc_OverflowError, "argument %zd does not fit in 64 bits", i + 1);
            return 0;
        }
        return 8;
    }
    if (t.kind == JT_WEAK_FLOAT) {
        double d = PyFloat_AsDouble(o);
        if (ofl_device_get_info(dev)->has_fp64) return w->f64 = d, 8;
        return w->f32 = (float)d, 4;
    }
    if (jit_is_complex(t)) { /* by value, real part first: float2 / double2 */
        Py_complex z = PyComplex_AsCComplex(o);
        if (PyErr_Occurred()) return 0;
        bool wide =
            t.kind == JT_WEAK_COMPLEX ? ofl_device_get_info(dev)->has_fp64 : t.dtype == JIT_C128;
        if (wide) {
            w[0].f64 = z.real;
            w[1].f64 = z.imag;
            return 16;
        }
        float parts[2] = {(float)z.real, (float)z.imag};
        memcpy(w, parts, sizeof parts);
        return 8;
    }
    jit_dtype d = (jit_dtype)t.dtype;
    if (jit_dtype_is_float(d)) {
        double x = PyFloat_AsDouble(o);
        if (d == JIT_F32)
            w->f32 = (float)x;
        else
            w->f64 = x;
    } else {
        PyObject *l = PyNumber_Long(o);
        if (!l) return 0;
        unsigned long long u =
            d == JIT_U64 ? PyLong_AsUnsignedLongLong(l) : (unsigned long long)PyLong_AsLongLong(l);
        Py_DECREF(l);
        if (PyErr_Occurred()) return 0;
        memcpy(w, &u, sizeof u); /* little-endian: the low bytes are the narrow value */
    }
    return (size_t)jit_dtype_size(d);
}

int mod_args_pack(mod_args *a, const mod_shape *range, ofl_buffer *bounds, bool cancel) {
    size_t nwords = (size_t)range->ndim;
    for (Py_ssize_t i = 0; i < a->n; i++)
        nwords += a->types[i].kind == JT_ARRAY  ? 2 + 2 * (size_t)((mod_array *)a->objs[i])->nd
                  : jit_is_complex(a->types[i]) ? 2
                                                : 1;
    a->words = ROOM(a, words, nwords);
    a->packed = ROOM(a, packed, nwords + 2);
    if (!a->words || !a->packed) {
        PyErr_NoMemory();
        return -1;
    }
    size_t nw = 0;
    a->npacked = 0;
#define WORD(v)                                                                                    \
    (a->words[nw].i64 = (v),                                                                       \
     a->packed[a->npacked++] = (ofl_arg){.value = &a->words[nw++], .size = 8})
    for (Py_ssize_t i = 0; i < a->n; i++) {
        if (a->types[i].kind == JT_ARRAY) {
            mod_array *arr = (mod_array *)a->objs[i];
            ofl_buffer *buf = mod_array_buffer(arr);
            if (buf)
                a->packed[a->npacked++] = (ofl_arg){.buffer = buf};
            else
                WORD(0); /* an empty array: a null pointer */
            WORD(arr->offset);
            for (int d = 0; d < arr->nd; d++) WORD(arr->shape[d]);
            for (int d = 0; d < arr->nd; d++) WORD(arr->strides[d]);
            continue;
        }
        size_t size = scalar_word(a->given[i], a->types[i], i, a->dev, &a->words[nw]);
        if (!size) return -1;
        a->packed[a->npacked++] = (ofl_arg){.value = &a->words[nw], .size = size};
        nw += size > 8 ? 2 : 1;
    }
    for (int d = 0; d < range->ndim; d++) WORD(range->size[d]);
#undef WORD
    if (bounds) a->packed[a->npacked++] = (ofl_arg){.buffer = bounds};
    ofl_error err;
    if (cancel &&
        ofl_cancel_arg(a->dev, &a->packed[a->npacked++], &err) != 0) { /* JIT_CANCEL's flag, last */
        mod_raise(&err);
        return -1;
    }
    return 0;
}

int mod_args_download(mod_args *a, const char *kernel_name) {
    if (!a->ncopied) return 0;
    int ncopied = 0;
    for (Py_ssize_t i = 0; i < a->n; i++) {
        if (!a->copied[i]) continue;
        if (mod_array_is_in_place((mod_array *)a->objs[i])) {
            if (mod_array_sync_host((mod_array *)a->objs[i]) < 0) return -1;
            continue;
        }
        ncopied++;
        PyObject *host = mod_array_asnumpy((mod_array *)a->objs[i]);
        int rc = host ? PyObject_SetItem(a->given[i], Py_Ellipsis, host) : -1;
        Py_XDECREF(host);
        if (rc < 0) {
            /* read-only NumPy inputs cannot take results back: fine, they were inputs */
            if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
            PyErr_Clear();
        }
    }
    if (ncopied)
        PySys_FormatStderr(
            "offload: %d NumPy argument%s of %s copied to %s and back; offload.asarray(...) "
            "keeps data on the device\n",
            ncopied, ncopied == 1 ? "" : "s", kernel_name, ofl_device_get_info(a->dev)->filter);
    return 0;
}
