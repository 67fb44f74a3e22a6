/* kit: the checks, errors and calls every room of the array library
 * shares, and at exit the wait for the devices' queued work. */
#include "mod_kit.h"

#include <stdio.h>

char mod_kit_kind(PyObject *dtype) {
    const char *n = mod_dtype_name(dtype);
    return n[0] == 'b' ? 'b' : n[0] == 'i' ? 'i' : n[0] == 'u' ? 'u' : n[0] == 'c' ? 'c' : 'f';
}

Py_ssize_t mod_kit_size(int nd, const Py_ssize_t *shape) {
    Py_ssize_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    return n;
}

void mod_kit_c_strides(int nd, const Py_ssize_t *shape, Py_ssize_t itemsize, Py_ssize_t *strides) {
    Py_ssize_t s = itemsize;
    for (int d = nd - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

int mod_kit_broadcast(mod_array *const *a, int n, int *nd, Py_ssize_t *shape) {
    *nd = 0;
    for (int i = 0; i < n; i++)
        if (a[i] && a[i]->nd > *nd) *nd = a[i]->nd;
    for (int d = 0; d < *nd; d++) shape[d] = 1;
    for (int i = 0; i < n; i++)
        for (int d = 0; a[i] && d < a[i]->nd; d++) {
            Py_ssize_t *s = &shape[*nd - a[i]->nd + d], m = a[i]->shape[d];
            if (m == *s || m == 1) continue;
            if (*s != 1) return i + 1;
            *s = m;
        }
    return 0;
}

mod_array *mod_kit_array_arg(PyObject *x, const char *fn) {
    if (mod_array_check(x)) return (mod_array *)x;
    bool host = mod_is_numpy_array(x) || PyList_Check(x) || PyTuple_Check(x);
    PyErr_Format(PyExc_TypeError, "offload.%s needs an offload array, not %.100s%s", fn,
                 Py_TYPE(x)->tp_name,
                 host ? " (call offload.asarray(...) on it first: offload never copies to the "
                        "device behind your back)"
                      : "");
    return NULL;
}

int mod_kit_axis_error(Py_ssize_t axis, int nd, const char *prefix) {
    PyObject *mod = PyImport_ImportModule("numpy.exceptions");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "AxisError") : NULL;
    PyObject *exc = cls ? PyObject_CallFunction(cls, "niz", axis, nd, prefix) : NULL;
    if (exc) PyErr_SetObject(cls, exc);
    Py_XDECREF(mod);
    Py_XDECREF(cls);
    Py_XDECREF(exc);
    return -1;
}

int mod_kit_axis(PyObject *o, int nd, const char *prefix, int *out) {
    Py_ssize_t a = PyNumber_AsSsize_t(o, PyExc_OverflowError); /* TypeError for non-integers */
    if (a == -1 && PyErr_Occurred()) return -1;
    if (a < -nd || a >= nd) return mod_kit_axis_error(a, nd, prefix);
    *out = (int)(a < 0 ? a + nd : a);
    return 0;
}

PyObject *mod_kit_call(const char *name, PyObject *args, PyObject *kw) {
    PyObject *ol = args && !PyErr_Occurred() ? PyImport_ImportModule("offload") : NULL;
    PyObject *fn = ol ? PyObject_GetAttrString(ol, name) : NULL;
    PyObject *r = fn ? PyObject_Call(fn, args, kw) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(ol);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

int mod_kit_add_submodule(PyObject *module, const char *name, PyObject *sub) {
    char full[64];
    snprintf(full, sizeof full, "offload.%s", name);
    if (PyDict_SetItemString(PyImport_GetModuleDict(), full, sub) < 0) return -1;
    return PyModule_AddObjectRef(module, name, sub);
}

/* At exit the devices finish their queued work first: frees do not wait
 * for it, and PoCL, still running a kernel while the process tears down,
 * crashes now and then. */
static PyObject *finish_queued(PyObject *self, PyObject *unused) {
    ofl_error err;
    Py_BEGIN_ALLOW_THREADS
    ofl_synchronize_launched(&err); /* a failure was the work's to report; nothing to do now */
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef finish_def = {"_finish_queued", finish_queued, METH_NOARGS, NULL};

int mod_kit_init(void) {
    static bool done;
    if (done) return 0;
    done = true;
    return mod_atexit(&finish_def);
}
