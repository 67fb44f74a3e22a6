/* NumPy, imported once for the process, and the small CPython helpers every
 * room uses. */
#include "mod_core.h"

static PyObject *numpy;                             /* owned for the process */
static PyTypeObject *numpy_ndarray, *numpy_generic; /* numpy's, owned for the process */

int mod_numpy_init(void) {
    if (numpy) return 0;
    numpy = PyImport_ImportModule("numpy");
    if (!numpy) /* NumPy's own ImportError says what is missing */
        return -1;
    numpy_ndarray = (PyTypeObject *)PyObject_GetAttrString(numpy, "ndarray");
    numpy_generic = (PyTypeObject *)PyObject_GetAttrString(numpy, "generic");
    return numpy_ndarray && numpy_generic ? 0 : -1;
}

PyObject *mod_numpy_borrowed(void) { return numpy; }
bool mod_is_numpy_array(PyObject *o) { return PyObject_TypeCheck(o, numpy_ndarray); }
bool mod_is_numpy_scalar(PyObject *o) { return PyObject_TypeCheck(o, numpy_generic); }

PyObject *mod_call_method(PyObject *obj, const char *name, PyObject *args, PyObject *kw) {
    PyObject *f = PyObject_GetAttrString(obj, name);
    if (!f) return NULL;
    PyObject *r = args ? PyObject_Call(f, args, kw) : PyObject_CallNoArgs(f);
    Py_DECREF(f);
    return r;
}

PyObject *mod_np_call(const char *name, PyObject *args, PyObject *kw) {
    return mod_call_method(numpy, name, args, kw);
}

int mod_np_buffer(PyObject *arr, Py_buffer *view, bool writable) {
    return PyObject_GetBuffer(arr, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0));
}

int mod_linecache_put(PyObject *filename, PyObject *lines) {
    Py_ssize_t size = 0; /* of the text: what linecache records, though mtime None skips it */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
        PyObject *line = PyList_GET_ITEM(lines, i); /* an unpickled list may hold anything */
        size += PyUnicode_Check(line) ? PyUnicode_GET_LENGTH(line) : 0;
    }
    PyObject *linecache = PyImport_ImportModule("linecache");
    PyObject *cache = linecache ? PyObject_GetAttrString(linecache, "cache") : NULL;
    PyObject *entry = cache ? Py_BuildValue("(nOOO)", size, Py_None, lines, filename) : NULL;
    int rc = entry ? PyObject_SetItem(cache, filename, entry) : -1;
    Py_XDECREF(linecache);
    Py_XDECREF(cache);
    Py_XDECREF(entry);
    return rc;
}

PyObject *mod_int_tuple(int nd, const Py_ssize_t *v) {
    PyObject *t = PyTuple_New(nd);
    for (int i = 0; t && i < nd; i++) {
        PyObject *x = PyLong_FromSsize_t(v[i]);
        if (!x)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

int mod_atexit(PyMethodDef *def) {
    PyObject *atexit = PyImport_ImportModule("atexit");
    PyObject *fn = PyCFunction_New(def, NULL);
    PyObject *r = atexit && fn ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
    Py_XDECREF(atexit);
    Py_XDECREF(fn);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* A ready static type's attributes live in its dict; PyType_Modified drops
 * the lookups CPython cached before. */
static int add_descriptor(PyTypeObject *type, const char *name, PyObject *descr) {
    int rc = descr ? PyDict_SetItemString(type->tp_dict, name, descr) : -1;
    Py_XDECREF(descr);
    PyType_Modified(type);
    return rc;
}

int mod_type_add_methods(PyTypeObject *type, PyMethodDef *defs) {
    for (PyMethodDef *d = defs; d->ml_name; d++)
        if (add_descriptor(type, d->ml_name, PyDescr_NewMethod(type, d)) < 0) return -1;
    return 0;
}

int mod_type_add_getset(PyTypeObject *type, PyGetSetDef *defs) {
    for (PyGetSetDef *d = defs; d->name; d++)
        if (add_descriptor(type, d->name, PyDescr_NewGetSet(type, d)) < 0) return -1;
    return 0;
}
