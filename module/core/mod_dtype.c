/* The element types device arrays hold: bool, signed and unsigned integers of
 * 8-64 bits, float32, float64, complex64, complex128 -- what device kernels
 * can compute on. Each is
 * one canonical numpy.dtype (native byte order), so `x.dtype == np.float32`
 * and friends behave as in NumPy. */
#include "mod_core.h"

#include <string.h>

static struct {
    const char *name;
    char kind; /* numpy.dtype.kind */
    int size;
    PyObject *dtype; /* owned, for the process */
} types[] = {
    {"bool", 'b', 1, NULL},        {"int8", 'i', 1, NULL},    {"int16", 'i', 2, NULL},
    {"int32", 'i', 4, NULL},       {"int64", 'i', 8, NULL},   {"uint8", 'u', 1, NULL},
    {"uint16", 'u', 2, NULL},      {"uint32", 'u', 4, NULL},  {"uint64", 'u', 8, NULL},
    {"float32", 'f', 4, NULL},     {"float64", 'f', 8, NULL}, {"complex64", 'c', 8, NULL},
    {"complex128", 'c', 16, NULL},
};
#define NTYPES (sizeof types / sizeof types[0])

static const char SUPPORTED[] =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, "
    "complex64, complex128";

int mod_dtype_init(void) {
    for (size_t i = 0; i < NTYPES; i++) {
        if (types[i].dtype) continue;
        PyObject *args = Py_BuildValue("(s)", types[i].name);
        types[i].dtype = args ? mod_np_call("dtype", args, NULL) : NULL;
        Py_XDECREF(args);
        if (!types[i].dtype) return -1;
    }
    return 0;
}

int mod_dtype_add_aliases(PyObject *module) {
    for (size_t i = 0; i < NTYPES; i++) {
        PyObject *type = PyObject_GetAttrString(types[i].dtype, "type"); /* numpy.float32 */
        if (!type) return -1;
        /* NumPy's own spelling for bool is bool_ (numpy.bool in NumPy 2) */
        int rc = PyModule_AddObjectRef(module, i == 0 ? "bool_" : types[i].name, type);
        if (rc == 0 && i == 0) rc = PyModule_AddObjectRef(module, "bool", type);
        Py_DECREF(type);
        if (rc < 0) return -1;
    }
    return 0;
}

PyObject *mod_dtype_find_borrowed(char kind, Py_ssize_t itemsize) {
    for (size_t i = 0; i < NTYPES; i++)
        if (types[i].kind == kind && types[i].size == itemsize) return types[i].dtype;
    return NULL;
}

PyObject *mod_dtype_new(PyObject *spec) {
    for (size_t i = 0; i < NTYPES; i++) /* the common case: already canonical */
        if (spec == types[i].dtype) return Py_NewRef(spec);
    PyObject *args = PyTuple_Pack(1, spec);
    PyObject *d = args ? mod_np_call("dtype", args, NULL) : NULL;
    Py_XDECREF(args);
    if (!d) return NULL;
    PyObject *kind = PyObject_GetAttrString(d, "kind");
    PyObject *size = PyObject_GetAttrString(d, "itemsize");
    PyObject *found = NULL;
    if (kind && size && PyUnicode_Check(kind) && PyUnicode_GET_LENGTH(kind) == 1) {
        /* structured and sub-array dtypes have kind 'V' and never match */
        found = mod_dtype_find_borrowed((char)PyUnicode_READ_CHAR(kind, 0), PyLong_AsSsize_t(size));
        if (PyErr_Occurred()) found = NULL;
    }
    Py_XDECREF(kind);
    Py_XDECREF(size);
    if (!found && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "offload arrays do not support dtype %S; supported: %s", d,
                     SUPPORTED);
    Py_DECREF(d);
    if (!found || PyErr_Occurred()) return NULL;
    return Py_NewRef(found);
}

const char *mod_dtype_name(PyObject *dtype) {
    for (size_t i = 0; i < NTYPES; i++)
        if (types[i].dtype == dtype) return types[i].name;
    return "?";
}

Py_ssize_t mod_dtype_itemsize(PyObject *dtype) {
    for (size_t i = 0; i < NTYPES; i++)
        if (types[i].dtype == dtype) return types[i].size;
    return 0;
}

PyObject *mod_dtype_from_array(PyObject *arr) {
    PyObject *d = PyObject_GetAttrString(arr, "dtype");
    PyObject *r = d ? mod_dtype_new(d) : NULL;
    Py_XDECREF(d);
    return r;
}
