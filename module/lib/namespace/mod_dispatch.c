/* mod_dispatch: NumPy's functions on offload arrays -- ndarray's
 * __array_ufunc__ and __array_function__ (NEP 13, NEP 18), so that
 * np.sqrt(x), np.concatenate([x, y]) or np.mean(x, axis=0) run on x's device
 * and return offload arrays, as CuPy's do.
 *
 * Both send NumPy's call to the offload function of the same name with the
 * same arguments (numpy.linalg's and numpy.fft's to offload.linalg's and
 * offload.fft's): the offload namespace follows NumPy's names and keywords,
 * so its functions check the arguments, and a NumPy array among them raises
 * their TypeError (offload never copies to the device behind the user's
 * back). Where offload has no such function, or a ufunc is called with
 * keywords or a method offload does not take, the answer is NotImplemented
 * and NumPy raises its TypeError naming the function. np.asarray(x) is not
 * dispatched: it goes through __array__, the explicit copy to the host.
 * Called from mod_lib_add_functions only. */
#include "lib/namespace/mod_namespace.h"
#include "lib/elementwise/mod_elementwise.h"

#include <string.h>

static PyObject *namespace; /* the offload module (borrowed: it outlives its types) */

/* offload.<name of NumPy's callable f>, or NULL without an error; for
 * numpy.linalg's and numpy.fft's, offload.linalg.<name> and offload.fft.<name>. */
static PyObject *counterpart(PyObject *f) {
    PyObject *name = PyObject_GetAttrString(f, "__name__");
    PyObject *mod = name ? PyObject_GetAttrString(f, "__module__") : NULL;
    const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    const char *sub = !m                           ? NULL
                      : !strcmp(m, "numpy.linalg") ? "linalg"
                      : !strcmp(m, "numpy.fft")    ? "fft"
                                                   : NULL;
    PyErr_Clear(); /* a callable without __module__ is looked up in offload itself */
    PyObject *space = sub ? PyObject_GetAttrString(namespace, sub) : Py_NewRef(namespace);
    PyObject *fn = space && name && PyUnicode_Check(name) ? PyObject_GetAttr(space, name) : NULL;
    Py_XDECREF(space);
    Py_XDECREF(mod);
    Py_XDECREF(name);
    if (!fn) PyErr_Clear();
    return fn;
}

/* ufunc.reduce(x, axis=0, ...): the reduction offload has under another name. */
static const struct {
    const char *ufunc, *reduction;
} REDUCTIONS[] = {
    {"add", "sum"},     {"multiply", "prod"},   {"minimum", "min"},
    {"maximum", "max"}, {"logical_and", "all"}, {"logical_or", "any"},
};

static PyObject *reduce_method(PyObject *ufunc, PyObject *inputs, PyObject *kw) {
    PyObject *name = PyObject_GetAttrString(ufunc, "__name__");
    const char *n = name ? PyUnicode_AsUTF8(name) : NULL;
    PyObject *fn = NULL;
    for (size_t i = 0; n && i < sizeof REDUCTIONS / sizeof REDUCTIONS[0]; i++)
        if (!strcmp(n, REDUCTIONS[i].ufunc))
            fn = PyObject_GetAttrString(namespace, REDUCTIONS[i].reduction);
    Py_XDECREF(name);
    if (!fn) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* ufunc.reduce's axis defaults to 0, the reductions' to None */
    PyObject *kwargs = kw ? PyDict_Copy(kw) : PyDict_New();
    PyObject *key = PyUnicode_FromString("axis"), *zero = PyLong_FromLong(0);
    PyObject *r = NULL;
    if (kwargs && key && zero && PyDict_SetDefault(kwargs, key, zero))
        r = PyObject_Call(fn, inputs, kwargs);
    Py_XDECREF(kwargs);
    Py_XDECREF(key);
    Py_XDECREF(zero);
    Py_DECREF(fn);
    return r;
}

/* ufunc(*inputs), with out= an offload array or none: the result is
 * computed, then copied into out by kernel (as in-place operators do, NumPy's
 * same_kind rule). Other keywords (where=, dtype=, casting=) are not
 * offload's. */
static PyObject *call_method(PyObject *ufunc, PyObject *inputs, PyObject *kw) {
    PyObject *out = kw ? PyDict_GetItemString(kw, "out") : NULL; /* borrowed */
    if (kw && PyDict_GET_SIZE(kw) > (out ? 1 : 0)) Py_RETURN_NOTIMPLEMENTED;
    if (out && (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != 1 ||
                !mod_array_check(PyTuple_GET_ITEM(out, 0))))
        Py_RETURN_NOTIMPLEMENTED; /* a NumPy out: NumPy's TypeError */
    PyObject *fn = counterpart(ufunc);
    if (!fn) Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = PyObject_Call(fn, inputs, NULL);
    Py_DECREF(fn);
    if (!r || !out) return r;
    mod_array *dst = (mod_array *)PyTuple_GET_ITEM(out, 0);
    int rc = mod_ops_copy_into(dst, r);
    Py_DECREF(r);
    return rc < 0 ? NULL : Py_NewRef((PyObject *)dst);
}

/* __array_ufunc__(ufunc, method, *inputs, **kwargs) */
static PyObject *array_ufunc(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    if (PyTuple_GET_SIZE(args) < 2)
        return PyErr_Format(PyExc_TypeError, "__array_ufunc__(ufunc, method, *inputs, **kwargs)");
    PyObject *ufunc = PyTuple_GET_ITEM(args, 0), *method = PyTuple_GET_ITEM(args, 1);
    PyObject *inputs = PyTuple_GetSlice(args, 2, PyTuple_GET_SIZE(args));
    if (!inputs) return NULL;
    PyObject *r = NULL;
    if (PyUnicode_Check(method) && !PyUnicode_CompareWithASCIIString(method, "reduce")) {
        r = reduce_method(ufunc, inputs, kw);
    } else if (PyUnicode_Check(method) && !PyUnicode_CompareWithASCIIString(method, "__call__")) {
        r = call_method(ufunc, inputs, kw);
    } else { /* accumulate, outer, at, reduceat: not offload's */
        r = Py_NewRef(Py_NotImplemented);
    }
    Py_DECREF(inputs);
    return r;
}

/* __array_function__(func, types, args, kwargs) */
static PyObject *array_function(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *func, *types, *fargs, *fkw;
    if (!PyArg_ParseTuple(args, "OOO!O!:__array_function__", &func, &types, &PyTuple_Type, &fargs,
                          &PyDict_Type, &fkw))
        return NULL;
    PyObject *fn = counterpart(func);
    if (!fn) Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = PyObject_Call(fn, fargs, fkw);
    Py_DECREF(fn);
    return r;
}

static PyMethodDef methods[] = {
    {"__array_ufunc__", MOD_KWFUNC(array_ufunc),
     "__array_ufunc__(ufunc, method, *inputs, **kwargs)\n--\n\n"
     "NumPy's ufuncs on offload arrays: np.sqrt(x) is offload.sqrt(x), on x's device; "
     "out= takes an offload array (the result is copied into it); ufunc.reduce is the "
     "matching reduction (np.add.reduce(x) is offload.sum(x, axis=0)). Other keywords "
     "(where=, dtype=) and methods are not offload's: NumPy raises TypeError."},
    {"__array_function__", (PyCFunction)array_function, METH_VARARGS,
     "__array_function__(func, types, args, kwargs)\n--\n\n"
     "NumPy's functions on offload arrays: np.mean(x, axis=0) is offload.mean(x, axis=0), on "
     "x's device. A function offload does not have raises NumPy's TypeError; a NumPy array "
     "among the arguments raises offload's (no hidden copies)."},
    {NULL},
};

int mod_dispatch_init(PyObject *module) {
    namespace = module;
    return mod_type_add_methods(&mod_ArrayType, methods);
}
