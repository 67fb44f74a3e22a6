/* mod_index: advanced indexing (boolean masks, integer arrays), take, take_along_axis, nonzero (issue 22). To be written. */
#include "mod_lib.h"

PyObject *mod_index_getitem(mod_array *a, PyObject *key) {
    (void)a;
    return PyErr_Format(PyExc_IndexError,
                        "offload arrays support basic indexing only: integers, slices (:), "
                        "ellipsis (...) and None; got %.100s",
                        Py_TYPE(key)->tp_name);
}

int mod_index_setitem(mod_array *a, PyObject *key, PyObject *value) {
    (void)value;
    return mod_index_getitem(a, key) ? 0 : -1;
}

int mod_index_add_functions(PyObject *module) {
    (void)module;
    return 0;
}
