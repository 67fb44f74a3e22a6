/* mag_common: what every magic uses -- the UsageError type, blank skipping
 * and display() -- at the bottom of magics/, so that the magics' files and
 * the table that dispatches to them (mag_magics.c) never call each other in
 * a circle. */
#include "mag_impl.h"

PyObject *mag_UsageError; /* made by mag_module_init */

int mag_is_usage_error(PyObject *exc) {
    return mag_UsageError && PyObject_TypeCheck(exc, (PyTypeObject *)mag_UsageError);
}

const char *mag_skip_blank(const char *s) {
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

int mag_display(PyObject *bundle, PyObject *display_id, bool update) {
    PyObject *display = PyDict_GetItemString(PyEval_GetBuiltins(), "display"); /* borrowed */
    if (!display) return 0;
    PyObject *args = PyTuple_Pack(1, bundle);
    PyObject *kw = display_id ? Py_BuildValue("{s:O,s:O,s:O}", "raw", Py_True, "display_id",
                                              display_id, "update", update ? Py_True : Py_False)
                              : Py_BuildValue("{s:O}", "raw", Py_True);
    PyObject *r = args && kw ? PyObject_Call(display, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(r);
    return r ? 1 : -1;
}
