/* mod_namespace: offload as an array API 2024.12 namespace -- its version
 * and __array_namespace_info__, the data type functions (astype can_cast
 * finfo iinfo isdtype result_type), the constants, the creation functions
 * that compute their elements (eye linspace meshgrid tril triu), and
 * ndarray's __array_namespace__ and fills.
 *
 * Every element is computed where the array lives, by a kernel of
 * kernels/creation.py; the host only answers type questions, as NumPy
 * answers them (promotion, finfo, the values linspace starts from). Fills and
 * assignments (zeros, ones, full, x.fill, x[...] = v) reach the kernels here
 * through mod_lib_array_kernels.assign, so core's creation functions and
 * ndarray's __setitem__ use them without naming lib.
 *
 * complex128 and float64 exist only on devices that compute in float64:
 * elsewhere default_dtypes() says float32 and complex64.
 * Called from mod_lib.c (mod_namespace_add_functions, the assign hook). */
#include "lib/namespace/mod_namespace.h"
#include "lib/elementwise/mod_elementwise.h"

#include <math.h>
#include <string.h>

/* ---- helpers ---- */

static Py_ssize_t elements(const mod_array *a) {
    Py_ssize_t n = 1;
    for (int d = 0; d < a->nd; d++) n *= a->shape[d];
    return n;
}

/* The dtype a creation function makes: dtype_arg, or dev's default float. */
static PyObject *dtype_or_default(PyObject *dtype_arg, ofl_device *dev) {
    if (dtype_arg != Py_None) return mod_dtype_new(dtype_arg);
    return Py_NewRef(mod_dtype_find_borrowed('f', ofl_device_get_info(dev)->has_fp64 ? 8 : 4));
}

/* ---- fills and assignments ---- */

/* Every element of a C-contiguous array set to value, a NumPy scalar of its
 * dtype passed to the kernel by value: the JIT types creation.py's fill per
 * dtype. zeros, ones and full all come here, so the kernel is kept and
 * launched without mod_library_launch's lookups and argument format, which
 * cost zeros(10) 11% more host instructions (callgrind). */
static int fill_contiguous(mod_array *dst, PyObject *value) {
    static PyObject *fill; /* borrowed: creation.py's module lives for the process */
    Py_ssize_t n = elements(dst);
    if (n == 0) return 0;
    if (!fill && !(fill = mod_library_get("creation", "fill"))) return -1;
    PyObject *flat = mod_array_view(dst, 1, &n, &dst->itemsize, dst->offset);
    if (!flat) return -1;
    PyObject *args[2] = {flat, value};
    mod_shape range = {.ndim = 1, .size = {n}};
    PyObject *r = mod_kernel_launch(fill, &range, args, 2, false);
    Py_DECREF(flat);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* dst[...] = s, an offload array on dst's device: cast to dst's dtype (any
 * cast, as NumPy's assignment), broadcast to dst's shape by zero strides,
 * then mod_ops' copy kernel, which reads an overlapping source first. */
static int assign_array(mod_array *dst, mod_array *s) {
    PyObject *cast = NULL;
    if (s->dtype != dst->dtype) {
        if (!(cast = mod_ops_copy(s, dst->dtype))) return -1;
        s = (mod_array *)cast;
    }
    int lead = 0; /* NumPy drops a source's leading axes of length 1 */
    while (s->nd - lead > dst->nd && s->shape[lead] == 1) lead++;
    Py_ssize_t strides[MOD_MAXDIMS];
    bool fits = s->nd - lead <= dst->nd;
    for (int d = 0; fits && d < dst->nd; d++) {
        int sd = d - (dst->nd - (s->nd - lead));
        if (sd < 0 || s->shape[lead + sd] == 1)
            strides[d] = 0;
        else if (s->shape[lead + sd] == dst->shape[d])
            strides[d] = s->strides[lead + sd];
        else
            fits = false;
    }
    int rc = -1;
    if (!fits) {
        PyObject *from = mod_int_tuple(s->nd, s->shape), *to = mod_int_tuple(dst->nd, dst->shape);
        if (from && to)
            PyErr_Format(PyExc_ValueError,
                         "could not broadcast input array from shape %R into "
                         "shape %R",
                         from, to);
        Py_XDECREF(from);
        Py_XDECREF(to);
    } else {
        PyObject *view = mod_array_view(s, dst->nd, dst->shape, strides, s->offset);
        rc = view ? mod_ops_copy_into(dst, view) : -1;
        Py_XDECREF(view);
    }
    Py_XDECREF(cast);
    return rc;
}

int mod_namespace_assign(mod_array *dst, PyObject *src) {
    if (mod_array_check(src)) return assign_array(dst, (mod_array *)src);
    if (mod_array_is_c_contiguous(dst)) return fill_contiguous(dst, src);
    /* a strided view: one element filled, then broadcast into it */
    PyObject *cell = mod_array_new_empty(mod_array_device(dst), dst->dtype, 0, NULL);
    int rc = cell && fill_contiguous((mod_array *)cell, src) == 0
                 ? assign_array(dst, (mod_array *)cell)
                 : -1;
    Py_XDECREF(cell);
    return rc;
}

/* ---- __array_namespace_info__ ---- */

typedef struct {
    PyObject_HEAD
} info_object;

/* The dtypes arrays hold, in the array API's order. */
static const struct {
    char kind;
    int size;
} held[] = {{'b', 1}, {'i', 1}, {'i', 2}, {'i', 4}, {'i', 8}, {'u', 1}, {'u', 2},
            {'u', 4}, {'u', 8}, {'f', 4}, {'f', 8}, {'c', 8}, {'c', 16}};
#define NHELD (sizeof held / sizeof held[0])

/* device= of the info methods: None is the default device. */
static int info_device(PyObject *arg, ofl_device **dev) {
    return arg == Py_None ? mod_device_default(dev) : mod_device_resolve(arg, dev);
}

static PyObject *info_capabilities(PyObject *self, PyObject *unused) {
    return Py_BuildValue("{sOsOsi}", "boolean indexing", Py_True, "data-dependent shapes", Py_True,
                         "max dimensions", MOD_MAXDIMS);
}

static PyObject *info_default_device(PyObject *self, PyObject *unused) {
    ofl_device *dev;
    return mod_device_default(&dev) < 0 ? NULL : mod_device_new(dev);
}

static PyObject *info_devices(PyObject *self, PyObject *unused) {
    size_t n;
    ofl_device *const *list;
    Py_BEGIN_ALLOW_THREADS
    list = ofl_devices(&n, NULL);
    Py_END_ALLOW_THREADS
    PyObject *r = PyList_New(0);
    for (size_t i = 0; r && i < n; i++) {
        PyObject *d = mod_device_new(list[i]);
        if (!d || PyList_Append(r, d) < 0) Py_CLEAR(r);
        Py_XDECREF(d);
    }
    return r;
}

static PyObject *info_default_dtypes(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"device", NULL};
    PyObject *device = Py_None;
    ofl_device *dev;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:default_dtypes", kwlist, &device) ||
        info_device(device, &dev) < 0)
        return NULL;
    bool fp64 = ofl_device_get_info(dev)->has_fp64;
    PyObject *f = mod_dtype_find_borrowed('f', fp64 ? 8 : 4);
    PyObject *c = mod_dtype_find_borrowed('c', fp64 ? 16 : 8);
    PyObject *i = mod_dtype_find_borrowed('i', 8);
    return Py_BuildValue("{sOsOsOsO}", "real floating", f, "complex floating", c, "integral", i,
                         "indexing", i);
}

static PyObject *info_dtypes(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"device", "kind", NULL};
    PyObject *device = Py_None, *kind = Py_None;
    ofl_device *dev;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OO:dtypes", kwlist, &device, &kind) ||
        info_device(device, &dev) < 0)
        return NULL;
    bool fp64 = ofl_device_get_info(dev)->has_fp64;
    PyObject *r = PyDict_New();
    for (size_t i = 0; r && i < NHELD; i++) {
        PyObject *dt = mod_dtype_find_borrowed(held[i].kind, held[i].size);
        if (((held[i].kind == 'f' && held[i].size == 8) || held[i].size == 16) && !fp64) continue;
        int want = 1;
        if (kind != Py_None) { /* numpy.isdtype knows the kinds and refuses others */
            PyObject *yes = PyObject_CallMethod(mod_numpy_borrowed(), "isdtype", "OO", dt, kind);
            want = yes ? PyObject_IsTrue(yes) : -1;
            Py_XDECREF(yes);
        }
        if (want < 0 || (want && PyDict_SetItemString(r, mod_dtype_name(dt), dt) < 0)) Py_CLEAR(r);
    }
    return r;
}

static PyMethodDef info_methods[] = {
    {"capabilities", info_capabilities, METH_NOARGS,
     "capabilities() -> dict: 'boolean indexing', 'data-dependent shapes', 'max dimensions'"},
    {"default_device", info_default_device, METH_NOARGS,
     "default_device() -> Device: where arrays go when no device is named"},
    {"default_dtypes", MOD_KWFUNC(info_default_dtypes),
     "default_dtypes(*, device=None) -> dict: 'real floating' (float64, or float32 on a device "
     "without float64), 'complex floating' (complex128, or complex64 there), 'integral' and "
     "'indexing' (int64)"},
    {"devices", info_devices, METH_NOARGS, "devices() -> list of every Device offload sees"},
    {"dtypes", MOD_KWFUNC(info_dtypes),
     "dtypes(*, device=None, kind=None) -> dict name -> dtype of the dtypes arrays on device "
     "hold (float64 and complex128 only where the device computes in float64); kind as "
     "isdtype's"},
    {NULL},
};

static PyTypeObject InfoType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload.ArrayNamespaceInfo",
    .tp_basicsize = sizeof(info_object),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What the offload array namespace supports: __array_namespace_info__()'s answer.",
    .tp_methods = info_methods,
};

static PyObject *f_info(PyObject *self, PyObject *unused) {
    return (PyObject *)PyObject_New(info_object, &InfoType);
}

/* ---- ndarray.__array_namespace__ ---- */

static PyObject *m_array_namespace(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"api_version", NULL};
    static const char *known[] = {"2021.12", "2022.12", "2023.12", "2024.12"};
    PyObject *version = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:__array_namespace__", kwlist, &version))
        return NULL;
    bool ok = version == Py_None;
    for (size_t i = 0; !ok && PyUnicode_Check(version) && i < sizeof known / sizeof known[0]; i++)
        ok = PyUnicode_CompareWithASCIIString(version, known[i]) == 0;
    if (!ok)
        return PyErr_Format(PyExc_ValueError,
                            "offload implements the array API 2024.12 (and answers for 2021.12, "
                            "2022.12, 2023.12); not api_version=%R",
                            version);
    return PyImport_ImportModule("offload");
}

static PyMethodDef array_methods[] = {
    {"__array_namespace__", MOD_KWFUNC(m_array_namespace),
     "__array_namespace__(*, api_version=None) -> the offload module, an array API 2024.12 "
     "namespace"},
    {NULL},
};

/* ---- data type functions ---- */

/* An array's dtype, or spec as a dtype arrays hold (TypeError otherwise). */
static PyObject *dtype_of(PyObject *spec) {
    return mod_array_check(spec) ? Py_NewRef(((mod_array *)spec)->dtype) : mod_dtype_new(spec);
}

static PyObject *f_astype(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "copy", "device", NULL};
    PyObject *x, *dtype, *copy = Py_True, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$OO:astype", kwlist, &x, &dtype, &copy,
                                     &device) ||
        !mod_kit_array_arg(x, "astype"))
        return NULL;
    PyObject *margs = PyTuple_Pack(1, dtype);
    PyObject *mkw = margs ? Py_BuildValue("{sOsO}", "copy", copy, "device", device) : NULL;
    PyObject *r = mkw ? mod_call_method(x, "astype", margs, mkw) : NULL;
    Py_XDECREF(margs);
    Py_XDECREF(mkw);
    return r;
}

static PyObject *f_can_cast(PyObject *self, PyObject *args) {
    PyObject *from_arg, *to_arg;
    if (!PyArg_ParseTuple(args, "OO:can_cast", &from_arg, &to_arg)) return NULL;
    PyObject *from = dtype_of(from_arg), *to = from ? mod_dtype_new(to_arg) : NULL;
    PyObject *r = to ? PyObject_CallMethod(mod_numpy_borrowed(), "can_cast", "OO", from, to) : NULL;
    Py_XDECREF(from);
    Py_XDECREF(to);
    return r;
}

/* finfo / iinfo(type) for a dtype arrays hold or an array's: NumPy's
 * numbers as Python floats and ints (the array API's finfo_object and
 * iinfo_object; NumPy's own hold NumPy scalars). */
static PyStructSequence_Field finfo_fields[] = {
    {"bits", "bits of the type"},
    {"eps", "the difference between 1.0 and the next larger value"},
    {"max", "the largest finite value"},
    {"min", "the smallest finite value"},
    {"smallest_normal", "the smallest positive normal value"},
    {"dtype", "the real floating dtype (float32 for complex64)"},
    {NULL},
};
static PyStructSequence_Field iinfo_fields[] = {
    {"bits", "bits of the type"},
    {"max", "the largest value"},
    {"min", "the smallest value"},
    {"dtype", "the dtype"},
    {NULL},
};
static PyStructSequence_Desc finfo_desc = {"offload.finfo_object", "offload.finfo(type)",
                                           finfo_fields, 6};
static PyStructSequence_Desc iinfo_desc = {"offload.iinfo_object", "offload.iinfo(type)",
                                           iinfo_fields, 4};
static PyTypeObject *finfo_type, *iinfo_type; /* for the process */

static PyObject *info_of(PyObject *type, const char *fn) {
    bool f = fn[0] == 'f';
    PyStructSequence_Desc *desc = f ? &finfo_desc : &iinfo_desc;
    PyTypeObject **t = f ? &finfo_type : &iinfo_type;
    if (!*t && !(*t = PyStructSequence_NewType(desc))) return NULL;
    PyObject *dtype = dtype_of(type);
    PyObject *np = dtype ? PyObject_CallMethod(mod_numpy_borrowed(), fn, "O", dtype) : NULL;
    PyObject *r = np ? PyStructSequence_New(*t) : NULL;
    Py_XDECREF(dtype);
    for (int i = 0; r && i < desc->n_in_sequence; i++) {
        const char *name = desc->fields[i].name;
        PyObject *v = PyObject_GetAttrString(np, name);
        bool keep = !strcmp(name, "dtype") || !strcmp(name, "bits");
        PyObject *py = v && !keep
                           ? PyObject_CallOneArg((PyObject *)(f ? &PyFloat_Type : &PyLong_Type), v)
                           : Py_XNewRef(v);
        Py_XDECREF(v);
        if (!py)
            Py_CLEAR(r);
        else
            PyStructSequence_SetItem(r, i, py); /* steals py */
    }
    Py_XDECREF(np);
    return r;
}
static PyObject *f_finfo(PyObject *self, PyObject *type) { return info_of(type, "finfo"); }
static PyObject *f_iinfo(PyObject *self, PyObject *type) { return info_of(type, "iinfo"); }

static PyObject *f_isdtype(PyObject *self, PyObject *args) {
    PyObject *dtype, *kind;
    if (!PyArg_ParseTuple(args, "OO:isdtype", &dtype, &kind)) return NULL;
    return PyObject_CallMethod(mod_numpy_borrowed(), "isdtype", "OO", dtype, kind);
}

/* NumPy 2's promotion of arrays, dtypes and (weak) Python scalars, refused
 * when the result is a dtype arrays do not hold (complex, float16). */
static PyObject *f_result_type(PyObject *self, PyObject *args) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *specs = PyTuple_New(n);
    for (Py_ssize_t i = 0; specs && i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        PyTuple_SET_ITEM(specs, i, Py_NewRef(mod_array_check(a) ? ((mod_array *)a)->dtype : a));
    }
    PyObject *rt = specs ? mod_np_call("result_type", specs, NULL) : NULL;
    PyObject *r = rt ? mod_dtype_new(rt) : NULL;
    Py_XDECREF(specs);
    Py_XDECREF(rt);
    return r;
}

/* ---- creation functions that compute their elements ---- */

/* eye(n_rows, n_cols=None, /, k=0, dtype=None, *, device=None) */
static PyObject *f_eye(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "k", "dtype", "device", NULL};
    PyObject *rows_arg, *cols_arg = Py_None, *k_arg = NULL, *dtype_arg = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO$O:eye", kwlist, &rows_arg, &cols_arg, &k_arg,
                                     &dtype_arg, &device))
        return NULL;
    Py_ssize_t shape[2];
    shape[0] = PyNumber_AsSsize_t(rows_arg, PyExc_ValueError);
    if (shape[0] == -1 && PyErr_Occurred()) return NULL;
    shape[1] = cols_arg == Py_None ? shape[0] : PyNumber_AsSsize_t(cols_arg, PyExc_ValueError);
    if (shape[1] == -1 && PyErr_Occurred()) return NULL;
    /* a diagonal beyond the matrix is as good as one just outside: no overflow in j - i */
    Py_ssize_t k = k_arg ? PyNumber_AsSsize_t(k_arg, PyExc_OverflowError) : 0;
    if (k == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear();
        k = PyObject_RichCompareBool(k_arg, Py_False, Py_LT) ? -shape[0] : shape[1];
    }
    k = k < -shape[0] ? -shape[0] : k > shape[1] ? shape[1] : k;
    ofl_device *dev;
    if (mod_device_resolve(device, &dev) < 0) return NULL;
    PyObject *dtype = dtype_or_default(dtype_arg, dev);
    PyObject *a = dtype ? mod_array_new_empty(dev, dtype, 2, shape) : NULL;
    mod_shape range = {.ndim = 2, .size = {shape[0], shape[1]}};
    if (a && shape[0] * shape[1] > 0 &&
        mod_library_launch("creation", "eye", &range, "OnO", a, k, dtype) < 0)
        Py_CLEAR(a);
    Py_XDECREF(dtype);
    return a;
}

/* tril and triu: x's elements on and below (above) the k-th diagonal of its
 * last two axes, zero elsewhere, over a stack of matrices. The stack's axes
 * become one (x is copied first when its strides do not allow that), so the
 * kernel runs over (stack, row, column). A 1-D x is every row of a square
 * matrix, as NumPy broadcasts it. */
static PyObject *triangle(PyObject *args, PyObject *kw, bool lower) {
    static char *kwlist[] = {"", "k", NULL};
    PyObject *x, *k_arg = NULL;
    const char *fn = lower ? "tril" : "triu";
    if (!PyArg_ParseTupleAndKeywords(args, kw, lower ? "O|O:tril" : "O|O:triu", kwlist, &x, &k_arg))
        return NULL;
    mod_array *a = mod_kit_array_arg(x, fn);
    if (!a) return NULL;
    if (a->nd == 0)
        return PyErr_Format(PyExc_ValueError,
                            "%s: x must have at least 1 dimension (a stack of "
                            "matrices has 2 or more)",
                            fn);
    PyObject *owner = Py_NewRef(x); /* what the kernel reads: x, or its compact copy */
    int lead = a->nd - 2;           /* the stack's axes */
    for (int d = 0; d + 1 < lead; d++)
        if (a->shape[d + 1] != 1 && a->strides[d] != a->strides[d + 1] * a->shape[d + 1]) {
            Py_SETREF(owner, mod_ops_copy(a, NULL));
            break;
        }
    if (!owner) return NULL;
    mod_array *s = (mod_array *)owner;
    Py_ssize_t shape[3], strides[3];
    if (a->nd == 1) {
        shape[0] = 1, shape[1] = shape[2] = a->shape[0];
        strides[0] = strides[1] = 0, strides[2] = a->strides[0];
    } else {
        shape[0] = 1, strides[0] = 0;
        for (int d = 0; d < lead; d++) shape[0] *= s->shape[d];
        for (int d = lead - 1; d >= 0; d--) /* the merged axis steps as the innermost one */
            if (s->shape[d] != 1) {
                strides[0] = s->strides[d];
                break;
            }
        for (int d = 0; d < 2; d++)
            shape[1 + d] = s->shape[lead + d], strides[1 + d] = s->strides[lead + d];
    }
    Py_ssize_t k = k_arg ? PyNumber_AsSsize_t(k_arg, PyExc_OverflowError) : 0;
    if (k == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            Py_DECREF(owner);
            return NULL;
        }
        PyErr_Clear();
        k = PyObject_RichCompareBool(k_arg, Py_False, Py_LT) ? -shape[1] : shape[2];
    }
    k = k < -shape[1] ? -shape[1] : k > shape[2] ? shape[2] : k;
    int out_nd = a->nd == 1 ? 2 : a->nd;
    Py_ssize_t out_shape[MOD_MAXDIMS];
    for (int d = 0; d < out_nd; d++) out_shape[d] = a->nd == 1 ? a->shape[0] : a->shape[d];
    PyObject *r = mod_array_new_empty(mod_array_device(a), a->dtype, out_nd, out_shape);
    PyObject *in = r ? mod_array_view(s, 3, shape, strides, s->offset) : NULL;
    Py_ssize_t out_strides[3] = {shape[1] * shape[2] * a->itemsize, shape[2] * a->itemsize,
                                 a->itemsize};
    PyObject *out = in ? mod_array_view((mod_array *)r, 3, shape, out_strides, 0) : NULL;
    mod_shape range = {.ndim = 3, .size = {shape[0], shape[1], shape[2]}};
    if (!out || (shape[0] * shape[1] * shape[2] > 0 &&
                 mod_library_launch("creation", "triangle", &range, "OOnOO", out, in, k,
                                    mod_kit_bool(lower), a->dtype) < 0))
        Py_CLEAR(r);
    Py_XDECREF(in);
    Py_XDECREF(out);
    Py_DECREF(owner);
    return r;
}

static PyObject *f_tril(PyObject *self, PyObject *args, PyObject *kw) {
    return triangle(args, kw, true);
}
static PyObject *f_triu(PyObject *self, PyObject *args, PyObject *kw) {
    return triangle(args, kw, false);
}

/* numpy.<ufunc>(a, b, dtype=dt): NumPy's arithmetic on two host scalars. */
static PyObject *np_scalar_op(const char *ufunc, PyObject *a, PyObject *b, PyObject *dt) {
    PyObject *args = PyTuple_Pack(2, a, b);
    PyObject *kw = args ? Py_BuildValue("{sO}", "dtype", dt) : NULL;
    PyObject *r = kw ? mod_np_call(ufunc, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

/* linspace(start, stop, /, num=50, endpoint=True, *, dtype=None, device=None):
 * NumPy's values. NumPy computes in result_type(start, stop, float(num))
 * (float64 for Python numbers; float32 here on a device without float64):
 * y = i * step + start with step = (stop - start) / div -- or, when step
 * underflows to 0, y = i / div * delta + start -- then the last element is
 * stop exactly (endpoint), integer results are floored, and y is cast. The
 * kernel does those same operations, each rounded as NumPy rounds it. */
static PyObject *f_linspace(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "", "num", "endpoint", "dtype", "device", NULL};
    PyObject *start, *stop, *num_arg = NULL, *endpoint_arg = Py_True, *dtype_arg = Py_None,
                            *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO$OO:linspace", kwlist, &start, &stop, &num_arg,
                                     &endpoint_arg, &dtype_arg, &device))
        return NULL;
    Py_ssize_t num = num_arg ? PyNumber_AsSsize_t(num_arg, PyExc_OverflowError) : 50;
    int endpoint = PyObject_IsTrue(endpoint_arg);
    if ((num == -1 && PyErr_Occurred()) || endpoint < 0) return NULL;
    if (num < 0)
        return PyErr_Format(PyExc_ValueError, "Number of samples, %zd, must be non-negative.", num);
    ofl_device *dev;
    if (mod_device_resolve(device, &dev) < 0) return NULL;
    bool fp64 = ofl_device_get_info(dev)->has_fp64;
    PyObject *compute = NULL, *out_dtype = NULL, *delta = NULL, *step = NULL, *div = NULL,
             *a = NULL, *start_c = NULL, *stop_c = NULL;
    PyObject *fnum = PyFloat_FromDouble((double)num);
    PyObject *rt =
        fnum ? PyObject_CallMethod(mod_numpy_borrowed(), "result_type", "OOO", start, stop, fnum)
             : NULL;
    if (rt) { /* NumPy's computation dtype (start and stop may be NumPy float32 scalars) */
        PyObject *kind = PyObject_GetAttrString(rt, "kind");
        if (kind && PyUnicode_CompareWithASCIIString(kind, "f") != 0)
            PyErr_Format(PyExc_TypeError, "linspace: start and stop must be real numbers, not %R",
                         rt);
        else if (kind) {
            PyObject *size = PyObject_GetAttrString(rt, "itemsize");
            long bytes = size ? PyLong_AsLong(size) : -1;
            if (bytes > 0) compute = mod_dtype_find_borrowed('f', fp64 && bytes > 4 ? 8 : 4);
            Py_XDECREF(size);
        }
        Py_XDECREF(kind);
    }
    if (!compute) goto done;
    Py_INCREF(compute);
    out_dtype = dtype_arg == Py_None ? Py_NewRef(compute) : mod_dtype_new(dtype_arg);
    if (!out_dtype) goto done;
    Py_ssize_t d = endpoint ? num - 1 : num;
    PyObject *type = PyObject_GetAttrString(compute, "type");
    start_c = type ? PyObject_CallOneArg(type, start) : NULL;
    stop_c = start_c ? PyObject_CallOneArg(type, stop) : NULL;
    div = stop_c ? PyObject_CallFunction(type, "n", d > 0 ? d : 1) : NULL;
    Py_XDECREF(type);
    delta = div ? np_scalar_op("subtract", stop_c, start_c, compute) : NULL;
    step = delta ? np_scalar_op("divide", delta, div, compute) : NULL;
    if (!step || !(a = mod_array_new_empty(dev, out_dtype, 1, &num))) goto done;
    int step_zero = PyObject_IsTrue(step) == 0;
    int form = d <= 0 ? 0 : step_zero ? 1 : 2; /* d <= 0: NumPy's step is nan, y = i * delta */
    Py_ssize_t last = endpoint && num > 1 ? num - 1 : -1; /* the element that is stop */
    mod_shape range = {.ndim = 1, .size = {num}};
    if (num > 0 && mod_library_launch("creation", "linspace", &range, "OOOOOOniOO", a, start_c,
                                      stop_c, step, delta, div, last, form, compute, out_dtype) < 0)
        Py_CLEAR(a);
done:
    Py_XDECREF(fnum);
    Py_XDECREF(rt);
    Py_XDECREF(compute);
    Py_XDECREF(out_dtype);
    Py_XDECREF(start_c);
    Py_XDECREF(stop_c);
    Py_XDECREF(div);
    Py_XDECREF(delta);
    Py_XDECREF(step);
    return a;
}

/* meshgrid(*arrays, indexing='xy') -> list of arrays: NumPy's (copies,
 * each in its input's dtype; inputs of more than one dimension flattened),
 * each made by the copy kernel from a zero-stride view of its input. */
static PyObject *f_meshgrid(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *indexing = NULL;
    if (kw) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(kw, &pos, &key, &value)) {
            if (PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "indexing") == 0)
                indexing = value;
            else
                return PyErr_Format(PyExc_TypeError,
                                    "meshgrid() got an unexpected keyword argument %R", key);
        }
    }
    bool xy = true;
    if (indexing && !(PyUnicode_Check(indexing) &&
                      ((xy = PyUnicode_CompareWithASCIIString(indexing, "xy") == 0) ||
                       PyUnicode_CompareWithASCIIString(indexing, "ij") == 0)))
        return PyErr_Format(PyExc_ValueError, "Valid values for `indexing` are 'xy' and 'ij'.");
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n > MOD_MAXDIMS)
        return PyErr_Format(PyExc_ValueError, "meshgrid: at most %d arrays (dimensions)",
                            MOD_MAXDIMS);
    PyObject *flat[MOD_MAXDIMS] = {NULL}, *r = NULL;
    Py_ssize_t shape[MOD_MAXDIMS];
    ofl_device *dev = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        mod_array *a = mod_kit_array_arg(PyTuple_GET_ITEM(args, i), "meshgrid");
        if (!a) goto done;
        if (dev && mod_array_device(a) != dev) {
            PyErr_Format(mod_ExecutionPlacementError,
                         "meshgrid: arrays live on two devices: %s and %s; move one with "
                         ".to_device(...)",
                         ofl_device_get_info(dev)->filter,
                         ofl_device_get_info(mod_array_device(a))->filter);
            goto done;
        }
        dev = mod_array_device(a);
        flat[i] =
            a->nd == 1 ? Py_NewRef(a) : PyObject_CallMethod((PyObject *)a, "reshape", "i", -1);
        if (!flat[i]) goto done;
        shape[i] = ((mod_array *)flat[i])->shape[0];
    }
    int swap = xy && n >= 2; /* 'xy': the first two axes swapped (Cartesian indexing) */
    if (swap) {
        Py_ssize_t t = shape[0];
        shape[0] = shape[1], shape[1] = t;
    }
    r = PyList_New(n);
    for (Py_ssize_t i = 0; r && i < n; i++) {
        mod_array *f = (mod_array *)flat[i];
        Py_ssize_t strides[MOD_MAXDIMS] = {0}, axis = swap && i < 2 ? 1 - i : i;
        strides[axis] = f->strides[0];
        PyObject *view = mod_array_view(f, (int)n, shape, strides, f->offset);
        PyObject *c = view ? mod_ops_copy((mod_array *)view, NULL) : NULL;
        Py_XDECREF(view);
        if (!c)
            Py_CLEAR(r);
        else
            PyList_SET_ITEM(r, i, c);
    }
done:
    for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(flat[i]);
    return r;
}

static PyMethodDef functions[] = {
    {"__array_namespace_info__", f_info, METH_NOARGS,
     "__array_namespace_info__() -> ArrayNamespaceInfo: capabilities(), default_device(), "
     "default_dtypes(), devices(), dtypes()"},
    {"astype", MOD_KWFUNC(f_astype),
     "astype(x, dtype, /, *, copy=True, device=None) -> ndarray\n\nx converted to dtype on its "
     "device (then moved to device, if given); x itself when nothing changes and copy is False."},
    {"can_cast", f_can_cast, METH_VARARGS,
     "can_cast(from_, to, /) -> bool: whether NumPy's 'safe' casting takes from_ (a dtype or an "
     "array) to the dtype to"},
    {"finfo", f_finfo, METH_O,
     "finfo(type, /) -> finfo_object: bits, eps, max, min, smallest_normal (Python floats), dtype "
     "of a floating dtype (or an array's); a complex dtype's are its real parts' (dtype float32 "
     "for complex64)"},
    {"iinfo", f_iinfo, METH_O,
     "iinfo(type, /) -> iinfo_object: bits, max, min (Python ints), dtype of an integer dtype (or "
     "an array's)"},
    {"isdtype", f_isdtype, METH_VARARGS,
     "isdtype(dtype, kind) -> bool: whether dtype is of kind (a dtype, 'bool', 'signed integer', "
     "'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric', or a tuple "
     "of those)"},
    {"result_type", f_result_type, METH_VARARGS,
     "result_type(*arrays_and_dtypes) -> dtype: NumPy 2's promotion (Python scalars are weak); "
     "TypeError where that is a dtype arrays do not hold"},
    {"eye", MOD_KWFUNC(f_eye),
     "eye(n_rows, n_cols=None, /, k=0, dtype=None, *, device=None) -> ndarray\n\nOnes on the "
     "k-th diagonal, zeros elsewhere; computed on the device."},
    {"linspace", MOD_KWFUNC(f_linspace),
     "linspace(start, stop, /, num=50, endpoint=True, *, dtype=None, device=None) -> ndarray\n\n"
     "num evenly spaced numbers from start to stop (stop left out unless endpoint): NumPy's "
     "values, computed on the device."},
    {"meshgrid", MOD_KWFUNC(f_meshgrid),
     "meshgrid(*arrays, indexing='xy') -> list of ndarray\n\nCoordinate arrays from 1-D arrays: "
     "'xy' Cartesian (the first two axes swapped), 'ij' matrix indexing; copies, as NumPy's."},
    {"tril", MOD_KWFUNC(f_tril),
     "tril(x, /, k=0) -> ndarray: x (..., M, N) with the elements above the k-th diagonal "
     "zeroed"},
    {"triu", MOD_KWFUNC(f_triu),
     "triu(x, /, k=0) -> ndarray: x (..., M, N) with the elements below the k-th diagonal "
     "zeroed"},
    {NULL},
};

int mod_namespace_add_functions(PyObject *module) {
    if (PyType_Ready(&InfoType) < 0 || PyModule_AddFunctions(module, functions) < 0 ||
        mod_type_add_methods(&mod_ArrayType, array_methods) < 0 ||
        PyModule_AddStringConstant(module, "__array_api_version__", "2024.12") < 0 ||
        PyModule_AddObjectRef(module, "newaxis", Py_None) < 0)
        return -1;
    static const struct {
        const char *name;
        double value;
    } constants[] = {{"e", M_E}, {"pi", M_PI}, {"inf", INFINITY}, {"nan", NAN}};
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
        PyObject *v = PyFloat_FromDouble(constants[i].value);
        if (!v || PyModule_AddObject(module, constants[i].name, v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
    }
    return 0;
}
