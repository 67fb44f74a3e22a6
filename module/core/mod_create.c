/* The functions that make arrays: asarray, empty, zeros, ones, full, arange,
 * the *_like ones, and asnumpy. Above mod_array.c and mod_dlpack.c: asarray
 * shares CUDA producers' memory through DLPack rather than the host. */
#include "mod_core.h"

/* Python floats become float64, as in NumPy, unless the device cannot compute
 * in float64: then float32 (as dpctl does), so nothing lands on a device in a
 * type it cannot use. Only for data that had no dtype of its own. */
static bool untyped(PyObject *obj) /* call it with no exception set */
{
    return !mod_array_check(obj) && !PyObject_CheckBuffer(obj) &&
           !PyObject_HasAttrString(obj, "__array__") &&
           !PyObject_HasAttrString(obj, "__array_interface__") &&
           !PyObject_HasAttrString(obj, "dtype");
}

static PyObject *fit_device(PyObject *host, ofl_device *dev, bool was_untyped) {
    PyObject *f64 = mod_dtype_find_borrowed('f', 8), *c128 = mod_dtype_find_borrowed('c', 16);
    if (!host || !was_untyped || ofl_device_get_info(dev)->has_fp64) return host;
    PyObject *have = PyObject_GetAttrString(host, "dtype");
    int is64 = have ? PyObject_RichCompareBool(have, f64, Py_EQ) : -1;
    int is128 = have && is64 == 0 ? PyObject_RichCompareBool(have, c128, Py_EQ) : 0;
    Py_XDECREF(have);
    if (is64 < 0 || is128 < 0) {
        Py_DECREF(host);
        return NULL;
    }
    if (is64 || is128) { /* complex128 becomes complex64 there, as float64 float32 */
        PyObject *args = PyTuple_Pack(1, mod_dtype_find_borrowed(is64 ? 'f' : 'c', is64 ? 4 : 8));
        PyObject *c = args ? mod_call_method(host, "astype", args, NULL) : NULL;
        Py_XDECREF(args);
        Py_SETREF(host, c);
    }
    return host;
}

enum { UNINITIALISED, ZEROS, ONES, FULL };

/* Fills a fresh array (or NULL) as kind says, by kernel on its device: value
 * for FULL, cast to the dtype as numpy.full casts it (an array value
 * broadcasts). Steals a on failure. */
static PyObject *fill_as(PyObject *a, int kind, PyObject *value) {
    if (!a || kind == UNINITIALISED) return a;
    PyObject *v = kind == ZEROS  ? Py_False
                  : kind == ONES ? Py_True
                                 : value; /* 0 and 1 in any dtype */
    if (mod_array_assign((mod_array *)a, v) < 0) Py_CLEAR(a);
    return a;
}

/* (shape, dtype=None, device=None) -> a new array, filled or not */
static PyObject *creation(PyObject *args, PyObject *kw, const char *fmt, int fill) {
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    PyObject *shape, *dtype = Py_None, *device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &shape, &dtype, &device)) return NULL;
    return fill_as(mod_array_create(shape, dtype, device), fill, NULL);
}

static PyObject *f_empty(PyObject *self, PyObject *args, PyObject *kw) {
    return creation(args, kw, "O|OO:empty", UNINITIALISED);
}

static PyObject *f_zeros(PyObject *self, PyObject *args, PyObject *kw) {
    return creation(args, kw, "O|OO:zeros", ZEROS);
}

static PyObject *f_ones(PyObject *self, PyObject *args, PyObject *kw) {
    return creation(args, kw, "O|OO:ones", ONES);
}

/* The dtype full() infers from a fill value: NumPy's, then fitted to the device. */
static PyObject *value_dtype(PyObject *value, ofl_device *dev) {
    bool plain = untyped(value);
    PyObject *host = fit_device(mod_host_array(value, NULL), dev, plain);
    PyObject *r = host ? mod_dtype_from_array(host) : NULL;
    Py_XDECREF(host);
    return r;
}

static PyObject *f_full(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"shape", "fill_value", "dtype", "device", NULL};
    PyObject *shape_arg, *value, *dtype_arg = Py_None, *device = Py_None;
    int nd;
    Py_ssize_t shape[MOD_MAXDIMS];
    ofl_device *dev;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO:full", kwlist, &shape_arg, &value, &dtype_arg,
                                     &device) ||
        mod_parse_shape(shape_arg, &nd, shape) < 0 || mod_device_resolve(device, &dev) < 0)
        return NULL;
    PyObject *dtype = dtype_arg == Py_None ? value_dtype(value, dev) : mod_dtype_new(dtype_arg);
    PyObject *a = dtype ? mod_array_new_empty(dev, dtype, nd, shape) : NULL;
    Py_XDECREF(dtype);
    return fill_as(a, FULL, value);
}

/* arange(start, /, stop=None, step=1, dtype=None, device=None): NumPy's arange, uploaded. */
static PyObject *f_arange(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "stop", "step", "dtype", "device", NULL};
    PyObject *start, *stop = Py_None, *step = Py_None, *dtype_arg = Py_None, *device = Py_None;
    ofl_device *dev;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOO:arange", kwlist, &start, &stop, &step,
                                     &dtype_arg, &device) ||
        mod_device_resolve(device, &dev) < 0)
        return NULL;
    PyObject *dtype = dtype_arg == Py_None ? NULL : mod_dtype_new(dtype_arg);
    if (!dtype && dtype_arg != Py_None) return NULL;
    bool plain = untyped(start) && untyped(stop) && untyped(step);
    PyObject *np_args =
        step == Py_None ? PyTuple_Pack(2, start, stop) : PyTuple_Pack(3, start, stop, step);
    PyObject *np_kw = np_args && dtype ? Py_BuildValue("{sO}", "dtype", dtype) : NULL;
    PyObject *host = np_args && (np_kw || !dtype) ? mod_np_call("arange", np_args, np_kw) : NULL;
    Py_XDECREF(np_args);
    Py_XDECREF(np_kw);
    if (host && !dtype) { /* NumPy chose: check it, and fit it to the device */
        PyObject *checked = mod_host_array(host, NULL);
        Py_SETREF(host, checked);
        host = fit_device(host, dev, plain);
    }
    PyObject *a = host ? mod_array_from_host(host, dev) : NULL;
    Py_XDECREF(host);
    Py_XDECREF(dtype);
    return a;
}

/* asarray(obj, dtype=None, device=None, copy=None) */
static PyObject *f_asarray(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"obj", "dtype", "device", "copy", NULL};
    PyObject *obj, *dtype_arg = Py_None, *device = Py_None, *copy_arg = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:asarray", kwlist, &obj, &dtype_arg, &device,
                                     &copy_arg))
        return NULL;
    int copy = mod_parse_copy(copy_arg);
    PyObject *dtype = NULL;
    if (copy == -2 || (dtype_arg != Py_None && !(dtype = mod_dtype_new(dtype_arg)))) return NULL;
    ofl_device *dev;
    PyObject *r = NULL;
    /* CuPy, torch.cuda ...: shared through DLPack, never a trip through the host */
    int cuda = mod_array_check(obj) ? 0 : mod_dlpack_is_cuda(obj);
    if (cuda < 0) goto done;
    if (cuda) {
        PyObject *src = mod_dlpack_import(obj, device, copy_arg);
        mod_array *a = (mod_array *)src;
        if (!src || !dtype || dtype == a->dtype)
            r = src;
        else if (copy == 0)
            mod_copy_needed_error("changing the dtype");
        else
            r = mod_array_cast_to(a, dtype, mod_array_device(a));
        if (r != src) Py_XDECREF(src);
    } else if (mod_array_check(obj)) {
        mod_array *a = (mod_array *)obj;
        if (device == Py_None)
            dev = mod_array_device(a);
        else if (mod_device_resolve(device, &dev) < 0)
            goto done;
        PyObject *want = dtype ? dtype : a->dtype;
        if (dev == mod_array_device(a) && want == a->dtype)
            r = copy == 1 ? mod_array_copy_to(a, dev) : Py_NewRef(obj);
        else if (copy == 0)
            mod_copy_needed_error(dev != mod_array_device(a) ? "moving the array to another device"
                                                             : "changing the dtype");
        else if (want == a->dtype)
            r = mod_array_copy_to(a, dev);
        else
            r = mod_array_cast_to(a, want, dev);
    } else if (copy == 0) {
        mod_copy_needed_error("moving host data to a device");
    } else if (mod_device_resolve(device, &dev) == 0) {
        bool plain = !dtype && untyped(obj); /* before anything can raise: it clears errors */
        PyObject *host = fit_device(mod_host_array(obj, dtype), dev, plain);
        r = host ? mod_array_from_host(host, dev) : NULL;
        Py_XDECREF(host);
    }
done:
    Py_XDECREF(dtype);
    return r;
}

static PyObject *f_asnumpy(PyObject *self, PyObject *obj) {
    if (mod_array_check(obj)) return mod_array_asnumpy((mod_array *)obj);
    PyObject *args = PyTuple_Pack(1, obj);
    PyObject *r = args ? mod_np_call("asarray", args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

/* empty_like / zeros_like / ones_like / full_like(x, [fill_value,] dtype=None, device=None):
 * shape and dtype of x; the device of x when x is an offload array. */
static PyObject *like(PyObject *args, PyObject *kw, const char *fmt, int kind) {
    static char *kwlist2[] = {"x", "dtype", "device", NULL};
    static char *kwlist3[] = {"x", "fill_value", "dtype", "device", NULL};
    PyObject *x, *value = NULL, *dtype_arg = Py_None, *device = Py_None;
    int ok =
        kind == FULL
            ? PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist3, &x, &value, &dtype_arg, &device)
            : PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist2, &x, &dtype_arg, &device);
    if (!ok) return NULL;
    ofl_device *dev;
    PyObject *host = NULL, *dtype = NULL, *a = NULL;
    mod_array *src = mod_array_check(x) ? (mod_array *)x : NULL;
    if (!src && !(host = mod_host_array(x, NULL))) return NULL;
    if (device == Py_None && src)
        dev = mod_array_device(src);
    else if (mod_device_resolve(device, &dev) < 0)
        goto done;
    if (dtype_arg != Py_None)
        dtype = mod_dtype_new(dtype_arg);
    else
        dtype = src ? Py_NewRef(src->dtype) : mod_dtype_from_array(host);
    if (!dtype) goto done;
    if (src) {
        a = mod_array_new_empty(dev, dtype, src->nd, src->shape);
    } else {
        Py_buffer view;
        if (mod_np_buffer(host, &view, false) == 0) {
            if (view.ndim > MOD_MAXDIMS)
                PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions", MOD_MAXDIMS);
            else
                a = mod_array_new_empty(dev, dtype, view.ndim, view.shape);
            PyBuffer_Release(&view);
        }
    }
    a = fill_as(a, kind, value);
done:
    Py_XDECREF(host);
    Py_XDECREF(dtype);
    return a;
}

static PyObject *f_empty_like(PyObject *self, PyObject *args, PyObject *kw) {
    return like(args, kw, "O|OO:empty_like", UNINITIALISED);
}

static PyObject *f_zeros_like(PyObject *self, PyObject *args, PyObject *kw) {
    return like(args, kw, "O|OO:zeros_like", ZEROS);
}

static PyObject *f_ones_like(PyObject *self, PyObject *args, PyObject *kw) {
    return like(args, kw, "O|OO:ones_like", ONES);
}

static PyObject *f_full_like(PyObject *self, PyObject *args, PyObject *kw) {
    return like(args, kw, "OO|OO:full_like", FULL);
}

static PyMethodDef array_functions[] = {
    {"asarray", MOD_KWFUNC(f_asarray),
     "asarray(obj, dtype=None, device=None, copy=None) -> ndarray\n\nobj (array-like, buffer, "
     "scalar or offload array) on a device (default: the default device, or obj's own)."},
    {"empty", MOD_KWFUNC(f_empty),
     "empty(shape, dtype=None, device=None) -> uninitialised ndarray"},
    {"zeros", MOD_KWFUNC(f_zeros), "zeros(shape, dtype=None, device=None) -> ndarray"},
    {"ones", MOD_KWFUNC(f_ones), "ones(shape, dtype=None, device=None) -> ndarray"},
    {"full", MOD_KWFUNC(f_full), "full(shape, fill_value, dtype=None, device=None) -> ndarray"},
    {"arange", MOD_KWFUNC(f_arange),
     "arange(start, /, stop=None, step=1, dtype=None, device=None) -> ndarray"},
    {"empty_like", MOD_KWFUNC(f_empty_like), "empty_like(x, dtype=None, device=None) -> ndarray"},
    {"zeros_like", MOD_KWFUNC(f_zeros_like), "zeros_like(x, dtype=None, device=None) -> ndarray"},
    {"ones_like", MOD_KWFUNC(f_ones_like), "ones_like(x, dtype=None, device=None) -> ndarray"},
    {"full_like", MOD_KWFUNC(f_full_like),
     "full_like(x, fill_value, dtype=None, device=None) -> ndarray"},
    {"asnumpy", (PyCFunction)f_asnumpy, METH_O, "asnumpy(x) -> numpy.ndarray: a host copy of x"},
    {NULL, NULL, 0, NULL},
};

int mod_create_add_functions(PyObject *module) {
    return PyModule_AddFunctions(module, array_functions);
}
